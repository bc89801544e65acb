//! The Lua runtime for scripting as Redis 7.4 runs it (EVAL and FUNCTION), on mlua's Lua 5.1.
//!
//! A bottom-floor module: it compiles and runs scripts and keeps them, and knows nothing of
//! commands, the keyspace or the protocol. The command layer drives it:
//!
//! - [`EvalEngine`]: one Lua state for every EVAL script (as Redis has one), with the script
//!   cache by SHA1 (Redis 7.4's: EVAL-compiled scripts past 500 evicted oldest first, SCRIPT
//!   LOAD's kept, nothing across restarts). SCRIPT FLUSH builds a new state.
//! - [`FunctionEngine`]: FUNCTION's libraries in a second Lua state, as Redis keeps them apart.
//! - [`CommandRunner`]: what a running script asks of the command layer (`redis.call`,
//!   `redis.log`, `redis.acl_check_cmd`, `redis.set_repl`, the slow-script notice).
//! - [`Reply`]: the reply tree both ways: command replies into the script, its result out.
//! - [`ScriptWatch`]: the running script as other threads see it: BUSY past the threshold,
//!   SCRIPT KILL / FUNCTION KILL, and the first write that makes it unkillable.
//!
//! What Redis builds into its Lua is provided on mlua's API: the libraries `cjson`, `bit`,
//! `cmsgpack` and `struct` (written here to Redis's behaviour and error texts), the read-only
//! tables
//! of Redis's Lua patch (emulated with proxies, see `readonly`), Redis's `pcall`, error handler,
//! `math.random` and `loadstring`.
//!
//! Limits: the Lua heap of each state is capped at [`LuaConfig::memory_limit`] (default
//! [`DEFAULT_MEMORY_LIMIT`]); a script that allocates past it stops with Lua's out-of-memory
//! error, which Redis words as `ERR Error running script <sha1>, not enough memory` (Redis
//! itself sets no such cap: this is sieved's bound). Every 100,000 instructions a hook checks
//! the busy threshold and kill requests.

mod bitop;
mod cjson;
mod cmsgpack;
mod conversions;
mod eval_cache;
mod libraries;
mod lua_struct;
mod native;
mod number_format;
mod readonly;
mod redis_api;
mod reply_tree;
mod run_slot;
mod runner;
mod sha1;
mod shebang;
mod vm;
mod watchdog;

#[cfg(test)]
mod tests;

pub use eval_cache::{CompiledBy, EvalEngine, Sha1Hex, EVAL_SCRIPTS_KEPT, NOSCRIPT};
pub use libraries::{library_name, FunctionEngine, FunctionEntry, Library, RestorePolicy};
pub use reply_tree::Reply;
pub use runner::{CommandRunner, LogLevel, ReplFlags};
pub use sha1::sha1_hex;
pub use shebang::ScriptFlags;
pub use vm::RunOutcome;
pub use watchdog::{KillRefused, ScriptKind, ScriptWatch, FUNCTION_LOAD_TIMEOUT};

/// sieved's cap on one Lua state's heap: generous for scripts that build large replies,
/// small enough that a runaway script cannot take the machine's memory.
pub const DEFAULT_MEMORY_LIMIT: usize = 512 << 20;

/// How the engines are built.
#[derive(Clone, Copy, Debug)]
pub struct LuaConfig {
    /// Bytes one Lua state may hold (0: no cap).
    pub memory_limit: usize,
}

impl Default for LuaConfig {
    fn default() -> LuaConfig {
        LuaConfig {
            memory_limit: DEFAULT_MEMORY_LIMIT,
        }
    }
}
