//! The target and the initiator over loopback: connect, identify, features,
//! logs, discovery, reads and writes (in-capsule, R2T, C2HData SUCCESS),
//! digests and alignment.

mod common;

use common::*;
use nvme_spec::command::{io, DsmRange};
use nvme_spec::fabrics::{prop, DISCOVERY_NQN};
use nvme_spec::features::fid;
use nvme_spec::identify::{self, cns, nidt, IdentifyController, IdentifyNamespace};
use nvme_spec::log::{self, lid};
use nvme_spec::{Sqe, Status};
use nvmf::host::command::rw_sqe;
use nvmf::{Initiator, InitiatorError};

#[test]
fn connect_identify_and_features() {
    let (srv, addr) = start(&config(None));
    let (mut a, _q) = controller(addr, &opts());
    let cap = a.property_get(prop::CAP, true).unwrap();
    assert_eq!(
        cap & 0xFFFF,
        127,
        "MQES is the I/O queue depth limit, zero-based"
    );
    assert_eq!(a.property_get(prop::VS, false).unwrap(), 0x10300);
    let id = IdentifyController::decode(&a.identify(cns::CONTROLLER, 0).unwrap());
    assert_eq!(id.cntlid, a.cntlid);
    assert_eq!(id.subnqn, NQN);
    assert_eq!(
        (id.serial.as_str(), id.model.as_str()),
        ("SERIAL42", "numio test model")
    );
    assert_eq!((id.nn, id.mdts, id.kas, id.icdoff), (2, 8, 10, 0));
    assert_eq!(id.ioccsz, (64 + 16384) / 16);
    assert_eq!(id.cntrltype, identify::CNTRLTYPE_IO);
    let list = identify::decode_ns_list(&a.identify(cns::ACTIVE_NS_LIST, 0).unwrap());
    assert_eq!(list, vec![1, 2]);
    let ns = IdentifyNamespace::decode(&a.identify(cns::NAMESPACE, 1).unwrap());
    assert_eq!((ns.nsze, ns.lbads), (64 << 11, 9));
    let descs = identify::decode_ns_descriptors(&a.identify(cns::NS_DESC_LIST, 1).unwrap());
    assert!(descs
        .iter()
        .any(|(t, v)| *t == nidt::NGUID && v[..] == ns.nguid[..]));
    assert!(descs.iter().any(|(t, v)| *t == nidt::UUID && v.len() == 16));
    let err = a.identify(cns::NAMESPACE, 3).unwrap_err();
    assert!(
        matches!(err, InitiatorError::Command { status, .. } if status == Status::INVALID_NS),
        "{err}"
    );
    // Fabrics rejects interrupt coalescing and vector configuration.
    for f in [fid::IRQ_COALESCE, fid::IRQ_CONFIG] {
        assert_eq!(
            a.set_features(f, 0x0107).unwrap().cqe.status(),
            Status::INVALID_FIELD
        );
    }
    assert!(a
        .set_features(fid::KATO, 10_000)
        .unwrap()
        .cqe
        .status()
        .is_success());
    assert!(a
        .set_features(fid::ASYNC_EVENT, 0x100)
        .unwrap()
        .cqe
        .status()
        .is_success());
    a.keep_alive().unwrap();
    // Unknown log page and unknown opcode.
    assert!(a.get_log_page(0x42, 0, 512, 0).is_err());
    let bogus = Sqe {
        opcode: 0xC1,
        ..Default::default()
    };
    assert_eq!(a.simple(bogus).unwrap(), Status::INVALID_OPCODE);
    assert_eq!(
        a.shutdown().unwrap() & 0x0C,
        0x08,
        "CSTS.SHST = shutdown complete"
    );
    srv.stop().unwrap();
}

#[test]
fn read_write_verify_in_capsule_and_r2t() {
    let (srv, addr) = start(&config(None));
    let (_a, mut q) = controller(addr, &opts());
    // 4 KiB fits in the capsule; 256 KiB needs an R2T and two H2CData PDUs.
    for (slba, len) in [(0u64, 4096usize), (8, 256 * 1024), (1000, 512)] {
        let data = pattern(slba as u32, len);
        q.write(1, slba, &data).unwrap();
        assert_eq!(
            q.read(1, slba, (len / 512) as u32).unwrap(),
            data,
            "slba {slba}"
        );
    }
    // Namespaces are separate.
    q.write(2, 0, &pattern(99, 512)).unwrap();
    assert_eq!(q.read(1, 0, 1).unwrap(), pattern(0, 4096)[..512]);
    // Out of range, wrong namespace, length mismatch.
    let st = q
        .submit(rw_sqe(io::READ, 2, 16383, 2), &[], 1024)
        .unwrap()
        .cqe
        .status();
    assert_eq!(st, Status::LBA_RANGE);
    assert_eq!(
        q.submit(rw_sqe(io::READ, 7, 0, 1), &[], 512)
            .unwrap()
            .cqe
            .status(),
        Status::INVALID_NS
    );
    assert_eq!(
        q.submit(rw_sqe(io::READ, 1, 0, 2), &[], 512)
            .unwrap()
            .cqe
            .status(),
        Status::SGL_LENGTH_INVALID
    );
    // Larger than MDTS (1 MiB).
    let st = q
        .submit(rw_sqe(io::READ, 1, 0, 4096), &[], 2 << 20)
        .unwrap()
        .cqe
        .status();
    assert_eq!(st, Status::SGL_LENGTH_INVALID);
    srv.stop().unwrap();
}

#[test]
fn write_zeroes_dsm_flush_and_smart() {
    let (srv, addr) = start(&config(None));
    let (mut a, mut q) = controller(addr, &opts());
    q.write(1, 8, &pattern(8, 256 * 1024)).unwrap();
    let st = q
        .submit(rw_sqe(io::READ, 7, 0, 1), &[], 512)
        .unwrap()
        .cqe
        .status();
    assert_eq!(st, Status::INVALID_NS);
    // Write Zeroes, DSM deallocate, Flush.
    let mut wz = rw_sqe(io::WRITE_ZEROES, 1, 8, 8);
    wz.cdw12 = 7;
    assert!(q.simple(wz).unwrap().is_success());
    assert_eq!(q.read(1, 8, 8).unwrap(), vec![0u8; 4096]);
    assert_eq!(
        q.read(1, 16, 1).unwrap(),
        pattern(8, 256 * 1024)[4096..4608]
    );
    let range = DsmRange {
        cattr: 0,
        nlb: 16,
        slba: 16,
    };
    let dsm = Sqe {
        opcode: io::DSM,
        nsid: 1,
        cdw10: 0,
        cdw11: io::DSM_ATTR_DEALLOCATE,
        ..Default::default()
    };
    assert!(q.command(dsm, &range.encode(), 0).is_ok());
    assert_eq!(q.read(1, 16, 16).unwrap(), vec![0u8; 8192]);
    let flush = Sqe {
        opcode: io::FLUSH,
        nsid: 1,
        ..Default::default()
    };
    assert!(q.simple(flush).unwrap().is_success());
    // SMART counts what was done, once the I/O queue's reactor has folded
    // its counters into the controller (on its next tick).
    let cntlid = a.cntlid;
    wait_for(&srv.target, "the I/O queue's counters folded in", |t| {
        t.controller(cntlid).is_some_and(|c| {
            use std::sync::atomic::Ordering::Relaxed;
            c.stats.reads.load(Relaxed) >= 1 && c.stats.writes.load(Relaxed) >= 1
        })
    });
    let smart = a.get_log_page(lid::SMART, 0xFFFF_FFFF, 512, 0).unwrap();
    let (r, w) = log::SmartLog::decode_data_units(&smart);
    assert!(r >= 1 && w >= 1, "data units read {r} written {w}");
    // The error above was logged.
    let errs = a.get_log_page(lid::ERROR_INFO, 0, 128, 0).unwrap();
    let e = log::ErrorEntry::decode(&errs);
    assert_eq!((e.error_count, e.nsid, e.sqid), (1, 7, 1));
    srv.stop().unwrap();
}

#[test]
fn sq_flow_control_disabled_uses_c2h_success() {
    let (srv, addr) = start(&config(None));
    let (a, mut q) = controller(addr, &opts());
    q.write(1, 0, &pattern(0, 4096)).unwrap();

    // A queue with SQ flow control disabled gets C2HData with SUCCESS, no capsule.
    let mut o = opts();
    o.disable_sqflow = true;
    let mut q2 = Initiator::connect_io(addr, NQN, a.cntlid, 2, &o).unwrap();
    let c = q2.submit(rw_sqe(io::READ, 1, 0, 8), &[], 4096).unwrap();
    assert_eq!(c.data, pattern(0, 4096));
    assert_eq!(
        c.cqe.sqhd, 0,
        "synthesised from the SUCCESS flag, not a response capsule"
    );
    srv.stop().unwrap();
}

#[test]
fn digests_and_alignment() {
    let (srv, addr) = start(&config(None));
    let mut o = opts();
    o.header_digest = true;
    o.data_digest = true;
    o.hpda = 7; // C2HData payloads on 32-byte boundaries
    o.in_capsule_max_bytes = 0; // every write through R2T
    let (_a, mut q) = controller(addr, &o);
    assert!(q.framing().header_digest && q.framing().data_digest);
    let data = pattern(7, 300 * 1024);
    q.write(1, 100, &data).unwrap();
    assert_eq!(q.read(1, 100, (data.len() / 512) as u32).unwrap(), data);
    let mut o2 = opts();
    o2.data_digest = true;
    let (_a2, mut q2) = controller(addr, &o2);
    assert!(!q2.framing().header_digest && q2.framing().data_digest);
    q2.write(1, 0, &data[..8192]).unwrap();
    assert_eq!(q2.read(1, 0, 16).unwrap(), data[..8192]);
    srv.stop().unwrap();
}

#[test]
fn discovery_lists_allowed_subsystems_only() {
    let mut cfg = config(Some(HOST));
    cfg.subsystems
        .push(common::config(None).subsystems.remove(0));
    cfg.subsystems[1].nqn = "nqn.2026-01.io.numio:open".into();
    let (srv, addr) = start(&cfg);
    let mut d = Initiator::connect_admin(addr, DISCOVERY_NQN, &opts()).unwrap();
    d.enable().unwrap();
    let id = IdentifyController::decode(&d.identify(cns::CONTROLLER, 0).unwrap());
    assert_eq!(id.cntrltype, identify::CNTRLTYPE_DISCOVERY);
    assert_eq!(id.subnqn, DISCOVERY_NQN);
    let hdr = d.get_log_page(lid::DISCOVERY, 0, 1024, 0).unwrap();
    let numrec = u64::from_le_bytes(hdr[8..16].try_into().unwrap()) as u32;
    assert_eq!(numrec, 2);
    let page = d
        .get_log_page(lid::DISCOVERY, 0, 1024 * (1 + numrec), 0)
        .unwrap();
    let (_, entries) = log::decode_discovery_log(&page);
    assert_eq!(entries[0].subnqn, NQN);
    assert_eq!(entries[0].trsvcid, addr.port().to_string());
    assert_eq!(entries[0].traddr, "127.0.0.1");
    assert_eq!(entries[0].trtype, log::TRTYPE_TCP);
    // Offset reads return the same bytes.
    assert_eq!(
        d.get_log_page(lid::DISCOVERY, 0, 1024, 1024).unwrap(),
        page[1024..2048]
    );

    let mut other = opts();
    other.hostnqn = "nqn.2014-08.org.nvmexpress:uuid:99999999-0000-0000-0000-000000000000".into();
    let mut d2 = Initiator::connect_admin(addr, DISCOVERY_NQN, &other).unwrap();
    let page = d2.get_log_page(lid::DISCOVERY, 0, 3072, 0).unwrap();
    let (_, entries) = log::decode_discovery_log(&page);
    assert_eq!(
        entries.len(),
        1,
        "the restricted subsystem is hidden from other hosts"
    );
    assert_eq!(entries[0].subnqn, "nqn.2026-01.io.numio:open");
    // And Connect from that host is refused with Invalid Host.
    let err = Initiator::connect_admin(addr, NQN, &other).unwrap_err();
    assert!(
        matches!(err, InitiatorError::Command { status, .. } if status == Status::CONNECT_INVALID_HOST),
        "{err}"
    );
    // An unknown subsystem is an invalid parameter.
    let err = Initiator::connect_admin(addr, "nqn.2026-01.io.numio:nope", &opts()).unwrap_err();
    assert!(
        matches!(err, InitiatorError::Command { status, .. } if status == Status::CONNECT_INVALID_PARAM),
        "{err}"
    );
    srv.stop().unwrap();
}

#[test]
fn many_hosts_across_reactors() {
    let (srv, addr) = start(&config(None));
    let handles: Vec<_> = (0..4u32)
        .map(|h| {
            std::thread::spawn(move || {
                let mut o = opts();
                o.hostnqn = format!("nqn.2014-08.org.nvmexpress:uuid:host-{h}");
                let (_a, mut q) = controller(addr, &o);
                for i in 0..20u32 {
                    let slba = (h * 4096 + i * 16) as u64;
                    let d = pattern(h * 100 + i, 8192);
                    q.write(1, slba, &d).unwrap();
                    assert_eq!(q.read(1, slba, 16).unwrap(), d);
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    wait_for(&srv.target, "all connections closed", |t| {
        t.connections.load(std::sync::atomic::Ordering::Acquire) == 0
    });
    assert_eq!(srv.target.controller_count(), 0);
    srv.stop().unwrap();
}

#[test]
fn pipelined_queue_depth_16_mixed_sizes() {
    let (srv, addr) = start(&config(None));
    for digests in [false, true] {
        let mut o = opts();
        o.header_digest = digests;
        o.data_digest = digests;
        let (_a, mut q) = controller(addr, &o);
        // 48 writes of 4 KiB (in capsule) to 192 KiB (R2T), 16 in flight.
        let sizes: Vec<usize> = (0..48).map(|i| 4096 << (i % 6)).collect();
        let slba = |i: usize| (i * 512) as u64; // 256 KiB apart
        let mut done = 0;
        for (i, &n) in sizes.iter().enumerate() {
            while q.in_flight() >= 16 {
                assert!(q.reap().unwrap().cqe.status().is_success());
                done += 1;
            }
            let sqe = rw_sqe(io::WRITE, 1, slba(i), (n / 512) as u32);
            q.post(sqe, pattern(i as u32 + 1000 * digests as u32, n), 0)
                .unwrap();
        }
        while q.in_flight() > 0 {
            assert!(q.reap().unwrap().cqe.status().is_success());
            done += 1;
        }
        assert_eq!(done, sizes.len());
        // Read everything back with 16 in flight; completions may come in any order.
        let mut want = std::collections::HashMap::new();
        let mut checked = 0;
        for (i, &n) in sizes.iter().enumerate() {
            if q.in_flight() >= 16 {
                let c = q.reap().unwrap();
                assert_eq!(c.data, want.remove(&c.cqe.cid).unwrap());
                checked += 1;
            }
            let cid = q
                .post(
                    rw_sqe(io::READ, 1, slba(i), (n / 512) as u32),
                    Vec::new(),
                    n as u32,
                )
                .unwrap();
            want.insert(cid, pattern(i as u32 + 1000 * digests as u32, n));
        }
        while q.in_flight() > 0 {
            let c = q.reap().unwrap();
            assert_eq!(c.data, want.remove(&c.cqe.cid).unwrap());
            checked += 1;
        }
        assert_eq!(checked, sizes.len());
        assert!(q
            .submit(rw_sqe(io::FLUSH, 1, 0, 1), &[], 0)
            .unwrap()
            .cqe
            .status()
            .is_success());
    }
    srv.stop().unwrap();
}
