//! The `redis` table a script sees: `redis.call` and `redis.pcall`, the reply constructors,
//! `redis.log`, `redis.setresp`, `redis.set_repl`, `redis.acl_check_cmd`, the version, and in
//! FUNCTION LOAD's environment `redis.register_function`, with Redis's argument checks and
//! error texts.

use std::ffi::c_int;

use mlua::{Function, Lua, MultiValue, Table, Value};

use super::conversions::{error_table, reply_to_lua};
use super::native::{native, none, one, Args, NativeResult, Raise};
use super::number_format::{double_to_exact_i64, shortest_double};
use super::readonly::missing_global;
use super::run_slot::with_runner;
use super::runner::{LogLevel, ReplFlags};
use super::shebang::ScriptFlags;

/// The functions a library registered while FUNCTION LOAD ran its code.
#[derive(Default)]
pub(crate) struct LoadCtx {
    pub(crate) functions: Vec<RegisteredFunction>,
}

pub(crate) struct RegisteredFunction {
    pub(crate) name: Vec<u8>,
    pub(crate) callback: Function,
    pub(crate) description: Option<Vec<u8>>,
    pub(crate) flags: ScriptFlags,
}

fn version_number() -> f64 {
    let mut parts = crate::REDIS_VERSION
        .split('.')
        .map(|p| p.parse::<u32>().unwrap_or(0));
    let (major, minor, patch) = (
        parts.next().unwrap_or(0),
        parts.next().unwrap_or(0),
        parts.next().unwrap_or(0),
    );
    f64::from((major << 16) | (minor << 8) | patch)
}

/// Raises an error table with Redis's `luaPushError` text.
fn raise_error(lua: &Lua, msg: &str) -> Raise {
    match error_table(lua, msg.as_bytes(), false) {
        Ok(t) => Raise::Value(Value::Table(t)),
        Err(e) => Raise::Lua(e),
    }
}

/// A command's arguments as `luaArgsToRedisArgv` makes them: strings as they are, numbers as
/// integers when they are whole, else as Redis's shortest double; anything else is refused.
fn command_args(args: &Args) -> Result<Vec<Vec<u8>>, &'static str> {
    if args.len() == 0 {
        return Err("Please specify at least one argument for this redis lib call");
    }
    args.values
        .iter()
        .map(|v| match v {
            Value::String(s) => Ok(s.as_bytes().to_vec()),
            Value::Integer(i) => Ok(i.to_string().into_bytes()),
            Value::Number(n) => Ok(match double_to_exact_i64(*n) {
                Some(i) => i.to_string().into_bytes(),
                None => shortest_double(*n).into_bytes(),
            }),
            _ => Err("Lua redis lib command arguments must be strings or integers"),
        })
        .collect()
}

fn redis_command(lua: &Lua, values: MultiValue, raise: bool) -> NativeResult {
    let args = Args::new(lua, values);
    let argv = match command_args(&args) {
        Ok(argv) => argv,
        Err(msg) => {
            let t = Value::Table(error_table(lua, msg.as_bytes(), false)?);
            return if raise { Err(Raise::Value(t)) } else { one(t) };
        }
    };
    let refs: Vec<&[u8]> = argv.iter().map(Vec::as_slice).collect();
    let Some((reply, resp)) = with_runner(lua, |runner, resp| (runner.call(&refs, *resp), *resp))
    else {
        return Err(Raise::Located(
            "redis.call/pcall can only be called inside a script invocation".to_string(),
        ));
    };
    let value = reply_to_lua(lua, &reply, resp)?;
    if raise && reply.is_error() {
        Err(Raise::Value(value))
    } else {
        one(value)
    }
}

fn single_field_reply(lua: &Lua, values: MultiValue, field: &str) -> NativeResult {
    let args = Args::new(lua, values);
    match (args.len(), args.get(1)) {
        (1, Some(Value::String(s))) => {
            if field == "err" {
                let raw = if s.as_bytes().first() == Some(&b'-') {
                    s.as_bytes().to_vec()
                } else {
                    let mut raw = b"-".to_vec();
                    raw.extend_from_slice(&s.as_bytes());
                    raw
                };
                one(Value::Table(error_table(lua, &raw, false)?))
            } else {
                let t = lua.create_table()?;
                t.raw_set(field, s.clone())?;
                one(Value::Table(t))
            }
        }
        _ => one(Value::Table(error_table(
            lua,
            b"wrong number or type of arguments",
            false,
        )?)),
    }
}

fn redis_log(lua: &Lua, values: MultiValue) -> NativeResult {
    let args = Args::new(lua, values);
    if args.len() < 2 {
        return Err(raise_error(
            lua,
            "redis.log() requires two arguments or more.",
        ));
    }
    let Some(level) = args.to_number(1) else {
        return Err(raise_error(
            lua,
            "First argument must be a number (log level).",
        ));
    };
    let level = match level as c_int {
        0 => LogLevel::Debug,
        1 => LogLevel::Verbose,
        2 => LogLevel::Notice,
        3 => LogLevel::Warning,
        _ => return Err(raise_error(lua, "Invalid log level.")),
    };
    let mut message = Vec::new();
    for j in 2..=args.len() {
        if let Some(bytes) = super::native::to_bytes(args.get(j)) {
            if j != 2 {
                message.push(b' ');
            }
            message.extend_from_slice(&bytes);
        }
    }
    with_runner(lua, |runner, _| runner.log(level, &message));
    none()
}

pub(crate) fn register_redis_api(lua: &Lua, redis: &Table) -> mlua::Result<()> {
    redis.raw_set("call", native(lua, |lua, v| redis_command(lua, v, true))?)?;
    redis.raw_set("pcall", native(lua, |lua, v| redis_command(lua, v, false))?)?;
    register_log(lua, redis)?;
    register_version(redis)?;
    redis.raw_set(
        "setresp",
        native(lua, |lua, values| {
            let args = Args::new(lua, values);
            if args.len() != 1 {
                return Err(raise_error(lua, "redis.setresp() requires one argument."));
            }
            let resp = args.to_number(1).unwrap_or(0.0) as c_int;
            if resp != 2 && resp != 3 {
                return Err(raise_error(lua, "RESP version must be 2 or 3."));
            }
            with_runner(lua, |_, slot_resp| *slot_resp = resp as u8);
            none()
        })?,
    )?;
    redis.raw_set(
        "sha1hex",
        native(lua, |lua, values| {
            let args = Args::new(lua, values);
            if args.len() != 1 {
                return Err(raise_error(lua, "wrong number of arguments"));
            }
            let bytes = super::native::to_bytes(args.get(1)).unwrap_or_default();
            one(Value::String(
                lua.create_string(super::sha1::sha1_hex(&bytes))?,
            ))
        })?,
    )?;
    redis.raw_set(
        "error_reply",
        native(lua, |lua, v| single_field_reply(lua, v, "err"))?,
    )?;
    redis.raw_set(
        "status_reply",
        native(lua, |lua, v| single_field_reply(lua, v, "ok"))?,
    )?;
    redis.raw_set(
        "set_repl",
        native(lua, |lua, values| {
            let args = Args::new(lua, values);
            if args.len() != 1 {
                return Err(raise_error(lua, "redis.set_repl() requires one argument."));
            }
            let flags = args.to_number(1).unwrap_or(0.0) as c_int;
            if flags & !3 != 0 {
                return Err(raise_error(
                    lua,
                    "Invalid replication flags. Use REPL_AOF, REPL_REPLICA, REPL_ALL or REPL_NONE.",
                ));
            }
            let flags = ReplFlags {
                aof: flags & 1 != 0,
                replicas: flags & 2 != 0,
            };
            with_runner(lua, |runner, _| runner.set_repl(flags));
            none()
        })?,
    )?;
    for (name, value) in [
        ("REPL_NONE", 0),
        ("REPL_AOF", 1),
        ("REPL_SLAVE", 2),
        ("REPL_REPLICA", 2),
        ("REPL_ALL", 3),
    ] {
        redis.raw_set(name, value as f64)?;
    }
    redis.raw_set(
        "acl_check_cmd",
        native(lua, |lua, values| {
            let args = Args::new(lua, values);
            let argv = command_args(&args).map_err(|msg| raise_error(lua, msg))?;
            let refs: Vec<&[u8]> = argv.iter().map(Vec::as_slice).collect();
            match with_runner(lua, |runner, _| runner.acl_check_cmd(&refs)).flatten() {
                Some(allowed) => one(Value::Boolean(allowed)),
                None => Err(raise_error(
                    lua,
                    "Invalid command passed to redis.acl_check_cmd()",
                )),
            }
        })?,
    )?;
    Ok(())
}

fn register_log(lua: &Lua, redis: &Table) -> mlua::Result<()> {
    redis.raw_set("log", native(lua, redis_log)?)?;
    for (name, level) in [
        ("LOG_DEBUG", 0),
        ("LOG_VERBOSE", 1),
        ("LOG_NOTICE", 2),
        ("LOG_WARNING", 3),
    ] {
        redis.raw_set(name, level as f64)?;
    }
    Ok(())
}

fn register_version(redis: &Table) -> mlua::Result<()> {
    redis.raw_set("REDIS_VERSION_NUM", version_number())?;
    redis.raw_set("REDIS_VERSION", crate::REDIS_VERSION)?;
    Ok(())
}

/// What only EVAL's state has: the debugger's functions as they answer without a debugging
/// session, and the deprecated `replicate_commands`.
pub(crate) fn register_eval_only(lua: &Lua, redis: &Table) -> mlua::Result<()> {
    redis.raw_set(
        "breakpoint",
        native(lua, |_, _| one(Value::Boolean(false)))?,
    )?;
    redis.raw_set("debug", native(lua, |_, _| none())?)?;
    redis.raw_set(
        "replicate_commands",
        native(lua, |_, _| one(Value::Boolean(true)))?,
    )?;
    Ok(())
}

/// The globals a library's code sees while FUNCTION LOAD runs it: a `redis` with
/// `register_function`, `log` and the version only, any other name an error.
pub(crate) fn library_api(lua: &Lua) -> mlua::Result<Table> {
    let redis = lua.create_table()?;
    redis.raw_set("register_function", native(lua, register_function)?)?;
    register_log(lua, &redis)?;
    register_version(&redis)?;
    let api = lua.create_table()?;
    for t in [&redis, &api] {
        let meta = lua.create_table()?;
        // SAFETY: a C function of the lua_CFunction signature.
        meta.raw_set("__index", unsafe { lua.create_c_function(missing_global)? })?;
        t.set_metatable(Some(meta))?;
    }
    api.raw_set("redis", redis)?;
    Ok(api)
}

fn register_function(lua: &Lua, values: MultiValue) -> NativeResult {
    if lua.app_data_ref::<LoadCtx>().is_none() {
        return Err(raise_error(
            lua,
            "redis.register_function can only be called on FUNCTION LOAD command",
        ));
    }
    let args = Args::new(lua, values);
    let function = match args.len() {
        1 => named_registration(lua, &args),
        2 => positional_registration(&args),
        _ => Err("wrong number of arguments to redis.register_function"),
    }
    .map_err(|msg| raise_error(lua, msg))?;
    let valid = !function.name.is_empty()
        && function
            .name
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || *b == b'_');
    if !valid {
        return Err(raise_error(lua, "Library names can only contain letters, numbers, or underscores(_) and must be at least one character long"));
    }
    let mut ctx = lua.app_data_mut::<LoadCtx>().expect("checked above");
    if ctx.functions.iter().any(|f| f.name == function.name) {
        drop(ctx);
        return Err(raise_error(lua, "Function already exists in the library"));
    }
    ctx.functions.push(function);
    none()
}

fn positional_registration(args: &Args) -> Result<RegisteredFunction, &'static str> {
    let Some(name) = super::native::to_bytes(args.get(1)) else {
        return Err("first argument to redis.register_function must be a string");
    };
    let Some(Value::Function(callback)) = args.get(2) else {
        return Err("second argument to redis.register_function must be a function");
    };
    Ok(RegisteredFunction {
        name,
        callback: callback.clone(),
        description: None,
        flags: ScriptFlags::empty(),
    })
}

fn named_registration(lua: &Lua, args: &Args) -> Result<RegisteredFunction, &'static str> {
    let Some(Value::Table(named)) = args.get(1) else {
        return Err("calling redis.register_function with a single argument is only applicable to Lua table (representing named arguments).");
    };
    let (mut name, mut description, mut callback, mut flags) =
        (None, None, None, ScriptFlags::empty());
    for pair in named.pairs::<Value, Value>() {
        let Ok((key, value)) = pair else {
            return Err("named argument key given to redis.register_function is not a string");
        };
        let Some(key) = super::native::to_bytes(Some(&key)) else {
            return Err("named argument key given to redis.register_function is not a string");
        };
        match key.to_ascii_lowercase().as_slice() {
            b"function_name" => {
                match super::native::to_bytes(Some(&value)) {
                    Some(n) => name = Some(n),
                    None => return Err(
                        "function_name argument given to redis.register_function must be a string",
                    ),
                }
            }
            b"description" => {
                match super::native::to_bytes(Some(&value)) {
                    Some(d) => description = Some(d),
                    None => return Err(
                        "description argument given to redis.register_function must be a string",
                    ),
                }
            }
            b"callback" => match value {
                Value::Function(f) => callback = Some(f),
                _ => {
                    return Err(
                        "callback argument given to redis.register_function must be a function",
                    )
                }
            },
            b"flags" => {
                let Value::Table(list) = value else {
                    return Err("flags argument to redis.register_function must be a table representing function flags");
                };
                flags = read_flags(lua, &list).ok_or("unknown flag given")?;
            }
            _ => return Err("unknown argument given to redis.register_function"),
        }
    }
    let Some(name) = name else {
        return Err("redis.register_function must get a function name argument");
    };
    let Some(callback) = callback else {
        return Err("redis.register_function must get a callback argument");
    };
    Ok(RegisteredFunction {
        name,
        callback,
        description,
        flags,
    })
}

fn read_flags(_lua: &Lua, list: &Table) -> Option<ScriptFlags> {
    let mut flags = ScriptFlags::empty();
    for j in 1.. {
        match list.get::<Value>(j).ok()? {
            Value::Nil => break,
            v => {
                let name = super::native::to_bytes(Some(&v))?;
                flags = flags.union(ScriptFlags::by_name(&name, true)?);
            }
        }
    }
    Some(flags)
}
