//! The NVMe/RDMA transport binding (NVMe over Fabrics, RDMA transport
//! specification): the RDMA CM private data of connect, accept and reject,
//! and keyed SGL data block descriptors.
//!
//! A command capsule is one RDMA SEND of the 64-byte SQE followed by any
//! in-capsule data (an SGL data block with the offset sub type,
//! [`crate::command::SGL_IN_CAPSULE`]); a response capsule is one SEND of
//! the 16-byte CQE. Other data moves by the target's RDMA READ (host to
//! controller) or RDMA WRITE (controller to host) of the host memory a
//! keyed SGL data block names.

use crate::bytes::{get_u16, get_u32, get_u64, put_u16, put_u32, put_u64};
use crate::command::SglDescriptor;

/// Record format of every private data structure (1.0).
pub const RECFMT: u16 = 0;
/// Length of the connect request's private data.
pub const CM_REQ_LEN: usize = 32;
/// Length of the accept's private data.
pub const CM_REP_LEN: usize = 32;
/// Length of the reject's private data.
pub const CM_REJ_LEN: usize = 4;

/// SGL type byte: keyed SGL data block, address sub type.
pub const SGL_KEYED: u8 = 0x40;
/// SGL type byte: keyed SGL data block, invalidate key sub type (the
/// target answers with SEND with Invalidate of the key).
pub const SGL_KEYED_INVALIDATE: u8 = 0x4F;

/// Identify Controller SGLS bit 2: keyed SGL data block descriptors.
pub const SGLS_KEYED: u32 = 1 << 2;

/// RDMA_CM_REQUEST private data: what the host asks for a queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CmRequest {
    /// Record format (0).
    pub recfmt: u16,
    /// Queue id (0: admin).
    pub qid: u16,
    /// Host receive queue size: responses the host can take at once.
    pub hrqsize: u16,
    /// Host submission queue size, zero-based (the Connect's SQSIZE).
    pub hsqsize: u16,
    /// Controller id (0xFFFF: any; Linux sends it for I/O queues).
    pub cntlid: u16,
}

impl CmRequest {
    /// Encodes 32 bytes.
    pub fn encode(&self) -> [u8; CM_REQ_LEN] {
        let mut b = [0u8; CM_REQ_LEN];
        put_u16(&mut b, 0, self.recfmt);
        put_u16(&mut b, 2, self.qid);
        put_u16(&mut b, 4, self.hrqsize);
        put_u16(&mut b, 6, self.hsqsize);
        put_u16(&mut b, 8, self.cntlid);
        b
    }

    /// Decodes, or names what is wrong as a reject status.
    pub fn decode(b: &[u8]) -> Result<Self, RejectStatus> {
        if b.len() < CM_REQ_LEN {
            return Err(RejectStatus::InvalidPrivateDataLength);
        }
        let r = Self {
            recfmt: get_u16(b, 0),
            qid: get_u16(b, 2),
            hrqsize: get_u16(b, 4),
            hsqsize: get_u16(b, 6),
            cntlid: get_u16(b, 8),
        };
        if r.recfmt != RECFMT {
            return Err(RejectStatus::InvalidRecfmt);
        }
        Ok(r)
    }
}

/// RDMA_CM_ACCEPT private data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CmAccept {
    /// Record format (0).
    pub recfmt: u16,
    /// Controller receive queue size: commands the target can take at once.
    pub crqsize: u16,
}

impl CmAccept {
    /// Encodes 32 bytes.
    pub fn encode(&self) -> [u8; CM_REP_LEN] {
        let mut b = [0u8; CM_REP_LEN];
        put_u16(&mut b, 0, self.recfmt);
        put_u16(&mut b, 2, self.crqsize);
        b
    }

    /// Decodes (short data is an error).
    pub fn decode(b: &[u8]) -> Option<Self> {
        (b.len() >= 4).then(|| Self {
            recfmt: get_u16(b, 0),
            crqsize: get_u16(b, 2),
        })
    }
}

/// RDMA_CM_REJECT status codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u16)]
pub enum RejectStatus {
    /// Invalid private data length.
    InvalidPrivateDataLength = 1,
    /// Invalid RECFMT.
    InvalidRecfmt = 2,
    /// Invalid QID.
    InvalidQid = 3,
    /// Invalid HSQSIZE.
    InvalidHsqsize = 4,
    /// Invalid HRQSIZE.
    InvalidHrqsize = 5,
    /// No resources.
    NoResources = 6,
    /// Invalid IRD.
    InvalidIrd = 7,
    /// Invalid ORD.
    InvalidOrd = 8,
    /// Invalid CNTLID.
    InvalidCntlid = 9,
}

impl RejectStatus {
    /// Encodes the reject's private data (RECFMT, STS).
    pub fn encode(self) -> [u8; CM_REJ_LEN] {
        let mut b = [0u8; CM_REJ_LEN];
        put_u16(&mut b, 0, RECFMT);
        put_u16(&mut b, 2, self as u16);
        b
    }

    /// Decodes a reject's private data.
    pub fn decode(b: &[u8]) -> Option<Self> {
        if b.len() < 4 {
            return None;
        }
        Some(match get_u16(b, 2) {
            1 => Self::InvalidPrivateDataLength,
            2 => Self::InvalidRecfmt,
            3 => Self::InvalidQid,
            4 => Self::InvalidHsqsize,
            5 => Self::InvalidHrqsize,
            6 => Self::NoResources,
            7 => Self::InvalidIrd,
            8 => Self::InvalidOrd,
            9 => Self::InvalidCntlid,
            _ => return None,
        })
    }

    /// What the status means.
    pub fn describe(self) -> &'static str {
        match self {
            Self::InvalidPrivateDataLength => "invalid private data length",
            Self::InvalidRecfmt => "invalid RECFMT",
            Self::InvalidQid => "invalid queue id",
            Self::InvalidHsqsize => "invalid HSQSIZE (a queue size the target does not take)",
            Self::InvalidHrqsize => "invalid HRQSIZE",
            Self::NoResources => "no resources",
            Self::InvalidIrd => "invalid IRD",
            Self::InvalidOrd => "invalid ORD",
            Self::InvalidCntlid => "invalid controller id",
        }
    }
}

/// A keyed SGL data block descriptor: host memory the target reaches by
/// RDMA READ or WRITE.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct KeyedSgl {
    /// Host address.
    pub addr: u64,
    /// Length, bytes (24 bits).
    pub length: u32,
    /// Remote key.
    pub key: u32,
    /// Whether the target should invalidate the key with its response.
    pub invalidate: bool,
}

impl KeyedSgl {
    /// Reads a keyed descriptor out of an SQE's DPTR (None when it is of
    /// another type).
    pub fn from_dptr(d: &SglDescriptor) -> Option<Self> {
        if d.type_byte != SGL_KEYED && d.type_byte != SGL_KEYED_INVALIDATE {
            return None;
        }
        let mut b = [0u8; 16];
        d.encode(&mut b);
        Some(Self {
            addr: get_u64(&b, 0),
            length: u32::from(b[8]) | u32::from(b[9]) << 8 | u32::from(b[10]) << 16,
            key: get_u32(&b, 11),
            invalidate: d.type_byte == SGL_KEYED_INVALIDATE,
        })
    }

    /// As an SQE's DPTR.
    pub fn to_dptr(&self) -> SglDescriptor {
        let mut b = [0u8; 16];
        put_u64(&mut b, 0, self.addr);
        b[8] = self.length as u8;
        b[9] = (self.length >> 8) as u8;
        b[10] = (self.length >> 16) as u8;
        put_u32(&mut b, 11, self.key);
        b[15] = if self.invalidate {
            SGL_KEYED_INVALIDATE
        } else {
            SGL_KEYED
        };
        SglDescriptor::decode(&b)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cm_request_round_trip_and_checks() {
        let r = CmRequest {
            recfmt: 0,
            qid: 3,
            hrqsize: 128,
            hsqsize: 127,
            cntlid: 1,
        };
        let b = r.encode();
        // Linux's struct nvme_rdma_cm_req: le16 recfmt, qid, hrqsize, hsqsize.
        assert_eq!(&b[..8], &[0, 0, 3, 0, 128, 0, 127, 0]);
        assert_eq!(CmRequest::decode(&b), Ok(r));
        assert_eq!(
            CmRequest::decode(&b[..16]),
            Err(RejectStatus::InvalidPrivateDataLength)
        );
        let mut bad = b;
        bad[0] = 1;
        assert_eq!(CmRequest::decode(&bad), Err(RejectStatus::InvalidRecfmt));
    }

    #[test]
    fn reject_and_accept_layouts() {
        assert_eq!(RejectStatus::InvalidHsqsize.encode(), [0, 0, 4, 0]);
        assert_eq!(
            RejectStatus::decode(&[0, 0, 6, 0]),
            Some(RejectStatus::NoResources)
        );
        assert_eq!(RejectStatus::decode(&[0, 0, 60, 0]), None);
        let a = CmAccept {
            recfmt: 0,
            crqsize: 32,
        };
        assert_eq!(&a.encode()[..4], &[0, 0, 32, 0]);
        assert_eq!(CmAccept::decode(&a.encode()), Some(a));
    }

    #[test]
    fn keyed_sgl_layout() {
        let k = KeyedSgl {
            addr: 0x1122_3344_5566_7788,
            length: 0x12_3456,
            key: 0xAABB_CCDD,
            invalidate: true,
        };
        let d = k.to_dptr();
        let mut b = [0u8; 16];
        d.encode(&mut b);
        assert_eq!(&b[8..11], &[0x56, 0x34, 0x12]);
        assert_eq!(&b[11..15], &[0xDD, 0xCC, 0xBB, 0xAA]);
        assert_eq!(b[15], 0x4F);
        assert_eq!(KeyedSgl::from_dptr(&d), Some(k));
        assert_eq!(KeyedSgl::from_dptr(&SglDescriptor::default()), None);
    }
}
