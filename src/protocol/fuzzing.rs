//! Entry points for the fuzz targets (`fuzz/`) into the in-place JSON
//! scanner, which is otherwise private to the crate. Not an API: hidden from
//! the docs, and every call builds the searcher that the parsers build once
//! per key, so nothing here belongs on a hot path.

use memchr::memmem::Finder;

use super::scan;
pub use super::scan::Value;

/// A searcher for `"name"`.
fn quoted(name: &[u8]) -> Finder<'static> {
    let key = [b"\"", name, b"\""].concat();
    Finder::new(&key).into_owned()
}

/// The value of the first key `name` (without quotes), as the parsers find it.
pub fn find<'a>(json: &'a [u8], name: &[u8]) -> Option<Value<'a>> {
    scan::find(json, &quoted(name))
}

/// The value of the first key `name` read as an unsigned 32-bit integer.
pub fn find_u32(json: &[u8], name: &[u8]) -> Option<u32> {
    scan::find_u32(json, &quoted(name))
}

/// For each of `names`, the value of its first key holding a string, an
/// object or an array, in one pass (the chat parser's walk over the tail of
/// a text event); `None` for a name listed again.
pub fn find_each<'a, const N: usize>(json: &'a [u8], names: [&[u8]; N]) -> [Option<Value<'a>>; N] {
    let mut values = [None; N];
    scan::find_each(json, &names, |k, v| values[k] = v);
    values
}

/// The part of `json` after `inner`, a slice of it.
pub fn after<'a>(json: &'a [u8], inner: &[u8]) -> &'a [u8] {
    scan::after(json, inner)
}
