//! The command table: COMMAND's replies byte for byte (checked against Redis 7.0 where Redis has
//! the command), argument docs that agree with arities, and the rules the flags drive.

use super::*;
use crate::cmd::spec::{Arg, ArgType};

impl Client {
    /// Runs one command given as raw words and returns its reply's bytes.
    fn run_raw(&mut self, args: &[&[u8]]) -> Vec<u8> {
        let base: Vec<u8> = args.concat();
        let mut ranges = Vec::new();
        let mut start = 0;
        for arg in args {
            ranges.push(start..start + arg.len());
            start += arg.len();
        }
        self.with_ctx(|ctx| execute(ctx, Request::new(&base, &ranges)));
        let bytes = self.reply.bytes().to_vec();
        self.reply.clear();
        bytes
    }

    fn run3(&mut self, args: &[&str]) -> String {
        self.reply.set_protocol(Protocol::Resp3);
        let reply = self.run(args);
        self.reply.set_protocol(Protocol::Resp2);
        reply
    }
}

/// A key specification as Redis 7 sends it in RESP2: flags, then an index search and a range.
fn key_spec(flags: &str, index: i32, last_key: i32) -> String {
    let count = flags.split(' ').count();
    let flags: String = flags
        .split(' ')
        .map(|flag| format!("+{flag}\r\n"))
        .collect();
    format!(
        "*6\r\n$5\r\nflags\r\n*{count}\r\n{flags}$12\r\nbegin_search\r\n*4\r\n$4\r\n\
         type\r\n$5\r\nindex\r\n$4\r\nspec\r\n*2\r\n$5\r\nindex\r\n:{index}\r\n$9\r\n\
         find_keys\r\n*4\r\n$4\r\ntype\r\n$5\r\nrange\r\n$4\r\nspec\r\n*6\r\n$7\r\n\
         lastkey\r\n:{last_key}\r\n$7\r\nkeystep\r\n:1\r\n$5\r\nlimit\r\n:0\r\n"
    )
}

#[test]
fn command_count_and_list_cover_the_whole_table() {
    let mut client = Client::new(None);
    assert_eq!(
        client.run(&["COMMAND", "COUNT"]),
        format!(":{}\r\n", COMMANDS.len())
    );
    let list = client.run(&["COMMAND", "LIST"]);
    assert!(list.starts_with(&format!("*{}\r\n", COMMANDS.len())));
    for (index, spec) in COMMANDS.iter().enumerate() {
        assert!(list.contains(&format!("\r\n{}\r\n", spec.name)));
        assert_eq!(lookup(spec.name.to_uppercase().as_bytes()), Some(index));
        assert_eq!(spec.name, spec.name.to_lowercase());
        assert!(spec.name.len() < 32, "{}", spec.name);
    }
    for unknown in [
        "",
        "bf.ad",
        "bf.addd",
        "bf.add\0",
        "bf\u{e}add",
        "bitfield\u{7f}ro",
        "BITFIELD@RO",
        "get\0\0\0\0\0\0\0\0",
        "nosuchcommand",
        &"x".repeat(40),
    ] {
        assert_eq!(lookup(unknown.as_bytes()), None, "{unknown}");
    }
}

#[test]
fn command_info_is_redis_7s_shape() {
    let mut client = Client::new(None);
    // Redis 7.0 sends exactly this for GET.
    let get = format!(
        "*10\r\n$3\r\nget\r\n:2\r\n*2\r\n+readonly\r\n+fast\r\n:1\r\n:1\r\n:1\r\n\
         *3\r\n+@read\r\n+@string\r\n+@fast\r\n*0\r\n*1\r\n{}*0\r\n",
        key_spec("RO access", 1, 0)
    );
    assert_eq!(
        client.run(&["COMMAND", "INFO", "get", "nosuch"]),
        format!("*2\r\n{get}$-1\r\n")
    );
    // RedisBloom's declaration: its own categories only, and the key spec it declares (a
    // module command without one, BF.DEBUG, gets the one Redis derives).
    assert_eq!(
        client.run(&["COMMAND", "INFO", "BF.ADD"]),
        format!(
            "*1\r\n*10\r\n$6\r\nbf.add\r\n:3\r\n*2\r\n+write\r\n+denyoom\r\n:1\r\n:1\r\n:1\r\n\
             *2\r\n+@write\r\n+@bloom\r\n*0\r\n*1\r\n{}*0\r\n",
            key_spec("RW", 1, 0)
        )
    );
    assert!(client
        .run(&["COMMAND", "INFO", "BF.DEBUG"])
        .contains(&key_spec("RW access update", 1, 0)));
    // In RESP3 the flag, category, tip, key-spec and subcommand lists are sets.
    let resp3 = client.run3(&["COMMAND", "INFO", "multi"]);
    assert_eq!(
        resp3,
        "*1\r\n*10\r\n$5\r\nmulti\r\n:1\r\n~5\r\n+noscript\r\n+loading\r\n+stale\r\n+fast\r\n\
         +allow_busy\r\n:0\r\n:0\r\n:0\r\n~2\r\n+@fast\r\n+@transaction\r\n~0\r\n~0\r\n~0\r\n"
    );
}

#[test]
fn command_docs_include_the_arguments() {
    let mut client = Client::new(None);
    assert_eq!(
        client.run(&["COMMAND", "DOCS", "get", "nosuch"]),
        "*2\r\n$3\r\nget\r\n*10\r\n$7\r\nsummary\r\n$34\r\nReturns the string value of a key.\r\n\
         $5\r\nsince\r\n$5\r\n1.0.0\r\n$5\r\ngroup\r\n$6\r\nstring\r\n$10\r\ncomplexity\r\n\
         $4\r\nO(1)\r\n$9\r\narguments\r\n*1\r\n*6\r\n$4\r\nname\r\n$3\r\nkey\r\n$4\r\ntype\r\n\
         $3\r\nkey\r\n$14\r\nkey_spec_index\r\n:0\r\n"
    );
    // RedisBloom's names for the choices, its misspelling included.
    let names = ["capcaity", "SIZE", "FILTERS", "ITEMS", "EXPANSION"];
    let tokens: String = ["CAPACITY", "SIZE", "FILTERS", "ITEMS", "EXPANSION"]
        .iter()
        .zip(names)
        .map(|(token, name)| {
            format!(
                "%3\r\n$4\r\nname\r\n${}\r\n{name}\r\n$4\r\ntype\r\n$10\r\npure-token\r\n\
                 $5\r\ntoken\r\n${}\r\n{token}\r\n",
                name.len(),
                token.len()
            )
        })
        .collect();
    assert_eq!(
        client.run3(&["COMMAND", "DOCS", "bf.info"]),
        format!(
            "%1\r\n$7\r\nbf.info\r\n%6\r\n$7\r\nsummary\r\n$40\r\n\
             Returns information about a Bloom Filter\r\n$5\r\nsince\r\n$5\r\n1.0.0\r\n$5\r\n\
             group\r\n$6\r\nmodule\r\n$10\r\ncomplexity\r\n$4\r\nO(1)\r\n$6\r\nmodule\r\n\
             $2\r\nbf\r\n$9\r\narguments\r\n*2\r\n%3\r\n$4\r\nname\r\n$3\r\nkey\r\n$4\r\n\
             type\r\n$3\r\nkey\r\n$14\r\nkey_spec_index\r\n:0\r\n%4\r\n$4\r\nname\r\n$12\r\n\
             single_value\r\n$4\r\ntype\r\n$5\r\noneof\r\n$5\r\nflags\r\n~1\r\n+optional\r\n\
             $9\r\narguments\r\n*5\r\n{tokens}"
        )
    );
}

#[test]
fn command_getkeys_finds_keys_as_redis_does() {
    let mut client = Client::new(None);
    let cases: &[(&[&str], &str)] = &[
        (&["rename", "a", "b"], "*2\r\n$1\r\na\r\n$1\r\nb\r\n"),
        (
            &["DEL", "a", "b", "c"],
            "*3\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\nc\r\n",
        ),
        (&["bf.madd", "f", "x", "y"], "*1\r\n$1\r\nf\r\n"),
        (&["object", "encoding", "k"], "*1\r\n$1\r\nk\r\n"),
        (&["nosuch", "a"], "-ERR Invalid command specified\r\n"),
        (&["ping", "x"], "-ERR The command has no key arguments\r\n"),
        (
            &["get", "a", "b"],
            "-ERR Invalid number of arguments specified for command\r\n",
        ),
        // Keys past the end. (Redis, which knows OBJECT's subcommands apart, answers that
        // OBJECT HELP has no key arguments.)
        (
            &["object", "help"],
            "-ERR Invalid arguments specified for command\r\n",
        ),
    ];
    for (command, expected) in cases {
        let mut args = vec!["COMMAND", "GETKEYS"];
        args.extend_from_slice(command);
        assert_eq!(client.run(&args), *expected, "{command:?}");
    }
    assert_eq!(
        client.run(&["COMMAND", "GETKEYS", "get"]),
        "-ERR wrong number of arguments for 'command|getkeys' command\r\n"
    );
    assert_eq!(
        client.run(&["COMMAND", "GETKEYSANDFLAGS", "rename", "a", "b"]),
        "*2\r\n*2\r\n$1\r\na\r\n*3\r\n+RW\r\n+access\r\n+delete\r\n\
         *2\r\n$1\r\nb\r\n*2\r\n+OW\r\n+update\r\n"
    );
}

#[test]
fn command_list_filters_as_redis_does() {
    let mut client = Client::new(None);
    assert_eq!(
        client.run(&["COMMAND", "LIST", "FILTERBY", "pattern", "*EXPIRETIME"]),
        "*2\r\n$10\r\nexpiretime\r\n$11\r\npexpiretime\r\n"
    );
    let transactions = client.run(&["COMMAND", "LIST", "FILTERBY", "ACLCAT", "transaction"]);
    assert!(transactions.starts_with("*5\r\n"), "{transactions}");
    let module = client.run(&["COMMAND", "LIST", "FILTERBY", "MODULE", "bf"]);
    let module_commands = COMMANDS.iter().filter(|s| s.group.module() == Some("bf"));
    assert!(module.starts_with(&format!("*{}\r\n", module_commands.count())));
    for unknown in ["ACLCAT", "MODULE"] {
        assert_eq!(
            client.run(&["COMMAND", "LIST", "FILTERBY", unknown, "nosuch"]),
            "*0\r\n"
        );
    }
    for bad in [
        &["COMMAND", "LIST", "FILTERBY"][..],
        &["COMMAND", "LIST", "FILTERBY", "FOO", "x"],
        &["COMMAND", "LIST", "FILTERBY", "PATTERN", "x", "y"],
    ] {
        assert_eq!(client.run(bad), "-ERR syntax error\r\n");
    }
    assert_eq!(
        client.run(&["COMMAND", "FOO"]),
        "-ERR unknown subcommand 'FOO'. Try COMMAND HELP.\r\n"
    );
}

/// The fewest and most words an argument takes (None: no limit).
fn words(arg: &Arg) -> (usize, Option<usize>) {
    let token = arg.token.is_some() as usize;
    let (min, max) = match arg.kind {
        ArgType::PureToken => (1, Some(1)),
        ArgType::OneOf(choices) => {
            let each: Vec<_> = choices.iter().map(words).collect();
            let min = each.iter().map(|(min, _)| *min).min().unwrap_or(0);
            let max = each.iter().map(|(_, max)| *max).max().flatten();
            let max = if each.iter().any(|(_, max)| max.is_none()) {
                None
            } else {
                max
            };
            (token + min, max.map(|max| token + max))
        }
        ArgType::Block(parts) => {
            let (min, max) = sum(parts);
            (token + min, max.map(|max| token + max))
        }
        _ => (token + 1, Some(token + 1)),
    };
    let max = if arg.multiple { None } else { max };
    let min = if arg.optional { 0 } else { min };
    (min, max)
}

fn sum(args: &[Arg]) -> (usize, Option<usize>) {
    args.iter()
        .map(words)
        .fold((0, Some(0)), |(min, max), (arg_min, arg_max)| {
            (min + arg_min, max.zip(arg_max).map(|(a, b)| a + b))
        })
}

/// Whether a key is among the arguments, at any depth (MSET's are in a block).
fn has_key(args: &[Arg]) -> bool {
    args.iter().any(|arg| match arg.kind {
        ArgType::Key(_) => true,
        ArgType::OneOf(children) | ArgType::Block(children) => has_key(children),
        _ => false,
    })
}

#[test]
fn arities_agree_with_the_argument_docs() {
    for spec in COMMANDS.iter() {
        // Containers are documented by their subcommands, which the table does not list.
        if spec.docs.summary.starts_with("A container") {
            assert!(spec.docs.args.is_empty(), "{}", spec.name);
            continue;
        }
        // Module commands their module leaves undocumented have no argument docs.
        if spec.docs.summary.is_empty() {
            assert!(
                spec.docs.args.is_empty() && spec.group.module().is_some(),
                "{}",
                spec.name
            );
            continue;
        }
        let (min, max) = sum(spec.docs.args);
        let (min, max) = (min + 1, max.map(|max| max + 1));
        if spec.arity > 0 {
            let arity = spec.arity as usize;
            assert_eq!((min, max), (arity, Some(arity)), "{}", spec.name);
        } else if spec.group.module().is_some() {
            // A module may declare a looser arity than its syntax and check the rest itself.
            assert!(min >= spec.arity.unsigned_abs() as usize, "{}", spec.name);
        } else {
            assert_eq!(min, spec.arity.unsigned_abs() as usize, "{}", spec.name);
        }
        assert_eq!(
            has_key(spec.docs.args),
            !spec.key_specs.is_empty(),
            "{}",
            spec.name
        );
    }
}

/// One successful run of each write command, after what it needs.
const WRITES: &[(&[&str], &[&str])] = &[
    (&[], &["BF.RESERVE", "f", "0.01", "100"]),
    (&[], &["BF.ADD", "f", "a"]),
    (&[], &["BF.MADD", "f", "a", "b"]),
    (&[], &["BF.INSERT", "f", "ITEMS", "a"]),
    (&[], &["BF.LOADCHUNK", "f", "1", "<dump>"]),
    (&[], &["CBF.RESERVE", "f", "0.01", "100"]),
    (&[], &["CBF.ADD", "f", "a"]),
    (&[], &["CBF.MADD", "f", "a", "b"]),
    (&[], &["CBF.INSERT", "f", "ITEMS", "a"]),
    (&["CBF.ADD f a"], &["CBF.DEL", "f", "a"]),
    (&["CBF.ADD f a"], &["CBF.MDEL", "f", "a"]),
    (&[], &["CBF.LOADCHUNK", "f", "1", "<dump>"]),
    (&["BF.ADD a x"], &["BF.MERGE", "f", "a"]),
    (&[], &["TBF.RESERVE", "f", "0.01", "100", "60000"]),
    (&["TBF.RESERVE f 0.01 100 60000"], &["TBF.ADD", "f", "a"]),
    (
        &["TBF.RESERVE f 0.01 100 60000"],
        &["TBF.MADD", "f", "a", "b"],
    ),
    (&[], &["TBF.LOADCHUNK", "f", "1", "<dump>"]),
    (&["CBF.ADD a x"], &["CBF.MERGE", "f", "a"]),
    (&[], &["CF.RESERVE", "f", "100"]),
    (&[], &["CF.ADD", "f", "a"]),
    (&[], &["CF.ADDNX", "f", "a"]),
    (&[], &["CF.INSERT", "f", "ITEMS", "a"]),
    (&[], &["CF.INSERTNX", "f", "ITEMS", "a"]),
    (&["CF.ADD f a"], &["CF.DEL", "f", "a"]),
    (&["CF.ADD f a"], &["CF.COMPACT", "f"]),
    (&["CF.RESERVE f 4"], &["CF.LOADCHUNK", "f", "5", "abcd"]),
    (&[], &["CMS.INITBYDIM", "f", "10", "2"]),
    (&[], &["CMS.INITBYPROB", "f", "0.01", "0.01"]),
    (&["CMS.INITBYDIM f 10 2"], &["CMS.INCRBY", "f", "a", "1"]),
    (&["CMS.INITBYDIM f 10 2"], &["CMS.MERGE", "f", "1", "f"]),
    (&[], &["TOPK.RESERVE", "f", "3"]),
    (&["TOPK.RESERVE f 3"], &["TOPK.ADD", "f", "a"]),
    (&["TOPK.RESERVE f 3"], &["TOPK.INCRBY", "f", "a", "2"]),
    (&[], &["TDIGEST.CREATE", "f"]),
    (&["TDIGEST.CREATE f"], &["TDIGEST.ADD", "f", "1.5"]),
    (&["TDIGEST.CREATE f"], &["TDIGEST.RESET", "f"]),
    (&["TDIGEST.CREATE f"], &["TDIGEST.MERGE", "g", "1", "f"]),
    (&[], &["FQ.RESERVE", "f", "0.01", "100", "LEASE", "1000"]),
    (&[], &["FQ.PUSH", "f", "http://a/1"]),
    (&["FQ.PUSH f http://a/1"], &["FQ.POP", "f"]),
    (
        &["FQ.PUSH f http://a/1"],
        &["FQ.LEASE", "f", "5", "http://a", "1", "10"],
    ),
    (&["FQ.PUSH f http://a/1", "FQ.POP f"], &["FQ.ACK", "f", "1"]),
    (
        &["FQ.PUSH f http://a/1", "FQ.POP f"],
        &["FQ.NACK", "f", "1"],
    ),
    (
        &["FQ.PUSH f http://a/1"],
        &["FQ.HOST", "f", "http://a", "DELAY", "5"],
    ),
    (
        &[
            "FQ.RESERVE f 0.01 10 RETRIES 1",
            "FQ.PUSH f x",
            "FQ.POP f",
            "FQ.NACK f 1",
        ],
        &["FQ.REQUEUE", "f", "1"],
    ),
    (&["SET a 1"], &["FLUSHDB"]),
    (&["SET a 1"], &["FLUSHALL"]),
    (&["SET a 1"], &["DEL", "a"]),
    (&["SET a 1"], &["UNLINK", "a"]),
    (&["SET a 1"], &["RENAME", "a", "b"]),
    (&["SET a 1"], &["RENAMENX", "a", "b"]),
    (&["SET a 1"], &["COPY", "a", "b"]),
    (&[], &["RESTORE", "a", "0", "<payload>"]),
    (
        &["SET a 1"],
        &["MIGRATE", "127.0.0.1", "<target>", "a", "0", "5000"],
    ),
    (&["SET a 1"], &["EXPIRE", "a", "100"]),
    (&["SET a 1"], &["PEXPIRE", "a", "100000"]),
    (&["SET a 1"], &["EXPIREAT", "a", "4000000000"]),
    (&["SET a 1"], &["PEXPIREAT", "a", "4000000000000"]),
    (&["SET a 1 EX 100"], &["PERSIST", "a"]),
    (&[], &["SET", "a", "1"]),
    (&[], &["SETNX", "a", "1"]),
    (&["SET a 1"], &["GETSET", "a", "2"]),
    (&["SET a 1"], &["GETDEL", "a"]),
    (&[], &["SETEX", "a", "100", "1"]),
    (&[], &["PSETEX", "a", "100000", "1"]),
    (&[], &["MSET", "a", "1", "b", "2"]),
    (&[], &["MSETNX", "a", "1", "b", "2"]),
    (&[], &["APPEND", "a", "1"]),
    (&[], &["SETRANGE", "a", "3", "x"]),
    (&[], &["INCR", "a"]),
    (&[], &["DECR", "a"]),
    (&[], &["INCRBY", "a", "5"]),
    (&[], &["DECRBY", "a", "5"]),
    (&[], &["INCRBYFLOAT", "a", "1.5"]),
    (&[], &["SETBIT", "a", "7", "1"]),
    (&["SET a 1", "SET b 2"], &["BITOP", "AND", "c", "a", "b"]),
    (&[], &["BITFIELD", "a", "SET", "u8", "0", "255"]),
    (&[], &["LPUSH", "l", "a"]),
    (&[], &["RPUSH", "l", "a"]),
    (&["RPUSH l a"], &["LPUSHX", "l", "b"]),
    (&["RPUSH l a"], &["RPUSHX", "l", "b"]),
    (&["RPUSH l a"], &["LPOP", "l"]),
    (&["RPUSH l a"], &["RPOP", "l", "1"]),
    (&["RPUSH l a"], &["BLPOP", "l", "0"]),
    (&["RPUSH l a"], &["BRPOP", "missing", "l", "0"]),
    (&["RPUSH l a b"], &["LTRIM", "l", "0", "0"]),
    (&["RPUSH l a b"], &["LREM", "l", "0", "a"]),
    (&["RPUSH l a"], &["LSET", "l", "0", "b"]),
    (&["RPUSH l a"], &["LINSERT", "l", "BEFORE", "a", "b"]),
    (&["RPUSH l a"], &["LMPOP", "1", "l", "LEFT"]),
    (&["RPUSH l a"], &["BLMPOP", "0", "1", "l", "RIGHT"]),
    (&["RPUSH l a"], &["LMOVE", "l", "m", "LEFT", "RIGHT"]),
    (&["RPUSH l a"], &["BLMOVE", "l", "m", "RIGHT", "LEFT", "0"]),
    (&["RPUSH l a"], &["RPOPLPUSH", "l", "m"]),
    (&["RPUSH l a"], &["BRPOPLPUSH", "l", "m", "0"]),
    (&[], &["SADD", "s", "a"]),
    (&["SADD s a b"], &["SREM", "s", "a"]),
    (&["SADD s a b"], &["SPOP", "s", "2"]),
    (&["SADD s a b", "SADD t b"], &["SINTERSTORE", "d", "s", "t"]),
    (&["SADD s a b"], &["SUNIONSTORE", "d", "s", "t"]),
    (&["SADD s a b", "SADD t b"], &["SDIFFSTORE", "d", "s", "t"]),
    (&["SADD s a b"], &["SMOVE", "s", "t", "a"]),
    (&[], &["ZADD", "z", "1", "a"]),
    (&[], &["ZINCRBY", "z", "1", "a"]),
    (&["ZADD z 1 a 2 b"], &["ZREM", "z", "a"]),
    (&["ZADD z 1 a 2 b"], &["ZREMRANGEBYRANK", "z", "0", "0"]),
    (&["ZADD z 1 a 2 b"], &["ZREMRANGEBYSCORE", "z", "1", "1"]),
    (&["ZADD z 0 a 0 b"], &["ZREMRANGEBYLEX", "z", "[a", "[a"]),
    (&["ZADD z 1 a 2 b"], &["ZPOPMIN", "z"]),
    (&["ZADD z 1 a 2 b"], &["ZPOPMAX", "z", "2"]),
    (&["ZADD z 1 a 2 b"], &["BZPOPMIN", "z", "0"]),
    (&["ZADD z 1 a 2 b"], &["BZPOPMAX", "missing", "z", "1.5"]),
    (&[], &["HSET", "h", "f", "v"]),
    (&[], &["HSETNX", "h", "f", "v"]),
    (&[], &["HMSET", "h", "f", "v"]),
    (&["HSET h f v g w"], &["HDEL", "h", "f"]),
    (&[], &["HINCRBY", "h", "n", "1"]),
    (&[], &["HINCRBYFLOAT", "h", "n", "0.5"]),
    (&[], &["JSON.SET", "j", "$", "{\"n\":1}"]),
    (&[], &["JSON.MSET", "j", "$", "1", "k", "$", "2"]),
    (&["JSON.SET j $ {}"], &["JSON.MERGE", "j", "$", "{\"a\":1}"]),
    (&["JSON.SET j $ {\"a\":1}"], &["JSON.DEL", "j", "$.a"]),
    (&["JSON.SET j $ {\"a\":1}"], &["JSON.FORGET", "j", "$.a"]),
    (
        &["JSON.SET j $ {\"n\":1}"],
        &["JSON.NUMINCRBY", "j", "$.n", "0.5"],
    ),
    (
        &["JSON.SET j $ {\"n\":1}"],
        &["JSON.NUMMULTBY", "j", "$.n", "3"],
    ),
    (
        &["JSON.SET j $ {\"n\":2}"],
        &["JSON.NUMPOWBY", "j", "$.n", "2"],
    ),
    (&["JSON.SET j $ true"], &["JSON.TOGGLE", "j", "$"]),
    (
        &["JSON.SET j $ \"a\""],
        &["JSON.STRAPPEND", "j", "$", "\"b\""],
    ),
    (&["JSON.SET j $ []"], &["JSON.ARRAPPEND", "j", "$", "1"]),
    (
        &["JSON.SET j $ []"],
        &["JSON.ARRINSERT", "j", "$", "0", "1"],
    ),
    (&["JSON.SET j $ [1]"], &["JSON.ARRPOP", "j"]),
    (
        &["JSON.SET j $ [1,2]"],
        &["JSON.ARRTRIM", "j", "$", "0", "0"],
    ),
    (&["JSON.SET j $ [1,2]"], &["JSON.CLEAR", "j"]),
];

/// The port of a server that accepts one connection and answers its first two commands (a
/// MIGRATE's SELECT and RESTORE) with +OK.
fn migration_target() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a port");
    let port = listener.local_addr().expect("an address").port();
    std::thread::spawn(move || {
        use std::io::{Read, Write};
        if let Ok((mut stream, _)) = listener.accept() {
            let _ = stream.write_all(b"+OK\r\n+OK\r\n");
            let _ = stream.read_to_end(&mut Vec::new());
        }
    });
    port.to_string()
}

/// The header chunk of a dump of a new filter of the same family as `loadchunk`.
fn dump_header(loadchunk: &str) -> Vec<u8> {
    let family = loadchunk.split('.').next().expect("a family");
    let mut source = Client::new(None);
    let reserve = format!("{family}.RESERVE");
    let mut words = vec![reserve.as_str(), "source", "0.01", "100"];
    if family == "TBF" {
        words.push("60000");
    }
    source.run(&words);
    let reply = source.run_raw(&[format!("{family}.SCANDUMP").as_bytes(), b"source", b"0"]);
    // *2 :1 $<len> <header>: the header is the last bulk.
    let start = reply
        .windows(2)
        .enumerate()
        .filter(|(_, pair)| *pair == b"\r\n")
        .nth(2)
        .map(|(at, _)| at + 2)
        .expect("a dump reply");
    reply[start..reply.len() - 2].to_vec()
}

#[test]
fn every_write_command_is_logged_and_counted() {
    let covered: Vec<String> = WRITES
        .iter()
        .map(|(_, command)| command[0].to_lowercase())
        .collect();
    for spec in COMMANDS.iter().filter(|spec| spec.writes()) {
        assert!(covered.contains(&spec.name.to_string()), "{}", spec.name);
    }
    for (setup, command) in WRITES {
        let mut client = Client::new(Some(Log::default()));
        for line in *setup {
            let words: Vec<&str> = line.split(' ').collect();
            client.run(&words);
        }
        let (logged, writes) = (client.logged().len(), client.session.writes);
        let header = if command.contains(&"<dump>") {
            dump_header(command[0])
        } else {
            Vec::new()
        };
        let payload = crate::rdb::dump(&crate::store::Value::String(b"v".to_vec()));
        let target = migration_target();
        let words: Vec<&[u8]> = command
            .iter()
            .map(|word| match *word {
                "<dump>" => &header[..],
                "<payload>" => &payload[..],
                "<target>" => target.as_bytes(),
                word => word.as_bytes(),
            })
            .collect();
        let reply = client.run_raw(&words);
        let spec = &COMMANDS[lookup(words[0]).expect("a command")];
        if spec.flags.contains(Flags::LOG_ONLY) {
            // Only replay applies it; a client is refused (a pop logs it, as FQ.POP shows).
            let refusal = format!("-{}\r\n", errors::log_only(spec.name).message());
            assert_eq!(reply, refusal.as_bytes(), "{command:?}");
            assert_eq!(client.logged().len(), logged, "{command:?}");
            continue;
        }
        assert!(!reply.starts_with(b"-"), "{command:?}: {reply:?}");
        assert_eq!(client.logged().len(), logged + 1, "{command:?}");
        assert_eq!(client.session.writes, writes + 1, "{command:?}");
    }
}

#[test]
fn multi_refuses_no_multi_commands_and_runs_transaction_commands_at_once() {
    for spec in COMMANDS.iter() {
        let mut client = Client::new(None);
        assert_eq!(client.run(&["MULTI"]), "+OK\r\n");
        let name = spec.name.to_uppercase();
        let mut words = vec![name.as_str()];
        // Enough words for any arity; the reply shows only where it went.
        words.extend(std::iter::repeat_n(
            "x",
            spec.arity.unsigned_abs() as usize - 1,
        ));
        let reply = client.run(&words);
        if spec.flags.contains(Flags::NO_MULTI) {
            assert_eq!(
                reply, "-ERR Command not allowed inside a transaction\r\n",
                "{name}"
            );
            assert_eq!(
                client.run(&["EXEC"]),
                "-EXECABORT Transaction discarded because of previous errors.\r\n"
            );
        } else if spec.flags.contains(Flags::LOG_ONLY) {
            let refusal = format!("-{}\r\n", errors::log_only(spec.name).message());
            assert_eq!(reply, refusal, "{name}");
            assert_eq!(
                client.run(&["EXEC"]),
                "-EXECABORT Transaction discarded because of previous errors.\r\n"
            );
        } else if spec.flags.contains(Flags::NOT_QUEUED) {
            assert_ne!(reply, "+QUEUED\r\n", "{name}");
        } else {
            assert_eq!(reply, "+QUEUED\r\n", "{name}");
        }
    }
    let no_multi: Vec<_> = COMMANDS
        .iter()
        .filter(|spec| spec.flags.contains(Flags::NO_MULTI))
        .map(|spec| spec.name)
        .collect();
    assert_eq!(no_multi, ["shutdown", "save", "psync"]);
}

#[test]
fn only_no_auth_commands_run_before_auth() {
    let mut client = Client::new(None);
    client
        .server
        .config
        .set_many(&[(b"requirepass".as_slice(), b"secret".as_slice())])
        .expect("a password");
    client.session.authenticated = false;
    for spec in COMMANDS.iter() {
        let name = spec.name.to_uppercase();
        if matches!(spec.name, "quit" | "reset") {
            continue;
        }
        let mut words = vec![name.as_str()];
        words.extend(std::iter::repeat_n(
            "x",
            spec.arity.unsigned_abs() as usize - 1,
        ));
        let reply = client.run(&words);
        assert_eq!(
            reply == "-NOAUTH Authentication required.\r\n",
            !spec.flags.contains(Flags::NO_AUTH),
            "{name}: {reply}"
        );
    }
}

#[test]
fn name_index_lower_cases_exactly_the_ascii_letters() {
    for byte in 0..=u8::MAX {
        let name = [b'a', byte, b'Z', byte, b'.', byte, b'q', b'R', byte];
        let lowered: Vec<u8> = name.iter().map(u8::to_ascii_lowercase).collect();
        let mut expected = [0u64; 4];
        let mut padded = [0u8; 32];
        padded[..name.len()].copy_from_slice(&lowered);
        padded[31] = name.len() as u8;
        for (word, chunk) in expected.iter_mut().zip(padded.chunks_exact(8)) {
            *word = u64::from_le_bytes(chunk.try_into().unwrap());
        }
        assert_eq!(
            crate::cmd::name_words(&name),
            Some(expected),
            "byte {byte:#x}"
        );
    }
}
