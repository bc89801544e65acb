//! The clock that times every command for INFO commandstats, the latency histogram and SLOWLOG.
//!
//! It is read once per command, so it is on every request's path. `Instant::now` goes through
//! the vDSO's `clock_gettime`, which on x86-64 fences the time-stamp counter read (LFENCE) so
//! that it orders with the loads before it: the next request cannot start while the last one's
//! cache misses are outstanding. Profiling pipelined BF.EXISTS put the clock at 7% of the
//! server's CPU; reading the counter directly, unfenced, took 435 to 395 ns per request
//! (`benches/cpu_per_request.sh`). A command's time is counted in microseconds, so an
//! unordered read, off by a few dozen cycles, changes nothing anyone can see.
//!
//! The counter is used only while Linux itself keeps time with it (the `tsc` clock source):
//! there the kernel has checked that it runs at a constant rate, through sleep states, and in step
//! on every CPU, so a connection's thread may move between CPUs between two reads. The kernel's
//! watchdog may later find the counter unstable (a virtual machine migrated to another host) and
//! switch to another source; the server checks once a second (`check_source`) and from then on
//! times with `Instant`. Elsewhere, and on other architectures, the clock is `Instant`.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// A reading of the command clock, in ticks that only `CommandClock::micros` interprets: the
/// counter's, or nanoseconds since the clock's origin with `FROM_INSTANT` set.
#[derive(Clone, Copy)]
pub(crate) struct Tick(u64);

/// Marks a tick read from `Instant`; the counter starts near 0 at boot and would take a century
/// to reach it.
const FROM_INSTANT: u64 = 1 << 63;

/// Below this rate (100 MHz) a measured counter rate is taken for a failed measurement.
const MIN_TICKS_PER_MICRO: u64 = 100;

pub(crate) struct CommandClock {
    /// The counter's rate, if it is used at all.
    ticks_per_micro: Option<u64>,
    /// Whether it is still used (`check_source`).
    counting: AtomicBool,
    origin: Instant,
}

impl CommandClock {
    /// The counter if the kernel keeps time with it, measured against `Instant` once per process.
    pub(crate) fn new() -> CommandClock {
        static COUNTER_RATE: OnceLock<Option<u64>> = OnceLock::new();
        let rate = *COUNTER_RATE.get_or_init(|| {
            kernel_times_with_counter()
                .then(|| counter_ticks_per_micro(Duration::from_millis(2)))
                .filter(|&rate| rate >= MIN_TICKS_PER_MICRO)
        });
        CommandClock::with_rate(rate)
    }

    fn with_rate(ticks_per_micro: Option<u64>) -> CommandClock {
        CommandClock {
            ticks_per_micro,
            counting: AtomicBool::new(ticks_per_micro.is_some()),
            origin: Instant::now(),
        }
    }

    #[inline]
    pub(crate) fn now(&self) -> Tick {
        match self.counting.load(Ordering::Relaxed) {
            true => Tick(read_counter() & !FROM_INSTANT),
            false => Tick(self.origin.elapsed().as_nanos() as u64 | FROM_INSTANT),
        }
    }

    /// Whole microseconds from `from` to `to`; 0 if `to` is not later, or if the clock changed
    /// source between them.
    #[inline]
    pub(crate) fn micros(&self, from: Tick, to: Tick) -> u64 {
        self.elapsed_micros(from, to).unwrap_or(0)
    }

    /// `micros`, but None when the clock changed source between the two readings.
    #[inline]
    fn elapsed_micros(&self, from: Tick, to: Tick) -> Option<u64> {
        if (from.0 ^ to.0) & FROM_INSTANT != 0 {
            return None;
        }
        let ticks = to.0.saturating_sub(from.0);
        Some(match (to.0 & FROM_INSTANT != 0, self.ticks_per_micro) {
            (false, Some(ticks_per_micro)) => ticks / ticks_per_micro,
            _ => ticks / 1000,
        })
    }

    /// Stops using the counter if Linux no longer keeps time with it.
    pub(crate) fn check_source(&self) {
        if self.counting.load(Ordering::Relaxed) && !kernel_times_with_counter() {
            tracing::warn!(
                "the clock source is no longer tsc: commands are timed with the system clock"
            );
            self.counting.store(false, Ordering::Relaxed);
        }
    }
}

/// How long the system clock's reading serves `CommandTime`: past it, the clock is read again.
const WALL_READ_EVERY_MICROS: u64 = 1_000;

/// The Unix time of each command of a batch, in milliseconds, as commands see it (`Ctx::now`):
/// the time at which that command starts, not the batch, so that a command after a long one
/// (a 300,000-URL FQ.PUSH) judges leases, delays and expiry against its own time. The command
/// clock is read at each command's start anyway (`Batch`'s lap); the system clock, which costs
/// as much again, is read only once a millisecond has passed since its last reading (or the
/// command clock changed source), and in between the time is that reading plus the command
/// clock's microseconds since: off by the counter's rate error over at most a millisecond.
pub(crate) struct CommandTime {
    wall_micros: u64,
    read_at: Tick,
}

impl CommandTime {
    pub(crate) fn new(clock: &CommandClock) -> CommandTime {
        CommandTime {
            wall_micros: wall_micros(),
            read_at: clock.now(),
        }
    }

    /// The Unix time in milliseconds at `tick`, a reading of `clock` taken now.
    pub(crate) fn at(&mut self, clock: &CommandClock, tick: Tick) -> u64 {
        match clock.elapsed_micros(self.read_at, tick) {
            Some(micros) if micros < WALL_READ_EVERY_MICROS => (self.wall_micros + micros) / 1000,
            _ => {
                *self = CommandTime::new(clock);
                self.wall_micros / 1000
            }
        }
    }
}

fn wall_micros() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |since| since.as_micros() as u64)
}

/// Whether Linux keeps time with the time-stamp counter, which it does only once it has found the
/// counter invariant and synchronised across CPUs.
fn kernel_times_with_counter() -> bool {
    cfg!(target_arch = "x86_64")
        && std::fs::read_to_string(
            "/sys/devices/system/clocksource/clocksource0/current_clocksource",
        )
        .is_ok_and(|source| source.trim() == "tsc")
}

#[cfg(target_arch = "x86_64")]
#[inline]
fn read_counter() -> u64 {
    // SAFETY: RDTSC is part of the x86-64 baseline and reads a register; the kernel has not
    // disabled it for user space where it keeps time with it (`kernel_times_with_counter`).
    unsafe { std::arch::x86_64::_rdtsc() }
}

/// Never read: `kernel_times_with_counter` is false off x86-64.
#[cfg(not(target_arch = "x86_64"))]
fn read_counter() -> u64 {
    0
}

/// The counter's rate, against `Instant` over about `window`. Each end is the pair of readings
/// taken closest together out of a few, so that the thread being descheduled between the two
/// reads of a pair does not skew the rate.
fn counter_ticks_per_micro(window: Duration) -> u64 {
    let (start_ticks, start) = paired_reading();
    while start.elapsed() < window {
        std::hint::spin_loop();
    }
    let (end_ticks, end) = paired_reading();
    let nanos = end.duration_since(start).as_nanos().max(1) as u64;
    end_ticks.saturating_sub(start_ticks).saturating_mul(1000) / nanos
}

fn paired_reading() -> (u64, Instant) {
    (0..5)
        .map(|_| {
            let before = read_counter();
            let instant = Instant::now();
            let after = read_counter();
            (
                after.saturating_sub(before),
                before / 2 + after / 2,
                instant,
            )
        })
        .min_by_key(|&(spread, _, _)| spread)
        .map(|(_, ticks, instant)| (ticks, instant))
        .expect("five readings")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at_least_the_time_slept(clock: &CommandClock) {
        let from = clock.now();
        std::thread::sleep(Duration::from_millis(3));
        let to = clock.now();
        // A sleep lasts at least as long as asked; how much longer depends on the machine.
        assert!(
            clock.micros(from, to) >= 2_900,
            "{}",
            clock.micros(from, to)
        );
        assert_eq!(clock.micros(to, from), 0);
    }

    #[test]
    fn the_chosen_clock_counts_at_least_the_time_slept() {
        at_least_the_time_slept(&CommandClock::new());
    }

    #[test]
    fn the_instant_clock_counts_at_least_the_time_slept() {
        at_least_the_time_slept(&CommandClock::with_rate(None));
    }

    #[test]
    fn counter_ticks_divide_into_whole_microseconds() {
        let clock = CommandClock::with_rate(Some(2_000));
        assert_eq!(clock.micros(Tick(1_000), Tick(7_999)), 3);
        assert_eq!(clock.micros(Tick(1_000), Tick(9_000)), 4);
    }

    #[test]
    fn each_command_time_follows_the_system_clock() {
        let clock = CommandClock::new();
        let mut time = CommandTime::new(&clock);
        let before = wall_micros() / 1000;
        std::thread::sleep(Duration::from_millis(5));
        let now = time.at(&clock, clock.now());
        assert!(now >= before + 5, "{now} {before}");
        assert!(now <= wall_micros() / 1000, "{now}");
        // Within a millisecond of the last reading, the counter's microseconds are added.
        let read = time.wall_micros;
        let per_micro = match time.read_at.0 & FROM_INSTANT {
            0 => clock.ticks_per_micro.expect("counting"),
            _ => 1000,
        };
        let later = Tick(time.read_at.0 + 500 * per_micro);
        assert_eq!(time.at(&clock, later), (read + 500) / 1000);
    }

    #[test]
    fn a_change_of_source_between_two_readings_counts_nothing() {
        let clock = CommandClock::with_rate(Some(2_000));
        let counted = Tick(5_000);
        let timed = Tick(9_000 | FROM_INSTANT);
        assert_eq!(clock.micros(counted, timed), 0);
        assert_eq!(clock.micros(Tick(FROM_INSTANT), timed), 9);
    }
}
