//! The one generator of the tests and benchmarks that draw their arguments at random: seeded, so a
//! failure replays; the same sequence on every platform. It stands alone, so that a benchmark can
//! take it in with `#[path]`.

/// xorshift64*. The state must not be 0 (it would stay 0): `Rng::seeded` takes any seed.
pub struct Rng(pub u64);

impl Rng {
    /// A generator for any seed, 0 included: the seed times an odd constant, with its lowest bit
    /// set so that the state is never 0.
    pub fn seeded(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// A number in 0..n (0 when n is 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }

    /// An index into something `len` long (0 when it is empty).
    pub fn index(&mut self, len: usize) -> usize {
        self.below(len as u64) as usize
    }

    /// True once in `n` times.
    pub fn one_in(&mut self, n: u64) -> bool {
        self.below(n) == 0
    }

    /// One of `choices` (words, mostly), each as likely.
    pub fn pick<T: Copy>(&mut self, choices: &[T]) -> T {
        choices[self.index(choices.len())]
    }
}
