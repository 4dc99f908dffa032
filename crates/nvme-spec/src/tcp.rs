//! NVMe/TCP PDUs (NVMe/TCP transport specification 1.0, section 3.6).
//!
//! Every PDU starts with an 8-byte common header; the PDU-specific header
//! follows, then an optional header digest, padding up to PDO, data and an
//! optional data digest. [`frame`] builds any PDU; [`decode`] validates a
//! complete PDU for one direction and reports a violation as the Fatal Error
//! Status and Fatal Error Information that a TermReq must carry.

use crate::bytes::{get_u16, get_u32, put_u16, put_u32};
use crate::command::{Cqe, Sqe};
use crate::crc32c::crc32c;

/// PDU type values.
pub mod pdu_type {
    /// Initialize Connection Request.
    pub const IC_REQ: u8 = 0x00;
    /// Initialize Connection Response.
    pub const IC_RESP: u8 = 0x01;
    /// Host to controller terminate connection request.
    pub const H2C_TERM_REQ: u8 = 0x02;
    /// Controller to host terminate connection request.
    pub const C2H_TERM_REQ: u8 = 0x03;
    /// Command capsule.
    pub const CAPSULE_CMD: u8 = 0x04;
    /// Response capsule.
    pub const CAPSULE_RESP: u8 = 0x05;
    /// Host to controller data.
    pub const H2C_DATA: u8 = 0x06;
    /// Controller to host data.
    pub const C2H_DATA: u8 = 0x07;
    /// Ready to transfer.
    pub const R2T: u8 = 0x09;
}

/// Common header flag bits.
pub mod flags {
    /// A header digest follows the header.
    pub const HDGST: u8 = 0x01;
    /// A data digest follows the data.
    pub const DDGST: u8 = 0x02;
    /// H2CData/C2HData: last PDU of the transfer.
    pub const DATA_LAST: u8 = 0x04;
    /// C2HData: the command completed successfully; no response capsule follows.
    pub const DATA_SUCCESS: u8 = 0x08;
}

/// Fatal error status values carried by TermReq PDUs.
pub mod fes {
    /// Invalid PDU header field (FEI: byte offset of the field).
    pub const INVALID_HEADER_FIELD: u16 = 0x01;
    /// PDU sequence error.
    pub const PDU_SEQUENCE_ERROR: u16 = 0x02;
    /// Header digest error (FEI: the digest received).
    pub const HEADER_DIGEST_ERROR: u16 = 0x03;
    /// Data transfer out of range.
    pub const DATA_OUT_OF_RANGE: u16 = 0x04;
    /// R2T limit exceeded (H2C) / data transfer limit exceeded (C2H).
    pub const DATA_LIMIT_EXCEEDED: u16 = 0x05;
    /// Unsupported parameter (FEI: byte offset of the field).
    pub const UNSUPPORTED_PARAMETER: u16 = 0x06;
}

/// Digest option bits of ICReq/ICResp byte 11.
pub const DIGEST_HEADER: u8 = 0x01;
/// Data digest option bit.
pub const DIGEST_DATA: u8 = 0x02;
/// Length of one digest.
pub const DIGEST_LEN: usize = 4;
/// The only PDU format version.
pub const PFV_1_0: u16 = 0;
/// Smallest MAXH2CDATA a controller may announce.
pub const MIN_MAXH2CDATA: u32 = 4096;
/// Largest TermReq PDU: header plus up to 128 bytes of the offending header.
pub const TERM_REQ_MAX_PLEN: usize = 152;

/// The 8-byte common header.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CommonHeader {
    /// PDU type.
    pub pdu_type: u8,
    /// Flags.
    pub flags: u8,
    /// Header length (common plus PDU-specific header, without digest).
    pub hlen: u8,
    /// PDU data offset, 0 when the PDU has no data.
    pub pdo: u8,
    /// Total PDU length in bytes.
    pub plen: u32,
}
const _: () = assert!(core::mem::size_of::<CommonHeader>() == 8);

impl CommonHeader {
    /// Wire size.
    pub const SIZE: usize = 8;

    /// Decodes the first 8 bytes.
    pub fn decode(b: &[u8]) -> Self {
        Self {
            pdu_type: b[0],
            flags: b[1],
            hlen: b[2],
            pdo: b[3],
            plen: get_u32(b, 4),
        }
    }

    /// Encodes into the first 8 bytes.
    pub fn encode(&self, b: &mut [u8]) {
        b[0] = self.pdu_type;
        b[1] = self.flags;
        b[2] = self.hlen;
        b[3] = self.pdo;
        put_u32(b, 4, self.plen);
    }
}

/// ICReq: host's connection parameters (128 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IcReq {
    /// Common header.
    pub ch: CommonHeader,
    /// PDU format version.
    pub pfv: u16,
    /// Host PDU data alignment, zero-based in dwords.
    pub hpda: u8,
    /// Digest options requested.
    pub digest: u8,
    /// Maximum outstanding R2Ts per command, zero-based.
    pub maxr2t: u32,
    /// Reserved.
    pub rsvd: [u8; 112],
}
const _: () = assert!(core::mem::size_of::<IcReq>() == 128);

/// ICResp: controller's connection parameters (128 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IcResp {
    /// Common header.
    pub ch: CommonHeader,
    /// PDU format version.
    pub pfv: u16,
    /// Controller PDU data alignment, zero-based in dwords.
    pub cpda: u8,
    /// Digest options enabled.
    pub digest: u8,
    /// Largest H2CData payload the controller accepts.
    pub maxh2cdata: u32,
    /// Reserved.
    pub rsvd: [u8; 112],
}
const _: () = assert!(core::mem::size_of::<IcResp>() == 128);

/// Header of a command capsule: common header and the SQE (72 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CapsuleCmdHeader {
    /// Common header.
    pub ch: CommonHeader,
    /// The command.
    pub sqe: Sqe,
}
const _: () = assert!(core::mem::size_of::<CapsuleCmdHeader>() == 72);

/// Header of a response capsule: common header and the CQE (24 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CapsuleRespHeader {
    /// Common header.
    pub ch: CommonHeader,
    /// The completion.
    pub cqe: Cqe,
}
const _: () = assert!(core::mem::size_of::<CapsuleRespHeader>() == 24);

/// Header shared by H2CData, C2HData and R2T (24 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct DataHeader {
    /// Common header.
    pub ch: CommonHeader,
    /// Command capsule command id.
    pub cccid: u16,
    /// Transfer tag (R2T, H2CData); reserved in C2HData.
    pub ttag: u16,
    /// Offset of this data (or requested data) within the command's buffer.
    pub data_offset: u32,
    /// Length of this data (or requested data).
    pub data_length: u32,
    /// Reserved.
    pub rsvd: u32,
}
const _: () = assert!(core::mem::size_of::<DataHeader>() == 24);

/// Header of H2CTermReq/C2HTermReq (24 bytes). FEI sits at byte 10, so it is
/// kept as two halves to keep `repr(C)` equal to the wire layout.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TermReqHeader {
    /// Common header.
    pub ch: CommonHeader,
    /// Fatal error status.
    pub fes: u16,
    /// Fatal error information, low half.
    pub fei_lo: u16,
    /// Fatal error information, high half.
    pub fei_hi: u16,
    /// Reserved.
    pub rsvd: [u8; 10],
}
const _: () = assert!(core::mem::size_of::<TermReqHeader>() == 24);

impl TermReqHeader {
    /// Fatal error information.
    pub fn fei(&self) -> u32 {
        self.fei_lo as u32 | ((self.fei_hi as u32) << 16)
    }
}

/// Header length of each PDU type, `None` for an unknown type.
pub fn header_len(pdu_type: u8) -> Option<usize> {
    Some(match pdu_type {
        pdu_type::IC_REQ | pdu_type::IC_RESP => 128,
        pdu_type::CAPSULE_CMD => 72,
        pdu_type::CAPSULE_RESP
        | pdu_type::H2C_DATA
        | pdu_type::C2H_DATA
        | pdu_type::R2T
        | pdu_type::H2C_TERM_REQ
        | pdu_type::C2H_TERM_REQ => 24,
        _ => return None,
    })
}

/// Which side sent a PDU: the decoder accepts only that side's types.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// Host to controller: ICReq, CapsuleCmd, H2CData, H2CTermReq.
    HostToController,
    /// Controller to host: ICResp, CapsuleResp, C2HData, R2T, C2HTermReq.
    ControllerToHost,
}

/// Per-connection framing parameters negotiated by ICReq/ICResp.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Framing {
    /// Header digests on every PDU but IC and TermReq.
    pub header_digest: bool,
    /// Data digests on every PDU carrying data.
    pub data_digest: bool,
    /// Alignment of data in PDUs this side receives, in bytes (1 = none).
    pub rx_data_align: usize,
    /// Alignment of data in PDUs this side sends, in bytes (1 = none).
    pub tx_data_align: usize,
}

impl Framing {
    /// Before ICReq/ICResp: no digests, no alignment.
    pub const INITIAL: Framing = Framing {
        header_digest: false,
        data_digest: false,
        rx_data_align: 1,
        tx_data_align: 1,
    };
}

/// A protocol violation found while decoding: the TermReq it calls for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("NVMe/TCP fatal error: fes={fes:#x} fei={fei} ({what})")]
pub struct FatalError {
    /// Fatal error status ([`fes`]).
    pub fes: u16,
    /// Fatal error information (a byte offset for header field errors).
    pub fei: u32,
    /// Human description.
    pub what: &'static str,
}

impl FatalError {
    fn field(fei: u32, what: &'static str) -> Self {
        Self {
            fes: fes::INVALID_HEADER_FIELD,
            fei,
            what,
        }
    }
}

/// A decoded, validated PDU borrowing its data from the receive buffer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Pdu<'a> {
    /// ICReq.
    IcReq(IcReq),
    /// ICResp.
    IcResp(IcResp),
    /// Command capsule with its in-capsule data.
    CapsuleCmd {
        /// The command.
        sqe: Sqe,
        /// In-capsule data (may be empty).
        data: &'a [u8],
        /// False when a data digest was present and wrong.
        data_digest_ok: bool,
    },
    /// Response capsule.
    CapsuleResp(Cqe),
    /// H2CData or C2HData.
    Data {
        /// Header (ch.pdu_type tells the direction, ch.flags LAST/SUCCESS).
        hdr: DataHeader,
        /// Payload.
        data: &'a [u8],
        /// False when a data digest was present and wrong.
        data_digest_ok: bool,
    },
    /// R2T.
    R2t(DataHeader),
    /// H2CTermReq or C2HTermReq.
    TermReq {
        /// Header.
        hdr: TermReqHeader,
        /// The offending PDU header bytes that were quoted.
        quoted: &'a [u8],
    },
}

/// Checks a common header as soon as its 8 bytes are in; returns the PDU
/// length to wait for. `max_plen` bounds memory use per connection.
pub fn check_common_header(
    b: &[u8],
    dir: Direction,
    framing: &Framing,
    max_plen: usize,
) -> Result<CommonHeader, FatalError> {
    if b.len() < CommonHeader::SIZE {
        return Err(FatalError::field(4, "PDU shorter than the common header"));
    }
    let ch = CommonHeader::decode(b);
    let allowed = match dir {
        Direction::HostToController => matches!(
            ch.pdu_type,
            pdu_type::IC_REQ | pdu_type::CAPSULE_CMD | pdu_type::H2C_DATA | pdu_type::H2C_TERM_REQ
        ),
        Direction::ControllerToHost => matches!(
            ch.pdu_type,
            pdu_type::IC_RESP
                | pdu_type::CAPSULE_RESP
                | pdu_type::C2H_DATA
                | pdu_type::R2T
                | pdu_type::C2H_TERM_REQ
        ),
    };
    if !allowed {
        return Err(FatalError::field(0, "PDU type not valid in this direction"));
    }
    let hlen = header_len(ch.pdu_type).unwrap_or(0);
    if ch.hlen as usize != hlen {
        return Err(FatalError::field(2, "HLEN does not match the PDU type"));
    }
    let is_term = matches!(ch.pdu_type, pdu_type::H2C_TERM_REQ | pdu_type::C2H_TERM_REQ);
    let is_ic = matches!(ch.pdu_type, pdu_type::IC_REQ | pdu_type::IC_RESP);
    let hd = framing.header_digest && !is_term && !is_ic;
    if (ch.flags & flags::HDGST != 0) != hd {
        return Err(FatalError::field(
            1,
            "HDGSTF flag does not match negotiated header digest",
        ));
    }
    let min = hlen + if hd { DIGEST_LEN } else { 0 };
    let plen = ch.plen as usize;
    if plen < min || plen > max_plen || (is_ic && plen != 128) {
        return Err(FatalError::field(4, "PLEN out of range"));
    }
    if is_term && plen > TERM_REQ_MAX_PLEN {
        return Err(FatalError::field(4, "TermReq PLEN above 152"));
    }
    Ok(ch)
}

/// Decodes one complete PDU (`b.len()` == PLEN) after [`check_common_header`].
pub fn decode<'a>(b: &'a [u8], dir: Direction, framing: &Framing) -> Result<Pdu<'a>, FatalError> {
    let ch = check_common_header(b, dir, framing, b.len())?;
    if ch.plen as usize != b.len() {
        return Err(FatalError::field(4, "PLEN does not match the buffer"));
    }
    let hlen = ch.hlen as usize;
    let hd = ch.flags & flags::HDGST != 0;
    if hd {
        let got = get_u32(b, hlen);
        if crc32c(&b[..hlen]) != got {
            return Err(FatalError {
                fes: fes::HEADER_DIGEST_ERROR,
                fei: got,
                what: "header digest mismatch",
            });
        }
    }
    let (data, data_digest_ok) = split_data(b, &ch, framing)?;
    Ok(match ch.pdu_type {
        pdu_type::IC_REQ => Pdu::IcReq(decode_icreq(b)?),
        pdu_type::IC_RESP => Pdu::IcResp(decode_icresp(b)?),
        pdu_type::CAPSULE_CMD => Pdu::CapsuleCmd {
            sqe: Sqe::decode(&b[8..72]),
            data,
            data_digest_ok,
        },
        pdu_type::CAPSULE_RESP => Pdu::CapsuleResp(Cqe::decode(&b[8..24])),
        pdu_type::H2C_DATA | pdu_type::C2H_DATA => {
            let hdr = decode_data_header(b);
            if hdr.data_length as usize != data.len() {
                return Err(FatalError::field(16, "DATAL does not match the PDU data"));
            }
            if data.is_empty() {
                return Err(FatalError::field(16, "data PDU without data"));
            }
            Pdu::Data {
                hdr,
                data,
                data_digest_ok,
            }
        }
        pdu_type::R2T => Pdu::R2t(decode_data_header(b)),
        _ => Pdu::TermReq {
            hdr: TermReqHeader {
                ch,
                fes: get_u16(b, 8),
                fei_lo: get_u16(b, 10),
                fei_hi: get_u16(b, 12),
                rsvd: [0; 10],
            },
            quoted: &b[24..],
        },
    })
}

fn split_data<'a>(
    b: &'a [u8],
    ch: &CommonHeader,
    framing: &Framing,
) -> Result<(&'a [u8], bool), FatalError> {
    let hlen = ch.hlen as usize;
    let hd = if ch.flags & flags::HDGST != 0 {
        DIGEST_LEN
    } else {
        0
    };
    let may_carry = matches!(
        ch.pdu_type,
        pdu_type::CAPSULE_CMD | pdu_type::H2C_DATA | pdu_type::C2H_DATA
    );
    let plen = ch.plen as usize;
    let has_data = may_carry && plen > hlen + hd;
    if !has_data {
        if ch.pdo != 0 && !matches!(ch.pdu_type, pdu_type::CAPSULE_CMD) {
            return Err(FatalError::field(3, "PDO set on a PDU without data"));
        }
        if ch.flags & flags::DDGST != 0 {
            return Err(FatalError::field(1, "DDGSTF set on a PDU without data"));
        }
        let is_term = matches!(ch.pdu_type, pdu_type::H2C_TERM_REQ | pdu_type::C2H_TERM_REQ);
        if !is_term && plen != hlen + hd {
            return Err(FatalError::field(4, "PLEN longer than the header"));
        }
        return Ok((&[], true));
    }
    let pdo = ch.pdo as usize;
    if pdo < hlen + hd || pdo >= plen || pdo % framing.rx_data_align.max(1) != 0 {
        return Err(FatalError::field(3, "PDO out of range or misaligned"));
    }
    let dd = ch.flags & flags::DDGST != 0;
    if dd != framing.data_digest {
        return Err(FatalError::field(
            1,
            "DDGSTF flag does not match negotiated data digest",
        ));
    }
    let end = if dd { plen - DIGEST_LEN } else { plen };
    if end <= pdo {
        return Err(FatalError::field(4, "PLEN leaves no room for data"));
    }
    let data = &b[pdo..end];
    let ok = !dd || crc32c(data) == get_u32(b, end);
    Ok((data, ok))
}

fn decode_icreq(b: &[u8]) -> Result<IcReq, FatalError> {
    let r = IcReq {
        ch: CommonHeader::decode(b),
        pfv: get_u16(b, 8),
        hpda: b[10],
        digest: b[11],
        maxr2t: get_u32(b, 12),
        rsvd: [0; 112],
    };
    if r.pfv != PFV_1_0 {
        return Err(FatalError {
            fes: fes::UNSUPPORTED_PARAMETER,
            fei: 8,
            what: "unsupported PDU format version",
        });
    }
    if r.hpda > 31 {
        return Err(FatalError {
            fes: fes::UNSUPPORTED_PARAMETER,
            fei: 10,
            what: "HPDA above 31",
        });
    }
    Ok(r)
}

fn decode_icresp(b: &[u8]) -> Result<IcResp, FatalError> {
    let r = IcResp {
        ch: CommonHeader::decode(b),
        pfv: get_u16(b, 8),
        cpda: b[10],
        digest: b[11],
        maxh2cdata: get_u32(b, 12),
        rsvd: [0; 112],
    };
    if r.pfv != PFV_1_0 {
        return Err(FatalError::field(8, "unsupported PDU format version"));
    }
    if r.maxh2cdata < MIN_MAXH2CDATA || r.maxh2cdata % 4 != 0 {
        return Err(FatalError::field(
            12,
            "MAXH2CDATA below 4096 or not a dword multiple",
        ));
    }
    Ok(r)
}

fn decode_data_header(b: &[u8]) -> DataHeader {
    DataHeader {
        ch: CommonHeader::decode(b),
        cccid: get_u16(b, 8),
        ttag: get_u16(b, 10),
        data_offset: get_u32(b, 12),
        data_length: get_u32(b, 16),
        rsvd: get_u32(b, 20),
    }
}

/// Appends one PDU to `out`: `hdr` is the PDU-specific header (bytes 8 to
/// HLEN), `data` its payload. Flags, HLEN, PDO, PLEN, padding and digests come
/// from `pdu_type`, `extra_flags` and `framing`.
pub fn frame(
    out: &mut Vec<u8>,
    pdu_type: u8,
    extra_flags: u8,
    hdr: &[u8],
    data: &[u8],
    framing: &Framing,
) {
    let base = out.len();
    let dd = frame_head(out, pdu_type, extra_flags, hdr, data.len(), framing);
    out.extend_from_slice(data);
    if dd {
        out.extend_from_slice(&crc32c(data).to_le_bytes());
    }
    debug_assert_eq!(
        out.len() - base,
        CommonHeader::decode(&out[base..]).plen as usize
    );
}

/// Appends what [`frame`] writes ahead of `data_len` bytes of payload: the
/// common and PDU-specific headers, the header digest and the padding up to
/// PDO, with PLEN counting the payload and its digest. The caller appends
/// the payload and then, where this returns true, its data digest
/// ([`crc32c`] of the payload, little-endian): a sender that hands the
/// payload to the socket from elsewhere (zero copy) frames with this.
pub fn frame_head(
    out: &mut Vec<u8>,
    pdu_type: u8,
    extra_flags: u8,
    hdr: &[u8],
    data_len: usize,
    framing: &Framing,
) -> bool {
    let hlen = 8 + hdr.len();
    let is_term = matches!(pdu_type, pdu_type::H2C_TERM_REQ | pdu_type::C2H_TERM_REQ);
    let is_ic = matches!(pdu_type, pdu_type::IC_REQ | pdu_type::IC_RESP);
    let hd = framing.header_digest && !is_term && !is_ic;
    let dd = framing.data_digest && data_len > 0 && !is_term;
    let hd_len = if hd { DIGEST_LEN } else { 0 };
    let (pdo, pad) = if data_len == 0 || is_term {
        (0, 0)
    } else {
        let align = framing.tx_data_align.max(1);
        let start = (hlen + hd_len).div_ceil(align) * align;
        (start, start - hlen - hd_len)
    };
    let plen = hlen + hd_len + pad + data_len + if dd { DIGEST_LEN } else { 0 };
    let mut fl = extra_flags;
    if hd {
        fl |= flags::HDGST;
    }
    if dd {
        fl |= flags::DDGST;
    }
    let base = out.len();
    let ch = CommonHeader {
        pdu_type,
        flags: fl,
        hlen: hlen as u8,
        pdo: pdo as u8,
        plen: plen as u32,
    };
    out.resize(base + 8, 0);
    ch.encode(&mut out[base..]);
    out.extend_from_slice(hdr);
    if hd {
        let d = crc32c(&out[base..base + hlen]);
        out.extend_from_slice(&d.to_le_bytes());
    }
    out.resize(out.len() + pad, 0);
    dd
}

/// PDU-specific bytes (8..128) of an ICReq.
pub fn icreq_body(hpda: u8, digest: u8, maxr2t: u32) -> [u8; 120] {
    let mut b = [0u8; 120];
    put_u16(&mut b, 0, PFV_1_0);
    b[2] = hpda;
    b[3] = digest;
    put_u32(&mut b, 4, maxr2t);
    b
}

/// PDU-specific bytes (8..128) of an ICResp.
pub fn icresp_body(cpda: u8, digest: u8, maxh2cdata: u32) -> [u8; 120] {
    icreq_body(cpda, digest, maxh2cdata)
}

/// PDU-specific bytes (8..24) of H2CData, C2HData or R2T.
pub fn data_body(cccid: u16, ttag: u16, offset: u32, length: u32) -> [u8; 16] {
    let mut b = [0u8; 16];
    put_u16(&mut b, 0, cccid);
    put_u16(&mut b, 2, ttag);
    put_u32(&mut b, 4, offset);
    put_u32(&mut b, 8, length);
    b
}

/// PDU-specific bytes (8..24) of a TermReq.
pub fn term_body(fes: u16, fei: u32) -> [u8; 16] {
    let mut b = [0u8; 16];
    put_u16(&mut b, 0, fes);
    put_u32(&mut b, 2, fei);
    b
}

/// Appends a TermReq quoting up to 128 bytes of the offending header.
pub fn frame_term_req(out: &mut Vec<u8>, pdu_type: u8, err: &FatalError, offending: &[u8]) {
    let quoted = &offending[..offending.len().min(TERM_REQ_MAX_PLEN - 24)];
    let base = out.len();
    frame(
        out,
        pdu_type,
        0,
        &term_body(err.fes, err.fei),
        &[],
        &Framing::INITIAL,
    );
    out.extend_from_slice(quoted);
    let plen = (out.len() - base) as u32;
    put_u32(&mut out[base..], 4, plen);
}

#[cfg(test)]
#[path = "tcp_tests.rs"]
mod tests;
