//! Typed views of the kernel's submission queue entries, laid out field by
//! field as `struct io_uring_sqe` of `include/uapi/linux/io_uring.h` and
//! `struct nvme_uring_cmd` of `include/uapi/linux/nvme_ioctl.h`, each
//! offset asserted at compile time. Entries are built by the io-uring
//! crate's opcode builders (which know each opcode's fields and flags) and
//! converted once into these views; the hot path then writes the few
//! per-I/O fields by name.

use io_uring::squeue;

/// The first 48 bytes of every SQE (`struct io_uring_sqe` up to its
/// command area). Unions are named by the member numio uses, the others
/// in the field's doc.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SqeHead {
    /// `IORING_OP_*`.
    pub opcode: u8,
    /// `IOSQE_*` flags (`IOSQE_FIXED_FILE`: `fd` is a registered index).
    pub flags: u8,
    /// I/O priority.
    pub ioprio: u16,
    /// File descriptor or registered file index.
    pub fd: i32,
    /// File offset; also `addr2`, and for `IORING_OP_URING_CMD` the
    /// `cmd_op` in the low 32 bits.
    pub off: u64,
    /// Buffer address; also `splice_off_in`.
    pub addr: u64,
    /// Buffer length in bytes (or iovec count).
    pub len: u32,
    /// `rw_flags`, and the other opcodes' flags (`uring_cmd_flags`, ...).
    pub op_flags: u32,
    /// Returned in the completion.
    pub user_data: u64,
    /// Registered buffer index (with a `*_FIXED` opcode or
    /// `IORING_URING_CMD_FIXED`); also `buf_group`.
    pub buf_index: u16,
    /// Credentials to use (0: the submitter's).
    pub personality: u16,
    /// `splice_fd_in`; also `file_index`, `optlen`, `addr_len`.
    pub splice_fd_in: i32,
}

/// A 64-byte SQE: the head and its 16-byte tail (`addr3`, `__pad2`, or the
/// start of a command).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Sqe {
    /// Bytes 0..48.
    pub head: SqeHead,
    /// `addr3`; also `optval`.
    pub addr3: u64,
    /// `__pad2[0]`.
    pub pad2: u64,
}

/// The kernel's `struct nvme_uring_cmd`: an NVMe command as
/// `IORING_OP_URING_CMD` with `cmd_op` [`NVME_URING_CMD_IO`] carries it.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NvmeUringCmd {
    /// NVMe opcode (`nvme_spec::command::io::READ`, ...).
    pub opcode: u8,
    /// Command flags (PSDT: the kernel sets it).
    pub flags: u8,
    /// Reserved.
    pub rsvd1: u16,
    /// Namespace id.
    pub nsid: u32,
    /// Command dword 2.
    pub cdw2: u32,
    /// Command dword 3.
    pub cdw3: u32,
    /// Metadata buffer address.
    pub metadata: u64,
    /// Data buffer address (or registered buffer offset with
    /// `IORING_URING_CMD_FIXED`).
    pub addr: u64,
    /// Metadata length in bytes.
    pub metadata_len: u32,
    /// Data length in bytes.
    pub data_len: u32,
    /// Starting LBA, low 32 bits (Read, Write).
    pub cdw10: u32,
    /// Starting LBA, high 32 bits (Read, Write).
    pub cdw11: u32,
    /// Number of logical blocks, 0's based, in bits 15:0 (Read, Write).
    pub cdw12: u32,
    /// Command dword 13.
    pub cdw13: u32,
    /// Command dword 14.
    pub cdw14: u32,
    /// Command dword 15.
    pub cdw15: u32,
    /// Timeout in milliseconds (0: the driver's default).
    pub timeout_ms: u32,
    /// Reserved.
    pub rsvd2: u32,
}

/// A 128-byte SQE (`IORING_SETUP_SQE128`) of `IORING_OP_URING_CMD` to an
/// NVMe generic device: the head, then [`NvmeUringCmd`] in the 80-byte
/// command area that starts at byte 48.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NvmeSqe {
    /// Bytes 0..48 (`off` holds `cmd_op`).
    pub head: SqeHead,
    /// Bytes 48..120.
    pub cmd: NvmeUringCmd,
    /// The last 8 bytes of the command area, unused.
    pub cmd_pad: u64,
}

/// `NVME_URING_CMD_IO`: `_IOWR('N', 0x80, struct nvme_uring_cmd)`.
pub const NVME_URING_CMD_IO: u32 =
    (3 << 30) | ((size_of::<NvmeUringCmd>() as u32) << 16) | ((b'N' as u32) << 8) | 0x80;

// The kernel ABI, field by field (include/uapi/linux/io_uring.h).
const _: () = {
    use std::mem::{align_of, offset_of};
    assert!(size_of::<SqeHead>() == 48);
    assert!(offset_of!(SqeHead, opcode) == 0);
    assert!(offset_of!(SqeHead, flags) == 1);
    assert!(offset_of!(SqeHead, ioprio) == 2);
    assert!(offset_of!(SqeHead, fd) == 4);
    assert!(offset_of!(SqeHead, off) == 8);
    assert!(offset_of!(SqeHead, addr) == 16);
    assert!(offset_of!(SqeHead, len) == 24);
    assert!(offset_of!(SqeHead, op_flags) == 28);
    assert!(offset_of!(SqeHead, user_data) == 32);
    assert!(offset_of!(SqeHead, buf_index) == 40);
    assert!(offset_of!(SqeHead, personality) == 42);
    assert!(offset_of!(SqeHead, splice_fd_in) == 44);
    assert!(size_of::<Sqe>() == 64 && align_of::<Sqe>() == 8);
    assert!(offset_of!(Sqe, addr3) == 48);
    assert!(offset_of!(Sqe, pad2) == 56);
    assert!(size_of::<Sqe>() == size_of::<squeue::Entry>());
    assert!(align_of::<Sqe>() <= align_of::<squeue::Entry>());
};
// include/uapi/linux/nvme_ioctl.h, and the command area at byte 48.
const _: () = {
    use std::mem::{align_of, offset_of};
    assert!(size_of::<NvmeUringCmd>() == 72);
    assert!(offset_of!(NvmeUringCmd, flags) == 1);
    assert!(offset_of!(NvmeUringCmd, nsid) == 4);
    assert!(offset_of!(NvmeUringCmd, cdw2) == 8);
    assert!(offset_of!(NvmeUringCmd, metadata) == 16);
    assert!(offset_of!(NvmeUringCmd, addr) == 24);
    assert!(offset_of!(NvmeUringCmd, metadata_len) == 32);
    assert!(offset_of!(NvmeUringCmd, data_len) == 36);
    assert!(offset_of!(NvmeUringCmd, cdw10) == 40);
    assert!(offset_of!(NvmeUringCmd, cdw11) == 44);
    assert!(offset_of!(NvmeUringCmd, cdw12) == 48);
    assert!(offset_of!(NvmeUringCmd, cdw15) == 60);
    assert!(offset_of!(NvmeUringCmd, timeout_ms) == 64);
    assert!(size_of::<NvmeSqe>() == 128 && align_of::<NvmeSqe>() == 8);
    assert!(offset_of!(NvmeSqe, cmd) == 48);
    assert!(offset_of!(NvmeSqe, cmd_pad) == 120);
    assert!(size_of::<NvmeSqe>() == size_of::<squeue::Entry128>());
    assert!(align_of::<NvmeSqe>() <= align_of::<squeue::Entry128>());
};

impl NvmeUringCmd {
    /// Little-endian bytes as the SQE's 80-byte command area holds them
    /// (what the io-uring crate's `UringCmd80::cmd` takes).
    pub fn to_cmd_area(self) -> [u8; 80] {
        let mut b = [0u8; 80];
        b[0] = self.opcode;
        b[1] = self.flags;
        b[2..4].copy_from_slice(&self.rsvd1.to_le_bytes());
        let words32 = [
            (4, self.nsid),
            (8, self.cdw2),
            (12, self.cdw3),
            (32, self.metadata_len),
            (36, self.data_len),
            (40, self.cdw10),
            (44, self.cdw11),
            (48, self.cdw12),
            (52, self.cdw13),
            (56, self.cdw14),
            (60, self.cdw15),
            (64, self.timeout_ms),
            (68, self.rsvd2),
        ];
        for (at, v) in words32 {
            b[at..at + 4].copy_from_slice(&v.to_le_bytes());
        }
        b[16..24].copy_from_slice(&self.metadata.to_le_bytes());
        b[24..32].copy_from_slice(&self.addr.to_le_bytes());
        b
    }
}

/// An SQE view of one ring entry size, and the io-uring crate's entry of
/// that size it is made from. Sealed: only [`Sqe`] and [`NvmeSqe`], whose
/// layouts are asserted above.
pub trait SqeView: Copy + Default + sealed::Sealed + 'static {
    /// The crate's entry type of the same size (the ring's `S`).
    type Entry: squeue::EntryMarker;
    /// The view of `e`, field for field.
    fn from_entry(e: Self::Entry) -> Self;
    /// The crate's entry with these fields, to push through the crate.
    fn into_entry(self) -> Self::Entry;
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for super::Sqe {}
    impl Sealed for super::NvmeSqe {}
}

impl SqeView for Sqe {
    type Entry = squeue::Entry;
    fn from_entry(e: squeue::Entry) -> Sqe {
        // SAFETY: `squeue::Entry` is a repr(C) wrapper of the kernel's
        // `io_uring_sqe`, 64 bytes (asserted above, and by transmute), made
        // of integers and unions of integers only, as is `Sqe`: every bit
        // pattern of one is a valid value of the other, and the fields
        // line up with the same kernel header.
        unsafe { std::mem::transmute::<squeue::Entry, Sqe>(e) }
    }
    fn into_entry(self) -> squeue::Entry {
        // SAFETY: as in `from_entry`, the other way round: every bit
        // pattern of 64 bytes is a valid `io_uring_sqe`.
        unsafe { std::mem::transmute::<Sqe, squeue::Entry>(self) }
    }
}

impl SqeView for NvmeSqe {
    type Entry = squeue::Entry128;
    fn from_entry(e: squeue::Entry128) -> NvmeSqe {
        // SAFETY: `squeue::Entry128` is a repr(C) pair of the kernel's
        // 64-byte `io_uring_sqe` and 64 more bytes, 128 in all (asserted
        // above), integers only, as is `NvmeSqe`: every bit pattern of one
        // is a valid value of the other.
        unsafe { std::mem::transmute::<squeue::Entry128, NvmeSqe>(e) }
    }
    fn into_entry(self) -> squeue::Entry128 {
        // SAFETY: as in `from_entry`, the other way round.
        unsafe { std::mem::transmute::<NvmeSqe, squeue::Entry128>(self) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use io_uring::{opcode, types};

    // The views read what the crate's builders wrote, field by field.
    #[test]
    fn views_match_the_crates_builders() {
        let buf = 0x7f12_3456_7000usize as *mut u8;
        let e = opcode::ReadFixed::new(types::Fixed(3), buf, 12_288, 9)
            .offset(0x1234_5678_9000)
            .build()
            .user_data(77);
        let s = Sqe::from_entry(e.clone());
        assert_eq!(s.head.opcode, opcode::ReadFixed::CODE);
        assert_eq!(s.head.flags, squeue::Flags::FIXED_FILE.bits());
        assert_eq!(s.head.fd, 3);
        assert_eq!(s.head.off, 0x1234_5678_9000);
        assert_eq!(s.head.addr, buf as u64);
        assert_eq!(s.head.len, 12_288);
        assert_eq!(s.head.user_data, 77);
        assert_eq!(s.head.buf_index, 9);
        assert_eq!(Sqe::from_entry(s.into_entry()), s);

        let cmd = NvmeUringCmd {
            opcode: 0x02,
            nsid: 7,
            addr: buf as u64,
            data_len: 8192,
            cdw10: 0xaabb_ccdd,
            cdw11: 0x12,
            cdw12: 1,
            ..NvmeUringCmd::default()
        };
        let e = opcode::UringCmd80::new(types::Fd(5), NVME_URING_CMD_IO)
            .cmd(cmd.to_cmd_area())
            .buf_index(Some(4))
            .build()
            .user_data(9);
        let n = NvmeSqe::from_entry(e);
        assert_eq!(n.head.opcode, opcode::UringCmd80::CODE);
        assert_eq!(n.head.fd, 5);
        assert_eq!(n.head.off as u32, NVME_URING_CMD_IO, "cmd_op");
        assert_eq!(n.head.buf_index, 4);
        assert_eq!(n.head.user_data, 9);
        assert_eq!(n.cmd, cmd);
        assert_eq!(n.cmd_pad, 0);
        assert_eq!(NvmeSqe::from_entry(n.into_entry()), n);
    }

    #[test]
    fn ioctl_number_matches_the_kernel_header() {
        // _IOWR('N', 0x80, struct nvme_uring_cmd) as printed by a C compiler.
        assert_eq!(NVME_URING_CMD_IO, 0xc048_4e80);
    }

    #[test]
    fn command_bytes_follow_the_uapi_layout() {
        let cmd = NvmeUringCmd {
            opcode: 0x02,
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
}
