//! Runs: a pipeline often holds one command on one key many times in a row, as a crawler sends
//! BF.ADD (or BF.EXISTS) for each link of a page. One by one, each request pays for its dispatch (the name's
//! look-up, `admit`'s checks) and for finding the key and taking its locks: four atomic
//! read-modify-writes, each a full barrier. A run pays for them once.
//!
//! The connection gathers a run while it parses (`Run::begin`, `Run::extend`) and carries it
//! out (`execute_run`) before anything else runs: before the next request that does not extend
//! it, and before its batch ends. Only commands whose spec has a `run` handler form runs (the
//! ADD and EXISTS of Bloom and counting filters), and none of their requests changes how the
//! next would have been admitted, so the run is admitted once. Every request still gets its
//! reply, its call in commandstats with its own time, its SLOWLOG entry and its access to the
//! key, and the write log the records it would have had alone, written under one hold of the
//! log's order; the first request's time also covers parsing the others.

use super::args::Args;
use super::dispatch::{admit, forget_effects, in_log_order, note_logged};
use super::prefetch::MAX_RUN;
use super::spec::Flags;
use super::{eviction, Ctx, COMMANDS};
use crate::protocol::Request;
use std::ops::Range;

/// Requests of one command on one key, in the order they came, each as where its arguments lie
/// in the connection's input; empty until begun. A connection keeps one and reuses it, as it is
/// large enough that moving it per request showed in profiles.
#[derive(Default)]
pub(crate) struct Run {
    index: usize,
    /// The first request's name and key.
    name: Range<usize>,
    key: Range<usize>,
    /// Each request's item, as start and end.
    items: [(usize, usize); MAX_RUN],
    len: usize,
}

/// Where `arg` lies in `input`, if it is a slice of it (an inline request's quoted argument is
/// the parser's own copy).
fn span(input: &[u8], arg: &[u8]) -> Option<Range<usize>> {
    let start = (arg.as_ptr() as usize).checked_sub(input.as_ptr() as usize)?;
    (start + arg.len() <= input.len()).then(|| start..start + arg.len())
}

/// The three words of a request that may join a run: its name, key and item.
#[inline]
fn name_key_item(request: Request<'_>) -> Option<[&[u8]; 3]> {
    let mut args = Args::new(request, 0);
    let words = [args.next()?, args.next()?, args.next()?];
    args.peek().is_none().then_some(words)
}

impl Run {
    /// Begins the empty run with `request`, a request parsed from `input` for the command at
    /// `index`, if that command runs in runs; false, leaving it empty, if not.
    pub(crate) fn begin(&mut self, index: usize, request: Request, input: &[u8]) -> bool {
        debug_assert!(self.is_empty());
        if COMMANDS[index].run.is_none() {
            return false;
        }
        let Some([name, key, item]) = name_key_item(request) else {
            return false;
        };
        let (Some(name), Some(key), Some(item)) =
            (span(input, name), span(input, key), span(input, item))
        else {
            return false;
        };
        self.index = index;
        self.name = name;
        self.key = key;
        self.items[0] = (item.start, item.end);
        self.len = 1;
        true
    }

    /// Takes `request` into the run if there is room and it names the same command in the same
    /// bytes, on the same key.
    pub(crate) fn extend(&mut self, request: Request, input: &[u8]) -> bool {
        if self.is_empty() || self.len == MAX_RUN {
            return false;
        }
        let Some([name, key, item]) = name_key_item(request) else {
            return false;
        };
        if name != &input[self.name.clone()] || key != &input[self.key.clone()] {
            return false;
        }
        let Some(item) = span(input, item) else {
            return false;
        };
        self.items[self.len] = (item.start, item.end);
        self.len += 1;
        true
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Empties the run, once it has run.
    pub(crate) fn clear(&mut self) {
        self.len = 0;
    }

    /// The command's index in `COMMANDS`.
    pub(crate) fn index(&self) -> usize {
        self.index
    }

    /// The run's `at`th request, to run it alone or to show it in SLOWLOG.
    pub(crate) fn request<'a>(
        &self,
        input: &'a [u8],
        at: usize,
        ranges: &'a mut [Range<usize>; 3],
    ) -> Request<'a> {
        let (start, end) = self.items[at];
        *ranges = [self.name.clone(), self.key.clone(), start..end];
        Request::new(input, ranges)
    }
}

/// Carries out `run`, whose requests lie in `input`, calling `after_each` after each request's
/// reply with whether it succeeded. Returns false, having done nothing, where the requests must
/// run one by one (`cmd::execute`) to do what each would alone: inside MULTI (each is queued),
/// under `maxmemory` for a command that may be refused for memory or when over it (each may
/// evict keys or be refused, as in Redis), or when the first would be refused (each is, with
/// its own error).
pub(crate) fn execute_run(
    ctx: &mut Ctx,
    run: &Run,
    input: &[u8],
    after_each: &mut dyn FnMut(bool),
) -> bool {
    let spec = &COMMANDS[run.index];
    let Some(handler) = spec.run else {
        return false;
    };
    if ctx.session.transaction.is_some() || ctx.session.in_exec {
        return false;
    }
    let limit = ctx.config().maxmemory();
    if limit > 0 && (spec.flags.contains(Flags::DENYOOM) || eviction::over(ctx.server, limit)) {
        return false;
    }
    let mut ranges = Default::default();
    if admit(ctx, spec, run.request(input, 0, &mut ranges)).is_err() {
        return false;
    }
    ctx.session.client.note_command(run.index, ctx.now);
    let mut items = [&[][..]; MAX_RUN];
    for (item, &(start, end)) in items.iter_mut().zip(&run.items[..run.len]) {
        *item = &input[start..end];
    }
    let (key, items) = (&input[run.key.clone()], &items[..run.len]);
    // Which requests succeeded.
    let mut each = |ctx: &mut Ctx| {
        let (mut succeeded, mut at) = ([false; MAX_RUN], 0);
        handler(ctx, key, items, &mut |ok| {
            succeeded[at] = ok;
            at += 1;
            after_each(ok);
        });
        succeeded
    };
    let mut succeeded = [false; MAX_RUN];
    match ctx.server.write_log() {
        // As `run_logged` notes each request, and in the records the requests alone would have
        // made: what they noted (the key's creation) with the first that succeeded, then each
        // other one that did on its own. One record of them all would be a transaction, which a
        // replica applies while every client of its waits.
        Some(log) if spec.writes() => in_log_order(ctx, log, &mut |ctx, batch| {
            succeeded = each(ctx);
            for (at, &ran) in succeeded[..run.len].iter().enumerate() {
                let mut ranges = Default::default();
                note_logged(
                    ctx.session,
                    batch,
                    ran,
                    &run.request(input, at, &mut ranges),
                );
                if ran {
                    batch.end_record();
                }
            }
        }),
        _ => {
            succeeded = each(ctx);
            forget_effects(ctx.session);
        }
    }
    if spec.writes() {
        ctx.session.writes += succeeded.iter().filter(|&&ok| ok).count() as u64;
    }
    true
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::protocol::{Limits, RequestParser};

    fn parsed(input: &[u8]) -> Vec<Vec<Range<usize>>> {
        let mut parser = RequestParser::new(Limits::default());
        let mut consumed = 0;
        let mut requests = Vec::new();
        while let Some(request) = parser.parse(&input[consumed..]).unwrap() {
            requests.push(
                request
                    .args()
                    .map(|arg| span(input, arg).unwrap())
                    .collect(),
            );
            consumed += parser.take_consumed();
        }
        requests
    }

    /// Parses `input` and begins a run with its first request, as the connection does; the
    /// run and how many requests it took.
    pub(in crate::cmd) fn gather(input: &[u8]) -> Option<(Run, usize)> {
        let requests = parsed(input);
        let base: Vec<Range<usize>> = requests[0].clone();
        let first = Request::new(input, &base);
        let mut run = Run::default();
        if !run.begin(crate::cmd::lookup(first.arg(0))?, first, input) {
            return None;
        }
        let mut taken = 1;
        for ranges in &requests[1..] {
            if !run.extend(Request::new(input, ranges), input) {
                break;
            }
            taken += 1;
        }
        Some((run, taken))
    }

    fn pipeline(requests: &[&[&str]]) -> Vec<u8> {
        let mut out = Vec::new();
        for args in requests {
            let args: Vec<&[u8]> = args.iter().map(|arg| arg.as_bytes()).collect();
            crate::protocol::encode_request(&mut out, &args);
        }
        out
    }

    #[test]
    fn a_run_takes_the_same_command_in_the_same_bytes_on_the_same_key() {
        let input = pipeline(&[
            &["BF.EXISTS", "k", "a"],
            &["BF.EXISTS", "k", "b"],
            &["BF.EXISTS", "k", "c"],
            &["bf.exists", "k", "d"],
        ]);
        let (run, taken) = gather(&input).unwrap();
        assert_eq!((run.len(), taken), (3, 3));
        let mut ranges = Default::default();
        let third = run.request(&input, 2, &mut ranges);
        assert_eq!(
            third.args().collect::<Vec<_>>(),
            [&b"BF.EXISTS"[..], b"k", b"c"]
        );
    }

    #[test]
    fn a_run_ends_at_another_key_or_command() {
        let other_key = pipeline(&[&["BF.EXISTS", "k", "a"], &["BF.EXISTS", "j", "a"]]);
        assert_eq!(gather(&other_key).unwrap().1, 1);
        let other_command = pipeline(&[&["CBF.EXISTS", "k", "a"], &["BF.EXISTS", "k", "a"]]);
        assert_eq!(gather(&other_command).unwrap().1, 1);
        let extra_argument = pipeline(&[&["BF.EXISTS", "k", "a"], &["BF.EXISTS", "k", "a", "b"]]);
        assert_eq!(gather(&extra_argument).unwrap().1, 1);
    }

    #[test]
    fn a_run_stops_growing_when_full() {
        let requests: Vec<[&str; 3]> = (0..MAX_RUN + 5).map(|_| ["BF.EXISTS", "k", "x"]).collect();
        let requests: Vec<&[&str]> = requests.iter().map(|r| &r[..]).collect();
        let input = pipeline(&requests);
        assert_eq!(gather(&input).unwrap().1, MAX_RUN);
    }

    #[test]
    fn only_commands_with_a_run_handler_begin_runs() {
        assert!(gather(&pipeline(&[&["BF.MADD", "k", "a"], &["BF.MADD", "k", "b"]])).is_none());
        assert!(gather(&pipeline(&[&["BF.EXISTS", "k"]])).is_none());
        assert_eq!(
            gather(&pipeline(&[&["BF.ADD", "k", "a"], &["BF.ADD", "k", "b"]]))
                .unwrap()
                .1,
            2
        );
    }

    /// A run's requests are all admitted as the first was, which holds only for commands none
    /// of whose requests changes how the next is admitted. Each command given a run handler must
    /// be checked for that (`admit`) and added here.
    #[test]
    fn only_the_reviewed_commands_run_in_runs() {
        let running: Vec<&str> = COMMANDS
            .iter()
            .filter(|spec| spec.run.is_some())
            .map(|spec| spec.name)
            .collect();
        assert_eq!(running, ["bf.add", "bf.exists", "cbf.add", "cbf.exists"]);
    }
}
