//! Which accepted sockets the target keeps: at most `max_connections` over
//! all hosts and `max_connections_per_source` from one source address, so
//! one address flooding the port cannot take every slot from the others.
//! The acceptor asks [`Target::admit`] for each socket; the reactor gives
//! the slot back with [`Target::release`] when the socket is closed.

use std::net::IpAddr;
use std::sync::atomic::Ordering;

use super::subsystem::Target;

/// Why a socket was not admitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Crowded {
    /// Every connection slot is taken.
    Target(u32),
    /// This source address holds its share.
    Source(u32),
}

impl std::fmt::Display for Crowded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Crowded::Target(n) => write!(f, "connection limit {n} reached"),
            Crowded::Source(n) => write!(f, "{n} connections from this address already"),
        }
    }
}

impl Target {
    /// Takes a connection slot for a socket from `source`, or says why not.
    pub fn admit(&self, source: IpAddr) -> Result<(), Crowded> {
        let mut by_source = self.sources.lock().expect("sources lock");
        let open = self.connections.load(Ordering::Acquire);
        if open >= self.limits.max_connections {
            return Err(Crowded::Target(self.limits.max_connections));
        }
        let mine = by_source.entry(source).or_insert(0);
        if *mine >= self.limits.max_connections_per_source {
            return Err(Crowded::Source(self.limits.max_connections_per_source));
        }
        *mine += 1;
        self.connections.fetch_add(1, Ordering::AcqRel);
        drop(by_source);
        self.changed();
        Ok(())
    }

    /// Gives back the slot of a closed socket from `source` (`None`: a
    /// socket admitted without an address, e.g. in a test).
    pub fn release(&self, source: Option<IpAddr>) {
        if let Some(ip) = source {
            let mut by_source = self.sources.lock().expect("sources lock");
            if let Some(n) = by_source.get_mut(&ip) {
                *n = n.saturating_sub(1);
                if *n == 0 {
                    by_source.remove(&ip);
                }
            }
        }
        self.connections.fetch_sub(1, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::TargetConfig;

    #[test]
    fn one_source_gets_its_share_and_others_the_rest() {
        let mut cfg = TargetConfig::default();
        cfg.limits.max_connections = 5;
        cfg.limits.max_connections_per_source = 3;
        cfg.subsystems.push(crate::config::SubsystemConfig {
            nqn: "nqn.2026-01.io.numio:adm".into(),
            serial: "ADM".into(),
            model: "admission".into(),
            allowed_hosts: Vec::new(),
            allow_any_host: true,
            hosts: Vec::new(),
            namespaces: vec![crate::config::NamespaceConfig::new("mem:1M")],
        });
        let t = Target::new(&cfg).unwrap();
        let (a, b): (IpAddr, IpAddr) = ("10.0.0.1".parse().unwrap(), "10.0.0.2".parse().unwrap());
        for _ in 0..3 {
            t.admit(a).unwrap();
        }
        assert_eq!(t.admit(a), Err(Crowded::Source(3)));
        t.admit(b).unwrap();
        t.admit(b).unwrap();
        assert_eq!(t.admit(b), Err(Crowded::Target(5)), "all five slots taken");
        t.release(Some(a));
        t.admit(b).unwrap();
        assert_eq!(t.admit(a), Err(Crowded::Target(5)));
        for _ in 0..2 {
            t.release(Some(a));
        }
        assert!(
            t.sources.lock().unwrap().get(&a).is_none(),
            "an idle source leaves no entry"
        );
        t.admit(a).unwrap();
    }
}
