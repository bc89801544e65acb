//! FUNCTION's libraries as data: each library's code by its name, kept with the keyspace so
//! that they are saved, logged, replicated and loaded with it, as Redis treats functions. The
//! Lua engine that runs them (`lua::FunctionEngine`) is rebuilt from this when it changes under
//! it (a replayed log, a replica's full sync): `generation` tells the engine's owner whether it
//! is still in step.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};

/// Generations are unique across every library table of the process, so that a table swapped
/// in (a full sync) never looks like the one its engine was built from. 0 is an empty table
/// that never changed.
static GENERATIONS: AtomicU64 = AtomicU64::new(1);

fn next_generation() -> u64 {
    GENERATIONS.fetch_add(1, Ordering::Relaxed)
}

/// A library's name and code.
pub type LibraryCode = (Vec<u8>, Vec<u8>);

#[derive(Default)]
struct Libraries {
    generation: u64,
    codes: BTreeMap<Vec<u8>, Vec<u8>>,
}

/// The function libraries of a data set: name -> the code FUNCTION LOAD was given.
#[derive(Default)]
pub struct FunctionLibraries {
    inner: Mutex<Libraries>,
}

impl FunctionLibraries {
    fn lock(&self) -> MutexGuard<'_, Libraries> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Changes with every change to the table (and differs between tables).
    pub fn generation(&self) -> u64 {
        self.lock().generation
    }

    /// Every library, by name, with the table's generation.
    pub fn codes(&self) -> (u64, Vec<LibraryCode>) {
        let libraries = self.lock();
        let codes = libraries
            .codes
            .iter()
            .map(|(name, code)| (name.clone(), code.clone()))
            .collect();
        (libraries.generation, codes)
    }

    pub fn len(&self) -> usize {
        self.lock().codes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Adds or replaces library `name`; the new generation.
    pub fn insert(&self, name: &[u8], code: &[u8]) -> u64 {
        let mut libraries = self.lock();
        libraries.codes.insert(name.to_vec(), code.to_vec());
        libraries.generation = next_generation();
        libraries.generation
    }

    /// Removes library `name` if there is one; the new generation.
    pub fn remove(&self, name: &[u8]) -> u64 {
        let mut libraries = self.lock();
        libraries.codes.remove(name);
        libraries.generation = next_generation();
        libraries.generation
    }

    /// Removes every library; the new generation.
    pub fn clear(&self) -> u64 {
        let mut libraries = self.lock();
        libraries.codes.clear();
        libraries.generation = next_generation();
        libraries.generation
    }

    pub(super) fn swap(&self, other: &FunctionLibraries) {
        if std::ptr::eq(self, other) {
            return;
        }
        std::mem::swap(&mut *self.lock(), &mut *other.lock());
    }

    pub(super) fn copy(&self) -> FunctionLibraries {
        let libraries = self.lock();
        FunctionLibraries {
            inner: Mutex::new(Libraries {
                generation: libraries.generation,
                codes: libraries.codes.clone(),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_change_and_every_swap_moves_the_generation() {
        let (a, b) = (FunctionLibraries::default(), FunctionLibraries::default());
        assert_eq!(a.generation(), 0);
        let first = a.insert(b"lib", b"#!lua name=lib");
        assert_ne!(first, 0);
        let second = a.insert(b"lib", b"#!lua name=lib\n");
        assert_ne!(first, second);
        a.swap(&b);
        assert_eq!((a.generation(), a.len()), (0, 0));
        assert_eq!(
            b.codes().1,
            vec![(b"lib".to_vec(), b"#!lua name=lib\n".to_vec())]
        );
        assert_ne!(b.remove(b"lib"), second);
        assert!(b.is_empty());
    }
}
