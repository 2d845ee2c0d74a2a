//! CPython's `random.Random`, bit for bit, for the methods MLPerf Inference
//! Endpoint calls: its sample order (`shuffle`, `randint`) and its Poisson
//! schedule (`expovariate`) are drawn from `random.Random(seed)`, so a run
//! that must send MLPerf's rows at MLPerf's times for the same seeds has to
//! draw them from the same generator.
//!
//! The generator is MT19937 seeded as `random.seed(int)` seeds it
//! (`init_by_array` over the 32-bit words of the seed's absolute value,
//! least significant first; 0 is the one word 0). The methods follow
//! `Lib/random.py` of CPython 3.11 to 3.13, which agree on all of them:
//! `random()` takes 53 bits from two draws, `_randbelow(n)` rejects
//! `getrandbits(n.bit_length())` until it is below `n`, `shuffle` is
//! Fisher–Yates from the end with `_randbelow(i + 1)`, `expovariate(l)` is
//! `-log(1 - random()) / l`.
//!
//! `tests/fixtures/pyrandom/` holds sequences CPython produced and the script
//! that made them; the tests compare them exactly. `expovariate` goes
//! through the platform's `log`, which CPython calls too, so it matches where
//! both use the same libm (glibc and musl share one `log`).

const N: usize = 624;
const M: usize = 397;
const MATRIX_A: u32 = 0x9908_b0df;
const UPPER_MASK: u32 = 0x8000_0000;
const LOWER_MASK: u32 = 0x7fff_ffff;

/// `random.Random`'s state. 2.5 KiB, so it is boxed where it is kept in
/// something that moves.
#[derive(Clone)]
pub struct PyRandom {
    mt: [u32; N],
    index: usize,
}

impl std::fmt::Debug for PyRandom {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PyRandom")
            .field("index", &self.index)
            .finish_non_exhaustive()
    }
}

impl PyRandom {
    /// `random.Random(seed)` for a seed of at most 128 bits; a negative
    /// Python seed gives the same generator as its absolute value.
    pub fn new(seed: u128) -> PyRandom {
        let words: [u32; 4] = std::array::from_fn(|i| (seed >> (32 * i)) as u32);
        let used = words.iter().rposition(|&w| w != 0).map_or(1, |i| i + 1);
        PyRandom::from_words(&words[..used])
    }

    /// `random.Random(n)` for `n`'s absolute value given as its 32-bit
    /// words, least significant first, without zero words at the top
    /// (`[0]` for 0, as CPython keys it).
    pub fn from_words(key: &[u32]) -> PyRandom {
        let key: &[u32] = if key.is_empty() { &[0] } else { key };
        let mut r = PyRandom::init_genrand(19_650_218);
        let mt = &mut r.mt;
        let (mut i, mut j) = (1usize, 0usize);
        for _ in 0..N.max(key.len()) {
            let prev = mt[i - 1] ^ (mt[i - 1] >> 30);
            mt[i] = (mt[i] ^ prev.wrapping_mul(1_664_525))
                .wrapping_add(key[j])
                .wrapping_add(j as u32);
            i += 1;
            j += 1;
            if i >= N {
                mt[0] = mt[N - 1];
                i = 1;
            }
            if j >= key.len() {
                j = 0;
            }
        }
        for _ in 0..N - 1 {
            let prev = mt[i - 1] ^ (mt[i - 1] >> 30);
            mt[i] = (mt[i] ^ prev.wrapping_mul(1_566_083_941)).wrapping_sub(i as u32);
            i += 1;
            if i >= N {
                mt[0] = mt[N - 1];
                i = 1;
            }
        }
        // Assures a non-zero initial state.
        mt[0] = 0x8000_0000;
        r
    }

    fn init_genrand(s: u32) -> PyRandom {
        let mut mt = [0u32; N];
        mt[0] = s;
        for i in 1..N {
            mt[i] = 1_812_433_253u32
                .wrapping_mul(mt[i - 1] ^ (mt[i - 1] >> 30))
                .wrapping_add(i as u32);
        }
        PyRandom { mt, index: N }
    }

    /// The next 32 bits (CPython's `genrand_uint32`).
    pub fn next_u32(&mut self) -> u32 {
        if self.index >= N {
            self.twist();
        }
        let mut y = self.mt[self.index];
        self.index += 1;
        y ^= y >> 11;
        y ^= (y << 7) & 0x9d2c_5680;
        y ^= (y << 15) & 0xefc6_0000;
        y ^ (y >> 18)
    }

    fn twist(&mut self) {
        let mt = &mut self.mt;
        let mag = |y: u32| if y & 1 == 0 { 0 } else { MATRIX_A };
        for kk in 0..N - M {
            let y = (mt[kk] & UPPER_MASK) | (mt[kk + 1] & LOWER_MASK);
            mt[kk] = mt[kk + M] ^ (y >> 1) ^ mag(y);
        }
        for kk in N - M..N - 1 {
            let y = (mt[kk] & UPPER_MASK) | (mt[kk + 1] & LOWER_MASK);
            mt[kk] = mt[kk + M - N] ^ (y >> 1) ^ mag(y);
        }
        let y = (mt[N - 1] & UPPER_MASK) | (mt[0] & LOWER_MASK);
        mt[N - 1] = mt[M - 1] ^ (y >> 1) ^ mag(y);
        self.index = 0;
    }

    /// `random()`: uniform in `[0, 1)` with 53 bits, the top 27 of one draw
    /// over the top 26 of the next.
    pub fn random(&mut self) -> f64 {
        let a = self.next_u32() >> 5;
        let b = self.next_u32() >> 6;
        (f64::from(a) * 67_108_864.0 + f64::from(b)) * (1.0 / 9_007_199_254_740_992.0)
    }

    /// `getrandbits(k)` for `k <= 64`: whole draws fill the low words, and
    /// the last draw gives its top bits to the top word.
    ///
    /// # Panics
    ///
    /// If `k > 64`.
    pub fn getrandbits(&mut self, k: u32) -> u64 {
        assert!(k <= 64, "getrandbits({k}): at most 64 bits here");
        if k == 0 {
            return 0;
        }
        if k <= 32 {
            return u64::from(self.next_u32() >> (32 - k));
        }
        let low = u64::from(self.next_u32());
        let high = u64::from(self.next_u32() >> (64 - k));
        low | high << 32
    }

    /// `_randbelow(n)`: uniform in `0..n` for `n > 0`, by rejection.
    ///
    /// # Panics
    ///
    /// If `n == 0`.
    pub fn randbelow(&mut self, n: u64) -> u64 {
        assert!(n > 0, "randbelow(0): empty range");
        let k = u64::BITS - n.leading_zeros();
        loop {
            let r = self.getrandbits(k);
            if r < n {
                return r;
            }
        }
    }

    /// `randint(a, b)`: uniform in `a..=b` (`a <= b`), which is
    /// `a + _randbelow(b - a + 1)`.
    pub fn randint(&mut self, a: u64, b: u64) -> u64 {
        a + self.randbelow(b - a + 1)
    }

    /// `shuffle(x)` in place.
    pub fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            let j = self.randbelow(i as u64 + 1) as usize;
            items.swap(i, j);
        }
    }

    /// `expovariate(lambd)`.
    pub fn expovariate(&mut self, lambd: f64) -> f64 {
        -(1.0 - self.random()).ln() / lambd
    }
}

#[cfg(test)]
mod tests;
