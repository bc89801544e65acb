//! Engine tests: a fake command layer, Redis 7.4's replies for the environment and its errors,
//! and the recorded oracle table (`oracle_table.txt`, replies of a real redis-server).

use std::collections::HashMap;
use std::time::Duration;

use super::*;

/// A command layer for tests: a few commands over a small keyspace, with Redis's replies.
#[derive(Default)]
pub(super) struct FakeRunner {
    pub(super) strings: HashMap<Vec<u8>, Vec<u8>>,
    pub(super) hashes: HashMap<Vec<u8>, Vec<(Vec<u8>, Vec<u8>)>>,
    pub(super) calls: Vec<Vec<Vec<u8>>>,
    pub(super) logs: Vec<(LogLevel, Vec<u8>)>,
    pub(super) repl: Option<ReplFlags>,
    pub(super) slow_notices: usize,
    pub(super) watch: Option<ScriptWatch>,
}

fn bulk(b: &[u8]) -> Reply {
    Reply::Bulk(b.to_vec())
}

impl CommandRunner for FakeRunner {
    fn call(&mut self, args: &[&[u8]], resp: u8) -> Reply {
        self.calls.push(args.iter().map(|a| a.to_vec()).collect());
        let name = args[0].to_ascii_lowercase();
        let arity_error = || Reply::error("ERR Wrong number of args calling Redis command from script");
        match (name.as_slice(), args.len()) {
            (b"ping", 1) => Reply::Status(b"PONG".to_vec()),
            (b"ping", 2) => bulk(args[1]),
            (b"echo", 2) => bulk(args[1]),
            (b"echo" | b"ping" | b"get" | b"set" | b"incr" | b"del" | b"hgetall", _)
                if args.len() < 2 =>
            {
                arity_error()
            }
            (b"get", 2) => match self.strings.get(args[1]) {
                Some(v) => bulk(v),
                None => Reply::Null,
            },
            (b"set", 3) => {
                if let Some(w) = &self.watch {
                    w.note_write();
                }
                self.strings.insert(args[1].to_vec(), args[2].to_vec());
                Reply::Status(b"OK".to_vec())
            }
            (b"incr", 2) => {
                let old = self.strings.get(args[1]).cloned().unwrap_or(b"0".to_vec());
                match std::str::from_utf8(&old).ok().and_then(|s| s.parse::<i64>().ok()) {
                    Some(n) => {
                        self.strings.insert(args[1].to_vec(), (n + 1).to_string().into_bytes());
                        Reply::Integer(n + 1)
                    }
                    None => Reply::error("ERR value is not an integer or out of range"),
                }
            }
            (b"del", _) => Reply::Integer(
                args[1..]
                    .iter()
                    .filter(|k| self.strings.remove(**k).is_some())
                    .count() as i64,
            ),
            (b"hset", n) if n >= 4 && n % 2 == 0 => {
                let hash = self.hashes.entry(args[1].to_vec()).or_default();
                let mut added = 0;
                for pair in args[2..].chunks(2) {
                    match hash.iter_mut().find(|(f, _)| f == pair[0]) {
                        Some(entry) => entry.1 = pair[1].to_vec(),
                        None => {
                            hash.push((pair[0].to_vec(), pair[1].to_vec()));
                            added += 1;
                        }
                    }
                }
                Reply::Integer(added)
            }
            (b"hgetall", 2) => {
                let pairs = self.hashes.get(args[1]).cloned().unwrap_or_default();
                let pairs = pairs.iter().map(|(f, v)| (bulk(f), bulk(v))).collect();
                if resp == 3 {
                    Reply::Map(pairs)
                } else {
                    Reply::Map(pairs)
                }
            }
            (b"types", _) => Reply::Array(vec![
                Reply::Double(1.5),
                Reply::Bool(true),
                Reply::Bool(false),
                Reply::BigNumber(b"1234567890123456789012345".to_vec()),
                Reply::Verbatim {
                    format: *b"txt",
                    text: b"hello".to_vec(),
                },
                Reply::Set(vec![bulk(b"a")]),
                Reply::Null,
            ]),
            _ => Reply::error("ERR Unknown Redis command called from script"),
        }
    }

    fn log(&mut self, level: LogLevel, message: &[u8]) {
        self.logs.push((level, message.to_vec()));
    }

    fn acl_check_cmd(&mut self, args: &[&[u8]]) -> Option<bool> {
        match args[0].to_ascii_lowercase().as_slice() {
            b"get" => Some(true),
            b"set" => Some(false),
            _ => None,
        }
    }

    fn set_repl(&mut self, flags: ReplFlags) {
        self.repl = Some(flags);
    }

    fn on_slow_script(&mut self, _elapsed: Duration) {
        self.slow_notices += 1;
    }
}

pub(super) fn eval_with(engine: &mut EvalEngine, runner: &mut FakeRunner, script: &str, keys: &[&str], args: &[&str]) -> Reply {
    let keys: Vec<&[u8]> = keys.iter().map(|k| k.as_bytes()).collect();
    let args: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
    engine
        .eval(script.as_bytes(), &keys, &args, runner, None)
        .reply
}

fn eval(script: &str) -> Reply {
    let mut engine = EvalEngine::new(LuaConfig::default());
    eval_with(&mut engine, &mut FakeRunner::default(), script, &[], &[])
}

fn err(line: &str) -> Reply {
    Reply::Error(line.as_bytes().to_vec())
}

fn sha(script: &str) -> String {
    String::from_utf8(sha1_hex(script.as_bytes()).to_vec()).unwrap()
}

#[test]
fn values_convert_as_redis_converts_them() {
    assert_eq!(eval("return 1"), Reply::Integer(1));
    assert_eq!(eval("return 1.9"), Reply::Integer(1));
    assert_eq!(eval("return -1.9"), Reply::Integer(-1));
    assert_eq!(eval("return 'x'"), bulk(b"x"));
    assert_eq!(eval("return true"), Reply::Integer(1));
    assert_eq!(eval("return false"), Reply::Null);
    assert_eq!(eval("return nil"), Reply::Null);
    assert_eq!(
        eval("return {1,2,3,nil,4}"),
        Reply::Array(vec![Reply::Integer(1), Reply::Integer(2), Reply::Integer(3)])
    );
    assert_eq!(eval("return {ok='fine'}"), Reply::Status(b"fine".to_vec()));
    assert_eq!(eval("return {err='MY boo'}"), err("MY boo"));
    assert_eq!(eval("return redis.error_reply('x')"), err("ERR x"));
    assert_eq!(eval("return redis.error_reply('-CODE x')"), err("CODE x"));
    assert_eq!(eval("return redis.status_reply('OK')"), Reply::Status(b"OK".to_vec()));
    assert_eq!(eval("return {double=1.5}"), Reply::Double(1.5));
    assert_eq!(eval("return {big_number='123'}"), Reply::BigNumber(b"123".to_vec()));
    assert_eq!(
        eval("redis.setresp(3); return true"),
        Reply::Bool(true)
    );
}

#[test]
fn commands_run_through_the_runner() {
    let mut engine = EvalEngine::new(LuaConfig::default());
    let mut runner = FakeRunner::default();
    let reply = eval_with(
        &mut engine,
        &mut runner,
        "redis.call('set', KEYS[1], ARGV[1]); return redis.call('get', KEYS[1])",
        &["k"],
        &["v"],
    );
    assert_eq!(reply, bulk(b"v"));
    assert_eq!(runner.calls.len(), 2);
    let reply = eval_with(&mut engine, &mut runner, "return redis.call('get', 'missing')", &[], &[]);
    assert_eq!(reply, Reply::Null);
    let reply = eval_with(&mut engine, &mut runner, "return redis.call('set', 'n', 3.5)", &[], &[]);
    assert_eq!(reply, Reply::Status(b"OK".to_vec()));
    assert_eq!(runner.strings[&b"n".to_vec()], b"3.5");
    let reply = eval_with(&mut engine, &mut runner, "return redis.call('set', 'n', 100000000000)", &[], &[]);
    assert_eq!(reply, Reply::Status(b"OK".to_vec()));
    assert_eq!(runner.strings[&b"n".to_vec()], b"100000000000");
    let script = "return redis.call('nosuch')";
    assert_eq!(
        eval_with(&mut engine, &mut runner, script, &[], &[]),
        err(&format!("ERR Unknown Redis command called from script script: {}, on @user_script:1.", sha(script)))
    );
    let script = "return redis.pcall('nosuch')";
    assert_eq!(
        eval_with(&mut engine, &mut runner, script, &[], &[]),
        err("ERR Unknown Redis command called from script")
    );
    let script = "return redis.call()";
    assert_eq!(
        eval_with(&mut engine, &mut runner, script, &[], &[]),
        err(&format!("ERR Please specify at least one argument for this redis lib call script: {}, on @user_script:1.", sha(script)))
    );
    let script = "return redis.call('get', {})";
    assert_eq!(
        eval_with(&mut engine, &mut runner, script, &[], &[]),
        err(&format!("ERR Lua redis lib command arguments must be strings or integers script: {}, on @user_script:1.", sha(script)))
    );
}

#[test]
fn errors_are_worded_as_redis_words_them() {
    let script = "return x";
    assert_eq!(
        eval(script),
        err(&format!("ERR user_script:1: Script attempted to access nonexistent global variable 'x' script: {}, on @user_script:1.", sha(script)))
    );
    let script = "x = 1";
    assert_eq!(
        eval(script),
        err(&format!("ERR user_script:1: Attempt to modify a readonly table script: {}, on @user_script:1.", sha(script)))
    );
    let script = "error('boom')";
    assert_eq!(
        eval(script),
        err(&format!("ERR user_script:1: boom script: {}, on @user_script:1.", sha(script)))
    );
    let script = "return bit.band('x')";
    assert_eq!(
        eval(script),
        err(&format!("ERR user_script:1: bad argument #1 to 'band' (number expected, got string) script: {}, on @user_script:1.", sha(script)))
    );
    let script = "setmetatable(_G, nil)";
    assert_eq!(
        eval(script),
        err(&format!("ERR Attempt to modify a readonly table script: {}, on @user_script:1.", sha(script)))
    );
    let script = "return rawset(_G,'a',1)";
    assert_eq!(
        eval(script),
        err(&format!("ERR Attempt to modify a readonly table script: {}, on @user_script:1.", sha(script)))
    );
    let script = "local t = string; t.x = 1";
    assert_eq!(
        eval(script),
        err(&format!("ERR user_script:1: Attempt to modify a readonly table script: {}, on @user_script:1.", sha(script)))
    );
    assert_eq!(
        eval("retur 1"),
        err("ERR Error compiling script (new function): user_script:1: '=' expected near '1'")
    );
    let script = "error({err='MY boo'})";
    assert_eq!(
        eval(script),
        err(&format!("MY boo script: {}, on @user_script:1.", sha(script)))
    );
    assert_eq!(eval("return loadstring('return 1')()"), Reply::Integer(1));
}

#[test]
fn sandbox_keeps_globals_and_libraries_read_only() {
    assert_eq!(eval("return type(io)"), err(&format!("ERR user_script:1: Script attempted to access nonexistent global variable 'io' script: {}, on @user_script:1.", sha("return type(io)"))));
    assert_eq!(eval("return rawget(_G, 'print') == nil"), Reply::Integer(1));
    assert_eq!(eval("return type(os.clock())"), bulk(b"number"));
    assert_eq!(eval("return os.time == nil"), Reply::Integer(1));
    assert_eq!(eval("return rawget(_G, 'debug') == nil"), Reply::Integer(1));
    assert_eq!(eval("return getfenv(string.len) == _G"), Reply::Integer(1));
    assert_eq!(eval("local n = 0 for k in pairs(string) do n = n + 1 end return n > 10"), Reply::Integer(1));
    assert!(eval("table.insert(string, 1)").is_error());
    assert!(eval("getmetatable('').__index = {}").is_error());
    assert_eq!(eval("return string.upper('a')"), bulk(b"A"));
    assert_eq!(eval("return ('a'):upper()"), bulk(b"A"));
    assert_eq!(eval("local t = {} table.insert(t, 'a') return t"), Reply::Array(vec![bulk(b"a")]));
    assert!(eval("return loadstring(string.dump(function() return 1 end))").eq(&Reply::Null));
}

#[test]
fn random_is_redis_sequence() {
    // A fresh redis-server answers these for its first script.
    assert_eq!(
        eval("return {math.random(1000), math.random(1000)}"),
        Reply::Array(vec![Reply::Integer(397), Reply::Integer(841)])
    );
}

#[test]
fn cache_evicts_eval_scripts_past_500() {
    let mut engine = EvalEngine::new(LuaConfig::default());
    let loaded = engine.load(b"return 'kept'", CompiledBy::ScriptLoad).unwrap();
    let first = engine.load(b"return 0", CompiledBy::Eval).unwrap();
    for i in 1..EVAL_SCRIPTS_KEPT {
        engine.load(format!("return {i}").as_bytes(), CompiledBy::Eval).unwrap();
    }
    assert!(engine.exists(&first));
    engine.load(b"return 'one more'", CompiledBy::Eval).unwrap();
    assert!(!engine.exists(&first));
    assert!(engine.exists(&loaded));
    assert_eq!(engine.evicted(), 1);
    assert_eq!(engine.len(), EVAL_SCRIPTS_KEPT + 1);
    let mut runner = FakeRunner::default();
    assert_eq!(engine.run(b"0000000000000000000000000000000000000000", &[], &[], &mut runner, None).reply, err(NOSCRIPT));
    engine.flush();
    assert!(engine.is_empty());
}
