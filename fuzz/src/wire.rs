//! A host's side of an NVMe/TCP queue as bytes: ICReq, command capsules
//! with in-capsule or transport (R2T) data, H2CData, and the controller's
//! PDUs read back. Built on `nvme_spec::tcp::frame` and the SQEs of
//! `nvmf::host::command`, so the streams are what numio's own host sends.

use nvme_spec::command::{SglDescriptor, SGL_IN_CAPSULE, SGL_TRANSPORT};
use nvme_spec::fabrics::{ConnectCmd, ConnectData};
use nvme_spec::tcp::{self, flags, pdu_type, Direction, Framing, Pdu};
use nvme_spec::{Cqe, Sqe};

/// The subsystem every fuzz target exports.
pub const SUBNQN: &str = "nqn.2026-01.io.numio:fuzz";
/// The host the harnesses connect as.
pub const HOSTNQN: &str = "nqn.2026-01.io.numio:fuzz-host";
/// Its host identifier.
pub const HOSTID: [u8; 16] = [0x5A; 16];

/// PSDT bits of an SQE that carries an SGL (CDW0 bits 7:6 = 01b).
const PSDT_SGL: u8 = 0x40;

/// What a session's ICReq asks for: digests and MAXR2T.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct IcParams {
    /// Header digests.
    pub header_digest: bool,
    /// Data digests.
    pub data_digest: bool,
    /// MAXR2T (zero-based: R2Ts outstanding per command less one).
    pub maxr2t: u32,
}

impl IcParams {
    /// The framing both sides use once the ICReq/ICResp exchange is done
    /// (the target grants every digest asked for; its CPDA is 0, so the
    /// host aligns its data to 4 bytes).
    pub fn framing(&self) -> Framing {
        Framing {
            header_digest: self.header_digest,
            data_digest: self.data_digest,
            rx_data_align: 1,
            tx_data_align: 4,
        }
    }
}

/// Bytes a host sends on one queue, appended in order.
#[derive(Debug, Clone)]
pub struct HostStream {
    /// The stream so far.
    pub out: Vec<u8>,
    framing: Framing,
}

impl Default for HostStream {
    fn default() -> Self {
        Self::new()
    }
}

impl HostStream {
    /// An empty stream, before ICReq.
    pub fn new() -> Self {
        Self {
            out: Vec::new(),
            framing: Framing::INITIAL,
        }
    }

    /// A stream that continues after an ICReq asking for `ic` (the
    /// harness sent that ICReq itself).
    pub fn after_icreq(ic: IcParams) -> Self {
        Self {
            out: Vec::new(),
            framing: ic.framing(),
        }
    }

    /// Takes the bytes so far; the framing stays.
    pub fn take(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.out)
    }

    /// ICReq asking for `ic`; later PDUs use the framing it negotiates.
    pub fn icreq(&mut self, ic: IcParams) -> &mut Self {
        let mut digest = 0;
        if ic.header_digest {
            digest |= tcp::DIGEST_HEADER;
        }
        if ic.data_digest {
            digest |= tcp::DIGEST_DATA;
        }
        let body = tcp::icreq_body(0, digest, ic.maxr2t);
        tcp::frame(
            &mut self.out,
            pdu_type::IC_REQ,
            0,
            &body,
            &[],
            &Framing::INITIAL,
        );
        self.framing = ic.framing();
        self
    }

    /// A command capsule as it is: the SQE's SGL is the caller's.
    pub fn raw_capsule(&mut self, sqe: &Sqe, data: &[u8]) -> &mut Self {
        tcp::frame(
            &mut self.out,
            pdu_type::CAPSULE_CMD,
            0,
            &sqe.encode(),
            data,
            &self.framing,
        );
        self
    }

    /// A command with `data` in the capsule (an in-capsule SGL of its
    /// length; none when `data` is empty).
    pub fn command(&mut self, mut sqe: Sqe, data: &[u8]) -> &mut Self {
        if !data.is_empty() {
            sgl(&mut sqe, SGL_IN_CAPSULE, data.len() as u32);
        }
        self.raw_capsule(&sqe, data)
    }

    /// A command whose `len` bytes of data the transport moves: C2HData
    /// for a read, R2T and H2CData for a write.
    pub fn command_transport(&mut self, mut sqe: Sqe, len: u32) -> &mut Self {
        sgl(&mut sqe, SGL_TRANSPORT, len);
        self.raw_capsule(&sqe, &[])
    }

    /// H2CData for command `cccid`'s transfer `ttag`, at `offset`.
    pub fn h2c_data(&mut self, cccid: u16, ttag: u16, offset: u32, data: &[u8], last: bool) {
        let fl = if last { flags::DATA_LAST } else { 0 };
        let body = tcp::data_body(cccid, ttag, offset, data.len() as u32);
        tcp::frame(
            &mut self.out,
            pdu_type::H2C_DATA,
            fl,
            &body,
            data,
            &self.framing,
        );
    }

    /// The H2CData PDUs of a whole `data` transfer in pieces of at most
    /// `piece` bytes (the target's MAXH2CDATA), LAST on each R2T's end.
    pub fn h2c_all(&mut self, cccid: u16, ttag: u16, data: &[u8], piece: usize, maxh2c: usize) {
        let mut off = 0;
        while off < data.len() {
            let r2t_end = ((off / maxh2c + 1) * maxh2c).min(data.len());
            let end = (off + piece).min(r2t_end);
            self.h2c_data(cccid, ttag, off as u32, &data[off..end], end == r2t_end);
            off = end;
        }
    }

    /// Connect of queue `qid` to controller `cntlid` of `subnqn` as
    /// `hostnqn` with `entries` submission queue entries; its 1024 bytes
    /// of Connect data in the capsule, or moved by R2T and H2CData
    /// (`by_r2t`: the target's transfer tag is slot 0 of a fresh queue).
    pub fn connect(&mut self, c: &Connect<'_>) -> &mut Self {
        let mut sqe = Sqe {
            cid: c.cid,
            ..Default::default()
        };
        ConnectCmd {
            recfmt: 0,
            qid: c.qid,
            sqsize: c.entries - 1,
            cattr: if c.disable_sq_flow { 0x04 } else { 0 },
            kato_ms: 0,
        }
        .to_sqe(&mut sqe);
        let data = ConnectData::new(HOSTID, c.cntlid, c.subnqn, c.hostnqn).encode();
        if c.by_r2t {
            self.command_transport(sqe, data.len() as u32);
            self.h2c_data(c.cid, 0, 0, &data, true);
            self
        } else {
            self.command(sqe, &data)
        }
    }
}

/// One Connect, as [`HostStream::connect`] sends it.
#[derive(Debug, Clone, Copy)]
pub struct Connect<'a> {
    /// Command id.
    pub cid: u16,
    /// Queue id (0: admin).
    pub qid: u16,
    /// Controller id ([`nvme_spec::fabrics::CNTLID_DYNAMIC`] for an admin
    /// queue).
    pub cntlid: u16,
    /// Submission queue entries (one-based).
    pub entries: u16,
    /// Subsystem NQN.
    pub subnqn: &'a str,
    /// Host NQN.
    pub hostnqn: &'a str,
    /// CATTR: SQ flow control disabled.
    pub disable_sq_flow: bool,
    /// The Connect data by R2T instead of in the capsule.
    pub by_r2t: bool,
}

impl<'a> Connect<'a> {
    /// An admin queue's Connect to [`SUBNQN`] as [`HOSTNQN`], cid 1.
    pub fn admin() -> Self {
        Self {
            cid: 1,
            qid: 0,
            cntlid: nvme_spec::fabrics::CNTLID_DYNAMIC,
            entries: 32,
            subnqn: SUBNQN,
            hostnqn: HOSTNQN,
            disable_sq_flow: false,
            by_r2t: false,
        }
    }

    /// I/O queue `qid`'s Connect to controller `cntlid`.
    pub fn io(qid: u16, cntlid: u16) -> Self {
        Self {
            qid,
            cntlid,
            ..Self::admin()
        }
    }
}

fn sgl(sqe: &mut Sqe, type_byte: u8, len: u32) {
    sqe.flags |= PSDT_SGL;
    sqe.dptr = SglDescriptor {
        addr: 0,
        length: len,
        rsvd: [0; 3],
        type_byte,
    };
}

/// One PDU from the controller, as the harnesses look at it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FromController {
    /// ICResp.
    IcResp,
    /// A response capsule.
    Response(Cqe),
    /// C2HData for command `cccid`.
    Data {
        /// The command.
        cccid: u16,
        /// Offset of this piece.
        offset: u32,
        /// The data.
        data: Vec<u8>,
    },
    /// R2T for command `cccid`.
    R2t {
        /// The command.
        cccid: u16,
        /// Transfer tag.
        ttag: u16,
        /// Offset asked for.
        offset: u32,
        /// Bytes asked for.
        length: u32,
    },
    /// C2HTermReq: the connection ends.
    TermReq,
}

/// Every PDU in `tx` (what `Connection::take_tx` returned), in order.
/// Panics on one that does not decode: the target must only send valid
/// PDUs, whatever the host sent.
pub fn from_controller(tx: &[u8], framing: &Framing) -> Vec<FromController> {
    let mut out = Vec::new();
    let mut pos = 0;
    while pos < tx.len() {
        assert!(
            tx.len() - pos >= 8,
            "a truncated PDU in the target's output"
        );
        let plen = u32::from_le_bytes(tx[pos + 4..pos + 8].try_into().expect("4 bytes")) as usize;
        assert!(
            plen >= 8 && pos + plen <= tx.len(),
            "PLEN {plen} past the output"
        );
        let b = &tx[pos..pos + plen];
        // An ICResp or TermReq is framed without digests whatever was
        // negotiated; the rest with the negotiated framing.
        let f = match b[0] {
            pdu_type::IC_RESP | pdu_type::C2H_TERM_REQ => Framing::INITIAL,
            _ => *framing,
        };
        let pdu = tcp::decode(b, Direction::ControllerToHost, &f)
            .unwrap_or_else(|e| panic!("the target sent a PDU that does not decode: {e}"));
        out.push(match pdu {
            Pdu::IcResp(_) => FromController::IcResp,
            Pdu::CapsuleResp(c) => FromController::Response(c),
            Pdu::Data { hdr, data, .. } => FromController::Data {
                cccid: hdr.cccid,
                offset: hdr.data_offset,
                data: data.to_vec(),
            },
            Pdu::R2t(h) => FromController::R2t {
                cccid: h.cccid,
                ttag: h.ttag,
                offset: h.data_offset,
                length: h.data_length,
            },
            Pdu::TermReq { .. } => FromController::TermReq,
            other => panic!("the target sent a host's PDU: {other:?}"),
        });
        pos += plen;
    }
    out
}
