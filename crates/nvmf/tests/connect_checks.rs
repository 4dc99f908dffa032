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
