//! A controller waiting for its host to authenticate, and how many may
//! wait (the policy is in `ctrl_slots.rs`): a leaf, so the registry that
//! holds them and the slot logic that counts them both depend on it.

use std::net::IpAddr;
use std::time::Instant;

/// Unauthenticated controllers from one source address.
pub const UNAUTHENTICATED_PER_SOURCE: usize = 8;
/// Unauthenticated controllers over all sources; past it the oldest goes.
pub const UNAUTHENTICATED_MAX: usize = 32;

/// How long an admin queue with KATO 0 and no I/O queue may sit idle
/// before its controller's slot goes to a newcomer when every slot of
/// `max_controllers` is taken (a host sets up its I/O queues within
/// milliseconds of the admin queue's Connect; Linux's sets a KATO).
pub const IDLE_ADMIN_GRACE: std::time::Duration = std::time::Duration::from_secs(5);

/// A controller whose admin queue has not authenticated yet.
#[derive(Debug, Clone, Copy)]
pub(super) struct Unauthenticated {
    pub(super) cntlid: u16,
    pub(super) source: Option<IpAddr>,
    pub(super) since: Instant,
}

impl Unauthenticated {
    pub(super) fn new(cntlid: u16, source: Option<IpAddr>) -> Self {
        Self {
            cntlid,
            source,
            since: Instant::now(),
        }
    }
}
