//! COMMAND DOCS as Debian's redis-server 7.0 answers it, for every command both servers have and
//! every subcommand of a container both document, in RESP2 and in RESP3: the same fields in the
//! same order, each with the same bytes. sieved documents Redis's commands with Redis 8.0's
//! facts (its `src/commands/*.json`); where Redis 7.0 and 8 say different things, the field is
//! left out of the comparison, as `EXCLUDED` lists with the reason. An exclusion that no longer
//! differs fails the test, so the list stays exact.

use crate::support::{escape, Node, RawClient, RedisServer, Resp, TestServer};
use std::collections::HashSet;

/// Left out for every command: Redis 7.2 rewrote nearly every summary, and sieved has Redis 8's.
const ALWAYS_EXCLUDED: &str = "summary";

/// The fields a deprecation adds.
const DEPRECATION: &[&str] = &["doc_flags", "deprecated_since", "replaced_by"];
const ARGUMENTS: &[&str] = &["arguments"];
const COMPLEXITY: &[&str] = &["complexity"];

/// (command or `container|subcommand`, its fields left out, why): `*` leaves out the whole entry.
#[rustfmt::skip]
const EXCLUDED: &[(&str, &[&str], &str)] = &[
    ("bitcount", ARGUMENTS, "7.2 renamed `index`, `index_unit` to `range`, `unit`"),
    ("bitpos", ARGUMENTS, "7.2 renamed `index`, `end_index`, `index_unit`"),
    ("bitfield", ARGUMENTS, "7.2 renamed its blocks (`encoding_offset` to `get-block`...)"),
    ("bitfield_ro", ARGUMENTS, "7.2 renamed `encoding_offset` to `get-block`"),
    ("bitop", ARGUMENTS, "7.2 made `operation` a choice of its four tokens"),
    ("mset", ARGUMENTS, "7.2 renamed `key_value` to `data`"),
    ("msetnx", ARGUMENTS, "7.2 renamed `key_value` to `data`"),
    ("hset", ARGUMENTS, "7.2 renamed `field_value` to `data`"),
    ("hmset", ARGUMENTS, "7.2 renamed `field_value` to `data`"),
    ("zadd", ARGUMENTS, "7.2 renamed `score_member` to `data`"),
    ("zrange", ARGUMENTS, "7.2 renamed `offset_count` to `limit`"),
    ("zrangebyscore", ARGUMENTS, "7.2 renamed `offset_count` to `limit`"),
    ("zrevrangebyscore", ARGUMENTS, "7.2 renamed `offset_count` to `limit`"),
    ("zrangebylex", ARGUMENTS, "7.2 renamed `offset_count` to `limit`"),
    ("zrevrangebylex", ARGUMENTS, "7.2 renamed `offset_count` to `limit`"),
    ("flushall", ARGUMENTS, "7.2 renamed `async` to `flush-type`"),
    ("flushdb", ARGUMENTS, "7.2 renamed `async` to `flush-type`"),
    ("hello", ARGUMENTS, "7.2 renamed `username_password` to `auth`"),
    ("shutdown", ARGUMENTS, "7.2 renamed `nosave_save` to `save-selector`"),
    // sieved has no keyword search among its key specifications: KEYS names the one it has.
    ("migrate", ARGUMENTS, "7.2 renamed the key choice and AUTH/AUTH2's arguments"),
    ("psubscribe", ARGUMENTS, "7.2 made `pattern` a pattern, not a block of one"),
    ("psubscribe", COMPLEXITY, "7.2 rewrote it"),
    ("punsubscribe", COMPLEXITY, "7.2 rewrote it"),
    ("unsubscribe", COMPLEXITY, "7.2 rewrote it"),
    ("hscan", ARGUMENTS, "NOVALUES came in 7.4"),
    ("hscan", COMPLEXITY, "7.0's ends with two periods"),
    ("sscan", COMPLEXITY, "7.0's ends with two periods"),
    ("zscan", COMPLEXITY, "7.0's ends with two periods"),
    ("zscan", ARGUMENTS, "sieved takes Valkey 8's NOSCORES, which no Redis has"),
    ("setnx", DEPRECATION, "deprecated in 7.2 (as of 2.6.12)"),
    ("setex", DEPRECATION, "deprecated in 7.2 (as of 2.6.12)"),
    ("psetex", DEPRECATION, "deprecated in 7.2 (as of 2.6.12)"),
    ("quit", DEPRECATION, "deprecated in 7.2"),
    ("client|kill", &["history", "arguments"], "7.2 renamed the filters, 7.4 added MAXAGE"),
    ("client|list", ARGUMENTS, "7.2 renamed the type choice, made ID's ids a list"),
    ("client|unblock", ARGUMENTS, "7.2 renamed `timeout_error` to `unblock-type`"),
    ("client|setinfo", &["*"], "came in 7.2"),
    ("command|getkeys", ARGUMENTS, "7.0 documents none"),
    ("command|getkeysandflags", ARGUMENTS, "7.0 documents none"),
    ("config|get", ARGUMENTS, "7.2 made `parameter` a string, not a block of one"),
    ("config|set", ARGUMENTS, "7.2 renamed `parameter_value` to `data`"),
    ("module|loadex", ARGUMENTS, "7.2 made `args` a string, not a block of one"),
];

/// One documentation map's fields, in order: each name with its value.
fn fields(docs: &Node) -> Vec<(String, &Node)> {
    let Node::Aggregate(_, items) = docs else {
        panic!("documentation is not a map: {}", escape(&docs.bytes()));
    };
    items
        .chunks(2)
        .map(|pair| (text(&pair[0]), &pair[1]))
        .collect()
}

/// The value of the field `name`, which the documentation has.
fn value<'a>(docs: &[(String, &'a Node)], name: &str) -> &'a Node {
    docs.iter().find(|(field, _)| field == name).unwrap().1
}

/// A bulk string's text.
fn text(node: &Node) -> String {
    let bytes = node.bytes();
    let start = bytes.iter().position(|&b| b == b'\n').unwrap() + 1;
    String::from_utf8(bytes[start..bytes.len() - 2].to_vec()).unwrap()
}

struct Comparison {
    failures: Vec<String>,
    /// Exclusions that left out a field that differed.
    used: HashSet<(&'static str, &'static str)>,
}

impl Comparison {
    fn excluded(&mut self, entry: &str, field: &str) -> bool {
        let found = EXCLUDED.iter().find_map(|(name, fields, _)| {
            let excluded = fields
                .iter()
                .find(|excluded| **excluded == field || **excluded == "*");
            excluded
                .filter(|_| *name == entry)
                .map(|excluded| (*name, *excluded))
        });
        if let Some(used) = found {
            self.used.insert(used);
        }
        found.is_some()
    }

    /// Compares one command's (or subcommand's) documentation, field by field.
    fn docs(&mut self, entry: &str, ours: &Node, theirs: &Node, context: &str) {
        if self.excluded(entry, "*") {
            return;
        }
        let kind = |node: &Node| node.bytes()[0];
        if kind(ours) != kind(theirs) {
            self.failures
                .push(format!("{entry} {context}: not the same aggregate type"));
            return;
        }
        let (ours, theirs) = (fields(ours), fields(theirs));
        let mut compared = |docs: &[(String, &Node)], other: &[(String, &Node)]| {
            docs.iter()
                .filter(|(field, value)| {
                    let other = other.iter().find(|(name, _)| name == field);
                    let differs = other.is_none_or(|(_, v)| v.bytes() != value.bytes());
                    field != ALWAYS_EXCLUDED && !(differs && self.excluded(entry, field))
                })
                .map(|(field, _)| field.clone())
                .collect::<Vec<_>>()
        };
        let (our_fields, their_fields) = (compared(&ours, &theirs), compared(&theirs, &ours));
        if our_fields != their_fields {
            self.failures.push(format!(
                "{entry} {context}: fields {our_fields:?}, redis-server's {their_fields:?}"
            ));
            return;
        }
        for field in our_fields {
            let (mine, redis) = (value(&ours, &field), value(&theirs, &field));
            if field == "subcommands" {
                self.subcommands(entry, mine, redis, context);
            } else if mine.bytes() != redis.bytes() {
                self.failures.push(format!(
                    "{entry}.{field} {context}:\n  ours  {}\n  redis {}",
                    escape(&mine.bytes()),
                    escape(&redis.bytes())
                ));
            }
        }
    }

    /// Each of sieved's subcommands against Redis's of that name; Redis lists them in the order
    /// of its hash table, which its random hash seed changes from run to run, and has some
    /// sieved does not.
    fn subcommands(&mut self, entry: &str, ours: &Node, theirs: &Node, context: &str) {
        let (ours, theirs) = (fields(ours), fields(theirs));
        for (name, docs) in &ours {
            match theirs.iter().find(|(theirs, _)| theirs == name) {
                Some((_, redis)) => self.docs(name, docs, redis, context),
                None if self.excluded(name, "*") => {}
                None => self
                    .failures
                    .push(format!("{entry} {context}: redis-server has no {name}")),
            }
        }
    }
}

#[test]
fn command_docs_are_redis_70s_where_redis_8_agrees() {
    let Some(redis) = RedisServer::start("command-docs-redis") else {
        return;
    };
    let server = TestServer::start();
    let list = |client: &mut RawClient| -> Vec<String> {
        let Node::Aggregate(_, names) = Node::parse(&client.cmd(&["COMMAND", "LIST"])) else {
            panic!("COMMAND LIST is not an array");
        };
        names.iter().map(text).collect()
    };
    let mut shared = list(&mut RawClient::connect(server.addr));
    let theirs = list(&mut RawClient::connect(redis.addr));
    shared.retain(|name| theirs.contains(name));
    shared.sort();
    assert!(shared.len() > 140, "{} commands in common", shared.len());

    let mut comparison = Comparison {
        failures: Vec::new(),
        used: HashSet::new(),
    };
    let mut identical = 0;
    for (resp, context) in [(Resp::Two, "(RESP2)"), (Resp::Three, "(RESP3)")] {
        let mut ours = RawClient::speaking(server.addr, resp);
        let mut theirs = RawClient::speaking(redis.addr, resp);
        for name in &shared {
            let (mine, redis) = (
                ours.cmd_framed_by_node(&["COMMAND", "DOCS", name]),
                theirs.cmd_framed_by_node(&["COMMAND", "DOCS", name]),
            );
            identical += usize::from(mine == redis);
            let docs = |reply: &[u8]| match Node::parse(reply) {
                Node::Aggregate(_, mut entry) if entry.len() == 2 => entry.pop().unwrap(),
                _ => panic!("{name} {context}: {}", escape(reply)),
            };
            comparison.docs(name, &docs(&mine), &docs(&redis), context);
        }
    }
    for (name, fields, why) in EXCLUDED {
        for field in *fields {
            if !comparison.used.contains(&(*name, *field)) {
                comparison.failures.push(format!(
                    "{name}.{field} is excluded ({why}) but does not differ"
                ));
            }
        }
    }
    assert!(
        comparison.failures.is_empty(),
        "{}",
        comparison.failures.join("\n")
    );
    eprintln!(
        "COMMAND DOCS of {} commands compared with redis-server 7.0's: {identical} of {} \
         replies byte-identical, the others the same but for the fields left out",
        shared.len(),
        shared.len() * 2
    );
}
