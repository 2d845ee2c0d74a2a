//! CSV with a header row, read record by record into one reused
//! `ByteRecord` (quoted fields may hold commas and newlines; a record is
//! named by the line it starts on). The csv crate's own record positions
//! lag behind skipped blank lines and CRLF endings, so records end at `\n`
//! only (a CRLF's `\r` is stripped from the last cell) and the start line
//! is worked out from the line count after the record, less the newlines
//! inside it and its terminator (absent only when the record ends the
//! input, which the byte counts tell). A `messages` or `conversations`
//! header counts as a conversation column when no prompt column is mapped;
//! its cells must hold JSON message arrays. Cells are text, so types are read from
//! it: `max_tokens` from a number, `input_tokens` from a JSON array or ids
//! separated by spaces or commas, `messages` from JSON. Only mapped cells
//! are checked for UTF-8, so a broken column nobody reads does not fail the
//! load. An empty optional cell means absent.

use std::io::Read;

use ::csv::{ByteRecord, ReaderBuilder, Terminator};

use super::columns::{Field, MESSAGE_NAMES, Parts, ResolvedColumns, is_blank, max_tokens_from_f64};
use super::object::tokens_from_value;
use super::sink::{Loc, Sink};
use super::spec::DatasetSpec;
use super::{LoadStats, READ_BUF, Sample, messages, open};

/// A resolved mapping as header positions.
#[derive(Clone, Debug)]
pub struct CsvColumns {
    cols: ResolvedColumns,
    idx: [Option<usize>; 6],
    /// The header position of each template column.
    slots: Vec<usize>,
    width: usize,
}

impl CsvColumns {
    /// Finds each mapped column in `header`; a mapped name that is missing
    /// or appears twice is an error naming the file.
    pub fn new(cols: ResolvedColumns, header: &[String], file: &str) -> Result<CsvColumns, String> {
        let mut idx = [None; 6];
        for field in Field::ALL {
            let Some(name) = cols.name(field) else {
                continue;
            };
            let mut at = header.iter().enumerate().filter(|(_, h)| *h == name);
            match (at.next(), at.next()) {
                (Some((i, _)), None) => idx[field as usize] = Some(i),
                (None, _) => {
                    return Err(format!(
                        "{file}: {}={name}: no such column — columns found: {}",
                        field.key(),
                        header.join(", ")
                    ));
                }
                (Some(_), Some(_)) => {
                    return Err(format!(
                        "{file}: column '{name}' ({}) appears more than once in the header",
                        field.key()
                    ));
                }
            }
        }
        let mut slots = Vec::new();
        for name in cols.template().iter().flat_map(|t| t.names()) {
            let at = header.iter().position(|h| h == name).ok_or_else(|| {
                format!(
                    "{file}: template column '{name}': no such column — columns found: {}",
                    header.join(", ")
                )
            })?;
            slots.push(at);
        }
        Ok(CsvColumns {
            cols,
            idx,
            slots,
            width: header.len(),
        })
    }
}

/// Parses one CSV record (raw bytes, quotes and all) into a sample: the
/// loader's own per-record conversion, exposed for the fuzz target.
pub fn parse_record(record: &[u8], cols: &CsvColumns) -> Result<Sample, String> {
    let mut rdr = reader_builder().from_reader(record);
    let mut rec = ByteRecord::new();
    match rdr.read_byte_record(&mut rec) {
        Ok(true) => sample_from_record(&rec, cols),
        Ok(false) => Err("an empty record".to_string()),
        Err(e) => Err(e.to_string()),
    }
}

fn reader_builder() -> ReaderBuilder {
    let mut b = ReaderBuilder::new();
    b.has_headers(false)
        .flexible(true)
        .terminator(Terminator::Any(b'\n'));
    b
}

/// Cell `i` without the `\r` a CRLF line leaves on the last cell.
fn cell(rec: &ByteRecord, i: usize) -> Option<&[u8]> {
    let raw = rec.get(i)?;
    Some(if i + 1 == rec.len() {
        raw.strip_suffix(b"\r").unwrap_or(raw)
    } else {
        raw
    })
}

/// A blank line (CRLF blank lines reach us as one `\r` cell).
fn is_blank_line(rec: &ByteRecord) -> bool {
    rec.len() == 1 && cell(rec, 0).is_some_and(<[u8]>::is_empty)
}

fn sample_from_record(rec: &ByteRecord, c: &CsvColumns) -> Result<Sample, String> {
    let cols = &c.cols;
    let mut parts = Parts::default();
    for field in Field::ALL {
        let Some(i) = c.idx[field as usize] else {
            continue;
        };
        let err = |found: &str| cols.field_error(field, found);
        let Some(raw) = cell(rec, i) else {
            if matches!(field, Field::Prompt | Field::Messages | Field::InputTokens) {
                return Err(err(&format!(
                    "nothing (the row has {} of {} columns)",
                    rec.len(),
                    c.width
                )));
            }
            continue;
        };
        let text = std::str::from_utf8(raw)
            .map_err(|e| err(&format!("invalid UTF-8 at byte {}", e.valid_up_to() + 1)))?;
        match field {
            Field::Prompt => {
                if is_blank(text) {
                    return Err(err(blank(text)));
                }
                parts.prompt = Some(text.to_owned());
            }
            Field::System => parts.system = (!text.is_empty()).then(|| text.to_owned()),
            Field::Expected => parts.expected = (!text.is_empty()).then(|| text.to_owned()),
            Field::MaxTokens => {
                let t = text.trim();
                if !t.is_empty() {
                    let n = match t.parse::<u64>() {
                        Ok(n) => u32::try_from(n).ok().filter(|n| *n > 0),
                        Err(_) => t.parse::<f64>().ok().and_then(max_tokens_from_f64),
                    };
                    parts.max_tokens = Some(n.ok_or_else(|| err(&format!("'{t}'")))?);
                }
            }
            Field::Messages => {
                if is_blank(text) {
                    return Err(err(blank(text)));
                }
                let v = serde_json::from_str(text).map_err(|e| {
                    err(&format!(
                        "a cell that is not JSON ({})",
                        super::json::message(&e)
                    ))
                })?;
                let (m, sharegpt) = messages::from_value(v).map_err(|found| err(&found))?;
                parts.messages = Some(m);
                parts.sharegpt = sharegpt;
            }
            Field::InputTokens => {
                parts.input_tokens = Some(tokens_from_text(text).map_err(|f| err(&f))?)
            }
        }
    }
    if let Some(t) = cols.template() {
        let mut values = Vec::with_capacity(c.slots.len());
        for (slot, i) in c.slots.iter().enumerate() {
            values.push(match cell(rec, *i) {
                Some(raw) => Some(String::from_utf8(raw.to_vec()).map_err(|e| {
                    format!(
                        "template column '{}': invalid UTF-8 at byte {}",
                        t.names()[slot],
                        e.utf8_error().valid_up_to() + 1
                    )
                })?),
                None => None,
            });
        }
        let prompt = t
            .render(&values)
            .map_err(|slot| cols.template_error(slot))?;
        if is_blank(&prompt) {
            return Err("the template renders a blank prompt".to_string());
        }
        parts.prompt = Some(prompt);
    }
    parts.finish(cols)
}

fn blank(text: &str) -> &'static str {
    if text.is_empty() {
        "an empty cell"
    } else {
        "a blank cell"
    }
}

/// Token ids from a JSON array (`[1, 2]`) or ids separated by spaces or
/// commas (`1 2`, `1,2`), or what was found instead.
fn tokens_from_text(text: &str) -> Result<Vec<u32>, String> {
    let t = text.trim();
    if t.starts_with('[') {
        let v = serde_json::from_str(t)
            .map_err(|e| format!("a cell that is not JSON ({})", super::json::message(&e)))?;
        return tokens_from_value(v);
    }
    let ids = t
        .split(|c: char| c == ',' || c.is_ascii_whitespace())
        .filter(|s| !s.is_empty())
        .enumerate()
        .map(|(i, s)| {
            s.parse::<u32>()
                .map_err(|_| format!("'{s}' as id {i} (ids are integers 0..=4294967295)"))
        })
        .collect::<Result<Vec<u32>, String>>()?;
    if ids.is_empty() {
        return Err(blank(text).to_string());
    }
    Ok(ids)
}

/// A reader that remembers how many bytes it handed out and the last one,
/// which is what tells a last record ended by `\n` from one ended by the
/// end of the input; and that fails once the record being read has passed
/// `max` bytes, which bounds the csv crate's record buffer. The parser
/// asks for more only when it has used up what it had, so at each read the
/// record so far is exactly `total - record_start` bytes long.
struct Tracked<R> {
    inner: R,
    total: u64,
    last: u8,
    /// Where the record being read began (`Position::byte`).
    record_start: u64,
    max: u64,
    /// Set when the error this reader returned was the cap's.
    too_long: bool,
}

impl<R: Read> Read for Tracked<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.total - self.record_start > self.max {
            self.too_long = true;
            return Err(std::io::Error::other("record too long"));
        }
        let n = self.inner.read(buf)?;
        if n > 0 {
            self.total += n as u64;
            self.last = buf[n - 1];
        }
        Ok(n)
    }
}

pub(crate) fn load(
    spec: &DatasetSpec,
    on_sample: &mut dyn FnMut(Sample) -> Result<(), String>,
    max: usize,
) -> Result<LoadStats, String> {
    let file = spec.path.display().to_string();
    let input = Tracked {
        inner: open(&spec.path, &file)?,
        total: 0,
        last: 0,
        record_start: 0,
        max: max as u64,
        too_long: false,
    };
    let mut rdr = reader_builder()
        .buffer_capacity(READ_BUF)
        .from_reader(input);
    let mut rec = ByteRecord::new();
    // Named by the line the record began on (a blank line before it, if
    // there was one: the parser skips those inside the record).
    let too_long = |line: u64| format!("{file}:{line}: record too long (over {max} bytes)");
    // Reads the next record, holding it to `max` bytes.
    let next = |rdr: &mut ::csv::Reader<Tracked<_>>, rec: &mut ByteRecord| {
        let start = rdr.position().clone();
        rdr.get_mut().record_start = start.byte();
        match rdr.read_byte_record(rec) {
            Ok(_) if rdr.position().byte() - start.byte() > max as u64 => {
                Err(too_long(start.line()))
            }
            Ok(more) => Ok(more),
            Err(_) if rdr.get_ref().too_long => Err(too_long(start.line())),
            Err(e) => Err(format!("{file}: {e}")),
        }
    };
    // The line a record just read started on.
    // The line a record just read started on. The parser has consumed
    // the record and its terminator; if that is every byte read so far,
    // the last of them says whether there was a terminator.
    let start_line = |rdr: &::csv::Reader<Tracked<_>>, rec: &ByteRecord| {
        let pos = rdr.position();
        let input = rdr.get_ref();
        let inside = memchr::memchr_iter(b'\n', rec.as_slice()).count() as u64;
        let terminated = pos.byte() < input.total || input.last == b'\n';
        pos.line()
            .saturating_sub(inside)
            .saturating_sub(u64::from(terminated))
            .max(1)
    };
    loop {
        if !next(&mut rdr, &mut rec)? {
            return Err(format!(
                "{file}: no samples (the file is empty, not even a header row)"
            ));
        }
        if !is_blank_line(&rec) {
            break;
        }
    }
    let header: Vec<String> = rec
        .iter()
        .map(|h| String::from_utf8_lossy(h).trim().to_string())
        .collect();
    let found: Vec<(String, bool)> = header
        .iter()
        .map(|h| (h.clone(), MESSAGE_NAMES.contains(&h.as_str())))
        .collect();
    let cols = ResolvedColumns::detect(
        &spec.columns,
        spec.parsed_template()?.as_ref(),
        &found,
        &file,
    )?;
    let cols = CsvColumns::new(cols, &header, &file)?;
    let mut sink = Sink::new(file.clone(), spec.skip_invalid, on_sample);
    while next(&mut rdr, &mut rec)? {
        if is_blank_line(&rec) {
            continue;
        }
        let line = start_line(&rdr, &rec);
        sink.row(Loc::Line(line), sample_from_record(&rec, &cols), 0)?;
    }
    sink.finish(None, &header)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dataset::ColumnMap;
    use crate::dataset::testutil::{TempDir, invalid_utf8, load_all};
    use crate::protocol::Message;

    #[test]
    fn good_file_every_column_kind() {
        let d = TempDir::new("csv-good");
        let p = d.file(
            "d.csv",
            concat!(
                "id,q,sys,ids,n,ans,conv\n",
                "1,\"hello, world\",be brief,\"[1, 2]\",16,A,\n",
                "2,\"multi\nline \"\"quoted\"\"\",,3 4  5,,,\n",
                "3,third,,\"6,7\",32.0,,\n",
            ),
        );
        let (got, stats) = load_all(&format!(
            "{},prompt=q,system=sys,input_tokens=ids,max_tokens=n,expected=ans",
            p.display()
        ))
        .unwrap();
        assert_eq!(stats.loaded, 3);
        assert_eq!(
            got[0],
            Sample {
                system: Some("be brief".into()),
                messages: vec![Message::user("hello, world")],
                input_tokens: Some(vec![1, 2]),
                max_tokens: Some(16),
                expected: Some("A".into()),
                ..Sample::default()
            }
        );
        assert_eq!(got[1].messages[0].content, "multi\nline \"quoted\"");
        assert_eq!(
            (
                got[1].system.clone(),
                got[1].input_tokens.clone(),
                got[1].max_tokens,
                got[1].expected.clone()
            ),
            (None, Some(vec![3, 4, 5]), None, None)
        );
        assert_eq!(got[2].input_tokens, Some(vec![6, 7]));
        assert_eq!(got[2].max_tokens, Some(32));
    }

    #[test]
    fn messages_column_and_detection() {
        let d = TempDir::new("csv-msg");
        let p = d.file(
            "m.csv",
            "id,messages\n1,\"[{\"\"role\"\": \"\"system\"\", \"\"content\"\": \"\"S\"\"}, {\"\"role\"\": \"\"user\"\", \"\"content\"\": \"\"hi\"\"}]\"\n",
        );
        let (got, _) = load_all(p.to_str().unwrap()).unwrap();
        assert_eq!(got[0].system.as_deref(), Some("S"));
        assert_eq!(got[0].messages, vec![Message::user("hi")]);
        for name in crate::dataset::columns::PROMPT_NAMES {
            let p = d.file(&format!("{name}.csv"), format!("id, {name}\n1,hey\n"));
            let (got, _) = load_all(p.to_str().unwrap()).unwrap();
            assert_eq!(got, vec![Sample::prompt("hey")], "{name}");
        }
        let p = d.file("none.csv", "id,body\n1,x\n");
        let e = load_all(p.to_str().unwrap()).unwrap_err();
        assert!(
            e.contains("none.csv: no prompt column") && e.contains("columns found: id, body"),
            "{e}"
        );
        let p = d.file("two.csv", "input,instruction\n1,x\n");
        let e = load_all(p.to_str().unwrap()).unwrap_err();
        assert!(
            e.contains("several possible prompt columns (input, instruction)"),
            "{e}"
        );
        let p = d.file("typo.csv", "prompt,n\nx,1\n");
        let e = load_all(&format!("{},max_tokens=max_tokens", p.display())).unwrap_err();
        assert!(
            e.contains(
                "typo.csv: max_tokens=max_tokens: no such column — columns found: prompt, n"
            ),
            "{e}"
        );
        let p = d.file("dup.csv", "prompt,prompt\nx,y\n");
        let e = load_all(p.to_str().unwrap()).unwrap_err();
        assert!(
            e.contains("column 'prompt' (prompt) appears more than once"),
            "{e}"
        );
    }

    #[test]
    fn a_sharegpt_cell_sends_its_first_human_turn() {
        let d = TempDir::new("csv-sharegpt");
        let conv = r#"[{""from"": ""human"", ""value"": ""Q1""}, {""from"": ""gpt"", ""value"": ""one two three""}, {""from"": ""human"", ""value"": ""Q2""}]"#;
        let p = d.file("sg.csv", format!("id,conversations\n1,\"{conv}\"\n"));
        let (got, _) = load_all(p.to_str().unwrap()).unwrap();
        assert_eq!(got[0].messages, vec![Message::user("Q1")]);
        assert_eq!(got[0].max_tokens, Some(4));
        let (got, _) = load_all(&format!("{},sharegpt=whole", p.display())).unwrap();
        assert_eq!(got[0].messages.len(), 3);
        assert_eq!(got[0].max_tokens, None);
    }

    #[test]
    fn malformed_rows_name_their_first_line() {
        let d = TempDir::new("csv-bad");
        for (body, extra, want) in [
            (
                "prompt,n\nok,1\n\"two\nlines\",0\n",
                ",max_tokens=n",
                "b.csv:3: field 'n' (max_tokens): expected a positive integer, found '0'",
            ),
            (
                "prompt,n\nok,1\n,5\n",
                "",
                "b.csv:3: field 'prompt': expected a non-empty string, found an empty cell",
            ),
            (
                "prompt,n\nok,1\nx,abc\n",
                ",max_tokens=n",
                "b.csv:3: field 'n' (max_tokens): expected a positive integer, found 'abc'",
            ),
            (
                "prompt,ids\nok,1\nx,1 two\n",
                ",input_tokens=ids",
                "b.csv:3: field 'ids' (input_tokens): expected a non-empty array of token ids (integers 0..=4294967295), found 'two' as id 1",
            ),
            (
                "prompt,ids\nok,1\nx,\"[1, 2.5]\"\n",
                ",input_tokens=ids",
                "found an array whose element 1 is a number (2.5)",
            ),
            (
                "prompt,ids\nok,1\nx,\"[1,\"\n",
                ",input_tokens=ids",
                "found a cell that is not JSON",
            ),
            (
                "id,prompt\n1,ok\n2\n",
                "",
                "b.csv:3: field 'prompt': expected a non-empty string, found nothing (the row has 1 of 2 columns)",
            ),
            (
                "prompt\nok\nbad\u{1}\n",
                "",
                "b.csv:3: field 'prompt': expected a non-empty string, found invalid UTF-8 at byte 4",
            ),
            (
                "prompt\n\nok\n\n\"multi\nline\",\n\n\" \"\n",
                "",
                "b.csv:8: field 'prompt': expected a non-empty string, found a blank cell",
            ),
            (
                "prompt\r\n\r\nok\r\n\r\n\"multi\r\nline\",\r\n\r\n\" \"",
                "",
                "b.csv:8: field 'prompt': expected a non-empty string, found a blank cell",
            ),
            (
                "messages\n\"[{\"\"role\"\": \"\"user\"\", \"\"content\"\": \"\"x\"\"}]\"\n\"{}\"\n",
                "",
                "b.csv:3: field 'messages': expected a non-empty array of {role, content} messages, found an object",
            ),
        ] {
            // \u{1} stands for a byte that is not UTF-8.
            let p = d.file("b.csv", invalid_utf8(body));
            let e = load_all(&format!("{}{extra}", p.display())).unwrap_err();
            assert!(e.contains(want), "{body:?}: {e}");
        }
    }

    #[test]
    fn skip_invalid_bom_crlf_and_empty() {
        let d = TempDir::new("csv-skip");
        let p = d.file(
            "s.csv",
            b"\xEF\xBB\xBFprompt,max_tokens\r\na,1\r\n,2\r\n\r\n\"c\r\nd\",-1\r\ne,3\r\n"
                .as_slice(),
        );
        let (got, stats) = load_all(&format!(
            "{},max_tokens=max_tokens,skip_invalid=true",
            p.display()
        ))
        .unwrap();
        assert_eq!(got.len(), 2);
        assert_eq!(got[0].max_tokens, Some(1));
        assert_eq!(got[1].messages[0].content, "e");
        assert_eq!(stats.skipped, 2);
        assert!(
            stats.skip_examples[0].ends_with(
                "s.csv:3: field 'prompt': expected a non-empty string, found an empty cell"
            ),
            "{:?}",
            stats.skip_examples
        );
        assert!(
            stats.skip_examples[1].contains("s.csv:5: field 'max_tokens'"),
            "{:?}",
            stats.skip_examples
        );
        let p = d.file("h.csv", "prompt\n");
        let e = load_all(p.to_str().unwrap()).unwrap_err();
        assert!(
            e.ends_with("h.csv: no samples (the dataset is empty)"),
            "{e}"
        );
        let p = d.file("z.csv", "");
        let e = load_all(p.to_str().unwrap()).unwrap_err();
        assert!(e.contains("z.csv: no samples (the file is empty"), "{e}");
    }

    #[test]
    fn parse_record_matches_the_loader() {
        let cols = ResolvedColumns::from_map(&ColumnMap {
            prompt: Some("p".into()),
            max_tokens: Some("n".into()),
            ..ColumnMap::default()
        })
        .unwrap();
        let c = CsvColumns::new(cols, &["p".to_string(), "n".to_string()], "f").unwrap();
        let s = parse_record(b"\"a, b\",7\r\n", &c).unwrap();
        assert_eq!(s.messages[0].content, "a, b");
        assert_eq!(s.max_tokens, Some(7));
        for bad in [&b""[..], b"\"", b",", b"x,0", b"\xff,1"] {
            assert!(parse_record(bad, &c).is_err(), "{bad:?}");
        }
    }
}
