//! A reload (SIGHUP) of the subsystems' namespaces, allowed hosts and their
//! DH-HMAC-CHAP secrets and TLS PSKs while hosts stay connected (a secret that fails to
//! load keeps the previous one, and the reload says so). ANA states reload in `ana.rs`; listeners, limits,
//! reactor CPUs and the set of subsystems stay as started.
//!
//! Every namespace a reload would add first passes the caller's `admit`
//! check (`numio serve` runs there the write-safety check start-up runs);
//! a refused one is not opened, is named in the report, and the rest of the
//! reload applies.
//!
//! Namespaces are matched by backing, in order: each namespace of the new
//! configuration takes the first active namespace of its subsystem with
//! the same `backing` (so two `mem:1G` entries stay two); a new configuration
//! entry with no match is opened and added under the next free nsid; an
//! active namespace no entry matched is removed (flushed, and its nsid not
//! reused until a restart). Each controller of the subsystem gets the nsids
//! in its Changed Namespace List log and, if its host enabled them, a
//! Namespace Attribute Changed notice, as a resize does.

use std::sync::Arc;

use super::config::{NamespaceConfig, SubsystemConfig, TargetConfig};
use super::namespace::Namespace;
use super::subsystem::{Subsystem, Target};

/// What one reload changed and what it could not do.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct ReloadReport {
    /// Namespaces added: (subsystem NQN, nsid, backing).
    pub added: Vec<(String, u32, String)>,
    /// Namespaces removed: (subsystem NQN, nsid, backing).
    pub removed: Vec<(String, u32, String)>,
    /// Subsystems whose allowed hosts changed.
    pub hosts_changed: Vec<String>,
    /// Namespace Attribute Changed notices queued for hosts.
    pub notices: usize,
    /// What was left as it was, and why (in words, with the fix).
    pub refused: Vec<String>,
    /// Namespaces not added because `admit` refused them: (subsystem NQN,
    /// backing); each also has its reason in `refused`.
    pub not_added: Vec<(String, String)>,
}

impl ReloadReport {
    /// True when nothing changed and nothing was refused.
    pub fn is_empty(&self) -> bool {
        self == &Self::default()
    }
}

impl Target {
    /// Brings the namespaces and allowed hosts of every subsystem to what
    /// `cfg` says (see the module doc); subsystems added to or left out of
    /// `cfg` are refused (a restart serves them). Every namespace it adds
    /// is admitted as is; [`Target::reload_checked`] checks them first.
    pub fn reload(&self, cfg: &TargetConfig) -> ReloadReport {
        self.reload_checked(cfg, &|_| Ok::<(), std::convert::Infallible>(()))
    }

    /// [`Target::reload`], where each namespace the reload would add is
    /// first given to `admit`: an `Err(why)` leaves it out (not opened),
    /// named in the report's `not_added` and `refused`; the rest applies.
    pub fn reload_checked<E: std::fmt::Display>(
        &self,
        cfg: &TargetConfig,
        admit: Admit<'_, E>,
    ) -> ReloadReport {
        let mut report = ReloadReport::default();
        if cfg.tls != self.tls.is_some() {
            report.refused.push(format!(
                "tls = {} needs a restart (the target runs with TLS {})",
                cfg.tls,
                if self.tls.is_some() {
                    "required"
                } else {
                    "off"
                }
            ));
        }
        for s in &cfg.subsystems {
            match self.subsystems.iter().find(|t| t.nqn == s.nqn) {
                Some(sub) => self.reload_subsystem(sub, s, admit, &mut report),
                None => report.refused.push(format!(
                    "subsystem {} is new: a restart serves it (subsystems are fixed while serving)",
                    s.nqn
                )),
            }
        }
        for sub in &self.subsystems {
            if !cfg.subsystems.iter().any(|s| s.nqn == sub.nqn) {
                report.refused.push(format!(
                    "subsystem {} is no longer in the configuration: still served until a restart",
                    sub.nqn
                ));
            }
        }
        if report.notices > 0 || !report.added.is_empty() || !report.removed.is_empty() {
            self.changed();
        }
        report
    }

    fn reload_subsystem<E: std::fmt::Display>(
        &self,
        sub: &Arc<Subsystem>,
        cfg: &SubsystemConfig,
        admit: Admit<'_, E>,
        r: &mut ReloadReport,
    ) {
        let mut hosts_changed = sub.set_hosts(&cfg.allowed_hosts, cfg.allow_any_host);
        match super::subsystem::load_host_keys(&cfg.hosts) {
            Ok(keys) => hosts_changed |= sub.set_host_keys(keys),
            Err(e) => r.refused.push(format!(
                "{}: {e}; the hosts' previous secrets stay in use",
                sub.nqn
            )),
        }
        match super::subsystem::load_tls_keys(&cfg.hosts) {
            Ok(keys) => hosts_changed |= sub.set_tls_keys(keys),
            Err(e) => r.refused.push(format!(
                "{}: {e}; the hosts' previous TLS keys stay in use",
                sub.nqn
            )),
        }
        if hosts_changed {
            r.hosts_changed.push(sub.nqn.clone());
        }
        let (kept, new) = match_namespaces(sub, &cfg.namespaces);
        let mut changed = Vec::new();
        for ns in sub.namespaces.iter().filter(|n| !kept.contains(&n.nsid)) {
            if let Err(e) = ns.flush() {
                r.refused.push(format!(
                    "{} nsid {} ({}): flush before removal failed: {e}; removed anyway",
                    sub.nqn, ns.nsid, ns.spec
                ));
            }
            changed.push(ns.nsid);
            r.removed.push((sub.nqn.clone(), ns.nsid, ns.spec.clone()));
        }
        for nsid in &changed {
            sub.namespaces.remove(*nsid);
        }
        for n in new {
            if let Err(why) = admit(n) {
                r.refused.push(format!(
                    "{}: namespace {} not added: {why}",
                    sub.nqn, n.backing
                ));
                r.not_added.push((sub.nqn.clone(), n.backing.clone()));
                continue;
            }
            let nsid = sub.namespaces.next_nsid();
            let opened = Namespace::open(&sub.nqn, nsid, n).map_err(|e| e.to_string());
            let added = opened.and_then(|ns| {
                sub.namespaces
                    .push(Arc::new(ns))
                    .map_err(|_| "the subsystem has had its most namespaces; restart".into())
            });
            match added {
                Ok(()) => {
                    changed.push(nsid);
                    r.added.push((sub.nqn.clone(), nsid, n.backing.clone()));
                }
                Err(e) => r.refused.push(format!(
                    "{}: namespace {} not added: {e}",
                    sub.nqn, n.backing
                )),
            }
        }
        let ctrls: Vec<_> = self
            .controllers()
            .into_iter()
            .filter(|c| Arc::ptr_eq(&c.subsys, sub))
            .collect();
        for nsid in changed {
            r.notices += ctrls.iter().filter(|c| c.namespace_changed(nsid)).count();
        }
    }
}

/// The check each namespace a reload would add passes first: `Err(why)`
/// leaves it out, `why` (the caller's own error, which says the fix)
/// written into the report.
pub type Admit<'a, E> = &'a dyn Fn(&NamespaceConfig) -> Result<(), E>;

/// The nsids of `sub`'s active namespaces that `wanted` keeps, and the
/// entries of `wanted` that match none (to add), in order.
fn match_namespaces<'a>(
    sub: &Subsystem,
    wanted: &'a [NamespaceConfig],
) -> (Vec<u32>, Vec<&'a NamespaceConfig>) {
    let mut kept = Vec::new();
    let mut new = Vec::new();
    for w in wanted {
        let hit = sub
            .namespaces
            .iter()
            .find(|n| n.spec == w.backing && !kept.contains(&n.nsid));
        match hit {
            Some(n) => kept.push(n.nsid),
            None => new.push(w),
        }
    }
    (kept, new)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tgt::subsystem::AEC_NS_ATTRIBUTE;

    const NQN: &str = "nqn.2026-01.io.numio:reload";

    fn config(backings: &[&str], hosts: &[&str]) -> TargetConfig {
        TargetConfig {
            listen: vec!["127.0.0.1:4420".parse().unwrap()],
            subsystems: vec![SubsystemConfig {
                nqn: NQN.into(),
                serial: "S".into(),
                model: "M".into(),
                allowed_hosts: hosts.iter().map(|h| h.to_string()).collect(),
                allow_any_host: false,
                hosts: Vec::new(),
                namespaces: backings.iter().map(|b| NamespaceConfig::new(b)).collect(),
            }],
            ..Default::default()
        }
    }

    fn nsids(t: &Target) -> Vec<u32> {
        t.subsystems[0].namespaces.iter().map(|n| n.nsid).collect()
    }

    #[test]
    fn namespaces_come_and_go_and_connected_hosts_hear_of_it() {
        let t = Target::new(&config(&["mem:1M", "mem:2M"], &["nqn.h1"])).unwrap();
        let c = t.create_controller(1, NQN, "nqn.h1", [0; 16], 0).unwrap();
        c.regs.lock().unwrap().aec = AEC_NS_ATTRIBUTE;
        assert!(t.create_controller(1, NQN, "nqn.h2", [0; 16], 0).is_err());

        let r = t.reload(&config(
            &["mem:1M", "mem:2M", "mem:4M"],
            &["nqn.h1", "nqn.h2"],
        ));
        assert_eq!(r.added, [(NQN.to_string(), 3, "mem:4M".to_string())]);
        assert!(r.removed.is_empty() && r.refused.is_empty(), "{r:?}");
        assert_eq!(r.hosts_changed, [NQN.to_string()]);
        assert_eq!(r.notices, 1);
        assert_eq!(nsids(&t), [1, 2, 3]);
        assert!(c.is_alive(), "the connected host stays");
        assert!(t.create_controller(1, NQN, "nqn.h2", [0; 16], 0).is_ok());
        assert_eq!(&c.changed_ns_log(false)[..4], &3u32.to_le_bytes());

        // mem:2M goes: nsid 2 removed, not reused; nothing else moves.
        let r = t.reload(&config(&["mem:1M", "mem:4M", "mem:8M"], &["nqn.h1"]));
        assert_eq!(r.removed, [(NQN.to_string(), 2, "mem:2M".to_string())]);
        assert_eq!(r.added, [(NQN.to_string(), 4, "mem:8M".to_string())]);
        assert_eq!(nsids(&t), [1, 3, 4]);
        assert!(t.subsystems[0].namespace(2).is_none());
        let log = c.changed_ns_log(false);
        assert_eq!(
            (&log[..4], &log[4..8]),
            (&2u32.to_le_bytes()[..], &4u32.to_le_bytes()[..])
        );

        let r = t.reload(&config(&["mem:1M", "mem:4M", "mem:8M"], &["nqn.h1"]));
        assert!(r.is_empty(), "the same config again changes nothing: {r:?}");
        let mut other = config(&["mem:1M"], &[]);
        other.subsystems[0].nqn = "nqn.2026-01.io.numio:other".into();
        let r = t.reload(&other);
        assert_eq!(r.refused.len(), 2, "{r:?}");
        assert!(
            r.refused[0].contains("is new: a restart serves it"),
            "{r:?}"
        );
        assert_eq!(nsids(&t), [1, 3, 4], "a refused reload changes nothing");
    }

    // Regression (issue 38): a reload opened every new namespace unchecked,
    // and so exported a block device holding a mounted filesystem.
    #[test]
    fn a_namespace_admit_refuses_is_left_out_and_named_and_the_rest_applies() {
        let t = Target::new(&config(&["mem:1M", "mem:2M"], &["nqn.h1"])).unwrap();
        let asked = std::cell::RefCell::new(Vec::new());
        let admit = |n: &NamespaceConfig| {
            asked.borrow_mut().push(n.backing.clone());
            match n.backing.as_str() {
                "mem:8M" => Err("it holds a ext4 filesystem; pass --force"),
                _ => Ok(()),
            }
        };
        let r = t.reload_checked(
            &config(&["mem:1M", "mem:8M", "mem:4M"], &["nqn.h1"]),
            &admit,
        );
        assert_eq!(
            *asked.borrow(),
            ["mem:8M", "mem:4M"],
            "only the namespaces the reload adds are asked about"
        );
        assert_eq!(r.not_added, [(NQN.to_string(), "mem:8M".to_string())]);
        assert_eq!(r.refused.len(), 1, "{r:?}");
        assert!(
            r.refused[0].contains("namespace mem:8M not added: it holds a ext4"),
            "{r:?}"
        );
        assert_eq!(r.added, [(NQN.to_string(), 3, "mem:4M".to_string())]);
        assert_eq!(r.removed, [(NQN.to_string(), 2, "mem:2M".to_string())]);
        assert_eq!(nsids(&t), [1, 3], "the rest of the reload applied");
    }
}
