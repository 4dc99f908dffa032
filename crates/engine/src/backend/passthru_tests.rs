//! Unit tests of the passthru backend: the kernel ABI of the command, the
//! SQE template patching, completion mapping and the probe on a file.

use super::*;

fn words(e: squeue::Entry128) -> [u64; 16] {
    let mut e = e;
    *sqe_words_mut(&mut e)
}

#[test]
fn ioctl_number_matches_the_kernel_header() {
    // _IOWR('N', 0x80, struct nvme_uring_cmd) as printed by a C compiler.
    assert_eq!(NVME_URING_CMD_IO, 0xc048_4e80);
}

#[test]
fn command_bytes_follow_the_uapi_layout() {
    let cmd = NvmeUringCmd {
        opcode: NVME_CMD_READ,
        nsid: 0x0102_0304,
        addr: 0x1122_3344_5566_7788,
        data_len: 8192,
        cdw10: 0xaabb_ccdd,
        cdw11: 0x12,
        cdw12: 1,
        ..NvmeUringCmd::default()
    };
    let b = cmd.to_cmd_area();
    assert_eq!(b[0], 0x02);
    assert_eq!(&b[4..8], &[4, 3, 2, 1]);
    assert_eq!(&b[24..32], &0x1122_3344_5566_7788u64.to_le_bytes());
    assert_eq!(&b[36..40], &8192u32.to_le_bytes());
    assert_eq!(&b[40..48], &0x12_aabb_ccddu64.to_le_bytes());
    assert_eq!(&b[48..52], &1u32.to_le_bytes());
    assert!(b[72..].iter().all(|&x| x == 0));
}

// Pins the SQE word layout `patch_sqe` relies on against the crate's
// builder fed with the full command.
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
            let got = patch_sqe(&words(build(blank, 0)), &io, lba_shift, mask);
            assert_eq!(
                got,
                words(build(full, 77).user_data(77)),
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
