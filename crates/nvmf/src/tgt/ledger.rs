//! The admission ledger's data: each admitted socket's ticket, the slots
//! each source address holds, and the sockets that may be closed for room
//! (the policy over them is `admission.rs`, as methods of the target). A
//! leaf, so the target that holds the ledger and the policy that reads it
//! both depend on it.

use std::collections::{BTreeMap, HashMap};
use std::net::IpAddr;
use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// One admitted socket's slot. The first [`Target::release`] gives it
/// back; a socket closed for room has had it given back already.
#[derive(Debug)]
pub struct Ticket {
    pub(super) token: u64,
    pub(super) source: Option<IpAddr>,
    pub(super) released: AtomicBool,
}

/// A socket that has not reached Connect: its ticket and a duplicate of
/// its descriptor (the same socket, for `shutdown(2)`).
#[derive(Debug)]
pub(super) struct Waiting {
    pub(super) ticket: Arc<Ticket>,
    pub(super) sock: OwnedFd,
    pub(super) since: Instant,
}

/// Slots by source address, and the sockets that may be closed for room,
/// oldest first (tokens only grow).
#[derive(Debug, Default)]
pub(crate) struct Ledger {
    pub(super) next_token: u64,
    pub(super) by_source: HashMap<IpAddr, u32>,
    pub(super) waiting: BTreeMap<u64, Waiting>,
}

/// Gives back `t`'s slot in `ledger` and `connections`, once however often
/// it is called.
pub(super) fn give_back(ledger: &mut Ledger, connections: &AtomicU32, t: &Ticket) {
    if t.released.swap(true, Ordering::AcqRel) {
        return;
    }
    if let Some(ip) = t.source {
        if let Some(n) = ledger.by_source.get_mut(&ip) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                ledger.by_source.remove(&ip);
            }
        }
    }
    connections.fetch_sub(1, Ordering::AcqRel);
}
