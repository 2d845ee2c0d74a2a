//! `Transfer-Encoding: chunked`, both ways. The decoder is a byte-level state
//! machine that consumes every byte it is given (sizes, extensions, CRLFs and
//! trailers may be split anywhere), so the caller never keeps framing bytes
//! around; data comes back as sub-slices of the input, never copied.
//!
//! Line ends are strict: every line must end in CR LF, and a bare LF after a
//! chunk size, an extension, chunk data or a trailer is `BadLineEnd` (RFC 9112
//! §7.1 has no LF-only form for chunk lines, and lenient readers are what
//! request-smuggling attacks exploit). The one leniency is optional
//! whitespace between the size and `;` or CR, which some servers emit.

use crate::ascii::push_hex;

/// Why chunked framing was rejected.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChunkedError {
    /// A chunk size with no hex digit, or a non-hex byte where one was due.
    BadSize,
    /// A chunk size over 16 hex digits or beyond `u64`.
    SizeOverflow,
    /// A line not ended by CR LF: a bare LF or CR after a chunk size,
    /// extension or trailer, or anything but CR LF after chunk data.
    BadLineEnd,
    /// A chunk extension or trailer line longer than 4096 bytes.
    LineTooLong,
}

/// One step of decoding.
#[derive(Debug, PartialEq, Eq)]
pub struct Decoded<'a> {
    /// Input bytes used by this step (framing and data).
    pub consumed: usize,
    /// Body bytes found in this step: a sub-slice of the input, maybe empty.
    pub data: &'a [u8],
    /// The last chunk, trailers and final CRLF have been consumed; bytes after
    /// `consumed` belong to the next response.
    pub done: bool,
}

/// Bytes allowed after the size digits (whitespace and extensions), and in
/// one trailer line, not counting CR LF.
const MAX_LINE: u32 = 4096;
/// Hex digits allowed in a chunk size, leading zeros included.
const MAX_SIZE_DIGITS: u32 = 16;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum State {
    /// In the size digits; `count` digits seen so far.
    #[default]
    Size,
    /// Whitespace after the size; `;` or CR is next.
    SizeWs,
    /// Inside a chunk extension, until CR.
    Ext,
    /// CR seen at the end of the size line.
    SizeLf,
    /// `remaining` data bytes still to come.
    Data,
    /// The CR after chunk data.
    DataCr,
    /// The LF after chunk data.
    DataLf,
    /// At the start of a trailer line, or the final blank line.
    TrailerStart,
    /// Inside a trailer line, until CR.
    Trailer,
    /// CR seen at the end of a trailer line.
    TrailerLf,
    /// CR seen on the final blank line.
    FinalLf,
    Done,
}

/// Incremental chunked-body decoder. `Default` is a decoder at the start of a body.
///
/// After an error the decoder stays in the failing state until `reset`; each
/// further call repeats the error for the offending byte.
#[derive(Clone, Debug, Default)]
pub struct ChunkedDecoder {
    state: State,
    /// The chunk size while in the size line, then the data bytes left.
    remaining: u64,
    /// Digits or line bytes seen in the current line, for the limits.
    count: u32,
}

impl ChunkedDecoder {
    /// Back to the start of a body, for the next response on the connection.
    pub fn reset(&mut self) {
        *self = Self::default();
    }

    /// Decodes from the start of `input`, returning at most one contiguous data
    /// span. Call again with `&input[consumed..]` until all input is consumed or
    /// `done` is set.
    ///
    /// Framing after the data span is consumed in the same call, up to the
    /// start of the next span, so a whole `size CRLF data CRLF` chunk (and a
    /// last chunk right after it) takes one call. An error met after a data
    /// span is reported by the next call, so no body byte is lost to it and
    /// `consumed` stops at the offending byte.
    pub fn decode<'a>(&mut self, input: &'a [u8]) -> Result<Decoded<'a>, ChunkedError> {
        let mut pos = 0;
        let mut data: &'a [u8] = &[];
        if let Some(fast) = self.fast(input) {
            return Ok(fast);
        }
        while pos < input.len() {
            let b = input[pos];
            let step = match self.state {
                State::Size => self.size_byte(b),
                State::SizeWs => match b {
                    b' ' | b'\t' => self.line_byte(State::SizeWs),
                    b';' => self.line_byte(State::Ext),
                    b'\r' => Ok(State::SizeLf),
                    b'\n' => Err(ChunkedError::BadLineEnd),
                    _ => Err(ChunkedError::BadSize),
                },
                State::Ext => match b {
                    b'\r' => Ok(State::SizeLf),
                    b'\n' => Err(ChunkedError::BadLineEnd),
                    _ => self.line_byte(State::Ext),
                },
                State::SizeLf => match b {
                    b'\n' if self.remaining == 0 => {
                        self.count = 0;
                        Ok(State::TrailerStart)
                    }
                    b'\n' => Ok(State::Data),
                    _ => Err(ChunkedError::BadLineEnd),
                },
                State::Data => {
                    if !data.is_empty() {
                        // The next span is for the next call.
                        break;
                    }
                    data = self.take_data(&input[pos..]);
                    pos += data.len();
                    continue;
                }
                State::DataCr => match b {
                    b'\r' => Ok(State::DataLf),
                    _ => Err(ChunkedError::BadLineEnd),
                },
                State::DataLf => match b {
                    b'\n' => {
                        self.count = 0;
                        Ok(State::Size)
                    }
                    _ => Err(ChunkedError::BadLineEnd),
                },
                State::TrailerStart => match b {
                    b'\r' => Ok(State::FinalLf),
                    b'\n' => Err(ChunkedError::BadLineEnd),
                    _ => {
                        self.count = 0;
                        self.line_byte(State::Trailer)
                    }
                },
                State::Trailer => match b {
                    b'\r' => Ok(State::TrailerLf),
                    b'\n' => Err(ChunkedError::BadLineEnd),
                    _ => self.line_byte(State::Trailer),
                },
                State::TrailerLf => match b {
                    b'\n' => Ok(State::TrailerStart),
                    _ => Err(ChunkedError::BadLineEnd),
                },
                State::FinalLf => match b {
                    b'\n' => Ok(State::Done),
                    _ => Err(ChunkedError::BadLineEnd),
                },
                State::Done => break,
            };
            match step {
                Ok(next) => {
                    self.state = next;
                    pos += 1;
                }
                Err(_) if !data.is_empty() => break,
                Err(e) => return Err(e),
            }
        }
        Ok(Decoded {
            consumed: pos,
            data,
            done: self.state == State::Done,
        })
    }

    /// The usual shape, straight through: the CR LF ending the previous
    /// chunk, a size line of hex digits alone (`1f\r\n`), the data, its CR
    /// LF and the next size line (or the last chunk and the final blank
    /// line), as servers write nearly every chunk. It stops where anything
    /// else begins (an extension, white space, a trailer, a split line, an
    /// error) and leaves that to the byte-level machine, in the same state
    /// as the machine would have reached; `None` when it could take nothing.
    #[inline]
    /// As much of the current chunk's data as `input` holds, from its
    /// start; the chunk's end moves the state on to its CR LF.
    fn take_data<'a>(&mut self, input: &'a [u8]) -> &'a [u8] {
        let take = usize::try_from(self.remaining).map_or(input.len(), |r| r.min(input.len()));
        self.remaining -= take as u64;
        if self.remaining == 0 {
            self.state = State::DataCr;
        }
        &input[..take]
    }

    fn fast<'a>(&mut self, input: &'a [u8]) -> Option<Decoded<'a>> {
        let mut pos = self.fast_framing(input);
        let mut data: &'a [u8] = &[];
        if self.state == State::Data && pos < input.len() {
            data = self.take_data(&input[pos..]);
            pos += data.len();
            if self.state == State::DataCr {
                pos += self.fast_framing(&input[pos..]);
            }
        }
        (pos > 0).then_some(Decoded {
            consumed: pos,
            data,
            done: self.state == State::Done,
        })
    }

    /// The framing `fast` takes between two data spans: the CR LF after
    /// data and the size line, or after the last chunk the final blank line.
    /// Returns the bytes taken.
    #[inline]
    fn fast_framing(&mut self, input: &[u8]) -> usize {
        let mut pos = 0;
        if self.state == State::DataCr {
            if !input.starts_with(b"\r\n") {
                return 0;
            }
            pos = 2;
            self.count = 0;
            self.state = State::Size;
        }
        if self.state != State::Size || self.count != 0 {
            return pos;
        }
        let Some((size, len)) = size_line(&input[pos..]) else {
            return pos;
        };
        pos += len;
        self.remaining = size;
        if size > 0 {
            self.state = State::Data;
        } else if input[pos..].starts_with(b"\r\n") {
            pos += 2;
            self.state = State::Done;
        } else {
            self.state = State::TrailerStart;
        }
        pos
    }

    /// One byte of the size digits.
    fn size_byte(&mut self, b: u8) -> Result<State, ChunkedError> {
        let digit = match b {
            b'0'..=b'9' => b - b'0',
            b'a'..=b'f' => b - b'a' + 10,
            b'A'..=b'F' => b - b'A' + 10,
            _ if self.count == 0 => return Err(ChunkedError::BadSize),
            b' ' | b'\t' => return self.line_byte(State::SizeWs),
            b';' => return self.line_byte(State::Ext),
            b'\r' => return Ok(State::SizeLf),
            b'\n' => return Err(ChunkedError::BadLineEnd),
            _ => return Err(ChunkedError::BadSize),
        };
        if self.count == MAX_SIZE_DIGITS {
            return Err(ChunkedError::SizeOverflow);
        }
        self.count += 1;
        // 16 hex digits always fit, so the shift never loses bits.
        self.remaining = (self.remaining << 4) | u64::from(digit);
        Ok(State::Size)
    }

    /// Counts one byte of an extension or trailer line against `MAX_LINE`.
    /// In the size line `count` held the digits (bounded on their own), so it
    /// restarts at the first byte after them.
    fn line_byte(&mut self, next: State) -> Result<State, ChunkedError> {
        if self.state == State::Size {
            self.count = 0;
        }
        if self.count == MAX_LINE {
            return Err(ChunkedError::LineTooLong);
        }
        self.count += 1;
        Ok(next)
    }
}

/// A size line of hex digits alone at the start of `bytes`, whole: the
/// size and the line's length with its CR LF; `None` for anything else
/// (too many digits included, which the byte-level machine reports).
#[inline]
fn size_line(bytes: &[u8]) -> Option<(u64, usize)> {
    let mut size = 0u64;
    for (i, &b) in bytes.iter().enumerate().take(MAX_SIZE_DIGITS as usize + 1) {
        let d = HEX[b as usize];
        if d < 16 {
            size = (size << 4) | u64::from(d);
        } else if b == b'\r' && i > 0 && bytes.get(i + 1) == Some(&b'\n') {
            return Some((size, i + 2));
        } else {
            return None;
        }
    }
    None
}

/// Each byte's value as a hex digit; 255 for a byte that is none.
static HEX: [u8; 256] = {
    let mut t = [255u8; 256];
    let mut i = 0;
    while i < 10 {
        t[b'0' as usize + i] = i as u8;
        i += 1;
    }
    let mut i = 0;
    while i < 6 {
        t[b'a' as usize + i] = 10 + i as u8;
        t[b'A' as usize + i] = 10 + i as u8;
        i += 1;
    }
    t
};

/// Appends one chunk (`{len:x}\r\n{data}\r\n`) to `out`; empty `data` is
/// skipped, since a zero-size chunk would end the body.
pub fn write_chunk(out: &mut Vec<u8>, data: &[u8]) {
    if data.is_empty() {
        return;
    }
    push_hex(out, data.len());
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(data);
    out.extend_from_slice(b"\r\n");
}

/// Appends the last chunk, `0\r\n\r\n`.
pub fn write_last_chunk(out: &mut Vec<u8>) {
    out.extend_from_slice(b"0\r\n\r\n");
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::test_support::{Prng, for_each_split};
    use ChunkedError::*;

    /// How decoding a whole input ended.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    enum Outcome {
        /// Done after this many input bytes.
        Done(usize),
        /// Every byte consumed, the body not finished.
        More,
        Err(ChunkedError),
    }

    /// Feeds `pieces` to a fresh decoder the way the worker loop does,
    /// checking on the way that every step makes progress and hands back
    /// data that lies inside its input.
    fn run(pieces: &[&[u8]]) -> (Vec<u8>, Outcome) {
        let mut dec = ChunkedDecoder::default();
        let mut out = Vec::new();
        let mut total = 0;
        for piece in pieces {
            let mut rest: &[u8] = piece;
            while !rest.is_empty() {
                match dec.decode(rest) {
                    Ok(step) => {
                        assert!(step.consumed > 0 || step.done, "no progress");
                        assert!(step.consumed <= rest.len());
                        if !step.data.is_empty() {
                            let range = rest[..step.consumed].as_ptr_range();
                            assert!(range.contains(&step.data.as_ptr()), "data not borrowed");
                        }
                        out.extend_from_slice(step.data);
                        total += step.consumed;
                        rest = &rest[step.consumed..];
                        if step.done {
                            return (out, Outcome::Done(total));
                        }
                    }
                    Err(e) => return (out, Outcome::Err(e)),
                }
            }
        }
        (out, Outcome::More)
    }

    /// The chunked grammar read line by line over the whole input, with
    /// errors placed at the first offending byte.
    fn reference(input: &[u8]) -> (Vec<u8>, Outcome) {
        let line_at = |p: usize| -> &[u8] {
            let n = input[p..].iter().position(|&b| b == b'\r' || b == b'\n');
            &input[p..p + n.unwrap_or(input.len() - p)]
        };
        // After a line at `p` of length `len`: the position after its CR LF.
        let crlf = |p: usize| -> Result<usize, Outcome> {
            match (input.get(p), input.get(p + 1)) {
                (None, _) | (Some(b'\r'), None) => Err(Outcome::More),
                (Some(b'\r'), Some(b'\n')) => Ok(p + 2),
                _ => Err(Outcome::Err(BadLineEnd)),
            }
        };
        let mut out = Vec::new();
        let mut p = 0;
        loop {
            let line = line_at(p);
            let digits = line.iter().take_while(|b| b.is_ascii_hexdigit()).count();
            if digits > 16 {
                return (out, Outcome::Err(SizeOverflow));
            }
            if digits == 0 {
                let at_end = p == input.len();
                return (
                    out,
                    if at_end {
                        Outcome::More
                    } else {
                        Outcome::Err(BadSize)
                    },
                );
            }
            let rest = &line[digits..];
            let ws = rest
                .iter()
                .take_while(|&&b| b == b' ' || b == b'\t')
                .count();
            let bad_at = (ws < rest.len() && rest[ws] != b';').then_some(ws);
            let long_at = (rest.len() > MAX_LINE as usize).then_some(MAX_LINE as usize);
            match (bad_at, long_at) {
                (Some(b), l) if l.is_none_or(|l| b <= l) => return (out, Outcome::Err(BadSize)),
                (_, Some(_)) => return (out, Outcome::Err(LineTooLong)),
                _ => {}
            }
            p = match crlf(p + line.len()) {
                Ok(next) => next,
                Err(o) => return (out, o),
            };
            let size =
                u64::from_str_radix(std::str::from_utf8(&line[..digits]).unwrap(), 16).unwrap();
            if size == 0 {
                break;
            }
            let take = (input.len() - p).min(size as usize);
            out.extend_from_slice(&input[p..p + take]);
            p += take;
            if (take as u64) < size {
                return (out, Outcome::More);
            }
            p = match crlf(p) {
                Ok(next) => next,
                Err(o) => return (out, o),
            };
        }
        loop {
            let line = line_at(p);
            if line.len() > MAX_LINE as usize {
                return (out, Outcome::Err(LineTooLong));
            }
            p = match crlf(p + line.len()) {
                Ok(next) => next,
                Err(o) => return (out, o),
            };
            if line.is_empty() {
                return (out, Outcome::Done(p));
            }
        }
    }

    fn check_splits(input: &[u8], seed: u64) {
        let want = reference(input);
        for_each_split(input, seed, |pieces| {
            let got = run(pieces);
            assert_eq!(got, want, "input {input:?}, pieces {pieces:?}");
        });
    }

    macro_rules! cases {
        ($($name:ident: $input:expr => $data:expr, $outcome:expr;)*) => {$(
            #[test]
            fn $name() {
                let input: &[u8] = $input;
                let data: &[u8] = $data;
                let want = (data.to_vec(), $outcome);
                assert_eq!(reference(input), want, "reference");
                check_splits(input, 1);
            }
        )*};
    }

    use Outcome::Err as E;
    use Outcome::{Done, More};

    cases! {
        one_chunk: b"5\r\nhello\r\n0\r\n\r\n" => b"hello", Done(15);
        two_chunks: b"5\r\nhello\r\n1\r\n!\r\n0\r\n\r\n" => b"hello!", Done(21);
        empty_body: b"0\r\n\r\n" => b"", Done(5);
        next_response_follows: b"0\r\n\r\nHTTP/1.1 200 OK\r\n" => b"", Done(5);
        upper_hex: b"A\r\n0123456789\r\n0\r\n\r\n" => b"0123456789", Done(20);
        lower_hex: b"a\r\n0123456789\r\n0\r\n\r\n" => b"0123456789", Done(20);
        leading_zeros: b"0000000000000005\r\nhello\r\n0\r\n\r\n" => b"hello", Done(30);
        extension: b"5;name=value;q=\"x;y\"\r\nhello\r\n0;last\r\n\r\n" => b"hello", Done(39);
        space_before_extension: b"5 ;a=b\r\nhello\r\n0\t\r\n\r\n" => b"hello", Done(21);
        trailers: b"3\r\nabc\r\n0\r\nX-Checksum: 1\r\nX-More: 2\r\n\r\n" => b"abc", Done(39);
        fast_then_slow_shapes: b"3\r\nabc\r\n2;x\r\nhi\r\n1 \r\n!\r\n0\r\nT: 1\r\n\r\n" => b"abchi!", Done(35);
        sixteen_digits_fast: b"000000000000000A\r\n0123456789\r\n0\r\n\r\n" => b"0123456789", Done(35);
        data_with_crlf_inside: b"4\r\n\r\n\r\n\r\n0\r\n\r\n" => b"\r\n\r\n", Done(14);
        partial_size: b"1" => b"", More;
        partial_data: b"5\r\nhel" => b"hel", More;
        partial_trailer: b"0\r\nX: y\r\n" => b"", More;
        partial_final_cr: b"0\r\n\r" => b"", More;
        no_digits: b"\r\n" => b"", E(BadSize);
        not_hex: b"g\r\n" => b"", E(BadSize);
        junk_after_size: b"5x\r\nhello\r\n" => b"", E(BadSize);
        junk_after_space: b"5 x\r\nhello\r\n" => b"", E(BadSize);
        negative: b"-5\r\n" => b"", E(BadSize);
        seventeen_digits: b"00000000000000005\r\n" => b"", E(SizeOverflow);
        max_size: b"ffffffffffffffff\r\nab" => b"ab", More;
        bare_lf_after_size: b"5\nhello\r\n0\r\n\r\n" => b"", E(BadLineEnd);
        bare_lf_after_ext: b"5;x\nhello\r\n" => b"", E(BadLineEnd);
        bare_cr_after_size: b"5\rhello\r\n" => b"", E(BadLineEnd);
        bare_lf_after_data: b"5\r\nhello\n0\r\n\r\n" => b"hello", E(BadLineEnd);
        junk_after_data: b"5\r\nhelloX\r\n" => b"hello", E(BadLineEnd);
        data_longer_than_size: b"3\r\nhello\r\n" => b"hel", E(BadLineEnd);
        cr_junk_after_data: b"5\r\nhello\rX" => b"hello", E(BadLineEnd);
        bare_lf_in_trailer: b"0\r\nX: y\n\r\n" => b"", E(BadLineEnd);
        bare_lf_final: b"0\r\n\n" => b"", E(BadLineEnd);
        cr_junk_final: b"0\r\n\rX" => b"", E(BadLineEnd);
    }

    #[test]
    fn line_limits() {
        let mut ext = b"5;".to_vec();
        ext.resize(2 + MAX_LINE as usize - 1, b'x');
        let ok = [ext.as_slice(), b"\r\nhello\r\n0\r\n\r\n"].concat();
        assert_eq!(reference(&ok).1, Done(ok.len()));
        check_splits(&ok, 2);
        ext.push(b'x');
        assert_eq!(reference(&ext).1, E(LineTooLong));
        check_splits(&ext, 3);

        let mut ws = b"5".to_vec();
        ws.resize(1 + MAX_LINE as usize, b' ');
        assert_eq!(reference(&[ws.as_slice(), b"\r\n"].concat()).1, More);
        let bad = [ws.as_slice(), b"x"].concat();
        assert_eq!(reference(&bad).1, E(BadSize));
        check_splits(&bad, 4);
        ws.push(b' ');
        assert_eq!(reference(&ws).1, E(LineTooLong));

        let mut trailer = b"0\r\n".to_vec();
        trailer.resize(3 + MAX_LINE as usize, b't');
        let ok = [trailer.as_slice(), b"\r\n\r\n"].concat();
        assert_eq!(reference(&ok).1, Done(ok.len()));
        trailer.push(b't');
        assert_eq!(reference(&trailer).1, E(LineTooLong));
        check_splits(&trailer, 5);
    }

    #[test]
    fn one_span_per_call_and_framing_eaten_eagerly() {
        let input = b"5\r\nhello\r\n6\r\n world\r\n0\r\n\r\nrest";
        let mut dec = ChunkedDecoder::default();
        let a = dec.decode(input).unwrap();
        assert_eq!((a.consumed, a.data, a.done), (13, &b"hello"[..], false));
        let b = dec.decode(&input[13..]).unwrap();
        assert_eq!((b.data, b.done), (&b" world"[..], true));
        assert_eq!(&input[13 + b.consumed..], b"rest");
        // Once done, nothing more is consumed.
        let c = dec.decode(b"rest").unwrap();
        assert_eq!((c.consumed, c.data, c.done), (0, &b""[..], true));
    }

    #[test]
    fn error_after_data_reported_next_call() {
        let mut dec = ChunkedDecoder::default();
        let input = b"5\r\nhelloX";
        let a = dec.decode(input).unwrap();
        assert_eq!((a.consumed, a.data), (8, &b"hello"[..]));
        assert_eq!(dec.decode(&input[8..]), Err(BadLineEnd));
        // The error sticks until reset.
        assert_eq!(dec.decode(&input[8..]), Err(BadLineEnd));
        dec.reset();
        assert!(dec.decode(b"0\r\n\r\n").unwrap().done);
    }

    #[test]
    fn reset_reuses_decoder() {
        let mut dec = ChunkedDecoder::default();
        let _ = dec.decode(b"ff\r\nabc").unwrap();
        dec.reset();
        let step = dec.decode(b"3\r\nxyz\r\n0\r\n\r\n").unwrap();
        assert_eq!((step.data, step.done), (&b"xyz"[..], true));
    }

    /// A streaming body as vLLM behind uvicorn sends it: one chunk per SSE
    /// event.
    #[test]
    fn vllm_stream_body() {
        let events = [
            &b"data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n"[..],
            b"data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hello\"}}]}\n\n",
            b"data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n",
            b"data: [DONE]\n\n",
        ];
        let mut body = Vec::new();
        for e in events {
            write_chunk(&mut body, e);
        }
        write_last_chunk(&mut body);
        let (data, outcome) = reference(&body);
        assert_eq!(data, events.concat());
        assert_eq!(outcome, Done(body.len()));
        check_splits(&body, 6);
    }

    #[test]
    fn write_chunk_format() {
        let mut out = Vec::new();
        write_chunk(&mut out, b"hello");
        write_chunk(&mut out, b"");
        write_chunk(&mut out, &[b'x'; 0x1ab]);
        write_last_chunk(&mut out);
        let mut want = b"5\r\nhello\r\n1ab\r\n".to_vec();
        want.extend_from_slice(&[b'x'; 0x1ab]);
        want.extend_from_slice(b"\r\n0\r\n\r\n");
        assert_eq!(out, want);
    }

    /// Whatever the encoder writes, the decoder reads back, in any pieces.
    #[test]
    fn encode_decode_round_trip() {
        let mut rng = Prng::new(11);
        for _ in 0..200 {
            let mut body = Vec::new();
            let mut want = Vec::new();
            for _ in 0..rng.below(6) {
                let len = rng.below(300);
                let data: Vec<u8> = (0..len).map(|_| rng.next_u64() as u8).collect();
                write_chunk(&mut body, &data);
                want.extend_from_slice(&data);
            }
            write_last_chunk(&mut body);
            let mut pieces = Vec::new();
            let mut rest = body.as_slice();
            while !rest.is_empty() {
                let n = (1 + rng.below(40)).min(rest.len());
                pieces.push(&rest[..n]);
                rest = &rest[n..];
            }
            assert_eq!(run(&pieces), (want, Done(body.len())));
        }
    }

    /// Random byte soup biased towards the grammar's own bytes, so that the
    /// reference and the decoder disagree wherever their rules differ.
    #[test]
    fn random_inputs_match_reference() {
        const ALPHABET: &[u8] = b"0123456789abcdefABCDEFgx;= \t\r\n\r\n\r\n";
        let mut rng = Prng::new(12);
        for i in 0..3000 {
            let mut input = Vec::new();
            // Start from valid framing and then corrupt it a little.
            for _ in 0..rng.below(4) {
                let len = rng.below(20);
                write_chunk(&mut input, &vec![b'd'; len]);
            }
            if rng.below(2) == 0 {
                input.extend_from_slice(b"0\r\nT: v\r\n\r\n");
            }
            for _ in 0..rng.below(4) {
                let at = rng.below(input.len() + 1);
                let b = ALPHABET[rng.below(ALPHABET.len())];
                match rng.below(3) {
                    0 => input.insert(at, b),
                    1 if at < input.len() => input[at] = b,
                    _ if at < input.len() => {
                        input.remove(at);
                    }
                    _ => {}
                }
            }
            let want = reference(&input);
            assert_eq!(run(&[&input]), want, "{input:?}");
            if i % 10 == 0 {
                check_splits(&input, i);
            } else {
                let cut = rng.below(input.len() + 1);
                assert_eq!(
                    run(&[&input[..cut], &input[cut..]]),
                    want,
                    "{input:?} at {cut}"
                );
            }
        }
    }
}
