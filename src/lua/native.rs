//! Rust functions that scripts call, raising errors as Redis's C functions raise them.
//!
//! mlua turns an `Err` returned by a Rust callback into a userdata error value, where Redis's C
//! functions raise plain strings (`user_script:1: bad argument #1 to 'band' ...`) or error
//! tables (`{err='ERR ...'}`) that scripts can catch and inspect with `pcall`, and that the error
//! handler places on the script's line. So each Rust function is wrapped in a small C function
//! (the trampoline) that calls it and, when it answers with the raise marker, raises the value
//! that follows with `lua_error` itself. The trampoline is a C function called straight from the
//! script, so the stack levels Redis's error handler and `luaL_where` look at are the ones they
//! are in Redis: level 1 from the Rust code is the trampoline, level 2 its caller.

use std::ffi::c_int;

use mlua::{ffi, Function, LightUserData, Lua, MultiValue, Table, Value};

use super::number_format::{c_double_to_i64, format_g};

/// The marker a wrapped function returns first to ask its trampoline to raise the value after it.
static RAISE_MARKER: u8 = 0;
/// The marker a wrapped function returns first to have its trampoline return the first `n`
/// entries of the table after it, `n` after that: thousands of results, as a C function returns
/// them, where mlua would hold each as a reference and return no more than its stack reserve.
static SPREAD_MARKER: u8 = 0;

fn raise_marker() -> Value {
    Value::LightUserData(LightUserData(std::ptr::addr_of!(RAISE_MARKER) as *mut _))
}

/// Returns `table[1..=n]` as the function's results (see `SPREAD_MARKER`): the caller has
/// checked that a C function's stack holds them (`LUAI_MAXCSTACK`).
pub(crate) fn spread(table: Table, n: usize) -> NativeResult {
    let marker = Value::LightUserData(LightUserData(std::ptr::addr_of!(SPREAD_MARKER) as *mut _));
    Ok(MultiValue::from_vec(vec![
        marker,
        Value::Table(table),
        Value::Number(n as f64),
    ]))
}

unsafe extern "C-unwind" fn trampoline(state: *mut ffi::lua_State) -> c_int {
    // SAFETY: Lua calls this C function with the state of the running script and its arguments on
    // that state's stack, with room for the LUA_MINSTACK values a C function may push; every call
    // below is on that state, and `lua_checkstack` makes room before more are pushed.
    unsafe {
        let nargs = ffi::lua_gettop(state);
        ffi::lua_pushvalue(state, ffi::lua_upvalueindex(1));
        ffi::lua_insert(state, 1);
        ffi::lua_call(state, nargs, ffi::LUA_MULTRET);
        let nresults = ffi::lua_gettop(state);
        if nresults >= 2
            && ffi::lua_touserdata(state, 1) == std::ptr::addr_of!(RAISE_MARKER) as *mut _
        {
            ffi::lua_settop(state, 2);
            ffi::lua_error(state);
        }
        if nresults == 3
            && ffi::lua_touserdata(state, 1) == std::ptr::addr_of!(SPREAD_MARKER) as *mut _
        {
            let n = ffi::lua_tointeger(state, 3) as c_int;
            ffi::lua_settop(state, 2);
            ffi::lua_remove(state, 1);
            if n == 0 {
                ffi::lua_settop(state, 0);
                return 0;
            }
            // The table stays at 1 until the first result replaces it: n slots beside it.
            if ffi::lua_checkstack(state, n) == 0 {
                ffi::luaL_error(state, c"stack overflow (too many results)".as_ptr());
            }
            for i in 2..=n {
                ffi::lua_rawgeti(state, 1, i as _);
            }
            ffi::lua_rawgeti(state, 1, 1);
            ffi::lua_replace(state, 1);
            return n;
        }
        nresults
    }
}

/// What a Rust function raises.
pub(crate) enum Raise {
    /// This value, as it is (an error table, or a string already placed).
    Value(Value),
    /// A message placed as `luaL_error` places it: after the caller's `chunk:line: `.
    Located(String),
    /// A message raised as a bare string, as `lua_error` raises one.
    Bare(String),
    /// An mlua failure (out of memory, mostly), raised as Lua would word it.
    Lua(mlua::Error),
}

impl From<mlua::Error> for Raise {
    fn from(e: mlua::Error) -> Raise {
        Raise::Lua(e)
    }
}

pub(crate) type NativeResult = Result<MultiValue, Raise>;

/// A Lua function running `f`, raising its errors as a C function would.
pub(crate) fn native<F>(lua: &Lua, f: F) -> mlua::Result<Function>
where
    F: Fn(&Lua, MultiValue) -> NativeResult + Send + 'static,
{
    let inner = lua.create_function(move |lua, args: MultiValue| match f(lua, args) {
        Ok(values) => Ok(values),
        Err(raise) => {
            let value = raise_value(lua, raise)?;
            Ok(MultiValue::from_vec(vec![raise_marker(), value]))
        }
    })?;
    // SAFETY: the closure pushes one C closure over the function exec_raw pushed as its argument.
    unsafe { lua.exec_raw::<Function>(inner, |state| ffi::lua_pushcclosure(state, trampoline, 1)) }
}

fn raise_value(lua: &Lua, raise: Raise) -> mlua::Result<Value> {
    let text = match raise {
        Raise::Value(v) => return Ok(v),
        Raise::Located(msg) => format!("{}{msg}", where_prefix(lua, 2)),
        Raise::Bare(msg) => msg,
        Raise::Lua(mlua::Error::MemoryError(_)) => "not enough memory".to_string(),
        Raise::Lua(e) => e.to_string(),
    };
    Ok(Value::String(lua.create_string(text)?))
}

/// `luaL_where`: `chunk:line: ` of the function `level` levels up, empty for a C function.
pub(crate) fn where_prefix(lua: &Lua, level: usize) -> String {
    lua.inspect_stack(level, |debug| {
        let line = debug.current_line().unwrap_or(0);
        if line > 0 {
            let source = debug.source();
            format!("{}:{line}: ", source.short_src.as_deref().unwrap_or("?"))
        } else {
            String::new()
        }
    })
    .unwrap_or_default()
}

/// Lua's name for a value's type (`luaL_typename`).
pub(crate) fn type_name(v: Option<&Value>) -> &'static str {
    match v {
        None => "no value",
        Some(Value::Nil) => "nil",
        Some(Value::Boolean(_)) => "boolean",
        Some(Value::Integer(_) | Value::Number(_)) => "number",
        Some(Value::String(_)) => "string",
        Some(Value::Table(_)) => "table",
        Some(Value::Function(_)) => "function",
        Some(Value::Thread(_)) => "thread",
        Some(_) => "userdata",
    }
}

/// `luaL_argerror`, naming the function as the calling instruction names it.
pub(crate) fn arg_error(lua: &Lua, narg: usize, extramsg: &str) -> Raise {
    let (name, is_method) = lua
        .inspect_stack(1, |debug| {
            let names = debug.names();
            (
                names.name.map(|n| n.into_owned()),
                names.name_what == Some("method"),
            )
        })
        .unwrap_or((None, false));
    let name = name.unwrap_or_else(|| "?".to_string());
    let mut narg = narg;
    if is_method {
        narg -= 1;
        if narg == 0 {
            return Raise::Located(format!("calling '{name}' on bad self ({extramsg})"));
        }
    }
    Raise::Located(format!("bad argument #{narg} to '{name}' ({extramsg})"))
}

pub(crate) fn type_error(lua: &Lua, narg: usize, expected: &str, got: Option<&Value>) -> Raise {
    arg_error(
        lua,
        narg,
        &format!("{expected} expected, got {}", type_name(got)),
    )
}

/// The arguments of a call, read as the `luaL_check*` functions read them (1-based).
pub(crate) struct Args<'a> {
    pub(crate) lua: &'a Lua,
    pub(crate) values: Vec<Value>,
}

impl<'a> Args<'a> {
    pub(crate) fn new(lua: &'a Lua, values: MultiValue) -> Args<'a> {
        Args {
            lua,
            values: values.into_vec(),
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.values.len()
    }

    pub(crate) fn get(&self, narg: usize) -> Option<&Value> {
        self.values.get(narg - 1)
    }

    /// `lua_tonumber`: numbers, and strings that read as numbers.
    pub(crate) fn to_number(&self, narg: usize) -> Option<f64> {
        to_number(self.lua, self.get(narg))
    }

    pub(crate) fn check_number(&self, narg: usize) -> Result<f64, Raise> {
        self.to_number(narg)
            .ok_or_else(|| type_error(self.lua, narg, "number", self.get(narg)))
    }

    /// `luaL_checkinteger`: the number cast to an integer as C casts it.
    pub(crate) fn check_integer(&self, narg: usize) -> Result<i64, Raise> {
        self.check_number(narg).map(c_double_to_i64)
    }

    /// `luaL_checkint`: the integer narrowed to a C int.
    pub(crate) fn check_int(&self, narg: usize) -> Result<i32, Raise> {
        self.check_integer(narg).map(|i| i as i32)
    }

    /// `luaL_checklstring`: strings, and numbers as Lua prints them.
    pub(crate) fn check_bytes(&self, narg: usize) -> Result<Vec<u8>, Raise> {
        to_bytes(self.get(narg)).ok_or_else(|| type_error(self.lua, narg, "string", self.get(narg)))
    }
}

pub(crate) fn to_number(lua: &Lua, v: Option<&Value>) -> Option<f64> {
    match v? {
        Value::Integer(i) => Some(*i as f64),
        Value::Number(n) => Some(*n),
        s @ Value::String(_) => match lua.coerce_number(s.clone()) {
            Ok(Some(n)) => Some(n),
            _ => None,
        },
        _ => None,
    }
}

/// `lua_tolstring`: a string's bytes, or a number as `%.14g` prints it.
pub(crate) fn to_bytes(v: Option<&Value>) -> Option<Vec<u8>> {
    match v? {
        Value::String(s) => Some(s.as_bytes().to_vec()),
        Value::Integer(i) => Some(format_g(*i as f64, 14).into_bytes()),
        Value::Number(n) => Some(format_g(*n, 14).into_bytes()),
        _ => None,
    }
}

/// One value back to the script.
pub(crate) fn one(v: Value) -> NativeResult {
    Ok(MultiValue::from_vec(vec![v]))
}

pub(crate) fn none() -> NativeResult {
    Ok(MultiValue::new())
}
