//! What the Lua runtime asks of the command layer while a script runs.

use std::time::Duration;

use super::reply_tree::Reply;

/// Redis's log levels, as `redis.LOG_*` number them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum LogLevel {
    Debug = 0,
    Verbose = 1,
    Notice = 2,
    Warning = 3,
}

/// `redis.set_repl` flags: where the script's following writes are propagated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReplFlags {
    pub aof: bool,
    pub replicas: bool,
}

/// The command layer's side of a running script. The engine calls it from inside the script;
/// none of its methods can run Lua.
pub trait CommandRunner {
    /// Runs one command for `redis.call` / `redis.pcall`: `args[0]` is the command name, as the
    /// script wrote it. `resp` is the protocol the script chose with `redis.setresp` (2 at the
    /// start of every script): the reply is what a client of that protocol would get (RESP3
    /// types under RESP2 are also accepted: the engine turns them into what RESP2 sends).
    ///
    /// Refusals are error replies with Redis 7.4's texts, which the script sees as it does in
    /// Redis: `ERR Unknown Redis command called from script`, `ERR Wrong number of args calling
    /// Redis command from script`, `ERR This Redis command is not allowed from script`,
    /// `ERR Write commands are not allowed from read-only scripts.`, `ERR ACL failure in script:
    /// ...`, `OOM command not allowed when used memory > 'maxmemory'.` (only before the first
    /// write), `ERR Can not execute the command on a stale replica`, ... Before its first write
    /// the runner records the write with [`super::ScriptWatch::note_write`] and refuses the write
    /// when that answers `false` (a kill got there first).
    fn call(&mut self, args: &[&[u8]], resp: u8) -> Reply;

    /// `redis.log`: the level was checked; the runner applies the configured verbosity.
    fn log(&mut self, level: LogLevel, message: &[u8]);

    /// `redis.acl_check_cmd`: whether the calling user may run this command with these
    /// arguments; `None` when there is no such command.
    fn acl_check_cmd(&mut self, args: &[&[u8]]) -> Option<bool>;

    /// `redis.set_repl`: the script's later writes go to these destinations only.
    fn set_repl(&mut self, flags: ReplFlags);

    /// Called once per run, from inside the script, when it passes the busy threshold (Redis's
    /// "Slow script detected" moment): from now on [`super::ScriptWatch::busy`] says so.
    fn on_slow_script(&mut self, elapsed: Duration);
}
