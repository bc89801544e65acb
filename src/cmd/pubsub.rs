//! Pub/Sub commands: SUBSCRIBE, UNSUBSCRIBE, PSUBSCRIBE, PUNSUBSCRIBE, PUBLISH, PUBSUB. The
//! registry and the delivery of messages belong to the server (`context::PubSub`); here are
//! Redis 7's replies.

use super::args::{keyword, Args, Items};
use super::context::SubscriptionKind;
use super::errors::*;
use super::spec::{bits, pattern, string, CommandSpec, Docs, Group};
use super::Ctx;
use crate::protocol::Request;

/// Whether a RESP2 client in the Pub/Sub context may run the command.
pub(super) fn allowed_when_subscribed(name: &str) -> bool {
    matches!(
        name,
        "subscribe" | "unsubscribe" | "psubscribe" | "punsubscribe" | "ping" | "quit" | "reset"
    )
}

/// Keeps CLIENT LIST's counts, and thus the Pub/Sub context, in step with the registry.
fn note_counts(ctx: &Ctx) {
    let (channels, patterns) = ctx
        .server
        .pubsub()
        .subscription_counts(ctx.session.client.id);
    ctx.session.client.set_subscriptions(channels, patterns);
}

fn confirm(ctx: &mut Ctx, verb: &[u8], name: Option<&[u8]>, count: usize) {
    ctx.reply.push(3);
    ctx.reply.bulk(verb);
    match name {
        Some(name) => ctx.reply.bulk(name),
        None => ctx.reply.null(),
    }
    ctx.reply.int(count as i64);
}

/// The channels or patterns of SUBSCRIBE and its kin: every word after the name.
fn names_of(request: Request<'_>) -> Items<'_> {
    Args::new(request, 1).items()
}

fn subscribe_to(ctx: &mut Ctx, request: Request, kind: SubscriptionKind, verb: &[u8]) {
    let id = ctx.session.client.id;
    for name in names_of(request).iter() {
        let count = ctx.server.pubsub().subscribe(id, kind, name);
        confirm(ctx, verb, Some(name), count);
    }
    note_counts(ctx);
}

/// With no names, leaves every subscription of the kind; with none to leave, still confirms
/// once, naming nothing, as Redis.
fn unsubscribe_from(ctx: &mut Ctx, request: Request, kind: SubscriptionKind, verb: &[u8]) {
    let id = ctx.session.client.id;
    let pubsub = ctx.server.pubsub();
    let named = names_of(request);
    let names: Vec<Vec<u8>> = match named.is_empty() {
        false => named.iter().map(<[u8]>::to_vec).collect(),
        true => pubsub.subscriptions(id, kind),
    };
    if names.is_empty() {
        let (channels, patterns) = pubsub.subscription_counts(id);
        confirm(ctx, verb, None, channels + patterns);
    }
    for name in &names {
        let count = pubsub.unsubscribe(id, kind, name);
        confirm(ctx, verb, Some(name), count);
    }
    note_counts(ctx);
}

pub(super) fn subscribe(ctx: &mut Ctx, request: Request) -> CmdResult {
    subscribe_to(ctx, request, SubscriptionKind::Channel, b"subscribe");
    Ok(())
}

pub(super) fn psubscribe(ctx: &mut Ctx, request: Request) -> CmdResult {
    subscribe_to(ctx, request, SubscriptionKind::Pattern, b"psubscribe");
    Ok(())
}

pub(super) fn unsubscribe(ctx: &mut Ctx, request: Request) -> CmdResult {
    unsubscribe_from(ctx, request, SubscriptionKind::Channel, b"unsubscribe");
    Ok(())
}

pub(super) fn punsubscribe(ctx: &mut Ctx, request: Request) -> CmdResult {
    unsubscribe_from(ctx, request, SubscriptionKind::Pattern, b"punsubscribe");
    Ok(())
}

pub(super) fn publish(ctx: &mut Ctx, request: Request) -> CmdResult {
    let mut args = Args::new(request, 1);
    let (channel, message) = (args.required()?, args.required()?);
    let receivers = ctx.server.pubsub().publish(channel, message);
    ctx.server
        .pubsub()
        .deliver_pending(ctx.session.client.id, ctx.reply);
    ctx.reply.int(receivers as i64);
    Ok(())
}

const PUBSUB_HELP: &[&str] = &[
    "PUBSUB <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "CHANNELS [<pattern>]",
    "    Return the currently active channels matching a <pattern> (default: '*').",
    "NUMPAT",
    "    Return number of subscriptions to patterns.",
    "NUMSUB [<channel> ...]",
    "    Return the number of subscribers for the specified channels, excluding",
    "    pattern subscriptions(default: no channels).",
    "SHARDCHANNELS [<pattern>]",
    "    Return the currently active shard level channels matching a <pattern> (default: '*').",
    "SHARDNUMSUB [<shardchannel> ...]",
    "    Return the number of subscribers for the specified shard level channel(s)",
    "HELP",
    "    Prints this help.",
];

/// PUBSUB's subcommands, each with what it asks.
enum Query<'a> {
    Help,
    Channels(Option<&'a [u8]>),
    ShardChannels,
    NumSub(Items<'a>),
    ShardNumSub(Items<'a>),
    NumPat,
}

#[derive(Clone, Copy)]
enum Subcommand {
    Help,
    Channels,
    ShardChannels,
    NumSub,
    ShardNumSub,
    NumPat,
}

impl<'a> Query<'a> {
    fn parse(request: Request<'a>) -> Result<Self, CmdError> {
        const SUBCOMMANDS: &[(&str, Subcommand)] = &[
            ("HELP", Subcommand::Help),
            ("CHANNELS", Subcommand::Channels),
            ("SHARDCHANNELS", Subcommand::ShardChannels),
            ("NUMSUB", Subcommand::NumSub),
            ("SHARDNUMSUB", Subcommand::ShardNumSub),
            ("NUMPAT", Subcommand::NumPat),
        ];
        let mut args = Args::new(request, 1);
        let sub = args.required()?;
        let subcommand =
            keyword(sub, SUBCOMMANDS).ok_or_else(|| CmdError::unknown_subcommand(sub, "PUBSUB"))?;
        let left = args.remaining();
        match subcommand {
            Subcommand::Help if left == 0 => Ok(Query::Help),
            Subcommand::Channels if left <= 1 => Ok(Query::Channels(args.next())),
            Subcommand::ShardChannels if left <= 1 => Ok(Query::ShardChannels),
            Subcommand::Help | Subcommand::Channels | Subcommand::ShardChannels => {
                Err(subcommand_arity(sub, "PUBSUB"))
            }
            Subcommand::NumSub => Ok(Query::NumSub(args.items())),
            Subcommand::ShardNumSub => Ok(Query::ShardNumSub(args.items())),
            Subcommand::NumPat if left == 0 => Ok(Query::NumPat),
            Subcommand::NumPat => Err(CmdError::arity("pubsub|numpat")),
        }
    }
}

/// PUBSUB. sieved has no cluster, so no shard channel ever has a subscriber.
pub(super) fn pubsub(ctx: &mut Ctx, request: Request) -> CmdResult {
    let pubsub = ctx.server.pubsub();
    let channels = |ctx: &mut Ctx, channels: Vec<Vec<u8>>| {
        ctx.reply.array(channels.len());
        channels.iter().for_each(|channel| ctx.reply.bulk(channel));
    };
    let counts = |ctx: &mut Ctx, channels: Items, count: &dyn Fn(&[u8]) -> usize| {
        ctx.reply.array(channels.len() * 2);
        for channel in channels.iter() {
            ctx.reply.bulk(channel);
            ctx.reply.int(count(channel) as i64);
        }
    };
    match Query::parse(request)? {
        Query::Help => {
            ctx.reply.array(PUBSUB_HELP.len());
            PUBSUB_HELP.iter().for_each(|line| ctx.reply.simple(line));
        }
        Query::Channels(pattern) => channels(ctx, pubsub.channels(pattern)),
        Query::ShardChannels => channels(ctx, Vec::new()),
        Query::NumSub(names) => counts(ctx, names, &|channel| pubsub.subscribers(channel)),
        Query::ShardNumSub(names) => counts(ctx, names, &|_| 0),
        Query::NumPat => ctx.reply.int(pubsub.patterns() as i64),
    }
    Ok(())
}

/// Pub/Sub commands as Redis 7 declares them.
pub(super) const SPECS: &[CommandSpec] = &[
    CommandSpec::new(
        "subscribe",
        -2,
        Group::Pubsub,
        "Listens for messages published to channels.",
        subscribe,
    )
    .flags(bits![Flags: PUBSUB, NOSCRIPT, LOADING, STALE])
    .acl(bits![Acl: PUBSUB, SLOW])
    .since("2.0.0")
    .complexity("O(N) where N is the number of channels to subscribe to.")
    .args(&[string("channel").multiple()]),
    CommandSpec::new(
        "unsubscribe",
        -1,
        Group::Pubsub,
        "Stops listening to messages posted to channels.",
        unsubscribe,
    )
    .flags(bits![Flags: PUBSUB, NOSCRIPT, LOADING, STALE])
    .acl(bits![Acl: PUBSUB, SLOW])
    .since("2.0.0")
    .complexity("O(N) where N is the number of channels to unsubscribe.")
    .args(&[string("channel").optional().multiple()]),
    CommandSpec::new(
        "psubscribe",
        -2,
        Group::Pubsub,
        "Listens for messages published to channels that match one or more patterns.",
        psubscribe,
    )
    .flags(bits![Flags: PUBSUB, NOSCRIPT, LOADING, STALE])
    .acl(bits![Acl: PUBSUB, SLOW])
    .since("2.0.0")
    .complexity("O(N) where N is the number of patterns to subscribe to.")
    .args(&[pattern("pattern").multiple()]),
    CommandSpec::new(
        "punsubscribe",
        -1,
        Group::Pubsub,
        "Stops listening to messages published to channels that match one or more patterns.",
        punsubscribe,
    )
    .flags(bits![Flags: PUBSUB, NOSCRIPT, LOADING, STALE])
    .acl(bits![Acl: PUBSUB, SLOW])
    .since("2.0.0")
    .complexity("O(N) where N is the number of patterns to unsubscribe.")
    .args(&[pattern("pattern").optional().multiple()]),
    CommandSpec::new(
        "publish",
        3,
        Group::Pubsub,
        "Posts a message to a channel.",
        publish,
    )
    .flags(bits![Flags: PUBSUB, LOADING, STALE, FAST])
    .acl(bits![Acl: PUBSUB, FAST])
    .since("2.0.0")
    .complexity(
        "O(N+M) where N is the number of clients subscribed to the receiving channel and M is \
         the total number of subscribed patterns (by any client).",
    )
    .args(&[string("channel"), string("message")]),
    CommandSpec::new(
        "pubsub",
        -2,
        Group::Pubsub,
        "A container for Pub/Sub commands.",
        pubsub,
    )
    .since("2.8.0")
    .complexity("Depends on subcommand.")
    .subcommands(PUBSUB_SUBCOMMANDS),
];

/// PUBSUB's subcommands, as COMMAND DOCS lists them.
const PUBSUB_SUBCOMMANDS: &[(&str, Docs)] = &[
    (
        "pubsub|channels",
        Docs::new("Returns the active channels.")
            .since("2.8.0")
            .complexity("O(N) where N is the number of active channels, and assuming constant time pattern matching (relatively short channels and patterns)")
            .args(&[
                pattern("pattern").optional(),
            ]),
    ),
    (
        "pubsub|help",
        Docs::new("Returns helpful text about the different subcommands.")
            .since("6.2.0")
            .complexity("O(1)"),
    ),
    (
        "pubsub|numpat",
        Docs::new("Returns a count of unique pattern subscriptions.")
            .since("2.8.0")
            .complexity("O(1)"),
    ),
    (
        "pubsub|numsub",
        Docs::new("Returns a count of subscribers to channels.")
            .since("2.8.0")
            .complexity("O(N) for the NUMSUB subcommand, where N is the number of requested channels")
            .args(&[
                string("channel").optional().multiple(),
            ]),
    ),
    (
        "pubsub|shardchannels",
        Docs::new("Returns the active shard channels.")
            .since("7.0.0")
            .complexity("O(N) where N is the number of active shard channels, and assuming constant time pattern matching (relatively short shard channels).")
            .args(&[
                pattern("pattern").optional(),
            ]),
    ),
    (
        "pubsub|shardnumsub",
        Docs::new("Returns the count of subscribers of shard channels.")
            .since("7.0.0")
            .complexity("O(N) for the SHARDNUMSUB subcommand, where N is the number of requested shard channels")
            .args(&[
                string("shardchannel").optional().multiple(),
            ]),
    ),
];
