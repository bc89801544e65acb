//! The random numbers behind Top-K's decay, as RedisBloom draws them: C's `rand()` from glibc,
//! whose generator is `random_r`'s TYPE_3 (an additive lagged Fibonacci generator over 31
//! words, taps 31 and 3), here bit for bit.
//!
//! Why a generator of glibc's own, and why injectable: RedisBloom decides each decay with
//! `rand() / (double)RAND_MAX` (src/topk.c), from the one process-wide stream that Redis seeds
//! from the clock at start-up and that other commands draw from too. No two RedisBloom servers
//! agree on a decayed count, and a sieved replica or a replay of the log must not differ from
//! its primary. So a Top-K takes its draws from a `DecayDraws` it is handed:
//! - each Top-K in the keyspace carries a `GlibcRandom` of its own (`store/sketch.rs`), saved
//!   with it in snapshots (`GlibcRandomState`), so that the log and replicas, which run the
//!   same adds on the same state, reproduce the primary's counts exactly;
//! - tests seed it to reproduce glibc's sequences (`srand(1)` gives 1804289383, 846930886, ...)
//!   or hand it a recorded list of draws.

/// glibc's `RAND_MAX`: draws are in `0..=RAND_MAX`.
pub const RAND_MAX: u32 = 0x7fff_ffff;

/// The degree of TYPE_3 (words of state) and its separation (the lag between its two taps).
const DEGREE: usize = 31;
const SEPARATION: usize = 3;

/// A source of `rand()` values for Top-K's decay: each call is one draw in `0..=RAND_MAX`.
pub trait DecayDraws {
    fn next_draw(&mut self) -> u32;
}

/// Any closure returning draws, for a recorded sequence or a fixed value.
impl<F: FnMut() -> u32> DecayDraws for F {
    fn next_draw(&mut self) -> u32 {
        self()
    }
}

/// glibc's `random_r` generator of type 3, as `srand`/`rand` use it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GlibcRandom {
    words: [i32; DEGREE],
    /// glibc's `fptr`, as an index; its `rptr` is always `SEPARATION` behind, modulo `DEGREE`.
    front: usize,
}

/// A generator's whole state, to log and restore: its 31 words and the position of its front
/// tap (0..31).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GlibcRandomState {
    pub words: [u32; DEGREE],
    pub front: u32,
}

impl GlibcRandom {
    /// The generator after `srand(seed)`.
    pub fn new(seed: u32) -> GlibcRandom {
        // glibc takes seed 0 as 1.
        let seed = if seed == 0 { 1 } else { seed };
        let mut words = [0i32; DEGREE];
        words[0] = seed as i32;
        let mut word = i64::from(seed as i32);
        for slot in words.iter_mut().skip(1) {
            // state[i] = 16807 * state[i - 1] % (2^31 - 1), by Schrage's method as glibc
            // computes it, with C's truncating division on the signed first word.
            let high = word / 127_773;
            let low = word % 127_773;
            word = 16_807 * low - 2_836 * high;
            if word < 0 {
                word += 2_147_483_647;
            }
            *slot = word as i32;
        }
        let mut generator = GlibcRandom {
            words,
            front: SEPARATION,
        };
        // glibc discards the first 310 outputs.
        for _ in 0..DEGREE * 10 {
            generator.next_rand();
        }
        generator
    }

    /// The next `rand()`.
    pub fn next_rand(&mut self) -> u32 {
        let rear = (self.front + DEGREE - SEPARATION) % DEGREE;
        let sum = self.words[self.front].wrapping_add(self.words[rear]);
        self.words[self.front] = sum;
        self.front = (self.front + 1) % DEGREE;
        // The least random bit is dropped.
        (sum as u32) >> 1
    }

    pub fn state(&self) -> GlibcRandomState {
        GlibcRandomState {
            words: self.words.map(|word| word as u32),
            front: self.front as u32,
        }
    }

    /// The generator in `state`; None if its front tap is out of range.
    pub fn from_state(state: &GlibcRandomState) -> Option<GlibcRandom> {
        let front = usize::try_from(state.front)
            .ok()
            .filter(|&front| front < DEGREE)?;
        Some(GlibcRandom {
            words: state.words.map(|word| word as i32),
            front,
        })
    }
}

impl DecayDraws for GlibcRandom {
    fn next_draw(&mut self) -> u32 {
        self.next_rand()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn draws(seed: u32, skip: usize, count: usize) -> Vec<u32> {
        let mut generator = GlibcRandom::new(seed);
        for _ in 0..skip {
            generator.next_rand();
        }
        (0..count).map(|_| generator.next_rand()).collect()
    }

    /// glibc 2.36's `srand(seed)` then `rand()`, from a C program compiled on this machine.
    #[test]
    fn reproduces_glibc() {
        assert_eq!(
            draws(1, 0, 5),
            [
                1_804_289_383,
                846_930_886,
                1_681_692_777,
                1_714_636_915,
                1_957_747_793
            ]
        );
        assert_eq!(draws(0, 0, 3), draws(1, 0, 3));
        assert_eq!(draws(12345, 0, 3), [383_100_999, 858_300_821, 357_768_173]);
        assert_eq!(
            draws(0x8000_0001, 0, 3),
            [1_081_815_585, 5_219_348, 1_080_917_272]
        );
        assert_eq!(
            draws(u32::MAX, 0, 3),
            [254_925_627, 1_205_188_300, 366_127_624]
        );
        assert_eq!(draws(7, 1000, 1), [363_912_548]);
    }

    #[test]
    fn the_state_round_trips_mid_stream() {
        let mut generator = GlibcRandom::new(42);
        for _ in 0..45 {
            generator.next_rand();
        }
        let mut copy = GlibcRandom::from_state(&generator.state()).unwrap();
        let ahead: Vec<u32> = (0..100).map(|_| generator.next_rand()).collect();
        let again: Vec<u32> = (0..100).map(|_| copy.next_rand()).collect();
        assert_eq!(ahead, again);
        let bad = GlibcRandomState {
            front: 31,
            ..generator.state()
        };
        assert!(GlibcRandom::from_state(&bad).is_none());
    }

    #[test]
    fn draws_stay_within_rand_max() {
        let mut generator = GlibcRandom::new(3);
        assert!((0..100_000).all(|_| generator.next_draw() <= RAND_MAX));
    }
}
