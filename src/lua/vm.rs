//! One sandboxed Lua state as Redis 7.4 builds one (`luaRegisterRedisAPI`, `scriptingInit`,
//! `luaEngineInitEngine`): the allowed globals only, the libraries Redis compiles in, the `redis`
//! table, Redis's `pcall` and error handler, read-only globals; and the run of one script or
//! function in it, with Redis's replies for its result and its errors.

use std::ffi::c_int;
use std::time::{Duration, Instant};

use mlua::{ffi, Function, Lua, LuaOptions, MultiValue, StdLib, Table, Value};

use super::conversions::{error_reply_line, error_table, field_text, lua_to_reply, reply_to_lua};
use super::native::{native, none, one, Args, NativeResult, Raise};
use super::number_format::{double_to_exact_i64, shortest_double};
use super::readonly::{missing_global, Protector};
use super::reply_tree::Reply;
use super::runner::{CommandRunner, LogLevel, ReplFlags};
use super::shebang::ScriptFlags;
use super::watchdog::{self, HookState, ScriptKind, ScriptWatch};
use super::{bitop, cjson};

/// The globals Redis 7.4 lets a script see (its allow lists): anything else a library would add
/// is dropped, as Redis's `luaNewIndexAllowList` drops it. `getfenv`, `setfenv` and `newproxy`
/// are not among them: Redis's security releases took them out of the sandbox (a patched
/// redis-server answers "Script attempted to access nonexistent global variable 'getfenv'").
const ALLOWED_GLOBALS: &[&str] = &[
    "string",
    "cjson",
    "bit",
    "cmsgpack",
    "math",
    "table",
    "struct",
    "os",
    "redis",
    "__redis__err__handler",
    "xpcall",
    "tostring",
    "setmetatable",
    "next",
    "assert",
    "tonumber",
    "rawequal",
    "collectgarbage",
    "getmetatable",
    "rawset",
    "pcall",
    "coroutine",
    "type",
    "_G",
    "select",
    "unpack",
    "gcinfo",
    "pairs",
    "rawget",
    "loadstring",
    "ipairs",
    "_VERSION",
    "load",
    "error",
];

/// Redis's error handler (`__redis__err__handler`), which adds the source and line where the
/// error was raised (the caller's, for an error raised by a C function).
const ERROR_HANDLER: &str = "local dbg = ...
return function(err)
  local i = dbg.getinfo(2,'nSl')
  if i and i.what == 'C' then
    i = dbg.getinfo(3,'nSl')
  end
  if type(err) ~= 'table' then
    err = {err='ERR ' .. tostring(err)}
  end
  if i then
    err['source'] = i.source
    err['line'] = i.currentline
  end
  return err
end";

/// Redis's `LUA_GC_CYCLE_PERIOD`: a GC step of this many KB every this many runs.
const GC_PERIOD: u32 = 50;

/// Which engine a state serves: EVAL scripts, or FUNCTION libraries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum VmKind {
    Eval,
    Functions,
}

/// The raw pointer to the runner of the current run, in the state's app data while the run
/// lasts. SAFETY: set from a `&mut dyn CommandRunner` that outlives the run and is not touched
/// by anything else until the run returns; cleared before it returns; dereferenced only by the
/// `redis.*` functions the script calls during the run, one at a time (none of them runs Lua
/// while it holds the reference).
struct RunSlot {
    runner: *mut (dyn CommandRunner + 'static),
    resp: u8,
}

// SAFETY: the pointer is only used on the thread running the script, during the run.
unsafe impl Send for RunSlot {}

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

/// Redis's 48-bit `redisLrand48` generator behind `math.random`: one sequence per state, from
/// the fixed seed at start, carried across scripts (Redis 7 does not reseed per script: effects
/// replication made that unneeded) until `math.randomseed`.
struct Rand48(u64);

impl Rand48 {
    const START: u64 = 0x1234_ABCD_330E;

    fn next(&mut self) -> i32 {
        self.0 = (0x5_DEEC_E66D_u64.wrapping_mul(self.0).wrapping_add(0xB)) & ((1 << 48) - 1);
        (self.0 >> 17) as i32
    }

    fn seed(&mut self, seed: i32) {
        let s = seed as u32 as u64;
        self.0 = ((s >> 16) << 32) | ((s & 0xffff) << 16) | 0x330E;
    }
}

/// The outcome of one run.
pub struct RunOutcome {
    pub reply: Reply,
    /// The reply is an error a command already counted in the error statistics (Redis's
    /// `ERR_REPLY_FLAG_NO_STATS_UPDATE`): a `redis.call` error the script let through.
    pub error_already_counted: bool,
}

pub(crate) struct Vm {
    pub(crate) lua: Lua,
    /// The backing table of the globals (the scripts see its read-only proxy).
    globals: Table,
    /// The proxy globals' own metatable: FUNCTION LOAD points its `__index` at the library API.
    globals_mechanism: Table,
    /// The library API's backing table (functions only).
    library_api: Option<Table>,
    handler: Function,
    run_protected: Function,
    watch: ScriptWatch,
    gc_count: u32,
}

/// Runs `f` (at 2) under the error handler (at 1) with the arguments after it, and answers
/// `(true, result)` or `(false, error)` without ever raising.
unsafe extern "C-unwind" fn run_protected(state: *mut ffi::lua_State) -> c_int {
    let nargs = ffi::lua_gettop(state) - 2;
    let status = ffi::lua_pcall(state, nargs, 1, 1);
    ffi::lua_pushboolean(state, c_int::from(status == 0));
    ffi::lua_insert(state, -2);
    2
}

/// Redis's replacement of `pcall` (`luaRedisPcall`): an error table is answered by its `err`
/// text, as scripts written for Redis 6 expect.
unsafe extern "C-unwind" fn redis_pcall(state: *mut ffi::lua_State) -> c_int {
    ffi::luaL_checkany(state, 1);
    let argc = ffi::lua_gettop(state);
    ffi::lua_pushboolean(state, 1);
    ffi::lua_insert(state, 1);
    if ffi::lua_pcall(state, argc - 1, ffi::LUA_MULTRET, 0) != 0 {
        ffi::lua_remove(state, 1);
        if ffi::lua_type(state, -1) == ffi::LUA_TTABLE {
            ffi::lua_getfield(state, -1, c"err".as_ptr());
            if ffi::lua_isstring(state, -1) != 0 {
                ffi::lua_replace(state, -2);
            }
        }
        ffi::lua_pushboolean(state, 0);
        ffi::lua_insert(state, 1);
    }
    ffi::lua_gettop(state)
}

/// `loadstring` as Redis's Lua has it: its parser takes text only, so a precompiled chunk
/// (starting with ESC) is refused with the error its lexer gives for that byte.
unsafe extern "C-unwind" fn redis_loadstring(state: *mut ffi::lua_State) -> c_int {
    let mut len = 0usize;
    let s = ffi::luaL_checklstring(state, 1, &mut len);
    let chunkname = ffi::luaL_optlstring(state, 2, s, std::ptr::null_mut());
    let status = if len > 0 && *s == 0x1b {
        load_escape_error(state, chunkname)
    } else {
        ffi::luaL_loadbuffer(state, s, len, chunkname)
    };
    if status == 0 {
        1
    } else {
        ffi::lua_pushnil(state);
        ffi::lua_insert(state, -2);
        2
    }
}

/// Leaves on the stack the syntax error Redis's parser gives for a chunk that starts with ESC.
unsafe fn load_escape_error(
    state: *mut ffi::lua_State,
    chunkname: *const std::ffi::c_char,
) -> c_int {
    let status = ffi::luaL_loadbuffer(state, c"\x01".as_ptr(), 1, chunkname);
    if status != 0 {
        let msg = ffi::lua_tolstring(state, -1, std::ptr::null_mut());
        ffi::luaL_gsub(state, msg, c"char(1)".as_ptr(), c"char(27)".as_ptr());
        ffi::lua_remove(state, -2);
    }
    status
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

impl Vm {
    pub(crate) fn new(kind: VmKind, watch: ScriptWatch, memory_limit: usize) -> mlua::Result<Vm> {
        // SAFETY: the debug library is loaded for the error handler only and removed from the
        // globals before any script runs, as Redis does.
        let lua = unsafe {
            Lua::unsafe_new_with(
                StdLib::TABLE | StdLib::STRING | StdLib::MATH | StdLib::OS | StdLib::DEBUG,
                LuaOptions::default(),
            )
        };
        let globals = lua.globals();
        let debug: Table = globals.raw_get("debug")?;
        let string_meta: Table = lua.load("return getmetatable('')").eval()?;
        let os: Table = globals.raw_get("os")?;

        let names: Vec<Value> = globals
            .pairs::<Value, Value>()
            .map(|pair| pair.map(|(k, _)| k))
            .collect::<mlua::Result<_>>()?;
        for name in names {
            let allowed = matches!(&name, Value::String(s) if ALLOWED_GLOBALS.iter().any(|a| s.as_bytes() == a.as_bytes()));
            if !allowed {
                globals.raw_set(name, Value::Nil)?;
            }
        }
        let sandboxed_os = lua.create_table()?;
        sandboxed_os.raw_set("clock", os.raw_get::<Function>("clock")?)?;
        globals.raw_set("os", sandboxed_os)?;
        globals.raw_set("cjson", cjson::open(&lua)?)?;
        globals.raw_set("bit", bitop::open(&lua)?)?;
        // SAFETY: C functions of the lua_CFunction signature.
        unsafe {
            globals.raw_set("pcall", lua.create_c_function(redis_pcall)?)?;
            globals.raw_set("loadstring", lua.create_c_function(redis_loadstring)?)?;
        }
        globals.raw_set("load", load_function(&lua)?)?;

        let redis = lua.create_table()?;
        register_redis_api(&lua, &redis)?;
        if kind == VmKind::Eval {
            register_eval_only(&lua, &redis)?;
        }
        globals.raw_set("redis", redis)?;

        let math: Table = globals.raw_get("math")?;
        lua.set_app_data(Rand48(Rand48::START));
        math.raw_set("random", native(&lua, math_random)?)?;
        math.raw_set("randomseed", native(&lua, math_randomseed)?)?;

        let handler: Function = lua
            .load(ERROR_HANDLER)
            .set_name("@err_handler_def")
            .call(debug)?;
        if kind == VmKind::Eval {
            globals.raw_set("__redis__err__handler", handler.clone())?;
        }

        let library_api = if kind == VmKind::Functions {
            Some(library_api(&lua)?)
        } else {
            None
        };

        let error_meta = lua.create_table()?;
        // SAFETY: a C function of the lua_CFunction signature.
        error_meta.raw_set("__index", unsafe { lua.create_c_function(missing_global)? })?;
        globals.set_metatable(Some(error_meta))?;

        let mut protector = Protector::new(&lua)?;
        let table_lib: Table = globals.raw_get("table")?;
        protector.install(&lua, &globals, &table_lib)?;
        let proxy = protector.proxy(&lua, &globals)?;
        if let Some(api) = &library_api {
            protector.proxy(&lua, api)?;
        }
        protector.show_metatable(&lua, &string_meta)?;
        protector.set_environments(&lua, &proxy)?;
        super::readonly::set_environment(&lua, &handler, &proxy)?;
        let globals_mechanism = proxy.metatable().expect("a proxy has its metatable");
        lua.set_globals(proxy)?;

        // SAFETY: a C function of the lua_CFunction signature.
        let run_protected = unsafe { lua.create_c_function(run_protected)? };
        lua.gc_collect()?;
        if memory_limit > 0 {
            lua.set_memory_limit(memory_limit)?;
        }
        Ok(Vm {
            lua,
            globals,
            globals_mechanism,
            library_api,
            handler,
            run_protected,
            watch,
            gc_count: 0,
        })
    }

    /// Compiles `code` as a chunk named `chunk_name`; the error is Lua's message.
    pub(crate) fn compile(&self, code: &[u8], chunk_name: &str) -> Result<Function, String> {
        if code.first() == Some(&0x1b) {
            return Err(self.escape_error(chunk_name));
        }
        self.lua
            .load(code)
            .set_name(chunk_name)
            .into_function()
            .map_err(|e| match e {
                mlua::Error::SyntaxError { message, .. } => message,
                mlua::Error::MemoryError(_) => "not enough memory".to_string(),
                other => other.to_string(),
            })
    }

    fn escape_error(&self, chunk_name: &str) -> String {
        match self
            .lua
            .load(&b"\x01"[..])
            .set_name(chunk_name)
            .into_function()
        {
            Err(mlua::Error::SyntaxError { message, .. }) => message.replace("char(1)", "char(27)"),
            _ => "unexpected symbol near 'char(27)'".to_string(),
        }
    }

    /// Runs a compiled script (EVAL: KEYS and ARGV as globals) or function (FCALL: keys and
    /// args as its two arguments), naming it `name` in its errors.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn run(
        &mut self,
        f: &Function,
        kind: ScriptKind,
        name: &str,
        keys: &[&[u8]],
        args: &[&[u8]],
        runner: &mut dyn CommandRunner,
        busy_threshold: Option<Duration>,
    ) -> RunOutcome {
        let outcome = self.run_inner(f, kind, name, keys, args, runner, busy_threshold);
        self.gc_count += 1;
        if self.gc_count >= GC_PERIOD {
            let _ = self.lua.gc_step_kbytes(GC_PERIOD as c_int);
            self.gc_count = 0;
        }
        match outcome {
            Ok(outcome) => outcome,
            Err(e) => RunOutcome {
                reply: running_error(name, &lua_error_text(&e)),
                error_already_counted: false,
            },
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn run_inner(
        &mut self,
        f: &Function,
        kind: ScriptKind,
        name: &str,
        keys: &[&[u8]],
        args: &[&[u8]],
        runner: &mut dyn CommandRunner,
        busy_threshold: Option<Duration>,
    ) -> mlua::Result<RunOutcome> {
        let keys = string_array(&self.lua, keys)?;
        let args = string_array(&self.lua, args)?;
        if kind == ScriptKind::Eval {
            self.globals.raw_set("KEYS", keys.clone())?;
            self.globals.raw_set("ARGV", args.clone())?;
        }
        let runner: *mut (dyn CommandRunner + '_) = runner;
        // SAFETY: see RunSlot; only the lifetime bound of the trait object is erased, and the
        // slot is removed below before `runner`'s borrow ends.
        let runner: *mut (dyn CommandRunner + 'static) = unsafe { std::mem::transmute(runner) };
        self.lua.set_app_data(RunSlot { runner, resp: 2 });
        self.lua.set_app_data(HookState {
            watch: self.watch.clone(),
            started: Instant::now(),
            threshold: busy_threshold,
            loading: false,
            load_timeout: None,
            notice_due: false,
        });
        self.watch.begin(kind);
        if busy_threshold.is_some() {
            watchdog::install(&self.lua);
        }
        let result = match kind {
            ScriptKind::Eval => self
                .run_protected
                .call::<(bool, Value)>((self.handler.clone(), f.clone())),
            ScriptKind::Function => self.run_protected.call::<(bool, Value)>((
                self.handler.clone(),
                f.clone(),
                keys,
                args,
            )),
        };
        watchdog::remove(&self.lua);
        self.watch.end();
        self.lua.remove_app_data::<HookState>();
        let slot = self.lua.remove_app_data::<RunSlot>();
        let resp = slot.map_or(2, |s| s.resp);
        let (ok, value) = result?;
        if ok {
            return Ok(RunOutcome {
                reply: lua_to_reply(&value, resp),
                error_already_counted: false,
            });
        }
        Ok(match value {
            Value::Table(t) => {
                let msg = field_text(&t, "err").unwrap_or_else(|| "ERR unknown error".to_string());
                let mut line = msg;
                if let (Some(source), Some(at)) = (field_text(&t, "source"), field_text(&t, "line"))
                {
                    line.push_str(&format!(" script: {name}, on {source}:{at}."));
                }
                RunOutcome {
                    reply: Reply::Error(error_reply_line(line.as_bytes())),
                    error_already_counted: matches!(
                        t.raw_get::<Value>("ignore_error_stats_update"),
                        Ok(Value::Boolean(true))
                    ),
                }
            }
            other => {
                let msg = match other {
                    Value::String(s) => String::from_utf8_lossy(&s.as_bytes()).into_owned(),
                    _ => "execution failure".to_string(),
                };
                RunOutcome {
                    reply: running_error(name, &msg),
                    error_already_counted: false,
                }
            }
        })
    }

    /// Runs a library's code for FUNCTION LOAD with the library API as its globals, collecting
    /// the functions it registers. The error is Redis's reply text without `ERR `.
    pub(crate) fn load_library(
        &mut self,
        code: &[u8],
        timeout: Option<Duration>,
    ) -> Result<Vec<RegisteredFunction>, String> {
        let api = self.library_api.clone().expect("a functions state");
        let f = self
            .compile(code, "@user_function")
            .map_err(|e| format!("Error compiling function: {e}"))?;
        let _ = self.globals_mechanism.raw_set("__index", api);
        self.lua.set_app_data(LoadCtx::default());
        self.lua.set_app_data(HookState {
            watch: self.watch.clone(),
            started: Instant::now(),
            threshold: None,
            loading: true,
            load_timeout: timeout,
            notice_due: false,
        });
        watchdog::install(&self.lua);
        // No error handler: as Redis, the error value is taken as raised.
        let result = self.run_protected.call::<(bool, Value)>((Value::Nil, f));
        watchdog::remove(&self.lua);
        self.lua.remove_app_data::<HookState>();
        let registered = self.lua.remove_app_data::<LoadCtx>().unwrap_or_default();
        let _ = self
            .globals_mechanism
            .raw_set("__index", self.globals.clone());
        self.gc_count += 1;
        if self.gc_count >= GC_PERIOD {
            let _ = self.lua.gc_step_kbytes(GC_PERIOD as c_int);
            self.gc_count = 0;
        }
        match result {
            Ok((true, _)) => Ok(registered.functions),
            Ok((false, value)) => {
                let msg = match &value {
                    Value::Table(t) => field_text(t, "err").unwrap_or_default(),
                    Value::String(s) => format!("ERR {}", String::from_utf8_lossy(&s.as_bytes())),
                    _ => String::new(),
                };
                Err(format!("Error registering functions: {msg}"))
            }
            Err(e) => Err(format!(
                "Error registering functions: ERR {}",
                lua_error_text(&e)
            )),
        }
    }

    /// Continues `from`'s `math.random` sequence (Redis's generator outlives SCRIPT FLUSH).
    pub(crate) fn carry_random_state(&self, from: &Vm) {
        let state = from.lua.app_data_ref::<Rand48>().map(|r| r.0);
        if let Some(state) = state {
            self.lua.set_app_data(Rand48(state));
        }
    }

    /// Bytes the Lua heap holds (INFO used_memory_lua / used_memory_vm_functions).
    pub(crate) fn used_memory(&self) -> usize {
        self.lua.used_memory()
    }
}

/// Redis's reply for an error that is not an error table: `Error running script <name>, <msg>`
/// (the message cut at 100 bytes, on one line).
fn running_error(name: &str, msg: &str) -> Reply {
    let cut: String = msg.chars().take(100).collect();
    let line = format!("ERR Error running script {name}, {cut}");
    Reply::Error(error_reply_line(line.as_bytes()))
}

fn lua_error_text(e: &mlua::Error) -> String {
    match e {
        mlua::Error::MemoryError(_) => "not enough memory".to_string(),
        mlua::Error::RuntimeError(msg) | mlua::Error::SyntaxError { message: msg, .. } => {
            msg.clone()
        }
        other => other.to_string(),
    }
}

fn string_array(lua: &Lua, items: &[&[u8]]) -> mlua::Result<Table> {
    let t = lua.create_table_with_capacity(items.len(), 0)?;
    for (i, item) in items.iter().enumerate() {
        t.raw_set(i + 1, lua.create_string(item)?)?;
    }
    Ok(t)
}

/// Called by the hook when the script runs on: tells the runner once that it passed the busy
/// threshold.
pub(crate) fn run_slow_notice(lua: &Lua) {
    let elapsed = {
        let Some(mut hook) = lua.app_data_mut::<HookState>() else {
            return;
        };
        if !hook.notice_due {
            return;
        }
        hook.notice_due = false;
        hook.started.elapsed()
    };
    with_runner(lua, |runner, _| runner.on_slow_script(elapsed));
}

/// Runs `f` with the current run's runner and the script's protocol; `None` outside a run.
fn with_runner<R>(lua: &Lua, f: impl FnOnce(&mut dyn CommandRunner, &mut u8) -> R) -> Option<R> {
    let (runner, mut resp) = {
        let slot = lua.app_data_ref::<RunSlot>()?;
        (slot.runner, slot.resp)
    };
    // SAFETY: see RunSlot: the run that set the pointer is in progress, and no other reference
    // to the runner exists while the script runs.
    let result = f(unsafe { &mut *runner }, &mut resp);
    if let Some(mut slot) = lua.app_data_mut::<RunSlot>() {
        slot.resp = resp;
    }
    Some(result)
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

fn register_redis_api(lua: &Lua, redis: &Table) -> mlua::Result<()> {
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
fn register_eval_only(lua: &Lua, redis: &Table) -> mlua::Result<()> {
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
fn library_api(lua: &Lua) -> mlua::Result<Table> {
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

fn math_random(lua: &Lua, values: MultiValue) -> NativeResult {
    let args = Args::new(lua, values);
    let raw = lua.app_data_mut::<Rand48>().map_or(0, |mut rng| rng.next());
    let r = f64::from(raw % i32::MAX) / f64::from(i32::MAX);
    let n = match args.len() {
        0 => r,
        1 => {
            let u = args.check_int(1)?;
            if u < 1 {
                return Err(super::native::arg_error(lua, 1, "interval is empty"));
            }
            (r * f64::from(u)).floor() + 1.0
        }
        2 => {
            let l = args.check_int(1)?;
            let u = args.check_int(2)?;
            if l > u {
                return Err(super::native::arg_error(lua, 2, "interval is empty"));
            }
            (r * (f64::from(u) - f64::from(l) + 1.0)).floor() + f64::from(l)
        }
        _ => return Err(Raise::Located("wrong number of arguments".to_string())),
    };
    one(Value::Number(n))
}

fn math_randomseed(lua: &Lua, values: MultiValue) -> NativeResult {
    let args = Args::new(lua, values);
    let seed = args.check_int(1)?;
    if let Some(mut rng) = lua.app_data_mut::<Rand48>() {
        rng.seed(seed);
    }
    none()
}

/// `load` with a reader function, refusing precompiled chunks as `loadstring` does.
fn load_function(lua: &Lua) -> mlua::Result<Function> {
    native(lua, |lua, values| {
        let args = Args::new(lua, values);
        let Some(Value::Function(reader)) = args.get(1) else {
            return Err(super::native::type_error(lua, 1, "function", args.get(1)));
        };
        let chunkname = match args.get(2) {
            None | Some(Value::Nil) => "=(load)".to_string(),
            Some(_) => String::from_utf8_lossy(&args.check_bytes(2)?).into_owned(),
        };
        let mut code = Vec::new();
        loop {
            match reader.call::<Value>(())? {
                Value::Nil => break,
                Value::String(s) if s.as_bytes().is_empty() => break,
                Value::String(s) => code.extend_from_slice(&s.as_bytes()),
                _ => {
                    return Err(Raise::Bare(
                        "reader function must return a string".to_string(),
                    ))
                }
            }
        }
        let result = if code.first() == Some(&0x1b) {
            Err(
                match lua.load(&b"\x01"[..]).set_name(&chunkname).into_function() {
                    Err(mlua::Error::SyntaxError { message, .. }) => {
                        message.replace("char(1)", "char(27)")
                    }
                    _ => "unexpected symbol near 'char(27)'".to_string(),
                },
            )
        } else {
            lua.load(code)
                .set_name(chunkname)
                .into_function()
                .map_err(|e| lua_error_text(&e))
        };
        match result {
            Ok(f) => one(Value::Function(f)),
            Err(msg) => Ok(MultiValue::from_vec(vec![
                Value::Nil,
                Value::String(lua.create_string(msg)?),
            ])),
        }
    })
}
