//! Micro-benchmarks of the response-side parsers: SSE scanning, chunked
//! decoding feeding the SSE splitter, response head parsing, and the
//! openai-chat event parser on ordinary token events and on large events:
//! all text, a benign tail of logprobs, and the worst shape for its key
//! scan. Each one checks its answer
//! on every pass (event count, data bytes, text, status and framing) and
//! panics if it is wrong, so a fast wrong parser cannot post a number. Run
//! with `cargo bench --bench http`; each measurement runs for about one
//! second.

use std::hint::black_box;
use std::time::{Duration, Instant};

use llmload::http::chunked::{ChunkedDecoder, write_chunk, write_last_chunk};
use llmload::http::response::{BodyKind, parse_head};
use llmload::http::sse::{SseEvent, SseSplitter};
use llmload::protocol::{self, Protocol, StreamState};

const RUN_FOR: Duration = Duration::from_secs(1);
/// Size of the synthetic SSE stream scanned per pass.
const STREAM_BYTES: usize = 32 << 20;
const MAX_EVENT: usize = 64 * 1024;

/// A long run of OpenAI chat streams as vLLM sends them: per response a role
/// chunk, content chunks of a few characters, a finish chunk, a usage chunk
/// and `[DONE]`. Returns the SSE bytes, each event's data (for chunked
/// framing), and the expected totals.
struct Stream {
    sse: Vec<u8>,
    /// `(start, end)` of each event in `sse`, blank line included.
    events: Vec<(usize, usize)>,
    data_bytes: usize,
}

fn build_stream() -> Stream {
    const WORDS: [&str; 12] = [
        "The", " quick", " brown", " fox", " jumps", " over", " the", " lazy", " dog", ".",
        " Hello", ",",
    ];
    let prefix = r#"{"id":"chatcmpl-8d3f0a1b2c","object":"chat.completion.chunk","created":1718000000,"model":"meta-llama/Llama-3.1-8B-Instruct","choices":[{"index":0,"delta":"#;
    let mut s = Stream {
        sse: Vec::with_capacity(STREAM_BYTES + 4096),
        events: Vec::new(),
        data_bytes: 0,
    };
    let push = |s: &mut Stream, data: &str| {
        let start = s.sse.len();
        s.sse.extend_from_slice(b"data: ");
        s.sse.extend_from_slice(data.as_bytes());
        s.sse.extend_from_slice(b"\n\n");
        s.events.push((start, s.sse.len()));
        s.data_bytes += data.len();
    };
    let mut word = 0;
    while s.sse.len() < STREAM_BYTES {
        push(
            &mut s,
            &format!(
                r#"{prefix}{{"role":"assistant","content":""}},"logprobs":null,"finish_reason":null}}]}}"#
            ),
        );
        for _ in 0..128 {
            let w = WORDS[word % WORDS.len()];
            word += 1;
            push(
                &mut s,
                &format!(
                    r#"{prefix}{{"content":"{w}"}},"logprobs":null,"finish_reason":null}}]}}"#
                ),
            );
        }
        push(
            &mut s,
            &format!(
                r#"{prefix}{{}},"logprobs":null,"finish_reason":"length","stop_reason":null}}]}}"#
            ),
        );
        push(
            &mut s,
            r#"{"id":"chatcmpl-8d3f0a1b2c","object":"chat.completion.chunk","created":1718000000,"model":"meta-llama/Llama-3.1-8B-Instruct","choices":[],"usage":{"prompt_tokens":512,"total_tokens":640,"completion_tokens":128}}"#,
        );
        push(&mut s, "[DONE]");
    }
    s
}

/// Runs `pass` repeatedly for about `RUN_FOR`; returns passes and seconds.
fn measure(mut pass: impl FnMut()) -> (u64, f64) {
    pass(); // warm caches and check once before timing
    let start = Instant::now();
    let mut passes = 0;
    while start.elapsed() < RUN_FOR {
        pass();
        passes += 1;
    }
    (passes, start.elapsed().as_secs_f64())
}

fn row(name: &str, piece: &str, gbps: Option<f64>, per_item: f64, unit: &str) {
    let gbps = gbps.map_or("-".to_string(), |g| format!("{g:.2} GB/s"));
    println!("{name:<28} {piece:>7} {gbps:>12} {per_item:>10.1} {unit}");
}

fn sse_scan(stream: &Stream, piece: usize) {
    let mut splitter = SseSplitter::with_capacity(MAX_EVENT);
    let input = black_box(stream.sse.as_slice());
    let (passes, secs) = measure(|| {
        splitter.reset();
        let (mut events, mut bytes) = (0usize, 0usize);
        for p in input.chunks(piece) {
            splitter
                .feed(p, |e| {
                    events += 1;
                    bytes += black_box(e.data).len();
                })
                .expect("valid stream");
        }
        assert_eq!((events, bytes), (stream.events.len(), stream.data_bytes));
    });
    let total = passes as f64 * input.len() as f64;
    let per_event = secs * 1e9 / (passes as f64 * stream.events.len() as f64);
    row(
        "sse scan",
        &kib(piece),
        Some(total / secs / 1e9),
        per_event,
        "ns/event",
    );
}

/// One chunk per event, as uvicorn/vLLM and most gateways frame a stream.
fn chunked_body(stream: &Stream) -> Vec<u8> {
    let mut body = Vec::with_capacity(stream.sse.len() + stream.events.len() * 8);
    for &(start, end) in &stream.events {
        write_chunk(&mut body, &stream.sse[start..end]);
    }
    write_last_chunk(&mut body);
    body
}

fn chunked_sse(stream: &Stream, body: &[u8], piece: usize) {
    let mut decoder = ChunkedDecoder::default();
    let mut splitter = SseSplitter::with_capacity(MAX_EVENT);
    let input = black_box(body);
    let (passes, secs) = measure(|| {
        decoder.reset();
        splitter.reset();
        let (mut events, mut bytes, mut done) = (0usize, 0usize, false);
        for p in input.chunks(piece) {
            let mut rest = p;
            while !rest.is_empty() && !done {
                let step = decoder.decode(rest).expect("valid framing");
                rest = &rest[step.consumed..];
                done = step.done;
                splitter
                    .feed(step.data, |e| {
                        events += 1;
                        bytes += black_box(e.data).len();
                    })
                    .expect("valid stream");
            }
        }
        assert!(done, "last chunk not seen");
        assert_eq!((events, bytes), (stream.events.len(), stream.data_bytes));
    });
    let total = passes as f64 * input.len() as f64;
    let per_event = secs * 1e9 / (passes as f64 * stream.events.len() as f64);
    row(
        "chunked decode + sse scan",
        &kib(piece),
        Some(total / secs / 1e9),
        per_event,
        "ns/event",
    );
}

fn head_parse(name: &str, head: &[u8], want: BodyKind, event_stream: bool) {
    const BATCH: u64 = 1000;
    let input = black_box(head);
    let (passes, secs) = measure(|| {
        for _ in 0..BATCH {
            let h = parse_head(black_box(input))
                .expect("valid head")
                .expect("complete head");
            assert!(
                h.status == 200 && h.len == input.len() && h.body == want && h.keep_alive,
                "wrong head {h:?}"
            );
            assert_eq!(h.event_stream, event_stream);
        }
    });
    let per = secs * 1e9 / (passes * BATCH) as f64;
    row(name, "-", None, per, "ns/head");
}

/// The openai-chat parser on every event of the stream, as a worker reads
/// them: the text of each content chunk is checked against the total.
fn chat_events(stream: &Stream) {
    let chat = chat();
    let events: Vec<&[u8]> = stream
        .events
        .iter()
        .map(|&(start, end)| &stream.sse[start + 6..end - 2])
        .collect();
    let expected: usize = events.iter().map(|d| parse(chat, d).0).sum();
    let (passes, secs) = measure(|| {
        let mut text = 0;
        for &data in black_box(&events) {
            text += parse(chat, data).0;
        }
        assert_eq!(text, expected);
    });
    let total = passes as f64 * stream.data_bytes as f64;
    let per_event = secs * 1e9 / (passes as f64 * events.len() as f64);
    row(
        "openai-chat parse_event",
        "-",
        Some(total / secs / 1e9),
        per_event,
        "ns/event",
    );
}

fn chat() -> &'static dyn Protocol {
    protocol::find("openai-chat").expect("registered")
}

/// Text bytes and completion tokens of one event.
fn parse(chat: &dyn Protocol, data: &[u8]) -> (usize, Option<u32>) {
    let info = chat.parse_event(
        &SseEvent {
            event: b"",
            data: black_box(data),
        },
        &mut StreamState::default(),
    );
    (info.text.len(), info.completion_tokens)
}

/// The shapes of a large openai-chat event.
#[derive(Clone, Copy)]
enum Big {
    /// All of it text: the parser's fast path.
    Text,
    /// One character of text, then vLLM-style `logprobs` for many tokens:
    /// a benign tail the parser walks key by key.
    Logprobs,
    /// One character of text, then a `usage` object whose last entry is
    /// `usage` objects nested in each other down to an empty one, all
    /// closed: the shape that made the key scan quadratic.
    NestedUsage,
}

/// One event of about `size` bytes of the shape `big`, and the text length
/// and completion tokens it reads as.
fn big_event(size: usize, big: Big) -> (Vec<u8>, (usize, Option<u32>)) {
    const HEAD: &[u8] = br#"{"choices":[{"delta":{"content":""#;
    let mut e = HEAD.to_vec();
    match big {
        Big::Text => {
            e.resize(size - 5, b'x');
            e.extend_from_slice(br#""}}]}"#);
            let text = e.len() - HEAD.len() - 5;
            (e, (text, None))
        }
        Big::Logprobs => {
            e.extend_from_slice(br#"x"},"logprobs":{"content":["#);
            const ENTRY: &[u8] =
                br#"{"token":" the","logprob":-0.25,"bytes":[32,116,104,101],"top_logprobs":[]},"#;
            while e.len() + ENTRY.len() + 8 <= size {
                e.extend_from_slice(ENTRY);
            }
            e.pop();
            e.extend_from_slice(br#"]}}]}"#);
            (e, (1, None))
        }
        Big::NestedUsage => {
            e.extend_from_slice(br#"x"}}],"usage":{"prompt_tokens":1,"completion_tokens":2,"#);
            let depth = (size - e.len() - 2) / 10;
            for _ in 0..depth {
                e.extend_from_slice(br#""usage":{"#);
            }
            e.resize(e.len() + depth, b'}');
            e.extend_from_slice(b"}}");
            (e, (1, Some(2)))
        }
    }
}

fn chat_big_event(size: usize, big: Big) {
    let chat = chat();
    let (event, want) = big_event(size, big);
    let (passes, secs) = measure(|| assert_eq!(parse(chat, &event), want));
    let name = match big {
        Big::Text => "openai-chat text event",
        Big::Logprobs => "openai-chat logprobs event",
        Big::NestedUsage => "openai-chat nested-usage event",
    };
    row(
        name,
        &kib(size),
        Some(passes as f64 * event.len() as f64 / secs / 1e9),
        secs * 1e6 / passes as f64,
        "µs/event",
    );
}

fn kib(n: usize) -> String {
    format!("{} KiB", n / 1024)
}

fn main() {
    let stream = build_stream();
    let body = chunked_body(&stream);
    println!(
        "stream: {} MiB of SSE, {} events, {} data bytes; chunked body {} MiB",
        stream.sse.len() >> 20,
        stream.events.len(),
        stream.data_bytes,
        body.len() >> 20
    );
    println!(
        "{:<28} {:>7} {:>12} {:>10} unit",
        "benchmark", "piece", "throughput", "per item"
    );
    for piece in [4 << 10, 64 << 10] {
        sse_scan(&stream, piece);
    }
    for piece in [4 << 10, 64 << 10] {
        chunked_sse(&stream, &body, piece);
    }
    head_parse(
        "head parse (streaming)",
        b"HTTP/1.1 200 OK\r\ndate: Tue, 11 Jun 2024 10:00:00 GMT\r\nserver: uvicorn\r\n\
          content-type: text/event-stream; charset=utf-8\r\ntransfer-encoding: chunked\r\n\r\n",
        BodyKind::Chunked,
        true,
    );
    head_parse(
        "head parse (non-streaming)",
        b"HTTP/1.1 200 OK\r\ndate: Tue, 11 Jun 2024 10:00:00 GMT\r\nserver: uvicorn\r\n\
          content-length: 1873\r\ncontent-type: application/json\r\n\r\n",
        BodyKind::Length(1873),
        false,
    );
    chat_events(&stream);
    for size in [64 << 10, 1 << 20] {
        for big in [Big::Text, Big::Logprobs, Big::NestedUsage] {
            chat_big_event(size, big);
        }
    }
}
