//! io_uring: the one module holding the backend's unsafe code.

/// Whether this process can run the io_uring backend (with SQPOLL when
/// `sqpoll`): `Err` names what is missing.
pub(crate) fn check(_sqpoll: bool) -> Result<(), String> {
    Err("the io_uring backend is not built in yet".into())
}
