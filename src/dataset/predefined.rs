//! MLPerf's predefined datasets, named in a config instead of a path
//! (`name: cnn_dailymail::llama3_8b`, `DATASET::PRESET`): where MLPerf's
//! own download leaves each one, the columns it has, and the preset's
//! prompt (a `str.format` template or a column mapping) as MLPerf's
//! `dataset_manager/predefined/*/presets.py` defines it.
//!
//! A run never downloads: the file is looked for in a cache directory laid
//! out as MLPerf's `--datasets-dir` is (`DIR/<id>/…`, the paths below), in
//! order `--datasets-dir`, `$LLMLOAD_DATASETS_DIR`, `./dataset_cache` (MLPerf's default) and
//! `$HF_HOME/llmload-datasets` (`~/.cache/huggingface/llmload-datasets`
//! without `HF_HOME`). A missing file is an error naming the dataset, the
//! file and every place looked, raised when the run loads it — `validate`
//! only notes it, as MLPerf's `validate-yaml` loads no data.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use super::spec::Format;

/// One predefined dataset.
pub(crate) struct Predefined {
    /// MLPerf's `DATASET_ID`.
    pub id: &'static str,
    /// The file under a cache directory, as MLPerf's `generate()` writes it.
    pub file: &'static str,
    pub format: Format,
    /// Columns MLPerf requires (`COLUMN_NAMES`).
    pub columns: &'static [&'static str],
    /// Where MLPerf downloads it from.
    pub source: &'static str,
    pub presets: &'static [Preset],
    /// Why llmload cannot send this dataset's samples, if it cannot.
    pub unsupported: Option<&'static str>,
}

/// A named preset: how a row becomes a prompt.
pub(crate) struct Preset {
    pub name: &'static str,
    /// A `str.format` template over the row's columns.
    pub template: Option<&'static str>,
    /// The prompt and system columns, when the preset remaps instead.
    pub prompt: Option<&'static str>,
    pub system: Option<&'static str>,
}

const GPTOSS_MATH: &str =
    "{question}\nPlease reason step by step, and put your final answer within \\boxed{{}}.";
const GPTOSS_GPQA: &str = "{question}\n\n(A) {choice1}\n(B) {choice2}\n(C) {choice3}\n(D) {choice4}\n\nExpress your final answer as the corresponding option 'A', 'B', 'C', or 'D'.";
const GPTOSS_LCB: &str = "You are a python coding expert that solves problems step-by-step.\nYou must provide the reasoning to arriving at your solution and the code to solve the problem.\nDo not try simulating the code execution. The code must be enclosed within ```python delimiters.\n\n\n{question}\n### Format: You will use the following starter code to write the solution to the problem and enclose your code within delimiters.\n```python\n{starter_code}\n```\n";
// MLPerf formats it with the preset's default max_new_tokens (128): the
// factory calls the preset with no arguments.
const LLAMA3_CNN: &str = "Summarize the following news article in 128 tokens. Please output the summary only, without any other text.\n\nArticle:\n{article}\n\nSummary:";

const fn template(name: &'static str, t: &'static str) -> Preset {
    Preset {
        name,
        template: Some(t),
        prompt: None,
        system: None,
    }
}

impl Preset {
    /// A preset whose samples llmload cannot build (see `unsupported`).
    const fn unsupported(name: &'static str) -> Preset {
        Preset {
            name,
            template: None,
            prompt: None,
            system: None,
        }
    }
}

const SHOPIFY_COLUMNS: &[&str] = &[
    "product_title",
    "product_description",
    "product_image_base64",
    "product_image_format",
    "potential_product_categories",
    "ground_truth_category",
    "ground_truth_brand",
    "ground_truth_is_secondhand",
];

const MULTIMODAL: &str = "its q3vl preset sends a product image as multimodal content parts, which llmload's datasets do not build";

/// MLPerf's registry (`Dataset.PREDEFINED`), by `DATASET_ID`.
pub(crate) const ALL: &[Predefined] = &[
    Predefined {
        id: "aime25",
        file: "aime25/aime25.parquet",
        format: Format::Parquet,
        columns: &["question", "answer"],
        source: "Hugging Face opencompass/AIME2025 (AIME2025-I, AIME2025-II; test)",
        presets: &[template("gptoss", GPTOSS_MATH)],
        unsupported: None,
    },
    Predefined {
        id: "bfcl_v4",
        file: "bfcl_v4/bfcl_v4_single_turn.parquet",
        format: Format::Parquet,
        columns: &["messages", "tools", "tool_choice"],
        source: "Hugging Face gorilla-llm/Berkeley-Function-Calling-Leaderboard (or MLCommons R2)",
        presets: &[Preset::unsupported("function_calling")],
        unsupported: Some(
            "its samples carry tool definitions (tools, tool_choice), which llmload does not send",
        ),
    },
    Predefined {
        id: "cnn_dailymail",
        file: "cnn_dailymail/cnn_dailymail.parquet",
        format: Format::Parquet,
        columns: &["article", "highlights"],
        source: "Hugging Face abisee/cnn_dailymail 3.0.0 (validation)",
        presets: &[template("llama3_8b", LLAMA3_CNN)],
        unsupported: None,
    },
    Predefined {
        id: "gpqa",
        file: "gpqa/diamond/gpqa_diamond.parquet",
        format: Format::Parquet,
        columns: &[
            "question",
            "choice1",
            "choice2",
            "choice3",
            "choice4",
            "ground_truth",
            "domain",
            "subdomain",
        ],
        source: "Hugging Face Idavidrein/gpqa gpqa_diamond (train; gated)",
        presets: &[template("gptoss", GPTOSS_GPQA)],
        unsupported: None,
    },
    Predefined {
        id: "legacy_mlperf_deepseek_r1",
        file: "legacy_mlperf_deepseek_r1/deepseek_r1_eval.parquet",
        format: Format::Parquet,
        columns: &["input_tokens", "ground_truth", "dataset", "question"],
        source: "MLPerf's examples/07_DeepSeekR1_Example/data/deepseek_r1_eval.parquet (git-LFS)",
        presets: &[],
        unsupported: None,
    },
    Predefined {
        id: "livecodebench",
        file: "livecodebench/release_v6/livecodebench_release_v6.parquet",
        format: Format::Parquet,
        columns: &["question_id", "question", "starter_code"],
        source: "Hugging Face livecodebench/code_generation_lite release_v6",
        presets: &[template("gptoss", GPTOSS_LCB)],
        unsupported: None,
    },
    Predefined {
        id: "open_orca",
        file: "open_orca/mlperf-inference/open_orca_gpt4_tokenized_llama.sampled_24576.jsonl",
        format: Format::Jsonl,
        columns: &["question", "system_prompt", "output"],
        source: "MLCommons R2 llama-2-70b-open-orca-dataset (converted from its pickle)",
        presets: &[Preset {
            name: "llama2_70b",
            template: None,
            prompt: Some("question"),
            system: Some("system_prompt"),
        }],
        unsupported: None,
    },
    Predefined {
        id: "shopify_product_catalogue",
        file: "shopify_product_catalogue/train/shopify_product_catalogue_train.parquet",
        format: Format::Parquet,
        columns: SHOPIFY_COLUMNS,
        source: "Hugging Face Shopify/product-catalogue (train)",
        presets: &[Preset::unsupported("q3vl")],
        unsupported: Some(MULTIMODAL),
    },
    Predefined {
        id: "shopify_product_catalogue_8k",
        file: "shopify_product_catalogue_8k/train/shopify_product_catalogue_8k_train.parquet",
        format: Format::Parquet,
        columns: SHOPIFY_COLUMNS,
        source: "Hugging Face nvidia/Shopify-product-catalogue-8k (train)",
        presets: &[Preset::unsupported("q3vl")],
        unsupported: Some(MULTIMODAL),
    },
    Predefined {
        id: "swe_bench",
        file: "swe_bench/verified/test/swe_bench_verified_test.parquet",
        format: Format::Parquet,
        columns: &["instance_id", "prompt"],
        source: "Hugging Face princeton-nlp/SWE-bench_Verified (test)",
        presets: &[],
        unsupported: None,
    },
];

/// MLPerf's `random` dataset is generated from a tokenizer's vocabulary,
/// not read: it has no entry in `ALL`.
pub(crate) const RANDOM: &str = "random";

/// Environment variable naming the cache directory (MLPerf's
/// `--datasets-dir`).
pub(crate) const ENV_DIR: &str = "LLMLOAD_DATASETS_DIR";

/// `NAME` or `NAME::PRESET` split, when `NAME` is one of MLPerf's.
pub(crate) fn lookup(name: &str) -> Option<(&'static Predefined, Option<&str>)> {
    let (id, preset) = match name.split_once("::") {
        Some((id, p)) => (id, Some(p)),
        None => (name, None),
    };
    ALL.iter().find(|d| d.id == id).map(|d| (d, preset))
}

/// Whether a dataset `name` from a config is MLPerf's by name.
pub(crate) fn is_predefined(name: &str) -> bool {
    let id = name.split_once("::").map_or(name, |(id, _)| id);
    id == RANDOM || lookup(name).is_some()
}

/// `--datasets-dir`, set once by the command line before any lookup.
static DIR: OnceLock<PathBuf> = OnceLock::new();

/// Makes `dir` the first cache directory looked in (`--datasets-dir`).
pub(crate) fn set_dir(dir: PathBuf) {
    let _ = DIR.set(dir);
}

/// The cache directories in lookup order, from `--datasets-dir` and `env`.
pub(crate) fn cache_dirs(env: &dyn Fn(&str) -> Option<String>) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = DIR.get().cloned().into_iter().collect();
    if let Some(d) = env(ENV_DIR).filter(|d| !d.is_empty()) {
        dirs.push(PathBuf::from(d));
    }
    dirs.push(PathBuf::from("dataset_cache"));
    let hf = env("HF_HOME")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .or_else(|| {
            env("HOME")
                .filter(|d| !d.is_empty())
                .map(|h| Path::new(&h).join(".cache/huggingface"))
        });
    if let Some(hf) = hf {
        dirs.push(hf.join("llmload-datasets"));
    }
    dirs
}

fn process_env(k: &str) -> Option<String> {
    std::env::var(k).ok()
}

/// How a predefined dataset becomes a dataset spec.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Resolved {
    /// The cached file, or `None` when no cache directory has it.
    pub path: Option<PathBuf>,
    pub format: Format,
    pub template: Option<&'static str>,
    pub prompt: Option<&'static str>,
    pub system: Option<&'static str>,
}

/// Resolves `name` (`DATASET[::PRESET]`) against the cache directories
/// from `env`. An unknown dataset or preset, and a dataset llmload cannot
/// send, is an error; a missing file is not (see `missing`).
pub(crate) fn resolve_in(
    name: &str,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Resolved, String> {
    let Some((d, preset)) = lookup(name) else {
        return Err(format!(
            "'{name}' is not one of MLPerf's predefined datasets ({}, {RANDOM})",
            ALL.iter().map(|d| d.id).collect::<Vec<_>>().join(", ")
        ));
    };
    let preset = match preset {
        None => None,
        Some(p) => Some(d.presets.iter().find(|x| x.name == p).ok_or_else(|| {
            let known: Vec<_> = d.presets.iter().map(|x| x.name).collect();
            format!(
                "predefined dataset '{}' has no preset '{p}' (its presets: {})",
                d.id,
                if known.is_empty() {
                    "none".to_string()
                } else {
                    known.join(", ")
                }
            )
        })?),
    };
    if let Some(why) = d.unsupported {
        return Err(format!(
            "predefined dataset '{name}' is not supported: {why}"
        ));
    }
    let path = cache_dirs(env)
        .into_iter()
        .map(|dir| dir.join(d.file))
        .find(|p| p.is_file());
    Ok(Resolved {
        path,
        format: d.format,
        template: preset.and_then(|p| p.template),
        prompt: preset.and_then(|p| p.prompt),
        system: preset.and_then(|p| p.system),
    })
}

/// `resolve_in` with the process environment.
pub(crate) fn resolve(name: &str) -> Result<Resolved, String> {
    resolve_in(name, &process_env)
}

/// The error for a dataset no cache directory holds: the dataset, the
/// file and every place looked.
pub(crate) fn missing_in(name: &str, env: &dyn Fn(&str) -> Option<String>) -> String {
    let Some((d, _)) = lookup(name) else {
        return format!("'{name}' is not one of MLPerf's predefined datasets");
    };
    let looked: Vec<String> = cache_dirs(env)
        .iter()
        .map(|dir| dir.join(d.file).display().to_string())
        .collect();
    format!(
        "predefined dataset '{name}' is not in the local dataset cache (llmload never downloads): \
         expected {} (columns {}; MLPerf downloads it from {}); looked in {} \
         (set ${ENV_DIR} to the directory MLPerf's --datasets-dir names)",
        d.file,
        d.columns.join(", "),
        d.source,
        looked.join(", ")
    )
}

/// `missing_in` with the process environment.
pub(crate) fn missing(name: &str) -> String {
    missing_in(name, &process_env)
}

/// `llmload datasets list`: one line per dataset.
pub(crate) fn list() -> String {
    let mut out = String::new();
    for d in ALL {
        let presets: Vec<_> = d.presets.iter().map(|p| p.name).collect();
        let state = match (d.unsupported, resolve(d.id).ok().and_then(|r| r.path)) {
            (Some(_), _) => "not supported".to_string(),
            (None, Some(p)) => format!("cached at {}", p.display()),
            (None, None) => "not cached".to_string(),
        };
        out += &format!(
            "{:<30} presets: {:<12} {state}\n",
            d.id,
            if presets.is_empty() {
                "-".to_string()
            } else {
                presets.join(",")
            }
        );
    }
    out += &format!(
        "{RANDOM:<30} presets: {:<12} generated from a tokenizer's vocabulary; not supported\n",
        "-"
    );
    out
}

/// `llmload datasets show NAME`: what the dataset needs.
pub(crate) fn show(name: &str) -> Result<String, String> {
    if name.split_once("::").map_or(name, |(id, _)| id) == RANDOM {
        return Ok(format!(
            "{RANDOM}\n  generated: MLPerf decodes random token ids with the model's tokenizer \
             (generate_params: num_sequences, input_seq_length, range_ratio, random_seed)\n  \
             not supported: use llmload's synthetic prompts (--synthetic) instead\n"
        ));
    }
    let Some((d, _)) = lookup(name) else {
        return Err(format!(
            "'{name}' is not one of MLPerf's predefined datasets (llmload datasets list names them)"
        ));
    };
    let mut out = format!(
        "{}\n  file: {} ({})\n  columns: {}\n  source: {}\n",
        d.id,
        d.file,
        match d.format {
            Format::Jsonl => "jsonl",
            _ => "parquet",
        },
        d.columns.join(", "),
        d.source
    );
    for p in d.presets {
        out += &format!("  preset {}::{}: ", d.id, p.name);
        out += &match (p.template, p.prompt) {
            (Some(t), _) => format!("template {t:?}\n"),
            (None, Some(c)) => format!(
                "prompt column {c}{}\n",
                p.system
                    .map(|s| format!(", system column {s}"))
                    .unwrap_or_default()
            ),
            (None, None) => "not supported\n".to_string(),
        };
    }
    if let Some(why) = d.unsupported {
        out += &format!("  not supported: {why}\n");
    }
    out += "  looked for in:\n";
    for dir in cache_dirs(&process_env) {
        let p = dir.join(d.file);
        let state = if p.is_file() { "found" } else { "absent" };
        out += &format!("    {} ({state})\n", p.display());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env_of<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |k| {
            pairs
                .iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn every_example_name_is_predefined() {
        for n in [
            "cnn_dailymail::llama3_8b",
            "open_orca::llama2_70b",
            "aime25::gptoss",
            "gpqa::gptoss",
            "livecodebench::gptoss",
            "shopify_product_catalogue::q3vl",
            "shopify_product_catalogue_8k::q3vl",
            "random",
            "swe_bench",
            "bfcl_v4",
        ] {
            assert!(is_predefined(n), "{n}");
        }
        assert!(!is_predefined("perf-test"));
        assert!(!is_predefined("cnndailymail"));
    }

    #[test]
    fn presets_are_mlperfs_templates_and_mappings() {
        let none = env_of(&[]);
        let r = resolve_in("cnn_dailymail::llama3_8b", &none).unwrap();
        assert_eq!(r.template, Some(LLAMA3_CNN));
        assert!(LLAMA3_CNN.starts_with("Summarize the following news article in 128 tokens."));
        assert_eq!(r.format, Format::Parquet);
        let r = resolve_in("open_orca::llama2_70b", &none).unwrap();
        assert_eq!(
            (r.prompt, r.system),
            (Some("question"), Some("system_prompt"))
        );
        assert_eq!(r.format, Format::Jsonl);
        // Every template parses with our str.format reader.
        for d in ALL {
            for p in d.presets {
                if let Some(t) = p.template {
                    crate::dataset::Template::parse(t).unwrap();
                }
            }
        }
    }

    #[test]
    fn unknown_presets_and_unsendable_datasets_are_named() {
        let none = env_of(&[]);
        let e = resolve_in("gpqa::llama", &none).unwrap_err();
        assert!(
            e.contains("no preset 'llama'") && e.contains("gptoss"),
            "{e}"
        );
        let e = resolve_in("shopify_product_catalogue::q3vl", &none).unwrap_err();
        assert!(e.contains("multimodal"), "{e}");
        let e = resolve_in("nope", &none).unwrap_err();
        assert!(e.contains("cnn_dailymail") && e.contains("random"), "{e}");
    }

    #[test]
    fn the_cache_is_looked_up_in_order_and_a_miss_names_every_place() {
        let dir = std::env::temp_dir().join(format!("llmload-predef-{}", std::process::id()));
        let file = dir.join("aime25/aime25.parquet");
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(&file, b"x").unwrap();
        let d = dir.display().to_string();
        let pairs = [(ENV_DIR, d.as_str()), ("HF_HOME", "/nonexistent/hf")];
        let env = env_of(&pairs);
        let r = resolve_in("aime25::gptoss", &env).unwrap();
        assert_eq!(r.path.as_deref(), Some(file.as_path()));
        let r = resolve_in("gpqa::gptoss", &env).unwrap();
        assert_eq!(r.path, None);
        let e = missing_in("gpqa::gptoss", &env);
        for want in [
            "'gpqa::gptoss'",
            "gpqa/diamond/gpqa_diamond.parquet",
            &format!("{d}/gpqa/diamond/gpqa_diamond.parquet"),
            "dataset_cache/gpqa/diamond/gpqa_diamond.parquet",
            "/nonexistent/hf/llmload-datasets/gpqa/diamond/gpqa_diamond.parquet",
        ] {
            assert!(e.contains(want), "{want} not in {e}");
        }
        let home = [("HOME", "/h")];
        let dirs = cache_dirs(&env_of(&home));
        assert_eq!(
            dirs,
            [
                PathBuf::from("dataset_cache"),
                PathBuf::from("/h/.cache/huggingface/llmload-datasets")
            ]
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
