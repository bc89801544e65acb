//! FUNCTION's engine: the function libraries, loaded into their own Lua state (as in Redis,
//! apart from EVAL's), with Redis 7.4's rules for library and function names, duplicates,
//! REPLACE and RESTORE's policies.

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use mlua::Function;

use super::reply_tree::Reply;
use super::runner::CommandRunner;
use super::shebang::{library_metadata, ScriptFlags};
use super::vm::{RunOutcome, Vm, VmKind};
use super::watchdog::{ScriptKind, ScriptWatch};
use super::LuaConfig;

const BAD_NAME: &str = "Library names can only contain letters, numbers, or underscores(_) and must be at least one character long";

/// One registered function.
pub struct FunctionEntry {
    name: Vec<u8>,
    description: Option<Vec<u8>>,
    flags: ScriptFlags,
    callback: Function,
}

impl FunctionEntry {
    pub fn name(&self) -> &[u8] {
        &self.name
    }

    pub fn description(&self) -> Option<&[u8]> {
        self.description.as_deref()
    }

    pub fn flags(&self) -> ScriptFlags {
        self.flags
    }
}

/// One loaded library.
pub struct Library {
    name: Vec<u8>,
    code: Vec<u8>,
    functions: BTreeMap<Vec<u8>, FunctionEntry>,
}

impl Library {
    pub fn name(&self) -> &[u8] {
        &self.name
    }

    /// The engine's name as FUNCTION LIST reports it.
    pub fn engine(&self) -> &'static str {
        "LUA"
    }

    /// The code as FUNCTION LOAD was given it, shebang included (FUNCTION LIST WITHCODE, DUMP).
    pub fn code(&self) -> &[u8] {
        &self.code
    }

    pub fn functions(&self) -> impl Iterator<Item = &FunctionEntry> {
        self.functions.values()
    }
}

/// FUNCTION RESTORE's policies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RestorePolicy {
    Flush,
    Append,
    Replace,
}

pub struct FunctionEngine {
    vm: Vm,
    watch: ScriptWatch,
    libraries: BTreeMap<Vec<u8>, Library>,
    /// function name -> its library's name.
    functions: HashMap<Vec<u8>, Vec<u8>>,
}

/// The name a library's code declares (`#!lua name=<name>`), if it declares one: what the log's
/// and an RDB's libraries are known by before they are compiled.
pub fn library_name(code: &[u8]) -> Option<Vec<u8>> {
    library_metadata(code).ok().map(|md| md.name)
}

fn valid_name(name: &[u8]) -> bool {
    !name.is_empty() && name.iter().all(|b| b.is_ascii_alphanumeric() || *b == b'_')
}

impl FunctionEngine {
    pub fn new(config: LuaConfig) -> FunctionEngine {
        let watch = ScriptWatch::default();
        FunctionEngine {
            vm: Vm::new(VmKind::Functions, watch.clone(), config.memory_limit)
                .expect("a fresh Lua state builds"),
            watch,
            libraries: BTreeMap::new(),
            functions: HashMap::new(),
        }
    }

    pub fn watch(&self) -> ScriptWatch {
        self.watch.clone()
    }

    /// Compiles a library and runs its code, without linking it.
    fn compile(&mut self, code: &[u8], timeout: Option<Duration>) -> Result<Library, Reply> {
        let md = library_metadata(code).map_err(|e| Reply::err_msg(&e))?;
        if !valid_name(&md.name) {
            return Err(Reply::err_msg(BAD_NAME));
        }
        if !md.engine.eq_ignore_ascii_case(b"lua") {
            return Err(Reply::err_msg(&format!(
                "Engine '{}' not found",
                String::from_utf8_lossy(&md.engine)
            )));
        }
        let registered = self
            .vm
            .load_library(md.code, timeout)
            .map_err(|e| Reply::err_msg(&e))?;
        if registered.is_empty() {
            return Err(Reply::err_msg("No functions registered"));
        }
        let functions = registered
            .into_iter()
            .map(|f| {
                let entry = FunctionEntry {
                    name: f.name,
                    description: f.description,
                    flags: f.flags,
                    callback: f.callback,
                };
                (entry.name.clone(), entry)
            })
            .collect();
        Ok(Library {
            name: md.name,
            code: code.to_vec(),
            functions,
        })
    }

    /// FUNCTION LOAD [REPLACE]: the library's name, or Redis's error. `timeout` is the limit on
    /// running the library's code ([`super::FUNCTION_LOAD_TIMEOUT`]; `None` for a master's or
    /// the log's FUNCTION LOAD, which Redis never stops).
    pub fn load(
        &mut self,
        code: &[u8],
        replace: bool,
        timeout: Option<Duration>,
    ) -> Result<Vec<u8>, Reply> {
        if let Ok(md) = library_metadata(code) {
            if valid_name(&md.name)
                && md.engine.eq_ignore_ascii_case(b"lua")
                && self.libraries.contains_key(&md.name)
                && !replace
            {
                return Err(Reply::err_msg(&format!(
                    "Library '{}' already exists",
                    String::from_utf8_lossy(&md.name)
                )));
            }
        }
        let library = self.compile(code, timeout)?;
        let replaced = library.name.clone();
        for name in library.functions.keys() {
            match self.functions.get(name) {
                Some(owner) if *owner != replaced => {
                    return Err(Reply::err_msg(&format!(
                        "Function {} already exists",
                        String::from_utf8_lossy(name)
                    )))
                }
                _ => {}
            }
        }
        self.unlink(&replaced);
        let name = library.name.clone();
        self.link(library);
        Ok(name)
    }

    fn unlink(&mut self, name: &[u8]) -> Option<Library> {
        let library = self.libraries.remove(name)?;
        for f in library.functions.keys() {
            self.functions.remove(f);
        }
        Some(library)
    }

    fn link(&mut self, library: Library) {
        for f in library.functions.keys() {
            self.functions.insert(f.clone(), library.name.clone());
        }
        self.libraries.insert(library.name.clone(), library);
    }

    /// FUNCTION DELETE.
    pub fn delete(&mut self, name: &[u8]) -> Result<(), Reply> {
        match self.unlink(name) {
            Some(_) => Ok(()),
            None => Err(Reply::err_msg("Library not found")),
        }
    }

    /// FUNCTION FLUSH.
    pub fn flush(&mut self) {
        self.libraries.clear();
        self.functions.clear();
        let _ = self.vm.lua.gc_collect();
    }

    /// The libraries, by name (FUNCTION LIST, DUMP).
    pub fn libraries(&self) -> impl Iterator<Item = &Library> {
        self.libraries.values()
    }

    pub fn library(&self, name: &[u8]) -> Option<&Library> {
        self.libraries.get(name)
    }

    /// A function by name and its library (FCALL's checks before the run).
    pub fn function(&self, name: &[u8]) -> Option<(&Library, &FunctionEntry)> {
        let library = self.libraries.get(self.functions.get(name)?)?;
        Some((library, library.functions.get(name)?))
    }

    pub fn functions_count(&self) -> usize {
        self.functions.len()
    }

    /// FCALL: `ERR Function not found` when there is none by that name.
    pub fn call(
        &mut self,
        name: &[u8],
        keys: &[&[u8]],
        args: &[&[u8]],
        runner: &mut dyn CommandRunner,
        busy_threshold: Option<Duration>,
    ) -> RunOutcome {
        let Some((_, entry)) = self.function(name) else {
            return RunOutcome {
                reply: Reply::err_msg("Function not found"),
                error_already_counted: false,
            };
        };
        let callback = entry.callback.clone();
        let fname = String::from_utf8_lossy(name).into_owned();
        self.vm.run(
            &callback,
            ScriptKind::Function,
            &fname,
            keys,
            args,
            runner,
            busy_threshold,
        )
    }

    /// FUNCTION RESTORE of the libraries' codes (as DUMP saved them), all or nothing.
    pub fn restore(&mut self, codes: &[&[u8]], policy: RestorePolicy) -> Result<(), Reply> {
        let mut staged: BTreeMap<Vec<u8>, Library> = BTreeMap::new();
        let mut staged_functions: HashMap<Vec<u8>, Vec<u8>> = HashMap::new();
        for code in codes {
            let library = self.compile(code, None)?;
            if staged.contains_key(&library.name) {
                return Err(Reply::err_msg(&format!(
                    "Library {} already exists",
                    String::from_utf8_lossy(&library.name)
                )));
            }
            for f in library.functions.keys() {
                if staged_functions
                    .insert(f.clone(), library.name.clone())
                    .is_some()
                {
                    return Err(Reply::err_msg(&format!(
                        "Function {} already exists",
                        String::from_utf8_lossy(f)
                    )));
                }
            }
            staged.insert(library.name.clone(), library);
        }
        match policy {
            RestorePolicy::Flush => {
                self.libraries.clear();
                self.functions.clear();
            }
            RestorePolicy::Append | RestorePolicy::Replace => {
                for (name, library) in &staged {
                    if self.libraries.contains_key(name) && policy == RestorePolicy::Append {
                        return Err(Reply::err_msg(&format!(
                            "Library {} already exists",
                            String::from_utf8_lossy(name)
                        )));
                    }
                    for f in library.functions.keys() {
                        match self.functions.get(f) {
                            Some(owner) if owner != name => {
                                return Err(Reply::err_msg(&format!(
                                    "Function {} already exists",
                                    String::from_utf8_lossy(f)
                                )))
                            }
                            _ => {}
                        }
                    }
                }
                for name in staged.keys() {
                    self.unlink(name);
                }
            }
        }
        for (_, library) in staged {
            self.link(library);
        }
        Ok(())
    }

    /// The libraries' own bytes: names, code, functions and descriptions (INFO
    /// used_memory_functions).
    pub fn libraries_memory(&self) -> usize {
        let entry = std::mem::size_of::<FunctionEntry>() + std::mem::size_of::<Vec<u8>>();
        self.libraries
            .values()
            .map(|library| {
                std::mem::size_of::<Library>()
                    + library.name.len()
                    + library.code.len()
                    + library
                        .functions
                        .values()
                        .map(|f| {
                            entry + 2 * f.name.len() + f.description.as_ref().map_or(0, Vec::len)
                        })
                        .sum::<usize>()
            })
            .sum()
    }

    /// The Lua heap's bytes (INFO used_memory_vm_functions).
    pub fn used_memory(&self) -> usize {
        self.vm.used_memory()
    }
}
