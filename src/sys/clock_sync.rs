//! How far this host's wall clock may be off, as the kernel's NTP state
//! says (`adjtimex` in read-only mode): what a shard records beside its
//! start, so a merge can tell a start skew from a clock error. The kernel
//! knows only what the synchronising daemon (chrony, ntpd, ptp4l) told it;
//! an unsynchronised clock has no estimate at all.

/// The kernel's view of the wall clock.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct ClockSync {
    /// The clock is disciplined (no `STA_UNSYNC`, state not `TIME_ERROR`).
    pub synced: bool,
    /// The estimated error, ns (`esterror`); `None` when not synced or the
    /// call failed.
    pub error_ns: Option<u64>,
}

/// Reads the kernel's NTP state without changing it.
pub(crate) fn read() -> ClockSync {
    // SAFETY: `timex` is plain old data; all zeros is a valid value and
    // `modes == 0` asks only to read.
    let mut tx: libc::timex = unsafe { std::mem::zeroed() };
    tx.modes = 0;
    // SAFETY: `tx` is a valid, writable `timex`; with `modes == 0` the
    // call changes nothing, needs no privilege and only fills `tx`.
    let state = unsafe { libc::adjtimex(&mut tx) };
    if state < 0 {
        return ClockSync::default();
    }
    let synced = state != libc::TIME_ERROR && tx.status & libc::STA_UNSYNC == 0;
    ClockSync {
        synced,
        // esterror is in microseconds.
        error_ns: synced
            .then(|| u64::try_from(tx.esterror).ok())
            .flatten()
            .map(|us| us.saturating_mul(1_000)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_estimate_exists_only_for_a_synced_clock() {
        let c = read();
        if !c.synced {
            assert_eq!(c.error_ns, None);
        }
    }
}
