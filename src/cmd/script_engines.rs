//! The server's Lua engines, which the server owns and a command reaches through `Ctx`: kept
//! apart from the scripting commands so that `Ctx` can name them without importing the
//! commands.

use crate::lua::{EvalEngine, FunctionEngine, LuaConfig, RestorePolicy, ScriptKind, ScriptWatch};
use crate::store::Store;
use std::ops::{Deref, DerefMut};
use std::sync::{Mutex, MutexGuard};

/// The server's two Lua engines (EVAL's script cache, FUNCTION's libraries) and the handles
/// other connections use to see and stop a running script.
pub struct Scripts {
    eval: Mutex<EvalEngine>,
    functions: Mutex<SyncedFunctions>,
    pub(super) eval_watch: ScriptWatch,
    pub(super) function_watch: ScriptWatch,
    /// The figures last read, given while a running script holds an engine (/metrics does not
    /// wait for it).
    last_figures: Mutex<ScriptFigures>,
}

/// The engines' figures for INFO memory (see `observe::ScriptMemory`, which names each).
#[derive(Clone, Copy, Debug, Default)]
pub struct ScriptFigures {
    pub vm_eval: u64,
    pub scripts_eval: u64,
    pub cached_scripts: u64,
    pub evicted_scripts: u64,
    pub functions: u64,
    pub libraries: u64,
    pub vm_functions: u64,
    pub functions_memory: u64,
}

/// The function engine and the generation of the store's library table it was built from: the
/// table is the data (saved, logged, replicated), the engine runs what it holds.
pub(super) struct SyncedFunctions {
    engine: FunctionEngine,
    generation: u64,
}

impl SyncedFunctions {
    /// Rebuilds the engine from `store`'s libraries if they changed under it (the log replayed
    /// at start-up, a replica's stream or full sync). A library that no longer compiles is left
    /// out, with a warning: the rest still run.
    fn follow(&mut self, store: &Store) {
        let libraries = store.functions();
        if libraries.generation() == self.generation {
            return;
        }
        let (generation, codes) = libraries.codes();
        let all: Vec<&[u8]> = codes.iter().map(|(_, code)| code.as_slice()).collect();
        if self.engine.restore(&all, RestorePolicy::Flush).is_err() {
            self.engine.flush();
            for (name, code) in &codes {
                if let Err(error) = self.engine.load(code, true, None) {
                    tracing::warn!(
                        library = %String::from_utf8_lossy(name),
                        error = ?error,
                        "a function library of the data set does not load; FCALL will not find its functions"
                    );
                }
            }
        }
        self.generation = generation;
    }

    /// Notes that the engine holds what the store's table does at `generation`, after a change
    /// the engine made first (FUNCTION LOAD, DELETE, FLUSH).
    pub(super) fn in_step_at(&mut self, generation: u64) {
        self.generation = generation;
    }
}

impl Deref for SyncedFunctions {
    type Target = FunctionEngine;
    fn deref(&self) -> &FunctionEngine {
        &self.engine
    }
}

impl DerefMut for SyncedFunctions {
    fn deref_mut(&mut self) -> &mut FunctionEngine {
        &mut self.engine
    }
}

impl Default for Scripts {
    fn default() -> Scripts {
        let eval = EvalEngine::new(LuaConfig::default());
        let functions = FunctionEngine::new(LuaConfig::default());
        Scripts {
            eval_watch: eval.watch(),
            function_watch: functions.watch(),
            eval: Mutex::new(eval),
            functions: Mutex::new(SyncedFunctions {
                engine: functions,
                generation: 0,
            }),
            last_figures: Mutex::new(ScriptFigures::default()),
        }
    }
}

impl Scripts {
    pub(super) fn eval(&self) -> MutexGuard<'_, EvalEngine> {
        self.eval.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The function engine, in step with `store`'s libraries.
    pub(super) fn functions(&self, store: &Store) -> MutexGuard<'_, SyncedFunctions> {
        let mut functions = self.functions.lock().unwrap_or_else(|p| p.into_inner());
        functions.follow(store);
        functions
    }

    /// INFO's scripting figures, the functions' as `store`'s libraries make them.
    pub fn figures(&self, store: &Store) -> ScriptFigures {
        let mut last = self.last_figures.lock().unwrap_or_else(|p| p.into_inner());
        if let Ok(eval) = self.eval.try_lock() {
            last.vm_eval = eval.used_memory() as u64;
            last.scripts_eval = eval.scripts_memory() as u64;
            last.cached_scripts = eval.len() as u64;
            last.evicted_scripts = eval.evicted();
        }
        if let Ok(mut functions) = self.functions.try_lock() {
            functions.follow(store);
            last.functions = functions.functions_count() as u64;
            last.libraries = functions.libraries().count() as u64;
            last.vm_functions = functions.used_memory() as u64;
            last.functions_memory = functions.libraries_memory() as u64;
        }
        *last
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
