//! When each key was last used, and how often: the 24 bits Redis keeps in every object's `lru`
//! field, kept the same way so that OBJECT IDLETIME and OBJECT FREQ answer as Redis does and
//! eviction picks the same keys.
//!
//! Under an LRU (or any non-LFU) policy the bits are the access clock at the last access: Unix
//! seconds, wrapping in 24 bits (about 194 days). Under an LFU policy they are two fields: the
//! minute of the last decrement in the high 16 bits, and a logarithmic access counter in the low
//! 8: each access increments it with a probability that falls as it grows (`lfu-log-factor`),
//! and it loses one for every `lfu-decay-time` minutes without access. A new key starts at 5, so
//! that it is not the first to go before it had a chance to be used.
//!
//! Like Redis, the clock is read from a cached value that the server ticks ten times a second,
//! rather than from the system on every access: an access costs one load, and a store only when
//! the bits change (once a second per key under LRU), so readers of one hot key do not fight
//! over its cache line.

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};

/// The LRU clock's range: 24 bits of seconds.
pub const LRU_CLOCK_MAX: u32 = (1 << 24) - 1;
/// Where a new key's LFU counter starts.
pub const LFU_INIT_VAL: u32 = 5;

/// The policy-wide side of access tracking: the cached clock and the LFU settings, shared by
/// every database of a store.
#[derive(Debug)]
pub struct Tracking {
    /// Unix seconds at the last tick.
    clock_secs: AtomicU64,
    lfu: AtomicBool,
    log_factor: AtomicU32,
    /// Minutes per decrement of an idle key's counter; 0 never decrements.
    decay_minutes: AtomicU32,
}

impl Tracking {
    pub fn new(now_ms: u64) -> Tracking {
        Tracking {
            clock_secs: AtomicU64::new(now_ms / 1000),
            lfu: AtomicBool::new(false),
            log_factor: AtomicU32::new(10),
            decay_minutes: AtomicU32::new(1),
        }
    }

    /// Moves the clock to `now_ms`.
    pub fn tick(&self, now_ms: u64) {
        self.clock_secs.store(now_ms / 1000, Ordering::Relaxed);
    }

    /// Switches between LRU bits and LFU counters, as `maxmemory-policy` says; keys keep their
    /// bits, read the new way, until accessed (as in Redis, where "LRU and LFU data will take
    /// some time to adjust").
    pub fn configure(&self, lfu: bool, log_factor: u32, decay_minutes: u32) {
        self.lfu.store(lfu, Ordering::Relaxed);
        self.log_factor.store(log_factor, Ordering::Relaxed);
        self.decay_minutes.store(decay_minutes, Ordering::Relaxed);
    }

    pub fn is_lfu(&self) -> bool {
        self.lfu.load(Ordering::Relaxed)
    }

    /// Redis's `lru_clock`: seconds, in 24 bits.
    pub fn lru_clock(&self) -> u32 {
        (self.clock_secs.load(Ordering::Relaxed) & u64::from(LRU_CLOCK_MAX)) as u32
    }

    /// Minutes, in 16 bits: the LFU field's time.
    fn minutes(&self) -> u32 {
        ((self.clock_secs.load(Ordering::Relaxed) / 60) & 0xFFFF) as u32
    }

    /// The bits of a key just created.
    pub(super) fn fresh(&self) -> u32 {
        if self.is_lfu() {
            self.minutes() << 8 | LFU_INIT_VAL
        } else {
            self.lru_clock()
        }
    }

    /// The bits of a key with `bits` just accessed.
    pub(super) fn accessed(&self, bits: u32) -> u32 {
        if self.is_lfu() {
            let counter = log_increment(
                self.frequency(bits),
                self.log_factor.load(Ordering::Relaxed),
            );
            self.minutes() << 8 | counter
        } else {
            self.lru_clock()
        }
    }

    /// The bits RESTORE's IDLETIME or FREQ give a key, as Redis's `objectSetLRUOrLFU`: FREQ
    /// counts under an LFU policy and IDLETIME under any other; the other is ignored (None).
    pub fn restored(&self, idle_secs: Option<u64>, frequency: Option<u8>) -> Option<u32> {
        match (self.is_lfu(), idle_secs, frequency) {
            (true, _, Some(frequency)) => Some(self.minutes() << 8 | u32::from(frequency)),
            (false, Some(idle), _) => {
                let idle = idle.min(u64::from(LRU_CLOCK_MAX)) as u32;
                let clock = self.lru_clock();
                // Before the clock's last wrap, as `idle_secs` reads a stamp ahead of the clock.
                Some(match clock.checked_sub(idle) {
                    Some(stamp) => stamp,
                    None => clock + LRU_CLOCK_MAX - idle,
                })
            }
            _ => None,
        }
    }

    /// Seconds since the access that left `bits`, read as LRU bits (OBJECT IDLETIME).
    pub fn idle_secs(&self, bits: u32) -> u64 {
        let clock = self.lru_clock();
        let stamp = bits & LRU_CLOCK_MAX;
        // The clock wraps; a stamp ahead of it was taken before the wrap, as Redis reads it.
        u64::from(if clock >= stamp {
            clock - stamp
        } else {
            clock + (LRU_CLOCK_MAX - stamp)
        })
    }

    /// The counter `bits` hold, read as LFU bits, less what the time since their last
    /// decrement takes off (OBJECT FREQ; Redis's `LFUDecrAndReturn`).
    pub fn frequency(&self, bits: u32) -> u32 {
        let counter = bits & 0xFF;
        let decay = self.decay_minutes.load(Ordering::Relaxed);
        if decay == 0 {
            return counter;
        }
        let (now, then) = (self.minutes(), bits >> 8 & 0xFFFF);
        let elapsed = if now >= then {
            now - then
        } else {
            0xFFFF - then + now
        };
        counter.saturating_sub(elapsed / decay)
    }
}

/// Redis's `LFULogIncr`: one more with a chance of 1 / ((counter - 5) * factor + 1), so that
/// the counter grows with the logarithm of the accesses; 255 at most.
fn log_increment(counter: u32, factor: u32) -> u32 {
    if counter >= 255 {
        return 255;
    }
    let base = counter.saturating_sub(LFU_INIT_VAL);
    let chance = 1.0 / (f64::from(base) * f64::from(factor) + 1.0);
    if unit_random() < chance {
        counter + 1
    } else {
        counter
    }
}

/// A number in [0, 1) from a per-thread xorshift generator: cheap, and enough for a counter's
/// coin flips.
fn unit_random() -> f64 {
    thread_local! {
        static STATE: Cell<u64> = Cell::new(seed());
    }
    STATE.with(|state| {
        let mut x = state.get();
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        state.set(x);
        (x >> 11) as f64 / (1u64 << 53) as f64
    })
}

/// A different nonzero seed per thread.
fn seed() -> u64 {
    use std::hash::BuildHasher;
    std::collections::hash_map::RandomState::new().hash_one(0u64) | 1
}

/// A key's bits, as its entry keeps them.
#[derive(Debug)]
pub(super) struct AccessBits(AtomicU32);

impl AccessBits {
    pub(super) fn new(bits: u32) -> AccessBits {
        AccessBits(AtomicU32::new(bits))
    }

    pub(super) fn get(&self) -> u32 {
        self.0.load(Ordering::Relaxed)
    }

    pub(super) fn set(&self, bits: u32) {
        self.0.store(bits, Ordering::Relaxed);
    }

    /// Records an access. Racing accesses may each start from the same bits and one's
    /// increment be lost, which the counter's approximation absorbs (Redis does not lock
    /// either).
    pub(super) fn touch(&self, tracking: &Tracking) {
        let old = self.get();
        let new = tracking.accessed(old);
        if new != old {
            self.0.store(new, Ordering::Relaxed);
        }
    }

    /// Records `times` accesses, as that many commands one after another would.
    pub(super) fn touch_times(&self, tracking: &Tracking, times: usize) {
        for _ in 0..times {
            self.touch(tracking);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MINUTE: u64 = 60_000;

    #[test]
    fn idle_time_counts_seconds_since_the_last_access_across_the_wrap() {
        let tracking = Tracking::new(1_000_000);
        let bits = AccessBits::new(tracking.fresh());
        tracking.tick(1_000_000 + 42_500);
        assert_eq!(tracking.idle_secs(bits.get()), 42);
        bits.touch(&tracking);
        assert_eq!(tracking.idle_secs(bits.get()), 0);
        // Just before the 24-bit clock wraps, and 10 s after.
        let wrap_ms = u64::from(LRU_CLOCK_MAX + 1) * 1000;
        tracking.tick(wrap_ms - 5_000);
        let old = AccessBits::new(tracking.fresh());
        tracking.tick(wrap_ms + 5_000);
        assert_eq!(tracking.idle_secs(old.get()), 9);
    }

    #[test]
    fn the_counter_grows_with_the_logarithm_of_accesses() {
        let tracking = Tracking::new(0);
        tracking.configure(true, 10, 1);
        let bits = AccessBits::new(tracking.fresh());
        assert_eq!(tracking.frequency(bits.get()), LFU_INIT_VAL);
        let mut after = Vec::new();
        for accesses in [100u32, 1_000, 100_000] {
            let bits = AccessBits::new(tracking.fresh());
            (0..accesses).for_each(|_| bits.touch(&tracking));
            after.push(tracking.frequency(bits.get()));
        }
        // Redis's table for factor 10: about 10 after 100 hits, 18 after 1000, 142 after 100k.
        // The increments are random: in 20,000 simulated runs the counters ranged over 6..15,
        // 13..30 and 122..169 (2,000 runs); the bounds are wider still.
        assert!((6..=18).contains(&after[0]), "{after:?}");
        assert!((11..=35).contains(&after[1]), "{after:?}");
        assert!((110..=185).contains(&after[2]), "{after:?}");
        // Factor 0 counts every access.
        tracking.configure(true, 0, 1);
        let bits = AccessBits::new(tracking.fresh());
        (0..300).for_each(|_| bits.touch(&tracking));
        assert_eq!(tracking.frequency(bits.get()), 255);
    }

    #[test]
    fn an_idle_counter_decays_by_one_per_decay_period() {
        let tracking = Tracking::new(0);
        tracking.configure(true, 0, 2);
        let bits = AccessBits::new(tracking.fresh());
        (0..15).for_each(|_| bits.touch(&tracking));
        assert_eq!(tracking.frequency(bits.get()), 20);
        tracking.tick(7 * MINUTE);
        assert_eq!(tracking.frequency(bits.get()), 17);
        // An access counts from the decayed value and restarts the period.
        bits.touch(&tracking);
        assert_eq!(tracking.frequency(bits.get()), 18);
        tracking.tick(1000 * MINUTE);
        assert_eq!(tracking.frequency(bits.get()), 0);
        tracking.configure(true, 0, 0);
        assert_eq!(tracking.frequency(bits.get()), 18, "decay 0 never decays");
    }
}
