//! The per-command state machine without a reactor: a storage command waits
//! in `Executing` while the same queue serves others, and its completion
//! resumes it.

mod common;

use nvme_spec::command::{io, SglDescriptor, SGL_IN_CAPSULE, SGL_TRANSPORT};
use nvme_spec::fabrics::{ConnectCmd, ConnectData, CNTLID_DYNAMIC};
use nvme_spec::tcp::{self, pdu_type, Direction, Framing, Pdu};
use nvme_spec::{Cqe, Sqe};
use nvmf::host::command::rw_sqe;
use nvmf::tgt::queue::Connection;
use nvmf::tgt::request::RequestState;
use nvmf::tgt::storage::StorageKind;
use nvmf::tgt::subsystem::Target;

const NQN: &str = "nqn.2026-01.io.numio:sm";
const HOST: &str = "nqn.2026-01.io.numio:host";

fn capsule(sqe: Sqe, data: &[u8]) -> Vec<u8> {
    let mut b = Vec::new();
    tcp::frame(
        &mut b,
        pdu_type::CAPSULE_CMD,
        0,
        &sqe.encode(),
        data,
        &Framing::INITIAL,
    );
    b
}

fn sgl(sqe: &mut Sqe, len: u32, in_capsule: bool) {
    sqe.flags = 0x40;
    sqe.dptr = SglDescriptor {
        addr: 0,
        length: len,
        rsvd: [0; 3],
        type_byte: if in_capsule {
            SGL_IN_CAPSULE
        } else {
            SGL_TRANSPORT
        },
    };
}

/// Calls `f` with every PDU in `tx`, which must hold whole PDUs.
fn for_each_pdu(tx: &[u8], mut f: impl FnMut(Pdu<'_>)) {
    let mut pos = 0;
    while pos < tx.len() {
        let plen = u32::from_le_bytes(tx[pos + 4..pos + 8].try_into().unwrap()) as usize;
        f(tcp::decode(
            &tx[pos..pos + plen],
            Direction::ControllerToHost,
            &Framing::INITIAL,
        )
        .unwrap());
        pos += plen;
    }
    assert_eq!(pos, tx.len(), "whole PDUs");
}

/// Every PDU in `tx`, as (type, cid, data length) and response CQEs.
fn pdus(tx: &[u8]) -> Vec<(u8, u16, usize, Option<Cqe>)> {
    let mut out = Vec::new();
    for_each_pdu(tx, |p| {
        out.push(match p {
            Pdu::CapsuleResp(c) => (pdu_type::CAPSULE_RESP, c.cid, 0, Some(c)),
            Pdu::Data { hdr, data, .. } => (hdr.ch.pdu_type, hdr.cccid, data.len(), None),
            Pdu::R2t(h) => (pdu_type::R2T, h.cccid, h.data_length as usize, None),
            Pdu::IcResp(_) => (pdu_type::IC_RESP, 0, 0, None),
            other => panic!("unexpected {other:?}"),
        })
    });
    out
}

fn connect(target: &std::sync::Arc<Target>, qid: u16, cntlid: u16) -> (Connection, u16) {
    let mut c = Connection::new(target.clone());
    let mut b = Vec::new();
    tcp::frame(
        &mut b,
        pdu_type::IC_REQ,
        0,
        &tcp::icreq_body(0, 0, 0),
        &[],
        &Framing::INITIAL,
    );
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
    sgl(&mut sqe, 1024, true);
    let data = ConnectData::new([3; 16], cntlid, NQN, HOST).encode();
    b.extend(capsule(sqe, &data));
    c.on_bytes(&b);
    let resp = pdus(&c.take_tx());
    let cqe = resp[1].3.expect("Connect response");
    assert!(cqe.status().is_success(), "{:?}", cqe.status());
    (c, cqe.result as u16)
}

#[test]
fn storage_command_executes_while_the_queue_serves_others() {
    let path = std::env::temp_dir().join(format!("numio-sm-{}", std::process::id()));
    std::fs::write(&path, vec![0u8; 1 << 20]).unwrap();
    let target = common::one_subsystem(NQN, &[path.to_str().unwrap(), "mem:1M"]);
    let (mut admin, cntlid) = connect(&target, 0, CNTLID_DYNAMIC);
    let (mut q, _) = connect(&target, 1, cntlid);

    // A 4 KiB in-capsule write to the file namespace: queued, no response.
    let mut w = rw_sqe(io::WRITE, 1, 8, 8);
    w.cid = 10;
    sgl(&mut w, 4096, true);
    q.on_bytes(&capsule(w, &[0xC5; 4096]));
    assert_eq!(q.executing(), 1);
    assert!(
        q.take_tx().is_empty(),
        "no response before the storage completes"
    );
    // Meanwhile a read of the RAM namespace completes at once.
    let mut r = rw_sqe(io::READ, 2, 0, 2);
    r.cid = 11;
    sgl(&mut r, 1024, false);
    q.on_bytes(&capsule(r, &[]));
    let out = pdus(&q.take_tx());
    assert_eq!(
        out.iter().map(|p| (p.0, p.1)).collect::<Vec<_>>(),
        vec![(pdu_type::C2H_DATA, 11), (pdu_type::CAPSULE_RESP, 11)]
    );
    assert!(
        !q.can_close_for_shutdown(),
        "a write in flight holds the queue"
    );
    // The connection counts its requests per state as they move.
    let c = q.state_counts();
    assert_eq!((c.get(RequestState::Executing), c.busy()), (1, 1));
    // The reactor's view: one operation, page-aligned buffer.
    let (op, buf) = q.take_storage().expect("the write is queued");
    assert_eq!(
        (op.kind, op.offset, op.len),
        (StorageKind::Write, 8 * 512, 4096)
    );
    assert_eq!(buf as usize % 4096, 0, "O_DIRECT-aligned buffer");
    assert!(q.take_storage().is_none());
    // A failed completion fails the command.
    q.complete_storage(op.slot, -libc::EIO);
    let out = pdus(&q.take_tx());
    assert_eq!(out.len(), 1);
    assert!(!out[0].3.unwrap().status().is_success());
    assert_eq!(q.executing(), 0);
    assert_eq!(q.state_counts().busy(), 0);

    // Read back through the blocking driver: data written by a second write.
    q.on_bytes(&capsule(w, &[0x5C; 4096]));
    q.run_storage_blocking();
    let out = pdus(&q.take_tx());
    assert!(out[0].3.unwrap().status().is_success());
    let mut rd = rw_sqe(io::READ, 1, 8, 8);
    rd.cid = 12;
    sgl(&mut rd, 4096, false);
    q.on_bytes(&capsule(rd, &[]));
    assert!(q.take_tx().is_empty());
    q.run_storage_blocking();
    let out = pdus(&q.take_tx());
    assert_eq!((out[0].0, out[0].2), (pdu_type::C2H_DATA, 4096));
    assert!(q.can_close_for_shutdown());
    q.release();
    admin.release();
    assert_eq!(target.controller_count(), 0);
    assert_eq!(std::fs::read(&path).unwrap()[4096..8192], [0x5C; 4096]);
    std::fs::remove_file(&path).unwrap();
}

// Write Zeroes on a file namespace is a storage operation on the reactor
// (fallocate), not a blocking call; where the kernel refuses the fallocate,
// the completion writes the zeroes itself and the command still succeeds.
#[test]
fn write_zeroes_is_a_storage_operation_with_a_written_fallback() {
    let path = std::env::temp_dir().join(format!("numio-sm-wz-{}", std::process::id()));
    std::fs::write(&path, vec![0xAAu8; 1 << 20]).unwrap();
    let target = common::one_subsystem(NQN, &[path.to_str().unwrap()]);
    let (mut admin, cntlid) = connect(&target, 0, CNTLID_DYNAMIC);
    let (mut q, _) = connect(&target, 1, cntlid);

    let mut wz = rw_sqe(io::WRITE_ZEROES, 1, 8, 8);
    wz.cid = 20;
    q.on_bytes(&capsule(wz, &[]));
    assert_eq!(q.executing(), 1, "queued for the reactor");
    assert!(
        q.take_tx().is_empty(),
        "no response before the storage completes"
    );
    let (op, _) = q.take_storage().expect("the Write Zeroes is queued");
    assert_eq!(
        (op.kind, op.offset, op.len),
        (
            StorageKind::Zero {
                mode: libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE
            },
            8 * 512,
            4096
        )
    );
    // The kernel refused the fallocate: the zeroes are written instead.
    q.complete_storage(op.slot, -libc::EOPNOTSUPP);
    let out = pdus(&q.take_tx());
    assert_eq!(out.len(), 1);
    assert!(out[0].3.unwrap().status().is_success());
    let on_disk = std::fs::read(&path).unwrap();
    assert_eq!(on_disk[4096..8192], [0u8; 4096]);
    assert_eq!(on_disk[4095], 0xAA, "nothing before the range");
    assert_eq!(on_disk[8192], 0xAA, "nothing after the range");

    // Through the blocking driver (the real fallocate): zeroes too.
    let mut wz2 = rw_sqe(io::WRITE_ZEROES, 1, 32, 8);
    wz2.cid = 21;
    q.on_bytes(&capsule(wz2, &[]));
    q.run_storage_blocking();
    let out = pdus(&q.take_tx());
    assert!(out[0].3.unwrap().status().is_success());
    assert_eq!(
        std::fs::read(&path).unwrap()[32 * 512..40 * 512],
        [0u8; 4096]
    );
    q.release();
    admin.release();
    std::fs::remove_file(&path).unwrap();
}

// A deallocate of several ranges runs as one storage operation per range,
// in turn: each completion queues the next, and the response waits for the
// last.
#[test]
fn dsm_deallocate_runs_its_ranges_in_turn() {
    let path = std::env::temp_dir().join(format!("numio-sm-dsm-{}", std::process::id()));
    std::fs::write(&path, vec![0xAAu8; 1 << 20]).unwrap();
    let target = common::one_subsystem(NQN, &[path.to_str().unwrap()]);
    let (mut admin, cntlid) = connect(&target, 0, CNTLID_DYNAMIC);
    let (mut q, _) = connect(&target, 1, cntlid);
    let mut ranges = Vec::new();
    for (slba, nlb) in [(16u64, 2u32), (0, 0), (100, 4)] {
        ranges.extend_from_slice(
            &nvme_spec::command::DsmRange {
                cattr: 0,
                nlb,
                slba,
            }
            .encode(),
        );
    }
    let mut dsm = Sqe {
        opcode: io::DSM,
        nsid: 1,
        cdw10: 2,
        cdw11: io::DSM_ATTR_DEALLOCATE,
        cid: 30,
        ..Default::default()
    };
    sgl(&mut dsm, ranges.len() as u32, true);
    q.on_bytes(&capsule(dsm, &ranges));
    let mut seen = Vec::new();
    while let Some((op, _)) = q.take_storage() {
        assert!(q.take_tx().is_empty(), "no response while ranges remain");
        assert!(matches!(op.kind, StorageKind::Zero { .. }));
        seen.push((op.offset, op.len));
        q.complete_storage(op.slot, 0);
    }
    assert_eq!(seen, vec![(16 * 512, 1024), (100 * 512, 2048)]);
    let out = pdus(&q.take_tx());
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].1, 30);
    assert!(out[0].3.unwrap().status().is_success());
    q.release();
    admin.release();
    std::fs::remove_file(&path).unwrap();
}

// A Flush of every namespace syncs each file or block device namespace in
// turn on the reactor (RAM needs none) and answers after the last.
#[test]
fn flush_of_every_namespace_syncs_them_in_turn() {
    let dir = std::env::temp_dir();
    let paths: Vec<_> = (0..2)
        .map(|i| dir.join(format!("numio-sm-fl{i}-{}", std::process::id())))
        .collect();
    for p in &paths {
        std::fs::write(p, vec![0u8; 1 << 20]).unwrap();
    }
    let specs = [
        paths[0].to_str().unwrap(),
        "mem:1M",
        paths[1].to_str().unwrap(),
    ];
    let target = common::one_subsystem(NQN, &specs);
    let (mut admin, cntlid) = connect(&target, 0, CNTLID_DYNAMIC);
    let (mut q, _) = connect(&target, 1, cntlid);
    let flush = Sqe {
        opcode: io::FLUSH,
        nsid: 0xFFFF_FFFF,
        cid: 40,
        ..Default::default()
    };
    q.on_bytes(&capsule(flush, &[]));
    let mut fds = Vec::new();
    while let Some((op, _)) = q.take_storage() {
        assert!(
            q.take_tx().is_empty(),
            "no response while namespaces remain"
        );
        assert_eq!(op.kind, StorageKind::Flush);
        fds.push(op.fd);
        q.complete_storage(op.slot, 0);
    }
    assert_eq!(fds.len(), 2, "the two file namespaces, not the RAM one");
    assert_ne!(fds[0], fds[1]);
    let out = pdus(&q.take_tx());
    assert_eq!((out.len(), out[0].1), (1, 40));
    assert!(out[0].3.unwrap().status().is_success());
    // A failed sync fails the command without going on.
    q.on_bytes(&capsule(flush, &[]));
    let (op, _) = q.take_storage().unwrap();
    q.complete_storage(op.slot, -libc::EIO);
    assert!(q.take_storage().is_none());
    let out = pdus(&q.take_tx());
    assert!(!out[0].3.unwrap().status().is_success());
    q.release();
    admin.release();
    for p in &paths {
        std::fs::remove_file(p).unwrap();
    }
}

// A read of a RAM namespace leaves its data there: the output splices it
// in (the reactor's send reads it from the namespace), except below the
// splice threshold, and what a consumer takes is the whole PDU stream with
// the data in place; a write after the read is framed changes what a
// later read returns, not the framed one's header.
#[test]
fn ram_reads_are_spliced_into_the_output_and_taken_whole() {
    let target = common::one_subsystem(NQN, &["mem:1M"]);
    let (mut admin, cntlid) = connect(&target, 0, CNTLID_DYNAMIC);
    let (mut q, _) = connect(&target, 1, cntlid);
    let data = common::pattern(7, 8192);
    let mut w = rw_sqe(io::WRITE, 1, 16, 16);
    w.cid = 1;
    sgl(&mut w, 8192, true);
    q.on_bytes(&capsule(w, &data));
    assert!(pdus(&q.take_tx())[0].3.unwrap().status().is_success());

    // 8 KiB and 512 B reads in one batch: the first spliced, the second
    // copied (below SPLICE_MIN_BYTES).
    let mut big = rw_sqe(io::READ, 1, 16, 16);
    big.cid = 2;
    sgl(&mut big, 8192, false);
    let mut small = rw_sqe(io::READ, 1, 17, 1);
    small.cid = 3;
    sgl(&mut small, 512, false);
    let mut b = capsule(big, &[]);
    b.extend(capsule(small, &[]));
    q.on_bytes(&b);
    assert_eq!(q.tx_spliced(), 8192, "the 8 KiB read stays in RAM");
    let tx = q.take_tx();
    assert_eq!(q.tx_spliced(), 0);
    let mut got = Vec::new();
    for_each_pdu(&tx, |p| {
        if let Pdu::Data { hdr, data, .. } = p {
            got.push((hdr.cccid, data.to_vec()));
        }
    });
    assert_eq!(got, vec![(2, data.clone()), (3, data[512..1024].to_vec())]);
    q.release();
    admin.release();
}

// Regression (issue 38): 64 admin queues with KATO 0 held every controller
// slot for as long as their sockets stayed open.
#[test]
fn an_idle_admin_queue_without_keep_alive_gives_its_controller_back() {
    use nvmf::tgt::counters::Refused;
    use nvmf::tgt::queue::ADMIN_IDLE_DEADLINE;
    let target = common::one_subsystem(NQN, &["mem:1M"]);
    let (mut admin, cntlid) = connect(&target, 0, 0xFFFF);
    let now = std::time::Instant::now();
    assert!(
        admin.tick(now + ADMIN_IDLE_DEADLINE / 2),
        "not idle long yet"
    );
    // A controller doing I/O keeps its quiet admin queue.
    let (mut io, _) = connect(&target, 1, cntlid);
    let late = now + ADMIN_IDLE_DEADLINE + std::time::Duration::from_secs(1);
    assert!(admin.tick(late), "its controller has an I/O queue");
    io.release();
    assert!(
        !admin.tick(late),
        "idle, no keep-alive, no I/O queue: closed"
    );
    assert!(admin
        .close_reason
        .as_deref()
        .is_some_and(|r| r.contains("ADMIN_IDLE_DEADLINE") && r.contains("max_controllers")));
    assert_eq!(target.refusals.snapshot()[Refused::AdminIdle as usize].1, 1);
}
