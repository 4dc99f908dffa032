//! Protocol violations get a C2HTermReq with the right FES/FEI and a close;
//! vanished hosts, expired keep alives and shutdown leak nothing.

mod common;

use std::io::Read;
use std::net::TcpStream;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use common::*;
use nvme_spec::command::{io, SglDescriptor, SGL_TRANSPORT};
use nvme_spec::tcp::{self, fes, flags, pdu_type, Direction, Framing, Pdu};
use nvme_spec::Sqe;
use nvmf::host::command::rw_sqe;
use nvmf::{Initiator, InitiatorError};

fn expect_term(q: &mut Initiator, want_fes: u16, want_fei: u32) {
    match q.recv_pdu_bytes() {
        Err(InitiatorError::Terminated { fes, fei }) => {
            assert_eq!((fes, fei), (want_fes, want_fei))
        }
        other => panic!("expected C2HTermReq, got {other:?}"),
    }
    // Then the target closes the connection.
    assert!(q.recv_pdu_bytes().is_err());
}

fn write_capsule_r2t(cid: u16, nsid: u32, slba: u64, nlb: u32) -> Sqe {
    let mut s = rw_sqe(io::WRITE, nsid, slba, nlb);
    s.cid = cid;
    s.flags = 0x40;
    s.dptr = SglDescriptor {
        addr: 0,
        length: nlb * 512,
        rsvd: [0; 3],
        type_byte: SGL_TRANSPORT,
    };
    s
}

#[test]
fn capsule_before_icreq_is_a_sequence_error() {
    let (srv, addr) = start(&config(None));
    let mut s = TcpStream::connect(addr).unwrap();
    let mut b = Vec::new();
    tcp::frame(
        &mut b,
        pdu_type::CAPSULE_CMD,
        0,
        &Sqe::default().encode(),
        &[],
        &Framing::INITIAL,
    );
    std::io::Write::write_all(&mut s, &b).unwrap();
    let mut resp = vec![0u8; 24 + 72];
    s.read_exact(&mut resp).unwrap();
    match tcp::decode(&resp, Direction::ControllerToHost, &Framing::INITIAL).unwrap() {
        Pdu::TermReq { hdr, quoted } => {
            assert_eq!(hdr.ch.pdu_type, pdu_type::C2H_TERM_REQ);
            assert_eq!(hdr.fes, fes::PDU_SEQUENCE_ERROR);
            assert_eq!(quoted, &b[..72], "the offending header is quoted");
        }
        p => panic!("{p:?}"),
    }
    assert_eq!(
        s.read(&mut [0u8; 1]).unwrap(),
        0,
        "closed after the TermReq"
    );
    srv.stop().unwrap();
}

#[test]
fn malformed_headers_get_term_req_with_fes_and_fei() {
    let (srv, addr) = start(&config(None));
    let sqe = Sqe::default().encode();
    // (byte to corrupt, value, FES, FEI)
    let cases = [
        (0usize, 0x08u8, fes::INVALID_HEADER_FIELD, 0u32), // unknown PDU type
        (2, 64, fes::INVALID_HEADER_FIELD, 2),             // HLEN
        (1, flags::HDGST, fes::INVALID_HEADER_FIELD, 1),   // digest not negotiated
        (3, 8, fes::INVALID_HEADER_FIELD, 3),              // PDO inside the header
    ];
    for (off, val, want_fes, want_fei) in cases {
        let mut q = Initiator::open(addr, &opts()).unwrap();
        let mut b = Vec::new();
        tcp::frame(
            &mut b,
            pdu_type::CAPSULE_CMD,
            0,
            &sqe,
            &[0; 16],
            &Framing::INITIAL,
        );
        b[off] = val;
        q.send_raw(&b).unwrap();
        expect_term(&mut q, want_fes, want_fei);
    }
    // A second ICReq is out of sequence.
    let mut q = Initiator::open(addr, &opts()).unwrap();
    let mut b = Vec::new();
    tcp::frame(
        &mut b,
        pdu_type::IC_REQ,
        0,
        &tcp::icreq_body(0, 0, 0),
        &[],
        &Framing::INITIAL,
    );
    q.send_raw(&b).unwrap();
    expect_term(&mut q, fes::PDU_SEQUENCE_ERROR, 0);
    // PLEN beyond the connection's PDU limit.
    let mut q = Initiator::open(addr, &opts()).unwrap();
    let mut b = Vec::new();
    tcp::frame(
        &mut b,
        pdu_type::CAPSULE_CMD,
        0,
        &sqe,
        &[],
        &Framing::INITIAL,
    );
    b[4..8].copy_from_slice(&(64u32 << 20).to_le_bytes());
    q.send_raw(&b).unwrap();
    expect_term(&mut q, fes::INVALID_HEADER_FIELD, 4);
    srv.stop().unwrap();
}

#[test]
fn icreq_with_unsupported_version_is_refused() {
    let (srv, addr) = start(&config(None));
    let mut s = TcpStream::connect(addr).unwrap();
    let mut b = Vec::new();
    tcp::frame(
        &mut b,
        pdu_type::IC_REQ,
        0,
        &tcp::icreq_body(0, 0, 0),
        &[],
        &Framing::INITIAL,
    );
    b[8] = 9;
    std::io::Write::write_all(&mut s, &b).unwrap();
    let mut resp = vec![0u8; 24 + 128];
    s.read_exact(&mut resp).unwrap();
    assert_eq!(
        (resp[0], resp[8], resp[10]),
        (pdu_type::C2H_TERM_REQ, fes::UNSUPPORTED_PARAMETER as u8, 8)
    );
    // The target keeps serving.
    let (_a, mut io) = controller(addr, &opts());
    io.write(1, 0, &pattern(1, 512)).unwrap();
    srv.stop().unwrap();
}

#[test]
fn h2c_data_without_r2t_is_a_sequence_error() {
    let (srv, addr) = start(&config(None));
    let (_a, mut q) = controller(addr, &opts());
    let mut b = Vec::new();
    tcp::frame(
        &mut b,
        pdu_type::H2C_DATA,
        flags::DATA_LAST,
        &tcp::data_body(1, 3, 0, 512),
        &[0; 512],
        &q.framing(),
    );
    q.send_raw(&b).unwrap();
    expect_term(&mut q, fes::PDU_SEQUENCE_ERROR, 0);
    srv.stop().unwrap();
}

#[test]
fn h2c_data_outside_the_r2t_is_out_of_range() {
    let (srv, addr) = start(&config(None));
    let (_a, mut q) = controller(addr, &opts());
    let mut b = Vec::new();
    tcp::frame(
        &mut b,
        pdu_type::CAPSULE_CMD,
        0,
        &write_capsule_r2t(9, 1, 0, 1).encode(),
        &[],
        &q.framing(),
    );
    q.send_raw(&b).unwrap();
    let r2t = q.recv_pdu_bytes().unwrap();
    let Pdu::R2t(h) = tcp::decode(&r2t, Direction::ControllerToHost, &q.framing()).unwrap() else {
        panic!("expected R2T");
    };
    assert_eq!((h.cccid, h.data_offset, h.data_length), (9, 0, 512));
    let mut b = Vec::new();
    tcp::frame(
        &mut b,
        pdu_type::H2C_DATA,
        0,
        &tcp::data_body(9, h.ttag, 512, 512),
        &[0; 512],
        &q.framing(),
    );
    q.send_raw(&b).unwrap();
    expect_term(&mut q, fes::DATA_OUT_OF_RANGE, 12);
    srv.stop().unwrap();
}

fn digest_opts() -> nvmf::InitiatorOptions {
    let mut o = opts();
    o.header_digest = true;
    o.data_digest = true;
    o
}

#[test]
fn header_digest_error_terminates() {
    let (srv, addr) = start(&config(None));
    let o = digest_opts();
    let (_a, mut q) = controller(addr, &o);
    let mut b = Vec::new();
    tcp::frame(
        &mut b,
        pdu_type::CAPSULE_CMD,
        0,
        &rw_sqe(io::FLUSH, 1, 0, 1).encode(),
        &[],
        &q.framing(),
    );
    b[72] ^= 0xFF;
    let sent = u32::from_le_bytes(b[72..76].try_into().unwrap());
    q.send_raw(&b).unwrap();
    expect_term(&mut q, fes::HEADER_DIGEST_ERROR, sent);
    srv.stop().unwrap();
}

#[test]
fn data_digest_error_fails_only_the_command() {
    let (srv, addr) = start(&config(None));
    let (_a, mut q) = controller(addr, &digest_opts());
    let mut sqe = rw_sqe(io::WRITE, 1, 0, 1);
    sqe.flags = 0x40;
    sqe.cid = 5;
    sqe.dptr = SglDescriptor {
        addr: 0,
        length: 512,
        rsvd: [0; 3],
        type_byte: nvme_spec::command::SGL_IN_CAPSULE,
    };
    let mut b = Vec::new();
    tcp::frame(
        &mut b,
        pdu_type::CAPSULE_CMD,
        0,
        &sqe.encode(),
        &[0xAA; 512],
        &q.framing(),
    );
    let n = b.len();
    b[n - 1] ^= 1;
    q.send_raw(&b).unwrap();
    let resp = q.recv_pdu_bytes().unwrap();
    let Pdu::CapsuleResp(cqe) =
        tcp::decode(&resp, Direction::ControllerToHost, &q.framing()).unwrap()
    else {
        panic!("expected a response");
    };
    assert_eq!(cqe.status(), nvme_spec::Status::TRANSIENT_TRANSPORT);
    assert_ne!(
        q.read(1, 0, 1).unwrap(),
        vec![0xAA; 512],
        "the corrupted write was not applied"
    );
    srv.stop().unwrap();
}

#[test]
fn host_vanishing_mid_io_leaks_nothing() {
    let (srv, addr) = start(&config(None));
    for round in 0..5u16 {
        let (a, mut q) = controller(addr, &opts());
        // A write waiting for its data when the host disappears.
        let mut b = Vec::new();
        tcp::frame(
            &mut b,
            pdu_type::CAPSULE_CMD,
            0,
            &write_capsule_r2t(round + 1, 1, 0, 128).encode(),
            &[],
            &q.framing(),
        );
        q.send_raw(&b).unwrap();
        assert!(q.recv_pdu_bytes().is_ok(), "R2T");
        // Half of the data, then gone.
        let mut b = Vec::new();
        tcp::frame(
            &mut b,
            pdu_type::H2C_DATA,
            0,
            &tcp::data_body(round + 1, 0, 0, 4096),
            &[1; 4096],
            &q.framing(),
        );
        q.send_raw(&b).unwrap();
        drop(q);
        drop(a);
    }
    let t = srv.target.clone();
    wait_for(&t, "connections released", |t| {
        t.connections.load(Ordering::Acquire) == 0
    });
    wait_for(&t, "controllers destroyed", |t| t.controller_count() == 0);
    // The namespace never saw the partial write, and the target still serves.
    let (_a, mut q) = controller(addr, &opts());
    assert_eq!(q.read(1, 0, 8).unwrap(), vec![0u8; 4096]);
    srv.stop().unwrap();
}

#[test]
fn keep_alive_timeout_tears_the_controller_down() {
    const KATO: Duration = Duration::from_millis(1000);
    let (srv, addr) = start(&config(None));
    let mut o = opts();
    o.kato_ms = KATO.as_millis() as u32;
    o.timeout = LONG;
    let (mut a, mut q) = controller(addr, &o);
    // Keep-alives back to back for twice the timeout: each restarts it, so
    // the controller lives on (only a host stalled for the whole timeout
    // between two of them could lose it).
    let t0 = Instant::now();
    while t0.elapsed() < 2 * KATO {
        a.keep_alive().unwrap();
    }
    assert_eq!(srv.target.controller_count(), 1, "kept alive");
    // Then silence: the target closes the admin queue once the timeout
    // expires (the event waited for, bounded by the read timeout).
    expect_closed(&mut a, "the admin queue");
    assert!(a.keep_alive().is_err(), "admin queue closed after KATO");
    // I/O queues go with the controller.
    expect_closed(&mut q, "the I/O queue");
    assert!(q.read(1, 0, 1).is_err());
    wait_for(&srv.target, "controller destroyed", |t| {
        t.controller_count() == 0
    });
    srv.stop().unwrap();
}

#[test]
fn connect_limits_are_enforced() {
    let mut cfg = config(None);
    cfg.limits.max_io_queues = 2;
    let (srv, addr) = start(&cfg);
    let mut a = Initiator::connect_admin(addr, NQN, &opts()).unwrap();
    a.enable().unwrap();
    let granted = a
        .set_features(nvme_spec::features::fid::NUM_QUEUES, 0x0007_0007)
        .unwrap();
    assert_eq!(
        granted.cqe.result, 0x0001_0001,
        "8 asked, 2 granted (zero-based)"
    );
    let refused =
        |r: Result<Initiator, InitiatorError>| matches!(r, Err(InitiatorError::Command { .. }));
    assert!(
        refused(Initiator::connect_io(addr, NQN, a.cntlid, 3, &opts())),
        "qid above granted"
    );
    let mut big = opts();
    big.queue_entries = 1024;
    assert!(
        refused(Initiator::connect_io(addr, NQN, a.cntlid, 1, &big)),
        "queue deeper than the limit"
    );
    assert!(
        refused(Initiator::connect_io(addr, NQN, 999, 1, &opts())),
        "unknown controller"
    );
    let _q1 = Initiator::connect_io(addr, NQN, a.cntlid, 1, &opts()).unwrap();
    assert!(
        refused(Initiator::connect_io(addr, NQN, a.cntlid, 1, &opts())),
        "qid already connected"
    );
    srv.stop().unwrap();
}

// Regression: draining closed the admin queue first, which tore the controller
// down and dropped the I/O queue whose write was still waiting for data.
#[test]
fn shutdown_completes_in_flight_writes_and_flushes() {
    let (srv, addr) = start(&config(None));
    let (_a, mut q) = controller(addr, &opts());
    let mut b = Vec::new();
    tcp::frame(
        &mut b,
        pdu_type::CAPSULE_CMD,
        0,
        &write_capsule_r2t(77, 1, 40, 8).encode(),
        &[],
        &q.framing(),
    );
    q.send_raw(&b).unwrap();
    let r2t = q.recv_pdu_bytes().unwrap();
    let Pdu::R2t(h) = tcp::decode(&r2t, Direction::ControllerToHost, &q.framing()).unwrap() else {
        panic!("expected R2T");
    };
    // Two idle queues (ICReq only), one per reactor of the two: a reactor
    // closes those as soon as it sees the shutdown, so their closing says
    // each has made its drain decisions before the write's data arrives.
    let idle: Vec<Initiator> = (0..2)
        .map(|_| {
            let mut o = opts();
            o.timeout = LONG;
            Initiator::open(addr, &o).unwrap()
        })
        .collect();
    let target = srv.target.clone();
    let stopper = std::thread::spawn(move || srv.stop());
    for mut i in idle {
        expect_closed(&mut i, "an idle queue at shutdown");
    }
    let data = pattern(77, 4096);
    let mut b = Vec::new();
    tcp::frame(
        &mut b,
        pdu_type::H2C_DATA,
        flags::DATA_LAST,
        &tcp::data_body(77, h.ttag, 0, 4096),
        &data,
        &q.framing(),
    );
    q.send_raw(&b).unwrap();
    let resp = q.recv_pdu_bytes().unwrap();
    let Pdu::CapsuleResp(cqe) =
        tcp::decode(&resp, Direction::ControllerToHost, &q.framing()).unwrap()
    else {
        panic!("expected the write's completion");
    };
    assert!(cqe.status().is_success());
    stopper.join().unwrap().unwrap();
    let mut back = vec![0u8; 4096];
    target.subsystems[0]
        .namespace(1)
        .unwrap()
        .read(40, &mut back)
        .unwrap();
    assert_eq!(back, data);
    assert!(q.recv_pdu_bytes().is_err(), "connection closed at shutdown");
}

#[test]
fn h2c_data_above_maxh2cdata_is_a_data_limit_error() {
    let (srv, addr) = start(&config(None));
    let (_a, mut q) = controller(addr, &opts());
    let max = q.maxh2cdata as usize;
    let mut b = Vec::new();
    let sqe = write_capsule_r2t(4, 1, 0, 1024);
    tcp::frame(
        &mut b,
        pdu_type::CAPSULE_CMD,
        0,
        &sqe.encode(),
        &[],
        &q.framing(),
    );
    q.send_raw(&b).unwrap();
    let r2t = q.recv_pdu_bytes().unwrap();
    let Pdu::R2t(h) = tcp::decode(&r2t, Direction::ControllerToHost, &q.framing()).unwrap() else {
        panic!("expected R2T");
    };
    assert_eq!(h.data_length as usize, max, "R2Ts of at most MAXH2CDATA");
    let mut b = Vec::new();
    let n = max + 64;
    let body = tcp::data_body(4, h.ttag, 0, n as u32);
    tcp::frame(
        &mut b,
        pdu_type::H2C_DATA,
        0,
        &body,
        &vec![0; n],
        &q.framing(),
    );
    q.send_raw(&b).unwrap();
    expect_term(&mut q, fes::DATA_LIMIT_EXCEEDED, 0);
    srv.stop().unwrap();
}
