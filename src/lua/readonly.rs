//! Redis 7's read-only tables on a stock Lua 5.1.
//!
//! Redis patches its Lua so that a table can be flagged read-only: every write to it (a field
//! assignment, `rawset`, `table.insert`, `setmetatable`) raises `Attempt to modify a readonly
//! table`, and it flags the globals and every table reachable from them once the libraries are
//! loaded, so that no script can leave state behind for the next one. mlua builds a stock Lua, so
//! each such table is replaced here by an empty proxy whose metatable reads through to the real
//! table (its backing) and refuses writes. What a proxy cannot do by itself is done by the few
//! base functions that see past metatables (`rawget`, `rawset`, `next`, `pairs`, `ipairs`,
//! `getmetatable`, `setmetatable`, `table.insert`): they are replaced by the C functions below,
//! which treat a proxy as its backing and refuse writes to it. They are written against the C
//! API, as the originals are, so that their argument errors name the function and the script's
//! line exactly as Lua's own do. `getfenv` cannot reach a backing table either: every function
//! the scripts can reach has the proxy globals as its environment.

use std::collections::HashMap;
use std::ffi::{c_int, c_void};

use mlua::{ffi, Function, Lua, Table, Value};

pub(crate) const READONLY_ERROR: &str = "Attempt to modify a readonly table";

/// Raises `msg` after the caller's `chunk:line: ` (what `luaL_error` does). Builds the message on
/// the Lua stack: nothing of Rust's is alive when `lua_error` unwinds past this frame.
unsafe fn raise_located(state: *mut ffi::lua_State, msg: &'static str) -> ! {
    ffi::luaL_where(state, 1);
    ffi::lua_pushlstring(state, msg.as_ptr().cast(), msg.len());
    ffi::lua_concat(state, 2);
    ffi::lua_error(state)
}

unsafe fn raise_bare(state: *mut ffi::lua_State, msg: &'static str) -> ! {
    ffi::lua_pushlstring(state, msg.as_ptr().cast(), msg.len());
    ffi::lua_error(state)
}

/// The backing table of the proxy at `idx`, in its place (upvalue 1 maps proxies to backings).
unsafe fn unproxy(state: *mut ffi::lua_State, idx: c_int) -> bool {
    if ffi::lua_type(state, idx) != ffi::LUA_TTABLE {
        return false;
    }
    ffi::lua_pushvalue(state, idx);
    ffi::lua_rawget(state, ffi::lua_upvalueindex(1));
    if ffi::lua_type(state, -1) == ffi::LUA_TTABLE {
        ffi::lua_replace(state, idx);
        true
    } else {
        ffi::lua_pop(state, 1);
        false
    }
}

unsafe fn is_proxy(state: *mut ffi::lua_State, idx: c_int) -> bool {
    ffi::lua_pushvalue(state, idx);
    ffi::lua_rawget(state, ffi::lua_upvalueindex(1));
    let found = ffi::lua_type(state, -1) == ffi::LUA_TTABLE;
    ffi::lua_pop(state, 1);
    found
}

/// `__newindex` of every proxy.
unsafe extern "C-unwind" fn readonly_newindex(state: *mut ffi::lua_State) -> c_int {
    raise_located(state, READONLY_ERROR)
}

/// `__index` of the globals' backing: Redis's `luaProtectedTableError`.
pub(crate) unsafe extern "C-unwind" fn missing_global(state: *mut ffi::lua_State) -> c_int {
    if ffi::lua_gettop(state) != 2 {
        raise_located(state, "Wrong number of arguments to luaProtectedTableError");
    }
    if ffi::lua_isstring(state, -1) == 0 && ffi::lua_isnumber(state, -1) == 0 {
        raise_located(
            state,
            "Second argument to luaProtectedTableError must be a string or number",
        );
    }
    ffi::luaL_where(state, 1);
    let head = "Script attempted to access nonexistent global variable '";
    ffi::lua_pushlstring(state, head.as_ptr().cast(), head.len());
    ffi::lua_pushvalue(state, 2);
    ffi::lua_pushlstring(state, c"'".as_ptr(), 1);
    ffi::lua_concat(state, 4);
    ffi::lua_error(state)
}

unsafe extern "C-unwind" fn sandbox_next(state: *mut ffi::lua_State) -> c_int {
    ffi::luaL_checktype(state, 1, ffi::LUA_TTABLE);
    unproxy(state, 1);
    ffi::lua_settop(state, 2);
    if ffi::lua_next(state, 1) != 0 {
        2
    } else {
        ffi::lua_pushnil(state);
        1
    }
}

/// `pairs`: upvalue 2 is `next`.
unsafe extern "C-unwind" fn sandbox_pairs(state: *mut ffi::lua_State) -> c_int {
    ffi::luaL_checktype(state, 1, ffi::LUA_TTABLE);
    ffi::lua_pushvalue(state, ffi::lua_upvalueindex(2));
    ffi::lua_pushvalue(state, 1);
    ffi::lua_pushnil(state);
    3
}

unsafe extern "C-unwind" fn sandbox_ipairs_step(state: *mut ffi::lua_State) -> c_int {
    let i = ffi::luaL_checkinteger(state, 2) as c_int;
    ffi::luaL_checktype(state, 1, ffi::LUA_TTABLE);
    unproxy(state, 1);
    let next = i.wrapping_add(1);
    ffi::lua_pushinteger(state, next as ffi::lua_Integer);
    ffi::lua_rawgeti(state, 1, next as _);
    if ffi::lua_type(state, -1) == ffi::LUA_TNIL {
        0
    } else {
        2
    }
}

/// `ipairs`: upvalue 2 is its step function.
unsafe extern "C-unwind" fn sandbox_ipairs(state: *mut ffi::lua_State) -> c_int {
    ffi::luaL_checktype(state, 1, ffi::LUA_TTABLE);
    ffi::lua_pushvalue(state, ffi::lua_upvalueindex(2));
    ffi::lua_pushvalue(state, 1);
    ffi::lua_pushinteger(state, 0);
    3
}

unsafe extern "C-unwind" fn sandbox_rawget(state: *mut ffi::lua_State) -> c_int {
    ffi::luaL_checktype(state, 1, ffi::LUA_TTABLE);
    ffi::luaL_checkany(state, 2);
    unproxy(state, 1);
    ffi::lua_settop(state, 2);
    ffi::lua_rawget(state, 1);
    1
}

unsafe extern "C-unwind" fn sandbox_rawset(state: *mut ffi::lua_State) -> c_int {
    ffi::luaL_checktype(state, 1, ffi::LUA_TTABLE);
    ffi::luaL_checkany(state, 2);
    ffi::luaL_checkany(state, 3);
    if is_proxy(state, 1) {
        raise_bare(state, READONLY_ERROR);
    }
    ffi::lua_settop(state, 3);
    ffi::lua_rawset(state, 1);
    1
}

/// `getmetatable`: upvalue 2 maps a metatable to what scripts are shown for it (`false`: nil).
unsafe extern "C-unwind" fn sandbox_getmetatable(state: *mut ffi::lua_State) -> c_int {
    ffi::luaL_checkany(state, 1);
    if ffi::lua_getmetatable(state, 1) == 0 {
        ffi::lua_pushnil(state);
        return 1;
    }
    ffi::lua_pushvalue(state, -1);
    ffi::lua_rawget(state, ffi::lua_upvalueindex(2));
    match ffi::lua_type(state, -1) {
        ffi::LUA_TNIL => {
            ffi::lua_pop(state, 1);
            ffi::luaL_getmetafield(state, 1, c"__metatable".as_ptr());
        }
        ffi::LUA_TBOOLEAN => ffi::lua_pushnil(state),
        _ => {}
    }
    1
}

unsafe extern "C-unwind" fn sandbox_setmetatable(state: *mut ffi::lua_State) -> c_int {
    let t = ffi::lua_type(state, 2);
    ffi::luaL_checktype(state, 1, ffi::LUA_TTABLE);
    if t != ffi::LUA_TNIL && t != ffi::LUA_TTABLE {
        ffi::luaL_argerror(state, 2, c"nil or table expected".as_ptr());
    }
    if is_proxy(state, 1) {
        raise_bare(state, READONLY_ERROR);
    }
    if ffi::luaL_getmetafield(state, 1, c"__metatable".as_ptr()) != 0 {
        raise_located(state, "cannot change a protected metatable");
    }
    ffi::lua_settop(state, 2);
    ffi::lua_setmetatable(state, 1);
    1
}

/// `table.insert`, as Lua 5.1's `tinsert`.
unsafe extern "C-unwind" fn sandbox_table_insert(state: *mut ffi::lua_State) -> c_int {
    ffi::luaL_checktype(state, 1, ffi::LUA_TTABLE);
    let mut e = (ffi::lua_objlen(state, 1) as c_int).wrapping_add(1);
    let pos = match ffi::lua_gettop(state) {
        2 => e,
        3 => {
            let pos = ffi::luaL_checkinteger(state, 2) as c_int;
            if pos > e {
                e = pos;
            }
            if is_proxy(state, 1) {
                raise_bare(state, READONLY_ERROR);
            }
            let mut i = e;
            while i > pos {
                ffi::lua_rawgeti(state, 1, (i - 1) as _);
                ffi::lua_rawseti(state, 1, i as _);
                i -= 1;
            }
            pos
        }
        _ => raise_located(state, "wrong number of arguments to 'insert'"),
    };
    if is_proxy(state, 1) {
        raise_bare(state, READONLY_ERROR);
    }
    ffi::lua_rawseti(state, 1, pos as _);
    0
}

/// The proxies made so far, and the tables the sandboxed functions consult.
pub(crate) struct Protector {
    /// proxy -> backing (upvalue 1 of the sandboxed functions).
    backings: Table,
    /// raw metatable -> what `getmetatable` shows (upvalue 2 of `getmetatable`).
    shown: Table,
    made: HashMap<*const c_void, Table>,
    newindex: Function,
}

impl Protector {
    pub(crate) fn new(lua: &Lua) -> mlua::Result<Protector> {
        // SAFETY: readonly_newindex is a C function of the lua_CFunction signature.
        let newindex = unsafe { lua.create_c_function(readonly_newindex)? };
        Ok(Protector {
            backings: lua.create_table()?,
            shown: lua.create_table()?,
            made: HashMap::new(),
            newindex,
        })
    }

    /// The proxy of `table`, making it (and, through it, proxies of every table reachable from
    /// it, which take their places in their backings) on first sight.
    pub(crate) fn proxy(&mut self, lua: &Lua, table: &Table) -> mlua::Result<Table> {
        if let Some(p) = self.made.get(&table.to_pointer()) {
            return Ok(p.clone());
        }
        let proxy = lua.create_table()?;
        let mechanism = lua.create_table()?;
        mechanism.raw_set("__index", table.clone())?;
        mechanism.raw_set("__newindex", self.newindex.clone())?;
        proxy.set_metatable(Some(mechanism.clone()))?;
        self.made.insert(table.to_pointer(), proxy.clone());
        self.backings.raw_set(proxy.clone(), table.clone())?;
        let shown = match table.metatable() {
            Some(meta) => Value::Table(self.proxy(lua, &meta)?),
            None => Value::Boolean(false),
        };
        self.shown.raw_set(mechanism, shown)?;
        let entries: Vec<(Value, Value)> =
            table.pairs::<Value, Value>().collect::<mlua::Result<_>>()?;
        for (key, value) in entries {
            if let Value::Table(inner) = value {
                let inner_proxy = self.proxy(lua, &inner)?;
                table.raw_set(key, inner_proxy)?;
            }
        }
        Ok(proxy)
    }

    /// Shows a proxy of `meta` for every value whose metatable `meta` is (the strings').
    pub(crate) fn show_metatable(&mut self, lua: &Lua, meta: &Table) -> mlua::Result<()> {
        let proxy = self.proxy(lua, meta)?;
        self.shown.raw_set(meta.clone(), proxy)
    }

    /// Installs the sandboxed base functions into `globals` (a backing table) and `table_lib`.
    pub(crate) fn install(
        &self,
        lua: &Lua,
        globals: &Table,
        table_lib: &Table,
    ) -> mlua::Result<()> {
        let next = self.closure(lua, sandbox_next, Value::Nil)?;
        let ipairs_step = self.closure(lua, sandbox_ipairs_step, Value::Nil)?;
        let pairs = self.closure(lua, sandbox_pairs, Value::Function(next.clone()))?;
        globals.raw_set("pairs", pairs)?;
        let ipairs = self.closure(lua, sandbox_ipairs, Value::Function(ipairs_step))?;
        globals.raw_set("ipairs", ipairs)?;
        globals.raw_set("next", next)?;
        globals.raw_set("rawget", self.closure(lua, sandbox_rawget, Value::Nil)?)?;
        globals.raw_set("rawset", self.closure(lua, sandbox_rawset, Value::Nil)?)?;
        let shown = Value::Table(self.shown.clone());
        globals.raw_set(
            "getmetatable",
            self.closure(lua, sandbox_getmetatable, shown)?,
        )?;
        let setmetatable = self.closure(lua, sandbox_setmetatable, Value::Nil)?;
        globals.raw_set("setmetatable", setmetatable)?;
        let insert = self.closure(lua, sandbox_table_insert, Value::Nil)?;
        table_lib.raw_set("insert", insert)?;
        Ok(())
    }

    /// A C closure over the proxy map and `second`.
    fn closure(&self, lua: &Lua, f: ffi::lua_CFunction, second: Value) -> mlua::Result<Function> {
        // SAFETY: exec_raw pushes the two upvalues; lua_pushcclosure takes them.
        unsafe {
            lua.exec_raw::<Function>((self.backings.clone(), second), |state| {
                ffi::lua_pushcclosure(state, f, 2)
            })
        }
    }

    /// Gives every function kept in a protected table the environment `env` (the protected
    /// globals), so that `getfenv` on a library function cannot reach a backing table.
    pub(crate) fn set_environments(&self, lua: &Lua, env: &Table) -> mlua::Result<()> {
        for pair in self.backings.pairs::<Value, Table>() {
            let (_, backing) = pair?;
            for entry in backing.pairs::<Value, Value>() {
                if let (_, Value::Function(f)) = entry? {
                    set_environment(lua, &f, env)?;
                }
            }
        }
        Ok(())
    }
}

pub(crate) fn set_environment(lua: &Lua, f: &Function, env: &Table) -> mlua::Result<()> {
    // SAFETY: the closure finds the function and the table exec_raw pushed, and leaves nothing.
    unsafe {
        lua.exec_raw::<()>((f.clone(), env.clone()), |state| {
            ffi::lua_setfenv(state, -2);
            ffi::lua_pop(state, 1);
        })
    }
}
