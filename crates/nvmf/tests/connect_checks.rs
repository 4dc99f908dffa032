//! What a Connect must match exactly, and what a refused one leaves
//! behind: NQNs byte for byte (a trailing space is another NQN), the Host
//! ID of an I/O queue's controller, and no open socket after the refusal's
//! response (issue #20: refused sockets filled every connection slot).

mod common;

use common::*;
use nvmf::{Initiator, InitiatorOptions};

fn o(hostnqn: &str, hostid: u8) -> InitiatorOptions {
    InitiatorOptions {
        hostnqn: hostnqn.into(),
        hostid: [hostid; 16],
        timeout: LONG,
        ..Default::default()
    }
}

/// Connects, expects the refusal with `sc`, then the socket closed by the
/// target (the event: EOF, not a timeout).
fn refused(
    addr: std::net::SocketAddr,
    opts: &InitiatorOptions,
    subnqn: &str,
    qid: u16,
    cntlid: u16,
    sc: &str,
) {
    let mut i = Initiator::open(addr, opts).expect("ICReq/ICResp");
    let e = i
        .fabrics_connect(subnqn, qid, cntlid)
        .expect_err("Connect refused");
    assert!(e.to_string().contains(sc), "want {sc}: {e}");
    expect_closed(&mut i, "the refused connection");
}

#[test]
fn nqns_match_exactly_and_refused_sockets_close() {
    let (s, addr) = start(&config(Some(HOST)));
    // An allowed NQN plus a space is another host: Connect Invalid Host.
    refused(addr, &o(&format!("{HOST} "), 1), NQN, 0, 0xFFFF, "sc=0x84");
    // A subsystem NQN plus a space names no subsystem: Invalid Parameters.
    refused(addr, &o(HOST, 1), &format!("{NQN} "), 0, 0xFFFF, "sc=0x82");
    // The exact NQNs connect.
    let mut a = Initiator::connect_admin(addr, NQN, &o(HOST, 1)).expect("exact NQNs");
    a.enable().unwrap();
    drop(a);
    s.stop().unwrap();
}

/// An empty host NQN (SPDK's perf sends one unless told `hostnqn:`): a
/// subsystem open to any host admits it, as Linux nvmet and SPDK's target
/// do; one that lists its hosts refuses it as an invalid host.
#[test]
fn an_empty_host_nqn_is_admitted_only_where_any_host_is() {
    let (open, addr) = start(&config(None));
    let mut a =
        Initiator::connect_admin(addr, NQN, &o("", 1)).expect("anonymous host, open subsystem");
    a.enable().unwrap();
    drop(a);
    open.stop().unwrap();
    let (listed, addr) = start(&config(Some(HOST)));
    refused(addr, &o("", 1), NQN, 0, 0xFFFF, "sc=0x84");
    listed.stop().unwrap();
}

#[test]
fn an_io_queue_with_another_host_id_is_refused() {
    let (s, addr) = start(&config(Some(HOST)));
    let mut a = Initiator::connect_admin(addr, NQN, &o(HOST, 1)).unwrap();
    a.enable().unwrap();
    let nq = a
        .set_features(nvme_spec::features::fid::NUM_QUEUES, 0x0001_0001)
        .unwrap();
    assert!(nq.cqe.status().is_success());
    // Same host NQN and controller id, another Host ID: not this host's.
    refused(addr, &o(HOST, 2), NQN, 1, a.cntlid, "sc=0x82");
    // The controller's own Host ID gets its queue.
    Initiator::connect_io(addr, NQN, a.cntlid, 1, &o(HOST, 1)).expect("same Host ID");
    s.stop().unwrap();
}

/// A TCP connection to `to` from local address `from` (a second loopback
/// address stands for another host).
fn connect_from(from: &str, to: std::net::SocketAddr) -> std::net::TcpStream {
    use rustix::net::{bind, connect, socket, AddressFamily, SocketType};
    let fd = socket(AddressFamily::INET, SocketType::STREAM, None).unwrap();
    let local: std::net::SocketAddr = format!("{from}:0").parse().unwrap();
    bind(&fd, &local).unwrap();
    connect(&fd, &to).unwrap();
    std::net::TcpStream::from(fd)
}

/// Reads until the target closes the socket (EOF or reset: the event).
fn wait_closed(mut s: std::net::TcpStream, what: &str) {
    use std::io::Read;
    s.set_read_timeout(Some(LONG)).unwrap();
    let mut b = [0u8; 256];
    loop {
        match s.read(&mut b) {
            Ok(0) => return,
            Ok(_) => continue,
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return,
            Err(e) => panic!("{what}: expected the target to close it, got {e}"),
        }
    }
}

#[test]
fn sockets_that_send_no_icreq_or_no_connect_are_closed() {
    let (s, addr) = start(&config(Some(HOST)));
    // Silent from the start: closed after the ICReq deadline.
    let silent = std::net::TcpStream::connect(addr).unwrap();
    // ICReq answered, then no Connect: closed after the Connect deadline.
    let mut half = Initiator::open(addr, &o(HOST, 1)).expect("ICReq/ICResp");
    wait_closed(silent, "a socket that sent nothing");
    expect_closed(&mut half, "a queue that never sent Connect");
    wait_for(&s.target, "both slots given back", |t| {
        t.connections.load(std::sync::atomic::Ordering::Acquire) == 0
    });
    s.stop().unwrap();
}

/// A plain ICReq (no digests, alignment 0, one R2T).
fn icreq() -> [u8; 128] {
    let mut b = [0u8; 128];
    b[2] = 128; // HLEN
    b[4] = 128; // PLEN
    b
}

/// Whether the target answers `s`'s ICReq with an ICResp (PDU type 01h).
fn answered(s: &mut std::net::TcpStream) -> bool {
    use std::io::{Read, Write};
    s.set_read_timeout(Some(LONG)).unwrap();
    if s.write_all(&icreq()).is_err() {
        return false;
    }
    let mut b = [0u8; 128];
    s.read_exact(&mut b).is_ok() && b[0] == 0x01
}

#[test]
fn one_source_holds_its_share_and_another_address_is_served() {
    let mut c = config(None);
    c.limits.max_connections = 8;
    c.limits.max_connections_per_source = 4;
    let (s, addr) = start(&c);
    // Four queues of 127.0.0.1 that answered ICReq (they stay until the
    // Connect deadline).
    let held: Vec<_> = (0..4)
        .map(|_| {
            let mut h = connect_from("127.0.0.1", addr);
            assert!(answered(&mut h), "within its share");
            h
        })
        .collect();
    // The fifth from the same address is closed unanswered.
    let mut fifth = connect_from("127.0.0.1", addr);
    assert!(!answered(&mut fifth), "past its address's share");
    // Another address is served meanwhile.
    let mut other = connect_from("127.0.0.2", addr);
    assert!(answered(&mut other), "another address keeps its share");
    drop(held);
    wait_for(&s.target, "the held sockets given back", |t| {
        t.connections.load(std::sync::atomic::Ordering::Acquire) <= 1
    });
    let mut back = connect_from("127.0.0.1", addr);
    assert!(answered(&mut back), "served once its sockets are gone");
    s.stop().unwrap();
}
