//! Against what CPython 3.11 gave for the same seeds
//! (`tests/fixtures/pyrandom/generate.py`); floats compared as bit patterns.

use super::PyRandom;
use serde_json::Value;

fn fixture() -> Value {
    serde_json::from_str(include_str!("../../tests/fixtures/pyrandom/sequences.json")).unwrap()
}

fn u64s(v: &Value) -> Vec<u64> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_u64().unwrap())
        .collect()
}

/// Each seed's generator and its fixture entry.
fn cases() -> Vec<(String, u128, Value)> {
    let f = fixture();
    let seeds = f["seeds"].as_array().unwrap();
    assert_eq!(seeds.len(), 7, "every seed of generate.py is checked");
    seeds
        .iter()
        .map(|c| {
            let text = c["seed"].as_str().unwrap().to_string();
            let seed = text.parse::<i128>().unwrap().unsigned_abs();
            (text, seed, c.clone())
        })
        .collect()
}

#[test]
fn raw_words_match_cpython() {
    for (name, seed, c) in cases() {
        let mut r = PyRandom::new(seed);
        let got: Vec<u64> = (0..8).map(|_| u64::from(r.next_u32())).collect();
        assert_eq!(got, u64s(&c["u32"]), "seed {name}");
        let mut r = PyRandom::new(seed);
        for _ in 0..1000 {
            r.next_u32();
        }
        let got: Vec<u64> = (0..4).map(|_| u64::from(r.next_u32())).collect();
        assert_eq!(got, u64s(&c["after_1000"]), "seed {name}, past two twists");
    }
}

#[test]
fn random_matches_cpython_bit_for_bit() {
    for (name, seed, c) in cases() {
        let mut r = PyRandom::new(seed);
        let got: Vec<u64> = (0..8).map(|_| r.random().to_bits()).collect();
        assert_eq!(got, u64s(&c["random_bits"]), "seed {name}");
    }
}

#[test]
fn getrandbits_randbelow_randint_match_cpython() {
    for (name, seed, c) in cases() {
        let mut r = PyRandom::new(seed);
        for pair in c["getrandbits"].as_array().unwrap() {
            let p = u64s(pair);
            assert_eq!(r.getrandbits(p[0] as u32), p[1], "seed {name}, k {}", p[0]);
        }
        let mut r = PyRandom::new(seed);
        for pair in c["randbelow"].as_array().unwrap() {
            let p = u64s(pair);
            assert_eq!(r.randbelow(p[0]), p[1], "seed {name}, n {}", p[0]);
        }
        let mut r = PyRandom::new(seed);
        for t in c["randint"].as_array().unwrap() {
            let t = u64s(t);
            assert_eq!(r.randint(t[0], t[1]), t[2], "seed {name}, {t:?}");
        }
    }
}

#[test]
fn shuffle_matches_cpython_twice_in_place() {
    for (name, seed, c) in cases() {
        for s in c["shuffle"].as_array().unwrap() {
            let n = s["n"].as_u64().unwrap();
            let mut r = PyRandom::new(seed);
            let mut x: Vec<u64> = (0..n).collect();
            r.shuffle(&mut x);
            assert_eq!(x, u64s(&s["first"]), "seed {name}, n {n}");
            r.shuffle(&mut x);
            assert_eq!(x, u64s(&s["second"]), "seed {name}, n {n}, second pass");
        }
    }
}

#[test]
fn expovariate_matches_cpython_bit_for_bit() {
    for (name, seed, c) in cases() {
        for e in c["expovariate"].as_array().unwrap() {
            let lambd = f64::from_bits(e["lambd_bits"].as_u64().unwrap());
            let mut r = PyRandom::new(seed);
            let got: Vec<u64> = (0..16).map(|_| r.expovariate(lambd).to_bits()).collect();
            assert_eq!(got, u64s(&e["values_bits"]), "seed {name}, lambd {lambd}");
        }
    }
}

#[test]
fn seeds_key_as_cpython_keys_them() {
    // 0 is the one key word 0, not an empty key; words are little-endian and
    // zero words at the top are not part of the key.
    let draw = |mut r: PyRandom| (0..4).map(|_| r.next_u32()).collect::<Vec<_>>();
    assert_eq!(draw(PyRandom::new(0)), draw(PyRandom::from_words(&[0])));
    assert_eq!(draw(PyRandom::new(0)), draw(PyRandom::from_words(&[])));
    assert_eq!(
        draw(PyRandom::new((1 << 32) + 5)),
        draw(PyRandom::from_words(&[5, 1]))
    );
    assert_ne!(draw(PyRandom::new(5)), draw(PyRandom::from_words(&[5, 0])));
}
