//! Namespaces with 4096-byte logical blocks next to 512-byte ones: Identify
//! Namespace reports each one's LBA format and size, and I/O is counted in
//! each one's blocks.

mod common;

use common::*;
use nvme_spec::command::io;
use nvme_spec::identify::{cns, IdentifyNamespace};
use nvme_spec::Status;
use nvmf::config::NamespaceConfig;
use nvmf::host::command::rw_sqe;

#[test]
fn four_k_namespaces_report_and_serve_4096_byte_blocks() {
    let path = std::env::temp_dir().join(format!("numio-bs-{}", std::process::id()));
    std::fs::write(&path, vec![0u8; 8 << 20]).unwrap();
    let mut cfg = config(None);
    let mut file4k = NamespaceConfig::new(path.to_str().unwrap());
    file4k.block_size = Some(4096);
    let mut mem4k = NamespaceConfig::new("mem:16M");
    mem4k.block_size = Some(4096);
    cfg.subsystems[0].namespaces = vec![NamespaceConfig::new("mem:8M"), file4k, mem4k];
    let (srv, addr) = start(&cfg);
    let (mut a, mut q) = controller(addr, &opts());
    for (nsid, lbads, nsze) in [(1u32, 9u8, 16384u64), (2, 12, 2048), (3, 12, 4096)] {
        let id = a.identify(cns::NAMESPACE, nsid).unwrap();
        let ns = IdentifyNamespace::decode(&id);
        assert_eq!(
            (ns.lbads, ns.nsze, ns.ncap),
            (lbads, nsze, nsze),
            "nsid {nsid}"
        );
        assert_eq!(id[26] & 0x0F, 0, "FLBAS names LBA format 0");
        assert_eq!(id[128 + 2], lbads, "LBAF0.LBADS");
    }
    for nsid in [2u32, 3] {
        // 3 blocks of 4 KiB at LBA 5 (in capsule), then 64 blocks (R2T).
        for (slba, nlb) in [(5u64, 3u32), (100, 64)] {
            let len = nlb as usize * 4096;
            let data = pattern(nsid * 1000 + slba as u32, len);
            let c = q
                .submit(rw_sqe(io::WRITE, nsid, slba, nlb), &data, 0)
                .unwrap();
            assert!(c.cqe.status().is_success(), "{:?}", c.cqe.status());
            let c = q
                .submit(rw_sqe(io::READ, nsid, slba, nlb), &[], len as u32)
                .unwrap();
            assert_eq!(c.data, data, "nsid {nsid} slba {slba}");
        }
        // A 512-byte-block sized transfer is the wrong length here.
        let st = q
            .submit(rw_sqe(io::READ, nsid, 0, 1), &[], 512)
            .unwrap()
            .cqe
            .status();
        assert_eq!(st, Status::SGL_LENGTH_INVALID);
        // The last block is in range, the one after it is not.
        let last = if nsid == 2 { 2047 } else { 4095 };
        let st = q
            .submit(rw_sqe(io::READ, nsid, last, 1), &[], 4096)
            .unwrap()
            .cqe
            .status();
        assert!(st.is_success());
        let st = q
            .submit(rw_sqe(io::READ, nsid, last, 2), &[], 8192)
            .unwrap()
            .cqe
            .status();
        assert_eq!(st, Status::LBA_RANGE);
        // Write Zeroes counts 4 KiB blocks.
        let st = q
            .submit(rw_sqe(io::WRITE_ZEROES, nsid, 5, 2), &[], 0)
            .unwrap()
            .cqe
            .status();
        assert!(st.is_success());
        let c = q.submit(rw_sqe(io::READ, nsid, 5, 3), &[], 12288).unwrap();
        assert_eq!(&c.data[..8192], &[0u8; 8192][..]);
        assert_eq!(&c.data[8192..], &pattern(nsid * 1000 + 5, 12288)[8192..]);
    }
    srv.stop().unwrap();
    // Block 100 of the 4 KiB file namespace is at byte 409600 of the file.
    let on_disk = std::fs::read(&path).unwrap();
    assert_eq!(&on_disk[409600..409600 + 4096], &pattern(2100, 4096)[..]);
    std::fs::remove_file(&path).unwrap();
}
