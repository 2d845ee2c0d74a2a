//! The Parquet and Arrow decoders trust more of a file than can be checked
//! before they run: corrupt definition levels inside a compressed page, for
//! one, make the parquet crate panic mid-decode. Their calls run here, where
//! such a panic becomes an error naming the file, and prints nothing (the
//! hook stays quiet on this thread while a decoder runs). This is why the
//! `dist` profile keeps `panic = "unwind"`: with abort, a hostile file
//! would kill the run with no summary.

use std::cell::Cell;
use std::panic::{self, AssertUnwindSafe};
use std::sync::Once;

thread_local! {
    static QUIET: Cell<bool> = const { Cell::new(false) };
}

/// Runs `decode`, turning a panic inside it into `Err(message)`.
pub(crate) fn contained<T>(decode: impl FnOnce() -> T) -> Result<T, String> {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        let next = panic::take_hook();
        panic::set_hook(Box::new(move |info| {
            if !QUIET.with(Cell::get) {
                next(info);
            }
        }));
    });
    let was = QUIET.with(|q| q.replace(true));
    // A decoder that panicked is dropped with its half-read state and never
    // called again, so nothing observes a broken invariant.
    let r = panic::catch_unwind(AssertUnwindSafe(decode));
    QUIET.with(|q| q.set(was));
    r.map_err(|payload| {
        let said = payload
            .downcast_ref::<&str>()
            .copied()
            .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
            .unwrap_or("no message");
        format!("the decoder failed on malformed data ({said})")
    })
}

#[cfg(test)]
mod tests {
    use super::contained;

    #[test]
    fn a_panic_is_an_error_and_a_value_passes_through() {
        assert_eq!(contained(|| 7), Ok(7));
        let e = contained(|| -> u8 { panic!("offset + len out of bounds") }).unwrap_err();
        assert_eq!(
            e,
            "the decoder failed on malformed data (offset + len out of bounds)"
        );
        let e = contained(|| -> u8 { panic!("{} of {}", 3, 4) }).unwrap_err();
        assert!(e.ends_with("(3 of 4)"), "{e}");
    }
}
