//! Each protocol parser fed what the built-in server (`llmload serve`)
//! renders for it, with fuzz-chosen token counts, reasoning split, prompt
//! count, usage flags, response identity and model name (free text, so
//! escaped quotes and key names inside it), cut at fuzz-chosen points and
//! passed through the chunked decoder and the SSE splitter as a worker
//! reads a response. The parser must give back exactly what was rendered:
//! the text and the reasoning byte for byte, one output event per token,
//! the prompt and completion counts, the finish reason, and the in-band
//! error when one is injected in place of a token. Whole (non-streamed)
//! bodies likewise.
//!
//! Input: byte 0 picks the format (bits 0-1), usage in streams (2), a
//! whole body instead of a stream (3), chunked framing (4), an in-band error
//! (5), usage in bodies (6) and long responses (7); then the token count
//! (2 bytes), the reasoning tokens, the prompt count (4), the worker, the
//! sequence number (4), the creation time (4), where the in-band error goes
//! (2), the number of cut sizes and the sizes; the rest is the model name.

#![no_main]

use libfuzzer_sys::fuzz_target;
use llmload::http::chunked::{ChunkedDecoder, write_last_chunk};
use llmload::http::sse::{MAX_EVENT, SseSplitter};
use llmload::protocol::{self, EventInfo, Finish, Protocol, StreamState};
use llmload::server::formats::{self, Events, Format, Identity, Reply, text};

/// What a response amounted to, as the worker's tally keeps it.
#[derive(Debug, Default, PartialEq)]
struct Tally {
    text: Vec<u8>,
    reasoning: Vec<u8>,
    output_events: u32,
    prompt_tokens: Option<u32>,
    completion_tokens: Option<u32>,
    finish: Option<Finish>,
    error: Option<Vec<u8>>,
}

impl Tally {
    /// As `engine::conn::Tally::on_event`: the last count and finish
    /// reason reported win, the first error stays.
    fn on_event(&mut self, info: &EventInfo<'_>) {
        if info.has_output() {
            self.output_events += 1;
            self.text.extend_from_slice(info.text);
            self.reasoning.extend_from_slice(info.reasoning);
        }
        if info.prompt_tokens.is_some() {
            self.prompt_tokens = info.prompt_tokens;
        }
        if info.completion_tokens.is_some() {
            self.completion_tokens = info.completion_tokens;
        }
        if info.finish.is_some() {
            self.finish = info.finish;
        }
        if self.error.is_none() {
            self.error = info.error.map(<[u8]>::to_vec);
        }
    }
}

const INBAND: &[u8] = b"injected in-band error";

fn tokens(start: u32, end: u32) -> Vec<u8> {
    let mut out = Vec::new();
    text::push_tokens(&mut out, start, end);
    out
}

fn protocol_of(format: Format) -> &'static dyn Protocol {
    let name = match format {
        Format::Chat => "openai-chat",
        Format::Completions => "openai-completions",
        Format::Generate => "sglang",
        Format::Messages => "anthropic",
    };
    protocol::find(name).expect("registered")
}

/// Reads fields off the front of the input (zeros once it runs out).
struct Input<'a>(&'a [u8]);

impl Input<'_> {
    fn take<const N: usize>(&mut self) -> [u8; N] {
        let mut out = [0; N];
        let n = N.min(self.0.len());
        out[..n].copy_from_slice(&self.0[..n]);
        self.0 = &self.0[n..];
        out
    }
}

/// Most pieces a response is cut into; the rest of it comes whole, so that
/// byte-sized cuts through a long response do not slow every execution.
const MAX_PIECES: usize = 256;

/// Cuts `bytes` into pieces whose sizes cycle through `sizes` (the whole
/// input at once when there are none).
fn pieces<'a>(bytes: &'a [u8], sizes: &[usize]) -> Vec<&'a [u8]> {
    let mut out = Vec::new();
    let mut rest = bytes;
    for &size in sizes.iter().cycle().take(MAX_PIECES) {
        if rest.is_empty() {
            break;
        }
        let (piece, tail) = rest.split_at(size.min(rest.len()));
        out.push(piece);
        rest = tail;
    }
    if !rest.is_empty() {
        out.push(rest);
    }
    out
}

/// Feeds a rendered stream body through the chunked decoder (when chunked)
/// and the SSE splitter into the parser, piece by piece.
fn read_stream(p: &dyn Protocol, body: &[u8], chunked: bool, sizes: &[usize]) -> Tally {
    let mut tally = Tally::default();
    let mut state = StreamState::default();
    let mut sse = SseSplitter::with_capacity(MAX_EVENT);
    let mut decoder = ChunkedDecoder::default();
    let mut done = false;
    for piece in pieces(body, sizes) {
        let mut feed = |data: &[u8]| {
            sse.feed(data, |ev| tally.on_event(&p.parse_event(&ev, &mut state)))
                .expect("the server's events fit the limit");
        };
        if chunked {
            let mut rest = piece;
            while !rest.is_empty() {
                assert!(!done, "bytes after the last chunk");
                let step = decoder.decode(rest).expect("the server's framing is valid");
                feed(step.data);
                rest = &rest[step.consumed..];
                done = step.done;
            }
        } else {
            feed(piece);
        }
    }
    assert_eq!(done, chunked, "last chunk");
    tally
}

fuzz_target!(|data: &[u8]| {
    let mut input = Input(data);
    let [flags] = input.take::<1>();
    let format = Format::ALL[usize::from(flags & 3)];
    let (usage, whole, chunked, inband, body_usage, long) = (
        flags & 4 != 0,
        flags & 8 != 0,
        flags & 16 != 0,
        flags & 32 != 0,
        flags & 64 != 0,
        flags & 128 != 0,
    );
    // A few vocabulary cycles cover every shape of event; longer responses
    // only make each execution slower. Every SGLang event resends the whole
    // text, so its responses stay shorter still.
    let mut n = u32::from(u16::from_le_bytes(input.take::<2>())) % if long { 256 } else { 40 };
    if format == Format::Generate {
        n = n.min(100);
    }
    let [reasoning] = input.take::<1>();
    let prompt = u32::from_le_bytes(input.take::<4>());
    let [worker] = input.take::<1>();
    let seq = u32::from_le_bytes(input.take::<4>());
    let created = u32::from_le_bytes(input.take::<4>());
    let inband_at = u32::from(u16::from_le_bytes(input.take::<2>())) % (n + 1);
    let [cuts] = input.take::<1>();
    let sizes: Vec<usize> = (0..cuts % 8)
        .map(|_| match input.take::<1>()[0] {
            s @ 0..128 => usize::from(s) + 1,
            s => usize::from(s - 127) * 61,
        })
        .collect();
    let model_bytes = &input.0[..input.0.len().min(256)];
    let model = String::from_utf8_lossy(model_bytes);

    let mut r = Reply::new(format, n, u32::from(reasoning), u64::from(prompt), usage);
    r.body_usage = body_usage;
    let id = Identity {
        worker: u32::from(worker),
        seq: u64::from(seq),
        created: u64::from(created),
        model: &model,
    };
    let p = protocol_of(format);
    let openai = matches!(format, Format::Chat | Format::Completions);

    if whole {
        let mut body = Vec::new();
        if inband {
            body.extend_from_slice(formats::inband_body(format));
            let info = p.parse_body(&body);
            assert_eq!(info.error, Some(INBAND), "{format:?} in-band body");
            assert!(info.text.is_empty() && info.reasoning.is_empty());
            return;
        }
        formats::body(&r, &id, &mut Vec::new(), &mut body);
        let info = p.parse_body(&body);
        let counted = !openai || body_usage;
        let shown = String::from_utf8_lossy(&body);
        assert_eq!(
            info.text,
            &tokens(r.reasoning, n)[..],
            "{format:?} text of {shown}"
        );
        assert_eq!(
            info.reasoning,
            &tokens(0, r.reasoning)[..],
            "{format:?} reasoning of {shown}"
        );
        assert_eq!(
            info.prompt_tokens,
            counted.then_some(prompt),
            "{format:?} prompt of {shown}"
        );
        assert_eq!(
            info.completion_tokens,
            counted.then_some(n),
            "{format:?} completion of {shown}"
        );
        assert_eq!(
            info.finish,
            Some(Finish::Length),
            "{format:?} finish of {shown}"
        );
        assert_eq!(info.error, None, "{format:?} error of {shown}");
        return;
    }

    let mut out = Vec::new();
    let (mut scratch, mut prefix) = (Vec::new(), Vec::new());
    formats::start(
        &r,
        &id,
        &mut prefix,
        &mut Events::new(&mut out, &mut scratch, chunked),
    );
    let sent = if inband { inband_at } else { n };
    for k in 0..sent {
        formats::token(
            &r,
            &prefix,
            k,
            &mut Events::new(&mut out, &mut scratch, chunked),
        );
    }
    let mut ev = Events::new(&mut out, &mut scratch, chunked);
    if inband {
        formats::inband(format, &mut ev);
    } else {
        formats::finish(&r, &prefix, &mut ev);
    }
    if chunked {
        write_last_chunk(&mut out);
    }

    let got = read_stream(p, &out, chunked, &sizes);
    let thought = r.reasoning.min(sent);
    let (prompt_tokens, completion_tokens) = match format {
        Format::Chat | Format::Completions if usage && !inband => (Some(prompt), Some(n)),
        Format::Chat | Format::Completions => (None, None),
        // Every event's meta_info has both counts; with no token the
        // finish event still carries them, an in-band error does not.
        Format::Generate if inband && sent == 0 => (None, None),
        Format::Generate => (Some(prompt), Some(sent)),
        // Input tokens in `message_start`, output in `message_delta`.
        Format::Messages => (Some(prompt), (!inband).then_some(n)),
    };
    let want = Tally {
        text: tokens(thought, sent),
        reasoning: tokens(0, thought),
        output_events: sent,
        prompt_tokens,
        completion_tokens,
        // SGLang's last token event says why it finished, even when the
        // in-band error takes the place of what would follow it.
        finish: (!inband || (format == Format::Generate && sent == n && n > 0))
            .then_some(Finish::Length),
        error: inband.then(|| INBAND.to_vec()),
    };
    assert_eq!(got, want, "{format:?} {r:?} inband {inband} cut {sizes:?}");
});
