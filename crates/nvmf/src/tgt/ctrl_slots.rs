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
//!
//! A full `max_controllers` makes room for a newcomer by tearing down the
//! controller whose admin queue has been idle longest, if it has been
//! idle past [`IDLE_ADMIN_GRACE`] with no keep-alive (KATO 0) and no I/O
//! queue: 64 such admin queues from an allowed host once held every slot
//! until their 60 s idle deadline, and each new host got Controller Busy
//! (issue 38). A controller with a keep-alive or an I/O queue keeps its
//! slot; only when every slot holds one is the newcomer refused.

use std::net::IpAddr;
use std::time::Duration;

use super::counters::Refused;
use super::subsystem::{ConnectRefusal, Registry, Target};
pub use super::unauthenticated::{
    IDLE_ADMIN_GRACE, UNAUTHENTICATED_MAX, UNAUTHENTICATED_PER_SOURCE,
};
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
    /// Every slot of `max_controllers` is taken: tears down the controller
    /// idle longest with KATO 0, no I/O queue and no authentication
    /// pending, if it has been idle past [`IDLE_ADMIN_GRACE`]; refuses
    /// (Controller Busy, "controller limit reached") otherwise.
    pub(super) fn room_for_another(&self, reg: &mut Registry) -> Result<(), ConnectRefusal> {
        let now = std::time::Instant::now();
        let victim = reg
            .by_id
            .values()
            .filter(|c| !reg.unauthenticated.iter().any(|u| u.cntlid == c.cntlid))
            .filter(|c| c.kato_ms.load(std::sync::atomic::Ordering::Relaxed) == 0)
            .filter(|c| c.io_qids.lock().expect("queue lock").is_empty())
            .map(|c| {
                let last = *c.last_admin_command.lock().expect("controller lock");
                (now.saturating_duration_since(last), c.cntlid)
            })
            .filter(|(idle, _)| *idle >= IDLE_ADMIN_GRACE)
            .max();
        let Some((idle, cntlid)) = victim else {
            return Err(ConnectRefusal::Busy);
        };
        let Some(c) = reg.forget(cntlid) else {
            return Err(ConnectRefusal::Busy);
        };
        // Its admin queue sees it gone at its next tick and closes.
        c.alive.store(false, std::sync::atomic::Ordering::Release);
        self.refusals.count(Refused::AdminIdle);
        log::emit(
            Stream::Err,
            Level::Warn,
            "controller_limit",
            format_args!(
                "tearing down controller {cntlid} of {}: its admin queue was idle for {:.1} s \
                 with no keep-alive (KATO 0) and no I/O queue, every controller slot \
                 (max_controllers = {} in [limits]) was taken and another host connected",
                c.hostnqn,
                idle.as_secs_f64(),
                self.limits.max_controllers
            ),
            &[
                ("cntlid", cntlid.into()),
                ("hostnqn", c.hostnqn.as_str().into()),
                ("max_controllers", self.limits.max_controllers.into()),
            ],
        );
        self.changed();
        Ok(())
    }

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
            if let Some(s) = source {
                self.backoff.refused(s, std::time::Instant::now());
            }
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

#[cfg(test)]
mod tests {
    use std::sync::atomic::Ordering;
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    use super::super::subsystem::{ConnectRefusal, Controller, Target};
    use super::IDLE_ADMIN_GRACE;
    use crate::config::{NamespaceConfig, SubsystemConfig, TargetConfig};

    const NQN: &str = "nqn.2026-01.io.numio:slots";
    const HOST: &str = "nqn.2014-08.org.nvmexpress:uuid:slots";

    fn target(max_controllers: u32) -> Arc<Target> {
        let mut cfg = TargetConfig::default();
        cfg.limits.max_controllers = max_controllers;
        cfg.subsystems.push(SubsystemConfig {
            nqn: NQN.into(),
            serial: "SLOTS".into(),
            model: "slots".into(),
            allowed_hosts: Vec::new(),
            allow_any_host: true,
            hosts: Vec::new(),
            namespaces: vec![NamespaceConfig::new("mem:1M")],
        });
        Target::new(&cfg).unwrap()
    }

    fn connect(t: &Target, kato_ms: u32) -> Result<Arc<Controller>, ConnectRefusal> {
        t.create_controller(1, NQN, HOST, [7; 16], kato_ms)
    }

    /// Its admin queue's last command, `ago` back.
    fn idle_for(c: &Controller, ago: Duration) {
        *c.last_admin_command.lock().unwrap() = Instant::now() - ago;
    }

    // Regression (issue 38): 64 admin queues with KATO 0 from an allowed
    // host held every controller slot until their 60 s idle deadline, and
    // every new host got Controller Busy.
    #[test]
    fn a_full_target_gives_the_longest_idle_admin_only_slot_to_a_newcomer() {
        let t = target(3);
        let a = connect(&t, 0).unwrap();
        let b = connect(&t, 0).unwrap();
        let c = connect(&t, 0).unwrap();
        idle_for(&a, IDLE_ADMIN_GRACE + Duration::from_secs(2));
        idle_for(&b, IDLE_ADMIN_GRACE + Duration::from_secs(9));
        let d = connect(&t, 0).expect("the longest idle admin queue makes room");
        assert!(
            !b.alive.load(Ordering::Acquire),
            "b, idle longest, is torn down"
        );
        assert!(a.alive.load(Ordering::Acquire) && c.alive.load(Ordering::Acquire));
        assert!(d.alive.load(Ordering::Acquire));
        let evicted = t.refusals.snapshot();
        assert!(
            evicted.contains(&(super::Refused::AdminIdle, 1)),
            "{evicted:?}"
        );
        // a is idle past the grace too: the next newcomer takes its slot.
        connect(&t, 0).expect("a makes room");
        assert!(!a.alive.load(Ordering::Acquire));
    }

    #[test]
    fn keep_alive_io_queues_and_recent_commands_keep_their_slots() {
        let t = target(3);
        let with_kato = connect(&t, 5_000).unwrap();
        let with_io = connect(&t, 0).unwrap();
        with_io.io_qids.lock().unwrap().push(1);
        let recent = connect(&t, 0).unwrap();
        let long_ago = IDLE_ADMIN_GRACE + Duration::from_secs(30);
        idle_for(&with_kato, long_ago);
        idle_for(&with_io, long_ago);
        idle_for(&recent, IDLE_ADMIN_GRACE / 2);
        assert!(matches!(connect(&t, 0), Err(ConnectRefusal::Busy)));
        for c in [&with_kato, &with_io, &recent] {
            assert!(
                c.alive.load(Ordering::Acquire),
                "controller {} kept",
                c.cntlid
            );
        }
    }
}
