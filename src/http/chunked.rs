//! `Transfer-Encoding: chunked`, both ways. The decoder is a byte-level state
//! machine that consumes every byte it is given (sizes, extensions, CRLFs and
//! trailers may be split anywhere), so the caller never keeps framing bytes
//! around; data comes back as sub-slices of the input, never copied.

/// Why chunked framing was rejected.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChunkedError {
    /// A chunk size with no hex digit, or a non-hex byte where one was due.
    BadSize,
    /// A chunk size over 16 hex digits or beyond `u64`.
    SizeOverflow,
    /// A byte other than CR LF after chunk data, or a bare CR.
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

/// Incremental chunked-body decoder. `Default` is a decoder at the start of a body.
#[derive(Clone, Debug, Default)]
pub struct ChunkedDecoder {
    _private: (),
}

impl ChunkedDecoder {
    /// Back to the start of a body, for the next response on the connection.
    pub fn reset(&mut self) {
        todo!("http helper")
    }

    /// Decodes from the start of `input`, returning at most one contiguous data
    /// span. Call again with `&input[consumed..]` until all input is consumed or
    /// `done` is set.
    pub fn decode<'a>(&mut self, input: &'a [u8]) -> Result<Decoded<'a>, ChunkedError> {
        let _ = input;
        todo!("http helper")
    }
}

/// Appends one chunk (`{len:x}\r\n{data}\r\n`) to `out`; empty `data` is
/// skipped, since a zero-size chunk would end the body.
pub fn write_chunk(out: &mut Vec<u8>, data: &[u8]) {
    if data.is_empty() {
        return;
    }
    write_hex(out, data.len());
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(data);
    out.extend_from_slice(b"\r\n");
}

/// Lowercase hex without leading zeros, written without formatting machinery.
fn write_hex(out: &mut Vec<u8>, mut n: usize) {
    let mut digits = [0u8; 16];
    let mut i = digits.len();
    loop {
        i -= 1;
        digits[i] = b"0123456789abcdef"[n & 0xf];
        n >>= 4;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[i..]);
}

/// Appends the last chunk, `0\r\n\r\n`.
pub fn write_last_chunk(out: &mut Vec<u8>) {
    out.extend_from_slice(b"0\r\n\r\n");
}
