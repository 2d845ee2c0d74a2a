//! HTTP/1.1 as the client and the built-in server speak it: a request head
//! writer, the response head (httparse), a chunked-transfer decoder and
//! encoder, and the server-sent-events splitter. Everything here is pure
//! (bytes in, results out), allocation-free per message once warmed up, and
//! fuzzed: the worker loop feeds these whatever the network delivers, split
//! at any byte.

pub mod chunked;
pub mod request;
pub mod response;
pub mod sse;
