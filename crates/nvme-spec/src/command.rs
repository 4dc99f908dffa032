//! Submission and completion queue entries, SGL descriptors and opcodes.

use crate::bytes::{get_u16, get_u32, get_u64, put_u16, put_u32, put_u64};
use crate::status::Status;

/// A 16-byte SGL descriptor (NVMe base spec 4.4).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SglDescriptor {
    /// Address or, for in-capsule data, the offset into the capsule.
    pub addr: u64,
    /// Length of the data in bytes.
    pub length: u32,
    /// Reserved bytes 12..15.
    pub rsvd: [u8; 3],
    /// Type (bits 7:4) and sub type (bits 3:0).
    pub type_byte: u8,
}
const _: () = assert!(core::mem::size_of::<SglDescriptor>() == 16);

/// SGL type byte for data carried in the command capsule (data block, offset).
pub const SGL_IN_CAPSULE: u8 = 0x01;
/// SGL type byte for data moved by the transport (transport data block,
/// transport specific sub type A): NVMe/TCP's R2T/H2CData or C2HData.
pub const SGL_TRANSPORT: u8 = 0x5A;

impl SglDescriptor {
    /// Wire size.
    pub const SIZE: usize = 16;

    /// Decodes from 16 bytes.
    pub fn decode(b: &[u8]) -> Self {
        Self {
            addr: get_u64(b, 0),
            length: get_u32(b, 8),
            rsvd: [b[12], b[13], b[14]],
            type_byte: b[15],
        }
    }

    /// Encodes into 16 bytes.
    pub fn encode(&self, b: &mut [u8]) {
        put_u64(b, 0, self.addr);
        put_u32(b, 8, self.length);
        b[12..15].copy_from_slice(&self.rsvd);
        b[15] = self.type_byte;
    }
}

/// A 64-byte submission queue entry, kept as its dwords.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Sqe {
    /// Opcode (CDW0 bits 7:0).
    pub opcode: u8,
    /// Fused operation (bits 1:0) and PSDT (bits 7:6).
    pub flags: u8,
    /// Command identifier.
    pub cid: u16,
    /// Namespace id; for fabrics commands byte 4 is the fabrics command type.
    pub nsid: u32,
    /// Command dword 2.
    pub cdw2: u32,
    /// Command dword 3.
    pub cdw3: u32,
    /// Metadata pointer.
    pub mptr: u64,
    /// Data pointer (an SGL descriptor on fabrics).
    pub dptr: SglDescriptor,
    /// Command dword 10.
    pub cdw10: u32,
    /// Command dword 11.
    pub cdw11: u32,
    /// Command dword 12.
    pub cdw12: u32,
    /// Command dword 13.
    pub cdw13: u32,
    /// Command dword 14.
    pub cdw14: u32,
    /// Command dword 15.
    pub cdw15: u32,
}
const _: () = assert!(core::mem::size_of::<Sqe>() == 64);

impl Sqe {
    /// Wire size.
    pub const SIZE: usize = 64;

    /// Decodes from at least 64 bytes.
    pub fn decode(b: &[u8]) -> Self {
        Self {
            opcode: b[0],
            flags: b[1],
            cid: get_u16(b, 2),
            nsid: get_u32(b, 4),
            cdw2: get_u32(b, 8),
            cdw3: get_u32(b, 12),
            mptr: get_u64(b, 16),
            dptr: SglDescriptor::decode(&b[24..40]),
            cdw10: get_u32(b, 40),
            cdw11: get_u32(b, 44),
            cdw12: get_u32(b, 48),
            cdw13: get_u32(b, 52),
            cdw14: get_u32(b, 56),
            cdw15: get_u32(b, 60),
        }
    }

    /// Encodes into 64 bytes.
    pub fn encode(&self) -> [u8; 64] {
        let mut b = [0u8; 64];
        b[0] = self.opcode;
        b[1] = self.flags;
        put_u16(&mut b, 2, self.cid);
        put_u32(&mut b, 4, self.nsid);
        put_u32(&mut b, 8, self.cdw2);
        put_u32(&mut b, 12, self.cdw3);
        put_u64(&mut b, 16, self.mptr);
        self.dptr.encode(&mut b[24..40]);
        for (i, v) in [
            self.cdw10, self.cdw11, self.cdw12, self.cdw13, self.cdw14, self.cdw15,
        ]
        .into_iter()
        .enumerate()
        {
            put_u32(&mut b, 40 + 4 * i, v);
        }
        b
    }

    /// Fabrics command type (byte 4) when `opcode` is [`admin::FABRICS`].
    pub fn fctype(&self) -> u8 {
        (self.nsid & 0xFF) as u8
    }

    /// PSDT: 0 = PRPs, 1 or 2 = SGLs.
    pub fn psdt(&self) -> u8 {
        self.flags >> 6
    }

    /// Starting LBA of an NVM read/write-like command (CDW10/11).
    pub fn slba(&self) -> u64 {
        self.cdw10 as u64 | ((self.cdw11 as u64) << 32)
    }

    /// Number of logical blocks, one-based (CDW12 bits 15:0 are zero-based).
    pub fn nlb(&self) -> u32 {
        (self.cdw12 & 0xFFFF) + 1
    }
}

/// A 16-byte completion queue entry.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Cqe {
    /// Command specific result (DW0).
    pub result: u32,
    /// DW1 (reserved / command specific).
    pub dw1: u32,
    /// Submission queue head pointer.
    pub sqhd: u16,
    /// Submission queue identifier.
    pub sqid: u16,
    /// Command identifier.
    pub cid: u16,
    /// Phase (bit 0) and status field (bits 15:1).
    pub status_phase: u16,
}
const _: () = assert!(core::mem::size_of::<Cqe>() == 16);

impl Cqe {
    /// Wire size.
    pub const SIZE: usize = 16;

    /// Decodes from at least 16 bytes.
    pub fn decode(b: &[u8]) -> Self {
        Self {
            result: get_u32(b, 0),
            dw1: get_u32(b, 4),
            sqhd: get_u16(b, 8),
            sqid: get_u16(b, 10),
            cid: get_u16(b, 12),
            status_phase: get_u16(b, 14),
        }
    }

    /// Encodes into 16 bytes.
    pub fn encode(&self) -> [u8; 16] {
        let mut b = [0u8; 16];
        put_u32(&mut b, 0, self.result);
        put_u32(&mut b, 4, self.dw1);
        put_u16(&mut b, 8, self.sqhd);
        put_u16(&mut b, 10, self.sqid);
        put_u16(&mut b, 12, self.cid);
        put_u16(&mut b, 14, self.status_phase);
        b
    }

    /// The status, without the phase bit.
    pub fn status(&self) -> Status {
        Status::from_field(self.status_phase >> 1)
    }

    /// Sets the status (phase bit left 0, as fabrics does).
    pub fn set_status(&mut self, s: Status) {
        self.status_phase = s.field() << 1;
    }
}

/// Admin command opcodes.
pub mod admin {
    /// Get Log Page.
    pub const GET_LOG_PAGE: u8 = 0x02;
    /// Identify.
    pub const IDENTIFY: u8 = 0x06;
    /// Abort.
    pub const ABORT: u8 = 0x08;
    /// Set Features.
    pub const SET_FEATURES: u8 = 0x09;
    /// Get Features.
    pub const GET_FEATURES: u8 = 0x0A;
    /// Asynchronous Event Request.
    pub const ASYNC_EVENT: u8 = 0x0C;
    /// Keep Alive.
    pub const KEEP_ALIVE: u8 = 0x18;
    /// Fabrics commands (Connect, Property Get/Set, ...).
    pub const FABRICS: u8 = 0x7F;
}

/// NVM command set I/O opcodes.
pub mod io {
    /// Flush.
    pub const FLUSH: u8 = 0x00;
    /// Write.
    pub const WRITE: u8 = 0x01;
    /// Read.
    pub const READ: u8 = 0x02;
    /// Write Zeroes.
    pub const WRITE_ZEROES: u8 = 0x08;
    /// Dataset Management.
    pub const DSM: u8 = 0x09;
    /// DSM CDW11 bit: attribute deallocate.
    pub const DSM_ATTR_DEALLOCATE: u32 = 1 << 2;
    /// Size of one DSM range entry in bytes.
    pub const DSM_RANGE_SIZE: usize = 16;
    /// Write Zeroes CDW12 bit 25: deallocate.
    pub const WZ_DEALLOCATE: u32 = 1 << 25;
}

/// One Dataset Management range: context attributes, length in blocks, start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DsmRange {
    /// Context attributes.
    pub cattr: u32,
    /// Length in logical blocks (one-based).
    pub nlb: u32,
    /// Starting LBA.
    pub slba: u64,
}

impl DsmRange {
    /// Decodes a 16-byte range.
    pub fn decode(b: &[u8]) -> Self {
        Self {
            cattr: get_u32(b, 0),
            nlb: get_u32(b, 4),
            slba: get_u64(b, 8),
        }
    }

    /// Encodes a 16-byte range.
    pub fn encode(&self) -> [u8; 16] {
        let mut b = [0u8; 16];
        put_u32(&mut b, 0, self.cattr);
        put_u32(&mut b, 4, self.nlb);
        put_u64(&mut b, 8, self.slba);
        b
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::status::{Status, StatusCodeType};

    #[test]
    fn sqe_round_trip_and_offsets() {
        let s = Sqe {
            opcode: io::WRITE,
            flags: 0x40,
            cid: 0x1234,
            nsid: 7,
            cdw10: 0xdead_beef,
            cdw11: 1,
            cdw12: 7,
            dptr: SglDescriptor {
                addr: 0,
                length: 4096,
                rsvd: [0; 3],
                type_byte: SGL_TRANSPORT,
            },
            ..Default::default()
        };
        let b = s.encode();
        assert_eq!(b[0], 1);
        assert_eq!(&b[2..4], &[0x34, 0x12]);
        assert_eq!(b[39], SGL_TRANSPORT);
        assert_eq!(&b[32..36], &4096u32.to_le_bytes());
        assert_eq!(Sqe::decode(&b), s);
        assert_eq!(s.slba(), 0x1_dead_beef);
        assert_eq!(s.nlb(), 8);
        assert_eq!(s.psdt(), 1);
    }

    #[test]
    fn cqe_round_trip_and_status_bits() {
        let mut c = Cqe {
            result: 5,
            sqhd: 3,
            sqid: 1,
            cid: 9,
            ..Default::default()
        };
        c.set_status(Status::new(StatusCodeType::CommandSpecific, 0x82).with_dnr());
        let b = c.encode();
        assert_eq!(Cqe::decode(&b), c);
        // SC 0x82 at bits 8:1, SCT 1 at bits 11:9, DNR at bit 15.
        assert_eq!(c.status_phase, (0x82 << 1) | (1 << 9) | (1 << 15));
        assert_eq!(c.status().sct(), StatusCodeType::CommandSpecific);
        assert_eq!(c.status().sc(), 0x82);
        assert!(c.status().dnr());
    }

    #[test]
    fn dsm_range_round_trip() {
        let r = DsmRange {
            cattr: 0,
            nlb: 16,
            slba: 1 << 40,
        };
        assert_eq!(DsmRange::decode(&r.encode()), r);
    }
}
