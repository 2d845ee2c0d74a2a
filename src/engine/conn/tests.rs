//! The receiver fed the built-in server's own responses: every wire format,
//! streamed (chunked, or close-delimited as to an HTTP/1.0 client) and whole,
//! with the server's faults (in-band errors, resets, malformed bytes, error
//! statuses), each cut at every byte boundary and at random. The bytes come
//! from `server::formats` and `server::head`, put together in the order
//! `server::conn` sends them; the expected tally follows from the facts the
//! reply was rendered from (tokens, reasoning, usage, where each token event
//! ends on the wire), never from running the receiver.

use super::*;
use crate::http::chunked::write_last_chunk;
use crate::http::test_support::for_each_split;
use crate::protocol::anthropic::Anthropic;
use crate::protocol::openai_chat::OpenAiChat;
use crate::protocol::openai_completions::OpenAiCompletions;
use crate::protocol::sglang::Sglang;
use crate::server::conn::MALFORMED;
use crate::server::formats::text::token;
use crate::server::formats::{self, Events, Format, Identity, Problem, Reply};
use crate::server::head::{self, Framing, ResponseHead, Status};

const T_SEND: u64 = 100;
/// A read ending at input offset `end` happens at `T0 + end`, so a token's
/// timestamp names the read that delivered its event's last byte.
const T0: u64 = 1_000;
/// Gaps kept per response unless a test says otherwise.
const GAPS: usize = 64;
const PROMPT: u64 = 11;
const INBAND: &[u8] = b"injected in-band error";

/// A receiver with room for any test response.
fn rx_with(max_gaps: usize, keep_text: bool) -> Rx {
    Rx::new(max_gaps, keep_text, 64 << 20, Budget::new(usize::MAX / 2))
}

fn protocol(f: Format) -> &'static dyn Protocol {
    match f {
        Format::Chat => &OpenAiChat,
        Format::Completions => &OpenAiCompletions,
        Format::Generate => &Sglang,
        Format::Messages => &Anthropic,
    }
}

fn ident() -> Identity<'static> {
    Identity {
        worker: 3,
        seq: 9,
        created: 1_700_000_000,
        model: "m\"odel",
    }
}

/// What the server does to one generation response (its fault schedule's
/// verdict for the request).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Shape {
    Whole,
    /// The in-band error in place of token `n / 2` (streams), or as the body.
    Inband,
    /// RST in place of token `n / 2` (streams), or instead of the body.
    Reset,
}

/// How a response ended for the receiver.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum End {
    /// Complete, with what the worker then records.
    Done {
        keep_alive: bool,
        verdict: ErrorClass,
    },
    /// The receiver refused the bytes.
    Failed(ErrorClass),
    /// Incomplete when the bytes ran out: the worker waits for more, or on
    /// a close or reset charges the request `Reset`.
    Short,
}

/// One response as it goes on the wire, and what it must tally to.
struct Wire {
    bytes: Vec<u8>,
    /// Offset just past the last byte of each output-bearing event.
    token_ends: Vec<usize>,
    /// The server closes the connection after the bytes.
    closes: bool,
    status: u16,
    streamed: bool,
    text: String,
    prompt_tokens: Option<u32>,
    completion_tokens: Option<u32>,
    finish: Finish,
    error: Option<Vec<u8>>,
    end: End,
}

impl Wire {
    /// Facts of a response with no output (error statuses, faults).
    fn bare(bytes: Vec<u8>, status: u16, end: End) -> Wire {
        Wire {
            bytes,
            token_ends: Vec::new(),
            closes: false,
            status,
            streamed: false,
            text: String::new(),
            prompt_tokens: None,
            completion_tokens: None,
            finish: Finish::None,
            error: None,
            end,
        }
    }
}

/// The text of output tokens `0..n`.
fn tokens(n: u32) -> String {
    (0..n).map(token).collect()
}

/// A streamed response as `Conn::generate` writes its head and first events
/// and `Conn::step` the rest: tokens, then the finish events and the last
/// chunk; or the in-band error events and the last chunk in place of token
/// `n / 2`; or nothing more in place of that token (the reset).
fn stream(r: &Reply, shape: Shape, http10: bool) -> Wire {
    let chunked = !http10;
    let mut out = Vec::new();
    head::write(&mut out, &ResponseHead::stream(1, !http10, http10));
    let (mut scratch, mut prefix) = (Vec::new(), Vec::new());
    let id = ident();
    formats::start(
        r,
        &id,
        &mut prefix,
        &mut Events::new(&mut out, &mut scratch, chunked),
    );
    let fault_at = (shape != Shape::Whole).then_some(r.n / 2);
    let mut token_ends = Vec::new();
    let mut k = 0;
    loop {
        if fault_at == Some(k) {
            if shape == Shape::Inband {
                formats::inband(r.format, &mut Events::new(&mut out, &mut scratch, chunked));
                if chunked {
                    write_last_chunk(&mut out);
                }
            }
            break;
        }
        if k == r.n {
            formats::finish(
                r,
                &prefix,
                &mut Events::new(&mut out, &mut scratch, chunked),
            );
            if chunked {
                write_last_chunk(&mut out);
            }
            break;
        }
        formats::token(
            r,
            &prefix,
            k,
            &mut Events::new(&mut out, &mut scratch, chunked),
        );
        // The event ends before its chunk's closing CRLF.
        token_ends.push(out.len() - if chunked { 2 } else { 0 });
        k += 1;
    }
    let whole = shape == Shape::Whole;
    let sent = token_ends.len() as u32;
    let p = Some(PROMPT as u32);
    let (prompt_tokens, completion_tokens) = match r.format {
        // Usage comes in its own chunk after the finish, when asked for.
        Format::Chat | Format::Completions if whole && r.include_usage => (p, Some(r.n)),
        Format::Chat | Format::Completions => (None, None),
        // Every event's meta_info has both counts (the finish event too).
        Format::Generate if whole || sent > 0 => (p, Some(sent)),
        Format::Generate => (None, None),
        // Input tokens come in `message_start`, output in `message_delta`.
        Format::Messages => (p, whole.then_some(r.n)),
    };
    Wire {
        bytes: out,
        token_ends,
        closes: http10 || shape == Shape::Reset,
        status: 200,
        streamed: true,
        text: tokens(sent),
        prompt_tokens,
        completion_tokens,
        finish: if whole { Finish::Length } else { Finish::None },
        error: (shape == Shape::Inband).then(|| INBAND.to_vec()),
        end: match shape {
            Shape::Whole => End::Done {
                keep_alive: !http10,
                verdict: ErrorClass::None,
            },
            Shape::Inband => End::Done {
                keep_alive: true,
                verdict: ErrorClass::InBandError,
            },
            Shape::Reset => End::Short,
        },
    }
}

/// A non-streamed response as `Conn::generate` builds it: the body (or the
/// in-band error body) behind a content-length head; a reset sends nothing.
fn whole(r: &Reply, shape: Shape) -> Wire {
    if shape == Shape::Reset {
        return Wire::bare(Vec::new(), 0, End::Short);
    }
    let mut body = Vec::new();
    if shape == Shape::Inband {
        body.extend_from_slice(formats::inband_body(r.format));
    } else {
        formats::body(r, &ident(), &mut Vec::new(), &mut body);
    }
    let out = json_response(Status::Ok, &body, true);
    if shape == Shape::Inband {
        let mut w = Wire::bare(
            out,
            200,
            End::Done {
                keep_alive: true,
                verdict: ErrorClass::InBandError,
            },
        );
        w.error = Some(INBAND.to_vec());
        return w;
    }
    let usage = match r.format {
        Format::Chat | Format::Completions => r.body_usage,
        Format::Generate | Format::Messages => true,
    };
    Wire {
        text: tokens(r.n),
        prompt_tokens: usage.then_some(PROMPT as u32),
        completion_tokens: usage.then_some(r.n),
        finish: Finish::Length,
        ..Wire::bare(
            out,
            200,
            End::Done {
                keep_alive: true,
                verdict: ErrorClass::None,
            },
        )
    }
}

/// A JSON body behind its content-length head, as `Conn::simple` and the
/// deferred body of `Conn::generate` send it.
fn json_response(status: Status, body: &[u8], keep_alive: bool) -> Vec<u8> {
    let mut out = Vec::new();
    head::write(
        &mut out,
        &ResponseHead {
            status,
            content_type: head::JSON,
            framing: Framing::Length(body.len()),
            messages: 1,
            keep_alive,
            http10: false,
            extra: b"",
        },
    );
    out.extend_from_slice(body);
    out
}

/// An error response as `Conn::error` and `Conn::simple` build it. The
/// receiver keeps the body's first `MAX_MESSAGE` bytes as the message.
fn error(format: Option<Format>, status: Status, problem: Problem, msg: &str, keep: bool) -> Wire {
    let mut body = Vec::new();
    formats::error_body(format, &mut body, problem, status.code(), msg);
    let out = json_response(status, &body, keep);
    let mut w = Wire::bare(
        out,
        status.code(),
        End::Done {
            keep_alive: keep,
            verdict: ErrorClass::HttpStatus,
        },
    );
    w.error = Some(body[..body.len().min(MAX_MESSAGE)].to_vec());
    w.closes = !keep;
    w
}

/// What one exchange left behind, in the terms the record carries.
#[derive(Debug, PartialEq, Eq)]
struct Seen {
    end: End,
    status: u16,
    streamed: bool,
    t_first_byte: u64,
    t_first_token: u64,
    t_last_token: u64,
    text_events: u32,
    gaps: usize,
    gap_sum: u64,
    gaps_truncated: bool,
    text_bytes: u32,
    text: String,
    prompt_tokens: Option<u32>,
    completion_tokens: Option<u32>,
    finish: Finish,
    error: Option<Vec<u8>>,
}

/// Feeds `pieces` as the worker's `read_more` and `on_eof` do: each read
/// fills the free end of a `READ_BUF` buffer (a piece larger than that
/// arrives in several reads, an empty one in none), and at the end the
/// server's close completes a close-delimited body. Returns how the
/// response ended; `reads` gets the input offset each read ended at.
fn drive(
    rx: &mut Rx,
    pieces: &[&[u8]],
    closes: bool,
    proto: &dyn Protocol,
    reads: &mut Vec<usize>,
) -> End {
    let mut buf = vec![0u8; READ_BUF];
    let mut filled = 0;
    let mut offset = 0;
    reads.clear();
    for piece in pieces {
        let mut rest = *piece;
        while !rest.is_empty() {
            if filled == buf.len() {
                return End::Failed(ErrorClass::MalformedResponse);
            }
            let n = rest.len().min(buf.len() - filled);
            buf[filled..filled + n].copy_from_slice(&rest[..n]);
            rest = &rest[n..];
            filled += n;
            offset += n;
            reads.push(offset);
            match rx.receive(&mut buf, &mut filled, T0 + offset as u64, proto) {
                Ok(Step::More) => {}
                Ok(Step::Done { keep_alive }) => {
                    let verdict = rx.conclude(proto);
                    return End::Done {
                        keep_alive,
                        verdict,
                    };
                }
                Err(class) => return End::Failed(class),
            }
        }
    }
    if closes && rx.eof_completes() {
        let verdict = rx.conclude(proto);
        return End::Done {
            keep_alive: false,
            verdict,
        };
    }
    End::Short
}

fn seen(rx: &Rx, end: End) -> Seen {
    let t = &rx.tally;
    Seen {
        end,
        status: rx.status(),
        streamed: rx.sse_mode,
        t_first_byte: rx.t_first_byte,
        t_first_token: t.t_first_token,
        t_last_token: t.t_last_token,
        text_events: t.text_events,
        gaps: t.gaps.len(),
        gap_sum: t.gaps.iter().sum(),
        gaps_truncated: t.gaps_truncated,
        text_bytes: t.text_bytes,
        text: String::from_utf8(t.text.clone()).expect("the mock's text is UTF-8"),
        prompt_tokens: t.prompt_tokens,
        completion_tokens: t.completion_tokens,
        finish: t.finish,
        error: t.error.map(|(b, n)| b[..n].to_vec()),
    }
}

/// What `w` must tally to when it arrived in reads ending at `reads`, with
/// `max_gaps` gaps kept and the text kept or not.
fn expected(w: &Wire, reads: &[usize], max_gaps: usize, keep_text: bool) -> Seen {
    // The time of the read that delivered the byte before offset `end`.
    let at = |end: usize| {
        T0 + *reads
            .iter()
            .find(|&&r| r >= end)
            .expect("every byte is read") as u64
    };
    let events = w.token_ends.len();
    let gaps = events.saturating_sub(1).min(max_gaps);
    let first = w.token_ends.first().map_or(0, |&e| at(e));
    Seen {
        end: w.end,
        status: w.status,
        streamed: w.streamed,
        t_first_byte: reads.first().map_or(0, |&r| T0 + r as u64),
        t_first_token: first,
        t_last_token: w.token_ends.last().map_or(0, |&e| at(e)),
        text_events: events as u32,
        gaps,
        // The kept gaps run from the first token to token `gaps`.
        gap_sum: if events > 0 {
            at(w.token_ends[gaps]) - first
        } else {
            0
        },
        gaps_truncated: events.saturating_sub(1) > max_gaps,
        text_bytes: w.text.len() as u32,
        text: if keep_text {
            w.text.clone()
        } else {
            String::new()
        },
        prompt_tokens: w.prompt_tokens,
        completion_tokens: w.completion_tokens,
        finish: w.finish,
        error: w.error.clone(),
    }
}

/// Feeds `w` cut in every way `for_each_split` knows to one receiver (reset
/// between cuts, as a connection reuses it) and checks each tally.
fn check(w: &Wire, proto: &dyn Protocol, max_gaps: usize, keep_text: bool, what: &str) {
    let mut rx = rx_with(max_gaps, keep_text);
    let mut reads = Vec::new();
    let mut cuts = 0;
    for_each_split(&w.bytes, w.bytes.len() as u64, |pieces| {
        rx.reset(T_SEND);
        rx.tally.keep_text = keep_text;
        let end = drive(&mut rx, pieces, w.closes, proto, &mut reads);
        let want = expected(w, &reads, max_gaps, keep_text);
        let sizes: Vec<usize> = pieces.iter().map(|p| p.len()).collect();
        assert_eq!(seen(&rx, end), want, "{what}, pieces {sizes:?}");
        if let End::Done { .. } = end {
            // Nothing is left over: the response ends at its last byte.
            assert_eq!(reads.last(), Some(&w.bytes.len()), "{what}");
        }
        assert_eq!(rx.t_send, T_SEND);
        cuts += 1;
    });
    assert!(cuts > w.bytes.len(), "{what}: every cut was tried");
}

/// Replies worth telling apart: several tokens, reasoning, usage asked
/// for or not, one token, none.
fn replies(format: Format) -> Vec<Reply> {
    [(7, 0, true), (7, 3, false), (1, 0, true), (0, 0, false)]
        .into_iter()
        .map(|(n, reasoning, usage)| {
            let mut r = Reply::new(format, n, reasoning, PROMPT, usage);
            r.body_usage = usage;
            r
        })
        .collect()
}

#[test]
fn streams_tally_exactly_in_every_format() {
    for format in Format::ALL {
        for r in replies(format) {
            for shape in [Shape::Whole, Shape::Inband, Shape::Reset] {
                let w = stream(&r, shape, false);
                let what = format!("{format:?} stream {shape:?} {r:?}");
                check(&w, protocol(format), GAPS, true, &what);
            }
        }
    }
}

#[test]
fn a_close_delimited_stream_ends_at_the_close() {
    for format in Format::ALL {
        let r = Reply::new(format, 5, 2, PROMPT, true);
        let w = stream(&r, Shape::Whole, true);
        check(&w, protocol(format), GAPS, true, &format!("{format:?}"));
        // Without the close the response is not over.
        let mut rx = rx_with(GAPS, true);
        rx.reset(T_SEND);
        let end = drive(
            &mut rx,
            &[&w.bytes],
            false,
            protocol(format),
            &mut Vec::new(),
        );
        assert_eq!(end, End::Short, "{format:?}");
        assert_eq!(rx.tally.text_events, 5, "{format:?}");
    }
}

#[test]
fn whole_bodies_tally_exactly_in_every_format() {
    for format in Format::ALL {
        for r in replies(format) {
            for shape in [Shape::Whole, Shape::Inband, Shape::Reset] {
                let w = whole(&r, shape);
                let what = format!("{format:?} body {shape:?} {r:?}");
                check(&w, protocol(format), GAPS, true, &what);
            }
        }
    }
}

#[test]
fn all_reasoning_is_still_output() {
    // Every token is reasoning: chat and Anthropic send no text field at
    // all, yet the output is all there.
    for format in [Format::Chat, Format::Messages] {
        let r = Reply::new(format, 4, 4, PROMPT, true);
        for w in [stream(&r, Shape::Whole, false), whole(&r, Shape::Whole)] {
            check(&w, protocol(format), GAPS, true, &format!("{format:?}"));
        }
    }
}

#[test]
fn error_statuses_keep_the_body_as_their_message() {
    let long = "x".repeat(2 * MAX_MESSAGE);
    for format in Format::ALL {
        let proto = protocol(format);
        let f = Some(format);
        let cases = [
            error(
                f,
                Status::Unavailable,
                Problem::Unavailable,
                "injected error",
                true,
            ),
            error(
                f,
                Status::Unauthorized,
                Problem::Unauthorized,
                "no key",
                true,
            ),
            error(f, Status::NotFound, Problem::UnknownModel, "no `m`", true),
            error(f, Status::BadRequest, Problem::Invalid, &long, true),
            error(
                None,
                Status::HeadersTooLarge,
                Problem::Invalid,
                "head",
                false,
            ),
        ];
        for w in &cases {
            check(w, proto, GAPS, true, &format!("{format:?} {}", w.status));
        }
    }
    // The long message is cut to the kept length.
    let w = error(None, Status::BadRequest, Problem::Invalid, &long, true);
    assert_eq!(w.error.as_ref().map(Vec::len), Some(MAX_MESSAGE));
}

#[test]
fn malformed_bytes_fail_the_response() {
    for format in Format::ALL {
        let mut w = Wire::bare(
            MALFORMED.to_vec(),
            0,
            End::Failed(ErrorClass::MalformedResponse),
        );
        w.closes = true;
        check(&w, protocol(format), GAPS, true, &format!("{format:?}"));
    }
}

#[test]
fn an_interim_continue_is_skipped() {
    for format in Format::ALL {
        let r = Reply::new(format, 3, 0, PROMPT, true);
        for mut w in [stream(&r, Shape::Whole, false), whole(&r, Shape::Whole)] {
            let mut bytes = head::CONTINUE.to_vec();
            bytes.extend_from_slice(&w.bytes);
            w.bytes = bytes;
            for e in &mut w.token_ends {
                *e += head::CONTINUE.len();
            }
            check(&w, protocol(format), GAPS, true, &format!("{format:?}"));
        }
    }
}

#[test]
fn gaps_past_the_limit_are_dropped_and_flagged() {
    for format in Format::ALL {
        let r = Reply::new(format, 7, 0, PROMPT, true);
        let w = stream(&r, Shape::Whole, false);
        check(&w, protocol(format), 2, true, &format!("{format:?}"));
    }
}

#[test]
fn the_first_event_s_text_is_marked_in_the_kept_text() {
    for format in Format::ALL {
        for reasoning in [0, 2] {
            let r = Reply::new(format, 6, reasoning, PROMPT, true);
            let w = stream(&r, Shape::Whole, false);
            let mut rx = rx_with(GAPS, true);
            for_each_split(&w.bytes, 5, |pieces| {
                rx.reset(T_SEND);
                drive(&mut rx, pieces, false, protocol(format), &mut Vec::new());
                let t = &rx.tally;
                // Every event carries one word of the mock's vocabulary,
                // reasoning or text alike.
                assert_eq!(t.text_events, 6, "{format:?}");
                assert_eq!(t.first_text_len as usize, token(0).len(), "{format:?}");
                assert!(t.text.starts_with(token(0).as_bytes()), "{format:?}");
            });
        }
    }
}

#[test]
fn text_not_kept_is_still_counted() {
    for format in Format::ALL {
        let r = Reply::new(format, 7, 2, PROMPT, true);
        for w in [stream(&r, Shape::Whole, false), whole(&r, Shape::Whole)] {
            check(&w, protocol(format), GAPS, false, &format!("{format:?}"));
        }
    }
}

#[test]
fn bytes_after_the_response_end_the_connection() {
    // A server that sends more than the response (here a stray second
    // head): the response is complete, and the connection cannot carry
    // another if the extra bytes came in the same read. The bodiless
    // response ends with its head, the others with their body.
    let r = Reply::new(Format::Chat, 3, 0, PROMPT, true);
    let bodiless = json_response(Status::Unavailable, b"", true);
    let cases = [
        (stream(&r, Shape::Whole, false).bytes, ErrorClass::None, 3),
        (whole(&r, Shape::Whole).bytes, ErrorClass::None, 3),
        (bodiless, ErrorClass::HttpStatus, 0),
    ];
    for (response, verdict, n) in cases {
        let len = response.len();
        let mut bytes = response;
        bytes.extend_from_slice(b"HTTP/1.1 200 OK\r\n");
        let proto = protocol(Format::Chat);
        let mut rx = rx_with(GAPS, true);
        let mut reads = Vec::new();
        for_each_split(&bytes, 7, |pieces| {
            rx.reset(T_SEND);
            let end = drive(&mut rx, pieces, false, proto, &mut reads);
            let done_at = *reads.last().unwrap();
            assert!(done_at >= len);
            let keep_alive = done_at == len;
            assert_eq!(
                end,
                End::Done {
                    keep_alive,
                    verdict
                }
            );
            assert_eq!(rx.tally.text_bytes as usize, tokens(n).len());
        });
    }
}

#[test]
fn a_head_that_does_not_fit_the_buffer_is_malformed() {
    let mut bytes = b"HTTP/1.1 200 OK\r\nx-long: ".to_vec();
    bytes.resize(READ_BUF + 10, b'a');
    let mut rx = rx_with(GAPS, true);
    rx.reset(T_SEND);
    let end = drive(&mut rx, &[&bytes], false, &OpenAiChat, &mut Vec::new());
    assert_eq!(end, End::Failed(ErrorClass::MalformedResponse));
}

/// Drives `w` through `rx` in reads of `READ_BUF`, from a fresh request.
fn run(rx: &mut Rx, w: &Wire, proto: &dyn Protocol, reads: &mut Vec<usize>) -> End {
    rx.reset(T_SEND);
    drive(rx, &[&w.bytes], w.closes, proto, reads)
}

/// Whether `text` is the text of tokens `0..k` for some `k`, returning `k`.
fn whole_tokens(text: &[u8]) -> Option<u32> {
    let s = std::str::from_utf8(text).ok()?;
    (0..=s.len() as u32).find(|&k| tokens(k) == s)
}

#[test]
fn kept_text_stops_at_the_cap_in_whole_pieces() {
    for format in Format::ALL {
        let proto = protocol(format);
        let r = Reply::new(format, 40, 0, PROMPT, true);
        let full = tokens(40).len();
        let cap = full / 2;
        let mut rx = Rx::new(GAPS, true, cap, Budget::new(usize::MAX / 2));
        let w = stream(&r, Shape::Whole, false);
        let end = run(&mut rx, &w, proto, &mut Vec::new());
        let ok = End::Done {
            keep_alive: true,
            verdict: ErrorClass::None,
        };
        assert_eq!(end, ok, "{format:?}");
        let t = &rx.tally;
        // Counting goes on past the cap; keeping stops at a token boundary.
        assert_eq!((t.text_events, t.text_bytes as usize), (40, full));
        assert!(t.text_truncated && t.text.len() <= cap, "{format:?}");
        let k = whole_tokens(&t.text).unwrap_or_else(|| panic!("{format:?}: cut mid-token"));
        assert!(
            tokens(k + 1).len() > cap,
            "{format:?}: stopped early at {k}"
        );
        assert!(t.text.capacity() <= cap);
        // A whole body's text is one piece: over the cap, none of it is kept.
        let end = run(&mut rx, &whole(&r, Shape::Whole), proto, &mut Vec::new());
        assert_eq!(end, ok, "{format:?}");
        assert!(rx.tally.text_truncated && rx.tally.text.is_empty());
        assert_eq!(rx.tally.text_bytes as usize, full);
        // Under the cap nothing is cut, and the flag is reset per response.
        let mut rx = Rx::new(GAPS, true, full, Budget::new(usize::MAX / 2));
        run(&mut rx, &w, proto, &mut Vec::new());
        assert!(!rx.tally.text_truncated);
        assert_eq!(rx.tally.text, tokens(40).as_bytes());
    }
}

#[test]
fn a_conversation_reply_over_the_cap_fails_at_once() {
    for format in Format::ALL {
        let proto = protocol(format);
        let r = Reply::new(format, 40, 0, PROMPT, true);
        let cap = tokens(10).len();
        let mut rx = Rx::new(GAPS, true, cap, Budget::new(usize::MAX / 2));
        rx.tally.fail_over_cap = true;
        let w = stream(&r, Shape::Whole, false);
        let mut reads = Vec::new();
        rx.reset(T_SEND);
        // Fed in small reads: the failure comes with the token past the cap,
        // not at the end of the stream.
        let pieces: Vec<&[u8]> = w.bytes.chunks(64).collect();
        let end = drive(&mut rx, &pieces, false, proto, &mut reads);
        assert_eq!(end, End::Failed(ErrorClass::OutputOverCap), "{format:?}");
        let failed_at = *reads.last().unwrap();
        assert!(failed_at < w.token_ends[12], "{format:?}: at {failed_at}");
        assert_eq!(whole_tokens(&rx.tally.text), Some(10), "{format:?}");
        // A whole body over the cap: the response ends failed.
        let end = run(&mut rx, &whole(&r, Shape::Whole), proto, &mut reads);
        let over = End::Done {
            keep_alive: true,
            verdict: ErrorClass::OutputOverCap,
        };
        assert_eq!(end, over, "{format:?}");
        // Within the cap the reply is fine.
        let mut rx = Rx::new(GAPS, true, 1 << 20, Budget::new(usize::MAX / 2));
        rx.tally.fail_over_cap = true;
        let end = run(&mut rx, &w, proto, &mut reads);
        assert!(
            matches!(
                end,
                End::Done {
                    verdict: ErrorClass::None,
                    ..
                }
            ),
            "{format:?}"
        );
    }
}

#[test]
fn buffers_grow_within_the_workers_budget_and_shrink_after() {
    let proto = protocol(Format::Chat);
    // Two receivers share a budget that holds one large text at most.
    const LIMIT: usize = 400 << 10;
    let budget = Budget::new(LIMIT);
    let mut a = Rx::new(GAPS, true, 1 << 20, budget.clone());
    let mut b = Rx::new(GAPS, true, 1 << 20, budget.clone());
    let big = Reply::new(Format::Chat, 40_000, 0, PROMPT, true);
    let full = tokens(40_000).len();
    assert!(full > 150 << 10);
    let w = stream(&big, Shape::Whole, false);
    let mut reads = Vec::new();
    assert!(matches!(
        run(&mut a, &w, proto, &mut reads),
        End::Done { .. }
    ));
    assert!(!a.tally.text_truncated);
    let held = budget.held();
    assert_eq!(held, a.tally.text.capacity());
    assert!(held >= full && held <= LIMIT);
    // The second finds the budget short: its text is cut, and its body (a
    // whole response cannot be cut) fails.
    assert!(matches!(
        run(&mut b, &w, proto, &mut reads),
        End::Done { .. }
    ));
    assert!(b.tally.text_truncated);
    assert!(budget.held() <= LIMIT);
    let body = whole(&big, Shape::Whole);
    assert_eq!(
        run(&mut b, &body, proto, &mut reads),
        End::Failed(ErrorClass::OutputOverCap)
    );
    // Once both are recorded and shrunk, their memory is back.
    a.shrink();
    b.shrink();
    assert_eq!(a.tally.text.capacity(), 0);
    assert!(budget.held() <= 2 * SHRINK_ABOVE, "{}", budget.held());
    assert!(matches!(
        run(&mut b, &body, proto, &mut reads),
        End::Done {
            verdict: ErrorClass::None,
            ..
        }
    ));
    assert!(budget.held() <= LIMIT);
    // Dropping a receiver returns what it holds.
    drop(a);
    drop(b);
    assert_eq!(budget.held(), 0);
}

#[test]
fn small_responses_keep_their_buffers() {
    let proto = protocol(Format::Chat);
    let budget = Budget::new(usize::MAX / 2);
    let mut rx = Rx::new(GAPS, true, 1 << 20, budget.clone());
    let w = stream(
        &Reply::new(Format::Chat, 50, 0, PROMPT, true),
        Shape::Whole,
        false,
    );
    run(&mut rx, &w, proto, &mut Vec::new());
    let cap = rx.tally.text.capacity();
    assert!(cap > 0);
    rx.shrink();
    // Nothing to give back: the next response reuses the allocation.
    assert_eq!(rx.tally.text.capacity(), cap);
    assert_eq!(budget.held(), cap);
}

#[test]
fn a_body_over_max_body_is_malformed() {
    let mut bytes = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
        10u64 << 30
    )
    .into_bytes();
    bytes.resize(bytes.len() + MAX_BODY + 1, b' ');
    let mut rx = rx_with(GAPS, true);
    rx.reset(T_SEND);
    let end = drive(&mut rx, &[&bytes], false, &OpenAiChat, &mut Vec::new());
    assert_eq!(end, End::Failed(ErrorClass::MalformedResponse));
    // The body's buffer is given back after the response.
    assert!(rx.body.capacity() >= MAX_BODY / 2);
    rx.shrink();
    assert_eq!(rx.body.capacity(), 0);
}

/// Feeds `bytes` whole to a fresh receiver; the server closes after them
/// when `closes`. Returns how the response ended and its kept message.
fn verdict_of(bytes: &[u8], closes: bool, proto: &dyn Protocol) -> (End, String) {
    let mut rx = Rx::new(GAPS, true, 1 << 20, Budget::new(usize::MAX / 2));
    rx.reset(T_SEND);
    let end = drive(&mut rx, &[bytes], closes, proto, &mut Vec::new());
    let msg = String::from_utf8_lossy(rx.tally.error_message()).into_owned();
    (end, msg)
}

fn done(verdict: ErrorClass) -> End {
    End::Done {
        keep_alive: true,
        verdict,
    }
}

#[test]
fn a_success_without_the_apis_shape_is_no_output() {
    let html = "<html><body>Please log in</body></html>";
    let cases: [(String, &str); 5] = [
        (
            format!(
                "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}\r\n\r\n{html}",
                html.len()
            ),
            html,
        ),
        (
            "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n".into(),
            "empty body",
        ),
        (
            "HTTP/1.1 204 No Content\r\n\r\n".into(),
            "empty body",
        ),
        (
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 11\r\n\r\n{\"ok\":true}"
                .into(),
            "{\"ok\":true}",
        ),
        // An event stream whose events are none of the API's.
        (
            "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: 33\r\n\r\ndata: {\"hello\":1}\n\ndata: [DONE]\n\n"
                .into(),
            "data: {\"hello\":1}\n\ndata: [DONE]\n\n",
        ),
    ];
    for format in Format::ALL {
        for (bytes, msg) in &cases {
            let got = verdict_of(bytes.as_bytes(), false, protocol(format));
            assert_eq!(
                got,
                (done(ErrorClass::NoOutput), msg.to_string()),
                "{format:?} {bytes:?}"
            );
        }
    }
    // The kept message is the body's first bytes only.
    let long = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 4096\r\n\r\n{}",
        "<".repeat(4096)
    );
    let (_, msg) = verdict_of(long.as_bytes(), false, &OpenAiChat);
    assert_eq!(msg.len(), MAX_MESSAGE);
}

#[test]
fn zero_output_with_a_finish_reason_or_usage_is_a_success() {
    let bodies = [
        r#"{"choices":[{"message":{"content":""},"finish_reason":"length"}]}"#,
        r#"{"choices":[{"message":{"content":null}}],"usage":{"prompt_tokens":3,"completion_tokens":0}}"#,
    ];
    for body in bodies {
        let bytes = format!(
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        );
        let got = verdict_of(bytes.as_bytes(), false, &OpenAiChat);
        assert_eq!(got, (done(ErrorClass::None), String::new()), "{body}");
    }
    // A plain JSON response where a stream was asked for is read as a body.
    let r = Reply::new(Format::Chat, 3, 0, PROMPT, true);
    let w = whole(&r, Shape::Whole);
    assert_eq!(
        verdict_of(&w.bytes, false, &OpenAiChat).0,
        done(ErrorClass::None)
    );
}

#[test]
fn a_close_delimited_stream_cut_short_is_truncated() {
    for format in Format::ALL {
        let r = Reply::new(format, 6, 0, PROMPT, true);
        // The server closes the connection where token 3 would be.
        let mut w = stream(&r, Shape::Reset, true);
        w.end = End::Done {
            keep_alive: false,
            verdict: ErrorClass::Truncated,
        };
        check(&w, protocol(format), GAPS, true, &format!("{format:?}"));
    }
    // `[DONE]` ends a stream even without a finish reason; a framed stream
    // that ends without either is complete too (its server said where it
    // ends).
    let events = "data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\n";
    let head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n";
    let close = format!("{head}Connection: close\r\n\r\n{events}");
    let cases = [
        (close.clone(), ErrorClass::Truncated),
        (format!("{close}data: [DONE]\n\n"), ErrorClass::None),
    ];
    for (bytes, verdict) in cases {
        let got = verdict_of(bytes.as_bytes(), true, &OpenAiChat).0;
        let want = End::Done {
            keep_alive: false,
            verdict,
        };
        assert_eq!(got, want, "{bytes:?}");
    }
    let framed = format!("{head}Content-Length: {}\r\n\r\n{events}", events.len());
    let got = verdict_of(framed.as_bytes(), false, &OpenAiChat).0;
    assert_eq!(got, done(ErrorClass::None));
}

#[test]
fn a_whole_body_cut_short_or_not_json_fails() {
    let body = r#"{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"hi there"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}}"#;
    let json = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n";
    let close = |b: &str| format!("{json}Connection: close\r\n\r\n{b}");
    let framed = |b: &str| format!("{json}Content-Length: {}\r\n\r\n{b}", b.len());
    let closed = |verdict| End::Done {
        keep_alive: false,
        verdict,
    };
    let cut_by_close = "the server closed the connection inside the body's JSON document";
    let cut = "the body ends inside its JSON document";
    let not_json = "the body is not one JSON document";
    let cases = [
        (close(body), true, closed(ErrorClass::None), ""),
        (
            close(&body[..120]),
            true,
            closed(ErrorClass::Truncated),
            cut_by_close,
        ),
        (
            framed(&body[..150]),
            false,
            done(ErrorClass::MalformedResponse),
            cut,
        ),
        (
            framed(&format!("{body} trailing junk <html>")),
            false,
            done(ErrorClass::MalformedResponse),
            not_json,
        ),
        (
            close(&format!("{body}{body}")),
            true,
            closed(ErrorClass::MalformedResponse),
            not_json,
        ),
    ];
    for (bytes, closes, end, msg) in cases {
        let got = verdict_of(bytes.as_bytes(), closes, &OpenAiChat);
        assert_eq!(got, (end, msg.to_string()), "{bytes:?}");
    }
    // Every format's whole body, cut anywhere inside its JSON, fails.
    for format in Format::ALL {
        let r = Reply::new(format, 3, 0, PROMPT, false);
        let w = whole(&r, Shape::Whole);
        let at = w.bytes.len() - 1;
        let cut = [&w.bytes[..at], b" "].concat();
        let got = verdict_of(&cut, false, protocol(format)).0;
        assert_eq!(got, done(ErrorClass::MalformedResponse), "{format:?}");
    }
}

#[test]
fn switching_protocols_ends_the_connection() {
    let bytes =
        b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n";
    let got = verdict_of(bytes, false, &OpenAiChat).0;
    let want = End::Done {
        keep_alive: false,
        verdict: ErrorClass::HttpStatus,
    };
    assert_eq!(got, want);
}

#[test]
fn only_a_stream_awaits_a_first_token() {
    let mut rx = Rx::new(GAPS, true, 1 << 20, Budget::new(usize::MAX / 2));
    rx.reset(T_SEND);
    // Before the head: whether the request asked for a stream.
    assert!(rx.awaits_first_token(true));
    assert!(!rx.awaits_first_token(false));
    let mut buf = vec![0u8; READ_BUF];
    let mut feed = |rx: &mut Rx, bytes: &[u8]| {
        buf[..bytes.len()].copy_from_slice(bytes);
        let mut filled = bytes.len();
        rx.receive(&mut buf, &mut filled, T0, &OpenAiChat)
    };
    // An error status, or a body that is not a stream, stops the clock.
    for head in [
        &b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 10\r\n\r\n"[..],
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 10\r\n\r\n",
    ] {
        rx.reset(T_SEND);
        assert_eq!(feed(&mut rx, head), Ok(Step::More));
        assert!(!rx.awaits_first_token(true));
    }
    // An event stream awaits its first output event.
    rx.reset(T_SEND);
    let head =
        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n";
    assert_eq!(feed(&mut rx, head), Ok(Step::More));
    assert!(rx.awaits_first_token(true));
    let chunk = b"30\r\ndata: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\n\r\n";
    assert_eq!(feed(&mut rx, chunk), Ok(Step::More));
    assert!(!rx.awaits_first_token(true));
}
