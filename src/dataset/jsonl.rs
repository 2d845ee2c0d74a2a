//! JSONL: one object per line, read into one reused line buffer and parsed
//! in place (`object::RowSeed`), so memory stays at one line however large
//! the file. The first object line is also kept whole once, to see
//! its keys when the prompt column must be found by name. Blank lines are
//! skipped silently; line numbers count every line, blank ones included.

use std::io::{self, BufRead, BufReader, Read};

use serde::de::DeserializeSeed;

use super::columns::ResolvedColumns;
use super::object::{FirstRow, Row, RowSeed};
use super::sink::{Loc, Sink};
use super::spec::DatasetSpec;
use super::{LoadStats, READ_BUF, Sample, open};

/// Parses one line (without requiring its newline) into a sample: the
/// loader's own per-line function, exposed for the fuzz target. `Err` says
/// what is wrong, without the file and line.
pub fn parse_line(line: &[u8], cols: &ResolvedColumns) -> Result<Sample, String> {
    parse(line, cols).and_then(|r| r.sample)
}

/// Parses one line the way the loader reads the first object line (kept
/// whole so its keys can be seen, then mapped). Exposed so the fuzz target
/// can check that both paths read every line alike.
pub fn parse_first_line(line: &[u8], cols: &ResolvedColumns) -> Result<Sample, String> {
    first_object(line).and_then(|f| f.into_row(cols).sample)
}

fn parse(line: &[u8], cols: &ResolvedColumns) -> Result<Row, String> {
    let text = utf8(line)?;
    let mut de = serde_json::Deserializer::from_str(text);
    let row = RowSeed(cols)
        .deserialize(&mut de)
        .map_err(|e| invalid_json(&e))?;
    de.end().map_err(|e| invalid_json(&e))?;
    Ok(row)
}

fn utf8(line: &[u8]) -> Result<&str, String> {
    std::str::from_utf8(line)
        .map_err(|e| format!("invalid UTF-8 at column {}", e.valid_up_to() + 1))
}

/// A one-line syntax error: the column matters, the line is always 1.
fn invalid_json(e: &serde_json::Error) -> String {
    format!(
        "invalid JSON at column {}: {}",
        e.column(),
        super::json::message(e)
    )
}

/// The first object line whole, or why it is not one.
fn first_object(line: &[u8]) -> Result<FirstRow, String> {
    match serde_json::from_str(utf8(line)?).map_err(|e| invalid_json(&e))? {
        FirstRow::Other(found) => Err(format!("expected a JSON object, found {found}")),
        row => Ok(row),
    }
}

/// Reads one line into `buf`, its `\n` included, unless it holds more than
/// `max` bytes before that `\n`: then `Ok(None)`, having read `max + 1`
/// bytes of it and no more. `Ok(Some(0))` is the end of the input.
fn read_line(r: &mut impl BufRead, buf: &mut Vec<u8>, max: usize) -> io::Result<Option<usize>> {
    let n = r.by_ref().take(max as u64 + 1).read_until(b'\n', buf)?;
    if n > max && buf.last() != Some(&b'\n') {
        return Ok(None);
    }
    Ok(Some(n))
}

pub(crate) fn load(
    spec: &DatasetSpec,
    on_sample: &mut dyn FnMut(Sample) -> Result<(), String>,
    max: usize,
) -> Result<LoadStats, String> {
    let file = spec.path.display().to_string();
    let template = spec.parsed_template()?;
    let mut reader = BufReader::with_capacity(READ_BUF, open(&spec.path, &file)?);
    let mut sink = Sink::new(file, spec.skip_invalid, on_sample);
    let mut cols: Option<ResolvedColumns> = None;
    let mut first_columns = Vec::new();
    let mut buf = Vec::with_capacity(64 * 1024);
    let mut lineno = 0u64;
    loop {
        buf.clear();
        let n = read_line(&mut reader, &mut buf, max)
            .map_err(|e| format!("{}: {e}", sink.at(Loc::Line(lineno + 1))))?
            .ok_or_else(|| {
                format!(
                    "{}: line too long (over {max} bytes)",
                    sink.at(Loc::Line(lineno + 1))
                )
            })?;
        if n == 0 {
            break;
        }
        lineno += 1;
        let mut line = buf.as_slice();
        // Without its line ending, so that syntax errors point at a column
        // of this line rather than at the start of the next one.
        line = line.strip_suffix(b"\n").unwrap_or(line);
        line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let loc = Loc::Line(lineno);
        let row = match &cols {
            Some(c) => parse(line, c),
            None => match first_object(line) {
                Ok(first) => {
                    let found = first.columns();
                    first_columns = found.iter().map(|(c, _)| c.clone()).collect();
                    let c = ResolvedColumns::detect(
                        &spec.columns,
                        template.as_ref(),
                        &found,
                        sink.file(),
                    )?;
                    let row = first.into_row(&c);
                    cols = Some(c);
                    Ok(row)
                }
                Err(reason) => Err(reason),
            },
        };
        match row {
            Ok(r) => sink.row(loc, r.sample, r.seen)?,
            Err(reason) => sink.invalid(loc, &reason)?,
        }
    }
    sink.finish(cols.as_ref(), &first_columns)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dataset::testutil::{TempDir, invalid_utf8, load_all};
    use crate::dataset::{DatasetSpec, load};
    use crate::protocol::Message;

    #[test]
    fn a_mapped_prompt_source_is_required_on_every_line() {
        let d = TempDir::new("jsonl-req");
        let p = d.file(
            "d.jsonl",
            "{\"q\": \"a\", \"ids\": [1, 2]}\n\n{\"q\": \"b\"}\n",
        );
        let e = load_all(&format!("{},prompt=q,input_tokens=ids", p.display())).unwrap_err();
        assert!(
            e.ends_with(
                "d.jsonl:3: field 'ids' (input_tokens): expected a non-empty array of token ids \
                 (integers 0..=4294967295), found nothing (no such field)"
            ),
            "{e}"
        );
    }

    #[test]
    fn optional_columns_may_be_absent_per_line() {
        let d = TempDir::new("jsonl-opt");
        let p = d.file(
            "d.jsonl",
            concat!(
                r#"{"id": 1, "q": "first", "sys": "be brief", "n": 16, "ans": "A"}"#,
                "\n\n",
                r#"{"q": "second \u00e9\n", "n": null, "ans": 42}"#,
                "\n   \n",
                r#"{"q": "third", "extra": {"nested": [1, 2, {"x": "y"}]}}"#,
            ),
        );
        let (got, stats) = load_all(&format!(
            "{},prompt=q,system=sys,max_tokens=n,expected=ans",
            p.display()
        ))
        .unwrap();
        assert_eq!(stats.loaded, 3);
        assert_eq!(stats.skipped, 0);
        assert_eq!(
            got[0],
            Sample {
                system: Some("be brief".into()),
                messages: vec![Message::user("first")],
                input_tokens: None,
                max_tokens: Some(16),
                expected: Some("A".into()),
                ..Sample::default()
            }
        );
        assert_eq!(got[1].messages[0].content, "second é\n");
        assert_eq!(got[1].max_tokens, None);
        assert_eq!(got[1].expected.as_deref(), Some("42"));
        assert_eq!(got[2], Sample::prompt("third"));
    }

    #[test]
    fn token_ids_and_messages() {
        let d = TempDir::new("jsonl-tok");
        let p = d.file(
            "d.jsonl",
            "{\"ids\": [101, 7, 0], \"text\": \"ignored\"}\n{\"ids\": [5]}\n",
        );
        let (got, _) = load_all(&format!("{},input_tokens=ids", p.display())).unwrap();
        assert_eq!(got[0].input_tokens, Some(vec![101, 7, 0]));
        assert!(got[0].messages.is_empty());
        assert_eq!(got[1].input_tokens, Some(vec![5]));

        let p = d.file(
            "m.jsonl",
            concat!(
                r#"{"messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "hi"},"#,
                r#" {"role": "assistant", "content": "hello"}, {"role": "user", "content": [{"type": "text", "text": "and "}, {"type": "text", "text": "you?"}]}]}"#,
                "\n"
            ),
        );
        let (got, _) = load_all(p.to_str().unwrap()).unwrap();
        assert_eq!(got[0].system.as_deref(), Some("S"));
        assert_eq!(
            got[0].messages,
            vec![
                Message::user("hi"),
                Message {
                    role: "assistant".into(),
                    content: "hello".into()
                },
                Message::user("and you?"),
            ]
        );
    }

    #[test]
    fn auto_detection_of_each_name_and_errors() {
        let d = TempDir::new("jsonl-detect");
        for name in crate::dataset::columns::PROMPT_NAMES {
            let p = d.file(
                &format!("{name}.jsonl"),
                format!("{{\"id\": 1, \"{name}\": \"hello\"}}\n"),
            );
            let (got, _) = load_all(p.to_str().unwrap()).unwrap();
            assert_eq!(got, vec![Sample::prompt("hello")], "{name}");
        }
        let p = d.file(
            "conv.jsonl",
            "{\"conversations\": [{\"from\": \"human\", \"value\": \"hey\"}], \"id\": \"x\"}\n",
        );
        let (got, _) = load_all(p.to_str().unwrap()).unwrap();
        // A message list, counted through a chat template (MLPerf's rule).
        let want = Sample {
            from_messages: true,
            ..Sample::prompt("hey")
        };
        assert_eq!(got, vec![want]);

        let p = d.file("none.jsonl", "{\"id\": 1, \"body\": \"x\"}\n");
        let e = load_all(p.to_str().unwrap()).unwrap_err();
        assert!(
            e.contains("none.jsonl: no prompt column among prompt, text, text_input, input, question, query, instruction, user_prompt, input_text, problem"),
            "{e}"
        );
        assert!(e.contains("columns found: id, body"), "{e}");
        let p = d.file("two.jsonl", "{\"prompt\": \"a\", \"query\": \"b\"}\n");
        let e = load_all(p.to_str().unwrap()).unwrap_err();
        assert!(
            e.contains("several possible prompt columns (prompt, query)"),
            "{e}"
        );
        // Detection happens on the first valid object: a bad first line is
        // skipped under skip_invalid and the next one decides.
        let p = d.file("late.jsonl", "[1]\nnot json\n{\"text\": \"t\"}\n");
        let (got, stats) = load_all(&format!("{},skip_invalid=true", p.display())).unwrap();
        assert_eq!(got, vec![Sample::prompt("t")]);
        assert_eq!(stats.skipped, 2);
    }

    #[test]
    fn malformed_lines_are_named() {
        let d = TempDir::new("jsonl-bad");
        for (body, want) in [
            (
                "{\"prompt\": \"ok\"}\n{\"prompt\": 5}\n",
                "b.jsonl:2: field 'prompt': expected a non-empty string, found a number (5)",
            ),
            (
                "{\"prompt\": \"ok\"}\n\n{\"prompt\": \"x\"\n",
                "b.jsonl:3: invalid JSON at column 14: EOF while parsing an object",
            ),
            (
                "{\"prompt\": \"ok\"}\n{\"prompt\": \"a\"} x\n",
                "b.jsonl:2: invalid JSON at column 17: trailing characters",
            ),
            (
                "{\"prompt\": \"ok\"}\n[\"prompt\"]\n",
                "b.jsonl:2: expected a JSON object, found an array",
            ),
            (
                "{\"prompt\": \"ok\"}\n{\"prompt\": \"\"}\n",
                "b.jsonl:2: field 'prompt': expected a non-empty string, found an empty string",
            ),
            (
                "{\"prompt\": \"ok\"}\n{\"other\": 1}\n",
                "b.jsonl:2: field 'prompt': expected a non-empty string, found nothing",
            ),
            (
                "{\"prompt\": \"ok\"}\n{\"prompt\": \"a\u{1}\"}\n",
                "b.jsonl:2: invalid UTF-8 at column 14",
            ),
            (
                "{\"prompt\": \"ok\", \"max_tokens\": 3}\n{\"prompt\": \"a\", \"max_tokens\": -1}\n",
                "b.jsonl:2: field 'max_tokens': expected a positive integer, found a number (-1)",
            ),
            (
                "7\n",
                "b.jsonl:1: expected a JSON object, found a number (7)",
            ),
        ] {
            // \u{1} stands for a byte that is not UTF-8.
            let p = d.file("b.jsonl", invalid_utf8(body));
            let mut arg = p.display().to_string();
            if body.contains("max_tokens") {
                arg.push_str(",max_tokens=max_tokens");
            }
            let e = load_all(&arg).unwrap_err();
            assert!(e.contains(want), "{body:?}: {e}");
            assert!(e.contains(&format!("{}", p.display())), "{e}");
        }
    }

    #[test]
    fn skip_invalid_counts_and_keeps_five_examples() {
        let d = TempDir::new("jsonl-skip");
        let mut body = String::from("{\"prompt\": \"ok\"}\n");
        for i in 0..8 {
            body.push_str(&format!("{{\"prompt\": {i}}}\n"));
        }
        body.push_str("{\"prompt\": \"also ok\"}\n");
        let p = d.file("s.jsonl", &body);
        let (got, stats) = load_all(&format!("{},skip_invalid=true", p.display())).unwrap();
        assert_eq!(got.len(), 2);
        assert_eq!(stats.loaded, 2);
        assert_eq!(stats.skipped, 8);
        assert_eq!(stats.skip_examples.len(), 5);
        assert!(
            stats.skip_examples[0].ends_with(
                "s.jsonl:2: field 'prompt': expected a non-empty string, found a number (0)"
            ),
            "{:?}",
            stats.skip_examples
        );
        assert!(stats.skip_examples[4].contains("s.jsonl:6:"));
    }

    #[test]
    fn empty_datasets_are_errors() {
        let d = TempDir::new("jsonl-empty");
        let p = d.file("e.jsonl", "\n  \n\n");
        let e = load_all(p.to_str().unwrap()).unwrap_err();
        assert!(
            e.ends_with("e.jsonl: no samples (the dataset is empty)"),
            "{e}"
        );
        let p = d.file("e2.jsonl", "{\"prompt\": 1}\n{\"prompt\": \"\"}\n");
        let e = load_all(&format!("{},skip_invalid=true", p.display())).unwrap_err();
        assert!(
            e.contains("e2.jsonl: no valid samples (2 invalid skipped; the first: "),
            "{e}"
        );
        assert!(e.contains("e2.jsonl:1: field 'prompt'"), "{e}");
    }

    #[test]
    fn bom_and_crlf() {
        let d = TempDir::new("jsonl-bom");
        let p = d.file(
            "b.jsonl",
            b"\xEF\xBB\xBF{\"prompt\": \"a\"}\r\n\r\n{\"prompt\": \"b\"}\r\n".as_slice(),
        );
        let (got, _) = load_all(p.to_str().unwrap()).unwrap();
        assert_eq!(got, vec![Sample::prompt("a"), Sample::prompt("b")]);
    }

    #[test]
    fn reads_from_a_pipe() {
        let d = TempDir::new("jsonl-fifo");
        let p = d.path().join("fifo");
        nix::unistd::mkfifo(&p, nix::sys::stat::Mode::S_IRWXU).unwrap();
        let writer = {
            let p = p.clone();
            std::thread::spawn(move || {
                std::fs::write(&p, b"\xEF\xBB\xBF{\"text\": \"piped\"}\n").unwrap();
            })
        };
        let (got, _) = load_all(&format!("{},format=jsonl", p.display())).unwrap();
        writer.join().unwrap();
        assert_eq!(got, vec![Sample::prompt("piped")]);
    }

    #[test]
    fn misspelt_optional_mapping_is_an_error() {
        let d = TempDir::new("jsonl-typo");
        let p = d.file("t.jsonl", "{\"prompt\": \"a\", \"max_tokens\": 5}\n");
        let e = load_all(&format!("{},max_tokens=max_token", p.display())).unwrap_err();
        assert!(
            e.contains("max_tokens=max_token: no row has a field 'max_token' (the first row has: prompt, max_tokens)"),
            "{e}"
        );
    }

    #[test]
    fn callback_errors_stop_the_load() {
        let d = TempDir::new("jsonl-cb");
        let p = d.file("c.jsonl", "{\"prompt\": \"a\"}\n{\"prompt\": \"b\"}\n");
        let spec = DatasetSpec::parse(p.to_str().unwrap()).unwrap();
        let mut n = 0;
        let e = load(&spec, &mut |_| {
            n += 1;
            Err("arena full".to_string())
        })
        .unwrap_err();
        assert_eq!((e.as_str(), n), ("arena full", 1));
    }

    #[test]
    fn parse_line_is_total() {
        let c = ResolvedColumns::from_map(&crate::dataset::ColumnMap {
            prompt: Some("prompt".into()),
            ..Default::default()
        })
        .unwrap();
        assert_eq!(
            parse_line(b"{\"prompt\": \"x\"}", &c).unwrap(),
            Sample::prompt("x")
        );
        assert_eq!(
            parse_first_line(b"{\"prompt\": \"x\"}", &c).unwrap(),
            Sample::prompt("x")
        );
        for bad in [
            &b""[..],
            b"{",
            b"\xff",
            b"{\"prompt\": \"\\ud800\"}",
            b"[[[[[[[[",
            b"{}{}",
        ] {
            assert!(parse_line(bad, &c).is_err(), "{bad:?}");
            assert!(parse_first_line(bad, &c).is_err(), "{bad:?}");
        }
    }
}
