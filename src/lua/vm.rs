//! One sandboxed Lua state as Redis 7.4 builds one (`luaRegisterRedisAPI`, `scriptingInit`,
//! `luaEngineInitEngine`): the allowed globals only, the libraries Redis compiles in, the `redis`
//! table, Redis's `pcall` and error handler, read-only globals; and the run of one script or
//! function in it, with Redis's replies for its result and its errors.

use std::ffi::c_int;
use std::time::{Duration, Instant};

use mlua::{ffi, Function, Lua, LuaOptions, MultiValue, StdLib, Table, Value};

use super::conversions::{error_reply_line, field_text, lua_to_reply};
use super::native::{native, none, one, Args, NativeResult, Raise};
use super::readonly::{missing_global, Protector};
use super::redis_api::{
    library_api, register_eval_only, register_redis_api, LoadCtx, RegisteredFunction,
};
use super::reply_tree::Reply;
use super::run_slot::RunSlot;
use super::runner::CommandRunner;
use super::watchdog::{self, HookState, ScriptKind, ScriptWatch};
use super::{bitop, cjson, cmsgpack, lua_struct};

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
    // SAFETY: Lua calls this C function with the state of the running script and its arguments on
    // that state's stack, with room for the LUA_MINSTACK values a C function may push; every call
    // below is on that state.
    unsafe {
        let nargs = ffi::lua_gettop(state) - 2;
        let status = ffi::lua_pcall(state, nargs, 1, 1);
        ffi::lua_pushboolean(state, c_int::from(status == 0));
        ffi::lua_insert(state, -2);
        2
    }
}

/// Redis's replacement of `pcall` (`luaRedisPcall`): an error table is answered by its `err`
/// text, as scripts written for Redis 6 expect.
unsafe extern "C-unwind" fn redis_pcall(state: *mut ffi::lua_State) -> c_int {
    // SAFETY: Lua calls this C function with the state of the running script and its arguments on
    // that state's stack, with room for the LUA_MINSTACK values a C function may push; every call
    // below is on that state.
    unsafe {
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
}

/// `loadstring` as Redis's Lua has it: its parser takes text only, so a precompiled chunk
/// (starting with ESC) is refused with the error its lexer gives for that byte.
unsafe extern "C-unwind" fn redis_loadstring(state: *mut ffi::lua_State) -> c_int {
    // SAFETY: Lua calls this C function with the state of the running script and its arguments on
    // that state's stack, with room for the LUA_MINSTACK values a C function may push; every call
    // below is on that state.
    unsafe {
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
}

/// Leaves on the stack the syntax error Redis's parser gives for a chunk that starts with ESC.
unsafe fn load_escape_error(
    state: *mut ffi::lua_State,
    chunkname: *const std::ffi::c_char,
) -> c_int {
    // SAFETY: this fn's callers are C functions Lua is running, and `state` is theirs, so the C API
    // may be called on it as it is below.
    unsafe {
        let status = ffi::luaL_loadbuffer(state, c"\x01".as_ptr(), 1, chunkname);
        if status != 0 {
            let msg = ffi::lua_tolstring(state, -1, std::ptr::null_mut());
            ffi::luaL_gsub(state, msg, c"char(1)".as_ptr(), c"char(27)".as_ptr());
            ffi::lua_remove(state, -2);
        }
        status
    }
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
        globals.raw_set("cmsgpack", cmsgpack::open(&lua)?)?;
        globals.raw_set("struct", lua_struct::open(&lua)?)?;
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
