//! NVMe over PCIe: the controller registers in BAR0 (NVMe base spec 3.1.4),
//! their fields, the doorbells, the admin commands that create and delete
//! I/O queues, and PRP data pointers. Values only; the user-space driver
//! (the engine's `vfio` backend) reads and writes them.

/// Controller register offsets in BAR0.
pub mod reg {
    /// Controller Capabilities (64 bits).
    pub const CAP: usize = 0x00;
    /// Version.
    pub const VS: usize = 0x08;
    /// Interrupt Mask Set.
    pub const INTMS: usize = 0x0C;
    /// Interrupt Mask Clear.
    pub const INTMC: usize = 0x10;
    /// Controller Configuration.
    pub const CC: usize = 0x14;
    /// Controller Status.
    pub const CSTS: usize = 0x1C;
    /// Admin Queue Attributes.
    pub const AQA: usize = 0x24;
    /// Admin Submission Queue base address (64 bits).
    pub const ASQ: usize = 0x28;
    /// Admin Completion Queue base address (64 bits).
    pub const ACQ: usize = 0x30;
    /// The first doorbell (admin SQ tail).
    pub const DOORBELLS: usize = 0x1000;
}

/// Controller Capabilities, decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cap {
    /// Maximum queue entries supported (one-based here).
    pub mqes: u32,
    /// Contiguous queues required.
    pub cqr: bool,
    /// Worst-case time to become ready, in milliseconds (TO × 500 ms).
    pub timeout_ms: u64,
    /// Doorbell stride in bytes (4 << DSTRD).
    pub doorbell_stride: usize,
    /// NVM command set supported (CSS bit 0).
    pub nvm_command_set: bool,
    /// Smallest memory page size, bytes (4 KiB << MPSMIN).
    pub page_min: u64,
    /// Largest memory page size, bytes (4 KiB << MPSMAX).
    pub page_max: u64,
}

impl Cap {
    /// Decodes the 64-bit register.
    pub fn decode(v: u64) -> Cap {
        Cap {
            mqes: (v & 0xFFFF) as u32 + 1,
            cqr: v >> 16 & 1 == 1,
            timeout_ms: (v >> 24 & 0xFF).max(1) * 500,
            doorbell_stride: 4 << (v >> 32 & 0xF),
            nvm_command_set: v >> 37 & 1 == 1,
            page_min: 4096 << (v >> 48 & 0xF),
            page_max: 4096 << (v >> 52 & 0xF),
        }
    }
}

/// Controller Configuration fields.
pub mod cc {
    /// Enable.
    pub const EN: u32 = 1;
    /// Shutdown Notification: normal shutdown (bits 15:14 = 01b).
    pub const SHN_NORMAL: u32 = 1 << 14;
    /// Shutdown Notification mask.
    pub const SHN_MASK: u32 = 3 << 14;

    /// CC for an enabled controller with the NVM command set, round robin
    /// arbitration, memory pages of 4 KiB << `mps`, 64-byte SQ entries and
    /// 16-byte CQ entries.
    pub fn enable(mps: u32) -> u32 {
        EN | (mps & 0xF) << 7 | 6 << 16 | 4 << 20
    }
}

/// Controller Status fields.
pub mod csts {
    /// Ready.
    pub const RDY: u32 = 1;
    /// Controller Fatal Status.
    pub const CFS: u32 = 1 << 1;
    /// Shutdown Status mask (bits 3:2).
    pub const SHST_MASK: u32 = 3 << 2;
    /// Shutdown processing complete.
    pub const SHST_COMPLETE: u32 = 2 << 2;
    /// What a read of a removed device (or one whose link is down) returns.
    pub const GONE: u32 = u32::MAX;
}

/// Admin Queue Attributes for queues of `sq` and `cq` entries (one-based).
pub fn aqa(sq: u32, cq: u32) -> u32 {
    (sq - 1) & 0xFFF | ((cq - 1) & 0xFFF) << 16
}

/// Byte offset in BAR0 of queue `qid`'s SQ tail doorbell (`cq` false) or
/// CQ head doorbell (`cq` true), for doorbell stride `stride` bytes.
pub fn doorbell(qid: u16, cq: bool, stride: usize) -> usize {
    reg::DOORBELLS + (2 * qid as usize + usize::from(cq)) * stride
}

/// Admin opcodes of the PCIe queue model (beside [`crate::command::admin`]).
pub mod admin {
    /// Delete I/O Submission Queue.
    pub const DELETE_SQ: u8 = 0x00;
    /// Create I/O Submission Queue.
    pub const CREATE_SQ: u8 = 0x01;
    /// Delete I/O Completion Queue.
    pub const DELETE_CQ: u8 = 0x04;
    /// Create I/O Completion Queue.
    pub const CREATE_CQ: u8 = 0x05;
}

/// CDW10 of Create I/O SQ/CQ: queue `qid` of `entries` (one-based).
pub fn create_queue_cdw10(qid: u16, entries: u32) -> u32 {
    (entries - 1) << 16 | u32::from(qid)
}

/// CDW11 of Create I/O CQ: physically contiguous, interrupts off (polled).
pub const CREATE_CQ_POLLED: u32 = 1;

/// CDW11 of Create I/O SQ: physically contiguous, completions to `cqid`.
pub fn create_sq_cdw11(cqid: u16) -> u32 {
    u32::from(cqid) << 16 | 1
}

/// The two PRP entries of a transfer of `len` bytes starting at the
/// page-aligned bus address `addr`, for memory pages of `page` bytes: PRP2
/// is 0 for one page, the second page's bus address (`second`, asked only
/// then: without an IOMMU it need not be `addr + page`) for two, else
/// `list` (the bus address of a PRP list holding the pages after the
/// first; at most `page / 8` entries fit one list page, so `len` ≤
/// `page × page / 8`, 2 MiB for 4 KiB pages, needs no chaining).
#[inline]
pub fn prps(addr: u64, len: u32, page: u64, second: impl FnOnce() -> u64, list: u64) -> (u64, u64) {
    let len = u64::from(len);
    if len <= page {
        (addr, 0)
    } else if len <= 2 * page {
        (addr, second())
    } else {
        (addr, list)
    }
}

/// CDW0 bits 15:14 (PSDT) = 01b: the data pointer is an SGL (and MPTR,
/// were there metadata, one contiguous buffer). 00b, the default, is PRPs.
pub const PSDT_SGL: u64 = 1 << 14;

/// SGL descriptor type byte (byte 15) of a Data Block descriptor: type 0h,
/// sub type 0h (an address).
pub const SGL_DATA_BLOCK: u8 = 0x00;

/// DPTR (SQE qwords 3 and 4) as one SGL Data Block descriptor for `len`
/// bytes at bus address `addr`: the whole transfer in one descriptor, so a
/// buffer contiguous in bus address space needs no list (unlike PRPs).
pub fn sgl_data_block(addr: u64, len: u32) -> (u64, u64) {
    (addr, u64::from(len) | u64::from(SGL_DATA_BLOCK) << 56)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cap_fields_at_the_specs_bits() {
        // QEMU's NVMe: MQES 2047, CQR, TO 15 (7.5 s), DSTRD 0, CSS NVM, MPSMIN 0, MPSMAX 4.
        let v: u64 = 0x7ff | 1 << 16 | 0x0f << 24 | 1 << 37 | 4 << 52;
        let c = Cap::decode(v);
        assert_eq!(
            c,
            Cap {
                mqes: 2048,
                cqr: true,
                timeout_ms: 7500,
                doorbell_stride: 4,
                nvm_command_set: true,
                page_min: 4096,
                page_max: 65536,
            }
        );
        assert_eq!(Cap::decode(2 << 32).doorbell_stride, 16);
    }

    #[test]
    fn configuration_queues_and_doorbells() {
        assert_eq!(cc::enable(0), 0x0046_0001);
        assert_eq!(aqa(64, 64), 0x003F_003F);
        assert_eq!(doorbell(0, false, 4), 0x1000);
        assert_eq!(doorbell(0, true, 4), 0x1004);
        assert_eq!(doorbell(3, true, 4), 0x101C);
        assert_eq!(doorbell(1, false, 16), 0x1020);
        assert_eq!(create_queue_cdw10(2, 128), 0x007F_0002);
        assert_eq!(create_sq_cdw11(2), 0x0002_0001);
    }

    #[test]
    fn prp_entries_by_length() {
        let page = 4096;
        let second = || 0x11000;
        let unasked = || -> u64 { panic!("the second page is asked for only two pages") };
        assert_eq!(prps(0x10000, 512, page, unasked, 0x9000), (0x10000, 0));
        assert_eq!(prps(0x10000, 4096, page, unasked, 0x9000), (0x10000, 0));
        assert_eq!(
            prps(0x10000, 8192, page, second, 0x9000),
            (0x10000, 0x11000)
        );
        // Without an IOMMU the second page is wherever it is.
        assert_eq!(
            prps(0x10000, 8192, page, || 0x7_3000, 0x9000),
            (0x10000, 0x7_3000)
        );
        assert_eq!(
            prps(0x10000, 8193, page, unasked, 0x9000),
            (0x10000, 0x9000)
        );
    }

    #[test]
    fn sgl_data_block_is_address_then_length_and_type_zero() {
        let (a, b) = sgl_data_block(0x1_0000_2000, 128 << 10);
        assert_eq!(a, 0x1_0000_2000);
        // Bytes 8..12 length, 12..15 reserved, 15 type 0 (data block).
        assert_eq!(b.to_le_bytes(), [0, 0, 2, 0, 0, 0, 0, 0]);
        // The same bytes as the generic descriptor's encoding.
        let mut raw = [0u8; 16];
        crate::command::SglDescriptor {
            addr: a,
            length: 128 << 10,
            rsvd: [0; 3],
            type_byte: SGL_DATA_BLOCK,
        }
        .encode(&mut raw);
        assert_eq!(raw[..8], a.to_le_bytes());
        assert_eq!(raw[8..], b.to_le_bytes());
        assert_eq!(PSDT_SGL, 0x4000);
    }
}
