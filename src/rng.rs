//! A small seeded PRNG (xoshiro256++ seeded through SplitMix64). Arrival
//! sequences and dataset orders must be reproducible by `--seed` forever, not
//! just within one version of a dependency, so the algorithm lives here, pinned.

/// xoshiro256++ state.
#[derive(Clone, Debug)]
pub struct Rng {
    _private: (),
}

impl Rng {
    /// The same seed gives the same sequence on every machine and version.
    pub fn seeded(seed: u64) -> Self {
        let _ = seed;
        todo!("metrics helper")
    }

    pub fn next_u64(&mut self) -> u64 {
        todo!("metrics helper")
    }

    /// Uniform in `[0, 1)` with 53 bits of precision.
    pub fn next_f64(&mut self) -> f64 {
        todo!("metrics helper")
    }

    /// Uniform in `0..n` (`n > 0`), without modulo bias.
    pub fn below(&mut self, n: u64) -> u64 {
        let _ = n;
        todo!("metrics helper")
    }

    /// Exponentially distributed with mean 1.
    pub fn exp1(&mut self) -> f64 {
        todo!("metrics helper")
    }
}
