//! The server's Lua engines, which the server owns and a command reaches through `Ctx`: kept
//! apart from the scripting commands so that `Ctx` can name them without importing the
//! commands.

use crate::lua::{EvalEngine, FunctionEngine, LuaConfig, ScriptKind, ScriptWatch};
use std::sync::{Mutex, MutexGuard};

/// The server's two Lua engines (EVAL's script cache, FUNCTION's libraries) and the handles
/// other connections use to see and stop a running script.
pub struct Scripts {
    eval: Mutex<EvalEngine>,
    functions: Mutex<FunctionEngine>,
    pub(super) eval_watch: ScriptWatch,
    pub(super) function_watch: ScriptWatch,
}

impl Default for Scripts {
    fn default() -> Scripts {
        let eval = EvalEngine::new(LuaConfig::default());
        let functions = FunctionEngine::new(LuaConfig::default());
        Scripts {
            eval_watch: eval.watch(),
            function_watch: functions.watch(),
            eval: Mutex::new(eval),
            functions: Mutex::new(functions),
        }
    }
}

impl Scripts {
    pub(super) fn eval(&self) -> MutexGuard<'_, EvalEngine> {
        self.eval.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(super) fn functions(&self) -> MutexGuard<'_, FunctionEngine> {
        self.functions.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// INFO's `number_of_cached_scripts`.
    pub fn cached_scripts(&self) -> usize {
        self.eval().len()
    }

    /// The kind of the script running past busy-reply-threshold, if one is: other clients get
    /// its BUSY error.
    pub fn busy(&self) -> Option<ScriptKind> {
        self.eval_watch
            .busy()
            .or_else(|| self.function_watch.busy())
    }

    /// SCRIPT KILL (`by` Eval) or FUNCTION KILL (`by` Function), without the engines' locks
    /// (the running script holds its engine's); the error line when it does not kill.
    pub fn kill(&self, by: ScriptKind) -> Result<(), &'static str> {
        let (own, other, other_kind) = match by {
            ScriptKind::Eval => (&self.eval_watch, &self.function_watch, ScriptKind::Function),
            ScriptKind::Function => (&self.function_watch, &self.eval_watch, ScriptKind::Eval),
        };
        // A KILL of the other kind names the one that runs, as Redis's BUSY error does.
        if !own.running() && other.running() {
            return Err(other_kind.busy_error());
        }
        own.kill(by).map_err(|refused| refused.error_line())
    }
}
