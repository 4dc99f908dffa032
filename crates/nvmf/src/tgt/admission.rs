//! Which accepted sockets the target keeps: at most `max_connections` over
//! all hosts and `max_connections_per_source` from one source address, so
//! one address flooding the port cannot take every slot from the others.
//!
//! A socket that has not reached Connect holds its slot only while no one
//! needs it: when every slot is taken, the oldest such socket is closed to
//! admit the newcomer (issue 38: five addresses × 64 idle sockets, reopened
//! as their deadlines closed them, once held all 256 slots and a good host
//! got no session). A socket whose queue is connected is never closed for
//! room; when every slot holds one, the newcomer is refused, naming
//! `max_connections`.
//!
//! The acceptor asks [`Target::admit`] for each socket and gets a
//! [`Ticket`]; the reactor reports the queue's Connect with
//! [`Target::reached_connect`] and gives the slot back with
//! [`Target::release`] when the socket is closed. The ledger keeps a
//! duplicate of each waiting socket's descriptor: closing one for room is a
//! `shutdown(2)` on it (the reactor then sees the close and releases its
//! slot as for any other), never a descriptor number that may have been
//! reused.

use std::net::IpAddr;
use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

pub use super::ledger::Ticket;
use super::ledger::{give_back, Waiting};
use super::subsystem::Target;

/// Why a socket was not admitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Crowded {
    /// Every connection slot is taken by a connected queue.
    Target(u32),
    /// This source address holds its share.
    Source(u32),
    /// This source address was refused a controller at the
    /// unauthenticated limit moments ago; what is left of its back-off.
    Backoff(Duration),
}

impl std::fmt::Display for Crowded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Crowded::Target(n) => write!(
                f,
                "connection limit reached: all max_connections = {n} slots hold connected \
                 queues (raise max_connections in the [limits] of --config)"
            ),
            Crowded::Source(n) => write!(
                f,
                "connection limit per source address reached: max_connections_per_source = \
                 {n} (raise it in the [limits] of --config)"
            ),
            Crowded::Backoff(left) => write!(
                f,
                "source address backing off for {} ms more: it was refused a controller for \
                 holding UNAUTHENTICATED_PER_SOURCE = {} controllers that wait for DH-HMAC-CHAP \
                 (source_backoff, {} ms after each such refusal)",
                left.as_millis().max(1),
                super::unauthenticated::UNAUTHENTICATED_PER_SOURCE,
                super::backoff::SOURCE_BACKOFF.as_millis()
            ),
        }
    }
}

/// A socket closed to admit another.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Evicted {
    /// Its source address.
    pub source: IpAddr,
    /// How long it had held its slot without a Connect.
    pub held: Duration,
}

impl Target {
    /// Takes a connection slot for a socket from `source`, or says why
    /// not. `sock` (a duplicate of the socket's descriptor) makes the
    /// socket one that may be closed for room until
    /// [`Target::reached_connect`]; without it (an RDMA queue, a test) it
    /// never is. When every slot is taken, the oldest socket that has not
    /// reached Connect is shut down for the newcomer and returned.
    pub fn admit(
        &self,
        source: IpAddr,
        sock: Option<OwnedFd>,
    ) -> Result<(Arc<Ticket>, Option<Evicted>), Crowded> {
        if let Some(left) = self.backoff.left(source, Instant::now()) {
            return Err(Crowded::Backoff(left));
        }
        let limits = self.limits;
        let mut ledger = self.admission.lock().expect("admission lock");
        let mine = ledger.by_source.get(&source).copied().unwrap_or(0);
        if mine >= limits.per_source() {
            return Err(Crowded::Source(limits.per_source()));
        }
        let mut evicted = None;
        if self.connections.load(Ordering::Acquire) >= limits.max_connections {
            let Some((_, oldest)) = ledger.waiting.pop_first() else {
                return Err(Crowded::Target(limits.max_connections));
            };
            // The reactor sees the socket close and releases it; its slot
            // is the newcomer's now.
            let _ = rustix::net::shutdown(&oldest.sock, rustix::net::Shutdown::Both);
            let ticket = oldest.ticket;
            evicted = ticket.source.map(|source| Evicted {
                source,
                held: oldest.since.elapsed(),
            });
            give_back(&mut ledger, &self.connections, &ticket);
        }
        *ledger.by_source.entry(source).or_insert(0) += 1;
        self.connections.fetch_add(1, Ordering::AcqRel);
        let token = ledger.next_token;
        ledger.next_token += 1;
        let ticket = Arc::new(Ticket {
            token,
            source: Some(source),
            released: AtomicBool::new(false),
        });
        if let Some(sock) = sock {
            let w = Waiting {
                ticket: ticket.clone(),
                sock,
                since: Instant::now(),
            };
            ledger.waiting.insert(token, w);
        }
        drop(ledger);
        self.changed();
        Ok((ticket, evicted))
    }

    /// A slot for a connection without a source address (tests that drive
    /// a reactor with sockets of their own), never closed for room.
    pub fn admit_unaddressed(&self) -> Arc<Ticket> {
        let mut ledger = self.admission.lock().expect("admission lock");
        let token = ledger.next_token;
        ledger.next_token += 1;
        self.connections.fetch_add(1, Ordering::AcqRel);
        Arc::new(Ticket {
            token,
            source: None,
            released: AtomicBool::new(false),
        })
    }

    /// The socket's queue is connected: it is no longer closed for room.
    pub fn reached_connect(&self, ticket: &Ticket) {
        let mut ledger = self.admission.lock().expect("admission lock");
        ledger.waiting.remove(&ticket.token);
    }

    /// Gives back the slot of a closed socket (once, however often it is
    /// called; not at all for one closed for room, whose slot went to
    /// another already).
    pub fn release(&self, ticket: &Ticket) {
        let mut ledger = self.admission.lock().expect("admission lock");
        // Dropping the duplicate lets the socket close with the reactor's.
        ledger.waiting.remove(&ticket.token);
        give_back(&mut ledger, &self.connections, ticket);
    }

    /// Sockets holding a slot without having reached Connect.
    pub fn waiting_for_connect(&self) -> usize {
        self.admission.lock().expect("admission lock").waiting.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::TargetConfig;
    use std::net::{TcpListener, TcpStream};

    fn target(max: u32, per_source: u32) -> Arc<Target> {
        let mut cfg = TargetConfig::default();
        cfg.limits.max_connections = max;
        cfg.limits.max_connections_per_source = per_source;
        cfg.subsystems.push(crate::config::SubsystemConfig {
            nqn: "nqn.2026-01.io.numio:adm".into(),
            serial: "ADM".into(),
            model: "admission".into(),
            allowed_hosts: Vec::new(),
            allow_any_host: true,
            hosts: Vec::new(),
            namespaces: vec![crate::config::NamespaceConfig::new("mem:1M")],
        });
        Target::new(&cfg).unwrap()
    }

    #[test]
    fn one_source_gets_its_share_and_others_the_rest() {
        let t = target(5, 3);
        let (a, b): (IpAddr, IpAddr) = ("10.0.0.1".parse().unwrap(), "10.0.0.2".parse().unwrap());
        let mut held: Vec<_> = (0..3).map(|_| t.admit(a, None).unwrap().0).collect();
        assert_eq!(t.admit(a, None).unwrap_err(), Crowded::Source(3));
        let b1 = t.admit(b, None).unwrap().0;
        let _b2 = t.admit(b, None).unwrap().0;
        // No socket may be closed for room (none was given): refused.
        assert_eq!(t.admit(b, None).unwrap_err(), Crowded::Target(5));
        let a1 = held.pop().unwrap();
        t.release(&a1);
        t.release(&a1);
        assert_eq!(t.connections.load(Ordering::Acquire), 4, "released once");
        let _b3 = t.admit(b, None).unwrap().0;
        assert_eq!(t.admit(a, None).unwrap_err(), Crowded::Target(5));
        held.into_iter().for_each(|h| t.release(&h));
        t.release(&b1);
        assert!(
            !t.admission.lock().unwrap().by_source.contains_key(&a),
            "an idle source leaves no entry"
        );
        t.admit(a, None).unwrap();
        assert!(Crowded::Source(3)
            .to_string()
            .contains("max_connections_per_source = 3"));
        assert!(Crowded::Target(5)
            .to_string()
            .contains("max_connections = 5"));
    }

    #[test]
    fn the_oldest_socket_without_a_connect_makes_room() {
        let t = target(3, 3);
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let ip: IpAddr = "10.0.0.1".parse().unwrap();
        let other: IpAddr = "10.0.0.2".parse().unwrap();
        let mut peers = Vec::new();
        let mut tickets = Vec::new();
        for _ in 0..3 {
            let client = TcpStream::connect(l.local_addr().unwrap()).unwrap();
            let (server, _) = l.accept().unwrap();
            let (tk, ev) = t.admit(ip, Some(server.into())).unwrap();
            assert!(ev.is_none());
            peers.push(client);
            tickets.push(tk);
        }
        // The second reaches Connect: the first and third may make room.
        t.reached_connect(&tickets[1]);
        let (_new, ev) = t.admit(other, None).unwrap();
        assert_eq!(ev.map(|e| e.source), Some(ip));
        let mut b = [0u8; 1];
        use std::io::Read;
        assert_eq!(
            peers[0].read(&mut b).unwrap(),
            0,
            "the oldest was shut down"
        );
        // Its reactor's release later gives back nothing more.
        t.release(&tickets[0]);
        assert_eq!(t.connections.load(Ordering::Acquire), 3);
        let (_newer, ev) = t.admit(other, None).unwrap();
        assert!(ev.is_some(), "the third made room");
        assert_eq!(t.admit(other, None).unwrap_err(), Crowded::Target(3));
        assert_eq!(t.waiting_for_connect(), 0);
    }
}
