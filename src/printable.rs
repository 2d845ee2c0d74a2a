//! Values from configs, profiles and the environment, made safe to print to
//! a terminal: a control character in a model name or `$SLURM_PROCID` would
//! otherwise reach the terminal raw (ESC starts an escape sequence that can
//! recolour, retitle or hide output). File outputs have their own escaping
//! (JSON, CSV) and do not go through this.

/// `s` with every control character (C0 including newline and tab, DEL, C1)
/// spelled `\u{1b}` — Rust's spelling, so it reads unambiguously.
pub(crate) fn printable(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if c.is_control() {
            out.extend(c.escape_unicode());
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::printable;

    #[test]
    fn control_characters_are_spelled_out() {
        assert_eq!(
            printable("m\x1b[31mRED\x07\n\t\u{7f}\u{9b}é"),
            "m\\u{1b}[31mRED\\u{7}\\u{a}\\u{9}\\u{7f}\\u{9b}é"
        );
        assert_eq!(printable("llama-3 8B"), "llama-3 8B");
    }
}
