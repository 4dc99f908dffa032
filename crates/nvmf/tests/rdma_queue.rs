//! The NVMe/RDMA transport mapping without verbs: a host's command
//! capsules with keyed SGLs and in-capsule data go through `RdmaQueue`;
//! its RDMA READs and WRITEs are carried out against a fake host memory
//! here, and its SENDs decoded. Connect, Identify (keyed SGLs advertised
//! only on RDMA ports), writes by RDMA READ in several chunks, reads by
//! RDMA WRITE, in-capsule writes, invalidation, the connect request checks.

mod common;

use std::collections::HashMap;

use nvme_spec::command::{admin, io, SglDescriptor, SGL_IN_CAPSULE};
use nvme_spec::fabrics::{ConnectCmd, ConnectData, CNTLID_DYNAMIC};
use nvme_spec::identify::IdentifyController;
use nvme_spec::rdma::{CmRequest, KeyedSgl, RejectStatus, SGLS_KEYED};
use nvme_spec::{Cqe, Sqe};
use nvmf::host::command::rw_sqe;
use nvmf::tgt::port::Transport;
use nvmf::tgt::queue::Connection;
use nvmf::tgt::rdma_queue::{Post, RdmaQueue};
use nvmf::TargetConfig;

const NQN: &str = "nqn.2026-01.io.numio:rdma";
const HOST: &str = "nqn.2026-01.io.numio:host";
const STAGE: u32 = 128 * 1024;

/// The host side: its memory regions by key, and responses by cid.
#[derive(Default)]
struct FakeHost {
    mem: HashMap<u32, Vec<u8>>,
    next_key: u32,
    responses: HashMap<u16, (Cqe, Option<u32>)>,
}

impl FakeHost {
    fn region(&mut self, bytes: Vec<u8>) -> KeyedSgl {
        self.next_key += 1;
        let key = self.next_key;
        let length = bytes.len() as u32;
        self.mem.insert(key, bytes);
        KeyedSgl {
            addr: 0x1000_0000,
            length,
            key,
            invalidate: false,
        }
    }

    /// Carries out every post of `q` until none is left.
    fn run(&mut self, q: &mut RdmaQueue) {
        while let Some(p) = q.next_post() {
            match p {
                Post::Read {
                    cid,
                    len,
                    raddr,
                    rkey,
                    ..
                } => {
                    let m = &self.mem[&rkey];
                    let off = (raddr - 0x1000_0000) as usize;
                    let data = m[off..off + len as usize].to_vec();
                    let mut staged = data.clone();
                    staged.resize(STAGE as usize, 0);
                    q.read_done(cid, &staged);
                }
                Post::Write {
                    cid,
                    data,
                    raddr,
                    rkey,
                    ..
                } => {
                    let m = self.mem.get_mut(&rkey).expect("a known key");
                    let off = (raddr - 0x1000_0000) as usize;
                    m[off..off + data.len()].copy_from_slice(&data);
                    q.write_done(cid);
                }
                Post::Send { cqe, invalidate } => {
                    let c = Cqe::decode(&cqe);
                    self.responses.insert(c.cid, (c, invalidate));
                }
            }
        }
    }

    fn response(&mut self, cid: u16) -> Cqe {
        self.responses.remove(&cid).expect("a response").0
    }
}

fn capsule(sqe: &Sqe, data: &[u8]) -> Vec<u8> {
    let mut b = sqe.encode().to_vec();
    b.extend_from_slice(data);
    b
}

fn target(rdma: bool) -> std::sync::Arc<nvmf::tgt::subsystem::Target> {
    let mut cfg: TargetConfig = common::config(None);
    cfg.subsystems[0].nqn = NQN.into();
    cfg.subsystems[0].namespaces.truncate(1);
    cfg.subsystems[0].namespaces[0].backing = "mem:1M".into();
    if rdma {
        cfg.rdma_listen = cfg.listen.clone();
        cfg.listen.clear();
    }
    nvmf::tgt::subsystem::Target::new(&cfg).unwrap()
}

fn connect(
    host: &mut FakeHost,
    t: &std::sync::Arc<nvmf::tgt::subsystem::Target>,
    qid: u16,
    cntlid: u16,
) -> (RdmaQueue, u16) {
    let mut q = RdmaQueue::new(Connection::new(t.clone()), 32, STAGE);
    let mut sqe = Sqe {
        cid: 1,
        ..Default::default()
    };
    ConnectCmd {
        recfmt: 0,
        qid,
        sqsize: 31,
        cattr: 0,
        kato_ms: 0,
    }
    .to_sqe(&mut sqe);
    sqe.flags = 0x40;
    // The Linux host sends Connect's data by keyed SGL (RDMA READ).
    let k = host.region(
        ConnectData::new([3; 16], cntlid, NQN, HOST)
            .encode()
            .to_vec(),
    );
    sqe.dptr = k.to_dptr();
    q.on_capsule(&capsule(&sqe, &[]));
    host.run(&mut q);
    let c = host.response(1);
    assert!(c.status().is_success(), "{:?}", c.status());
    (q, c.result as u16)
}

fn identify(host: &mut FakeHost, q: &mut RdmaQueue) -> IdentifyController {
    let mut sqe = Sqe {
        opcode: admin::IDENTIFY,
        cid: 2,
        flags: 0x40,
        cdw10: 1,
        ..Default::default()
    };
    let k = host.region(vec![0; 4096]);
    sqe.dptr = k.to_dptr();
    q.on_capsule(&capsule(&sqe, &[]));
    host.run(q);
    assert!(host.response(2).status().is_success());
    IdentifyController::decode(&host.mem[&k.key])
}

#[test]
fn rdma_port_advertises_keyed_sgls_and_tcp_port_does_not() {
    let mut host = FakeHost::default();
    let t = target(true);
    assert_eq!(t.ports[0].transport, Transport::Rdma);
    let (mut admin_q, _) = connect(&mut host, &t, 0, CNTLID_DYNAMIC);
    let id = identify(&mut host, &mut admin_q);
    assert_ne!(id.sgls & SGLS_KEYED, 0, "keyed SGLs on an RDMA port");

    let t = target(false);
    let (mut admin_q, _) = connect(&mut host, &t, 0, CNTLID_DYNAMIC);
    let id = identify(&mut host, &mut admin_q);
    assert_eq!(id.sgls & SGLS_KEYED, 0, "no keyed SGLs on a TCP port");
}

#[test]
fn writes_by_rdma_read_and_reads_by_rdma_write_round_trip() {
    let mut host = FakeHost::default();
    let t = target(true);
    let (_admin_q, cntlid) = connect(&mut host, &t, 0, CNTLID_DYNAMIC);
    let (mut q, _) = connect(&mut host, &t, 1, cntlid);

    // 320 KiB write: three RDMA READs (128 + 128 + 64 KiB), one response.
    let data: Vec<u8> = (0..320 * 1024).map(|i| (i * 7 % 251) as u8).collect();
    let mut w = rw_sqe(io::WRITE, 1, 16, 640);
    w.cid = 20;
    let k = host.region(data.clone());
    w.dptr = k.to_dptr();
    q.on_capsule(&capsule(&w, &[]));
    host.run(&mut q);
    let c = host.response(20);
    assert!(c.status().is_success(), "{:?}", c.status());

    // An in-capsule write of 4 KiB right after it.
    let mut w2 = rw_sqe(io::WRITE, 1, 1000, 8);
    w2.cid = 21;
    w2.dptr = SglDescriptor {
        addr: 0,
        length: 4096,
        rsvd: [0; 3],
        type_byte: SGL_IN_CAPSULE,
    };
    q.on_capsule(&capsule(&w2, &[0xA5; 4096]));
    host.run(&mut q);
    assert!(host.response(21).status().is_success());

    // Read both back by RDMA WRITE into host memory, invalidating the key.
    let mut r = rw_sqe(io::READ, 1, 16, 640);
    r.cid = 22;
    let mut k = host.region(vec![0; 320 * 1024]);
    k.invalidate = true;
    r.dptr = k.to_dptr();
    q.on_capsule(&capsule(&r, &[]));
    host.run(&mut q);
    let (c, inv) = host.responses.remove(&22).expect("read response");
    assert!(c.status().is_success());
    assert_eq!(inv, Some(k.key), "SEND with Invalidate of the host's key");
    assert_eq!(host.mem[&k.key], data, "read data equals what was written");

    let mut r2 = rw_sqe(io::READ, 1, 1000, 8);
    r2.cid = 23;
    let k2 = host.region(vec![0; 4096]);
    r2.dptr = k2.to_dptr();
    q.on_capsule(&capsule(&r2, &[]));
    host.run(&mut q);
    let (_, inv) = host.responses.remove(&23).unwrap();
    assert_eq!(inv, None);
    assert_eq!(host.mem[&k2.key], vec![0xA5; 4096]);
    assert!(q.closing().is_none());
}

#[test]
fn a_short_capsule_closes_the_queue() {
    let t = target(true);
    let mut q = RdmaQueue::new(Connection::new(t), 4, STAGE);
    q.on_capsule(&[0u8; 40]);
    assert!(q.closing().unwrap().contains("shorter than an SQE"));
}

#[test]
fn connect_requests_are_checked_against_the_limits() {
    let t = target(true);
    let req = |qid, hsqsize, hrqsize| {
        CmRequest {
            recfmt: 0,
            qid,
            hrqsize,
            hsqsize,
            cntlid: 0xFFFF,
        }
        .encode()
    };
    let check = |b: &[u8]| {
        nvmf::tgt::rdma::check_request(&t, b)
            .map(|(_, d)| d)
            .map_err(|(s, what)| {
                assert!(!what.is_empty());
                s
            })
    };
    let (_, what) = nvmf::tgt::rdma::check_request(&t, &req(1, 1024, 128)).unwrap_err();
    assert!(
        what.contains("1025-entry queue 1") && what.contains("2 to 128"),
        "{what}"
    );
    assert_eq!(check(&req(0, 31, 32)), Ok(32));
    assert_eq!(check(&req(1, 127, 128)), Ok(128));
    assert_eq!(
        check(&req(0, 32, 33)),
        Err(RejectStatus::InvalidHsqsize),
        "admin queue past 32"
    );
    assert_eq!(
        check(&req(1, 1024, 128)),
        Err(RejectStatus::InvalidHsqsize),
        "I/O queue past the limit"
    );
    assert_eq!(check(&req(1, 127, 0)), Err(RejectStatus::InvalidHrqsize));
    assert_eq!(check(&req(500, 127, 128)), Err(RejectStatus::InvalidQid));
    assert_eq!(
        check(&[0u8; 8]),
        Err(RejectStatus::InvalidPrivateDataLength)
    );
    let mut bad = req(1, 127, 128);
    bad[0] = 9;
    assert_eq!(check(&bad), Err(RejectStatus::InvalidRecfmt));
}

// A keyed SGL at the top of the address space: the RDMA address of a
// later chunk (its address plus the chunk's offset) overflowed, a panic.
#[test]
fn a_keyed_sgl_past_the_end_of_the_address_space_closes_the_queue() {
    let mut host = FakeHost::default();
    let t = target(true);
    let (_admin_q, cntlid) = connect(&mut host, &t, 0, CNTLID_DYNAMIC);
    let (mut q, _) = connect(&mut host, &t, 1, cntlid);
    // A 64 KiB read (several RDMA WRITEs) into the last 4 KiB of memory.
    let mut r = rw_sqe(io::READ, 1, 0, 128);
    r.cid = 30;
    r.dptr = KeyedSgl {
        addr: u64::MAX - 4095,
        length: 64 * 1024,
        key: 9,
        invalidate: false,
    }
    .to_dptr();
    q.on_capsule(&capsule(&r, &[]));
    while let Some(p) = q.next_post() {
        if let Post::Write {
            cid, raddr, data, ..
        } = p
        {
            assert!(raddr.checked_add(data.len() as u64).is_some(), "{raddr:#x}");
            q.write_done(cid);
        }
    }
    let why = q.closing().expect("the queue closes");
    assert!(why.contains("address space"), "{why}");
}

// A capsule reusing the id of a write in flight: its Command ID Conflict
// answer was queued as the write's response, which then dropped the
// write's next RDMA READ, so the write never completed (and the SEND
// invalidated the write's key).
#[test]
fn a_reused_command_id_does_not_end_the_command_in_flight() {
    let mut host = FakeHost::default();
    let t = target(true);
    let (_admin_q, cntlid) = connect(&mut host, &t, 0, CNTLID_DYNAMIC);
    let (mut q, _) = connect(&mut host, &t, 1, cntlid);
    // 320 KiB: three RDMA READs; the second capsule comes after the first.
    let data: Vec<u8> = (0..320 * 1024).map(|i| (i * 3 % 253) as u8).collect();
    let mut w = rw_sqe(io::WRITE, 1, 0, 640);
    w.cid = 40;
    let mut k = host.region(data.clone());
    k.invalidate = true;
    w.dptr = k.to_dptr();
    q.on_capsule(&capsule(&w, &[]));
    let first = q.next_post().expect("the first RDMA READ");
    let mut again = rw_sqe(io::READ, 1, 0, 8);
    again.cid = 40;
    again.dptr = host.region(vec![0; 4096]).to_dptr();
    q.on_capsule(&capsule(&again, &[]));
    match q.next_post() {
        Some(Post::Send { cqe, invalidate }) => {
            let c = Cqe::decode(&cqe);
            assert_eq!((c.cid, c.status()), (40, nvme_spec::Status::CID_CONFLICT));
            assert_eq!(invalidate, None, "the write's key is still in use");
        }
        other => panic!("expected the conflict's answer, got {other:?}"),
    }
    // The write goes on: its first READ completes, the rest follow.
    let Post::Read {
        cid, len, raddr, ..
    } = first
    else {
        panic!("expected an RDMA READ, got {first:?}");
    };
    let off = (raddr - 0x1000_0000) as usize;
    let mut staged = data[off..off + len as usize].to_vec();
    staged.resize(STAGE as usize, 0);
    q.read_done(cid, &staged);
    host.run(&mut q);
    let (c, inv) = host.responses.remove(&40).expect("the write's response");
    assert!(c.status().is_success(), "{:?}", c.status());
    assert_eq!(inv, Some(k.key));
    assert!(q.closing().is_none());
}
