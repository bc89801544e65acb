//! Observability commands and INFO sections: SLOWLOG, SIEVED.STATS, and INFO's commandstats and
//! bloom sections.

use super::args::{is, parse_i64};
use super::errors::*;
use super::{Ctx, COMMANDS};
use crate::filter::Health;
use crate::protocol::Request;
use crate::store::{summarize, Value};
use std::fmt::Write;

/// INFO commandstats, in Redis's format.
pub fn commandstats_section(ctx: &Ctx, out: &mut String) {
    out.push_str("# Commandstats\r\n");
    for (index, totals) in ctx.shared.commands.used() {
        let per_call = totals.usec as f64 / totals.calls.max(1) as f64;
        let _ = write!(
            out,
            "cmdstat_{}:calls={},usec={},usec_per_call={per_call:.2},rejected_calls={},failed_calls={}\r\n",
            COMMANDS[index].name, totals.calls, totals.usec, totals.rejected, totals.failed,
        );
    }
}

/// INFO bloom: every filter in every database, by type. Visits every key, which is why the
/// section is left out of a plain INFO (as Redis leaves out its costlier sections).
pub fn bloom_section(ctx: &Ctx, out: &mut String) {
    let summary = summarize(ctx.store, ctx.now);
    let (bloom, counting) = (summary.bloom, summary.counting);
    let _ = write!(
        out,
        "# Bloom\r\nbf_filters:{}\r\nbf_bytes:{}\r\nbf_items:{}\r\nbf_capacity:{}\r\nbf_links:{}\r\n\
         cbf_filters:{}\r\ncbf_bytes:{}\r\ncbf_items:{}\r\ncbf_capacity:{}\r\ncbf_links:{}\r\n\
         cbf_saturated_counters:{}\r\n",
        bloom.filters,
        bloom.bytes,
        bloom.items,
        bloom.capacity,
        bloom.links,
        counting.filters,
        counting.bytes,
        counting.items,
        counting.capacity,
        counting.links,
        counting.saturated_counters,
    );
}

/// SIEVED.STATS key: how full a filter is and what that does to its answers; see
/// `filter/health.rs` for the estimate.
pub fn sieved_stats(ctx: &mut Ctx, request: Request) -> CmdResult {
    let (health, saturated) = ctx.db().get(request.arg(1), ctx.now, |value| match value {
        None => Err(CmdError::from(BF_NOT_FOUND)),
        Some(Value::Bloom(chain)) => Ok((Health::of_bloom(chain), None)),
        Some(Value::Counting(chain)) => {
            Ok((Health::of_counting(chain), Some(chain.saturated_counters())))
        }
        Some(Value::String(_)) => Err(WRONGTYPE.into()),
    })?;
    let reply = &mut *ctx.reply;
    reply.map(10 + saturated.is_some() as usize);
    reply.bulk(b"type");
    reply.bulk(if saturated.is_some() {
        b"counting"
    } else {
        b"bloom"
    });
    reply.bulk(b"links");
    reply.int(health.links as i64);
    reply.bulk(b"capacity");
    reply.int(health.capacity as i64);
    reply.bulk(b"items");
    reply.int(health.items as i64);
    reply.bulk(b"bytes");
    reply.int(health.bytes as i64);
    reply.bulk(b"fill_ratio");
    reply.double(health.fill_ratio);
    reply.bulk(b"newest_link_fill_ratio");
    reply.double(health.newest_fill_ratio);
    reply.bulk(b"target_error_rate");
    reply.double(health.target_error_rate);
    reply.bulk(b"estimated_error_rate");
    reply.double(health.estimated_error_rate);
    reply.bulk(if health.scaling {
        b"items_until_scale_out".as_slice()
    } else {
        b"items_until_full"
    });
    reply.int(health.items_until_scale_out as i64);
    if let Some(saturated) = saturated {
        reply.bulk(b"saturated_counters");
        reply.int(saturated as i64);
    }
    Ok(())
}

const SLOWLOG_HELP: &[&str] = &[
    "SLOWLOG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "GET [<count>]",
    "    Return top <count> entries from the slowlog (default: 10, -1 mean all).",
    "    Entries are made of:",
    "    id, timestamp, time in microseconds, arguments array, client IP and port,",
    "    client name",
    "LEN",
    "    Return the length of the slowlog.",
    "RESET",
    "    Reset the slowlog.",
    "HELP",
    "    Print this help.",
];

pub fn slowlog(ctx: &mut Ctx, request: Request) -> CmdResult {
    let sub = request.arg(1);
    let slowlog = &ctx.shared.slowlog;
    if is(sub, "GET") && request.len() <= 3 {
        let count = match request.len() {
            3 => match parse_i64(request.arg(2)) {
                Some(-1) => usize::MAX,
                Some(n) if n >= 0 => n as usize,
                _ => return Err("ERR count should be greater than or equal to -1".into()),
            },
            _ => 10,
        };
        let entries = slowlog.newest(count);
        let reply = &mut *ctx.reply;
        reply.array(entries.len());
        for entry in entries {
            reply.array(6);
            reply.int(entry.id as i64);
            reply.int(entry.timestamp as i64);
            reply.int(entry.micros as i64);
            reply.array(entry.args.len());
            entry.args.iter().for_each(|arg| reply.bulk(arg));
            reply.bulk(entry.client_addr.as_bytes());
            reply.bulk(&entry.client_name);
        }
    } else if is(sub, "LEN") && request.len() == 2 {
        ctx.reply.int(slowlog.len() as i64);
    } else if is(sub, "RESET") && request.len() == 2 {
        slowlog.reset();
        ctx.reply.ok();
    } else if is(sub, "HELP") && request.len() == 2 {
        ctx.reply.array(SLOWLOG_HELP.len());
        SLOWLOG_HELP.iter().for_each(|line| ctx.reply.simple(line));
    } else if ["GET", "LEN", "RESET", "HELP"].iter().any(|s| is(sub, s)) {
        return Err(CmdError::arity(&format!(
            "slowlog|{}",
            String::from_utf8_lossy(sub).to_ascii_lowercase()
        )));
    } else {
        return Err(CmdError::unknown_subcommand(sub, "SLOWLOG"));
    }
    Ok(())
}
