//! HTTP/1.1 as the client and the built-in server speak it: a request head
//! writer, the response head (httparse), a chunked-transfer decoder and
//! encoder, and the server-sent-events splitter. The parsers are pure
//! (bytes in, results out), allocation-free per message once warmed up, and
//! fuzzed: the worker loop feeds these whatever the network delivers, split
//! at any byte. `blocking` is the setup-time client (std sockets) that reads
//! responses with those same parsers.

pub(crate) mod blocking;
pub mod chunked;
pub(crate) mod endpoint;
pub(crate) mod headers;
pub(crate) mod redact;
pub(crate) mod request;
pub mod response;
pub mod sse;

/// Helpers shared by the parsers' tests: a deterministic PRNG and the ways an
/// input is cut into pieces, so every parser is checked against the same
/// splits the network could produce.
#[cfg(test)]
pub(crate) mod test_support {
    use crate::rng::Rng;

    /// The crate's seeded generator with the `usize` ranges tests index by.
    pub(crate) struct Prng(Rng);

    impl Prng {
        pub(crate) fn new(seed: u64) -> Self {
            Self(Rng::seeded(seed))
        }

        pub(crate) fn next_u64(&mut self) -> u64 {
            self.0.next_u64()
        }

        /// Uniform in `0..n` (`n > 0`).
        pub(crate) fn below(&mut self, n: usize) -> usize {
            self.0.below(n as u64) as usize
        }
    }

    /// Calls `f` with `input` cut into pieces in every way the tests care
    /// about: whole, at every single byte boundary, into 1-byte pieces, and
    /// into random pieces of a few size ranges.
    pub(crate) fn for_each_split(input: &[u8], seed: u64, mut f: impl FnMut(&[&[u8]])) {
        f(&[input]);
        for cut in 0..=input.len() {
            f(&[&input[..cut], &input[cut..]]);
        }
        let bytes: Vec<&[u8]> = input.chunks(1).collect();
        f(&bytes);
        let mut rng = Prng::new(seed);
        for max_piece in [2, 7, 64, 1000] {
            for _ in 0..8 {
                let mut pieces = Vec::new();
                let mut rest = input;
                while !rest.is_empty() {
                    // Empty pieces too: a read may deliver nothing.
                    let n = rng.below(max_piece + 1).min(rest.len());
                    pieces.push(&rest[..n]);
                    rest = &rest[n..];
                }
                f(&pieces);
            }
        }
    }
}
