//! Prompts a run sends: a JSONL file (one object per line with a `prompt`
//! string), or the built-in prompt set. Loading happens once in the parent
//! before any request is serialized; every problem names the file and line.

mod builtin;

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::Path;

/// One prompt to send.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sample {
    pub prompt: String,
}

/// The built-in prompt set: varied short instructions, so a default run
/// exercises different request sizes without any file.
pub fn builtin() -> Vec<Sample> {
    builtin::PROMPTS
        .iter()
        .map(|p| Sample {
            prompt: p.to_string(),
        })
        .collect()
}

/// Loads a JSONL dataset. Blank lines are skipped; anything else that is not
/// an object with a string `prompt` is an error naming `path:line`.
pub fn load_jsonl(path: &Path) -> Result<Vec<Sample>, String> {
    let file = File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut samples = Vec::new();
    for (i, line) in BufReader::new(file).lines().enumerate() {
        let at = || format!("{}:{}", path.display(), i + 1);
        let line = line.map_err(|e| format!("{}: {e}", at()))?;
        if line.trim().is_empty() {
            continue;
        }
        let value: serde_json::Value =
            serde_json::from_str(&line).map_err(|e| format!("{}: not valid JSON: {e}", at()))?;
        let prompt = match value.get("prompt") {
            Some(serde_json::Value::String(s)) => s.clone(),
            Some(_) => return Err(format!("{}: field 'prompt' is not a string", at())),
            None if value.is_object() => {
                return Err(format!("{}: no 'prompt' field in this object", at()));
            }
            None => return Err(format!("{}: expected a JSON object", at())),
        };
        samples.push(Sample { prompt });
    }
    if samples.is_empty() {
        return Err(format!("{}: the dataset has no prompts", path.display()));
    }
    Ok(samples)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(name: &str, text: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("llmload-ds-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p
    }

    #[test]
    fn loads_prompts_and_skips_blank_lines() {
        let p = write(
            "ok.jsonl",
            "{\"prompt\": \"a\"}\n\n{\"prompt\": \"b\", \"x\": 1}\n",
        );
        let s = load_jsonl(&p).unwrap();
        assert_eq!(
            s,
            vec![Sample { prompt: "a".into() }, Sample { prompt: "b".into() }]
        );
    }

    #[test]
    fn errors_name_the_line() {
        let p = write("bad.jsonl", "{\"prompt\": \"a\"}\n{\"prompt\": 3}\n");
        let e = load_jsonl(&p).unwrap_err();
        assert!(
            e.ends_with("bad.jsonl:2: field 'prompt' is not a string"),
            "{e}"
        );
        let p = write("bad2.jsonl", "{\"prompt\": \"a\"}\n{oops\n");
        assert!(
            load_jsonl(&p)
                .unwrap_err()
                .contains("bad2.jsonl:2: not valid JSON")
        );
        let p = write("bad3.jsonl", "{\"text\": \"a\"}\n");
        assert!(
            load_jsonl(&p)
                .unwrap_err()
                .contains("bad3.jsonl:1: no 'prompt' field")
        );
        let p = write("empty.jsonl", "\n\n");
        assert!(load_jsonl(&p).unwrap_err().contains("no prompts"));
        assert!(load_jsonl(Path::new("/nonexistent/x.jsonl")).is_err());
    }

    #[test]
    fn builtin_set_is_varied() {
        let b = builtin();
        assert!(b.len() >= 16);
        let lens: std::collections::BTreeSet<_> = b.iter().map(|s| s.prompt.len()).collect();
        assert!(lens.len() > 8);
    }
}
