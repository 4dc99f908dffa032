//! Connection slots that idle sockets cannot hold (issue 38): five
//! addresses each holding their share of silent sockets fill every slot,
//! and a good host from a sixth address still connects and reads: the
//! oldest socket that has not reached Connect is closed to make room.
//! Linux only (127.0.0.x sources).

mod common;

use std::io::Read;
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::sync::atomic::Ordering::Acquire;

use common::*;
use nvmf::tgt::counters::Refused;

const PER_SOURCE: u32 = 4;
const SOURCES: u32 = 5;

/// A TCP connection to `to` from local address `from`.
fn connect_from(from: Ipv4Addr, to: SocketAddr) -> TcpStream {
    use rustix::net::{bind, connect, socket, AddressFamily, SocketType};
    let fd = socket(AddressFamily::INET, SocketType::STREAM, None).expect("socket");
    bind(&fd, &SocketAddr::from((from, 0))).expect("bind a loopback source");
    connect(&fd, &to).unwrap_or_else(|e| panic!("connect from {from}: {e}"));
    TcpStream::from(fd)
}

fn refused(t: &nvmf::tgt::subsystem::Target, why: Refused) -> u64 {
    t.refusals.snapshot()[why as usize].1
}

/// Regression: five addresses x their share of idle sockets took every
/// slot and a good host got no session (issue 38).
#[test]
fn a_host_from_a_sixth_address_connects_while_five_hold_their_share_of_idle_sockets() {
    let mut cfg = config(None);
    cfg.limits.max_connections = PER_SOURCE * SOURCES;
    cfg.limits.max_connections_per_source = PER_SOURCE;
    let (s, addr) = start(&cfg);
    let t = &s.target;
    let mut idle = Vec::new();
    for host in 2..2 + SOURCES {
        for _ in 0..PER_SOURCE {
            idle.push(connect_from(Ipv4Addr::new(127, 0, 0, host as u8), addr));
            // Admitted in this order: the acceptor takes each before the next.
            let n = idle.len() as u32;
            wait_for(t, "the idle socket admitted", |t| {
                t.connections.load(Acquire) == n
            });
        }
    }
    // Every slot is held by a socket that never sent a byte; the good host
    // (from 127.0.0.1) connects an admin and an I/O queue and reads.
    let (_admin, mut io) = controller(addr, &opts());
    assert_eq!(io.read(1, 0, 8).expect("the good host reads").len(), 4096);
    assert_eq!(
        refused(t, Refused::Evicted),
        2,
        "two idle sockets made room"
    );
    assert_eq!(t.connections.load(Acquire), PER_SOURCE * SOURCES);
    // The two oldest idle sockets were the ones closed, unanswered.
    for (i, sock) in idle.iter_mut().enumerate().take(2) {
        let mut b = [0u8; 8];
        assert_eq!(sock.read(&mut b).expect("EOF"), 0, "idle socket {i} closed");
    }
    // One more from a full source is refused: its own share is full, and
    // it may not take another source's slot.
    let mut extra = connect_from(Ipv4Addr::new(127, 0, 0, 3), addr);
    wait_for(t, "the source's extra socket refused", |t| {
        refused(t, Refused::SourceLimit) == 1
    });
    assert_eq!(
        extra.read(&mut [0u8; 8]).expect("EOF"),
        0,
        "refused at once"
    );
    assert_eq!(refused(t, Refused::Evicted), 2, "no eviction for it");
    s.stop().unwrap();
}

/// A host retrying Connect past `max_controllers` in a loop is refused and
/// counted each time, but its "controller limit reached" lines are rate
/// limited: one window's worth printed, the rest held back (issue 38: every
/// refusal printed a line).
#[test]
fn controller_limit_lines_are_rate_limited() {
    use nvme_spec::Status;
    use nvmf::tgt::log_limit::LINES_PER_WINDOW;
    use nvmf::{Initiator, InitiatorError};
    let mut cfg = config(None);
    cfg.limits.max_controllers = 1;
    let (s, addr) = start(&cfg);
    let t = &s.target;
    let (_admin, _io) = controller(addr, &opts());
    let n = u64::from(LINES_PER_WINDOW) + 5;
    for _ in 0..n {
        match Initiator::connect_admin(addr, NQN, &opts()) {
            Err(InitiatorError::Command { status, .. }) => {
                assert_eq!(status, Status::CONNECT_CTRL_BUSY)
            }
            Err(e) => panic!("expected Controller Busy, got {e}"),
            Ok(_) => panic!("a second controller past max_controllers = 1"),
        }
    }
    assert_eq!(refused(t, Refused::Busy), n, "every refusal counted");
    assert_one_window_printed(&t.refusal_log, 5);
}
