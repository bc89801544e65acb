//! Isolation for transactions: EXEC runs its queued commands while no other connection executes
//! anything, as in Redis.
//!
//! Every batch of requests holds a read lock, and EXEC takes them all for writing. A single
//! read-write lock would put one cache line shared by every core on the path of every batch; so
//! each thread has a lock of its own (a "big reader" lock): a batch touches only its thread's
//! lock, and EXEC, which is rare, pays for taking every one.

use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};

const SLOTS: usize = 64;

/// Keeps each slot on a cache line of its own.
#[repr(align(128))]
#[derive(Default)]
struct Slot(RwLock<()>);

pub struct Isolation {
    slots: Box<[Slot]>,
}

impl Default for Isolation {
    fn default() -> Self {
        Isolation {
            slots: (0..SLOTS).map(|_| Slot::default()).collect(),
        }
    }
}

fn this_thread_slot() -> usize {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    thread_local! {
        static SLOT: Cell<Option<usize>> = const { Cell::new(None) };
    }
    SLOT.with(|slot| {
        *slot.get().get_or_insert_with(|| {
            let assigned = NEXT.fetch_add(1, Ordering::Relaxed) % SLOTS;
            slot.set(Some(assigned));
            assigned
        })
    })
}

impl Isolation {
    /// Held while a batch of ordinary requests executes; never across an await.
    pub fn shared(&self) -> RwLockReadGuard<'_, ()> {
        let slot = &self.slots[this_thread_slot()].0;
        slot.read().unwrap_or_else(|p| p.into_inner())
    }

    /// Held while a transaction executes: waits for every batch in progress to end.
    pub fn exclusive(&self) -> Vec<RwLockWriteGuard<'_, ()>> {
        self.slots
            .iter()
            .map(|slot| slot.0.write().unwrap_or_else(|p| p.into_inner()))
            .collect()
    }
}
