//! The FQ.* requests, each read into a struct with `Args` before frontier.rs applies it: every
//! number is checked against its range, with the family's error, before anything is done. An
//! option's value that is missing gets the same error as one that is wrong.

use super::args::{int_in, keyword, Args, Items};
use super::errors::*;
use super::filter_options::{reserve_capacity, reserve_error_rate};
use crate::frontier::{group_of, HostChange, Rules, MAX_URL_LEN};
use crate::protocol::Request;

/// The longest lease, delay or pause, in milliseconds: about 31 years, far from overflowing
/// when added to any time.
const MAX_MS: u64 = 1_000_000_000_000;
/// The latest time an AT may name: the end of the year 9999.
const MAX_TIME: u64 = 253_402_300_799_999;
/// Most items one FQ.POP or FQ.DEAD returns.
const MAX_COUNT: usize = 100_000;
const MAX_RETRIES: u32 = 1_000_000;
const MAX_INFLIGHT: u32 = 1_000_000;
/// FQ.DEAD without COUNT.
const DEAD_COUNT: usize = 100;
/// Ids and logged times: any integer of Redis's syntax (at most `i64::MAX`) from the least.
const ANY_ID: std::ops::RangeInclusive<u64> = 1..=u64::MAX;
const ANY_TIME: std::ops::RangeInclusive<u64> = 0..=u64::MAX;

/// The rules FQ.RESERVE gives what it is not told.
const RESERVE_RULES: Rules = Rules {
    lease_ms: 300_000,
    retries: 3,
    delay_ms: 0,
    inflight: 0,
};

/// FQ.RESERVE key error_rate capacity [LEASE ms] [RETRIES n] [DELAY ms] [INFLIGHT n]
pub(super) struct Reserve<'a> {
    pub(super) key: &'a [u8],
    pub(super) error_rate: f64,
    pub(super) capacity: u64,
    pub(super) rules: Rules,
}

#[derive(Clone, Copy)]
enum ReserveOption {
    Lease,
    Retries,
    Delay,
    Inflight,
}

impl<'a> Reserve<'a> {
    /// A capacity of at most `max_capacity`.
    pub(super) fn parse(request: Request<'a>, max_capacity: u64) -> Result<Self, CmdError> {
        let mut args = Args::new(request, 1);
        let key = args.required()?;
        let error_rate = reserve_error_rate(args.required()?)?;
        let capacity = reserve_capacity(args.required()?, max_capacity)?;
        let mut rules = RESERVE_RULES;
        while let Some(word) = args.next() {
            let options = [
                ("LEASE", ReserveOption::Lease),
                ("RETRIES", ReserveOption::Retries),
                ("DELAY", ReserveOption::Delay),
                ("INFLIGHT", ReserveOption::Inflight),
            ];
            match keyword(word, &options).ok_or(SYNTAX)? {
                ReserveOption::Lease => rules.lease_ms = args.int_in(1..=MAX_MS, FQ_BAD_LEASE)?,
                ReserveOption::Retries => {
                    rules.retries = args.int_in(0..=MAX_RETRIES, FQ_BAD_RETRIES)?
                }
                ReserveOption::Delay => rules.delay_ms = args.int_in(0..=MAX_MS, FQ_BAD_DELAY)?,
                ReserveOption::Inflight => {
                    rules.inflight = args.int_in(0..=MAX_INFLIGHT, FQ_BAD_INFLIGHT)?
                }
            }
        }
        Ok(Reserve {
            key,
            error_rate,
            capacity,
            rules,
        })
    }
}

/// FQ.PUSH key [PRIORITY p] [AT unix-ms] [FORCE] [URLS] url [url ...]: the options end at
/// `URLS`, after which every word is a URL (one spelled FORCE, AT, PRIORITY or URLS too), or
/// without it at the first word that is none of them.
pub(super) struct Push<'a> {
    pub(super) key: &'a [u8],
    pub(super) priority: i64,
    pub(super) due: Option<u64>,
    pub(super) force: bool,
    pub(super) urls: Items<'a>,
}

#[derive(Clone, Copy)]
enum PushOption {
    Priority,
    At,
    Force,
    Urls,
}

impl<'a> Push<'a> {
    pub(super) fn parse(request: Request<'a>) -> Result<Self, CmdError> {
        let mut args = Args::new(request, 1);
        let key = args.required()?;
        let (mut priority, mut due, mut force) = (0, None, false);
        let options = [
            ("PRIORITY", PushOption::Priority),
            ("AT", PushOption::At),
            ("FORCE", PushOption::Force),
            ("URLS", PushOption::Urls),
        ];
        while let Some(option) = args.one_of(&options) {
            match option {
                PushOption::Priority => {
                    priority = args.int_in(i64::MIN..=i64::MAX, FQ_BAD_PRIORITY)?
                }
                PushOption::At => due = Some(args.int_in(0..=MAX_TIME, FQ_BAD_TIME)?),
                PushOption::Force => force = true,
                PushOption::Urls => break,
            }
        }
        let urls = args.items();
        if urls.is_empty() {
            return Err(args.arity_error());
        }
        if urls.iter().any(|url| url.len() > MAX_URL_LEN) {
            return Err(FQ_URL_TOO_LONG.into());
        }
        Ok(Push {
            key,
            priority,
            due,
            force,
            urls,
        })
    }
}

/// FQ.POP key [COUNT n] [LEASE ms] [BLOCK ms]
pub(super) struct Pop<'a> {
    pub(super) key: &'a [u8],
    pub(super) count: usize,
    pub(super) lease_ms: Option<u64>,
    pub(super) block_ms: Option<u64>,
}

#[derive(Clone, Copy)]
enum PopOption {
    Count,
    Lease,
    Block,
}

impl<'a> Pop<'a> {
    pub(super) fn parse(request: Request<'a>) -> Result<Self, CmdError> {
        let mut args = Args::new(request, 1);
        let mut pop = Pop {
            key: args.required()?,
            count: 1,
            lease_ms: None,
            block_ms: None,
        };
        while let Some(word) = args.next() {
            let options = [
                ("COUNT", PopOption::Count),
                ("LEASE", PopOption::Lease),
                ("BLOCK", PopOption::Block),
            ];
            match keyword(word, &options).ok_or(SYNTAX)? {
                PopOption::Count => pop.count = args.int_in(1..=MAX_COUNT, FQ_BAD_COUNT)?,
                PopOption::Lease => pop.lease_ms = Some(args.int_in(1..=MAX_MS, FQ_BAD_LEASE)?),
                PopOption::Block => pop.block_ms = Some(args.int_in(0..=MAX_MS, FQ_BAD_TIMEOUT)?),
            }
        }
        Ok(pop)
    }
}

/// FQ.LEASE key time [group id deadline ...]: what the log holds of a pop.
pub(super) struct Lease<'a> {
    pub(super) key: &'a [u8],
    pub(super) time: u64,
    pub(super) items: Vec<(&'a [u8], u64, u64)>,
}

impl<'a> Lease<'a> {
    pub(super) fn parse(request: Request<'a>) -> Result<Self, CmdError> {
        let mut args = Args::new(request, 1);
        if args.word_count().saturating_sub(3) % 3 != 0 {
            return Err(args.arity_error());
        }
        let key = args.required()?;
        let time = args.int_in(ANY_TIME, FQ_BAD_TIME)?;
        let mut items = Vec::with_capacity(args.remaining() / 3);
        while let Some(group) = args.next() {
            let id = args.int_in(ANY_ID, FQ_BAD_ID)?;
            let deadline = args.int_in(ANY_TIME, FQ_BAD_TIME)?;
            items.push((group, id, deadline));
        }
        Ok(Lease { key, time, items })
    }
}

/// FQ.ACK and FQ.REQUEUE key id [id ...]: each id checked before anything is done.
pub(super) struct Ids<'a> {
    pub(super) key: &'a [u8],
    pub(super) ids: Vec<u64>,
}

impl<'a> Ids<'a> {
    pub(super) fn parse(request: Request<'a>) -> Result<Self, CmdError> {
        let mut args = Args::new(request, 1);
        let key = args.required()?;
        let ids = args
            .rest()
            .map(|arg| int_in(arg, ANY_ID, FQ_BAD_ID))
            .collect::<Result<_, _>>()?;
        Ok(Ids { key, ids })
    }
}

/// FQ.NACK key id [DELAY ms | AT unix-ms]
pub(super) struct Nack<'a> {
    pub(super) key: &'a [u8],
    pub(super) id: u64,
    pub(super) delay: u64,
    pub(super) due: Option<u64>,
}

#[derive(Clone, Copy)]
enum NackOption {
    Delay,
    At,
}

impl<'a> Nack<'a> {
    pub(super) fn parse(request: Request<'a>) -> Result<Self, CmdError> {
        let mut args = Args::new(request, 1);
        let mut nack = Nack {
            key: args.required()?,
            id: args.int_in(ANY_ID, FQ_BAD_ID)?,
            delay: 0,
            due: None,
        };
        let mut delayed = false;
        while let Some(word) = args.next() {
            let options = [("DELAY", NackOption::Delay), ("AT", NackOption::At)];
            match keyword(word, &options).ok_or(SYNTAX)? {
                NackOption::Delay => {
                    nack.delay = args.int_in(0..=MAX_MS, FQ_BAD_DELAY)?;
                    delayed = true;
                }
                NackOption::At => nack.due = Some(args.int_in(0..=MAX_TIME, FQ_BAD_TIME)?),
            }
        }
        // One or the other: with both, one would be ignored.
        if delayed && nack.due.is_some() {
            return Err(SYNTAX.into());
        }
        Ok(nack)
    }
}

/// FQ.HOST key group [DELAY ms] [INFLIGHT n] [PAUSE ms | PAUSEAT unix-ms]: sets the group's
/// rules, or without options reads them.
pub(super) struct Host<'a> {
    pub(super) key: &'a [u8],
    pub(super) group: Vec<u8>,
    /// None: read the rules.
    pub(super) set: Option<HostSet>,
}

/// What an FQ.HOST with options changes; a PAUSE is made a PAUSEAT once the frontier's clock
/// is known.
pub(super) struct HostSet {
    pub(super) change: HostChange,
    pub(super) pause: Option<u64>,
}

#[derive(Clone, Copy)]
enum HostOption {
    Delay,
    Inflight,
    Pause,
    PauseAt,
}

impl<'a> Host<'a> {
    pub(super) fn parse(request: Request<'a>) -> Result<Self, CmdError> {
        let mut args = Args::new(request, 1);
        let key = args.required()?;
        let group = parse_group(args.required()?)?;
        if args.remaining() == 0 {
            return Ok(Host {
                key,
                group,
                set: None,
            });
        }
        let mut set = HostSet {
            change: HostChange::default(),
            pause: None,
        };
        while let Some(word) = args.next() {
            let options = [
                ("DELAY", HostOption::Delay),
                ("INFLIGHT", HostOption::Inflight),
                ("PAUSE", HostOption::Pause),
                ("PAUSEAT", HostOption::PauseAt),
            ];
            let change = &mut set.change;
            match keyword(word, &options).ok_or(SYNTAX)? {
                HostOption::Delay => change.delay_ms = Some(args.int_in(0..=MAX_MS, FQ_BAD_DELAY)?),
                HostOption::Inflight => {
                    change.inflight = Some(args.int_in(0..=MAX_INFLIGHT, FQ_BAD_INFLIGHT)?)
                }
                HostOption::Pause => set.pause = Some(args.int_in(0..=MAX_MS, FQ_BAD_DELAY)?),
                HostOption::PauseAt => {
                    change.paused_until = Some(args.int_in(0..=MAX_TIME, FQ_BAD_TIME)?)
                }
            }
        }
        // One or the other: with both, one would be ignored.
        if set.pause.is_some() && set.change.paused_until.is_some() {
            return Err(SYNTAX.into());
        }
        Ok(Host {
            key,
            group,
            set: Some(set),
        })
    }
}

/// A group as a client names it, written as POP derives it: `HTTPS://Example.com/` is
/// `https://example.com`; the empty name is every URL that is not absolute.
fn parse_group(arg: &[u8]) -> Result<Vec<u8>, CmdError> {
    let mut group = Vec::new();
    group_of(arg, &mut group);
    if group.is_empty() && !arg.is_empty() {
        return Err(FQ_BAD_GROUP.into());
    }
    Ok(group)
}

/// FQ.DEAD key [COUNT n]
pub(super) struct Dead<'a> {
    pub(super) key: &'a [u8],
    pub(super) count: usize,
}

impl<'a> Dead<'a> {
    pub(super) fn parse(request: Request<'a>) -> Result<Self, CmdError> {
        let mut args = Args::new(request, 1);
        let key = args.required()?;
        let count = match args.remaining() {
            0 => DEAD_COUNT,
            2 if args.check("COUNT") => args.int_in(1..=MAX_COUNT, FQ_BAD_COUNT)?,
            _ => return Err(SYNTAX.into()),
        };
        Ok(Dead { key, count })
    }
}
