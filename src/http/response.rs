//! The response head: status, framing (Content-Length, chunked, or until
//! close) and whether the connection may be reused, parsed by httparse into
//! a stack array. Tri-state like httparse: `Ok(Some(head))` complete,
//! `Ok(None)` need more bytes, `Err` a named violation.
//!
//! The trade-off is strictness over leniency: framing that could be read two
//! ways (differing Content-Lengths, an unknown transfer coding) is an error,
//! and a head that is both chunked and length-delimited is decoded as chunked
//! but never reused, because a benchmark that desynchronizes a connection
//! reports garbage for every request after it.

use std::mem::MaybeUninit;

use httparse::Status;

/// How the body after the head is delimited.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BodyKind {
    /// `Content-Length: n`.
    Length(u64),
    /// `Transfer-Encoding: chunked` (wins over Content-Length, RFC 9112 §6.3).
    Chunked,
    /// Neither header: the body runs until the server closes the connection.
    UntilClose,
    /// No body by definition: 1xx, 204 and 304 responses.
    Empty,
}

/// A parsed response head.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Head {
    pub status: u16,
    /// Bytes of the head including the final blank line; the body starts here.
    pub len: usize,
    pub body: BodyKind,
    /// HTTP/1.1 without `Connection: close`, or HTTP/1.0 with
    /// `Connection: keep-alive`; `false` for `UntilClose` bodies, and for
    /// chunked bodies that also carried a Content-Length or came with
    /// HTTP/1.0 (RFC 9112 §6.1, §6.3: framing that invites smuggling).
    pub keep_alive: bool,
    /// `Content-Type: text/event-stream` (parameters ignored).
    pub event_stream: bool,
}

/// Why a head was rejected. Small and `Copy`: counted on the hot path, turned
/// into text only in reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HeadError {
    /// httparse rejected the status line or a header line.
    Syntax,
    /// More headers than the fixed array holds (`MAX_HEADERS`).
    TooManyHeaders,
    /// A Content-Length that is not a decimal number, or two that differ.
    BadContentLength,
    /// A Transfer-Encoding other than `chunked` (possibly after `identity`).
    BadTransferEncoding,
    /// The head grew past `MAX_HEAD_LEN` bytes without ending.
    TooLarge,
}

/// Headers examined per response; more is `TooManyHeaders`.
pub const MAX_HEADERS: usize = 64;
/// A head longer than this is `TooLarge` rather than waiting forever.
pub const MAX_HEAD_LEN: usize = 64 * 1024;

/// Parses the response head at the start of `buf`.
///
/// A complete head longer than `MAX_HEAD_LEN` is `TooLarge` too, so the
/// answer does not depend on how the bytes arrived. Content-Length is checked
/// even where it does not frame the body (chunked, 204, 304): a malformed one
/// is an error wherever it appears. A Content-Length list (`5, 5`) is accepted
/// when every member is the same number (RFC 9110 §8.6).
pub fn parse_head(buf: &[u8]) -> Result<Option<Head>, HeadError> {
    // Uninitialized slots: zeroing 64 headers (2 KiB) would add about a
    // third to the parse of a typical head.
    let mut headers = [MaybeUninit::<httparse::Header<'_>>::uninit(); MAX_HEADERS];
    let mut resp = httparse::Response::new(&mut []);
    let parsed = httparse::ParserConfig::default().parse_response_with_uninit_headers(
        &mut resp,
        buf,
        &mut headers,
    );
    let len = match parsed {
        Ok(Status::Complete(len)) if len <= MAX_HEAD_LEN => len,
        Ok(Status::Complete(_)) => return Err(HeadError::TooLarge),
        Ok(Status::Partial) if buf.len() > MAX_HEAD_LEN => return Err(HeadError::TooLarge),
        Ok(Status::Partial) => return Ok(None),
        Err(httparse::Error::TooManyHeaders) => return Err(HeadError::TooManyHeaders),
        Err(_) => return Err(HeadError::Syntax),
    };
    // httparse fills both on a complete parse; the fallbacks only keep this
    // total without a panic path.
    let status = resp.code.unwrap_or(0);
    let http11 = resp.version == Some(1);

    let mut content_length: Option<u64> = None;
    let mut transfer_encoding = false;
    let mut chunked = false;
    let mut close = false;
    let mut keep_alive_token = false;
    let mut event_stream = false;
    for h in resp.headers.iter() {
        let name = h.name.as_bytes();
        if name.eq_ignore_ascii_case(b"content-length") {
            let mut items = list_items(h.value).peekable();
            if items.peek().is_none() {
                return Err(HeadError::BadContentLength);
            }
            for item in items {
                let n = parse_decimal(item).ok_or(HeadError::BadContentLength)?;
                if content_length.is_some_and(|prev| prev != n) {
                    return Err(HeadError::BadContentLength);
                }
                content_length = Some(n);
            }
        } else if name.eq_ignore_ascii_case(b"transfer-encoding") {
            for item in list_items(h.value) {
                // Only `chunked` may be final, and nothing may follow it;
                // `identity` is a no-op coding some old servers still list.
                if chunked {
                    return Err(HeadError::BadTransferEncoding);
                }
                if item.eq_ignore_ascii_case(b"chunked") {
                    chunked = true;
                } else if !item.eq_ignore_ascii_case(b"identity") {
                    return Err(HeadError::BadTransferEncoding);
                }
            }
            transfer_encoding = true;
        } else if name.eq_ignore_ascii_case(b"connection") {
            for item in list_items(h.value) {
                close |= item.eq_ignore_ascii_case(b"close");
                keep_alive_token |= item.eq_ignore_ascii_case(b"keep-alive");
            }
        } else if name.eq_ignore_ascii_case(b"content-type") {
            let media = match memchr::memchr(b';', h.value) {
                Some(i) => &h.value[..i],
                None => h.value,
            };
            event_stream = trim_ows(media).eq_ignore_ascii_case(b"text/event-stream");
        }
    }
    // Several Transfer-Encoding lines form one list, so `identity` alone is
    // judged only once every line has been seen.
    if transfer_encoding && !chunked {
        return Err(HeadError::BadTransferEncoding);
    }

    let body = if (100..200).contains(&status) || status == 204 || status == 304 {
        BodyKind::Empty
    } else if chunked {
        BodyKind::Chunked
    } else if let Some(n) = content_length {
        BodyKind::Length(n)
    } else {
        BodyKind::UntilClose
    };
    let ambiguous = chunked && (content_length.is_some() || !http11);
    let keep_alive = !close
        && (http11 || keep_alive_token)
        && body != BodyKind::UntilClose
        && !(ambiguous && body == BodyKind::Chunked);
    Ok(Some(Head {
        status,
        len,
        body,
        keep_alive,
        event_stream,
    }))
}

/// The members of a comma-separated header list, optional whitespace
/// trimmed, empty members skipped (RFC 9110 §5.6.1).
fn list_items(value: &[u8]) -> impl Iterator<Item = &[u8]> {
    value
        .split(|&b| b == b',')
        .map(trim_ows)
        .filter(|item| !item.is_empty())
}

fn trim_ows(mut s: &[u8]) -> &[u8] {
    while let [b' ' | b'\t', rest @ ..] = s {
        s = rest;
    }
    while let [rest @ .., b' ' | b'\t'] = s {
        s = rest;
    }
    s
}

/// A non-empty run of ASCII digits that fits `u64`.
fn parse_decimal(s: &[u8]) -> Option<u64> {
    if s.is_empty() {
        return None;
    }
    let mut n: u64 = 0;
    for &b in s {
        if !b.is_ascii_digit() {
            return None;
        }
        n = n.checked_mul(10)?.checked_add(u64::from(b - b'0'))?;
    }
    Some(n)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::test_support::Prng;

    fn head(status: u16, len: usize, body: BodyKind, keep_alive: bool, sse: bool) -> Head {
        Head {
            status,
            len,
            body,
            keep_alive,
            event_stream: sse,
        }
    }

    /// `case!(name, input, expected)`: `expected` is the whole result, with
    /// `len` filled in as the input length for complete heads.
    macro_rules! cases {
        ($($name:ident: $input:expr => $expected:expr;)*) => {$(
            #[test]
            fn $name() {
                let input: &[u8] = $input;
                let expected: Result<Option<(u16, BodyKind, bool, bool)>, HeadError> = $expected;
                let expected = expected
                    .map(|o| o.map(|(st, body, ka, sse)| head(st, input.len(), body, ka, sse)));
                assert_eq!(parse_head(input), expected);
            }
        )*};
    }

    use BodyKind::*;
    use HeadError::*;

    cases! {
        stream_head:
            b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream; charset=utf-8\r\n\
              transfer-encoding: chunked\r\n\r\n"
            => Ok(Some((200, Chunked, true, true)));
        json_head:
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 123\r\n\r\n"
            => Ok(Some((200, Length(123), true, false)));
        lf_only_lines:
            b"HTTP/1.1 200 OK\nContent-Length: 0\n\n"
            => Ok(Some((200, Length(0), true, false)));
        sse_case_insensitive:
            b"HTTP/1.1 200 OK\r\nCONTENT-TYPE:  Text/Event-Stream ;charset=utf-8\r\nContent-Length: 1\r\n\r\n"
            => Ok(Some((200, Length(1), true, true)));
        sse_prefix_is_not_sse:
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-streamx\r\nContent-Length: 1\r\n\r\n"
            => Ok(Some((200, Length(1), true, false)));
        chunked_wins_over_length_and_closes:
            b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\nTransfer-Encoding: chunked\r\n\r\n"
            => Ok(Some((200, Chunked, false, false)));
        identity_then_chunked:
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: identity, chunked\r\n\r\n"
            => Ok(Some((200, Chunked, true, false)));
        identity_then_chunked_on_two_lines:
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: identity\r\nTransfer-Encoding: Chunked\r\n\r\n"
            => Ok(Some((200, Chunked, true, false)));
        chunked_then_identity:
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, identity\r\n\r\n"
            => Err(BadTransferEncoding);
        gzip_chunked:
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n"
            => Err(BadTransferEncoding);
        identity_alone:
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: identity\r\n\r\n"
            => Err(BadTransferEncoding);
        chunked_twice:
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n"
            => Err(BadTransferEncoding);
        http10_chunked_not_reused:
            b"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nTransfer-Encoding: chunked\r\n\r\n"
            => Ok(Some((200, Chunked, false, false)));
        length_list_same:
            b"HTTP/1.1 200 OK\r\nContent-Length: 5, 5\r\nContent-Length: 5\r\n\r\n"
            => Ok(Some((200, Length(5), true, false)));
        length_list_differs:
            b"HTTP/1.1 200 OK\r\nContent-Length: 5, 6\r\n\r\n" => Err(BadContentLength);
        length_headers_differ:
            b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n"
            => Err(BadContentLength);
        length_not_decimal:
            b"HTTP/1.1 200 OK\r\nContent-Length: 0x10\r\n\r\n" => Err(BadContentLength);
        length_signed:
            b"HTTP/1.1 200 OK\r\nContent-Length: +5\r\n\r\n" => Err(BadContentLength);
        length_empty:
            b"HTTP/1.1 200 OK\r\nContent-Length: \r\n\r\n" => Err(BadContentLength);
        length_max:
            b"HTTP/1.1 200 OK\r\nContent-Length: 18446744073709551615\r\n\r\n"
            => Ok(Some((200, Length(u64::MAX), true, false)));
        length_overflow:
            b"HTTP/1.1 200 OK\r\nContent-Length: 18446744073709551616\r\n\r\n"
            => Err(BadContentLength);
        length_bad_even_when_chunked:
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: x\r\n\r\n"
            => Err(BadContentLength);
        until_close:
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n"
            => Ok(Some((200, UntilClose, false, true)));
        continue_100:
            b"HTTP/1.1 100 Continue\r\n\r\n" => Ok(Some((100, Empty, true, false)));
        no_content_204_ignores_length:
            b"HTTP/1.1 204 No Content\r\nContent-Length: 7\r\n\r\n"
            => Ok(Some((204, Empty, true, false)));
        not_modified_304:
            b"HTTP/1.1 304 Not Modified\r\nConnection: close\r\n\r\n"
            => Ok(Some((304, Empty, false, false)));
        error_status:
            b"HTTP/1.1 429 Too Many Requests\r\nContent-Length: 2\r\nRetry-After: 1\r\n\r\n"
            => Ok(Some((429, Length(2), true, false)));
        empty_reason:
            b"HTTP/1.1 500 \r\nContent-Length: 0\r\n\r\n" => Ok(Some((500, Length(0), true, false)));
        garbage: b"hello world\r\n\r\n" => Err(Syntax);
        request_not_response: b"GET / HTTP/1.1\r\n\r\n" => Err(Syntax);
        http2_preface: b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" => Err(Syntax);
        bad_status: b"HTTP/1.1 2x0 OK\r\n\r\n" => Err(Syntax);
        bad_header_name: b"HTTP/1.1 200 OK\r\nbad header: x\r\n\r\n" => Err(Syntax);
        empty: b"" => Ok(None);
        partial: b"HTTP/1.1 200 OK\r\nContent-Le" => Ok(None);
    }

    /// Keep-alive over version × Connection tokens × framing.
    #[test]
    fn keep_alive_matrix() {
        let connections: [(&str, bool, bool); 7] = [
            // (header line, has close token, has keep-alive token)
            ("", false, false),
            ("Connection: close\r\n", true, false),
            ("Connection: CLOSE\r\n", true, false),
            ("Connection: keep-alive\r\n", false, true),
            ("Connection: Upgrade, Keep-Alive\r\n", false, true),
            ("Connection: keep-alive, close\r\n", true, true),
            (
                "Connection: keep-alive\r\nConnection: close\r\n",
                true,
                true,
            ),
        ];
        let framings: [(&str, BodyKind); 3] = [
            ("Content-Length: 3\r\n", Length(3)),
            ("Transfer-Encoding: chunked\r\n", Chunked),
            ("", UntilClose),
        ];
        for http11 in [false, true] {
            for (conn, close, ka_token) in connections {
                for (framing, body) in framings {
                    let text = format!("HTTP/1.{} 200 OK\r\n{conn}{framing}\r\n", u8::from(http11));
                    let got = parse_head(text.as_bytes()).unwrap().unwrap();
                    let expected = !close
                        && (http11 || ka_token)
                        && body != UntilClose
                        && (body != Chunked || http11);
                    assert_eq!(got.body, body, "{text:?}");
                    assert_eq!(got.keep_alive, expected, "{text:?}");
                    assert_eq!(got.len, text.len());
                }
            }
        }
    }

    #[test]
    fn every_prefix_is_partial() {
        let heads: [&[u8]; 4] = [
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n",
            b"HTTP/1.0 404 Not Found\r\nContent-Length: 9\r\n\r\n",
            b"HTTP/1.1 100 Continue\r\n\r\n",
            b"HTTP/1.1 200 OK\nX: y\n\n",
        ];
        for full in heads {
            let complete = parse_head(full).unwrap().unwrap();
            assert_eq!(complete.len, full.len());
            for cut in 0..full.len() {
                assert_eq!(parse_head(&full[..cut]), Ok(None), "{:?}", &full[..cut]);
            }
            // Body bytes after the head do not change the head.
            let mut more = full.to_vec();
            more.extend_from_slice(b"data: x\n\nHTTP/1.1 200 OK\r\n");
            assert_eq!(parse_head(&more), Ok(Some(complete)));
        }
    }

    #[test]
    fn interim_then_final() {
        let stream = b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
        let first = parse_head(stream).unwrap().unwrap();
        assert_eq!((first.status, first.body), (100, Empty));
        let second = parse_head(&stream[first.len..]).unwrap().unwrap();
        assert_eq!((second.status, second.body), (200, Length(2)));
        assert_eq!(&stream[first.len + second.len..], b"ok");
    }

    #[test]
    fn too_many_headers() {
        let mut text = b"HTTP/1.1 200 OK\r\n".to_vec();
        for _ in 0..MAX_HEADERS {
            text.extend_from_slice(b"X-A: b\r\n");
        }
        let at_limit = [text.as_slice(), b"\r\n"].concat();
        assert!(matches!(parse_head(&at_limit), Ok(Some(_))));
        text.extend_from_slice(b"X-A: b\r\n\r\n");
        assert_eq!(parse_head(&text), Err(TooManyHeaders));
    }

    #[test]
    fn too_large() {
        let mut text = b"HTTP/1.1 200 OK\r\nX-Big: ".to_vec();
        text.resize(MAX_HEAD_LEN, b'a');
        assert_eq!(parse_head(&text), Ok(None));
        text.push(b'a');
        assert_eq!(parse_head(&text), Err(TooLarge));
        // Complete but too long is the same answer as arriving in pieces.
        text.extend_from_slice(b"\r\n\r\n");
        assert_eq!(parse_head(&text), Err(TooLarge));
        // Just under the limit is fine.
        let mut ok = b"HTTP/1.1 200 OK\r\nX-Big: ".to_vec();
        ok.resize(MAX_HEAD_LEN - 4, b'a');
        ok.extend_from_slice(b"\r\n\r\n");
        assert_eq!(parse_head(&ok).unwrap().unwrap().len, MAX_HEAD_LEN);
    }

    /// What a head should parse to, computed the obvious way with owned
    /// strings. `Err` holds every error the head deserves; the parser may
    /// report any one of them.
    fn reference(
        status: u16,
        http11: bool,
        headers: &[(String, String)],
    ) -> Result<Head, Vec<HeadError>> {
        let values = |name: &str| -> Vec<String> {
            headers
                .iter()
                .filter(|(n, _)| n.to_ascii_lowercase() == name)
                .map(|(_, v)| v.clone())
                .collect()
        };
        let items = |name: &str| -> Vec<String> {
            values(name)
                .iter()
                .flat_map(|v| {
                    v.split(',')
                        .map(|s| s.trim_matches([' ', '\t']).to_string())
                })
                .filter(|s| !s.is_empty())
                .collect()
        };
        let mut errors = Vec::new();

        let cl_headers = values("content-length");
        let cl_items = items("content-length");
        let cl_bad = cl_headers
            .iter()
            .any(|v| v.split(',').all(|s| s.trim().is_empty()))
            || cl_items.iter().any(|s| {
                s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) || s.parse::<u64>().is_err()
            })
            || cl_items
                .windows(2)
                .any(|w| w[0].parse::<u64>().ok() != w[1].parse::<u64>().ok());
        if cl_bad {
            errors.push(BadContentLength);
        }
        let content_length = cl_items.first().and_then(|s| s.parse::<u64>().ok());

        let te_present = !values("transfer-encoding").is_empty();
        let te = items("transfer-encoding");
        let te_ok = te.last().is_some_and(|s| s.eq_ignore_ascii_case("chunked"))
            && te[..te.len() - 1]
                .iter()
                .all(|s| s.eq_ignore_ascii_case("identity"));
        if te_present && !te_ok {
            errors.push(BadTransferEncoding);
        }
        if !errors.is_empty() {
            return Err(errors);
        }
        let chunked = te_present;

        let conn = items("connection");
        let close = conn.iter().any(|s| s.eq_ignore_ascii_case("close"));
        let ka = conn.iter().any(|s| s.eq_ignore_ascii_case("keep-alive"));
        let event_stream = values("content-type").last().is_some_and(|v| {
            v.split(';')
                .next()
                .unwrap()
                .trim()
                .eq_ignore_ascii_case("text/event-stream")
        });
        let body = if status < 200 || status == 204 || status == 304 {
            Empty
        } else if chunked {
            Chunked
        } else if let Some(n) = content_length {
            Length(n)
        } else {
            UntilClose
        };
        let mut keep_alive = !close && (http11 || ka);
        if body == UntilClose || (body == Chunked && (content_length.is_some() || !http11)) {
            keep_alive = false;
        }
        Ok(Head {
            status,
            len: 0,
            body,
            keep_alive,
            event_stream,
        })
    }

    /// Random heads built from the header values that matter, compared with
    /// the reference.
    #[test]
    fn matches_reference() {
        const NAMES: [&[&str]; 4] = [
            &["Content-Length", "content-length", "CONTENT-LENGTH"],
            &["Transfer-Encoding", "transfer-encoding"],
            &["Connection", "connection"],
            &["Content-Type", "content-type"],
        ];
        const VALUES: [&[&str]; 4] = [
            &[
                "5",
                "0",
                "5, 5",
                "5,6",
                "abc",
                "",
                ",",
                "18446744073709551616",
                "007",
                "5 , ,5",
                "-1",
            ],
            &[
                "chunked",
                "Chunked",
                "identity, chunked",
                "gzip",
                "chunked, identity",
                "identity",
                "",
                " ,chunked",
            ],
            &[
                "close",
                "keep-alive",
                "Keep-Alive, Upgrade",
                "upgrade",
                "closed",
                "",
                "te, close",
            ],
            &[
                "text/event-stream",
                "TEXT/Event-Stream; charset=utf-8",
                "application/json",
                "text/event-streams",
                "text/event-stream ;x=y",
            ],
        ];
        const STATUSES: [u16; 8] = [100, 101, 200, 201, 204, 304, 404, 503];
        let mut rng = Prng::new(7);
        for _ in 0..20_000 {
            let http11 = rng.below(4) != 0;
            let status = STATUSES[rng.below(STATUSES.len())];
            let mut headers = Vec::new();
            for _ in 0..rng.below(5) {
                let kind = rng.below(5);
                if kind == 4 {
                    headers.push(("X-Request-Id".to_string(), "abc".to_string()));
                    continue;
                }
                let name = NAMES[kind][rng.below(NAMES[kind].len())];
                let value = VALUES[kind][rng.below(VALUES[kind].len())];
                headers.push((name.to_string(), value.to_string()));
            }
            let mut text = format!("HTTP/1.{} {status} X\r\n", u8::from(http11));
            for (n, v) in &headers {
                text.push_str(&format!("{n}: {v}\r\n"));
            }
            text.push_str("\r\n");
            let got = parse_head(text.as_bytes());
            match reference(status, http11, &headers) {
                Ok(mut want) => {
                    want.len = text.len();
                    assert_eq!(got, Ok(Some(want)), "{text:?}");
                }
                Err(errors) => match got {
                    Err(e) if errors.contains(&e) => {}
                    other => panic!("{text:?}: got {other:?}, want one of {errors:?}"),
                },
            }
        }
    }
}
