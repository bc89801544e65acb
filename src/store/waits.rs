//! Which keys of one database blocked clients wait on, and which of those a write has made
//! ready since the server last looked: Redis's `blocking_keys` and `ready_keys`, kept in the
//! store so that whatever creates or replaces a key notes it without knowing who waits. The
//! server (`server/blocking.rs`) keeps the clients themselves and serves them.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};

#[derive(Default)]
pub(super) struct Waits {
    /// How many keys are waited on: while none is, a write pays one atomic load.
    waited_keys: AtomicUsize,
    /// Whether `ready` holds a key: every command looks (`take_ready`) while anyone waits, and
    /// most find nothing, which then costs a load rather than a lock every thread shares.
    any_ready: AtomicBool,
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    /// Each waited key, with how many clients wait on it and whether it is in `ready`.
    waited: HashMap<Box<[u8]>, (usize, bool)>,
    /// Waited keys signalled since `take_ready`, in the order they were, each once.
    ready: Vec<Box<[u8]>>,
}

impl Waits {
    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(super) fn add_waiter(&self, key: &[u8]) {
        let mut inner = self.lock();
        let entry = inner.waited.entry(Box::from(key)).or_insert((0, false));
        entry.0 += 1;
        if entry.0 == 1 {
            self.waited_keys.fetch_add(1, Ordering::Relaxed);
        }
    }

    pub(super) fn remove_waiter(&self, key: &[u8]) {
        let mut inner = self.lock();
        let Some(entry) = inner.waited.get_mut(key) else {
            return;
        };
        entry.0 -= 1;
        if entry.0 == 0 {
            let signalled = entry.1;
            inner.waited.remove(key);
            if signalled {
                inner.ready.retain(|ready| **ready != *key);
            }
            self.waited_keys.fetch_sub(1, Ordering::Relaxed);
        }
    }

    /// Notes that `key` may now serve whoever waits on it, if anyone does.
    pub(super) fn signal(&self, key: &[u8]) {
        if self.waited_keys.load(Ordering::Relaxed) == 0 {
            return;
        }
        let mut inner = self.lock();
        let Some((_, signalled)) = inner.waited.get_mut(key) else {
            return;
        };
        if !std::mem::replace(signalled, true) {
            inner.ready.push(Box::from(key));
            self.any_ready.store(true, Ordering::Release);
        }
    }

    /// Signals every waited key (after the whole keyspace was replaced).
    pub(super) fn signal_all(&self) {
        let mut inner = self.lock();
        let Inner { waited, ready } = &mut *inner;
        for (key, (_, signalled)) in waited.iter_mut() {
            if !std::mem::replace(signalled, true) {
                ready.push(key.clone());
            }
        }
        self.any_ready.store(!ready.is_empty(), Ordering::Release);
    }

    /// A thread sees its own signals here: the command that signalled calls this after it.
    pub(super) fn take_ready(&self) -> Vec<Box<[u8]>> {
        if !self.any_ready.load(Ordering::Acquire) {
            return Vec::new();
        }
        let mut inner = self.lock();
        self.any_ready.store(false, Ordering::Relaxed);
        let ready = std::mem::take(&mut inner.ready);
        for key in &ready {
            if let Some((_, signalled)) = inner.waited.get_mut(key) {
                *signalled = false;
            }
        }
        ready
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_waited_keys_are_signalled_and_each_once() {
        let waits = Waits::default();
        waits.signal(b"k");
        assert!(waits.take_ready().is_empty());
        waits.add_waiter(b"k");
        waits.add_waiter(b"k");
        waits.signal(b"k");
        waits.signal(b"other");
        waits.signal(b"k");
        assert_eq!(waits.take_ready(), vec![Box::from(&b"k"[..])]);
        assert!(waits.take_ready().is_empty());
        waits.remove_waiter(b"k");
        waits.signal(b"k");
        assert_eq!(waits.take_ready().len(), 1);
        waits.remove_waiter(b"k");
        waits.signal(b"k");
        assert!(waits.take_ready().is_empty());
        assert!(waits.lock().waited.is_empty());
    }
}
