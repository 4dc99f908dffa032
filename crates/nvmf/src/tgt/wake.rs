//! A reactor's wake-up: an eventfd it polls beside its sockets, which
//! whoever has work for it (a new connection, a DH-HMAC-CHAP result from
//! the worker pool, shutdown) writes to. A leaf, so the reactor and the
//! workers that wake it both depend on it and not on each other.

use std::os::fd::{AsFd, OwnedFd};

use super::error::TargetError;

/// A reactor's wake-up eventfd (non-blocking, close-on-exec).
pub(crate) fn eventfd() -> Result<OwnedFd, TargetError> {
    use rustix::event::EventfdFlags;
    rustix::event::eventfd(0, EventfdFlags::NONBLOCK | EventfdFlags::CLOEXEC).map_err(|e| {
        TargetError::Os {
            what: "creating a reactor wake-up eventfd",
            source: e.into(),
        }
    })
}

/// Wakes the reactor polling `fd` (an [`eventfd`]). A full counter
/// (EAGAIN) already means a wake-up is pending, so the result is ignored.
pub(crate) fn poke(fd: impl AsFd) {
    let _ = rustix::io::write(fd, &1u64.to_ne_bytes());
}
