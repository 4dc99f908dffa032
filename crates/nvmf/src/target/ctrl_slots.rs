//! Controller slots and authentication: a controller whose host must
//! authenticate (DH-HMAC-CHAP) holds no slot of `max_controllers` until
//! its admin queue has, so hosts that never finish (anyone who knows a
//! host NQN can Connect as it) cannot take the slots authenticated hosts
//! need (issue 38). Unauthenticated controllers have slots of their own:
//! at most [`UNAUTHENTICATED_PER_SOURCE`] from one source address (the
//! next Connect from it is refused, Controller Busy) and
//! [`UNAUTHENTICATED_MAX`] in all (the next Connect tears down the oldest
//! of them, whose queues then close). Each also closes at the
//! authentication deadline, 30 s after its Connect.
//!
//! When an admin queue authenticates, its controller takes a slot of
//! `max_controllers`; if none is left it is torn down, logged as
//! "controller limit reached".

use std::net::IpAddr;
use std::time::Duration;

use super::counters::Refused;
use super::subsystem::{ConnectRefusal, Registry, Target};
pub use super::unauthenticated::{UNAUTHENTICATED_MAX, UNAUTHENTICATED_PER_SOURCE};
use crate::log::{self, Level, Stream};

impl Registry {
    /// Controllers holding a slot of `max_controllers`.
    pub(super) fn authenticated_count(&self) -> usize {
        self.by_id.len() - self.unauthenticated.len()
    }

    /// Removes a controller (and its unauthenticated entry); returns it.
    pub(super) fn forget(
        &mut self,
        cntlid: u16,
    ) -> Option<std::sync::Arc<super::subsystem::Controller>> {
        self.unauthenticated.retain(|u| u.cntlid != cntlid);
        self.by_id.remove(&cntlid)
    }
}

impl Target {
    /// Makes room for one more unauthenticated controller from `source`:
    /// refuses past its source's share, tears down the oldest past the
    /// total.
    pub(super) fn room_for_unauthenticated(
        &self,
        reg: &mut Registry,
        source: Option<IpAddr>,
    ) -> Result<(), ConnectRefusal> {
        let from_source = reg
            .unauthenticated
            .iter()
            .filter(|u| source.is_some() && u.source == source)
            .count();
        if from_source >= UNAUTHENTICATED_PER_SOURCE {
            return Err(ConnectRefusal::UnauthenticatedPerSource);
        }
        if reg.unauthenticated.len() < UNAUTHENTICATED_MAX {
            return Ok(());
        }
        let oldest = reg.unauthenticated[0];
        if let Some(c) = reg.forget(oldest.cntlid) {
            // Its queues see it gone at their next tick and close.
            c.alive.store(false, std::sync::atomic::Ordering::Release);
        }
        self.refusals.count(Refused::Unauthenticated);
        evicted_log(oldest.cntlid, oldest.source, oldest.since.elapsed());
        Ok(())
    }

    /// Admin queue of `cntlid` authenticated: its controller takes a slot
    /// of `max_controllers`, or is torn down (false) when none is left.
    pub fn controller_authenticated(&self, cntlid: u16) -> bool {
        let mut reg = self.controllers.lock().expect("registry lock");
        let Some(i) = reg.unauthenticated.iter().position(|u| u.cntlid == cntlid) else {
            return true; // authenticated before (a re-authentication)
        };
        if reg.authenticated_count() < self.limits.max_controllers as usize {
            reg.unauthenticated.remove(i);
            return true;
        }
        if let Some(c) = reg.forget(cntlid) {
            c.alive.store(false, std::sync::atomic::Ordering::Release);
        }
        drop(reg);
        self.refusals.count(Refused::Busy);
        log::emit(
            Stream::Err,
            Level::Warn,
            "controller_limit",
            format_args!(
                "controller {cntlid} authenticated, but the controller limit was reached \
                 meanwhile ({} live controllers, max_controllers in [limits]): torn down; \
                 raise max_controllers, or look for a host holding idle admin queues",
                self.limits.max_controllers
            ),
            &[
                ("cntlid", cntlid.into()),
                ("max_controllers", self.limits.max_controllers.into()),
            ],
        );
        self.changed();
        false
    }

    /// Controllers whose host has not yet authenticated.
    pub fn unauthenticated_controllers(&self) -> usize {
        let reg = self.controllers.lock().expect("registry lock");
        reg.unauthenticated.len()
    }
}

fn evicted_log(cntlid: u16, source: Option<IpAddr>, held: Duration) {
    let from = source.map_or_else(|| "an unknown source".into(), |s| s.to_string());
    log::emit(
        Stream::Err,
        Level::Warn,
        "unauthenticated_limit",
        format_args!(
            "tearing down controller {cntlid} from {from}, unauthenticated for {:.1} s: \
             {UNAUTHENTICATED_MAX} controllers waited for DH-HMAC-CHAP \
             (UNAUTHENTICATED_MAX) and another host connected",
            held.as_secs_f64()
        ),
        &[
            ("cntlid", cntlid.into()),
            ("source", from.as_str().into()),
            ("limit", "UNAUTHENTICATED_MAX".into()),
        ],
    );
}
