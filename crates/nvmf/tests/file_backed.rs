//! File-backed namespaces: O_DIRECT (or buffered) storage I/O submitted on
//! the reactor's io_uring, with many commands in flight on one queue.

mod common;

use common::*;
use nvme_spec::command::{io, DsmRange};
use nvme_spec::Sqe;
use nvmf::config::NamespaceConfig;
use nvmf::host::command::rw_sqe;
use nvmf::namespace::Access;
use nvmf::TargetConfig;

const FILE_BYTES: usize = 16 << 20;

struct TempFile(std::path::PathBuf);

impl TempFile {
    fn new(tag: &str) -> Self {
        let p = std::env::temp_dir().join(format!("numio-fb-{tag}-{}", std::process::id()));
        std::fs::write(&p, vec![0u8; FILE_BYTES]).unwrap();
        Self(p)
    }
    fn spec(&self) -> String {
        self.0.to_str().unwrap().to_string()
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

fn file_config(f: &TempFile, buffered: bool) -> TargetConfig {
    let mut c = config(None);
    let mut ns = NamespaceConfig::new(&f.spec());
    ns.buffered = buffered;
    c.subsystems[0].namespaces[0] = ns;
    c
}

fn exercise(buffered: bool) {
    let f = TempFile::new(if buffered { "buffered" } else { "direct" });
    let (srv, addr) = start(&file_config(&f, buffered));
    let access = srv.target.subsystems[0]
        .namespace(1)
        .unwrap()
        .access
        .clone();
    if buffered {
        assert!(matches!(access, Access::Buffered { .. }), "{access:?}");
    } else {
        assert_ne!(access, Access::Memory);
    }
    let (_a, mut q) = controller(addr, &opts());
    // In-capsule (4 KiB), R2T (256 KiB, two H2CData PDUs) and 512 bytes.
    for (slba, len) in [(0u64, 4096usize), (8, 256 * 1024), (1000, 512)] {
        let data = pattern(slba as u32 + 7, len);
        q.write(1, slba, &data).unwrap();
        assert_eq!(q.read(1, slba, (len / 512) as u32).unwrap(), data);
    }
    // 48 mixed-size writes with 16 in flight, then read back in any order.
    let sizes: Vec<usize> = (0..48).map(|i| 4096 << (i % 6)).collect();
    let slba = |i: usize| 2048 + (i * 512) as u64;
    for (i, &n) in sizes.iter().enumerate() {
        while q.in_flight() >= 16 {
            let c = q.reap().unwrap();
            assert!(c.cqe.status().is_success(), "{:?}", c.cqe.status());
        }
        let sqe = rw_sqe(io::WRITE, 1, slba(i), (n / 512) as u32);
        q.post(sqe, pattern(i as u32, n), 0).unwrap();
    }
    while q.in_flight() > 0 {
        let c = q.reap().unwrap();
        assert!(c.cqe.status().is_success(), "{:?}", c.cqe.status());
    }
    let mut want = std::collections::HashMap::new();
    for (i, &n) in sizes.iter().enumerate() {
        while q.in_flight() >= 16 {
            let c = q.reap().unwrap();
            assert_eq!(c.data, want.remove(&c.cqe.cid).unwrap());
        }
        let sqe = rw_sqe(io::READ, 1, slba(i), (n / 512) as u32);
        let cid = q.post(sqe, Vec::new(), n as u32).unwrap();
        want.insert(cid, pattern(i as u32, n));
    }
    while q.in_flight() > 0 {
        let c = q.reap().unwrap();
        assert_eq!(c.data, want.remove(&c.cqe.cid).unwrap());
    }
    let flush = q.submit(rw_sqe(io::FLUSH, 1, 0, 1), &[], 0).unwrap();
    assert!(flush.cqe.status().is_success());
    // Write Zeroes (hole punch) reads back as zeroes.
    let wz = q.submit(rw_sqe(io::WRITE_ZEROES, 1, 8, 8), &[], 0).unwrap();
    assert!(wz.cqe.status().is_success());
    assert_eq!(q.read(1, 8, 8).unwrap(), vec![0u8; 4096]);
    // DSM deallocate of two ranges (one piece each on the ring) and an
    // empty one: both ranges read back as zeroes, the block between keeps
    // its data.
    let before = q.read(1, 72, 1).unwrap();
    assert_ne!(before, vec![0u8; 512], "written by the loop above");
    let mut ranges = Vec::new();
    for (slba, nlb) in [(64u64, 8u32), (900, 0), (73, 8)] {
        ranges.extend_from_slice(
            &DsmRange {
                cattr: 0,
                nlb,
                slba,
            }
            .encode(),
        );
    }
    let dsm = Sqe {
        opcode: io::DSM,
        nsid: 1,
        cdw10: 2,
        cdw11: io::DSM_ATTR_DEALLOCATE,
        ..Default::default()
    };
    assert!(q.command(dsm, &ranges, 0).is_ok());
    assert_eq!(q.read(1, 64, 8).unwrap(), vec![0u8; 4096]);
    assert_eq!(q.read(1, 73, 8).unwrap(), vec![0u8; 4096]);
    assert_eq!(q.read(1, 72, 1).unwrap(), before);
    srv.stop().unwrap();
    // The data is in the file itself.
    let on_disk = std::fs::read(&f.0).unwrap();
    assert_eq!(&on_disk[..4096], &pattern(7, 4096)[..]);
    let (i, n) = (5, sizes[5]);
    let off = slba(i) as usize * 512;
    assert_eq!(&on_disk[off..off + n], &pattern(i as u32, n)[..]);
}

#[test]
fn o_direct_file_namespace_on_the_ring() {
    exercise(false);
}

#[test]
fn buffered_file_namespace_on_the_ring() {
    exercise(true);
}

#[test]
fn host_vanishing_with_storage_in_flight_leaks_nothing() {
    let f = TempFile::new("vanish");
    let (srv, addr) = start(&file_config(&f, false));
    for round in 0..4 {
        let (a, mut q) = controller(addr, &opts());
        for i in 0..16u64 {
            let sqe = rw_sqe(io::WRITE, 1, i * 256, 256);
            q.post(sqe, pattern(round * 100 + i as u32, 128 * 1024), 0)
                .unwrap();
            let sqe = rw_sqe(io::READ, 1, i * 256, 256);
            q.post(sqe, Vec::new(), 128 * 1024).unwrap();
            if q.in_flight() >= 30 {
                break;
            }
        }
        drop(q);
        drop(a);
    }
    let t = srv.target.clone();
    wait_for(&t, "connections released", |t| {
        t.connections.load(std::sync::atomic::Ordering::Acquire) == 0
    });
    wait_for(&t, "controllers destroyed", |t| t.controller_count() == 0);
    let (_a, mut q) = controller(addr, &opts());
    q.write(1, 0, &pattern(5, 4096)).unwrap();
    assert_eq!(q.read(1, 0, 8).unwrap(), pattern(5, 4096));
    srv.stop().unwrap();
}
