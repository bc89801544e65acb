//! Long scripts: the instruction-count hook that notices a script running past
//! `busy-reply-threshold` and stops it on SCRIPT KILL / FUNCTION KILL, and the handle other
//! threads hold to see the script and ask for its end.
//!
//! As in Redis, the hook runs every 100,000 Lua instructions. Once a kill is asked for, the hook
//! raises Redis's error table and switches to running on every line, so that a script cannot
//! catch the error with `pcall` and carry on. A script that has written is not killed (Redis's
//! UNKILLABLE): the command layer records its first write with [`ScriptWatch::note_write`], which
//! also settles the race with a kill asked for at that very moment.

use std::ffi::c_int;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use mlua::{ffi, Lua};

use super::run_slot::with_runner;

/// Redis's `LUA_MASKCOUNT` period for the script hook.
pub(crate) const HOOK_INSTRUCTIONS: c_int = 100_000;

/// Redis's `LOAD_TIMEOUT_MS`: FUNCTION LOAD stops a library that runs longer at load time.
pub const FUNCTION_LOAD_TIMEOUT: Duration = Duration::from_millis(500);

const IDLE: u8 = 0;
const RUNNING: u8 = 1;
const WROTE: u8 = 2;
const KILLED: u8 = 3;

/// Which command family a script runs under: it names the KILL command that stops it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScriptKind {
    /// EVAL / EVALSHA: stopped by SCRIPT KILL.
    Eval,
    /// FCALL: stopped by FUNCTION KILL.
    Function,
}

impl ScriptKind {
    /// The `-BUSY` error other clients get while a script of this kind runs past the threshold.
    pub fn busy_error(self) -> &'static str {
        match self {
            ScriptKind::Eval => {
                "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE."
            }
            ScriptKind::Function => {
                "BUSY Redis is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE."
            }
        }
    }
}

/// Why a KILL did not kill (the error line Redis answers, without its `-`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KillRefused {
    NotBusy,
    /// The script has written: it must finish.
    Unkillable,
    /// SCRIPT KILL for a function or FUNCTION KILL for an EVAL: the BUSY error of the one running.
    WrongKind(ScriptKind),
}

impl KillRefused {
    pub fn error_line(self) -> &'static str {
        match self {
            KillRefused::NotBusy => "NOTBUSY No scripts in execution right now.",
            KillRefused::Unkillable => {
                "UNKILLABLE Sorry the script already executed write commands against the dataset. You can either wait the script termination or kill the server in a hard way using the SHUTDOWN NOSAVE command."
            }
            KillRefused::WrongKind(running) => running.busy_error(),
        }
    }
}

#[derive(Debug, Default)]
struct WatchState {
    state: AtomicU8,
    /// 0: eval, 1: function.
    kind: AtomicU8,
    /// The script has run past busy-reply-threshold (Redis's SCRIPT_TIMEDOUT).
    timed_out: AtomicBool,
}

/// A handle on the script an engine runs, for other threads (KILL, the BUSY check) and for the
/// command layer's write path. Cloning shares it.
#[derive(Clone, Debug, Default)]
pub struct ScriptWatch(Arc<WatchState>);

impl ScriptWatch {
    /// Whether a script is running and has passed the busy threshold: then other clients get
    /// [`ScriptKind::busy_error`].
    pub fn busy(&self) -> Option<ScriptKind> {
        let running = self.0.state.load(Ordering::Acquire) != IDLE;
        (running && self.0.timed_out.load(Ordering::Acquire)).then(|| self.kind())
    }

    /// Whether a script is running at all.
    pub fn running(&self) -> bool {
        self.0.state.load(Ordering::Acquire) != IDLE
    }

    fn kind(&self) -> ScriptKind {
        if self.0.kind.load(Ordering::Acquire) == 0 {
            ScriptKind::Eval
        } else {
            ScriptKind::Function
        }
    }

    /// SCRIPT KILL (`by` Eval) or FUNCTION KILL (`by` Function). On success the script stops at
    /// its next hook with Redis's error.
    pub fn kill(&self, by: ScriptKind) -> Result<(), KillRefused> {
        match self.0.state.load(Ordering::Acquire) {
            IDLE => return Err(KillRefused::NotBusy),
            WROTE => return Err(KillRefused::Unkillable),
            KILLED => return Ok(()),
            _ => {}
        }
        let running = self.kind();
        if running != by {
            return Err(KillRefused::WrongKind(running));
        }
        match self
            .0
            .state
            .compare_exchange(RUNNING, KILLED, Ordering::AcqRel, Ordering::Acquire)
        {
            Ok(_) | Err(KILLED) => Ok(()),
            Err(WROTE) => Err(KillRefused::Unkillable),
            Err(_) => Err(KillRefused::NotBusy),
        }
    }

    /// Records that the running script is about to write. `false` when a kill got there first:
    /// the write must not happen (the script is being stopped with the kill error).
    pub fn note_write(&self) -> bool {
        match self
            .0
            .state
            .compare_exchange(RUNNING, WROTE, Ordering::AcqRel, Ordering::Acquire)
        {
            Ok(_) => true,
            Err(state) => state != KILLED,
        }
    }

    pub(crate) fn killed(&self) -> bool {
        self.0.state.load(Ordering::Acquire) == KILLED
    }

    pub(crate) fn begin(&self, kind: ScriptKind) {
        let k = u8::from(kind == ScriptKind::Function);
        self.0.kind.store(k, Ordering::Release);
        self.0.timed_out.store(false, Ordering::Release);
        self.0.state.store(RUNNING, Ordering::Release);
    }

    pub(crate) fn end(&self) {
        self.0.state.store(IDLE, Ordering::Release);
        self.0.timed_out.store(false, Ordering::Release);
    }

    pub(crate) fn set_timed_out(&self) {
        self.0.timed_out.store(true, Ordering::Release);
    }
}

/// What the hook found, decided in Rust before any Lua error unwinds the hook's frame.
pub(crate) enum Verdict {
    Continue,
    Kill,
    LoadTimeout,
}

/// The hook's view of the current run, kept in the Lua state's app data.
pub(crate) struct HookState {
    pub(crate) watch: ScriptWatch,
    pub(crate) started: Instant,
    pub(crate) threshold: Option<Duration>,
    /// Set while FUNCTION LOAD runs a library's code (with its 500 ms limit).
    pub(crate) loading: bool,
    pub(crate) load_timeout: Option<Duration>,
    /// Set once the run passed the threshold, for the runner's one-time notice.
    pub(crate) notice_due: bool,
}

pub(crate) fn verdict(lua: &Lua) -> Verdict {
    let Some(mut hook) = lua.app_data_mut::<HookState>() else {
        return Verdict::Continue;
    };
    let elapsed = hook.started.elapsed();
    if hook.loading {
        return match hook.load_timeout {
            Some(limit) if elapsed > limit => Verdict::LoadTimeout,
            _ => Verdict::Continue,
        };
    }
    if let Some(threshold) = hook.threshold {
        if elapsed >= threshold && hook.watch.busy().is_none() {
            hook.watch.set_timed_out();
            hook.notice_due = true;
        }
    }
    if hook.watch.killed() {
        Verdict::Kill
    } else {
        Verdict::Continue
    }
}

pub(crate) unsafe extern "C-unwind" fn count_hook(
    state: *mut ffi::lua_State,
    _ar: *mut ffi::lua_Debug,
) {
    // SAFETY: the hook is installed on states mlua owns; the reference ends with this call.
    let found = {
        let lua = Lua::get_or_init_from_ptr(state);
        let verdict = verdict(lua);
        if matches!(verdict, Verdict::Continue) {
            run_slow_notice(lua);
        }
        verdict
    };
    let msg: &str = match found {
        Verdict::Continue => return,
        Verdict::Kill => "ERR Script killed by user with SCRIPT KILL...",
        Verdict::LoadTimeout => "ERR FUNCTION LOAD timeout",
    };
    // From here on every line runs the hook, so that pcall cannot swallow the error for good.
    ffi::lua_sethook(state, Some(count_hook), ffi::LUA_MASKLINE, 0);
    ffi::lua_createtable(state, 0, 1);
    ffi::lua_pushlstring(state, msg.as_ptr().cast(), msg.len());
    ffi::lua_setfield(state, -2, c"err".as_ptr());
    ffi::lua_error(state);
}

/// Installs the count hook on the state's main thread (and so on every coroutine it starts).
pub(crate) fn install(lua: &Lua) {
    // SAFETY: exec_raw gives the main state; lua_sethook has no failure mode.
    let _ = unsafe {
        lua.exec_raw::<()>((), |state| {
            ffi::lua_sethook(
                state,
                Some(count_hook),
                ffi::LUA_MASKCOUNT,
                HOOK_INSTRUCTIONS,
            );
        })
    };
}

pub(crate) fn remove(lua: &Lua) {
    // SAFETY: as in `install`.
    let _ = unsafe {
        lua.exec_raw::<()>((), |state| {
            ffi::lua_sethook(state, None, 0, 0);
        })
    };
}

/// Called by the hook when the script runs on: tells the runner once that it passed the busy
/// threshold.
fn run_slow_notice(lua: &Lua) {
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
