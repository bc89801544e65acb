//! EVAL's engine: one Lua state for every EVAL script, as in Redis, and the cache of compiled
//! scripts by SHA1 that EVALSHA, SCRIPT LOAD and SCRIPT EXISTS use.
//!
//! The cache is Redis 7.4's: not kept across restarts; scripts that EVAL compiled are evicted
//! oldest-used first once 500 of them are cached, so that generated scripts cannot grow memory
//! without bound; scripts SCRIPT LOAD compiled stay until SCRIPT FLUSH.

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use mlua::Function;

use super::reply_tree::Reply;
use super::runner::CommandRunner;
use super::sha1::sha1_hex;
use super::shebang::{eval_flags, ScriptFlags};
use super::vm::{RunOutcome, Vm, VmKind};
use super::watchdog::{ScriptKind, ScriptWatch};
use super::LuaConfig;

/// A script's SHA1 as 40 lowercase hex digits.
pub type Sha1Hex = [u8; 40];

/// Redis's `LRU_LIST_LENGTH`: how many EVAL-compiled scripts the cache keeps.
pub const EVAL_SCRIPTS_KEPT: usize = 500;

/// Who compiles a script: it decides whether the cache may evict it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CompiledBy {
    Eval,
    ScriptLoad,
}

struct CachedScript {
    function: Function,
    flags: ScriptFlags,
    body_len: usize,
    /// The script's place in the eviction order; `None` for SCRIPT LOAD's.
    lru_tick: Option<u64>,
}

pub struct EvalEngine {
    vm: Vm,
    config: LuaConfig,
    watch: ScriptWatch,
    scripts: HashMap<Sha1Hex, CachedScript>,
    /// EVAL-compiled scripts by last use, oldest first.
    lru: BTreeMap<u64, Sha1Hex>,
    next_tick: u64,
    evicted: u64,
    bodies_bytes: usize,
}

/// The NOSCRIPT error.
pub const NOSCRIPT: &str = "NOSCRIPT No matching script. Please use EVAL.";

fn lowercase_sha(sha: &[u8]) -> Option<Sha1Hex> {
    let mut out: Sha1Hex = sha.try_into().ok()?;
    out.make_ascii_lowercase();
    Some(out)
}

impl EvalEngine {
    pub fn new(config: LuaConfig) -> EvalEngine {
        let watch = ScriptWatch::default();
        EvalEngine {
            vm: Vm::new(VmKind::Eval, watch.clone(), config.memory_limit)
                .expect("a fresh Lua state builds"),
            config,
            watch,
            scripts: HashMap::new(),
            lru: BTreeMap::new(),
            next_tick: 0,
            evicted: 0,
            bodies_bytes: 0,
        }
    }

    /// The handle for KILL and the BUSY check (the same for the engine's whole life).
    pub fn watch(&self) -> ScriptWatch {
        self.watch.clone()
    }

    /// Compiles `body` (or finds it compiled) and answers its SHA1. Errors are Redis's replies:
    /// a bad shebang, or `ERR Error compiling script (new function): user_script:1: ...`.
    pub fn load(&mut self, body: &[u8], by: CompiledBy) -> Result<Sha1Hex, Reply> {
        let sha = sha1_hex(body);
        if self.scripts.contains_key(&sha) {
            return Ok(sha);
        }
        let (flags, shebang_len) = eval_flags(body).map_err(|e| Reply::err_msg(&e))?;
        let function = self
            .vm
            .compile(&body[shebang_len..], "@user_script")
            .map_err(|e| Reply::err_msg(&format!("Error compiling script (new function): {e}")))?;
        let lru_tick = (by == CompiledBy::Eval).then(|| {
            while self.lru.len() >= EVAL_SCRIPTS_KEPT {
                let Some((_, oldest)) = self.lru.pop_first() else {
                    break;
                };
                if let Some(gone) = self.scripts.remove(&oldest) {
                    self.bodies_bytes -= gone.body_len;
                }
                self.evicted += 1;
            }
            self.tick(sha)
        });
        self.bodies_bytes += body.len();
        self.scripts.insert(
            sha,
            CachedScript {
                function,
                flags,
                body_len: body.len(),
                lru_tick,
            },
        );
        Ok(sha)
    }

    fn tick(&mut self, sha: Sha1Hex) -> u64 {
        let tick = self.next_tick;
        self.next_tick += 1;
        self.lru.insert(tick, sha);
        tick
    }

    /// The flags of a cached script (the SHA1 in any case).
    pub fn flags(&self, sha: &[u8]) -> Option<ScriptFlags> {
        self.scripts.get(&lowercase_sha(sha)?).map(|s| s.flags)
    }

    /// The flags EVAL of `body` would run with, without compiling it (Redis's
    /// `evalGetCommandFlags`, for the checks made before the command runs): the cached
    /// script's, else its shebang's; `None` for a shebang that does not parse.
    pub fn body_flags(&self, body: &[u8]) -> Option<ScriptFlags> {
        match self.scripts.get(&sha1_hex(body)) {
            Some(s) => Some(s.flags),
            None => eval_flags(body).ok().map(|(flags, _)| flags),
        }
    }

    /// SCRIPT EXISTS for one SHA1 (in any case).
    pub fn exists(&self, sha: &[u8]) -> bool {
        self.flags(sha).is_some()
    }

    /// Runs a cached script; NOSCRIPT when there is none by that SHA1. `busy_threshold` is
    /// busy-reply-threshold (`None` for 0: no hook, no kill).
    pub fn run(
        &mut self,
        sha: &[u8],
        keys: &[&[u8]],
        args: &[&[u8]],
        runner: &mut dyn CommandRunner,
        busy_threshold: Option<Duration>,
    ) -> RunOutcome {
        let Some(sha) = lowercase_sha(sha) else {
            return noscript();
        };
        let Some(script) = self.scripts.get(&sha) else {
            return noscript();
        };
        let function = script.function.clone();
        let name = String::from_utf8_lossy(&sha).into_owned();
        let outcome = self.vm.run(
            &function,
            ScriptKind::Eval,
            &name,
            keys,
            args,
            runner,
            busy_threshold,
        );
        if let Some(old) = self.scripts.get(&sha).and_then(|s| s.lru_tick) {
            self.lru.remove(&old);
            let tick = self.tick(sha);
            if let Some(s) = self.scripts.get_mut(&sha) {
                s.lru_tick = Some(tick);
            }
        }
        outcome
    }

    /// EVAL: compile if needed, then run.
    pub fn eval(
        &mut self,
        body: &[u8],
        keys: &[&[u8]],
        args: &[&[u8]],
        runner: &mut dyn CommandRunner,
        busy_threshold: Option<Duration>,
    ) -> RunOutcome {
        match self.load(body, CompiledBy::Eval) {
            Ok(sha) => self.run(&sha, keys, args, runner, busy_threshold),
            Err(reply) => RunOutcome {
                reply,
                error_already_counted: false,
            },
        }
    }

    /// SCRIPT FLUSH: a new Lua state and an empty cache (the `math.random` sequence goes on).
    pub fn flush(&mut self) {
        let vm = Vm::new(VmKind::Eval, self.watch.clone(), self.config.memory_limit)
            .expect("a fresh Lua state builds");
        vm.carry_random_state(&self.vm);
        self.vm = vm;
        self.scripts.clear();
        self.lru.clear();
        self.bodies_bytes = 0;
    }

    /// How many scripts are cached (INFO number_of_cached_scripts).
    pub fn len(&self) -> usize {
        self.scripts.len()
    }

    pub fn is_empty(&self) -> bool {
        self.scripts.is_empty()
    }

    /// Scripts evicted from the cache so far (INFO evicted_scripts).
    pub fn evicted(&self) -> u64 {
        self.evicted
    }

    /// The Lua heap's bytes (INFO used_memory_lua / used_memory_vm_eval).
    pub fn used_memory(&self) -> usize {
        self.vm.used_memory()
    }

    /// The cache's own bytes: bodies and SHA1s (INFO used_memory_scripts_eval).
    pub fn scripts_memory(&self) -> usize {
        self.bodies_bytes + self.scripts.len() * (40 + std::mem::size_of::<CachedScript>())
    }
}

fn noscript() -> RunOutcome {
    RunOutcome {
        reply: Reply::error(NOSCRIPT),
        error_already_counted: false,
    }
}
