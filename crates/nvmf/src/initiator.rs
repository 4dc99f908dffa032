//! A blocking, single-command-at-a-time NVMe/TCP host.
//!
//! Used by the target's tests (over loopback) and meant for the engine's
//! NVMe/TCP backend. It speaks the same framing as the target: ICReq with
//! optional digests, Connect, in-capsule or R2T-driven writes, C2HData reads
//! (with or without the SUCCESS flag), and reports a C2HTermReq as an error.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use nvme_spec::command::{admin, io, SglDescriptor, SGL_IN_CAPSULE, SGL_TRANSPORT};
use nvme_spec::fabrics::{self, prop, ConnectCmd, ConnectData, CNTLID_DYNAMIC};
use nvme_spec::log::GetLogPage;
use nvme_spec::tcp::{self, flags, pdu_type, Direction, Framing, Pdu};
use nvme_spec::{Cqe, Sqe, Status};

use crate::error::InitiatorError;

/// Connection options.
#[derive(Debug, Clone)]
pub struct InitiatorOptions {
    /// Host NQN.
    pub hostnqn: String,
    /// Host identifier.
    pub hostid: [u8; 16],
    /// Ask for header digests.
    pub header_digest: bool,
    /// Ask for data digests.
    pub data_digest: bool,
    /// Host PDU data alignment, zero-based dwords.
    pub hpda: u8,
    /// Keep alive timeout for admin connects, ms.
    pub kato_ms: u32,
    /// Submission queue entries to ask for.
    pub queue_entries: u16,
    /// Disable SQ flow control (target may then use C2HData SUCCESS).
    pub disable_sqflow: bool,
    /// Writes up to this many bytes go in the capsule; larger ones use R2T.
    pub in_capsule_max_bytes: u32,
    /// MAXR2T offered in ICReq: outstanding R2Ts per command, zero-based.
    pub max_r2t: u32,
    /// Socket read timeout.
    pub timeout: Duration,
}

impl Default for InitiatorOptions {
    fn default() -> Self {
        Self {
            hostnqn: "nqn.2014-08.org.nvmexpress:uuid:00000000-0000-0000-0000-000000000001".into(),
            hostid: [1; 16],
            header_digest: false,
            data_digest: false,
            hpda: 0,
            kato_ms: 5000,
            queue_entries: 32,
            disable_sqflow: false,
            in_capsule_max_bytes: 8192,
            max_r2t: 0,
            timeout: Duration::from_secs(10),
        }
    }
}

/// A completed command: its CQE and any data returned.
#[derive(Debug, Clone)]
pub struct Completion {
    /// The completion entry (synthesised when C2HData carried SUCCESS).
    pub cqe: Cqe,
    /// Data returned.
    pub data: Vec<u8>,
}

/// A posted command awaiting completion.
#[derive(Debug)]
struct InFlight {
    sqe: Sqe,
    data_out: Vec<u8>,
    data_in: Vec<u8>,
}

/// One connected queue.
#[derive(Debug)]
pub struct Initiator {
    inflight: std::collections::HashMap<u16, InFlight>,
    stream: TcpStream,
    framing: Framing,
    /// MAXH2CDATA announced by the controller.
    pub maxh2cdata: u32,
    next_cid: u16,
    /// Queue id once connected.
    pub qid: u16,
    /// Controller id once connected.
    pub cntlid: u16,
    opts: InitiatorOptions,
}

impl Initiator {
    /// TCP connect plus ICReq/ICResp.
    pub fn open(addr: SocketAddr, opts: &InitiatorOptions) -> Result<Self, InitiatorError> {
        let stream = TcpStream::connect_timeout(&addr, opts.timeout)?;
        stream.set_nodelay(true)?;
        stream.set_read_timeout(Some(opts.timeout))?;
        let mut me = Self {
            inflight: std::collections::HashMap::new(),
            stream,
            framing: Framing::INITIAL,
            maxh2cdata: 0,
            next_cid: 1,
            qid: 0,
            cntlid: 0,
            opts: opts.clone(),
        };
        let digest = (opts.header_digest as u8 * tcp::DIGEST_HEADER)
            | (opts.data_digest as u8 * tcp::DIGEST_DATA);
        let mut b = Vec::new();
        tcp::frame(
            &mut b,
            pdu_type::IC_REQ,
            0,
            &tcp::icreq_body(opts.hpda, digest, opts.max_r2t),
            &[],
            &Framing::INITIAL,
        );
        me.send_raw(&b)?;
        let buf = me.recv_pdu_bytes()?;
        match tcp::decode(&buf, Direction::ControllerToHost, &Framing::INITIAL)? {
            Pdu::IcResp(r) => {
                me.maxh2cdata = r.maxh2cdata;
                me.framing = Framing {
                    header_digest: r.digest & tcp::DIGEST_HEADER != 0,
                    data_digest: r.digest & tcp::DIGEST_DATA != 0,
                    rx_data_align: (opts.hpda as usize + 1) * 4,
                    tx_data_align: (r.cpda as usize + 1) * 4,
                };
                if me.framing.rx_data_align == 4 {
                    me.framing.rx_data_align = 1;
                }
            }
            other => return Err(unexpected(&other)),
        }
        Ok(me)
    }

    /// Opens an admin queue and connects to `subnqn` (dynamic controller).
    pub fn connect_admin(
        addr: SocketAddr,
        subnqn: &str,
        opts: &InitiatorOptions,
    ) -> Result<Self, InitiatorError> {
        let mut me = Self::open(addr, opts)?;
        me.fabrics_connect(subnqn, 0, CNTLID_DYNAMIC)?;
        Ok(me)
    }

    /// Opens I/O queue `qid` of controller `cntlid`.
    pub fn connect_io(
        addr: SocketAddr,
        subnqn: &str,
        cntlid: u16,
        qid: u16,
        opts: &InitiatorOptions,
    ) -> Result<Self, InitiatorError> {
        let mut me = Self::open(addr, opts)?;
        me.fabrics_connect(subnqn, qid, cntlid)?;
        Ok(me)
    }

    /// Sends Connect; returns the controller id.
    pub fn fabrics_connect(
        &mut self,
        subnqn: &str,
        qid: u16,
        cntlid: u16,
    ) -> Result<u16, InitiatorError> {
        let mut sqe = Sqe::default();
        ConnectCmd {
            recfmt: 0,
            qid,
            sqsize: self.opts.queue_entries - 1,
            cattr: if self.opts.disable_sqflow { 0x04 } else { 0 },
            kato_ms: if qid == 0 { self.opts.kato_ms } else { 0 },
        }
        .to_sqe(&mut sqe);
        let data = ConnectData::new(self.opts.hostid, cntlid, subnqn, &self.opts.hostnqn).encode();
        let c = self.command(sqe, &data, 0)?;
        self.qid = qid;
        self.cntlid = (c.cqe.result & 0xFFFF) as u16;
        Ok(self.cntlid)
    }

    /// Like [`Initiator::submit`], but a non-success status is an error.
    pub fn command(
        &mut self,
        sqe: Sqe,
        data_out: &[u8],
        read_len: u32,
    ) -> Result<Completion, InitiatorError> {
        let c = self.submit(sqe, data_out, read_len)?;
        let st = c.cqe.status();
        if !st.is_success() {
            return Err(InitiatorError::Command {
                opcode: sqe.opcode,
                status: st,
            });
        }
        Ok(c)
    }

    /// Sends one command (with `data_out` to write, or expecting up to
    /// `read_len` bytes back) and waits for its completion. Needs an idle
    /// queue; use [`Initiator::post`] and [`Initiator::reap`] to pipeline.
    pub fn submit(
        &mut self,
        sqe: Sqe,
        data_out: &[u8],
        read_len: u32,
    ) -> Result<Completion, InitiatorError> {
        if !self.inflight.is_empty() {
            return Err(InitiatorError::Unexpected(format!(
                "submit needs an idle queue; {} commands are in flight (reap them first)",
                self.inflight.len()
            )));
        }
        self.post(sqe, data_out.to_vec(), read_len)?;
        self.reap()
    }

    /// Sends one command without waiting; returns its command id. Writes up
    /// to `in_capsule_max_bytes` travel in the capsule, larger ones wait for
    /// the controller's R2T (answered inside [`Initiator::reap`]).
    pub fn post(
        &mut self,
        mut sqe: Sqe,
        data_out: Vec<u8>,
        read_len: u32,
    ) -> Result<u16, InitiatorError> {
        if self.inflight.len() + 1 >= self.opts.queue_entries as usize {
            return Err(InitiatorError::Unexpected(format!(
                "queue full: {} commands in flight on a {}-entry queue",
                self.inflight.len(),
                self.opts.queue_entries
            )));
        }
        while self.inflight.contains_key(&self.next_cid) {
            self.next_cid = self.next_cid.wrapping_add(1).max(1);
        }
        sqe.cid = self.next_cid;
        self.next_cid = self.next_cid.wrapping_add(1).max(1);
        sqe.flags |= 0x40; // PSDT: SGL
        let in_capsule =
            !data_out.is_empty() && data_out.len() as u32 <= self.opts.in_capsule_max_bytes;
        let len = if data_out.is_empty() {
            read_len
        } else {
            data_out.len() as u32
        };
        sqe.dptr = SglDescriptor {
            addr: 0,
            length: len,
            rsvd: [0; 3],
            type_byte: if in_capsule {
                SGL_IN_CAPSULE
            } else {
                SGL_TRANSPORT
            },
        };
        let mut b = Vec::new();
        let icd = if in_capsule { &data_out[..] } else { &[][..] };
        tcp::frame(
            &mut b,
            pdu_type::CAPSULE_CMD,
            0,
            &sqe.encode(),
            icd,
            &self.framing,
        );
        self.send_raw(&b)?;
        let data_in = vec![0u8; read_len as usize];
        self.inflight.insert(
            sqe.cid,
            InFlight {
                sqe,
                data_out,
                data_in,
            },
        );
        Ok(sqe.cid)
    }

    /// Commands posted and not yet reaped.
    pub fn in_flight(&self) -> usize {
        self.inflight.len()
    }

    /// Waits for the next command to complete (answering R2Ts and storing
    /// C2HData meanwhile) and returns it.
    pub fn reap(&mut self) -> Result<Completion, InitiatorError> {
        loop {
            let buf = self.recv_pdu_bytes()?;
            match tcp::decode(&buf, Direction::ControllerToHost, &self.framing)? {
                Pdu::CapsuleResp(cqe) => {
                    let f = self
                        .inflight
                        .remove(&cqe.cid)
                        .ok_or_else(|| unknown_cid(cqe.cid))?;
                    return Ok(Completion {
                        cqe,
                        data: f.data_in,
                    });
                }
                Pdu::R2t(h) => {
                    let f = self
                        .inflight
                        .get_mut(&h.cccid)
                        .ok_or_else(|| unknown_cid(h.cccid))?;
                    let out = std::mem::take(&mut f.data_out);
                    let sent = self.send_h2c(&h, &out);
                    if let Some(f) = self.inflight.get_mut(&h.cccid) {
                        f.data_out = out;
                    }
                    sent?;
                }
                Pdu::Data {
                    hdr,
                    data: d,
                    data_digest_ok,
                } => {
                    let f = self
                        .inflight
                        .get_mut(&hdr.cccid)
                        .ok_or_else(|| unknown_cid(hdr.cccid))?;
                    if store_c2h(&hdr, d, data_digest_ok, &mut f.data_in)? {
                        let f = self.inflight.remove(&hdr.cccid).expect("present above");
                        let cqe = Cqe {
                            cid: f.sqe.cid,
                            sqid: self.qid,
                            ..Default::default()
                        };
                        return Ok(Completion {
                            cqe,
                            data: f.data_in,
                        });
                    }
                }
                other => return Err(unexpected(&other)),
            }
        }
    }

    fn send_h2c(&mut self, r2t: &tcp::DataHeader, data_out: &[u8]) -> Result<(), InitiatorError> {
        let start = r2t.data_offset as usize;
        let end = start + r2t.data_length as usize;
        if end > data_out.len() {
            return Err(InitiatorError::Unexpected(format!(
                "R2T for {start}..{end} beyond {} bytes",
                data_out.len()
            )));
        }
        let chunk = self.maxh2cdata.max(4096) as usize;
        let mut off = start;
        let mut b = Vec::new();
        while off < end {
            let n = chunk.min(end - off);
            let fl = if off + n == end { flags::DATA_LAST } else { 0 };
            let body = tcp::data_body(r2t.cccid, r2t.ttag, off as u32, n as u32);
            tcp::frame(
                &mut b,
                pdu_type::H2C_DATA,
                fl,
                &body,
                &data_out[off..off + n],
                &self.framing,
            );
            off += n;
        }
        self.send_raw(&b)
    }

    /// Writes raw bytes (tests use this to send malformed PDUs).
    pub fn send_raw(&mut self, b: &[u8]) -> Result<(), InitiatorError> {
        self.stream.write_all(b)?;
        Ok(())
    }

    /// Reads one whole PDU's bytes.
    pub fn recv_pdu_bytes(&mut self) -> Result<Vec<u8>, InitiatorError> {
        let mut ch = [0u8; 8];
        self.stream.read_exact(&mut ch)?;
        let h = tcp::check_common_header(&ch, Direction::ControllerToHost, &self.framing, 1 << 26)?;
        let mut buf = vec![0u8; h.plen as usize];
        buf[..8].copy_from_slice(&ch);
        self.stream.read_exact(&mut buf[8..])?;
        if h.pdu_type == pdu_type::C2H_TERM_REQ {
            if let Pdu::TermReq { hdr, .. } =
                tcp::decode(&buf, Direction::ControllerToHost, &self.framing)?
            {
                return Err(InitiatorError::Terminated {
                    fes: hdr.fes,
                    fei: hdr.fei(),
                });
            }
        }
        Ok(buf)
    }

    /// Hands over the connected socket, the negotiated framing and the
    /// controller's MAXH2CDATA, for a caller that runs its own pipelined,
    /// allocation-free data path on the queue (the engine's `tcp` backend:
    /// this type allocates per command). Refused while commands are in
    /// flight, since their replies would reach the new owner unannounced.
    pub fn into_stream(self) -> Result<(TcpStream, Framing, u32), InitiatorError> {
        if !self.inflight.is_empty() {
            return Err(InitiatorError::Unexpected(format!(
                "into_stream needs an idle queue; {} commands are in flight",
                self.inflight.len()
            )));
        }
        Ok((self.stream, self.framing, self.maxh2cdata))
    }

    /// The negotiated framing.
    pub fn framing(&self) -> Framing {
        self.framing
    }

    /// Property Get.
    pub fn property_get(&mut self, offset: u32, eight_bytes: bool) -> Result<u64, InitiatorError> {
        let sqe = Sqe {
            opcode: admin::FABRICS,
            nsid: fabrics::FCTYPE_PROPERTY_GET as u32,
            cdw10: eight_bytes as u32,
            cdw11: offset,
            ..Default::default()
        };
        let c = self.command(sqe, &[], 0)?;
        Ok(c.cqe.result as u64 | ((c.cqe.dw1 as u64) << 32))
    }

    /// Property Set (4 bytes).
    pub fn property_set(&mut self, offset: u32, value: u32) -> Result<(), InitiatorError> {
        let sqe = Sqe {
            opcode: admin::FABRICS,
            nsid: fabrics::FCTYPE_PROPERTY_SET as u32,
            cdw11: offset,
            cdw12: value,
            ..Default::default()
        };
        self.command(sqe, &[], 0).map(|_| ())
    }

    /// Enables the controller (CC.EN with 64/16-byte queue entries) and
    /// checks CSTS.RDY.
    pub fn enable(&mut self) -> Result<(), InitiatorError> {
        self.property_set(prop::CC, fabrics::CC_ENABLE | (6 << 16) | (4 << 20))?;
        let csts = self.property_get(prop::CSTS, false)? as u32;
        if csts & fabrics::CSTS_READY == 0 {
            return Err(InitiatorError::Unexpected(format!(
                "CSTS {csts:#x} not ready after enable"
            )));
        }
        Ok(())
    }

    /// Normal shutdown (CC.SHN = 1); returns CSTS.
    pub fn shutdown(&mut self) -> Result<u32, InitiatorError> {
        let cc = self.property_get(prop::CC, false)? as u32;
        self.property_set(prop::CC, cc | (1 << fabrics::CC_SHN_SHIFT))?;
        Ok(self.property_get(prop::CSTS, false)? as u32)
    }

    /// Identify; returns 4096 bytes.
    pub fn identify(&mut self, cns: u8, nsid: u32) -> Result<Vec<u8>, InitiatorError> {
        let sqe = Sqe {
            opcode: admin::IDENTIFY,
            nsid,
            cdw10: cns as u32,
            ..Default::default()
        };
        Ok(self.command(sqe, &[], 4096)?.data)
    }

    /// Get Log Page.
    pub fn get_log_page(
        &mut self,
        lid: u8,
        nsid: u32,
        len: u32,
        offset: u64,
    ) -> Result<Vec<u8>, InitiatorError> {
        let mut sqe = Sqe {
            nsid,
            ..Default::default()
        };
        GetLogPage {
            lid,
            lsp: 0,
            rae: false,
            len_bytes: len as u64,
            offset_bytes: offset,
        }
        .to_sqe(&mut sqe);
        Ok(self.command(sqe, &[], len)?.data)
    }

    /// Set Features; returns the completion (status not checked).
    pub fn set_features(&mut self, fid: u8, cdw11: u32) -> Result<Completion, InitiatorError> {
        let sqe = Sqe {
            opcode: admin::SET_FEATURES,
            cdw10: fid as u32,
            cdw11,
            ..Default::default()
        };
        self.submit(sqe, &[], 0)
    }

    /// Keep Alive.
    pub fn keep_alive(&mut self) -> Result<(), InitiatorError> {
        let sqe = Sqe {
            opcode: admin::KEEP_ALIVE,
            ..Default::default()
        };
        self.command(sqe, &[], 0).map(|_| ())
    }

    /// Reads `nlb` 512-byte blocks.
    pub fn read(&mut self, nsid: u32, slba: u64, nlb: u32) -> Result<Vec<u8>, InitiatorError> {
        let sqe = rw_sqe(io::READ, nsid, slba, nlb);
        Ok(self.command(sqe, &[], nlb * 512)?.data)
    }

    /// Writes `data` (a multiple of 512 bytes) at `slba`.
    pub fn write(&mut self, nsid: u32, slba: u64, data: &[u8]) -> Result<(), InitiatorError> {
        let sqe = rw_sqe(io::WRITE, nsid, slba, (data.len() / 512) as u32);
        self.command(sqe, data, 0).map(|_| ())
    }

    /// Sends an I/O or admin command with no data; returns its status.
    pub fn simple(&mut self, sqe: Sqe) -> Result<Status, InitiatorError> {
        Ok(self.submit(sqe, &[], 0)?.cqe.status())
    }
}

/// A Read or Write SQE (`nlb` one-based).
pub fn rw_sqe(opcode: u8, nsid: u32, slba: u64, nlb: u32) -> Sqe {
    Sqe {
        opcode,
        nsid,
        cdw10: slba as u32,
        cdw11: (slba >> 32) as u32,
        cdw12: nlb.saturating_sub(1) & 0xFFFF,
        ..Default::default()
    }
}

fn unknown_cid(cid: u16) -> InitiatorError {
    InitiatorError::Unexpected(format!("PDU for command id {cid}, which is not in flight"))
}

/// Stores one C2HData payload into `data`; true when it carried SUCCESS (no
/// response capsule follows).
fn store_c2h(
    hdr: &tcp::DataHeader,
    d: &[u8],
    digest_ok: bool,
    data: &mut [u8],
) -> Result<bool, InitiatorError> {
    if !digest_ok {
        return Err(InitiatorError::Unexpected(
            "C2HData data digest mismatch".into(),
        ));
    }
    let off = hdr.data_offset as usize;
    if off + d.len() > data.len() {
        return Err(InitiatorError::Unexpected(format!(
            "C2HData for cid {} at {off}+{} outside its {}-byte read",
            hdr.cccid,
            d.len(),
            data.len()
        )));
    }
    data[off..off + d.len()].copy_from_slice(d);
    Ok(hdr.ch.flags & flags::DATA_SUCCESS != 0)
}

fn unexpected(p: &Pdu<'_>) -> InitiatorError {
    let what = match p {
        Pdu::IcReq(_) => "ICReq",
        Pdu::IcResp(_) => "ICResp",
        Pdu::CapsuleCmd { .. } => "CapsuleCmd",
        Pdu::CapsuleResp(_) => "CapsuleResp",
        Pdu::Data { .. } => "data PDU",
        Pdu::R2t(_) => "R2T",
        Pdu::TermReq { .. } => "TermReq",
    };
    InitiatorError::Unexpected(format!("unexpected {what}"))
}
