//! Server-sent events (WHATWG HTML §9.2): splits a byte stream into events and
//! hands each one's `event` and `data` fields to a callback. An event wholly
//! inside one input slice with a single `data:` line is passed as a sub-slice
//! of the input (the common case: one chunk per event); anything split across
//! inputs, or with several `data:` lines, is assembled in buffers reused from
//! event to event.
//!
//! The trade-off: the fast path keeps field positions as ranges into the
//! current input and copies them into the buffers only when the input ends
//! mid-event or a second `data:` line arrives, so the common case costs one
//! `memchr2` per line and no copy, at the price of two representations of a
//! pending event. Memory is bounded: no buffer ever holds more than
//! `max_event` bytes; the line and data buffers start at `INITIAL_BUFFER`
//! bytes and grow (once, then reused) only when an event needs it, so a
//! worker holding thousands of streams does not reserve the worst case for
//! each. `id` and `retry` fields are parsed past and dropped: load
//! generation never reconnects a stream.

use std::ops::Range;

/// Starting size of the line and data buffers: larger than any token chunk
/// seen in practice, far below the per-event limit.
const INITIAL_BUFFER: usize = 4096;

/// Largest single event a client accepts before calling the stream
/// malformed: far above any real token event, low enough that a server
/// streaming without line breaks cannot grow a buffer without bound.
pub const MAX_EVENT: usize = 1 << 20;

/// One dispatched event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SseEvent<'a> {
    /// The `event:` field, empty when absent.
    pub event: &'a [u8],
    /// `data:` lines joined with `\n`, one leading space after the colon removed.
    pub data: &'a [u8],
}

/// Why the stream was rejected.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SseError {
    /// One event grew past the splitter's byte limit without ending.
    EventTooLarge,
}

/// A UTF-8 byte order mark, which the spec strips from the start of a stream.
const BOM: &[u8] = b"\xEF\xBB\xBF";
/// Event types are short names; a longer one grows its buffer once.
const EVENT_TYPE_CAPACITY: usize = 64;

/// Incremental SSE splitter.
#[derive(Debug)]
pub struct SseSplitter {
    max_event: usize,
    /// The unfinished last line of the previous input.
    line: Vec<u8>,
    /// The current event's data when it is not a range of the current input.
    data: Vec<u8>,
    /// The current event's type when it is not a range of the current input.
    event: Vec<u8>,
    /// A `data` field has been seen in the current event (it may be empty).
    has_data: bool,
    /// The previous input ended in CR: an LF starting the next one belongs to it.
    pending_cr: bool,
    /// No line has been completed yet, so a leading BOM is still to be stripped.
    at_start: bool,
}

/// The current event's fields that still lie in the current input.
#[derive(Default)]
struct InInput {
    data: Option<Range<usize>>,
    event: Option<Range<usize>>,
}

/// What one line is.
enum Field {
    Blank,
    /// `data`, with the value's offset in the line.
    Data(usize),
    /// `event`, with the value's offset in the line.
    Event(usize),
    /// Comments, `id`, `retry` and unknown fields.
    Other,
}

/// Classifies a complete line (terminator excluded).
#[inline]
fn field(line: &[u8]) -> Field {
    if line.is_empty() {
        return Field::Blank;
    }
    // Checked first because nearly every line of an LLM stream is one.
    if line.starts_with(b"data:") {
        return Field::Data(value_start(line, 5));
    }
    let (name, value) = match memchr::memchr(b':', line) {
        Some(0) => return Field::Other,
        Some(colon) => (&line[..colon], value_start(line, colon + 1)),
        None => (line, line.len()),
    };
    match name {
        b"data" => Field::Data(value),
        b"event" => Field::Event(value),
        _ => Field::Other,
    }
}

/// Where the line starting `rest` ends: its terminator's offset. A blank
/// line (the one ending each event, right after its last field) is told
/// without a search.
#[inline(always)]
fn line_end(rest: &[u8]) -> Option<usize> {
    match rest.first() {
        Some(b'\n' | b'\r') => Some(0),
        Some(_) => memchr::memchr2(b'\n', b'\r', rest),
        None => None,
    }
}

/// Skips the one optional space after the colon at `after_colon - 1`.
#[inline]
fn value_start(line: &[u8], after_colon: usize) -> usize {
    if line.get(after_colon) == Some(&b' ') {
        after_colon + 1
    } else {
        after_colon
    }
}

impl SseSplitter {
    /// A splitter for events up to `max_event` bytes; larger events are
    /// `EventTooLarge`. Buffers start small and grow on demand up to the limit.
    ///
    /// The limit applies to the joined `data` of an event and to every single
    /// line (field name and value, terminator excluded), whether or not the
    /// bytes had to be buffered, so the outcome never depends on how the
    /// stream was split.
    pub fn with_capacity(max_event: usize) -> Self {
        Self {
            max_event,
            line: Vec::with_capacity(INITIAL_BUFFER.min(max_event)),
            data: Vec::with_capacity(INITIAL_BUFFER.min(max_event)),
            event: Vec::with_capacity(EVENT_TYPE_CAPACITY.min(max_event)),
            has_data: false,
            pending_cr: false,
            at_start: true,
        }
    }

    /// Forgets any partial event, for the next response on the connection.
    pub fn reset(&mut self) {
        self.line.clear();
        self.data.clear();
        self.event.clear();
        self.has_data = false;
        self.pending_cr = false;
        self.at_start = true;
    }

    /// As `reset`, and gives back the memory of a line or data buffer that
    /// an unusually large event made grow past `keep` bytes, so a long-lived
    /// connection does not hold its largest event's size.
    pub fn shrink(&mut self, keep: usize) {
        self.reset();
        let initial = INITIAL_BUFFER.min(self.max_event);
        for buf in [&mut self.line, &mut self.data] {
            if buf.capacity() > keep {
                buf.shrink_to(initial);
            }
        }
        if self.event.capacity() > keep {
            self.event
                .shrink_to(EVENT_TYPE_CAPACITY.min(self.max_event));
        }
    }

    /// Consumes all of `input`, calling `on_event` for each event that
    /// completes (a blank line after at least one `data` field). Lines may end
    /// in LF, CRLF or CR; comment lines (leading `:`) and unknown fields are
    /// ignored; an event with no `data` field is not dispatched.
    ///
    /// After an error the splitter's state is unspecified until `reset`.
    #[inline]
    pub fn feed(
        &mut self,
        input: &[u8],
        mut on_event: impl FnMut(SseEvent<'_>),
    ) -> Result<(), SseError> {
        let mut pos = 0;
        if self.pending_cr && !input.is_empty() {
            self.pending_cr = false;
            if input[0] == b'\n' {
                pos = 1;
            }
        }

        // Finish the line the previous input left open; its fields go
        // straight into the buffers.
        if !self.line.is_empty() {
            let Some(end) = memchr::memchr2(b'\n', b'\r', &input[pos..]) else {
                return self.keep_partial(&input[pos..]);
            };
            self.keep_partial(&input[pos..pos + end])?;
            pos = self.skip_line_end(input, pos + end);
            let mut line = std::mem::take(&mut self.line);
            let result = self.buffered_line(&line, &mut on_event);
            line.clear();
            self.line = line;
            result?;
        }

        let mut in_input = InInput::default();
        while let Some(end) = line_end(&input[pos..]) {
            let start = pos;
            let end = pos + end;
            pos = self.skip_line_end(input, end);
            if end - start > self.max_event {
                return Err(SseError::EventTooLarge);
            }
            self.input_line(input, start..end, &mut in_input, &mut on_event)?;
        }

        // The input ends mid-event: move what still points into it to the
        // buffers before the input goes away.
        if let Some(r) = in_input.data {
            self.data.extend_from_slice(&input[r]);
        }
        if let Some(r) = in_input.event {
            self.event.clear();
            self.event.extend_from_slice(&input[r]);
        }
        self.keep_partial(&input[pos..])
    }

    /// Appends bytes of an unfinished line to the line buffer.
    fn keep_partial(&mut self, bytes: &[u8]) -> Result<(), SseError> {
        if self.line.len() + bytes.len() > self.max_event {
            return Err(SseError::EventTooLarge);
        }
        self.line.extend_from_slice(bytes);
        Ok(())
    }

    /// The position after the terminator at `end` (LF, CR LF, or CR); a CR
    /// that ends the input leaves its possible LF to the next input.
    #[inline]
    fn skip_line_end(&mut self, input: &[u8], end: usize) -> usize {
        if input[end] == b'\r' {
            match input.get(end + 1) {
                Some(b'\n') => return end + 2,
                None => self.pending_cr = true,
                Some(_) => {}
            }
        }
        end + 1
    }

    /// Strips a BOM from the first line of the stream.
    #[inline]
    fn first_line_offset(&mut self, line: &[u8]) -> usize {
        if self.at_start {
            self.at_start = false;
            if line.starts_with(BOM) {
                return BOM.len();
            }
        }
        0
    }

    /// A line that was assembled in the line buffer (it began in an earlier
    /// input). No field of the current event lies in the current input yet.
    fn buffered_line(
        &mut self,
        line: &[u8],
        on_event: &mut impl FnMut(SseEvent<'_>),
    ) -> Result<(), SseError> {
        let line = &line[self.first_line_offset(line)..];
        match field(line) {
            Field::Blank => {
                if self.has_data {
                    on_event(SseEvent {
                        event: &self.event,
                        data: &self.data,
                    });
                }
                self.end_event();
            }
            Field::Data(v) => self.append_data(&line[v..])?,
            Field::Event(v) => {
                self.event.clear();
                self.event.extend_from_slice(&line[v..]);
            }
            Field::Other => {}
        }
        Ok(())
    }

    /// A line wholly inside the current input: fields are kept as ranges
    /// while the event can still be passed without copying.
    #[inline]
    fn input_line(
        &mut self,
        input: &[u8],
        mut line: Range<usize>,
        in_input: &mut InInput,
        on_event: &mut impl FnMut(SseEvent<'_>),
    ) -> Result<(), SseError> {
        line.start += self.first_line_offset(&input[line.clone()]);
        match field(&input[line.clone()]) {
            Field::Blank => {
                if self.has_data {
                    let data = match in_input.data.take() {
                        Some(r) => &input[r],
                        None => &self.data[..],
                    };
                    let event = match in_input.event.take() {
                        Some(r) => &input[r],
                        None => &self.event[..],
                    };
                    on_event(SseEvent { event, data });
                }
                *in_input = InInput::default();
                self.end_event();
            }
            Field::Data(v) => {
                let value = line.start + v..line.end;
                if !self.has_data {
                    self.has_data = true;
                    in_input.data = Some(value);
                } else {
                    // A second data line: from here on the event is assembled.
                    if let Some(first) = in_input.data.take() {
                        self.data.extend_from_slice(&input[first]);
                    }
                    self.append_data(&input[value])?;
                }
            }
            Field::Event(v) => in_input.event = Some(line.start + v..line.end),
            Field::Other => {}
        }
        Ok(())
    }

    /// Adds one data line to the assembled data.
    fn append_data(&mut self, value: &[u8]) -> Result<(), SseError> {
        if self.has_data {
            if self.data.len() + 1 + value.len() > self.max_event {
                return Err(SseError::EventTooLarge);
            }
            self.data.push(b'\n');
        }
        self.has_data = true;
        self.data.extend_from_slice(value);
        Ok(())
    }

    fn end_event(&mut self) {
        self.has_data = false;
        self.data.clear();
        self.event.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::test_support::{Prng, for_each_split};

    type Events = Vec<(Vec<u8>, Vec<u8>)>;

    /// Feeds `pieces` to a fresh splitter, collecting owned copies of the
    /// events dispatched before the end or the first error.
    fn run(pieces: &[&[u8]], max_event: usize) -> (Events, Result<(), SseError>) {
        let mut splitter = SseSplitter::with_capacity(max_event);
        let mut events = Vec::new();
        for piece in pieces {
            let result = splitter.feed(piece, |e| events.push((e.event.to_vec(), e.data.to_vec())));
            if result.is_err() {
                return (events, result);
            }
        }
        (events, Ok(()))
    }

    /// The WHATWG algorithm over the whole stream with owned strings: split
    /// into lines first, then interpret each line.
    fn reference(stream: &[u8], max_event: usize) -> (Events, Result<(), SseError>) {
        let mut lines: Vec<Vec<u8>> = Vec::new();
        let mut current = Vec::new();
        let mut i = 0;
        while i < stream.len() {
            match stream[i] {
                b'\r' => {
                    lines.push(std::mem::take(&mut current));
                    if stream.get(i + 1) == Some(&b'\n') {
                        i += 1;
                    }
                }
                b'\n' => lines.push(std::mem::take(&mut current)),
                b => current.push(b),
            }
            i += 1;
        }
        let mut events = Vec::new();
        let (mut event, mut data, mut has_data) = (Vec::new(), Vec::new(), false);
        for (index, line) in lines.iter().enumerate() {
            if line.len() > max_event {
                return (events, Err(SseError::EventTooLarge));
            }
            let line = match line.strip_prefix(BOM) {
                Some(rest) if index == 0 => rest,
                _ => line,
            };
            if line.is_empty() {
                if has_data {
                    events.push((event.clone(), data.clone()));
                }
                (event, data, has_data) = (Vec::new(), Vec::new(), false);
                continue;
            }
            let (name, value) = match line.iter().position(|&b| b == b':') {
                Some(0) => continue,
                Some(colon) => {
                    let value = &line[colon + 1..];
                    (&line[..colon], value.strip_prefix(b" ").unwrap_or(value))
                }
                None => (line, &b""[..]),
            };
            match name {
                b"data" => {
                    if has_data {
                        data.push(b'\n');
                    }
                    data.extend_from_slice(value);
                    has_data = true;
                    if data.len() > max_event {
                        return (events, Err(SseError::EventTooLarge));
                    }
                }
                b"event" => event = value.to_vec(),
                _ => {}
            }
        }
        let result = if current.len() > max_event {
            Err(SseError::EventTooLarge)
        } else {
            Ok(())
        };
        (events, result)
    }

    fn check_splits(stream: &[u8], max_event: usize, seed: u64) {
        let want = reference(stream, max_event);
        for_each_split(stream, seed, |pieces| {
            assert_eq!(
                run(pieces, max_event),
                want,
                "stream {stream:?}, pieces {pieces:?}"
            );
        });
    }

    fn ev(event: &str, data: &str) -> (Vec<u8>, Vec<u8>) {
        (event.as_bytes().to_vec(), data.as_bytes().to_vec())
    }

    macro_rules! cases {
        ($($name:ident: $input:expr => [$(($e:expr, $d:expr)),* $(,)?];)*) => {$(
            #[test]
            fn $name() {
                let input: &[u8] = $input;
                let want: Events = vec![$(ev($e, $d)),*];
                assert_eq!(reference(input, 1024), (want, Ok(())), "reference");
                check_splits(input, 1024, 1);
            }
        )*};
    }

    cases! {
        single: b"data: hello\n\n" => [("", "hello")];
        no_space: b"data:hello\n\n" => [("", "hello")];
        only_one_space_stripped: b"data:  two\n\n" => [("", " two")];
        tab_kept: b"data:\tx\n\n" => [("", "\tx")];
        multi_line: b"data: a\ndata: b\ndata:\ndata: c\n\n" => [("", "a\nb\n\nc")];
        empty_data_dispatches: b"data\n\ndata:\n\n" => [("", ""), ("", "")];
        no_data_no_event: b"event: ping\n\n: comment\n\nid: 7\n\n" => [];
        event_type_resets: b"event: a\n\ndata: x\n\n" => [("", "x")];
        event_type: b"event: message_start\ndata: {}\n\n" => [("message_start", "{}")];
        event_after_data: b"data: x\nevent: late\n\n" => [("late", "x")];
        last_event_wins: b"event: a\nevent: b\ndata: x\n\n" => [("b", "x")];
        event_without_colon: b"event: a\nevent\ndata: x\n\n" => [("", "x")];
        comments_ignored: b": ping\n:\ndata: x\n: mid\n\n" => [("", "x")];
        unknown_fields: b"id: 1\nretry: 10\nfoo: bar\nData: no\ndata : no\ndata: yes\n\n" => [("", "yes")];
        colon_in_value: b"data: {\"a\":\"b: c\"}\n\n" => [("", "{\"a\":\"b: c\"}")];
        crlf: b"event: e\r\ndata: a\r\ndata: b\r\n\r\n" => [("e", "a\nb")];
        cr_only: b"data: a\rdata: b\r\rdata: c\r\r" => [("", "a\nb"), ("", "c")];
        mixed_endings: b"data: a\r\n\ndata: b\r\rdata: c\n\r\n" => [("", "a"), ("", "b"), ("", "c")];
        cr_then_cr_is_blank_line: b"data: a\r\r\ndata: b\n\n" => [("", "a"), ("", "b")];
        unfinished_event_dropped: b"data: a\n\ndata: b\n" => [("", "a")];
        unfinished_line_dropped: b"data: a\n\ndata: b" => [("", "a")];
        bom_stripped: b"\xEF\xBB\xBFdata: a\n\n" => [("", "a")];
        second_bom_kept: b"\xEF\xBB\xBF\xEF\xBB\xBFdata: a\n\n" => [];
        bom_only_at_start: b"data: a\n\n\xEF\xBB\xBFdata: b\n\n" => [("", "a")];
        leading_blank_lines: b"\n\r\n\rdata: a\n\n" => [("", "a")];
    }

    #[test]
    fn binary_data() {
        let stream = b"data: \x00\xff\r\xfe\n\n";
        let want = vec![(Vec::new(), b"\x00\xff".to_vec())];
        assert_eq!(reference(stream, 64), (want, Ok(())));
        check_splits(stream, 64, 2);
    }

    /// A vLLM / OpenAI chat stream: role chunk, content chunks, finish chunk,
    /// usage chunk, `[DONE]`.
    fn openai_stream(contents: &[&str], line_end: &str) -> (Vec<u8>, Vec<String>) {
        let mut datas = vec![
            r#"{"id":"chatcmpl-9f2","object":"chat.completion.chunk","created":1718000000,"model":"meta-llama/Llama-3.1-8B-Instruct","choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}"#.to_string(),
        ];
        for c in contents {
            datas.push(format!(
                r#"{{"id":"chatcmpl-9f2","object":"chat.completion.chunk","created":1718000000,"model":"meta-llama/Llama-3.1-8B-Instruct","choices":[{{"index":0,"delta":{{"content":"{c}"}},"logprobs":null,"finish_reason":null}}]}}"#
            ));
        }
        datas.push(r#"{"id":"chatcmpl-9f2","object":"chat.completion.chunk","created":1718000000,"model":"meta-llama/Llama-3.1-8B-Instruct","choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop","stop_reason":null}]}"#.to_string());
        datas.push(r#"{"id":"chatcmpl-9f2","object":"chat.completion.chunk","created":1718000000,"model":"meta-llama/Llama-3.1-8B-Instruct","choices":[],"usage":{"prompt_tokens":12,"total_tokens":17,"completion_tokens":5}}"#.to_string());
        datas.push("[DONE]".to_string());
        let mut stream = String::new();
        for d in &datas {
            stream.push_str(&format!("data: {d}{line_end}{line_end}"));
        }
        (stream.into_bytes(), datas)
    }

    #[test]
    fn openai_chat_stream() {
        for line_end in ["\n", "\r\n", "\r"] {
            let (stream, datas) = openai_stream(&["Hello", ",", " world", "!"], line_end);
            let want: Events = datas.iter().map(|d| ev("", d)).collect();
            assert_eq!(reference(&stream, 4096), (want, Ok(())));
            check_splits(&stream, 4096, 3);
        }
    }

    /// Anthropic Messages streaming: typed events, a ping, CRLF line ends.
    #[test]
    fn anthropic_stream() {
        let events = [
            (
                "message_start",
                r#"{"type":"message_start","message":{"id":"msg_01","type":"message","role":"assistant","content":[],"model":"claude-3-5-sonnet","usage":{"input_tokens":25,"output_tokens":1}}}"#,
            ),
            (
                "content_block_start",
                r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#,
            ),
            ("ping", r#"{"type": "ping"}"#),
            (
                "content_block_delta",
                r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello"}}"#,
            ),
            (
                "content_block_delta",
                r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"!"}}"#,
            ),
            (
                "content_block_stop",
                r#"{"type":"content_block_stop","index":0}"#,
            ),
            (
                "message_delta",
                r#"{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":15}}"#,
            ),
            ("message_stop", r#"{"type":"message_stop"}"#),
        ];
        for line_end in ["\n", "\r\n"] {
            let mut stream = String::new();
            for (e, d) in events {
                stream.push_str(&format!(
                    "event: {e}{line_end}data: {d}{line_end}{line_end}"
                ));
            }
            let want: Events = events.iter().map(|(e, d)| ev(e, d)).collect();
            assert_eq!(reference(stream.as_bytes(), 4096), (want, Ok(())));
            check_splits(stream.as_bytes(), 4096, 4);
        }
    }

    /// Keep-alive comments between events, multi-line JSON, a retry hint.
    #[test]
    fn gateway_stream_with_comments() {
        let stream = b"retry: 3000\n: keep-alive\n\ndata: {\ndata: \"a\": 1\ndata: }\n\n: ping\n\nevent: error\ndata: {\"error\":{\"message\":\"overloaded\"}}\n\n";
        let want = vec![
            ev("", "{\n\"a\": 1\n}"),
            ev("error", r#"{"error":{"message":"overloaded"}}"#),
        ];
        assert_eq!(reference(stream, 256), (want, Ok(())));
        check_splits(stream, 256, 5);
    }

    #[test]
    fn cr_split_from_lf() {
        // The CR ends one input and the LF starts the next: one line end, not
        // a line end and a blank line, so "a" and "b" are one event.
        let mut splitter = SseSplitter::with_capacity(64);
        let mut got = Vec::new();
        splitter
            .feed(b"data: a\r", |e| got.push(e.data.to_vec()))
            .unwrap();
        // An empty input in between keeps the CR pending.
        splitter.feed(b"", |e| got.push(e.data.to_vec())).unwrap();
        splitter
            .feed(b"\ndata: b\r", |e| got.push(e.data.to_vec()))
            .unwrap();
        splitter.feed(b"\n", |e| got.push(e.data.to_vec())).unwrap();
        assert!(got.is_empty());
        splitter.feed(b"\r", |e| got.push(e.data.to_vec())).unwrap();
        assert_eq!(got, vec![b"a\nb".to_vec()]);
        // That blank line's LF arrives next and is not a second blank line.
        splitter
            .feed(b"\ndata: c\r\r", |e| got.push(e.data.to_vec()))
            .unwrap();
        assert_eq!(got, vec![b"a\nb".to_vec(), b"c".to_vec()]);
    }

    #[test]
    fn shrink_gives_back_what_a_large_event_grew() {
        let mut splitter = SseSplitter::with_capacity(MAX_EVENT);
        let big = format!("data: {}", "x".repeat(300_000));
        let mut got = Vec::new();
        // Split mid-line so the line buffer holds it.
        let (a, b) = big.as_bytes().split_at(1000);
        splitter.feed(a, |e| got.push(e.data.len())).unwrap();
        splitter.feed(b, |e| got.push(e.data.len())).unwrap();
        splitter.feed(b"\n\n", |e| got.push(e.data.len())).unwrap();
        assert_eq!(got, [300_000]);
        assert!(splitter.line.capacity() >= 300_000);
        splitter.shrink(64 << 10);
        assert!(splitter.line.capacity() <= INITIAL_BUFFER);
        assert!(splitter.data.capacity() <= 64 << 10);
        // Small buffers are left alone, and the splitter works on.
        splitter
            .feed(b"data: a\n\n", |e| got.push(e.data.len()))
            .unwrap();
        assert_eq!(got, [300_000, 1]);
    }

    #[test]
    fn limits() {
        // A data line of exactly the limit passes, one byte more fails.
        let max = 32;
        let at = format!("data:{}\n\n", "x".repeat(max - 5));
        check_splits(at.as_bytes(), max, 6);
        assert_eq!(reference(at.as_bytes(), max).0.len(), 1);
        let over = format!("data:{}\n\n", "x".repeat(max - 4));
        assert_eq!(
            reference(over.as_bytes(), max).1,
            Err(SseError::EventTooLarge)
        );
        check_splits(over.as_bytes(), max, 7);
        // Joined data over the limit, each line under it.
        let joined = format!("data: {0}\ndata: {0}\ndata: {0}\n\n", "y".repeat(12));
        assert_eq!(
            reference(joined.as_bytes(), max).1,
            Err(SseError::EventTooLarge)
        );
        check_splits(joined.as_bytes(), max, 8);
        // Events before the oversized one are still delivered.
        let after = format!("data: ok\n\n: {}\n", "z".repeat(max));
        let (events, result) = reference(after.as_bytes(), max);
        assert_eq!((events.len(), result), (1, Err(SseError::EventTooLarge)));
        check_splits(after.as_bytes(), max, 9);
        // An unfinished line over the limit fails without its line end.
        let unfinished = "a".repeat(max + 1);
        assert_eq!(
            run(&[unfinished.as_bytes()], max).1,
            Err(SseError::EventTooLarge)
        );
        // Many small events never trip the limit.
        let many = "data: 0123456789\n\n".repeat(100);
        assert_eq!(
            run(&[many.as_bytes()], max),
            (vec![ev("", "0123456789"); 100], Ok(()))
        );
    }

    #[test]
    fn reset_forgets_partial_event() {
        let mut splitter = SseSplitter::with_capacity(64);
        let mut got = Vec::new();
        splitter
            .feed(b"\xEF\xBB\xBFevent: x\ndata: old\ndata: par", |_| panic!())
            .unwrap();
        splitter.reset();
        splitter
            .feed(b"\xEF\xBB\xBFdata: new\n\n", |e| {
                got.push((e.event.to_vec(), e.data.to_vec()))
            })
            .unwrap();
        assert_eq!(got, vec![ev("", "new")]);
    }

    /// Single-line events wholly inside the input are lent from the input;
    /// the rest come from the splitter's buffers.
    #[test]
    fn zero_copy_when_event_fits_input() {
        let input = b"data: a\n\nevent: e\ndata: b\n\ndata: c\ndata: d\n\ndata: split";
        let range = input.as_ptr_range();
        let mut splitter = SseSplitter::with_capacity(64);
        let mut borrowed = Vec::new();
        splitter
            .feed(input, |e| {
                borrowed.push((
                    range.contains(&e.data.as_ptr()),
                    range.contains(&e.event.as_ptr()),
                ))
            })
            .unwrap();
        assert_eq!(borrowed, vec![(true, false), (true, true), (false, false)]);
        let mut split = Vec::new();
        splitter
            .feed(b"\n\n", |e| split.push(e.data.to_vec()))
            .unwrap();
        assert_eq!(split, vec![b"split".to_vec()]);
    }

    /// Steady state allocates nothing: the buffers keep their first
    /// allocation however the stream is cut.
    #[test]
    fn buffers_never_reallocate() {
        let max = 1024;
        let (stream, datas) = openai_stream(&["a"; 200], "\n");
        let mut splitter = SseSplitter::with_capacity(max);
        let ptrs = |s: &SseSplitter| {
            (
                s.line.as_ptr(),
                s.data.as_ptr(),
                s.line.capacity(),
                s.data.capacity(),
            )
        };
        let before = ptrs(&splitter);
        let mut count = 0;
        for piece in stream.chunks(37) {
            splitter.feed(piece, |_| count += 1).unwrap();
            assert_eq!(ptrs(&splitter), before);
        }
        assert_eq!(count, datas.len());
    }

    /// Random streams over the bytes that matter, against the reference.
    #[test]
    fn random_streams_match_reference() {
        const PARTS: &[&[u8]] = &[
            b"data",
            b"data:",
            b"data: ",
            b"event",
            b"event:",
            b"event: ",
            b":",
            b" ",
            b"id: 1",
            b"x",
            b"yz",
            b"\n",
            b"\r",
            b"\r\n",
            b"\n\n",
            b"\xEF\xBB\xBF",
            b"da",
            b"ta",
        ];
        let mut rng = Prng::new(13);
        for i in 0..3000 {
            let mut stream = Vec::new();
            for _ in 0..rng.below(40) {
                stream.extend_from_slice(PARTS[rng.below(PARTS.len())]);
            }
            let max_event = [4, 8, 16, 1024][rng.below(4)];
            let want = reference(&stream, max_event);
            assert_eq!(run(&[&stream], max_event), want, "{stream:?}");
            if i % 10 == 0 {
                check_splits(&stream, max_event, i);
            } else {
                let cut = rng.below(stream.len() + 1);
                let got = run(&[&stream[..cut], &stream[cut..]], max_event);
                assert_eq!(got, want, "{stream:?} at {cut}");
            }
        }
    }
}
