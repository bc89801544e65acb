//! The runner of the run in progress, kept in the Lua state's app data, where the `redis.*`
//! functions a script calls and the busy hook reach it.

use mlua::Lua;

use super::runner::CommandRunner;

/// The raw pointer to the runner of the current run, in the state's app data while the run
/// lasts. SAFETY: set from a `&mut dyn CommandRunner` that outlives the run and is not touched
/// by anything else until the run returns; cleared before it returns; dereferenced only by the
/// `redis.*` functions the script calls during the run, one at a time (none of them runs Lua
/// while it holds the reference).
pub(crate) struct RunSlot {
    pub(crate) runner: *mut (dyn CommandRunner + 'static),
    pub(crate) resp: u8,
}

// SAFETY: the pointer is only used on the thread running the script, during the run.
unsafe impl Send for RunSlot {}

/// Runs `f` with the current run's runner and the script's protocol; `None` outside a run.
pub(crate) fn with_runner<R>(
    lua: &Lua,
    f: impl FnOnce(&mut dyn CommandRunner, &mut u8) -> R,
) -> Option<R> {
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
