//! Which backend moves a run's bytes (`--io`): chosen once, before the
//! workers are forked, against what this kernel offers, and reported with
//! the reason, so a reader knows what produced the numbers.

use std::net::IpAddr;

use crate::plan::{IoBackend, IoChoice, IoChosen};

/// How the workers do their I/O.
#[derive(Clone, Debug, Default)]
pub(crate) struct IoPlan {
    pub backend: IoBackend,
    /// io_uring's kernel submission-queue polling thread.
    pub sqpoll: bool,
    /// Local addresses new connections are bound to, round-robin per
    /// connection; empty: the kernel picks.
    pub source_addrs: Vec<IpAddr>,
}

/// Resolves `--io` against the kernel: `auto` takes io_uring when
/// `sys::uring::check` finds everything the backend uses, else epoll;
/// `uring` asked for on a kernel without it is an error naming what is
/// missing.
pub(crate) fn choose(requested: IoChoice, sqpoll: bool) -> Result<IoChosen, String> {
    let chosen = |backend, reason: String| IoChosen {
        requested,
        backend,
        sqpoll: sqpoll && backend == IoBackend::Uring,
        reason,
    };
    match requested {
        IoChoice::Epoll => Ok(chosen(IoBackend::Epoll, "asked for (--io epoll)".into())),
        IoChoice::Uring => match crate::sys::uring::check(sqpoll) {
            Ok(()) => Ok(chosen(IoBackend::Uring, "asked for (--io uring)".into())),
            Err(why) => Err(format!("--io uring: {why}; use --io epoll or auto")),
        },
        IoChoice::Auto => Ok(match crate::sys::uring::check(sqpoll) {
            Ok(()) => chosen(
                IoBackend::Uring,
                "auto: the kernel offers everything the io_uring backend uses".into(),
            ),
            Err(why) => chosen(IoBackend::Epoll, format!("auto: io_uring unusable: {why}")),
        }),
    }
}
