//! Signal dispositions: ignoring a signal, and counting SIGINT, SIGTERM and
//! SIGHUP (a closed terminal) in an atomic that the bench parent's loop
//! reads. A handler here does nothing but an atomic add (async-signal-safe);
//! whoever polls the count decides what an interrupt means.

use std::io;
use std::sync::atomic::{AtomicU32, Ordering};

use nix::sys::signal::{SaFlags, SigAction, SigHandler, SigSet, Signal, sigaction, signal};

/// SIGINT, SIGTERM and SIGHUP deliveries since `count_interrupts`.
static DELIVERED: AtomicU32 = AtomicU32::new(0);

extern "C" fn on_interrupt(_: libc::c_int) {
    DELIVERED.fetch_add(1, Ordering::Relaxed);
}

/// The signals that stop a run: Ctrl-C, `kill`, and the terminal going away.
pub(crate) const INTERRUPTS: [Signal; 3] = [Signal::SIGINT, Signal::SIGTERM, Signal::SIGHUP];

/// Counts `INTERRUPTS` in `interrupts()` instead of dying of them, without
/// SA_RESTART, so a sleeping loop wakes with EINTR and sees the count at
/// once.
pub(crate) fn count_interrupts() -> io::Result<()> {
    let action = SigAction::new(
        SigHandler::Handler(on_interrupt),
        SaFlags::empty(),
        SigSet::empty(),
    );
    for sig in INTERRUPTS {
        // SAFETY: the handler only adds to an atomic, which is
        // async-signal-safe.
        unsafe { sigaction(sig, &action) }?;
    }
    Ok(())
}

/// `INTERRUPTS` deliveries counted so far.
pub(crate) fn interrupts() -> &'static AtomicU32 {
    &DELIVERED
}

/// Ignores `sig`.
pub(crate) fn ignore(sig: Signal) -> io::Result<()> {
    // SAFETY: SIG_IGN installs no handler, so no code runs on delivery.
    unsafe { signal(sig, SigHandler::SigIgn) }?;
    Ok(())
}
