//! `serve --echo` and `--answers FILE`: replies taken from the prompt, so a
//! test can make an endpoint answer known right and wrong answers. The
//! answers file is JSONL, one `{"prompt": …, "reply": …}` object a line
//! (`"answer"` may name the reply), read whole into a map once, before the
//! workers fork, which then share it copy-on-write and only read it. The
//! trade-off: the map holds every prompt and reply in memory, which is what
//! a test set of known answers needs and no more.

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::path::Path;

use serde::Deserialize;

/// Where a reply comes from for a prompt.
#[derive(Debug, Default)]
pub struct Replies {
    /// A prompt not in `answers` is its own reply.
    pub echo: bool,
    /// Replies by prompt, with the line each was read from.
    answers: HashMap<String, (String, usize)>,
    /// Whether an answers file was given (it may hold no line).
    mapped: bool,
}

/// A reply chosen for a prompt.
#[derive(Debug, PartialEq, Eq)]
pub enum Choice<'a> {
    /// Say this text.
    Text(&'a str),
    /// Not in the answers, and no echo: the generated text.
    Missed,
}

impl Replies {
    /// Echo only.
    pub fn echo() -> Self {
        Replies {
            echo: true,
            ..Replies::default()
        }
    }

    /// The answers in `path` (JSONL); errors name the file and line.
    pub fn load(path: &Path, echo: bool) -> Result<Self, String> {
        let bytes = crate::capped_read::bytes(path, crate::capped_read::LARGE)
            .map_err(|e| format!("--answers {}: cannot read: {e}", path.display()))?;
        Replies::parse(&bytes, &path.display().to_string(), echo)
    }

    /// The answers in `bytes`, read from the file called `name`.
    pub fn parse(bytes: &[u8], name: &str, echo: bool) -> Result<Self, String> {
        let mut answers: HashMap<String, (String, usize)> = HashMap::new();
        let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
        for (i, line) in bytes.split(|&b| b == b'\n').enumerate() {
            let lineno = i + 1;
            let at = |msg: String| format!("--answers {name}:{lineno}: {msg}");
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            // serde would also take an array as the struct's fields in order.
            if line.iter().find(|b| !b.is_ascii_whitespace()) != Some(&b'{') {
                return Err(at("expected a JSON object".to_string()));
            }
            let raw: Line = serde_json::from_slice(line).map_err(|e| at(json_error(&e)))?;
            let prompt = raw
                .prompt
                .ok_or_else(|| at("no \"prompt\" key".to_string()))?;
            let reply = match (raw.reply, raw.answer) {
                (Some(r), None) | (None, Some(r)) => r,
                (None, None) => return Err(at("no \"reply\" (or \"answer\") key".to_string())),
                (Some(_), Some(_)) => {
                    return Err(at(
                        "both \"reply\" and \"answer\"; give one of them".to_string()
                    ));
                }
            };
            match answers.entry(prompt) {
                Entry::Vacant(v) => {
                    v.insert((reply, lineno));
                }
                Entry::Occupied(o) if o.get().0 == reply => {}
                Entry::Occupied(o) => {
                    return Err(at(format!(
                        "prompt {} is also on line {} with a different reply",
                        quoted(o.key()),
                        o.get().1
                    )));
                }
            }
        }
        Ok(Replies {
            echo,
            answers,
            mapped: true,
        })
    }

    /// Prompts with a reply in the answers file.
    pub fn len(&self) -> usize {
        self.answers.len()
    }

    /// Whether no prompt has a reply in the answers file.
    pub fn is_empty(&self) -> bool {
        self.answers.is_empty()
    }

    /// Whether an answers file was given.
    pub fn mapped(&self) -> bool {
        self.mapped
    }

    /// The reply to `prompt`: its answer, else the prompt itself under echo.
    pub fn choose<'a>(&'a self, prompt: &'a str) -> Choice<'a> {
        match self.answers.get(prompt) {
            Some((reply, _)) => Choice::Text(reply),
            None if self.echo => Choice::Text(prompt),
            None => Choice::Missed,
        }
    }
}

/// One line of the answers file; other keys are allowed and ignored.
#[derive(Deserialize)]
struct Line {
    #[serde(default)]
    prompt: Option<String>,
    #[serde(default)]
    reply: Option<String>,
    #[serde(default)]
    answer: Option<String>,
}

/// serde_json's message with the column it names in front, the line being
/// the file's (each line is parsed alone).
fn json_error(e: &serde_json::Error) -> String {
    let s = e.to_string();
    let suffix = format!(" at line {} column {}", e.line(), e.column());
    let msg = s.strip_suffix(&suffix).unwrap_or(&s);
    format!("column {}: {msg}", e.column())
}

/// A prompt for a message: quoted, its first 60 characters.
fn quoted(s: &str) -> String {
    let mut short: String = s.chars().take(60).collect();
    if short.len() < s.len() {
        short.push('…');
    }
    serde_json::to_string(&short).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Replies, String> {
        Replies::parse(text.as_bytes(), "a.jsonl", false)
    }

    #[test]
    fn reads_replies_and_answers() {
        let r = parse(concat!(
            "\u{feff}{\"prompt\":\"2+2?\",\"reply\":\"4\"}\r\n",
            "\n",
            "  \n",
            "{\"id\":7,\"answer\":\"Paris\",\"prompt\":\"capital of \\\"France\\\"?\\n\"}\n",
            "{\"prompt\":\"2+2?\",\"reply\":\"4\"}\n",
            "{\"prompt\":\"\",\"reply\":\"\"}",
        ))
        .unwrap();
        assert_eq!(r.len(), 3);
        assert!(r.mapped() && !r.echo);
        assert_eq!(r.choose("2+2?"), Choice::Text("4"));
        assert_eq!(r.choose("capital of \"France\"?\n"), Choice::Text("Paris"));
        assert_eq!(r.choose(""), Choice::Text(""));
        assert_eq!(r.choose("2+2"), Choice::Missed);
    }

    #[test]
    fn echo_answers_what_the_map_does_not() {
        let r = Replies::parse(br#"{"prompt":"a","reply":"b"}"#, "f", true).unwrap();
        assert_eq!(r.choose("a"), Choice::Text("b"));
        assert_eq!(r.choose("c d"), Choice::Text("c d"));
        let e = Replies::echo();
        assert!(!e.mapped());
        assert_eq!(e.choose("x"), Choice::Text("x"));
    }

    #[test]
    fn errors_name_the_line_and_the_problem() {
        let cases = [
            (
                "{\"prompt\":\"a\",\"reply\":\"b\"}\n{\"prompt\":\"a\",\"reply\":\"c\"}\n",
                "--answers a.jsonl:2: prompt \"a\" is also on line 1 with a different reply",
            ),
            (
                "\n{\"prompt\":\"a\",\"reply\":\"b\"\n",
                "--answers a.jsonl:2: column 25: EOF while parsing an object",
            ),
            (
                "{\"reply\":\"b\"}",
                "--answers a.jsonl:1: no \"prompt\" key",
            ),
            (
                "{\"prompt\":\"a\"}",
                "--answers a.jsonl:1: no \"reply\" (or \"answer\") key",
            ),
            (
                "{\"prompt\":\"a\",\"reply\":\"b\",\"answer\":\"c\"}",
                "--answers a.jsonl:1: both \"reply\" and \"answer\"; give one of them",
            ),
            (
                "{\"prompt\":3,\"reply\":\"b\"}",
                "--answers a.jsonl:1: column 11: invalid type: integer `3`, expected a string",
            ),
            (
                "[\"a\",\"b\"]",
                "--answers a.jsonl:1: expected a JSON object",
            ),
            (
                "{\"prompt\":\"\u{e9}\",\"reply\":\"b\"} x",
                "--answers a.jsonl:1: column 29: trailing characters",
            ),
        ];
        for (text, want) in cases {
            assert_eq!(parse(text).err().as_deref(), Some(want), "{text:?}");
        }
        let e = Replies::parse(b"{\"prompt\":\"\xff\",\"reply\":\"b\"}", "f", false).unwrap_err();
        assert!(e.starts_with("--answers f:1: column "), "{e}");
        let e = Replies::load(Path::new("/nonexistent/answers.jsonl"), false).unwrap_err();
        assert!(
            e.starts_with("--answers /nonexistent/answers.jsonl: cannot read: "),
            "{e}"
        );
    }
}
