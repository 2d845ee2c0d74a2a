//! The `--accuracy-dataset '[acc:]PATH[,key=value...]'` argument: the
//! dataset's own keys (`format`, `prompt`, `template`, …, read by
//! `DatasetSpec`) plus how its answers are scored and generated. MLPerf's
//! dotted spellings (`accuracy_config.eval_method=…`,
//! `generation_config_override.max_new_tokens=…`) are accepted beside ours,
//! so a `--dataset acc:…` string from an `inference-endpoint` command line
//! means the same here.

use std::path::Path;

use super::extract::Extractor;
use super::score::Scorer;
use crate::dataset::DatasetSpec;

/// Columns tried, in order, for the reference answers when `expected=` is
/// not given: MLPerf's default name first.
pub(crate) const EXPECTED_NAMES: [&str; 3] = ["ground_truth", "expected", "answer"];

/// Passes over the dataset an accuracy phase may make.
const MAX_REPEATS: u32 = 1000;

/// One accuracy dataset, parsed.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct AccuracySpec {
    /// As results name it: `name=`, else the file's stem (MLPerf's rule).
    pub name: String,
    /// The file and its columns; `columns.expected` is set when `expected=`
    /// was given, else found among `EXPECTED_NAMES` when loaded.
    pub dataset: DatasetSpec,
    pub scorer: Scorer,
    pub extractor: Extractor,
    /// Passes over the dataset (MLPerf's `num_repeats`).
    pub repeats: u32,
    /// Output tokens each request asks for, over the run's.
    pub max_tokens: Option<u32>,
    pub temperature: Option<f64>,
    pub top_p: Option<f64>,
    /// The spec as given, for the report.
    pub given: String,
}

impl AccuracySpec {
    /// Parses `[acc:]PATH[,key=value...]`. The path ends at the first comma.
    pub(crate) fn parse(arg: &str) -> Result<AccuracySpec, String> {
        let flag = "--accuracy-dataset";
        let body = arg.strip_prefix("acc:").unwrap_or(arg);
        let (path, options) = match body.split_once(',') {
            Some((p, o)) => (p, Some(o)),
            None => (body, None),
        };
        if path.is_empty() {
            return Err(format!(
                "{flag} '{arg}': expected [acc:]PATH[,key=value...]"
            ));
        }
        let mut name = None;
        let mut scorer = None;
        let mut extractor = None;
        let mut repeats = None;
        let mut max_tokens = None;
        let mut temperature = None;
        let mut top_p = None;
        let mut samples = None;
        // Keys for the dataset reader, passed on as they were written.
        let mut rest = vec![path.to_string()];
        for option in options.into_iter().flat_map(|o| o.split(',')) {
            let Some((key, value)) = option.split_once('=') else {
                return Err(format!(
                    "{flag} option '{option}': expected key=value (the path ends at the first comma)"
                ));
            };
            let twice = |was: bool| {
                if was {
                    Err(format!("{flag}: {key}= given twice"))
                } else {
                    Ok(())
                }
            };
            match key {
                "name" => {
                    if value.is_empty() {
                        return Err(format!("{flag} name=: expected a name"));
                    }
                    twice(name.replace(value.to_string()).is_some())?;
                }
                "scorer" | "eval_method" | "accuracy_config.eval_method" => {
                    twice(scorer.replace(Scorer::parse(value)?).is_some())?;
                }
                "extractor" | "accuracy_config.extractor" => {
                    twice(extractor.replace(Extractor::parse(value)?).is_some())?;
                }
                "repeats" | "num_repeats" | "accuracy_config.num_repeats" => {
                    let n = value
                        .parse::<u32>()
                        .ok()
                        .filter(|n| (1..=MAX_REPEATS).contains(n))
                        .ok_or_else(|| {
                            format!("{flag} {key}='{value}': expected a whole number from 1 to {MAX_REPEATS}")
                        })?;
                    twice(repeats.replace(n).is_some())?;
                }
                "expected" | "ground_truth" | "accuracy_config.ground_truth" => {
                    rest.push(format!("expected={value}"));
                }
                "max_output_tokens" | "generation_config_override.max_new_tokens" => {
                    let n = value
                        .parse::<u32>()
                        .ok()
                        .filter(|n| *n > 0)
                        .ok_or_else(|| {
                            format!("{flag} {key}='{value}': expected a positive whole number")
                        })?;
                    twice(max_tokens.replace(n).is_some())?;
                }
                "temperature" | "generation_config_override.temperature" => {
                    twice(temperature.replace(number(flag, key, value)?).is_some())?;
                }
                "samples" => {
                    let n = value.parse::<u64>().ok().filter(|n| *n > 0).ok_or_else(|| {
                        format!("{flag} samples='{value}': expected a positive whole number (rows to use)")
                    })?;
                    twice(samples.replace(n).is_some())?;
                }
                "top_p" | "generation_config_override.top_p" => {
                    twice(top_p.replace(number(flag, key, value)?).is_some())?;
                }
                _ => rest.push(option.to_string()),
            }
        }
        let mut dataset =
            DatasetSpec::parse(&rest.join(",")).map_err(|e| e.replace("--dataset", flag))?;
        dataset.limit = samples;
        let scorer = scorer.unwrap_or(Scorer::StringMatch);
        let extractor = extractor.unwrap_or(Extractor::Identity);
        if scorer == Scorer::Rouge && extractor != Extractor::Identity {
            return Err(format!(
                "{flag}: scorer=rouge scores the whole reply; extractor={} does not apply",
                extractor.name()
            ));
        }
        let name = name.unwrap_or_else(|| stem(&dataset.path));
        Ok(AccuracySpec {
            name,
            dataset,
            scorer,
            extractor,
            repeats: repeats.unwrap_or(1),
            max_tokens,
            temperature,
            top_p,
            given: arg.to_string(),
        })
    }

    /// The `--dataset` scored as it is (it maps `expected=`): string match,
    /// one pass, named by its file.
    pub(crate) fn of_dataset(d: &DatasetSpec) -> Result<AccuracySpec, String> {
        Ok(AccuracySpec {
            name: stem(&d.path),
            dataset: d.clone(),
            scorer: Scorer::StringMatch,
            extractor: Extractor::Identity,
            repeats: 1,
            max_tokens: None,
            temperature: None,
            top_p: None,
            given: d.path.display().to_string(),
        })
    }
}

fn number(flag: &str, key: &str, value: &str) -> Result<f64, String> {
    value
        .parse::<f64>()
        .ok()
        .filter(|x| x.is_finite() && *x >= 0.0)
        .ok_or_else(|| format!("{flag} {key}='{value}': expected a number"))
}

/// The file name without its extension (a directory's own name), as MLPerf
/// names a dataset by default.
fn stem(path: &Path) -> String {
    path.file_stem()
        .and_then(|s| s.to_str())
        .filter(|s| !s.is_empty())
        .unwrap_or("accuracy")
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(name: &str) -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!("llmload-accspec-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        let p = d.join(name);
        std::fs::write(&p, "{\"question\": \"q\", \"answer\": \"a\"}\n").unwrap();
        p
    }

    #[test]
    fn ours_and_mlperf_spellings_mean_the_same() {
        let p = file("gpqa.jsonl");
        let p = p.display();
        let ours = AccuracySpec::parse(&format!(
            "{p},expected=answer,scorer=pass_at_1,extractor=abcd,repeats=3,max_output_tokens=64"
        ))
        .unwrap();
        let theirs = AccuracySpec::parse(&format!(
            "acc:{p},accuracy_config.ground_truth=answer,accuracy_config.eval_method=pass_at_1,\
             accuracy_config.extractor=abcd_extractor,accuracy_config.num_repeats=3,\
             generation_config_override.max_new_tokens=64"
        ))
        .unwrap();
        assert_eq!(ours.dataset, theirs.dataset);
        assert_eq!(ours.name, "gpqa");
        assert_eq!(
            (ours.scorer, ours.extractor, ours.repeats, ours.max_tokens),
            (
                theirs.scorer,
                theirs.extractor,
                theirs.repeats,
                theirs.max_tokens
            )
        );
        assert_eq!(ours.dataset.columns.expected.as_deref(), Some("answer"));
        assert_eq!(ours.scorer, Scorer::PassAt1);
        assert_eq!(ours.extractor, Extractor::Abcd);
    }

    #[test]
    fn defaults_and_errors() {
        let p = file("qa.jsonl");
        let p = p.display();
        let s = AccuracySpec::parse(&format!("{p},name=mine,prompt=question")).unwrap();
        assert_eq!(s.name, "mine");
        assert_eq!(s.scorer, Scorer::StringMatch);
        assert_eq!(s.extractor, Extractor::Identity);
        assert_eq!(s.repeats, 1);
        assert_eq!(s.dataset.columns.expected, None);
        assert_eq!(s.dataset.columns.prompt.as_deref(), Some("question"));
        for (opts, want) in [
            ("repeats=0", "repeats='0': expected a whole number"),
            ("scorer=judge", "scorer 'judge'"),
            ("extractor=nope", "unknown extractor \"nope\""),
            (
                "scorer=rouge,extractor=abcd",
                "extractor=abcd does not apply",
            ),
            ("bogus=1", "--accuracy-dataset: unknown key 'bogus'"),
            ("name=a,name=b", "name= given twice"),
            ("max_output_tokens=0", "expected a positive whole number"),
        ] {
            let e = AccuracySpec::parse(&format!("{p},{opts}")).unwrap_err();
            assert!(e.contains(want), "{opts}: {e}");
        }
        let e = AccuracySpec::parse("acc:/nonexistent/x.jsonl").unwrap_err();
        assert!(e.contains("no such file"), "{e}");
    }
}
