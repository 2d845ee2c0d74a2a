//! A JSON array of objects, streamed element by element: a `SeqAccess`
//! visitor over `serde_json::Deserializer::from_reader` hands each element
//! to the sink as soon as it is parsed, so the array is never built. Reading
//! through `io::Read` is slower than parsing a slice, the price of not
//! holding the file. A syntax error ends the load even under
//! `skip_invalid`: past it there is no telling where the next element
//! starts. Elements are counted from 0, as a JSON path would index them.

use std::cell::Cell;
use std::fmt;
use std::io::{self, BufReader, Read};
use std::rc::Rc;

use serde::de::{self, Deserializer, SeqAccess, Visitor};

use super::columns::ResolvedColumns;
use super::object::{FirstRow, RowSeed};
use super::sink::{Loc, Sink};
use super::spec::DatasetSpec;
use super::template::Template;
use super::{LoadStats, READ_BUF, Sample, open};

/// serde_json's message without its " at line L column C" suffix.
pub(crate) fn message(e: &serde_json::Error) -> String {
    let s = e.to_string();
    let suffix = format!(" at line {} column {}", e.line(), e.column());
    match s.strip_suffix(&suffix) {
        Some(m) => m.to_string(),
        None => s,
    }
}

/// The parser's input: fails once more than `max` bytes came through since
/// `since` was last zeroed (at the start of each element), so one element
/// cannot grow without bound (serde_json buffers a long string whole).
struct Capped<R> {
    inner: R,
    since: Rc<Cell<u64>>,
    max: u64,
}

impl<R: Read> Read for Capped<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        let since = self.since.get() + n as u64;
        self.since.set(since);
        if since > self.max {
            return Err(io::Error::other("element too long"));
        }
        Ok(n)
    }
}

struct State<'s, 'a> {
    spec: &'s DatasetSpec,
    template: Option<Template>,
    /// Bytes read since the element being read began (see `Capped`).
    since: Rc<Cell<u64>>,
    sink: Sink<'a>,
    cols: Option<ResolvedColumns>,
    first_columns: Vec<String>,
    /// The element being read.
    index: u64,
    in_array: bool,
    /// Why the visitor stopped early, when it was not a syntax error.
    fatal: Option<String>,
}

struct ArrayVisitor<'v, 's, 'a>(&'v mut State<'s, 'a>);

impl<'de> Visitor<'de> for ArrayVisitor<'_, '_, '_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON array of objects")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let st = self.0;
        st.in_array = true;
        loop {
            st.since.set(0);
            let loc = Loc::Element(st.index);
            let row = match &st.cols {
                Some(c) => match seq.next_element_seed(RowSeed(c))? {
                    Some(r) => Ok(r),
                    None => break,
                },
                None => match seq.next_element::<FirstRow>()? {
                    None => break,
                    Some(FirstRow::Other(found)) => {
                        Err(format!("expected a JSON object, found {found}"))
                    }
                    Some(first) => {
                        let found = first.columns();
                        st.first_columns = found.iter().map(|(c, _)| c.clone()).collect();
                        match ResolvedColumns::detect(
                            &st.spec.columns,
                            st.template.as_ref(),
                            &found,
                            st.sink.file(),
                        ) {
                            Ok(c) => {
                                let row = first.into_row(&c);
                                st.cols = Some(c);
                                Ok(row)
                            }
                            Err(e) => return Err(stop(st, e)),
                        }
                    }
                },
            };
            let result = match row {
                Ok(r) => st.sink.row(loc, r.sample, r.seen),
                Err(reason) => st.sink.invalid(loc, &reason),
            };
            if let Err(e) = result {
                return Err(stop(st, e));
            }
            st.index += 1;
        }
        Ok(())
    }
}

/// Keeps the real reason and hands serde an error that unwinds the parse.
fn stop<E: de::Error>(st: &mut State<'_, '_>, reason: String) -> E {
    st.fatal = Some(reason);
    E::custom("load stopped")
}

pub(crate) fn load(
    spec: &DatasetSpec,
    on_sample: &mut dyn FnMut(Sample) -> Result<(), String>,
    max: usize,
) -> Result<LoadStats, String> {
    let file = spec.path.display().to_string();
    let since = Rc::new(Cell::new(0));
    let reader = Capped {
        inner: BufReader::with_capacity(READ_BUF, open(&spec.path, &file)?),
        since: since.clone(),
        max: max as u64,
    };
    let mut de = serde_json::Deserializer::from_reader(reader);
    let too_long = |st: &State<'_, '_>| {
        if st.in_array {
            let at = st.sink.at(Loc::Element(st.index));
            format!("{at}: element too long (over {max} bytes)")
        } else {
            format!("{file}: over {max} bytes before the array starts")
        }
    };
    let mut st = State {
        spec,
        template: spec.parsed_template()?,
        since,
        sink: Sink::new(file.clone(), spec.skip_invalid, on_sample),
        cols: None,
        first_columns: Vec::new(),
        index: 0,
        in_array: false,
        fatal: None,
    };
    let result = (&mut de).deserialize_seq(ArrayVisitor(&mut st));
    if let Some(reason) = st.fatal {
        return Err(reason);
    }
    if let Err(e) = result {
        if e.is_io() && st.since.get() > max as u64 {
            return Err(too_long(&st));
        }
        let at = format!("line {} column {}", e.line(), e.column());
        return Err(if st.in_array {
            format!(
                "{}: invalid JSON at {at}: {}",
                st.sink.at(Loc::Element(st.index)),
                message(&e)
            )
        } else if e.is_eof() && e.line() <= 1 && e.column() == 0 {
            format!("{file}: no samples (the file is empty)")
        } else {
            format!(
                "{file}: expected a JSON array of objects ({} at {at})",
                message(&e)
            )
        });
    }
    st.since.set(0);
    de.end().map_err(|e| {
        if e.is_io() && st.since.get() > max as u64 {
            return format!("{file}: over {max} bytes after the array ends");
        }
        format!(
            "{file}: unexpected data after the array at line {} column {}",
            e.line(),
            e.column()
        )
    })?;
    st.sink.finish(st.cols.as_ref(), &st.first_columns)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dataset::testutil::{TempDir, load_all};
    use crate::protocol::Message;

    #[test]
    fn good_array_every_column_kind() {
        let d = TempDir::new("json-good");
        let p = d.file(
            "d.json",
            r#"[
              {"question": "q1", "sys": "S", "ids": [9, 8], "n": 12, "gold": ["a", 1]},
              {"question": "q2 \"quoted\"", "ids": [1], "extra": {"deep": [[], {}]}}
            ]"#,
        );
        let (got, stats) = load_all(&format!(
            "{},prompt=question,system=sys,input_tokens=ids,max_tokens=n,expected=gold",
            p.display()
        ))
        .unwrap();
        assert_eq!(stats.loaded, 2);
        assert_eq!(
            got[0],
            Sample {
                system: Some("S".into()),
                messages: vec![Message::user("q1")],
                input_tokens: Some(vec![9, 8]),
                max_tokens: Some(12),
                expected: Some(r#"["a",1]"#.into()),
                ..Sample::default()
            }
        );
        assert_eq!(got[1].messages[0].content, "q2 \"quoted\"");
        assert_eq!(got[1].input_tokens, Some(vec![1]));
    }

    #[test]
    fn detection_messages_and_bom() {
        let d = TempDir::new("json-detect");
        let p = d.file(
            "d.json",
            b"\xEF\xBB\xBF[{\"messages\": [{\"role\": \"user\", \"content\": \"hi\"}], \"id\": 3},\r\n {\"messages\": [{\"role\": \"system\", \"content\": \"s\"}, {\"role\": \"user\", \"content\": \"yo\"}]}]\r\n".as_slice(),
        );
        let (got, _) = load_all(p.to_str().unwrap()).unwrap();
        let want = Sample {
            from_messages: true,
            ..Sample::prompt("hi")
        };
        assert_eq!(got[0], want);
        assert_eq!(got[1].system.as_deref(), Some("s"));
        assert!(got[1].from_messages);
        let p = d.file("n.json", r#"[{"id": 1, "body": "x"}]"#);
        let e = load_all(p.to_str().unwrap()).unwrap_err();
        assert!(
            e.contains("n.json: no prompt column") && e.contains("columns found: id, body"),
            "{e}"
        );
    }

    #[test]
    fn bad_elements_are_named_by_index() {
        let d = TempDir::new("json-bad");
        let p = d.file(
            "b.json",
            r#"[{"prompt": "a"}, {"prompt": "b"}, {"prompt": 3}, {"prompt": "d"}]"#,
        );
        let e = load_all(p.to_str().unwrap()).unwrap_err();
        assert!(
            e.ends_with(
                "b.json: element 2: field 'prompt': expected a non-empty string, found a number (3)"
            ),
            "{e}"
        );
        let p = d.file("b2.json", "[{\"prompt\": \"a\"}, 5, {\"prompt\": \"c\"}]");
        let e = load_all(p.to_str().unwrap()).unwrap_err();
        assert!(
            e.ends_with("b2.json: element 1: expected a JSON object, found a number (5)"),
            "{e}"
        );
        let (got, stats) = load_all(&format!("{},skip_invalid=true", p.display())).unwrap();
        assert_eq!(got, vec![Sample::prompt("a"), Sample::prompt("c")]);
        assert_eq!(stats.skipped, 1);
        assert!(
            stats.skip_examples[0]
                .ends_with("b2.json: element 1: expected a JSON object, found a number (5)")
        );
        // A syntax error names the element and the position in the file,
        // and is not skippable.
        let p = d.file(
            "b3.json",
            "[{\"prompt\": \"a\"},\n {\"prompt\": \"b\" \"x\"}]",
        );
        let e = load_all(&format!("{},skip_invalid=true", p.display())).unwrap_err();
        assert!(
            e.contains("b3.json: element 1: invalid JSON at line 2 column 17: expected `,` or `}`"),
            "{e}"
        );
    }

    #[test]
    fn not_an_array_empty_and_trailing() {
        let d = TempDir::new("json-shape");
        let p = d.file("o.json", r#"{"prompt": "a"}"#);
        let e = load_all(p.to_str().unwrap()).unwrap_err();
        assert!(
            e.contains("o.json: expected a JSON array of objects (invalid type: map"),
            "{e}"
        );
        let p = d.file("e.json", "[]");
        let e = load_all(p.to_str().unwrap()).unwrap_err();
        assert!(
            e.ends_with("e.json: no samples (the dataset is empty)"),
            "{e}"
        );
        let p = d.file("z.json", "");
        let e = load_all(p.to_str().unwrap()).unwrap_err();
        assert!(e.ends_with("z.json: no samples (the file is empty)"), "{e}");
        let p = d.file("t.json", "[{\"prompt\": \"a\"}] [");
        let e = load_all(p.to_str().unwrap()).unwrap_err();
        assert!(
            e.contains("t.json: unexpected data after the array at line 1 column"),
            "{e}"
        );
        let p = d.file("u.json", "[{\"prompt\": \"a\"}");
        let e = load_all(p.to_str().unwrap()).unwrap_err();
        assert!(
            e.contains("u.json: element 1: invalid JSON at line 1 column 16: EOF"),
            "{e}"
        );
    }
}
