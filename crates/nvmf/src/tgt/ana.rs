//! Ports and Asymmetric Namespace Access (ANA).
//!
//! Each NVMe/TCP listener is one NVMe port (port id = its place in the
//! configuration, from 1, as the discovery log numbers them). A controller
//! belongs to the port its admin queue connected through. Every namespace
//! of a subsystem is in ANA group [`ANA_GROUP`]; the group's state differs
//! per port, as in Linux nvmet (the spec's ANA group is a property of the
//! namespace, its state one of the controller): a host connected through
//! two ports sees one namespace over two paths, each in its port's state.
//!
//! A state change ([`Target::set_ana_state`]) bumps the change counts and
//! queues an Asymmetric Namespace Access Change notice on every controller
//! of that port whose host enabled those notices (Asynchronous Event
//! Configuration bit 11); further notices wait until the host reads the ANA
//! log without Retain Asynchronous Event (the spec's event masking). I/O
//! through a port whose state is not accessible completes with the path
//! status the host fails over on ([`io_status`]).

use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use nvme_spec::ana::{self, AnaGroup, AnaState, AEC_ANA_CHANGE, AEN_ANA_CHANGE};
use nvme_spec::Status;

use super::port::Port;
use super::subsystem::{Controller, Target};

/// The ANA group id of every namespace.
pub const ANA_GROUP: u32 = 1;
/// ANA Transition Time reported in Identify Controller, seconds.
pub const ANATT_SECONDS: u8 = 10;

/// What [`Target::set_ana_state`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AnaChange {
    /// Port id.
    pub port: u16,
    /// Its listener.
    pub addr: SocketAddr,
    /// State before.
    pub from: AnaState,
    /// State now.
    pub to: AnaState,
    /// Controllers sent an ANA Change notice.
    pub notified: usize,
}

/// The completion status of an I/O command through a port in `state`:
/// `None` when I/O may proceed.
pub fn io_status(state: AnaState) -> Option<Status> {
    match state {
        AnaState::Optimized | AnaState::NonOptimized => None,
        AnaState::Inaccessible => Some(Status::ANA_INACCESSIBLE),
        AnaState::PersistentLoss => Some(Status::ANA_PERSISTENT_LOSS),
        AnaState::Change => Some(Status::ANA_TRANSITION),
    }
}

impl Controller {
    /// Its port's ANA state: that of port `self.port` (optimized for a
    /// discovery controller or a port the target does not list).
    pub fn ana_state(&self, target: &Target) -> AnaState {
        target
            .port(self.port)
            .map_or(AnaState::Optimized, Port::state)
    }

    /// The port's ANA state changed: queues an ANA Change notice if the
    /// host enabled them and none is pending; returns whether it did.
    pub fn ana_changed(&self) -> bool {
        let mut r = self.regs.lock().expect("controller lock");
        if r.aec & AEC_ANA_CHANGE != 0 && !r.ana_notice_masked {
            r.ana_notice_masked = true;
            r.events.push_back(AEN_ANA_CHANGE);
            return true;
        }
        false
    }

    /// The ANA log page as this controller reports it; unless `retain`,
    /// notices are unmasked. `groups_only` is the RGO bit.
    pub fn ana_log(&self, target: &Target, groups_only: bool, retain: bool) -> Vec<u8> {
        if !retain {
            self.regs.lock().expect("controller lock").ana_notice_masked = false;
        }
        let (state, chgcnt) = target
            .port(self.port)
            .map_or((AnaState::Optimized, 0), |p| (p.state(), p.chgcnt()));
        let group = AnaGroup {
            grpid: ANA_GROUP,
            chgcnt,
            state,
            nsids: self.subsys.namespaces.iter().map(|n| n.nsid).collect(),
        };
        ana::encode_ana_log(target.ana_chgcnt(), &[group], groups_only)
    }
}

impl Target {
    /// Port by id (1-based).
    pub fn port(&self, id: u16) -> Option<&Port> {
        (id as usize).checked_sub(1).and_then(|i| self.ports.get(i))
    }

    /// ANA state changes over all ports so far (the log header's count).
    pub fn ana_chgcnt(&self) -> u64 {
        self.ana_changes.load(Ordering::Acquire)
    }

    /// Puts every port in its state of `states` (in port order; ports past
    /// its end are left alone); returns the ports that changed.
    pub fn apply_ana_states(&self, states: &[AnaState]) -> Vec<AnaChange> {
        states
            .iter()
            .zip(1u16..)
            .filter_map(|(&s, id)| self.set_ana_state(id, s))
            .filter(|c| c.from != c.to)
            .collect()
    }

    /// Puts port `id` in `state` and tells the hosts connected through it;
    /// `None` when no port has that id. Setting the current state again
    /// changes nothing and notifies no one.
    pub fn set_ana_state(&self, id: u16, state: AnaState) -> Option<AnaChange> {
        let port = self.port(id)?;
        let from = AnaState::from_code(port.state.swap(state.code(), Ordering::AcqRel))
            .unwrap_or(AnaState::Optimized);
        let mut change = AnaChange {
            port: id,
            addr: port.addr,
            from,
            to: state,
            notified: 0,
        };
        if from == state {
            return Some(change);
        }
        port.chgcnt.fetch_add(1, Ordering::AcqRel);
        self.ana_changes.fetch_add(1, Ordering::AcqRel);
        let ctrls: Vec<Arc<Controller>> = self
            .controllers()
            .into_iter()
            .filter(|c| c.port == id && !c.subsys.is_discovery)
            .collect();
        change.notified = ctrls.iter().filter(|c| c.ana_changed()).count();
        self.changed();
        Some(change)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tgt::config::{NamespaceConfig, SubsystemConfig, TargetConfig};

    fn target(ana: &[&str]) -> Arc<Target> {
        let cfg = TargetConfig {
            listen: vec![
                "127.0.0.1:4420".parse().unwrap(),
                "127.0.0.1:4421".parse().unwrap(),
            ],
            ana: ana.iter().map(|s| s.to_string()).collect(),
            subsystems: vec![SubsystemConfig {
                nqn: "nqn.2026-01.io.numio:ana".into(),
                serial: "S".into(),
                model: "M".into(),
                allowed_hosts: Vec::new(),
                allow_any_host: true,
                hosts: Vec::new(),
                namespaces: vec![
                    NamespaceConfig::new("mem:1M"),
                    NamespaceConfig::new("mem:1M"),
                ],
            }],
            ..Default::default()
        };
        Target::new(&cfg).unwrap()
    }

    fn controller(t: &Target, port: u16, aec: u32) -> Arc<Controller> {
        let c = t
            .create_controller(port, "nqn.2026-01.io.numio:ana", "nqn.h", [0; 16], 0)
            .unwrap();
        c.regs.lock().unwrap().aec = aec;
        c
    }

    #[test]
    fn ports_take_their_states_from_the_config() {
        let t = target(&["non-optimized"]);
        assert_eq!(t.ports.len(), 2);
        assert_eq!(t.port(1).unwrap().state(), AnaState::NonOptimized);
        assert_eq!(t.port(2).unwrap().state(), AnaState::Optimized);
        assert!(t.port(0).is_none() && t.port(3).is_none());
        let a = controller(&t, 1, 0);
        let b = controller(&t, 2, 0);
        let (_, ga) = ana::decode_ana_log(&a.ana_log(&t, false, true)).unwrap();
        let (_, gb) = ana::decode_ana_log(&b.ana_log(&t, false, true)).unwrap();
        assert_eq!((ga[0].grpid, ga[0].nsids.clone()), (ANA_GROUP, vec![1, 2]));
        assert_eq!(
            (ga[0].state, gb[0].state),
            (AnaState::NonOptimized, AnaState::Optimized)
        );
        let (_, rgo) = ana::decode_ana_log(&a.ana_log(&t, true, true)).unwrap();
        assert!(rgo[0].nsids.is_empty());
    }

    #[test]
    fn a_change_notifies_that_ports_hosts_once_until_the_log_is_read() {
        let t = target(&[]);
        let on1 = controller(&t, 1, AEC_ANA_CHANGE);
        let on2 = controller(&t, 2, AEC_ANA_CHANGE);
        let quiet = controller(&t, 1, 0);
        let c = t.set_ana_state(1, AnaState::Inaccessible).unwrap();
        assert_eq!(
            (c.from, c.to, c.notified, c.port),
            (AnaState::Optimized, AnaState::Inaccessible, 1, 1)
        );
        assert_eq!(on1.take_event(), Some(AEN_ANA_CHANGE));
        assert_eq!((on2.take_event(), quiet.take_event()), (None, None));
        assert_eq!(on1.ana_state(&t), AnaState::Inaccessible);
        assert_eq!(io_status(on1.ana_state(&t)), Some(Status::ANA_INACCESSIBLE));
        assert_eq!(io_status(on2.ana_state(&t)), None);
        // Masked until the host reads the log without RAE.
        assert_eq!(t.set_ana_state(1, AnaState::Change).unwrap().notified, 0);
        let (hdr, g) = ana::decode_ana_log(&on1.ana_log(&t, false, true)).unwrap();
        assert_eq!((hdr, g[0].chgcnt, g[0].state), (2, 2, AnaState::Change));
        assert_eq!(t.set_ana_state(1, AnaState::Optimized).unwrap().notified, 0);
        on1.ana_log(&t, false, false);
        assert_eq!(
            t.set_ana_state(1, AnaState::NonOptimized).unwrap().notified,
            1
        );
        // The same state again is no change.
        let same = t.set_ana_state(1, AnaState::NonOptimized).unwrap();
        assert_eq!((same.notified, t.ana_chgcnt()), (0, 4));
        assert!(t.set_ana_state(9, AnaState::Optimized).is_none());
    }

    #[test]
    fn io_status_per_state() {
        assert_eq!(io_status(AnaState::Optimized), None);
        assert_eq!(io_status(AnaState::NonOptimized), None);
        let s = io_status(AnaState::Inaccessible).unwrap();
        assert_eq!(
            (s.sct(), s.sc(), s.dnr()),
            (nvme_spec::StatusCodeType::Path, 2, false)
        );
        assert_eq!(
            io_status(AnaState::PersistentLoss),
            Some(Status::ANA_PERSISTENT_LOSS)
        );
        assert_eq!(io_status(AnaState::Change), Some(Status::ANA_TRANSITION));
    }
}
