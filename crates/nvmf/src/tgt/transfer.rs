//! Host-to-controller data through R2T and H2CData.
//!
//! A write of `len` bytes is asked for in R2Ts of at most MAXH2CDATA bytes
//! each, at offsets 0, MAXH2CDATA, 2 x MAXH2CDATA, ...; up to the host's
//! MAXR2T + 1 are outstanding at once (at most
//! [`R2T_OUTSTANDING_LIMIT`](super::config::R2T_OUTSTANDING_LIMIT)), and each
//! R2T answered in full lets the next one go. Data must arrive in offset
//! order, each H2CData PDU inside one outstanding R2T; anything else is a
//! fatal error (C2HTermReq with FES and FEI).

use nvme_spec::tcp::{self, fes, pdu_type, FatalError};

use super::queue::Connection;
use super::request::RequestState;

/// Byte offsets of header fields named in FEI.
const FEI_CCCID: u32 = 8;
const FEI_TTAG: u32 = 10;
const FEI_DATAO: u32 = 12;
const FEI_DATAL: u32 = 16;

impl Connection {
    /// Sends R2Ts for request `slot` until the host's outstanding limit is
    /// reached or the whole transfer has been asked for.
    pub(crate) fn send_r2ts(&mut self, slot: usize) {
        let chunk = self.target.limits.max_h2c_data_bytes;
        let max_out = self.r2t_outstanding_max;
        let r = &mut self.reqs[slot];
        let done_r2ts = if r.received_bytes == r.len_bytes {
            r.len_bytes.div_ceil(chunk)
        } else {
            r.received_bytes / chunk
        };
        while r.r2t_sent_bytes < r.len_bytes
            && r.r2t_sent_bytes.div_ceil(chunk) - done_r2ts < max_out
        {
            let off = r.r2t_sent_bytes;
            let n = chunk.min(r.len_bytes - off);
            let body = tcp::data_body(r.sqe.cid, slot as u16, off, n);
            tcp::frame(&mut self.tx, pdu_type::R2T, 0, &body, &[], &self.framing);
            r.r2t_sent_bytes += n;
        }
    }

    pub(crate) fn on_h2c_data(&mut self, hdr: tcp::DataHeader, data: &[u8], digest_ok: bool) {
        let slot = hdr.ttag as usize;
        let chunk = self.target.limits.max_h2c_data_bytes;
        let err = |fes, fei, what| FatalError { fes, fei, what };
        let hb = hdr_bytes(&hdr);
        if slot >= self.reqs.len() {
            let e = err(
                fes::INVALID_HEADER_FIELD,
                FEI_TTAG,
                "H2CData TTAG names no transfer",
            );
            return self.fatal(e, &hb);
        }
        let r = &mut self.reqs[slot];
        if r.state() != RequestState::AwaitingH2CData {
            let e = err(
                fes::PDU_SEQUENCE_ERROR,
                0,
                "H2CData without an outstanding R2T",
            );
            return self.fatal(e, &hb);
        }
        if r.sqe.cid != hdr.cccid {
            let e = err(
                fes::INVALID_HEADER_FIELD,
                FEI_CCCID,
                "H2CData CCCID does not match the R2T",
            );
            return self.fatal(e, &hb);
        }
        if data.len() as u32 > chunk {
            let e = err(
                fes::DATA_LIMIT_EXCEEDED,
                0,
                "H2CData larger than MAXH2CDATA",
            );
            return self.fatal(e, &hb);
        }
        if hdr.data_offset != r.received_bytes || hdr.data_offset >= r.r2t_sent_bytes {
            let e = err(
                fes::DATA_OUT_OF_RANGE,
                FEI_DATAO,
                "H2CData offset is not where the outstanding R2Ts' data continues",
            );
            return self.fatal(e, &hb);
        }
        // The R2T this PDU belongs to ends at the next MAXH2CDATA boundary.
        let r2t_end = ((hdr.data_offset / chunk + 1) * chunk).min(r.r2t_sent_bytes);
        let end = hdr.data_offset as u64 + data.len() as u64;
        if data.is_empty() || end > r2t_end as u64 {
            let e = err(
                fes::DATA_OUT_OF_RANGE,
                FEI_DATAL,
                "H2CData length is zero or runs past its R2T",
            );
            return self.fatal(e, &hb);
        }
        let off = hdr.data_offset as usize;
        r.buf[off..off + data.len()].copy_from_slice(data);
        r.received_bytes += data.len() as u32;
        r.digest_failed |= !digest_ok;
        if r.received_bytes == r.len_bytes {
            self.advance(slot);
        } else if r.received_bytes == r2t_end {
            self.send_r2ts(slot);
        }
    }
}

fn hdr_bytes(h: &tcp::DataHeader) -> [u8; 24] {
    let mut v = [0u8; 24];
    h.ch.encode(&mut v);
    v[8..24].copy_from_slice(&tcp::data_body(
        h.cccid,
        h.ttag,
        h.data_offset,
        h.data_length,
    ));
    v
}
