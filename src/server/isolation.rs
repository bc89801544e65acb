//! Isolation for transactions: EXEC runs its queued commands while no other connection executes
//! anything, as in Redis.
//!
//! Every batch of requests holds a read lock, and EXEC takes them all for writing. A single
//! read-write lock would put one cache line shared by every core on the path of every batch; so
//! each thread has a lock of its own (a "big reader" lock): a batch touches only its thread's
//! lock, and EXEC, which is rare, pays for taking every one, always in the same order.

#[cfg(feature = "scaling-bench")]
use crate::stripes::lock_waits;
use crate::stripes::{this_thread_stripe, Padded, STRIPES};
use std::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};

pub struct Isolation {
    stripes: Box<[Padded<RwLock<()>>]>,
}

impl Default for Isolation {
    fn default() -> Self {
        Isolation {
            stripes: (0..STRIPES).map(|_| Padded::default()).collect(),
        }
    }
}

impl Isolation {
    /// Held while a batch of ordinary requests executes; never across an await.
    pub fn shared(&self) -> RwLockReadGuard<'_, ()> {
        let stripe = &self.stripes[this_thread_stripe()].0;
        #[cfg(feature = "scaling-bench")]
        if let Some(guard) = lock_waits::uncontended(stripe.try_read(), &lock_waits::ISOLATION) {
            return guard;
        }
        stripe.read().unwrap_or_else(|p| p.into_inner())
    }

    /// `shared`, unless a transaction or a script holds the lock now.
    pub fn try_shared(&self) -> Option<RwLockReadGuard<'_, ()>> {
        self.stripes[this_thread_stripe()].0.try_read().ok()
    }

    /// Returns once every batch that was in progress when it was called has ended, taking each
    /// thread's lock in turn (never all at once, so no thread waits for another's batch). A
    /// batch reads its clock after taking its lock: every batch still running afterwards read
    /// its clock after this was called.
    pub fn wait_for_batches_in_progress(&self) {
        for stripe in self.stripes.iter() {
            drop(stripe.0.write().unwrap_or_else(|p| p.into_inner()));
        }
    }

    /// Held while a transaction executes: waits for every batch in progress to end.
    pub fn exclusive(&self) -> Vec<RwLockWriteGuard<'_, ()>> {
        self.stripes
            .iter()
            .map(|stripe| stripe.0.write().unwrap_or_else(|p| p.into_inner()))
            .collect()
    }
}
