//! Writes larger than MAXH2CDATA: successive R2Ts of at most MAXH2CDATA, as
//! many outstanding as the host's MAXR2T allows, and strict checks of every
//! H2CData PDU against them.

mod common;

use common::*;
use nvme_spec::command::{io, SglDescriptor, SGL_TRANSPORT};
use nvme_spec::tcp::{self, fes, flags, pdu_type, Direction, Pdu};
use nvmf::host::command::rw_sqe;
use nvmf::{Initiator, InitiatorError, InitiatorOptions};

const CHUNK: u32 = 8192;

fn small_h2c_target() -> (nvmf::Server, std::net::SocketAddr) {
    let mut cfg = config(None);
    cfg.limits.max_h2c_data_bytes = CHUNK;
    start(&cfg)
}

fn with_max_r2t(n: u32) -> InitiatorOptions {
    let mut o = opts();
    o.max_r2t = n;
    o
}

/// Sends a 32 KiB R2T write (cid 7) and returns the R2Ts that came back
/// before anything else was sent: (offset, length, ttag).
fn post_write(q: &mut Initiator, expect_r2ts: usize) -> Vec<(u32, u32, u16)> {
    let mut sqe = rw_sqe(io::WRITE, 1, 64, 64);
    sqe.cid = 7;
    sqe.flags = 0x40;
    sqe.dptr = SglDescriptor {
        addr: 0,
        length: 64 * 512,
        rsvd: [0; 3],
        type_byte: SGL_TRANSPORT,
    };
    let b = capsule(&sqe, &q.framing());
    q.send_raw(&b).unwrap();
    (0..expect_r2ts).map(|_| next_r2t(q)).collect()
}

fn next_r2t(q: &mut Initiator) -> (u32, u32, u16) {
    let pdu = q.recv_pdu_bytes().unwrap();
    match tcp::decode(&pdu, Direction::ControllerToHost, &q.framing()).unwrap() {
        Pdu::R2t(h) => {
            assert_eq!(h.cccid, 7);
            (h.data_offset, h.data_length, h.ttag)
        }
        other => panic!("expected an R2T, got {other:?}"),
    }
}

/// Proves no further R2T was sent: a Flush's response is the next PDU.
fn assert_no_more_r2ts(q: &mut Initiator) {
    let mut sqe = rw_sqe(io::FLUSH, 1, 0, 1);
    sqe.cid = 99;
    let b = capsule(&sqe, &q.framing());
    q.send_raw(&b).unwrap();
    let pdu = q.recv_pdu_bytes().unwrap();
    match tcp::decode(&pdu, Direction::ControllerToHost, &q.framing()).unwrap() {
        Pdu::CapsuleResp(c) => assert_eq!(c.cid, 99),
        other => panic!("expected the Flush response, got {other:?}"),
    }
}

fn h2c(q: &mut Initiator, ttag: u16, off: u32, data: &[u8], last: bool) {
    let mut b = Vec::new();
    let fl = if last { flags::DATA_LAST } else { 0 };
    let body = tcp::data_body(7, ttag, off, data.len() as u32);
    tcp::frame(&mut b, pdu_type::H2C_DATA, fl, &body, data, &q.framing());
    q.send_raw(&b).unwrap();
}

fn expect_success(q: &mut Initiator) {
    let pdu = q.recv_pdu_bytes().unwrap();
    match tcp::decode(&pdu, Direction::ControllerToHost, &q.framing()).unwrap() {
        Pdu::CapsuleResp(c) => assert!(c.status().is_success(), "{:?}", c.status()),
        other => panic!("expected the response, got {other:?}"),
    }
}

fn expect_term(q: &mut Initiator, want_fes: u16, want_fei: u32) {
    match q.recv_pdu_bytes() {
        Err(InitiatorError::Terminated { fes, fei }) => {
            assert_eq!((fes, fei), (want_fes, want_fei))
        }
        other => panic!("expected C2HTermReq, got {other:?}"),
    }
}

#[test]
fn one_outstanding_r2t_at_a_time_when_maxr2t_is_zero() {
    let (srv, addr) = small_h2c_target();
    let (_a, mut q) = controller(addr, &opts());
    assert_eq!(q.maxh2cdata, CHUNK);
    let data = pattern(3, 32768);
    let first = post_write(&mut q, 1);
    assert_eq!(first, vec![(0, CHUNK, first[0].2)]);
    assert_no_more_r2ts(&mut q);
    let ttag = first[0].2;
    for k in 0..4u32 {
        let off = k * CHUNK;
        // Each R2T's data in two PDUs.
        let half = (CHUNK / 2) as usize;
        h2c(
            &mut q,
            ttag,
            off,
            &data[off as usize..off as usize + half],
            false,
        );
        h2c(
            &mut q,
            ttag,
            off + CHUNK / 2,
            &data[off as usize + half..(off + CHUNK) as usize],
            true,
        );
        if k < 3 {
            assert_eq!(
                next_r2t(&mut q),
                (off + CHUNK, CHUNK, ttag),
                "R2T {}",
                k + 1
            );
        }
    }
    expect_success(&mut q);
    assert_eq!(q.read(1, 64, 64).unwrap(), data);
    srv.stop().unwrap();
}

#[test]
fn several_outstanding_r2ts_when_the_host_allows_them() {
    let (srv, addr) = small_h2c_target();
    let (_a, mut q) = controller(addr, &with_max_r2t(1));
    let data = pattern(4, 32768);
    let r2ts = post_write(&mut q, 2);
    let ttag = r2ts[0].2;
    assert_eq!(r2ts, vec![(0, CHUNK, ttag), (CHUNK, CHUNK, ttag)]);
    assert_no_more_r2ts(&mut q);
    h2c(&mut q, ttag, 0, &data[..CHUNK as usize], true);
    assert_eq!(next_r2t(&mut q), (2 * CHUNK, CHUNK, ttag));
    assert_no_more_r2ts(&mut q);
    h2c(
        &mut q,
        ttag,
        CHUNK,
        &data[CHUNK as usize..2 * CHUNK as usize],
        true,
    );
    assert_eq!(next_r2t(&mut q), (3 * CHUNK, CHUNK, ttag));
    h2c(
        &mut q,
        ttag,
        2 * CHUNK,
        &data[2 * CHUNK as usize..3 * CHUNK as usize],
        true,
    );
    h2c(&mut q, ttag, 3 * CHUNK, &data[3 * CHUNK as usize..], true);
    expect_success(&mut q);
    assert_eq!(q.read(1, 64, 64).unwrap(), data);
    srv.stop().unwrap();
}

#[test]
fn large_writes_through_the_initiator_with_any_maxr2t() {
    let (srv, addr) = small_h2c_target();
    for max_r2t in [0, 3, 31] {
        let (_a, mut q) = controller(addr, &with_max_r2t(max_r2t));
        // Up to MDTS (1 MiB = 128 R2Ts of 8 KiB), 8 commands in flight.
        for (i, n) in [1usize << 20, 40960, 12288, 1 << 19]
            .into_iter()
            .enumerate()
        {
            let slba = (i as u64) * 2048;
            let d = pattern(max_r2t * 10 + i as u32, n);
            q.post(rw_sqe(io::WRITE, 1, slba, (n / 512) as u32), d, 0)
                .unwrap();
        }
        while q.in_flight() > 0 {
            assert!(q.reap().unwrap().cqe.status().is_success());
        }
        for (i, n) in [1usize << 20, 40960, 12288, 1 << 19]
            .into_iter()
            .enumerate()
        {
            let slba = (i as u64) * 2048;
            let got = q.read(1, slba, (n / 512) as u32).unwrap();
            assert!(
                got == pattern(max_r2t * 10 + i as u32, n),
                "write {i} maxr2t {max_r2t}"
            );
        }
    }
    srv.stop().unwrap();
}

#[test]
fn h2c_data_must_follow_its_r2t() {
    let (srv, addr) = small_h2c_target();
    let d = vec![9u8; CHUNK as usize];
    // Data beyond the outstanding R2T (offset of the next, not yet sent).
    let (_a, mut q) = controller(addr, &opts());
    let ttag = post_write(&mut q, 1)[0].2;
    h2c(&mut q, ttag, CHUNK, &d, true);
    expect_term(&mut q, fes::DATA_OUT_OF_RANGE, 12);
    // A PDU that runs past the end of its R2T.
    let (_a, mut q) = controller(addr, &opts());
    let ttag = post_write(&mut q, 1)[0].2;
    h2c(&mut q, ttag, 0, &d[..4096], false);
    h2c(&mut q, ttag, 4096, &d, true);
    expect_term(&mut q, fes::DATA_OUT_OF_RANGE, 16);
    // Out of order: the second R2T's data before the first's.
    let (_a, mut q) = controller(addr, &with_max_r2t(1));
    let ttag = post_write(&mut q, 2)[0].2;
    h2c(&mut q, ttag, CHUNK, &d, true);
    expect_term(&mut q, fes::DATA_OUT_OF_RANGE, 12);
    // A transfer tag that names another slot.
    let (_a, mut q) = controller(addr, &opts());
    let ttag = post_write(&mut q, 1)[0].2;
    h2c(&mut q, ttag + 1, 0, &d, true);
    expect_term(&mut q, fes::PDU_SEQUENCE_ERROR, 0);
    // A transfer tag beyond every slot.
    let (_a, mut q) = controller(addr, &opts());
    post_write(&mut q, 1);
    h2c(&mut q, 0xFFFF, 0, &d, true);
    expect_term(&mut q, fes::INVALID_HEADER_FIELD, 10);
    // The target keeps serving.
    let (_a, mut q) = controller(addr, &opts());
    q.write(1, 0, &pattern(1, 65536)).unwrap();
    assert_eq!(q.read(1, 0, 128).unwrap(), pattern(1, 65536));
    srv.stop().unwrap();
}

/// A capsule reusing the command id of a write still waiting for its data
/// is a Command ID Conflict (only an outstanding AER's id may be reused:
/// `async_events.rs`).
#[test]
fn a_command_reusing_a_busy_id_is_a_conflict() {
    let (_s, addr) = small_h2c_target();
    let (_a, mut q) = controller(addr, &opts());
    post_write(&mut q, 1);
    let mut sqe = rw_sqe(io::FLUSH, 1, 0, 1);
    sqe.cid = 7;
    q.send_raw(&capsule(&sqe, &q.framing())).unwrap();
    let pdu = q.recv_pdu_bytes().unwrap();
    match tcp::decode(&pdu, Direction::ControllerToHost, &q.framing()).unwrap() {
        Pdu::CapsuleResp(c) => {
            assert_eq!(c.cid, 7);
            assert_eq!(c.status(), nvme_spec::Status::CID_CONFLICT);
        }
        other => panic!("expected the conflict's response, got {other:?}"),
    }
}
