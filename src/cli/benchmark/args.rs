//! MLPerf's `benchmark` command lines, parsed by hand: its flags are
//! dotted paths into its config schema (`--runtime.max-duration-ms 5000`)
//! beside short aliases (`--num-samples`), which argh cannot express. Each
//! flag becomes an override at its YAML path, set over the config tree
//! (`from-config`'s file, or an empty one), so the command line and the
//! YAML are read by one reader with one set of errors. A flag that is not
//! MLPerf's is refused here; one that is MLPerf's but cannot be honoured is
//! refused by the reader, named by the flag.

use serde_json::Value;

/// The three MLPerf benchmark subcommands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Sub {
    Offline,
    Online,
    FromConfig,
}

/// What one flag sets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// Takes one value.
    Value,
    /// Takes a comma-separated list and may repeat.
    List,
    /// Takes no value; sets this boolean.
    Switch(bool),
}

/// MLPerf's short flags (aliases of dotted paths), as its CLI defines them.
const ALIASES: &[(&str, &str, Kind)] = &[
    ("--endpoints", "endpoint_config.endpoints", Kind::List),
    ("--api-key", "endpoint_config.api_key", Kind::Value),
    ("--api-type", "endpoint_config.api_type", Kind::Value),
    ("--model", "model_params.name", Kind::Value),
    ("--seed", "model_params.seed", Kind::Value),
    (
        "--max-output-tokens",
        "model_params.max_new_tokens",
        Kind::Value,
    ),
    (
        "--min-output-tokens",
        "model_params.min_new_tokens",
        Kind::Value,
    ),
    ("--streaming", "model_params.streaming", Kind::Value),
    ("--tokenizer", "model_params.tokenizer_name", Kind::Value),
    (
        "--duration",
        "settings.runtime.min_duration_ms",
        Kind::Value,
    ),
    (
        "--num-samples",
        "settings.runtime.n_samples_to_issue",
        Kind::Value,
    ),
    ("--load-pattern", "settings.load_pattern.type", Kind::Value),
    (
        "--target-qps",
        "settings.load_pattern.target_qps",
        Kind::Value,
    ),
    (
        "--concurrency",
        "settings.load_pattern.target_concurrency",
        Kind::Value,
    ),
    (
        "--use-legacy-loadgen-qps-metrics",
        "settings.load_pattern.use_legacy_loadgen_qps_metrics",
        Kind::Switch(true),
    ),
    (
        "--no-use-legacy-loadgen-qps-metrics",
        "settings.load_pattern.use_legacy_loadgen_qps_metrics",
        Kind::Switch(false),
    ),
    ("--workers", "settings.client.num_workers", Kind::Value),
    ("--num-workers", "settings.client.num_workers", Kind::Value),
    (
        "--max-connections",
        "settings.client.max_connections",
        Kind::Value,
    ),
    ("--insecure", "settings.client.insecure", Kind::Switch(true)),
    (
        "--max-concurrent-warmup-connects",
        "settings.client.max_concurrent_warmup_connects",
        Kind::Value,
    ),
    ("--warmup", "settings.warmup.enabled", Kind::Switch(true)),
    (
        "--warmup-requests",
        "settings.warmup.n_requests",
        Kind::Value,
    ),
    ("--warmup-salt", "settings.warmup.salt", Kind::Switch(true)),
    (
        "--no-warmup-salt",
        "settings.warmup.salt",
        Kind::Switch(false),
    ),
    (
        "--warmup-drain",
        "settings.warmup.drain",
        Kind::Switch(true),
    ),
    (
        "--warmup-seed",
        "settings.warmup.warmup_random_seed",
        Kind::Value,
    ),
    (
        "--warmup-drain-timeout",
        "settings.drain.warmup_timeout_s",
        Kind::Value,
    ),
    (
        "--performance-drain-timeout",
        "settings.drain.performance_timeout_s",
        Kind::Value,
    ),
    (
        "--accuracy-drain-timeout",
        "settings.drain.accuracy_timeout_s",
        Kind::Value,
    ),
    (
        "--metrics-drain-timeout",
        "settings.drain.metrics_drain_timeout_s",
        Kind::Value,
    ),
    (
        "--metrics-tokenizer-workers",
        "settings.drain.metrics_tokenizer_workers",
        Kind::Value,
    ),
    ("--profile", "settings.profiling.engine", Kind::Value),
    ("--profile-urls", "settings.profiling.urls", Kind::List),
    (
        "--early-stopping",
        "settings.early_stopping.enabled",
        Kind::Switch(true),
    ),
    (
        "--no-early-stopping",
        "settings.early_stopping.enabled",
        Kind::Switch(false),
    ),
    (
        "--service-ready-timeout",
        "settings.service_ready_timeout_s",
        Kind::Value,
    ),
    ("--report-dir", "report_dir", Kind::Value),
    ("--timeout", "timeout", Kind::Value),
    (
        "--enable-cpu-affinity",
        "enable_cpu_affinity",
        Kind::Switch(true),
    ),
    (
        "--no-cpu-affinity",
        "enable_cpu_affinity",
        Kind::Switch(false),
    ),
];

/// Dotted-flag prefixes and the YAML section each names (`--runtime.x`
/// is `settings.runtime.x`).
const SECTIONS: &[(&str, &str)] = &[
    ("model-params", "model_params"),
    ("endpoint-config", "endpoint_config"),
    ("settings", "settings"),
    ("runtime", "settings.runtime"),
    ("load-pattern", "settings.load_pattern"),
    ("client", "settings.client"),
    ("warmup", "settings.warmup"),
    ("drain", "settings.drain"),
    ("profiling", "settings.profiling"),
    ("early-stopping", "settings.early_stopping"),
];

/// One flag's value at its YAML path.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Override {
    pub path: String,
    pub value: Value,
    /// The flag as given, for errors.
    pub flag: String,
}

/// A parsed `llmload benchmark` command line.
#[derive(Debug, PartialEq)]
pub(crate) struct Parsed {
    pub sub: Sub,
    /// `-c/--config` (from-config).
    pub config: Option<String>,
    /// `--dataset`, each in MLPerf's syntax, in order.
    pub datasets: Vec<String>,
    pub overrides: Vec<Override>,
    /// `--mode` (`--accuracy-only`: `acc`).
    pub mode: Option<String>,
    /// `--datasets-dir`: where MLPerf's predefined datasets are cached.
    pub datasets_dir: Option<String>,
    pub help: bool,
}

/// Parses the arguments after `benchmark`.
pub(crate) fn parse(args: &[String]) -> Result<Parsed, String> {
    let mut it = args.iter().peekable();
    let sub = match it.next().map(String::as_str) {
        Some("offline") => Sub::Offline,
        Some("online") => Sub::Online,
        Some("from-config") => Sub::FromConfig,
        Some("-h" | "--help" | "help") | None => {
            return Ok(Parsed {
                sub: Sub::Offline,
                config: None,
                datasets: Vec::new(),
                overrides: Vec::new(),
                mode: None,
                datasets_dir: None,
                help: true,
            });
        }
        Some(other) => {
            return Err(format!(
                "'{other}': expected offline, online or from-config"
            ));
        }
    };
    let mut out = Parsed {
        sub,
        config: None,
        datasets: Vec::new(),
        overrides: Vec::new(),
        mode: None,
        datasets_dir: None,
        help: false,
    };
    while let Some(arg) = it.next() {
        let (flag, inline) = match arg.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f, Some(v.to_string())),
            _ => (arg.as_str(), None),
        };
        let value = |it: &mut std::iter::Peekable<std::slice::Iter<'_, String>>| {
            inline
                .clone()
                .or_else(|| it.next().cloned())
                .ok_or_else(|| format!("{flag}: expected a value"))
        };
        match flag {
            "-h" | "--help" => out.help = true,
            // MLPerf's launcher verbosity, taken anywhere on its line;
            // llmload prints the same at every level.
            f if crate::cli::spelling::is_verbosity(f) => {}
            "--dataset" => out.datasets.push(value(&mut it)?),
            "--datasets-dir" => out.datasets_dir = Some(value(&mut it)?),
            "-c" | "--config" => {
                if sub != Sub::FromConfig {
                    return Err(format!(
                        "{flag}: only `benchmark from-config` reads a config"
                    ));
                }
                out.config = Some(value(&mut it)?);
            }
            "--mode" => match value(&mut it)?.as_str() {
                m @ ("perf" | "acc" | "both") => out.mode = Some(m.to_string()),
                m => return Err(format!("--mode '{m}': expected perf, acc or both")),
            },
            // MLPerf's alias of `--mode acc`.
            "--accuracy-only" => out.mode = Some("acc".into()),
            _ => {
                let Some((path, kind)) = lookup(flag) else {
                    return Err(format!(
                        "{flag}: not a flag of MLPerf's benchmark command (see llmload benchmark --help)"
                    ));
                };
                let v = match kind {
                    Kind::Switch(b) => match &inline {
                        None => Value::Bool(b),
                        Some(v) => Value::String(v.clone()),
                    },
                    Kind::Value => {
                        // A dotted flag with nothing after it is a switch,
                        // as MLPerf's `--client.insecure`.
                        let next_is_flag = it.peek().is_none_or(|n| n.starts_with("--"));
                        if inline.is_none() && next_is_flag && !is_alias(flag) {
                            Value::Bool(true)
                        } else {
                            Value::String(value(&mut it)?)
                        }
                    }
                    Kind::List => {
                        let items: Vec<Value> = value(&mut it)?
                            .split(',')
                            .filter(|s| !s.trim().is_empty())
                            .map(|s| Value::String(s.trim().to_string()))
                            .collect();
                        match out.overrides.iter_mut().find(|o| o.path == path) {
                            Some(Override {
                                value: Value::Array(have),
                                ..
                            }) => {
                                have.extend(items);
                                continue;
                            }
                            _ => Value::Array(items),
                        }
                    }
                };
                out.overrides.retain(|o| o.path != path);
                out.overrides.push(Override {
                    path,
                    value: v,
                    flag: flag.to_string(),
                });
            }
        }
    }
    Ok(out)
}

fn is_alias(flag: &str) -> bool {
    ALIASES.iter().any(|(f, _, _)| *f == flag)
}

/// The YAML path a flag sets and how it takes its value.
fn lookup(flag: &str) -> Option<(String, Kind)> {
    if let Some((_, path, kind)) = ALIASES.iter().find(|(f, _, _)| *f == flag) {
        return Some((path.to_string(), *kind));
    }
    let dotted = flag.strip_prefix("--")?;
    let (head, rest) = dotted.split_once('.')?;
    let (_, section) = SECTIONS.iter().find(|(h, _)| *h == head)?;
    if rest.is_empty() || rest.split('.').any(str::is_empty) {
        return None;
    }
    let path = format!("{section}.{}", rest.replace('-', "_"));
    // The dotted spelling of an aliased list is a list too.
    let kind =
        ALIASES
            .iter()
            .find(|(_, p, _)| *p == path)
            .map_or(Kind::Value, |(_, _, k)| match k {
                Kind::List => Kind::List,
                _ => Kind::Value,
            });
    Some((path, kind))
}

/// The flag that names `path` in an error: the one given on this command
/// line when there is one, else MLPerf's short flag for it.
pub(crate) fn flag_for(path: &str, given: &[Override]) -> Option<String> {
    let under = |p: &str| {
        path == p || path.starts_with(&format!("{p}.")) || path.starts_with(&format!("{p}["))
    };
    if let Some(o) = given.iter().rev().find(|o| under(&o.path)) {
        return Some(o.flag.clone());
    }
    ALIASES
        .iter()
        .find(|(f, p, _)| under(p) && !f.starts_with("--no-"))
        .map(|(f, _, _)| f.to_string())
}

/// Splits an MLPerf `--dataset` string
/// (`[perf:|acc:]PATH[,key=value...]`, dotted keys nesting) into a
/// `datasets[]` entry.
pub(crate) fn dataset_entry(arg: &str) -> Result<Value, String> {
    let mut parts = arg.split(',');
    let head = parts.next().unwrap_or_default();
    let (kind, path) = match head.split_once(':') {
        Some(("perf", p)) => ("performance", p),
        Some(("acc", p)) => ("accuracy", p),
        _ => ("performance", head),
    };
    if path.is_empty() {
        return Err(format!(
            "--dataset '{arg}': expected [perf:|acc:]PATH[,key=value...]"
        ));
    }
    let mut entry = serde_json::json!({"type": kind, "path": path});
    for kv in parts {
        let Some((key, value)) = kv.split_once('=') else {
            let hint = if kv.contains(':') {
                " (did you mean '=' instead of ':'?)"
            } else {
                ""
            };
            return Err(format!(
                "--dataset option '{kv}'{hint}: expected key=value (e.g. parser.prompt=article)"
            ));
        };
        crate::config::mlperf::tree::set(&mut entry, key, Value::String(value.to_string()));
    }
    Ok(entry)
}

/// What `llmload benchmark --help` prints.
pub(crate) const HELP: &str = "\
Usage: llmload benchmark offline|online|from-config [FLAGS]

MLPerf Inference Endpoint's command lines (inference-endpoint benchmark …),
run by llmload with MLPerf's run rules and result files (--preset mlperf).

  offline       every query at once (max_throughput)
  online        --load-pattern poisson --target-qps N, or
                --load-pattern concurrency --concurrency N
  from-config   -c/--config FILE.yaml (MLPerf's YAML schema)

Flags (MLPerf's names; the dotted form of each works too):
  --endpoints URL[,URL...]     --model NAME           --api-key KEY
  --api-type openai|openai_completions|sglang         --tokenizer PATH
  --dataset [perf:]PATH[,parser.prompt=COL][,parser.system=COL][,format=jsonl|json|csv]
  --load-pattern poisson|concurrency   --target-qps N   --concurrency N
  --duration MS|600s|10m (a minimum)   --num-samples N (exact count)
  --max-output-tokens N   --min-output-tokens N   --streaming auto|on|off
  --workers N   --max-connections N   --insecure   --report-dir DIR
  --warmup --warmup-requests N   --no-early-stopping   --mode perf|acc|both
  --accuracy-only   --dataset acc:PATH[,accuracy_config.eval_method=pass_at_1,...]
  --runtime.*  --settings.*  --model-params.*  --load-pattern.*  --client.*
  (e.g. --runtime.max-duration-ms 5000 --model-params.temperature 0)
  --datasets-dir DIR   where MLPerf's predefined datasets (name: cnn_dailymail::llama3_8b)
                       are cached; never downloaded (llmload datasets list)

A flag MLPerf has but llmload cannot honour is an error that names it.
Accuracy datasets (acc:) run after the performance phase, one request at a
time (--mode acc: alone); scorers string_match, pass_at_1 (exact_match),
rouge; extractors identity, abcd, boxed_math, python_code, function_call
(also by MLPerf's *_extractor ids).
";

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    fn paths(p: &Parsed) -> Vec<(String, Value)> {
        p.overrides
            .iter()
            .map(|o| (o.path.clone(), o.value.clone()))
            .collect()
    }

    #[test]
    fn aliases_and_dotted_flags_set_yaml_paths() {
        let p = parse(&args(
            "online --endpoints http://a:1,http://b:2 --model m --load-pattern poisson \
             --target-qps 50 --runtime.max-duration-ms 5000 --settings.runtime.scheduler-random-seed 7 \
             --model-params.temperature=0 --client.insecure --num-samples 40 --dataset perf:d.jsonl",
        ))
        .unwrap();
        assert_eq!(p.sub, Sub::Online);
        assert_eq!(p.datasets, ["perf:d.jsonl"]);
        let s = |v: &str| Value::String(v.into());
        assert_eq!(
            paths(&p),
            vec![
                (
                    "endpoint_config.endpoints".into(),
                    serde_json::json!(["http://a:1", "http://b:2"])
                ),
                ("model_params.name".into(), s("m")),
                ("settings.load_pattern.type".into(), s("poisson")),
                ("settings.load_pattern.target_qps".into(), s("50")),
                ("settings.runtime.max_duration_ms".into(), s("5000")),
                ("settings.runtime.scheduler_random_seed".into(), s("7")),
                ("model_params.temperature".into(), s("0")),
                ("settings.client.insecure".into(), Value::Bool(true)),
                ("settings.runtime.n_samples_to_issue".into(), s("40")),
            ]
        );
    }

    #[test]
    fn repeated_endpoints_add_up_and_switches_negate() {
        let p = parse(&args(
            "offline --endpoints http://a:1 --endpoints http://b:2 --no-early-stopping",
        ))
        .unwrap();
        assert_eq!(
            paths(&p),
            vec![
                (
                    "endpoint_config.endpoints".into(),
                    serde_json::json!(["http://a:1", "http://b:2"])
                ),
                ("settings.early_stopping.enabled".into(), Value::Bool(false)),
            ]
        );
    }

    #[test]
    fn refusals_name_the_flag() {
        let p = parse(&args("offline --model m -v --verbose -vv")).unwrap();
        assert_eq!(p.overrides.len(), 1, "verbosity sets no field: {p:?}");
        let e = parse(&args("offline --frobnicate 3")).unwrap_err();
        assert!(e.starts_with("--frobnicate: not a flag of MLPerf's"), "{e}");
        assert_eq!(
            parse(&args("offline --mode acc")).unwrap().mode.as_deref(),
            Some("acc")
        );
        let p = parse(&args("offline --accuracy-only")).unwrap();
        assert_eq!(p.mode.as_deref(), Some("acc"));
        let e = parse(&args("offline --mode fast")).unwrap_err();
        assert!(e.contains("expected perf, acc or both"), "{e}");
        let e = parse(&args("sideways")).unwrap_err();
        assert!(e.contains("expected offline, online or from-config"), "{e}");
        let e = parse(&args("offline --model")).unwrap_err();
        assert_eq!(e, "--model: expected a value");
        let e = parse(&args("offline -c x.yaml")).unwrap_err();
        assert!(e.contains("from-config"), "{e}");
        assert!(parse(&args("offline --runtime.")).is_err());
    }

    #[test]
    fn errors_find_the_flag_of_a_path() {
        let p = parse(&args("online --runtime.max-duration-ms 5 --duration 10")).unwrap();
        assert_eq!(
            flag_for("settings.runtime.max_duration_ms", &p.overrides).as_deref(),
            Some("--runtime.max-duration-ms")
        );
        assert_eq!(
            flag_for("endpoint_config.endpoints", &[]).as_deref(),
            Some("--endpoints")
        );
        assert_eq!(
            flag_for("settings.early_stopping.enabled", &[]).as_deref(),
            Some("--early-stopping")
        );
        assert_eq!(flag_for("settings.client.transport.linger", &[]), None);
    }

    #[test]
    fn dataset_strings_nest_dotted_keys() {
        assert_eq!(
            dataset_entry("perf:d.csv,parser.prompt=q,parser.system=s,format=csv").unwrap(),
            serde_json::json!({"type": "performance", "path": "d.csv", "format": "csv",
                               "parser": {"prompt": "q", "system": "s"}})
        );
        assert_eq!(dataset_entry("acc:e.jsonl").unwrap()["type"], "accuracy");
        let e = dataset_entry("d.csv,parser.prompt:q").unwrap_err();
        assert!(e.contains("did you mean '='"), "{e}");
    }
}
