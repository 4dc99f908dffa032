//! Unit tests of the passthru backend: the SQE template patching,
//! completion mapping and the probe on a file (the command's kernel ABI is
//! pinned in `sysapi::uring::sqe`).

use super::*;

// Pins the fields `patch_sqe` writes against the crate's builder fed with
// the full command.
#[test]
fn patched_template_equals_built_entry() {
    let buf = 0x7f12_3456_7000usize as *mut u8;
    let lba_shift = 12;
    for fixed in [false, true] {
        for (dir, op) in [(Dir::Read, NVME_CMD_READ), (Dir::Write, NVME_CMD_WRITE)] {
            let build = |cmd: NvmeUringCmd, slot: u16| {
                opcode::UringCmd80::new(types::Fixed(0), NVME_URING_CMD_IO)
                    .cmd(cmd.to_cmd_area())
                    .buf_index(fixed.then_some(slot))
                    .build()
            };
            let blank = NvmeUringCmd {
                opcode: op,
                nsid: 7,
                ..NvmeUringCmd::default()
            };
            let offset_bytes = 0x1234_5678_9000u64;
            let full = NvmeUringCmd {
                addr: buf as u64,
                data_len: 12_288,
                cdw10: (offset_bytes >> 12) as u32,
                cdw11: (offset_bytes >> 44) as u32,
                cdw12: 2,
                ..blank
            };
            let io = IoRequest {
                slot: 77,
                dir,
                offset_bytes,
                len_bytes: 12_288,
                buf,
            };
            let mask = if fixed { 0xffff } else { 0 };
            let got = patch_sqe(&NvmeSqe::from_entry(build(blank, 0)), &io, lba_shift, mask);
            assert_eq!(
                got,
                NvmeSqe::from_entry(build(full, 77).user_data(77)),
                "{dir:?} fixed={fixed}"
            );
        }
    }
}

#[test]
fn completions_map_status_and_errno() {
    assert_eq!(completion_result(0, 4096), 4096);
    assert_eq!(completion_result(-libc::EINVAL, 4096), -libc::EINVAL);
    // Media error, unrecovered read error, with DNR set (bit 14).
    assert_eq!(completion_result(0x4281, 4096), -(NVME_STATUS_BASE + 0x281));
    let mut s = crate::stats::WorkerStats::new();
    s.record_error(-completion_result(0x4281, 4096));
    assert_eq!(
        s.errno_counts()[0].name,
        "NVMe status sct=MediaError sc=0x81"
    );
    assert!(probe_error(libc::EACCES)
        .to_string()
        .contains("CAP_SYS_ADMIN"));
    assert!(probe_error(NVME_STATUS_BASE + 0x80)
        .to_string()
        .contains("sc=0x80"));
}

// On a regular file the kernel refuses the command (no uring_cmd
// handler): the set-up works and the completion carries the errno.
#[test]
fn commands_to_a_regular_file_complete_with_an_errno() {
    use std::os::fd::AsRawFd;
    let path = std::env::temp_dir().join(format!("numio-passthru-{}", std::process::id()));
    std::fs::write(&path, vec![0u8; 1 << 16]).unwrap();
    let f = std::fs::File::open(&path).unwrap();
    let (buf, _) = crate::sys::NodeBuffer::new(4 * 4096, None).unwrap();
    let ns = NvmeNamespace {
        nsid: 1,
        lba_bytes: 4096,
    };
    let region = (buf.as_ptr(), buf.len_bytes());
    let b = PassthruBackend::new(f.as_raw_fd(), ns, 4, region, &UringOptions::default());
    let Ok(mut b) = b else {
        eprintln!("skipping: io_uring with SQE128+CQE32 is not available here");
        let _ = std::fs::remove_file(&path);
        return;
    };
    assert!(b.features.iter().any(|f| f == "SQE128+CQE32"));
    let e = b.probe().unwrap_err().to_string();
    assert!(
        e.contains("not supported") && e.contains("/dev/ngXnY"),
        "{e}"
    );
    drop(b);
    // IOPOLL is asked for but not used (it crashed Linux 6.1): a note says so.
    let polled = UringOptions {
        iopoll: true,
        ..UringOptions::default()
    };
    let b = PassthruBackend::new(f.as_raw_fd(), ns, 4, region, &polled).unwrap();
    assert!(
        !b.features.iter().any(|f| f == "IOPOLL"),
        "{:?}",
        b.features
    );
    assert!(
        b.notes.iter().any(|n| n.contains("IOPOLL is not used")),
        "{:?}",
        b.notes
    );
    drop(b);
    let _ = std::fs::remove_file(&path);
}
