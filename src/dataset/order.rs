//! Which sample each request sends: in file order, shuffled (a new
//! permutation each pass over the dataset), drawn at random with
//! replacement, or always the same one (MLPerf's single-index order, which
//! the output-caching audit repeats). Reproducible by seed, from our own
//! generator or, for MLPerf's runs, from CPython's `random.Random` as MLPerf
//! Inference Endpoint draws its order (`Picker::python`).

use std::fmt;

use crate::pyrandom::PyRandom;
use crate::rng::Rng;

/// `--order`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Order {
    #[default]
    Sequential,
    Shuffle,
    Random,
    /// Every request sends sample `i` (`single:I`); the dataset must have it,
    /// which is checked once it is loaded.
    Single(u32),
}

impl Order {
    pub fn parse(s: &str) -> Result<Order, String> {
        match s {
            "sequential" => Ok(Order::Sequential),
            "shuffle" => Ok(Order::Shuffle),
            "random" => Ok(Order::Random),
            _ => match s.strip_prefix("single:").map(str::parse::<u32>) {
                Some(Ok(i)) => Ok(Order::Single(i)),
                _ => Err(format!(
                    "--order '{s}': expected sequential, shuffle, random or single:INDEX (a row number from 0)"
                )),
            },
        }
    }

    /// The order's kind, without a single order's index.
    pub fn name(self) -> &'static str {
        match self {
            Order::Sequential => "sequential",
            Order::Shuffle => "shuffle",
            Order::Random => "random",
            Order::Single(_) => "single",
        }
    }
}

/// As `--order` spells it (`single:3`), so it parses back.
impl fmt::Display for Order {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Order::Single(i) => write!(f, "single:{i}"),
            other => f.write_str(other.name()),
        }
    }
}

/// Hands out sample indices in the chosen order. A shard's picker covers
/// only its part of the samples (`Picker::part`): the indices `r` with
/// `r % count == index`, in the same order over that subset, so the shards
/// of a run together use every sample once per pass.
#[derive(Clone, Debug)]
pub struct Picker {
    order: Order,
    /// Samples this picker covers.
    n: u32,
    /// The sample index of position `j` is `offset + stride·j`.
    offset: u32,
    stride: u32,
    /// The current pass's permutation (shuffle only).
    perm: Vec<u32>,
    pos: u32,
    draws: Draws,
}

/// Where a picker's random choices come from.
#[derive(Clone, Debug)]
enum Draws {
    Own(Rng),
    /// MLPerf's `rng_sample_index`: a shuffle reshuffles the last pass's
    /// permutation in place (`WithoutReplacementSampleOrder`), a random
    /// order is `randint(0, n - 1)` (`WithReplacementSampleOrder`).
    Python(Box<PyRandom>),
}

impl Draws {
    fn below(&mut self, n: u32) -> u32 {
        match self {
            Draws::Own(r) => r.below(u64::from(n)) as u32,
            Draws::Python(r) => r.randbelow(u64::from(n)) as u32,
        }
    }

    fn shuffle(&mut self, perm: &mut [u32]) {
        match self {
            Draws::Own(r) => r.shuffle(perm),
            Draws::Python(r) => r.shuffle(perm),
        }
    }
}

impl Picker {
    /// A picker over `n > 0` samples.
    pub fn new(order: Order, n: usize, seed: u64) -> Picker {
        Picker::with_draws(
            order,
            n,
            Draws::Own(Rng::seeded(seed ^ 0x6f72_6465_725f_7069)),
        )
    }

    /// A picker over `n > 0` samples in the order MLPerf Inference Endpoint
    /// gives them for `dataloader_random_seed` `seed`: `shuffle` is its
    /// without-replacement order, `random` its with-replacement one.
    pub fn python(order: Order, n: usize, seed: u64) -> Picker {
        Picker::with_draws(
            order,
            n,
            Draws::Python(Box::new(PyRandom::new(seed.into()))),
        )
    }

    fn with_draws(order: Order, n: usize, draws: Draws) -> Picker {
        let n = u32::try_from(n.max(1)).unwrap_or(u32::MAX);
        let mut p = Picker {
            order,
            n,
            offset: 0,
            stride: 1,
            perm: Vec::new(),
            pos: 0,
            draws,
        };
        if order == Order::Shuffle {
            p.perm = (0..n).collect();
            p.draws.shuffle(&mut p.perm);
        }
        p
    }

    /// A picker over part `index` (from 0) of `count` of `n` samples: the
    /// samples `r` with `r % count == index`. The caller checks that every
    /// part has one (`n ≥ count`); `single:I` is not split. `python`: drawn
    /// as `Picker::python` draws (over the part, so not MLPerf's order).
    pub fn part(
        order: Order,
        n: usize,
        seed: u64,
        (index, count): (u32, u32),
        python: bool,
    ) -> Picker {
        let whole = |n| {
            if python {
                Picker::python(order, n, seed)
            } else {
                Picker::new(order, n, seed)
            }
        };
        let count = count.max(1);
        if count == 1 || matches!(order, Order::Single(_)) {
            return whole(n);
        }
        let total = u32::try_from(n.max(1)).unwrap_or(u32::MAX);
        let mine = total / count + u32::from(index < total % count);
        let mut p = whole(mine as usize);
        p.offset = index;
        p.stride = count;
        p
    }

    /// The next sample index, in `0..n`. No allocation after the first pass.
    pub fn next_index(&mut self) -> u32 {
        let j = self.next_position();
        match self.order {
            Order::Single(i) => i,
            _ => self.offset + self.stride * j,
        }
    }

    /// The next position in this picker's own samples.
    fn next_position(&mut self) -> u32 {
        match self.order {
            Order::Sequential => {
                let i = self.pos;
                self.pos = (self.pos + 1) % self.n;
                i
            }
            Order::Random => self.draws.below(self.n),
            Order::Single(i) => i,
            Order::Shuffle => {
                if self.pos == self.n {
                    self.pos = 0;
                    self.draws.shuffle(&mut self.perm);
                }
                let i = self.perm[self.pos as usize];
                self.pos += 1;
                i
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn take(order: Order, n: usize, seed: u64, k: usize) -> Vec<u32> {
        let mut p = Picker::new(order, n, seed);
        (0..k).map(|_| p.next_index()).collect()
    }

    #[test]
    fn sequential_cycles() {
        assert_eq!(take(Order::Sequential, 3, 9, 7), vec![0, 1, 2, 0, 1, 2, 0]);
    }

    #[test]
    fn shuffle_is_a_permutation_each_pass_and_reshuffles() {
        let v = take(Order::Shuffle, 50, 1, 100);
        let (a, b) = v.split_at(50);
        let mut sa = a.to_vec();
        sa.sort();
        assert_eq!(sa, (0..50).collect::<Vec<_>>());
        let mut sb = b.to_vec();
        sb.sort();
        assert_eq!(sb, (0..50).collect::<Vec<_>>());
        assert_ne!(a, b, "each pass is reshuffled");
        assert_eq!(v, take(Order::Shuffle, 50, 1, 100), "same seed, same order");
        assert_ne!(v, take(Order::Shuffle, 50, 2, 100));
    }

    #[test]
    fn random_stays_in_range_and_repeats() {
        let v = take(Order::Random, 10, 3, 1000);
        assert!(v.iter().all(|&i| i < 10));
        let distinct: std::collections::BTreeSet<_> = v.iter().collect();
        assert_eq!(distinct.len(), 10);
        assert_eq!(v, take(Order::Random, 10, 3, 1000));
    }

    #[test]
    fn parts_cover_every_sample_once_per_pass() {
        for order in [Order::Sequential, Order::Shuffle] {
            for (n, count) in [(10usize, 3u32), (9, 3), (3, 3), (100, 7)] {
                let mut all = Vec::new();
                for index in 0..count {
                    let mut p = Picker::part(order, n, 5, (index, count), false);
                    let mine = n as u32 / count + u32::from(index < n as u32 % count);
                    let got: Vec<u32> = (0..mine).map(|_| p.next_index()).collect();
                    assert!(got.iter().all(|r| r % count == index), "{got:?}");
                    all.extend(got);
                }
                all.sort();
                assert_eq!(
                    all,
                    (0..n as u32).collect::<Vec<_>>(),
                    "{order} {n}/{count}"
                );
            }
        }
        let mut p = Picker::part(Order::Random, 20, 1, (2, 4), false);
        assert!((0..200).all(|_| p.next_index() % 4 == 2));
        let mut p = Picker::part(Order::Single(7), 20, 1, (2, 4), false);
        assert_eq!(p.next_index(), 7);
        let mut p = Picker::part(Order::Sequential, 5, 1, (0, 1), false);
        assert_eq!(
            (0..6).map(|_| p.next_index()).collect::<Vec<_>>(),
            [0, 1, 2, 3, 4, 0]
        );
    }

    /// `tests/fixtures/pyrandom/mlperf.json`: the orders MLPerf's
    /// `WithoutReplacementSampleOrder` / `WithReplacementSampleOrder` give,
    /// reproduced with CPython.
    fn mlperf_orders(kind: &str) -> Vec<(u64, usize, Vec<u32>)> {
        let f: serde_json::Value =
            serde_json::from_str(include_str!("../../tests/fixtures/pyrandom/mlperf.json"))
                .unwrap();
        f[kind]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| {
                let order = c["order"].as_array().unwrap();
                (
                    c["seed"].as_str().unwrap().parse().unwrap(),
                    c["n"].as_u64().unwrap() as usize,
                    order.iter().map(|i| i.as_u64().unwrap() as u32).collect(),
                )
            })
            .collect()
    }

    #[test]
    fn python_draws_give_mlperfs_orders() {
        for (order, kind) in [
            (Order::Shuffle, "without_replacement"),
            (Order::Random, "with_replacement"),
        ] {
            let cases = mlperf_orders(kind);
            assert!(cases.len() >= 2, "{kind}");
            for (seed, n, want) in cases {
                let mut p = Picker::python(order, n, seed);
                let got: Vec<u32> = want.iter().map(|_| p.next_index()).collect();
                assert_eq!(got, want, "{kind}, seed {seed}, n {n}");
                let mut whole = Picker::part(order, n, seed, (0, 1), true);
                let again: Vec<u32> = want.iter().map(|_| whole.next_index()).collect();
                assert_eq!(again, want, "one part is the whole");
            }
        }
    }

    #[test]
    fn single_always_sends_its_row() {
        assert_eq!(take(Order::Single(3), 5, 7, 6), vec![3; 6]);
        assert_eq!(take(Order::Single(0), 1, 7, 3), vec![0; 3]);
    }

    #[test]
    fn orders_parse_back_from_their_spelling() {
        for o in [
            Order::Sequential,
            Order::Shuffle,
            Order::Random,
            Order::Single(0),
            Order::Single(4_000_000),
        ] {
            assert_eq!(Order::parse(&o.to_string()), Ok(o));
        }
        assert_eq!(Order::Single(7).name(), "single");
        for bad in [
            "single",
            "single:",
            "single:-1",
            "single:x",
            "single:1.5",
            "Single:1",
        ] {
            let e = Order::parse(bad).unwrap_err();
            assert!(e.contains("single:INDEX"), "{bad}: {e}");
        }
    }
}
