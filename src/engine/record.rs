//! The completion record a worker sends its parent for each finished
//! request: a fixed header with every timestamp and count, followed by the
//! inter-token gaps, then (only when asked for) the output text, then an
//! in-band error message if there was one. Encoded field by field in native
//! byte order (both ends are the same binary on the same machine), with no
//! transmutes.
//!
//! A success whose scenario has no content checks usually carries no gaps:
//! its worker folded them into per-block series of its own, sent at its
//! exit as `SERIES` records (`series_bytes`).
//!
//! A record is never larger than the ring takes (`MAX_RECORD`): `fit`
//! trims it first — text before gaps, so that the latency a record carries
//! stays whole — and a compile-time check makes sure the largest gaps and
//! message always leave `MIN_RECORD_TEXT` bytes of text.

use crate::engine::conn::MAX_MESSAGE;
use crate::metrics::block::RequestSample;
use crate::metrics::errors::ErrorClass;
use crate::metrics::observe::Gaps;
use crate::metrics::series::{self, Series};
use crate::shm::run::{MAX_GAPS, MAX_RECORD};

/// `flags`: the response was an SSE stream.
pub(crate) const STREAMED: u8 = 1;
/// `flags`: more gaps arrived than the worker could keep.
pub(crate) const GAPS_TRUNCATED: u8 = 2;
/// `flags`: the last request of its conversation (always set for a
/// single-turn scenario): the parent's closed loop may release another.
pub(crate) const CONV_END: u8 = 4;
/// `flags`: no request was sent; the record only says a conversation ended
/// (it was waiting to think when the run began to drain).
pub(crate) const NO_REQUEST: u8 = 8;
/// `flags`: the output text is cut short: at the kept-text cap, at the
/// worker's byte budget, or where the record could carry no more.
pub(crate) const OUTPUT_TRUNCATED: u8 = 16;
/// `flags`: a success whose inter-token gaps the worker folded into a
/// series of its own (`worker::fold`): the record carries none.
pub(crate) const FOLDED: u8 = 32;
/// `flags`: no request's record but one block's folded gaps, sent once when
/// the worker exits: `stage` and `scenario` name the block as an issue slot
/// does, and the text is the series (`series_bytes`). With no text it is
/// the worker's last record: every folded series went before it.
pub(crate) const SERIES: u8 = 64;

/// The fixed part of a completion record.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Completion {
    pub seq: u64,
    pub t_sched: u64,
    pub t_send: u64,
    pub t_first_byte: u64,
    pub t_first_token: u64,
    pub t_last_token: u64,
    pub t_end: u64,
    pub sample: u32,
    pub stage: u16,
    pub scenario: u16,
    /// Turn within the conversation, from 1.
    pub turn: u16,
    pub status: u16,
    pub error: u8,
    pub flags: u8,
    /// `protocol::Finish` as a byte.
    pub finish: u8,
    /// `u32::MAX` when the response reported none.
    pub prompt_tokens: u32,
    /// `u32::MAX` when the response reported none.
    pub completion_tokens: u32,
    pub text_events: u32,
    pub text_bytes: u32,
    pub n_gaps: u32,
    /// Bytes of output text carried after the gaps (0 unless requested).
    pub text_len: u32,
    /// Bytes of error message carried after the text.
    pub msg_len: u32,
    /// The conversation's id (a UUID v4; all zero when none was made).
    pub conv_id: [u8; 16],
    /// Bytes of the carried text that came with the first output event
    /// (MLPerf's TPOT counts the tokens after them); may exceed `text_len`
    /// when the text was trimmed.
    pub first_text_len: u32,
    /// Index of the endpoint the request went to (`Plan::endpoints`), or
    /// `NO_ENDPOINT` when it never reached a connection.
    pub endpoint: u16,
}

/// `Completion::endpoint` of a request that reached no connection.
pub(crate) const NO_ENDPOINT: u16 = u16::MAX;

/// Encoded header size (a multiple of 8, so gaps stay aligned); the
/// endpoint index and 6 bytes of padding end it.
pub(crate) const HEADER: usize = 7 * 8 + 4 + 2 + 2 + 2 + 2 + 4 + 7 * 4 + 16 + 4 + 2 + 6;

const NONE: u32 = u32::MAX;

/// Output text every record can carry, however many gaps and however long
/// a message it has; a record with fewer gaps carries more.
pub(crate) const MIN_RECORD_TEXT: usize = 256 << 10;

// The largest gaps and message, and `MIN_RECORD_TEXT`, fit in one record.
const _: () = assert!(
    HEADER + MAX_GAPS * 8 + (MIN_RECORD_TEXT + MAX_MESSAGE).next_multiple_of(8) <= MAX_RECORD
);
const _: () = assert!(MAX_RECORD.is_multiple_of(8) && HEADER.is_multiple_of(8));

impl Completion {
    /// Total record length with its gaps, text and message.
    pub(crate) fn encoded_len(&self) -> usize {
        HEADER
            + self.n_gaps as usize * 8
            + (self.text_len as usize + self.msg_len as usize).next_multiple_of(8)
    }

    /// Sets `n_gaps`, `msg_len` and `text_len` for `n_gaps` gaps, a message
    /// of `msg_len` bytes and the output `text`, trimmed so the record is at
    /// most `MAX_RECORD` bytes: gaps past `MAX_GAPS` (flagged
    /// `GAPS_TRUNCATED`), message bytes past `MAX_MESSAGE`, then text past
    /// what room is left (flagged `OUTPUT_TRUNCATED`, cut where it still
    /// reads as a prefix of the text).
    #[inline]
    pub(crate) fn fit(&mut self, n_gaps: usize, msg_len: usize, text: &[u8]) {
        if n_gaps > MAX_GAPS {
            self.flags |= GAPS_TRUNCATED;
        }
        let n_gaps = n_gaps.min(MAX_GAPS);
        let msg_len = msg_len.min(MAX_MESSAGE);
        // `(text + msg).next_multiple_of(8)` stays within a room that is a
        // multiple of 8 when `text + msg` does.
        let room = MAX_RECORD - HEADER - n_gaps * 8 - msg_len;
        let text_len = if text.len() <= room {
            text.len()
        } else {
            self.flags |= OUTPUT_TRUNCATED;
            text_cut(text, room)
        };
        self.n_gaps = n_gaps as u32;
        self.msg_len = msg_len as u32;
        self.text_len = text_len as u32;
    }

    /// Writes the header, `gaps` (`n_gaps` of them), `text` (`text_len`
    /// bytes) and `msg` (`msg_len` bytes) into `out`, exactly
    /// `encoded_len()` bytes.
    pub(crate) fn encode(&self, gaps: &[u64], text: &[u8], msg: &[u8], out: &mut [u8]) {
        let mut w = Writer { out, at: 0 };
        for v in [
            self.seq,
            self.t_sched,
            self.t_send,
            self.t_first_byte,
            self.t_first_token,
            self.t_last_token,
            self.t_end,
        ] {
            w.put(&v.to_ne_bytes());
        }
        w.put(&self.sample.to_ne_bytes());
        w.put(&self.stage.to_ne_bytes());
        w.put(&self.scenario.to_ne_bytes());
        w.put(&self.turn.to_ne_bytes());
        w.put(&self.status.to_ne_bytes());
        w.put(&[self.error, self.flags, self.finish, 0]);
        for v in [
            self.prompt_tokens,
            self.completion_tokens,
            self.text_events,
            self.text_bytes,
            self.n_gaps,
            self.text_len,
            self.msg_len,
        ] {
            w.put(&v.to_ne_bytes());
        }
        w.put(&self.conv_id);
        w.put(&self.first_text_len.to_ne_bytes());
        w.put(&self.endpoint.to_ne_bytes());
        w.put(&[0; 6]);
        debug_assert_eq!(w.at, HEADER);
        for g in &gaps[..self.n_gaps as usize] {
            w.put(&g.to_ne_bytes());
        }
        w.put(&text[..self.text_len as usize]);
        w.put(&msg[..self.msg_len as usize]);
        let end = w.at.next_multiple_of(8);
        w.out[w.at..end].fill(0);
    }

    /// Reads a record; `None` if it is shorter than its header says.
    pub(crate) fn decode(bytes: &[u8]) -> Option<Decoded<'_>> {
        let mut r = Reader { bytes, at: 0 };
        let mut c = Completion {
            seq: r.u64()?,
            t_sched: r.u64()?,
            t_send: r.u64()?,
            t_first_byte: r.u64()?,
            t_first_token: r.u64()?,
            t_last_token: r.u64()?,
            t_end: r.u64()?,
            ..Default::default()
        };
        c.sample = r.u32()?;
        c.stage = r.u16()?;
        c.scenario = r.u16()?;
        c.turn = r.u16()?;
        c.status = r.u16()?;
        let b = r.take(4)?;
        c.error = b[0];
        c.flags = b[1];
        c.finish = b[2];
        c.prompt_tokens = r.u32()?;
        c.completion_tokens = r.u32()?;
        c.text_events = r.u32()?;
        c.text_bytes = r.u32()?;
        c.n_gaps = r.u32()?;
        c.text_len = r.u32()?;
        c.msg_len = r.u32()?;
        c.conv_id = r.take(16)?.try_into().ok()?;
        c.first_text_len = r.u32()?;
        c.endpoint = r.u16()?;
        r.take(6)?;
        let gaps = Gaps::InPlace(r.take(c.n_gaps as usize * 8)?);
        let text = r.take(c.text_len as usize)?;
        let msg = r.take(c.msg_len as usize)?;
        Some(Decoded { c, gaps, text, msg })
    }

    /// The request as the metrics see it.
    pub(crate) fn sample(&self) -> RequestSample {
        let opt = |v: u32| (v != NONE).then_some(v);
        let error = ErrorClass::from_u8(self.error);
        RequestSample {
            t_sched: self.t_sched,
            t_send: self.t_send,
            t_first_token: self.t_first_token,
            t_last_token: self.t_last_token,
            t_end: self.t_end,
            error: (error != ErrorClass::None).then_some(error),
            status: self.status,
            finish: self.finish,
            prompt_tokens: opt(self.prompt_tokens),
            completion_tokens: opt(self.completion_tokens),
            text_events: self.text_events,
            text_bytes: self.text_bytes,
            streamed: self.flags & STREAMED != 0,
            output_truncated: self.flags & OUTPUT_TRUNCATED != 0,
            first_text_len: self.first_text_len,
            ..RequestSample::default()
        }
    }

    /// `u32::MAX`-coded optional count.
    pub(crate) fn code(v: Option<u32>) -> u32 {
        v.unwrap_or(NONE)
    }
}

/// Bytes before a folded series' histogram: requests folded, count, sum,
/// sum of squares, min, max.
const SERIES_HEAD: usize = 8 + 8 + 16 + 16 + 8 + 8;

/// A block's folded gaps as a `SERIES` record's text: the requests folded,
/// the series' exact count, sum, sum of squares, min and max, then its
/// histogram in the V2 encoding, uncompressed (cheaper to make at a
/// worker's exit; at most about 300 KiB, which a record always carries).
pub(crate) fn series_bytes(requests: u64, itl: &Series) -> Vec<u8> {
    use hdrhistogram::serialization::{Serializer, V2Serializer};
    let mut out = Vec::with_capacity(SERIES_HEAD + 4096);
    out.extend_from_slice(&requests.to_ne_bytes());
    out.extend_from_slice(&itl.count().to_ne_bytes());
    out.extend_from_slice(&itl.sum_ns().to_ne_bytes());
    out.extend_from_slice(&itl.sum_sq().to_ne_bytes());
    out.extend_from_slice(&itl.min_ns().unwrap_or(u64::MAX).to_ne_bytes());
    out.extend_from_slice(&itl.max_ns().unwrap_or(0).to_ne_bytes());
    V2Serializer::new()
        .serialize(itl.histogram(), &mut out)
        .expect("encoding a histogram into memory cannot fail");
    out
}

/// The requests folded and the series `series_bytes` wrote; `None` when
/// the bytes are not such a series (of `series::BOUNDS`).
pub(crate) fn read_series(bytes: &[u8]) -> Option<(u64, Series)> {
    use hdrhistogram::serialization::Deserializer;
    let mut r = Reader { bytes, at: 0 };
    let requests = r.u64()?;
    let count = r.u64()?;
    let sum = u128::from_ne_bytes(r.take(16)?.try_into().ok()?);
    let sum_sq = u128::from_ne_bytes(r.take(16)?.try_into().ok()?);
    let (min, max) = (r.u64()?, r.u64()?);
    let mut rest = &bytes[r.at..];
    let mut hist: hdrhistogram::Histogram<u64> = Deserializer::new().deserialize(&mut rest).ok()?;
    let b = series::BOUNDS;
    if (hist.low(), hist.high(), hist.sigfig()) != (b.low, b.high, b.sigfig) {
        return None;
    }
    hist.auto(false);
    let itl = Series::from_parts(hist, (count, sum, sum_sq), (min, max)).ok()?;
    Some((requests, itl))
}

/// Where to cut raw JSON-escaped text to at most `limit` bytes so that the
/// part kept still unescapes, to a prefix of the whole: not inside a UTF-8
/// sequence, not inside an escape, and not between the halves of an escaped
/// surrogate pair.
pub(crate) fn text_cut(raw: &[u8], limit: usize) -> usize {
    if raw.len() <= limit {
        return raw.len();
    }
    let mut cut = limit;
    while cut > 0 && raw[cut] & 0xC0 == 0x80 {
        cut -= 1;
    }
    // The last escape starting before `cut` begins within 6 bytes of it
    // (`\uXXXX` is the longest) at a backslash preceded by an even run of
    // backslashes; an escape ending before that is complete. Cutting before
    // an escape can leave a high surrogate at the end: that goes too.
    loop {
        let from = cut.saturating_sub(6);
        let Some(p) = raw[from..cut].iter().rposition(|&b| b == b'\\') else {
            return cut;
        };
        let p = from + p;
        let run = raw[..=p].iter().rev().take_while(|&&b| b == b'\\').count();
        if run % 2 == 0 {
            // `p` closes a `\\` pair.
            return cut;
        }
        let is_u = raw.get(p + 1) == Some(&b'u');
        let len = if is_u { 6 } else { 2 };
        let high_surrogate = is_u
            && p + 6 == cut
            && raw[p + 2].eq_ignore_ascii_case(&b'd')
            && matches!(raw[p + 3].to_ascii_lowercase(), b'8'..=b'9' | b'a'..=b'b');
        if p + len > cut || high_surrogate {
            cut = p;
        } else {
            return cut;
        }
    }
}

/// A record read in place.
#[derive(Clone, Debug)]
pub(crate) struct Decoded<'a> {
    pub c: Completion,
    pub gaps: Gaps<'a>,
    /// Output text, raw JSON-escaped bytes, when the worker kept it.
    pub text: &'a [u8],
    /// In-band error message, raw JSON-escaped bytes.
    pub msg: &'a [u8],
}

struct Writer<'a> {
    out: &'a mut [u8],
    at: usize,
}

impl Writer<'_> {
    fn put(&mut self, b: &[u8]) {
        self.out[self.at..self.at + b.len()].copy_from_slice(b);
        self.at += b.len();
    }
}

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let s = self.bytes.get(self.at..self.at + n)?;
        self.at += n;
        Some(s)
    }
    fn u64(&mut self) -> Option<u64> {
        Some(u64::from_ne_bytes(self.take(8)?.try_into().ok()?))
    }
    fn u32(&mut self) -> Option<u32> {
        Some(u32::from_ne_bytes(self.take(4)?.try_into().ok()?))
    }
    fn u16(&mut self) -> Option<u16> {
        Some(u16::from_ne_bytes(self.take(2)?.try_into().ok()?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_with_gaps() {
        let c = Completion {
            seq: 9,
            t_sched: 1,
            t_send: 2,
            t_first_byte: 3,
            t_first_token: 4,
            t_last_token: 5,
            t_end: 6,
            sample: 7,
            stage: 2,
            scenario: 3,
            turn: 4,
            conv_id: [7; 16],
            status: 200,
            error: ErrorClass::Reset as u8,
            flags: STREAMED,
            prompt_tokens: 11,
            completion_tokens: NONE,
            text_events: 3,
            text_bytes: 15,
            n_gaps: 2,
            finish: 2,
            text_len: 5,
            msg_len: 4,
            first_text_len: 2,
            endpoint: 5,
        };
        assert_eq!(HEADER % 8, 0);
        let mut buf = vec![0xffu8; c.encoded_len()];
        assert_eq!(buf.len(), HEADER + 16 + 16);
        c.encode(&[100, u64::MAX], b"hello", b"oops", &mut buf);
        let r = Completion::decode(&buf).unwrap();
        let d = r.c;
        assert_eq!(d, c);
        assert_eq!(r.gaps.iter().collect::<Vec<_>>(), vec![100, u64::MAX]);
        assert_eq!((r.text, r.msg), (&b"hello"[..], &b"oops"[..]));
        let s = d.sample();
        assert_eq!(s.error, Some(ErrorClass::Reset));
        assert_eq!((s.prompt_tokens, s.completion_tokens), (Some(11), None));
        assert!(s.streamed);
        assert_eq!(s.finish, 2);
        assert_eq!(s.first_text_len, 2);
        assert!(Completion::decode(&buf[..HEADER + 20]).is_none());
    }

    /// Raw JSON string content for `text`, escaping some characters as
    /// `\uXXXX` (surrogate pairs beyond the BMP) and leaving others raw.
    fn escaped(text: &str, rng: &mut crate::rng::Rng) -> Vec<u8> {
        let mut out = Vec::new();
        for c in text.chars() {
            match c {
                '"' => out.extend_from_slice(b"\\\""),
                '\\' => out.extend_from_slice(b"\\\\"),
                '\n' => out.extend_from_slice(b"\\n"),
                c if rng.below(2) == 0 && !c.is_ascii() => {
                    let mut units = [0u16; 2];
                    for u in c.encode_utf16(&mut units) {
                        out.extend_from_slice(format!("\\u{u:04x}").as_bytes());
                    }
                }
                c => out.extend_from_slice(c.to_string().as_bytes()),
            }
        }
        out
    }

    #[test]
    fn text_is_cut_where_it_still_reads_as_a_prefix() {
        let mut rng = crate::rng::Rng::seeded(7);
        let alphabet = ['a', ' ', '"', '\\', '\n', 'é', '漢', '😀', 'u', 'd', '8'];
        for _ in 0..300 {
            let n = rng.below(24) as usize;
            let text: String = (0..n)
                .map(|_| alphabet[rng.below(alphabet.len() as u64) as usize])
                .collect();
            let raw = escaped(&text, &mut rng);
            let whole: String = serde_json::from_slice(&[b"\"", &raw[..], b"\""].concat()).unwrap();
            assert_eq!(whole, text);
            for limit in 0..=raw.len() + 1 {
                let cut = text_cut(&raw, limit);
                assert!(cut <= limit.min(raw.len()));
                // Never more than one escaped surrogate pair short.
                assert!(cut + 12 >= limit.min(raw.len()), "{raw:?} {limit} {cut}");
                let quoted = [b"\"", &raw[..cut], b"\""].concat();
                let part: String = serde_json::from_slice(&quoted).unwrap_or_else(|e| {
                    panic!("{:?} cut at {cut}: {e}", String::from_utf8_lossy(&raw))
                });
                assert!(text.starts_with(&part), "{part:?} of {text:?}");
            }
        }
    }

    #[test]
    fn a_folded_series_reads_back_whole_and_always_fits_a_record() {
        let mut itl = Series::new();
        for v in [1, 5, 5, 999, 123_456_789, u64::MAX] {
            itl.record(v);
        }
        let (n, back) = read_series(&series_bytes(3, &itl)).unwrap();
        assert_eq!(n, 3);
        assert_eq!(back.histogram(), itl.histogram());
        assert_eq!(
            (back.count(), back.sum_ns(), back.sum_sq()),
            (itl.count(), itl.sum_ns(), itl.sum_sq())
        );
        assert_eq!((back.min_ns(), back.max_ns()), (Some(1), Some(u64::MAX)));
        let (_, empty) = read_series(&series_bytes(0, &Series::new())).unwrap();
        assert_eq!(empty.count(), 0);
        assert!(read_series(&[0; 20]).is_none());
        // The largest encoding: every counter in use, each a large count.
        let mut full = Series::new();
        let values: Vec<u64> = full
            .histogram()
            .iter_all()
            .map(|v| v.value_iterated_to())
            .collect();
        for v in values {
            full.record_n(v, 1 << 48);
        }
        let bytes = series_bytes(u64::MAX, &full);
        assert!(bytes.len() < MAX_RECORD / 2, "{}", bytes.len());
        let mut c = Completion::default();
        c.fit(0, 0, &bytes);
        assert_eq!(c.text_len as usize, bytes.len(), "never trimmed");
        assert!(read_series(&bytes).is_some());
    }

    #[test]
    fn records_fit_the_ring_trimming_text_before_gaps() {
        let text = vec![b'x'; 3 << 20];
        // Few gaps: text fills what room the record has.
        let mut c = Completion::default();
        c.fit(10, 5, &text);
        assert_eq!(c.flags, OUTPUT_TRUNCATED);
        assert_eq!((c.n_gaps, c.msg_len), (10, 5));
        assert!(c.encoded_len() <= MAX_RECORD);
        assert!(c.encoded_len() + 8 > MAX_RECORD);
        // The most gaps and the longest message still leave MIN_RECORD_TEXT.
        let mut c = Completion::default();
        c.fit(MAX_GAPS, MAX_MESSAGE, &text);
        assert_eq!(c.n_gaps as usize, MAX_GAPS);
        assert!(c.text_len as usize >= MIN_RECORD_TEXT);
        assert!(c.encoded_len() <= MAX_RECORD);
        // More gaps than a record carries: the gaps past MAX_GAPS go, flagged.
        let mut c = Completion::default();
        c.fit(MAX_GAPS + 7, 10_000, &text[..100]);
        assert_eq!(c.flags, GAPS_TRUNCATED);
        assert_eq!(
            (c.n_gaps as usize, c.msg_len as usize),
            (MAX_GAPS, MAX_MESSAGE)
        );
        assert_eq!(c.text_len, 100);
        // What fits is left alone.
        let mut c = Completion::default();
        c.fit(3, 4, b"hello");
        assert_eq!((c.flags, c.n_gaps, c.msg_len, c.text_len), (0, 3, 4, 5));
    }
}
