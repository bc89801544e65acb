//! The FQ.* family: the crawl frontier (store/frontier.rs), a seen-set and a queue of leased,
//! retried, politely spaced items in one value. This file applies the requests
//! (`frontier_requests.rs` reads them), writes replies and says what the write log gets.
//!
//! What the log gets never depends on the clock at replay: a pop is logged as its effect,
//! `FQ.LEASE key time [group id deadline ...]` (the frontier's clock moved to `time`, then those
//! items leased until those deadlines); an acknowledgement or NACK as the ids it really took
//! (a lease that had ended takes nothing), a NACK's DELAY and a group's PAUSE as absolute times;
//! a frontier made by FQ.PUSH as the FQ.RESERVE of the settings it was made with.

use super::args::{Key, KeyItems};
use super::errors::*;
use super::filter_options::max_capacity;
use super::filter_specs::{FILTER_KEY, READ_ACCESS_KEY};
use super::filters;
use super::frontier_requests::{Dead, Host, HostSet, Ids, Lease, Nack, Pop, Push, Reserve};
use super::spec::{command_table, CommandSpec};
use super::Ctx;
use crate::filter::FilterError;
use crate::frontier::{Frontier, FrontierOptions, Leased, Nacked, Rules};
use crate::protocol::{Reply, Request};
use crate::store::Value;
use std::time::Duration;

fn of(value: &Value) -> Option<&Frontier> {
    match value {
        Value::Frontier(frontier) => Some(frontier),
        _ => None,
    }
}

fn of_mut(value: &mut Value) -> Option<&mut Frontier> {
    match value {
        Value::Frontier(frontier) => Some(frontier),
        _ => None,
    }
}

/// Runs `f` on the frontier at `key` for writing; `missing` when there is none.
fn with_frontier_mut<R>(
    ctx: &Ctx,
    key: &[u8],
    missing: impl FnOnce() -> Result<R, CmdError>,
    f: impl FnOnce(&mut Frontier) -> Result<R, CmdError>,
) -> Result<R, CmdError> {
    ctx.db().get_mut(key, ctx.now, |value| match value {
        Some(value) => of_mut(value).map_or(Err(WRONGTYPE.into()), f),
        None => missing(),
    })
}

fn with_frontier<R>(
    ctx: &Ctx,
    key: &[u8],
    missing: impl FnOnce() -> Result<R, CmdError>,
    f: impl FnOnce(&Frontier) -> Result<R, CmdError>,
) -> Result<R, CmdError> {
    ctx.db().get(key, ctx.now, |value| match value {
        Some(value) => of(value).map_or(Err(WRONGTYPE.into()), f),
        None => missing(),
    })
}

fn creation_error(error: FilterError) -> CmdError {
    match error {
        FilterError::TooLarge { .. } => error.into(),
        FilterError::CannotScale => BF_RATE_UNREACHABLE.into(),
        _ => BF_NO_MEMORY.into(),
    }
}

/// Wakes the clients parked in FQ.POP ... BLOCK on `key` to look again: a write that may have
/// made an item due or a host free. A frontier stays when empty, so creating the key is not the
/// only way work comes, as it is for a list.
fn may_have_work(ctx: &Ctx, key: &[u8]) {
    ctx.db().signal_ready(key);
}

fn text(value: impl std::fmt::Display) -> Vec<u8> {
    value.to_string().into_bytes()
}

/// The FQ.RESERVE that makes exactly this frontier, for the log.
fn note_created(ctx: &mut Ctx, key: &[u8], options: &FrontierOptions) {
    let rules = options.rules;
    let words = [
        text(options.error_rate),
        text(options.capacity),
        text(rules.lease_ms),
        text(rules.retries),
        text(rules.delay_ms),
        text(rules.inflight),
    ];
    ctx.note_effect([
        &b"FQ.RESERVE"[..],
        key,
        &words[0],
        &words[1],
        b"LEASE",
        &words[2],
        b"RETRIES",
        &words[3],
        b"DELAY",
        &words[4],
        b"INFLIGHT",
        &words[5],
    ]);
}

/// FQ.RESERVE key error_rate capacity [LEASE ms] [RETRIES n] [DELAY ms] [INFLIGHT n]
fn reserve(ctx: &mut Ctx, request: Request) -> CmdResult {
    let Reserve {
        key,
        error_rate,
        capacity,
        rules,
    } = Reserve::parse(request, max_capacity(ctx))?;
    filters::refuse_existing(ctx, key, |v| of(v).is_some())?;
    let options = FrontierOptions {
        error_rate,
        capacity,
        rules,
    };
    let frontier = Frontier::new(options, ctx.filter_memory_limit()).map_err(creation_error)?;
    if !ctx
        .db()
        .insert_new(key, Value::Frontier(Box::new(frontier)), ctx.now)
    {
        return Err(BF_ITEM_EXISTS.into());
    }
    ctx.reply.ok();
    Ok(())
}

/// The options of a frontier FQ.PUSH makes: the `fq-*` settings.
fn default_options(ctx: &Ctx) -> FrontierOptions {
    let settings = ctx.config().settings();
    FrontierOptions {
        error_rate: settings.fq_error_rate,
        capacity: settings.fq_initial_size,
        rules: Rules {
            lease_ms: settings.fq_lease,
            retries: settings.fq_retries,
            delay_ms: settings.fq_delay,
            inflight: settings.fq_inflight,
        },
    }
}

/// FQ.PUSH key [PRIORITY p] [AT unix-ms] [FORCE] [URLS] url [url ...]: one integer per URL, 1
/// if it is now queued. A push the memory limit refuses ends the reply with its error, as BF.MADD's
/// does, and the URLs after it are not looked at.
fn push(ctx: &mut Ctx, request: Request) -> CmdResult {
    let Push {
        key,
        priority,
        due,
        force,
        urls,
    } = Push::parse(request)?;
    let limit = ctx.filter_memory_limit();
    let options = default_options(ctx);
    let scratch = &mut ctx.session.scratch;
    scratch.clear();
    let db = ctx.store.db(ctx.session.db);
    let ((), created) = db.get_or_create(
        key,
        ctx.now,
        || {
            Frontier::new(options, limit)
                .map(|frontier| Value::Frontier(Box::new(frontier)))
                .map_err(creation_error)
        },
        |value, created| {
            let Some(frontier) = of_mut(value) else {
                return Err(CmdError::from(WRONGTYPE));
            };
            for url in urls.iter() {
                match frontier.push(url, priority, due, force, limit) {
                    Ok(pushed) => scratch.push(Ok(pushed)),
                    Err(error) => {
                        scratch.push(Err(error.into()));
                        break;
                    }
                }
            }
            Ok(((), created))
        },
    )??;
    if created {
        note_created(ctx, key, &options);
    }
    let refused = ctx.session.scratch.last().is_some_and(Result::is_err);
    if refused {
        // Replay runs without the limit: it must get only the URLs that went in.
        let taken = ctx.session.scratch.len() - 1;
        let mut words: Vec<&[u8]> = urls.head().collect();
        words.extend(urls.iter().take(taken));
        if taken > 0 {
            ctx.note_effect(words);
        }
        ctx.log_effects_only();
    }
    let reply = &mut *ctx.reply;
    reply.array(ctx.session.scratch.len());
    for result in &ctx.session.scratch {
        match result {
            Ok(pushed) => reply.int(i64::from(*pushed)),
            Err(error) => reply.error(error.message()),
        }
    }
    may_have_work(ctx, key);
    Ok(())
}

/// FQ.POP key [COUNT n] [LEASE ms] [BLOCK ms]: `[id, url]` pairs, best first. With BLOCK and
/// nothing due, the client is parked on the key (`Ctx::block_on`), as BLPOP's is, and the pop
/// runs again when a write to the frontier may have made work (FQ.PUSH, NACK, ACK, REQUEUE,
/// HOST signal it) or at the frontier's next timed event (a lease running out, a held item
/// coming due, a host's wait ending); inside MULTI, or past the timeout, the answer is a null
/// array, as BLPOP's.
fn pop(ctx: &mut Ctx, request: Request) -> CmdResult {
    let options = Pop::parse(request)?;
    let key = options.key;
    let now = ctx.now;
    let mut leased = Vec::new();
    let (clock, next_event) = with_frontier_mut(
        ctx,
        key,
        || Ok((None, None)),
        |frontier| {
            if !frontier.has_work(now) {
                return Ok((None, frontier.next_event()));
            }
            frontier.advance(now);
            let lease_ms = options.lease_ms.unwrap_or(frontier.rules().lease_ms);
            frontier.pop(options.count, lease_ms, &mut leased);
            Ok((Some(frontier.clock()), frontier.next_event()))
        },
    )?;
    if let Some(clock) = clock {
        note_leases(ctx, key, clock, &leased);
    }
    ctx.log_effects_only();
    match options.block_ms {
        Some(_) if leased.is_empty() && !ctx.may_block() => ctx.reply.null_array(),
        Some(block_ms) if leased.is_empty() => {
            let timeout = (block_ms > 0).then(|| Duration::from_millis(block_ms));
            ctx.block_on(
                &request,
                vec![key.to_vec()],
                timeout,
                |value| matches!(value, Value::Frontier(_)),
                Reply::null_array,
            );
            ctx.wake_blocked_at(next_event);
        }
        _ => write_leased(ctx, &leased),
    }
    Ok(())
}

fn write_leased(ctx: &mut Ctx, leased: &[Leased]) {
    let reply = &mut *ctx.reply;
    reply.array(leased.len());
    for item in leased {
        reply.array(2);
        reply.int(item.id as i64);
        reply.bulk(&item.url);
    }
}

/// Logs a pop's effect: the clock it moved to, and what it leased until when.
fn note_leases(ctx: &mut Ctx, key: &[u8], clock: u64, leased: &[Leased]) {
    let numbers: Vec<(Vec<u8>, Vec<u8>)> = leased
        .iter()
        .map(|item| (text(item.id), text(item.deadline)))
        .collect();
    let clock = text(clock);
    let mut words: Vec<&[u8]> = vec![b"FQ.LEASE", key, &clock];
    for (item, (id, deadline)) in leased.iter().zip(&numbers) {
        words.extend([&item.group[..], id, deadline]);
    }
    ctx.note_effect(words);
}

/// FQ.LEASE key time [group id deadline ...]: what the log holds of a pop (and of the clock
/// moving); a client has no use for it. Answers how many items it leased.
fn lease(ctx: &mut Ctx, request: Request) -> CmdResult {
    let Lease { key, time, items } = Lease::parse(request)?;
    let leased = with_frontier_mut(
        ctx,
        key,
        || Err(BF_NOT_FOUND.into()),
        |frontier| {
            frontier.advance(time);
            for &(group, id, deadline) in &items {
                if !frontier.lease_logged(group, id, deadline) {
                    return Err(FQ_NOT_QUEUED.into());
                }
            }
            Ok(items.len())
        },
    )?;
    ctx.reply.int(leased as i64);
    Ok(())
}

/// FQ.ACK key id [id ...]: how many running leases it completed.
fn ack(ctx: &mut Ctx, request: Request) -> CmdResult {
    let Ids { key, ids } = Ids::parse(request)?;
    let now = (!ctx.session.replaying).then_some(ctx.now);
    let acked: Vec<u64> = with_frontier_mut(
        ctx,
        key,
        || Ok(Vec::new()),
        |frontier| {
            Ok(ids
                .iter()
                .copied()
                .filter(|&id| frontier.ack(id, now))
                .collect())
        },
    )?;
    // A host's INFLIGHT limit may let another item go now.
    finish_on_ids(ctx, b"FQ.ACK", key, &acked);
    Ok(())
}

/// The end of FQ.ACK and FQ.REQUEUE: logs `command` with just the ids it took effect on, so
/// that replay does what happened here, replies their count, and signals the key, whose waiters
/// may find work now.
fn finish_on_ids(ctx: &mut Ctx, command: &[u8], key: &[u8], ids: &[u64]) {
    if !ids.is_empty() {
        let words: Vec<Vec<u8>> = ids.iter().map(|&id| text(id)).collect();
        let mut args: Vec<&[u8]> = vec![command, key];
        args.extend(words.iter().map(Vec::as_slice));
        ctx.note_effect(args);
    }
    ctx.log_effects_only();
    ctx.reply.int(ids.len() as i64);
    may_have_work(ctx, key);
}

/// FQ.NACK key id [DELAY ms | AT unix-ms]: 1 if the item was leased (it is queued again, or
/// dead past its retries), 0 if not.
fn nack(ctx: &mut Ctx, request: Request) -> CmdResult {
    let Nack {
        key,
        id,
        delay,
        due,
    } = Nack::parse(request)?;
    let now = ctx.now;
    let replaying = ctx.session.replaying;
    let nacked = with_frontier_mut(
        ctx,
        key,
        || Ok(None),
        |frontier| {
            let due = due.unwrap_or(now.max(frontier.clock()) + delay);
            let nacked = frontier.nack(id, (!replaying).then_some(now), due);
            Ok(nacked.map(|nacked| (nacked, due)))
        },
    )?;
    if let Some((_, due)) = nacked {
        let (id, due) = (text(id), text(due));
        ctx.note_effect([&b"FQ.NACK"[..], key, &id, b"AT", &due]);
    }
    ctx.log_effects_only();
    ctx.reply.int(i64::from(matches!(
        nacked,
        Some((Nacked::Requeued | Nacked::Dead, _))
    )));
    may_have_work(ctx, key);
    Ok(())
}

/// FQ.SEEN key url [url ...]: 1 or 0 per URL, adding nothing.
fn seen(ctx: &mut Ctx, request: Request) -> CmdResult {
    let KeyItems { key, items: urls } = KeyItems::parse(request)?;
    let reply = &mut *ctx.reply;
    let db = ctx.store.db(ctx.session.db);
    db.get(key, ctx.now, |value| match value {
        Some(value) => {
            let frontier = of(value).ok_or(CmdError::from(WRONGTYPE))?;
            reply.array(urls.len());
            for url in urls.iter() {
                reply.int(i64::from(frontier.seen(url)));
            }
            Ok(())
        }
        None => {
            reply.array(urls.len());
            urls.iter().for_each(|_| reply.int(0));
            Ok(())
        }
    })
}

/// FQ.HOST key group [DELAY ms] [INFLIGHT n] [PAUSE ms | PAUSEAT unix-ms]: sets the group's
/// rules (OK), or without options reads them.
fn host(ctx: &mut Ctx, request: Request) -> CmdResult {
    let Host { key, group, set } = Host::parse(request)?;
    let Some(HostSet { mut change, pause }) = set else {
        let now = ctx.now;
        let rules = with_frontier(
            ctx,
            key,
            || Err(BF_NOT_FOUND.into()),
            |frontier| Ok(frontier.host_rules(&group, now)),
        )?;
        // Flagged a write for its other form: this one changes nothing and is not logged.
        ctx.log_effects_only();
        let reply = &mut *ctx.reply;
        reply.map(5);
        for (label, value) in [
            ("delay", rules.delay_ms),
            ("inflight", u64::from(rules.inflight)),
            ("pause", rules.paused_until.saturating_sub(now)),
            ("queued", rules.queued),
            ("leased", rules.leased),
        ] {
            reply.simple(label);
            reply.int(value as i64);
        }
        return Ok(());
    };
    let now = ctx.now;
    let change = with_frontier_mut(
        ctx,
        key,
        || Err(BF_NOT_FOUND.into()),
        |frontier| {
            if let Some(pause) = pause {
                change.paused_until = Some(now.max(frontier.clock()) + pause);
            }
            frontier.set_host(&group, change);
            Ok(change)
        },
    )?;
    let words = [
        change.delay_ms.map(text),
        change.inflight.map(text),
        change.paused_until.map(text),
    ];
    let mut args: Vec<&[u8]> = vec![b"FQ.HOST", key, &group];
    for (keyword, value) in [&b"DELAY"[..], b"INFLIGHT", b"PAUSEAT"]
        .into_iter()
        .zip(&words)
    {
        if let Some(value) = value {
            args.extend([keyword, value]);
        }
    }
    ctx.note_effect(args);
    ctx.log_effects_only();
    ctx.reply.ok();
    may_have_work(ctx, key);
    Ok(())
}

/// FQ.DEAD key [COUNT n]: `[id, url, deliveries]` of the dead items, lowest id first.
fn dead(ctx: &mut Ctx, request: Request) -> CmdResult {
    let Dead { key, count } = Dead::parse(request)?;
    let now = ctx.now;
    let items = with_frontier(
        ctx,
        key,
        || Ok(Vec::new()),
        |frontier| Ok(frontier.dead_items(now, count)),
    )?;
    let reply = &mut *ctx.reply;
    reply.array(items.len());
    for (id, url, deliveries) in items {
        reply.array(3);
        reply.int(id as i64);
        reply.bulk(&url);
        reply.int(i64::from(deliveries));
    }
    Ok(())
}

/// FQ.REQUEUE key id [id ...]: how many dead items went back to the queue.
fn requeue(ctx: &mut Ctx, request: Request) -> CmdResult {
    let Ids { key, ids } = Ids::parse(request)?;
    // Replay finds the clock moved by the FQ.LEASE logged before.
    let now = (!ctx.session.replaying).then_some(ctx.now);
    let (moved, requeued) = with_frontier_mut(
        ctx,
        key,
        || Ok((None, Vec::new())),
        |frontier| {
            let moved = now.filter(|&now| frontier.has_work(now) || now > frontier.clock());
            if let Some(now) = moved {
                frontier.advance(now);
            }
            let requeued = ids
                .iter()
                .copied()
                .filter(|&id| frontier.requeue(id))
                .collect();
            Ok((moved.map(|_| frontier.clock()), requeued))
        },
    )?;
    if let Some(clock) = moved {
        note_leases(ctx, key, clock, &[]);
    }
    finish_on_ids(ctx, b"FQ.REQUEUE", key, &requeued);
    Ok(())
}

/// FQ.INFO key: a map under RESP3, a flat array under RESP2, as BF.INFO.
fn info(ctx: &mut Ctx, request: Request) -> CmdResult {
    let Key { key } = Key::parse(request)?;
    let now = ctx.now;
    let info = with_frontier(
        ctx,
        key,
        || Err(BF_NOT_FOUND.into()),
        |frontier| Ok(frontier.info(now)),
    )?;
    let reply = &mut *ctx.reply;
    reply.map(10);
    reply.simple("Capacity");
    reply.int(info.capacity as i64);
    reply.simple("Error rate");
    reply.double(info.error_rate);
    for (label, value) in [
        ("Seen", info.seen),
        ("Queued", info.queued),
        ("Due", info.due),
        ("Leased", info.leased),
        ("Done", info.done),
        ("Dead", info.dead),
        ("Hosts", info.hosts),
        ("Memory", info.memory),
    ] {
        reply.simple(label);
        reply.int(value as i64);
    }
    Ok(())
}

/// FQ.*: sieved's own, in the module group as BF.* and CBF.* are.
pub(super) const SPECS: &[CommandSpec] = &command_table! { Bloom:
    // name, arity, [flags], key specs, [ACL categories], handler, docs[, more]
    "fq.reserve", -4, [WRITE, DENYOOM], FILTER_KEY, [WRITE, FAST, BLOOM], reserve, docs::RESERVE;
    "fq.push", -3, [WRITE, DENYOOM], FILTER_KEY, [WRITE, BLOOM], push, docs::PUSH;
    "fq.pop", -2, [WRITE], FILTER_KEY, [WRITE, BLOOM], pop, docs::POP;
    "fq.lease", -3, [WRITE, LOG_ONLY], FILTER_KEY, [WRITE, BLOOM], lease, docs::LEASE;
    "fq.ack", -3, [WRITE, FAST], FILTER_KEY, [WRITE, BLOOM], ack, docs::ACK;
    "fq.nack", -3, [WRITE, FAST], FILTER_KEY, [WRITE, BLOOM], nack, docs::NACK;
    "fq.seen", -3, [READONLY, FAST], READ_ACCESS_KEY, [READ, BLOOM], seen, docs::SEEN;
    "fq.host", -3, [WRITE, FAST], FILTER_KEY, [WRITE, BLOOM], host, docs::HOST;
    "fq.dead", -2, [READONLY], READ_ACCESS_KEY, [READ, BLOOM], dead, docs::DEAD;
    "fq.requeue", -3, [WRITE, FAST], FILTER_KEY, [WRITE, BLOOM], requeue, docs::REQUEUE;
    "fq.info", 2, [READONLY, FAST], READ_ACCESS_KEY, [READ, FAST, BLOOM], info, docs::INFO;
};

/// What COMMAND DOCS says of each.
mod docs {
    use super::super::spec::{
        block, double, integer, key, one_of, pure_token, string, unix_time, Arg, Docs,
        FIRST_RELEASE,
    };

    pub(super) const RESERVE: Docs = Docs::new(
        "Creates a crawl frontier: a seen-set for capacity URLs at error_rate, and a queue with \
         leases, retries and politeness per host",
    )
    .since(FIRST_RELEASE)
    .complexity("O(1)")
    .args(&[
        key("key"),
        double("error_rate"),
        integer("capacity"),
        LEASE_MS,
        integer("retries")
            .token("RETRIES")
            .summary("Deliveries an item gets before it is dead-lettered; 0 never")
            .optional(),
        HOST_DELAY,
        HOST_INFLIGHT,
    ]);
    pub(super) const PUSH: Docs = Docs::new(
        "Queues each URL not seen before (or every URL, with FORCE); creates the frontier if it \
         does not exist",
    )
    .since(FIRST_RELEASE)
    .complexity(
        "O(n * (k + log h)), where n is the number of URLs, k the number of hash \
                 functions and h the number of hosts",
    )
    .args(&[
        key("key"),
        integer("priority")
            .token("PRIORITY")
            .summary("Higher is popped first")
            .optional(),
        DUE_AT.optional(),
        pure_token("force", "FORCE").optional(),
        pure_token("urls", "URLS")
            .summary("Ends the options: every word after it is a URL")
            .optional(),
        string("url").multiple(),
    ]);
    pub(super) const POP: Docs =
        Docs::new("Leases the best items that are due, from hosts that may be fetched now")
            .since(FIRST_RELEASE)
            .complexity("O(n * log h), where n is the count and h the number of hosts")
            .args(&[
                key("key"),
                integer("count").token("COUNT").optional(),
                LEASE_MS,
                integer("timeout")
                    .token("BLOCK")
                    .summary(
                        "Milliseconds to wait for an item that may be popped; 0 waits for ever",
                    )
                    .optional(),
            ]);
    pub(super) const LEASE: Docs = Docs::new(
        "Applies leases as FQ.POP made them (the form the write log and replicas receive)",
    )
    .since(FIRST_RELEASE)
    .complexity("O(n * log h), where n is the number of items and h the number of hosts")
    .args(&[
        key("key"),
        unix_time("unix-time-milliseconds"),
        block(
            "lease",
            &[string("group"), integer("id"), unix_time("deadline")],
        )
        .optional()
        .multiple(),
    ]);
    pub(super) const ACK: Docs =
        Docs::new("Completes leased items: they leave the frontier for good, their URLs stay seen")
            .since(FIRST_RELEASE)
            .complexity("O(n * log h), where n is the number of ids and h the number of hosts")
            .args(KEY_IDS);
    pub(super) const NACK: Docs =
        Docs::new("Gives a leased item back: queued again (after DELAY) or dead past its retries")
            .since(FIRST_RELEASE)
            .complexity("O(log n)")
            .args(&[
                key("key"),
                integer("id"),
                one_of(
                    "when",
                    &[
                        integer("delay")
                            .token("DELAY")
                            .summary("Milliseconds before the item is due again"),
                        DUE_AT,
                    ],
                )
                .optional(),
            ]);
    pub(super) const SEEN: Docs =
        Docs::new("Checks whether URLs were seen by a frontier, adding nothing")
            .since(FIRST_RELEASE)
            .complexity(
                "O(k * n), where k is the number of hash functions and n the number of URLs",
            )
            .args(&[key("key"), string("url").multiple()]);
    pub(super) const HOST: Docs = Docs::new(
        "Sets or reads the politeness rules of one host (crawl delay, items in flight, pause)",
    )
    .since(FIRST_RELEASE)
    .complexity("O(log h), where h is the number of hosts")
    .args(&[
        key("key"),
        string("group").summary("The host, as scheme://host[:port], or \"\" for the rest"),
        HOST_DELAY,
        HOST_INFLIGHT,
        one_of(
            "pause",
            &[
                integer("milliseconds")
                    .token("PAUSE")
                    .summary("How long nothing is popped from the host"),
                unix_time("unix-time-milliseconds")
                    .token("PAUSEAT")
                    .summary("When items may be popped from the host again"),
            ],
        )
        .optional(),
    ]);
    pub(super) const DEAD: Docs = Docs::new("Lists dead-lettered items with their deliveries")
        .since(FIRST_RELEASE)
        .complexity("O(n + l), where n is the count and l the number of leased items")
        .args(&[key("key"), integer("count").token("COUNT").optional()]);
    pub(super) const REQUEUE: Docs = Docs::new("Puts dead-lettered items back in the queue")
        .since(FIRST_RELEASE)
        .complexity("O(n * log h), where n is the number of ids and h the number of hosts")
        .args(KEY_IDS);
    pub(super) const INFO: Docs = Docs::new(
        "Returns a frontier's counters: seen, queued, due, leased, done, dead, hosts, memory",
    )
    .since(FIRST_RELEASE)
    .complexity("O(l), where l is the number of leases that ended since the last pop")
    .args(&[key("key")]);

    const KEY_IDS: &[Arg] = &[key("key"), integer("id").multiple()];
    /// A pop's lease, for FQ.RESERVE (its default) and FQ.POP.
    const LEASE_MS: Arg = integer("lease")
        .token("LEASE")
        .summary("Milliseconds a popped item is leased for")
        .optional();
    /// The politeness rules FQ.RESERVE sets for every host and FQ.HOST for one.
    const HOST_DELAY: Arg = integer("delay")
        .token("DELAY")
        .summary("Milliseconds between two leases from one host")
        .optional();
    const HOST_INFLIGHT: Arg = integer("inflight")
        .token("INFLIGHT")
        .summary("Items of one host leased at once; 0 for no limit")
        .optional();
    /// When a pushed or given-back item becomes due.
    const DUE_AT: Arg = unix_time("unix-time-milliseconds")
        .token("AT")
        .summary("When the item is due");
}
