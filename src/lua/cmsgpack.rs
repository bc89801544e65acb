//! stub
use mlua::{Lua, Table};

pub(crate) fn open(lua: &Lua) -> mlua::Result<Table> {
    lua.create_table()
}
