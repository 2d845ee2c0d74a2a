//! One run split over several processes (`--shard I/N`, `--shard auto`):
//! which shard this process is, what share of every count it takes, the
//! seeds it derives, and the id every shard of one run shares. Pure
//! functions: the environment `auto` reads is a parameter, so the tests
//! need not touch the process's own.
//!
//! The main trade-off: each shard computes its part alone from the run's
//! description and its index, with no coordinator. A count splits as
//! `total/N`, the remainder spread over the first shards, so the shares add
//! up exactly; anything random is derived from the run's seed and the
//! index, so the union of the shards is reproducible.

use serde_json::Value;

use crate::plan::{Load, StagePlan};

/// The largest shard count: far beyond any fleet, small enough that a
/// typo (`--shard 1/30000000`) is caught.
pub(crate) const MAX_SHARDS: u32 = 100_000;

/// `--shard` as written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ShardSpec {
    /// `I/N`, 1 ≤ I ≤ N.
    Fixed { index: u32, count: u32 },
    /// Read from the scheduler's variables when the run starts.
    Auto,
}

impl ShardSpec {
    /// `I/N` or `auto`; the error says what was expected (the caller names
    /// the flag or field).
    pub(crate) fn parse(s: &str) -> Result<ShardSpec, String> {
        if s == "auto" {
            return Ok(ShardSpec::Auto);
        }
        let bad = || format!("'{s}': expected I/N (1 ≤ I ≤ N, e.g. 2/3) or auto");
        let (i, n) = s.split_once('/').ok_or_else(bad)?;
        let (Ok(index), Ok(count)) = (i.trim().parse::<u32>(), n.trim().parse::<u32>()) else {
            return Err(bad());
        };
        if count == 0 || count > MAX_SHARDS {
            return Err(format!("'{s}': N must be 1 to {MAX_SHARDS}"));
        }
        if index == 0 || index > count {
            return Err(format!(
                "'{s}': the index counts from 1 and must be at most N ({count})"
            ));
        }
        Ok(ShardSpec::Fixed { index, count })
    }
}

/// This process's shard of the run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Shard {
    /// 1..=`count`.
    pub index: u32,
    pub count: u32,
    /// `flag`, `profile`, or the variable `auto` read the index from.
    pub source: String,
}

/// The scheduler variables `auto` reads, in the order it tries them: the
/// rank variable (0-based) and the size variable beside it (`None`: the
/// count comes from `--shards` or `LLMLOAD_SHARDS`, as for Kubernetes
/// Indexed Jobs, which do not export their completion count).
const SCHEDULERS: &[(&str, Option<&str>)] = &[
    ("JOB_COMPLETION_INDEX", None),
    ("SLURM_PROCID", Some("SLURM_NTASKS")),
    ("OMPI_COMM_WORLD_RANK", Some("OMPI_COMM_WORLD_SIZE")),
    ("PMI_RANK", Some("PMI_SIZE")),
];

/// Where a Kubernetes Indexed Job's shard count is read when `--shards` is
/// not given (the manifest sets it to the Job's completions).
pub(crate) const SHARDS_VAR: &str = "LLMLOAD_SHARDS";

/// The shard `spec` names. `shards` is `--shards` (the count `auto` needs
/// for an Indexed Job, and a check otherwise); `env` reads a variable;
/// `given` is how a fixed spec was given (`flag` or `profile`).
pub(crate) fn resolve(
    spec: ShardSpec,
    shards: Option<u32>,
    given: &str,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Shard, String> {
    let (index, count, source) = match spec {
        ShardSpec::Fixed { index, count } => (index, count, given.to_string()),
        ShardSpec::Auto => {
            let (rank, count, var) = detect(shards, env)?;
            (rank + 1, count, var.to_string())
        }
    };
    if let Some(n) = shards
        && n != count
    {
        return Err(format!(
            "--shards {n} disagrees with the {count} shards of --shard {} ({source})",
            if spec == ShardSpec::Auto {
                "auto".to_string()
            } else {
                format!("{index}/{count}")
            }
        ));
    }
    Ok(Shard {
        index,
        count,
        source,
    })
}

/// `auto`: the first scheduler whose rank variable is set, as (rank from 0,
/// count, the rank variable's name).
fn detect(
    shards: Option<u32>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<(u32, u32, &'static str), String> {
    let set = |name: &str| env(name).filter(|v| !v.trim().is_empty());
    let number = |name: &str, v: &str| {
        v.trim().parse::<u32>().map_err(|_| {
            format!(
                "--shard auto: ${name} is '{}', not a whole number",
                crate::printable::printable(v)
            )
        })
    };
    for &(rank_var, size_var) in SCHEDULERS {
        let Some(rank) = set(rank_var) else {
            continue;
        };
        let rank = number(rank_var, &rank)?;
        let (count, count_from) = match size_var {
            Some(size_var) => {
                let size = set(size_var).ok_or_else(|| {
                    format!("--shard auto: ${rank_var} is set but ${size_var} is not")
                })?;
                (number(size_var, &size)?, format!("${size_var}"))
            }
            None => match (shards, set(SHARDS_VAR)) {
                (Some(n), _) => (n, "--shards".to_string()),
                (None, Some(v)) => (number(SHARDS_VAR, &v)?, format!("${SHARDS_VAR}")),
                (None, None) => {
                    return Err(format!(
                        "--shard auto: ${rank_var} gives the index but not the count: set --shards N (shards in the profile) or ${SHARDS_VAR} to the Job's completions"
                    ));
                }
            },
        };
        if count == 0 || count > MAX_SHARDS {
            return Err(format!(
                "--shard auto: {count_from} is {count}: expected 1 to {MAX_SHARDS}"
            ));
        }
        if rank >= count {
            return Err(format!(
                "--shard auto: ${rank_var} is {rank}, not below the count {count} ({count_from})"
            ));
        }
        return Ok((rank, count, rank_var));
    }
    let names: Vec<&str> = SCHEDULERS.iter().map(|(r, _)| *r).collect();
    Err(format!(
        "--shard auto: no scheduler variable is set (looked for {}); give --shard I/N",
        names.join(", ")
    ))
}

impl Shard {
    /// The whole run as one shard (what a run without `--shard` is).
    #[cfg(test)]
    pub(crate) fn whole() -> Shard {
        Shard {
            index: 1,
            count: 1,
            source: String::new(),
        }
    }

    /// This shard's part of `total`: `total/N`, plus one for the first
    /// `total % N` shards, so the parts add up to `total` exactly.
    pub(crate) fn share(&self, total: u64) -> u64 {
        share(total, self.index, self.count)
    }

    /// This shard's part of a bound such as a connection count: as
    /// [`Shard::share`], but at least 1.
    pub(crate) fn share_at_least_1(&self, total: u64) -> u64 {
        self.share(total).max(1)
    }

    /// This shard's seed for the run's `seed`; one shard keeps it.
    pub(crate) fn seed(&self, seed: u64) -> u64 {
        derive_seed(seed, self.index, self.count)
    }

    /// The offset of this shard's uniform arrivals, as a fraction of its own
    /// gap: shard `i` takes arrivals `i−1, i−1+N, …` of the full schedule,
    /// which on its own axis (rate/N) are at `k + (i−1)/N`.
    pub(crate) fn uniform_phase(&self) -> f64 {
        f64::from(self.index - 1) / f64::from(self.count)
    }
}

impl Shard {
    /// This shard's part of each stage: open-loop rates divided by N (the
    /// caller phases uniform arrivals, [`Shard::uniform_phase`]), closed-loop
    /// concurrency and request counts split. Times are not split: stages
    /// by duration line up across shards through the common start.
    pub(crate) fn split_stages(&self, stages: &mut [StagePlan]) -> Result<(), String> {
        let n = f64::from(self.count);
        for s in stages.iter_mut() {
            match &mut s.load {
                Load::Closed { concurrency } => {
                    let total = *concurrency;
                    let part = self.share(total as u64) as usize;
                    if part == 0 {
                        return Err(format!(
                            "stage '{}': concurrency {total} split over {} shards leaves shard {} none: give at least {} in flight or fewer shards (--shard)",
                            s.name, self.count, self.index, self.count
                        ));
                    }
                    *concurrency = part;
                }
                Load::Open {
                    rate_from, rate_to, ..
                } => {
                    *rate_from /= n;
                    *rate_to /= n;
                }
                Load::Offline => {}
            }
            s.requests = s.requests.map(|r| self.share(r));
        }
        Ok(())
    }
}

/// Part `index` (1-based) of `total` split `count` ways.
pub(crate) fn share(total: u64, index: u32, count: u32) -> u64 {
    let (n, i) = (u64::from(count.max(1)), u64::from(index.max(1) - 1));
    total / n + u64::from(i < total % n)
}

/// A seed of shard `index` of `count`: SplitMix64's finaliser over the
/// run's seed and the index, so neighbouring indices get unrelated streams;
/// `count == 1` leaves the seed as it is, so a single run keeps its
/// schedule.
pub(crate) fn derive_seed(seed: u64, index: u32, count: u32) -> u64 {
    if count <= 1 {
        return seed;
    }
    let mut z = seed ^ u64::from(index).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The configuration keys left out of the run id: what differs between
/// the shards of one run, or between the hosts they run on (how many
/// workers a host has, which backend and source addresses it uses, where
/// it writes), none of which changes the load the run describes.
pub(crate) const PER_SHARD_KEYS: &[&str] = &[
    "shard",
    "shards",
    "out",
    "workers",
    "pin",
    "quiet",
    "live_interval",
    "io",
    "uring_sqpoll",
    "source_addrs",
];

/// The id of the run `config` (the summary's `config` block) describes,
/// started at `start_at_unix_ns`: 32 hex digits of FNV-1a-128 over the
/// JSON text without [`PER_SHARD_KEYS`]. A fixed, unkeyed hash, so every
/// host computes the same id for the same run; it tells runs apart, it
/// does not guard against forgery.
pub(crate) fn run_id(config: &Value, start_at_unix_ns: Option<u64>) -> String {
    let mut v = config.clone();
    if let Some(o) = v.as_object_mut() {
        for k in PER_SHARD_KEYS {
            o.remove(*k);
        }
        // Each shard starts a built-in endpoint of its own, on a port of
        // its own.
        if o.get("builtin_endpoint") == Some(&Value::Bool(true)) {
            o.remove("endpoint");
        }
        // The instant, not its spelling: `+01:00` and `Z` forms of one
        // start are one run.
        o.remove("start_at");
        o.insert("start_at_unix_ns".into(), start_at_unix_ns.into());
    }
    let text = serde_json::to_string(&v).expect("a JSON value serializes");
    format!("{:032x}", fnv1a_128(text.as_bytes()))
}

/// FNV-1a, 128-bit (the published offset basis and prime).
fn fnv1a_128(bytes: &[u8]) -> u128 {
    const OFFSET: u128 = 0x6c62_272e_07bb_0142_62b8_2175_6295_c58d;
    const PRIME: u128 = 0x0000_0000_0100_0000_0000_0000_0000_013b;
    bytes
        .iter()
        .fold(OFFSET, |h, &b| (h ^ u128::from(b)).wrapping_mul(PRIME))
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use serde_json::json;

    use super::*;

    fn env_of(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let m: BTreeMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |k: &str| m.get(k).cloned()
    }

    fn auto(pairs: &[(&str, &str)], shards: Option<u32>) -> Result<Shard, String> {
        resolve(ShardSpec::Auto, shards, "flag", &env_of(pairs))
    }

    #[test]
    fn specs_parse_and_bad_ones_say_why() {
        assert_eq!(
            ShardSpec::parse("2/3"),
            Ok(ShardSpec::Fixed { index: 2, count: 3 })
        );
        assert_eq!(ShardSpec::parse("auto"), Ok(ShardSpec::Auto));
        assert_eq!(
            ShardSpec::parse("1/1"),
            Ok(ShardSpec::Fixed { index: 1, count: 1 })
        );
        for (bad, why) in [
            ("0/3", "counts from 1"),
            ("4/3", "at most N"),
            ("x", "expected I/N"),
            ("1/0", "N must be"),
            ("1/", "expected I/N"),
            ("-1/3", "expected I/N"),
            ("1/999999999", "N must be"),
        ] {
            let e = ShardSpec::parse(bad).unwrap_err();
            assert!(e.contains(why) && e.contains(bad), "{bad}: {e}");
        }
    }

    #[test]
    fn auto_reads_each_scheduler_and_counts_from_1() {
        let s = auto(&[("JOB_COMPLETION_INDEX", "0")], Some(3)).unwrap();
        assert_eq!(
            (s.index, s.count, s.source.as_str()),
            (1, 3, "JOB_COMPLETION_INDEX")
        );
        let s = auto(
            &[("JOB_COMPLETION_INDEX", "2"), ("LLMLOAD_SHARDS", "3")],
            None,
        )
        .unwrap();
        assert_eq!((s.index, s.count), (3, 3));
        let s = auto(&[("SLURM_PROCID", "1"), ("SLURM_NTASKS", "4")], None).unwrap();
        assert_eq!(
            (s.index, s.count, s.source.as_str()),
            (2, 4, "SLURM_PROCID")
        );
        let s = auto(
            &[("OMPI_COMM_WORLD_RANK", "0"), ("OMPI_COMM_WORLD_SIZE", "2")],
            None,
        )
        .unwrap();
        assert_eq!((s.index, s.count), (1, 2));
        let s = auto(&[("PMI_RANK", "4"), ("PMI_SIZE", "5")], None).unwrap();
        assert_eq!((s.index, s.count, s.source.as_str()), (5, 5, "PMI_RANK"));
        // The first one found wins.
        let s = auto(
            &[
                ("SLURM_PROCID", "0"),
                ("SLURM_NTASKS", "2"),
                ("PMI_RANK", "1"),
                ("PMI_SIZE", "2"),
            ],
            None,
        )
        .unwrap();
        assert_eq!(s.source, "SLURM_PROCID");
    }

    #[test]
    fn auto_errors_name_what_is_missing_or_malformed() {
        let e = auto(&[], None).unwrap_err();
        for name in [
            "JOB_COMPLETION_INDEX",
            "SLURM_PROCID",
            "OMPI_COMM_WORLD_RANK",
            "PMI_RANK",
        ] {
            assert!(e.contains(name), "{e}");
        }
        let e = auto(&[("JOB_COMPLETION_INDEX", "0")], None).unwrap_err();
        assert!(
            e.contains("--shards") && e.contains("LLMLOAD_SHARDS"),
            "{e}"
        );
        let e = auto(&[("SLURM_PROCID", "x"), ("SLURM_NTASKS", "2")], None).unwrap_err();
        assert!(e.contains("$SLURM_PROCID") && e.contains("'x'"), "{e}");
        let e = auto(&[("SLURM_PROCID", "0")], None).unwrap_err();
        assert!(e.contains("$SLURM_NTASKS"), "{e}");
        let e = auto(&[("PMI_RANK", "2"), ("PMI_SIZE", "2")], None).unwrap_err();
        assert!(e.contains("$PMI_RANK is 2"), "{e}");
        let e = auto(
            &[("JOB_COMPLETION_INDEX", "0"), ("LLMLOAD_SHARDS", "0")],
            None,
        )
        .unwrap_err();
        assert!(e.contains("$LLMLOAD_SHARDS"), "{e}");
        let e = auto(&[("SLURM_PROCID", "0"), ("SLURM_NTASKS", "2")], Some(3)).unwrap_err();
        assert!(e.contains("--shards 3"), "{e}");
    }

    #[test]
    fn auto_errors_spell_out_control_characters_of_variables() {
        let e = auto(
            &[("SLURM_PROCID", "\x1b]0;x\x07"), ("SLURM_NTASKS", "2")],
            None,
        )
        .unwrap_err();
        assert!(e.contains(r"'\u{1b}]0;x\u{7}'"), "{e}");
        assert!(!e.contains(['\x1b', '\x07']), "{e:?}");
    }

    #[test]
    fn shards_must_agree_with_a_fixed_spec() {
        let fixed = ShardSpec::Fixed { index: 1, count: 3 };
        let no_env = |_: &str| None;
        assert!(resolve(fixed, Some(3), "flag", &no_env).is_ok());
        let e = resolve(fixed, Some(4), "flag", &no_env).unwrap_err();
        assert!(e.contains("--shards 4") && e.contains("1/3"), "{e}");
    }

    #[test]
    fn shares_add_up_with_remainders_first() {
        for total in [0u64, 1, 2, 7, 8, 1000, 1001] {
            for n in 1..=7u32 {
                let parts: Vec<u64> = (1..=n).map(|i| share(total, i, n)).collect();
                assert_eq!(parts.iter().sum::<u64>(), total, "{total}/{n}");
                assert!(parts.windows(2).all(|w| w[0] >= w[1] && w[0] - w[1] <= 1));
            }
        }
        assert_eq!(
            (1..=3).map(|i| share(8, i, 3)).collect::<Vec<_>>(),
            [3, 3, 2]
        );
        let s = Shard {
            index: 3,
            count: 3,
            source: "flag".into(),
        };
        assert_eq!(s.share_at_least_1(2), 1);
        assert_eq!(Shard::whole().share(17), 17);
    }

    fn stage(load: Load, requests: Option<u64>) -> StagePlan {
        StagePlan {
            name: "main".into(),
            load,
            duration_ns: Some(5),
            requests,
            min_ns: None,
        }
    }

    fn shard(index: u32, count: u32) -> Shard {
        Shard {
            index,
            count,
            source: "flag".into(),
        }
    }

    #[test]
    fn stages_split_into_parts_that_add_up() {
        let open = Load::Open {
            kind: crate::plan::ArrivalKind::Poisson,
            rate_from: 30.0,
            rate_to: 90.0,
        };
        let mut concurrency = 0;
        let mut requests = 0;
        for i in 1..=3 {
            let mut stages = vec![
                stage(Load::Closed { concurrency: 8 }, Some(10)),
                stage(open, None),
                stage(Load::Offline, Some(100)),
            ];
            shard(i, 3).split_stages(&mut stages).unwrap();
            let Load::Closed { concurrency: c } = stages[0].load else {
                panic!()
            };
            concurrency += c;
            requests += stages[0].requests.unwrap() + stages[2].requests.unwrap();
            let Load::Open {
                rate_from, rate_to, ..
            } = stages[1].load
            else {
                panic!()
            };
            assert_eq!((rate_from, rate_to), (10.0, 30.0));
            assert_eq!(stages[1].duration_ns, Some(5));
        }
        assert_eq!((concurrency, requests), (8, 110));
        let mut few = vec![stage(Load::Closed { concurrency: 2 }, None)];
        let e = shard(3, 3).split_stages(&mut few).unwrap_err();
        assert!(e.contains("stage 'main'") && e.contains("--shard"), "{e}");
    }

    #[test]
    fn seeds_differ_per_shard_and_one_shard_keeps_its_own() {
        assert_eq!(derive_seed(42, 1, 1), 42);
        let seeds: std::collections::BTreeSet<u64> =
            (1..=64).map(|i| derive_seed(42, i, 64)).collect();
        assert_eq!(seeds.len(), 64);
        assert_ne!(derive_seed(0, 1, 2), derive_seed(1, 1, 2));
        assert_eq!(derive_seed(7, 2, 3), derive_seed(7, 2, 3));
    }

    #[test]
    fn uniform_phases_interleave() {
        let phases: Vec<f64> = (1..=4)
            .map(|index| {
                Shard {
                    index,
                    count: 4,
                    source: String::new(),
                }
                .uniform_phase()
            })
            .collect();
        assert_eq!(phases, [0.0, 0.25, 0.5, 0.75]);
    }

    #[test]
    fn run_ids_ignore_per_shard_keys_and_are_stable() {
        let a = json!({"rate": 10, "shard": "1/3", "out": "a", "workers": 3, "start_at": "x"});
        let b = json!({"rate": 10, "shard": "2/3", "out": "b", "workers": 1});
        assert_eq!(run_id(&a, Some(5)), run_id(&b, Some(5)));
        assert_ne!(run_id(&a, Some(5)), run_id(&a, Some(6)));
        assert_ne!(run_id(&a, None), run_id(&json!({"rate": 11}), None));
        assert_eq!(run_id(&a, None).len(), 32);
        let builtin = |port: u16| json!({"endpoint": format!("http://127.0.0.1:{port}/v1"), "builtin_endpoint": true});
        assert_eq!(run_id(&builtin(1), None), run_id(&builtin(2), None));
        // Pinned: the id must not change between versions or hosts.
        assert_eq!(
            format!("{:032x}", fnv1a_128(b"")),
            "6c62272e07bb014262b821756295c58d"
        );
        assert_eq!(
            format!("{:032x}", fnv1a_128(b"a")),
            "d228cb696f1a8caf78912b704e4a8964"
        );
    }
}
