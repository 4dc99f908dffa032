//! One NVMe/TCP host queue (one connection to a controller) as a state
//! machine without I/O: commands in, bytes out; bytes in, completions out.
//!
//! The transport below it (a socket, later TLS) moves bytes both ways:
//! [`HostQueue::tx_pending`] says what to send and [`HostQueue::tx_sent`]
//! how much went; [`HostQueue::rx_space`] is where received bytes go and
//! [`HostQueue::on_received`] hands them in. The queue frames the ICReq at
//! once, takes the ICResp's digests, CPDA and MAXH2CDATA, frames each
//! command capsule (a write's data in the capsule up to the queue's
//! in-capsule limit, else sent as H2CData when the controller's R2T asks
//! for it), copies C2HData into the command's read buffer and completes a
//! command on its CapsuleResp, or on C2HData with SUCCESS. A C2HTermReq,
//! or anything the controller gets wrong, fails the queue with a
//! [`HostError`].
//!
//! Command ids are the caller's: `0..entries`, one table entry each. The
//! data of each command stays in the caller's memory ([`DataBuffers`]):
//! the queue reads a write's bytes while framing its capsule or H2CData
//! and writes a read's bytes as C2HData arrives, never after the command's
//! completion. Every buffer is sized once, in [`HostQueue::new`], from the
//! [`QueueConfig`]: in steady state the queue allocates nothing.

use std::collections::VecDeque;

use nvme_spec::command::{admin, SglDescriptor, SGL_IN_CAPSULE, SGL_TRANSPORT};
use nvme_spec::fabrics::{ConnectCmd, FCTYPE_CONNECT};
use nvme_spec::tcp::{self, flags, pdu_type, Direction, Framing, IcResp, Pdu};
use nvme_spec::{Cqe, Sqe};

pub use super::buffers::DataBuffers;
use super::error::HostError;
use super::tx::TxBuf;
use crate::SPLICE_MIN_BYTES;

/// Room for one PDU's header, header digest, padding (CPDA up to 128
/// bytes) and data digest.
pub const PDU_OVERHEAD_BYTES: usize = 256;
/// Most H2CData bytes framed ahead of the socket.
pub const TX_DATA_WINDOW_MAX_BYTES: usize = 16 << 20;
/// Most R2Ts one command may have outstanding: MAXR2T is offered as at
/// most this minus one.
pub const R2T_PER_COMMAND_MAX: u32 = 32;
/// Smallest receive buffer: room for any PDU without data.
const RX_MIN_BYTES: usize = 64 << 10;
/// SQE flags PSDT = 01b: the data pointer is an SGL.
const PSDT_SGL: u8 = 0x40;

/// What a queue is sized for and asks for in its ICReq.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueueConfig {
    /// Submission queue entries: command ids `0..entries`, at most
    /// `entries - 1` in flight.
    pub entries: u16,
    /// Largest transfer of one command, bytes: sizes the buffers.
    pub max_data_bytes: u32,
    /// Writes up to this many bytes travel in the capsule (the controller's
    /// IOCCSZ less the SQE); larger ones wait for R2T.
    pub in_capsule_max_bytes: u32,
    /// Ask for header digests.
    pub header_digest: bool,
    /// Ask for data digests.
    pub data_digest: bool,
    /// Host PDU data alignment (HPDA), zero-based dwords.
    pub hpda: u8,
    /// MAXR2T offered: outstanding R2Ts per command, zero-based (at most
    /// [`R2T_PER_COMMAND_MAX`] - 1 is offered).
    pub max_r2t: u32,
}

/// Which way a command moves data, and how many bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transfer {
    /// No data.
    None,
    /// Host to controller: a write's bytes.
    ToController(u32),
    /// Controller to host: a read's bytes.
    FromController(u32),
}

impl Transfer {
    /// Bytes moved (the SGL length).
    pub fn len_bytes(self) -> u32 {
        match self {
            Transfer::None => 0,
            Transfer::ToController(n) | Transfer::FromController(n) => n,
        }
    }
}

/// A completed command.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct HostCompletion {
    /// Its completion entry (made up, status success, for C2HData with
    /// SUCCESS).
    pub cqe: Cqe,
    /// C2HData bytes received for it.
    pub data_bytes: u32,
}

/// Where a queue is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QueuePhase {
    /// ICReq framed; waiting for ICResp.
    AwaitIcResp,
    /// Commands flow.
    Ready,
    /// A protocol error or C2HTermReq ended it.
    Failed,
}

/// One command id's state.
#[derive(Debug, Clone, Copy, Default)]
struct Command {
    busy: bool,
    /// Bytes of a write sent through R2T (0 when none, or in the capsule).
    r2t_write_bytes: u32,
    /// Bytes of a read (0 when none).
    read_bytes: u32,
    /// C2HData bytes received.
    received_bytes: u32,
    /// R2Ts received whose data is not all framed yet.
    r2ts_outstanding: u32,
    /// The queue id a Connect names (the queue takes it on success).
    connect_qid: Option<u16>,
}

impl Command {
    /// Command `sqe`, just submitted, moving `xfer`.
    fn new(sqe: &Sqe, xfer: Transfer, in_capsule: bool) -> Self {
        let is_connect = sqe.opcode == admin::FABRICS && sqe.fctype() == FCTYPE_CONNECT;
        Command {
            busy: true,
            r2t_write_bytes: match xfer {
                Transfer::ToController(n) if !in_capsule => n,
                _ => 0,
            },
            read_bytes: match xfer {
                Transfer::FromController(n) => n,
                _ => 0,
            },
            received_bytes: 0,
            r2ts_outstanding: 0,
            connect_qid: is_connect.then(|| ConnectCmd::from_sqe(sqe).qid),
        }
    }
}

/// An R2T whose data is still to be framed as H2CData.
#[derive(Debug, Clone, Copy)]
struct PendingR2t {
    cid: u16,
    ttag: u16,
    /// Next byte to frame.
    offset: u32,
    end: u32,
}

/// Everything but the receive buffer (which the PDU being handled borrows).
#[derive(Debug)]
struct State {
    cfg: QueueConfig,
    phase: QueuePhase,
    framing: Framing,
    maxh2cdata: u32,
    qid: Option<u16>,
    cntlid: Option<u16>,
    cmds: Box<[Command]>,
    in_flight: usize,
    r2t_per_command: u32,
    r2ts: VecDeque<PendingR2t>,
    done: VecDeque<HostCompletion>,
    /// Bytes to send. Its capacity is fixed at start-up: every capsule of
    /// the commands in flight plus `tx_data_window` bytes of H2CData.
    tx: TxBuf,
    tx_data_window: usize,
    /// Write data of at least [`SPLICE_MIN_BYTES`] is sent from the
    /// caller's buffers ([`HostQueue::tx_iovecs`]) instead of copied.
    vectored: bool,
}

/// Received bytes: `buf[head..len]` is not yet handled.
#[derive(Debug)]
struct Rx {
    buf: Box<[u8]>,
    head: usize,
    len: usize,
}

/// One host queue; see the module documentation.
#[derive(Debug)]
pub struct HostQueue {
    st: State,
    rx: Rx,
}

impl HostQueue {
    /// A queue sized for `cfg`, its ICReq framed and waiting to be sent.
    pub fn new(cfg: QueueConfig) -> Self {
        assert!(cfg.entries >= 2, "a queue holds at least one command");
        let max_data = cfg.max_data_bytes as usize;
        let entries = cfg.entries as usize;
        let pdu_max = max_data + PDU_OVERHEAD_BYTES;
        let capsule_max = PDU_OVERHEAD_BYTES + (cfg.in_capsule_max_bytes as usize).min(max_data);
        let tx_data_window =
            (entries * pdu_max).clamp(2 * pdu_max, TX_DATA_WINDOW_MAX_BYTES.max(2 * pdu_max));
        let r2t_per_command = cfg.max_r2t.min(R2T_PER_COMMAND_MAX - 1) + 1;
        let mut st = State {
            cfg,
            phase: QueuePhase::AwaitIcResp,
            framing: Framing::INITIAL,
            maxh2cdata: 0,
            qid: None,
            cntlid: None,
            cmds: vec![Command::default(); entries].into_boxed_slice(),
            in_flight: 0,
            r2t_per_command,
            r2ts: VecDeque::with_capacity(entries * r2t_per_command as usize),
            done: VecDeque::with_capacity(entries),
            tx: TxBuf::with_capacity(
                entries * capsule_max + tx_data_window,
                entries + tx_data_window / tcp::MIN_MAXH2CDATA as usize + 1,
            ),
            tx_data_window,
            vectored: false,
        };
        let digest = (cfg.header_digest as u8 * tcp::DIGEST_HEADER)
            | (cfg.data_digest as u8 * tcp::DIGEST_DATA);
        tcp::frame(
            st.tx.bytes_mut(),
            pdu_type::IC_REQ,
            0,
            &tcp::icreq_body(cfg.hpda, digest, r2t_per_command - 1),
            &[],
            &Framing::INITIAL,
        );
        let rx = Rx {
            buf: vec![0u8; pdu_max.max(RX_MIN_BYTES)].into_boxed_slice(),
            head: 0,
            len: 0,
        };
        Self { st, rx }
    }

    /// What the queue was sized for.
    pub fn config(&self) -> &QueueConfig {
        &self.st.cfg
    }

    /// Lets the transport send write data straight from the caller's
    /// buffers with [`HostQueue::tx_iovecs`] (a socket's writev/sendmsg),
    /// so the kernel's copy into the socket is the only one. Off by
    /// default: [`HostQueue::tx_pending`] works either way, copying what
    /// it must.
    pub fn set_vectored(&mut self, on: bool) {
        self.st.vectored = on;
    }

    /// Where the queue is.
    pub fn phase(&self) -> QueuePhase {
        self.st.phase
    }

    /// True once ICResp has arrived (and no error since).
    pub fn is_ready(&self) -> bool {
        self.st.phase == QueuePhase::Ready
    }

    /// The framing ICReq/ICResp negotiated.
    pub fn framing(&self) -> Framing {
        self.st.framing
    }

    /// MAXH2CDATA as the controller announced it (0 before ICResp).
    pub fn maxh2cdata(&self) -> u32 {
        self.st.maxh2cdata
    }

    /// The queue id, once a Connect on this queue succeeded.
    pub fn qid(&self) -> Option<u16> {
        self.st.qid
    }

    /// The controller id a successful Connect returned.
    pub fn cntlid(&self) -> Option<u16> {
        self.st.cntlid
    }

    /// Commands submitted and not yet completed.
    pub fn in_flight(&self) -> usize {
        self.st.in_flight
    }

    /// Whether command id `cid` is in flight.
    pub fn is_in_flight(&self, cid: u16) -> bool {
        self.st.cmds.get(cid as usize).is_some_and(|c| c.busy)
    }

    /// Frames command `sqe` as command id `cid`, moving `xfer`: sets its
    /// CID and its SGL (in-capsule for a write up to the in-capsule limit,
    /// else transport), and for an in-capsule write copies
    /// `bufs.outgoing(cid)` into the capsule. The caller keeps the
    /// command's buffer for the queue until its completion.
    pub fn submit<B: DataBuffers + ?Sized>(
        &mut self,
        cid: u16,
        mut sqe: Sqe,
        xfer: Transfer,
        bufs: &B,
    ) -> Result<(), HostError> {
        let in_capsule = self.st.may_submit(cid, xfer)?;
        let len = xfer.len_bytes();
        sqe.cid = cid;
        sqe.flags |= PSDT_SGL;
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
        let data_len = if in_capsule { len } else { 0 };
        let st = &mut self.st;
        st.tx.compact();
        assert!(
            st.tx.len() + data_len as usize + PDU_OVERHEAD_BYTES <= st.tx.capacity(),
            "the send buffer holds every capsule in flight"
        );
        st.frame_data(
            pdu_type::CAPSULE_CMD,
            0,
            &sqe.encode(),
            cid,
            0,
            data_len,
            bufs,
        );
        st.cmds[cid as usize] = Command::new(&sqe, xfer, in_capsule);
        st.in_flight += 1;
        Ok(())
    }

    /// The bytes to send now: commands framed so far, then H2CData for the
    /// R2Ts received, framed from `bufs` as far as the send buffer's data
    /// window allows; in one piece (write data a vectored queue left in
    /// `bufs` is copied in).
    pub fn tx_pending<B: DataBuffers + ?Sized>(&mut self, bufs: &B) -> &[u8] {
        if !self.st.r2ts.is_empty() {
            self.st.frame_h2c(bufs);
        }
        self.st.tx.flatten(bufs)
    }

    /// What [`HostQueue::tx_pending`] returns, as up to `iov.len()` (at
    /// least 2) slices, write data of a vectored queue
    /// ([`HostQueue::set_vectored`]) in `bufs`' buffers: hand them to one
    /// writev/sendmsg, then say how much went with [`HostQueue::tx_sent`].
    /// Returns how many slices it filled (0: nothing to send).
    pub fn tx_iovecs<'a, B: DataBuffers + ?Sized>(
        &'a mut self,
        bufs: &'a B,
        iov: &mut [std::io::IoSlice<'a>],
    ) -> usize {
        assert!(iov.len() >= 2, "a send of at least two slices");
        if !self.st.r2ts.is_empty() {
            self.st.frame_h2c(bufs);
        }
        self.st.tx.iovecs(bufs, iov)
    }

    /// True when bytes wait to be sent (H2CData not yet framed included).
    pub fn wants_to_send(&self) -> bool {
        !self.st.tx.is_empty() || !self.st.r2ts.is_empty()
    }

    /// `n` bytes of [`HostQueue::tx_pending`] (or of
    /// [`HostQueue::tx_iovecs`], in order) went out.
    pub fn tx_sent(&mut self, n: usize) {
        self.st.tx.sent(n);
    }

    /// Where to put received bytes (never empty while the queue is
    /// usable); hand them in with [`HostQueue::on_received`].
    pub fn rx_space(&mut self) -> &mut [u8] {
        let rx = &mut self.rx;
        if rx.head > 0 {
            rx.buf.copy_within(rx.head..rx.len, 0);
            rx.len -= rx.head;
            rx.head = 0;
        }
        &mut rx.buf[rx.len..]
    }

    /// Bytes still missing from the PDU being received (its common header
    /// first): a transport that reads exactly what is asked reads this many
    /// into [`HostQueue::rx_space`], so no byte of a later PDU is taken
    /// before its time.
    pub fn rx_missing(&self) -> usize {
        let have = self.rx.len - self.rx.head;
        if have < tcp::CommonHeader::SIZE {
            return tcp::CommonHeader::SIZE - have;
        }
        let h = self.rx.head;
        let plen = u32::from_le_bytes(self.rx.buf[h + 4..h + 8].try_into().expect("4 bytes"));
        (plen as usize).saturating_sub(have)
    }

    /// `n` bytes were received into [`HostQueue::rx_space`]: handles every
    /// whole PDU among what has arrived (ICResp, CapsuleResp, C2HData,
    /// R2T). Completions are then ready in [`HostQueue::completion`]; R2Ts
    /// make H2CData to send.
    pub fn on_received<B: DataBuffers + ?Sized>(
        &mut self,
        n: usize,
        bufs: &mut B,
    ) -> Result<(), HostError> {
        if self.st.phase == QueuePhase::Failed {
            return Err(HostError::Failed);
        }
        assert!(
            self.rx.len + n <= self.rx.buf.len(),
            "received beyond rx_space"
        );
        self.rx.len += n;
        let r = self.handle_whole_pdus(bufs);
        if r.is_err() {
            self.st.phase = QueuePhase::Failed;
        }
        r
    }

    /// Hands in bytes a transport received into a buffer of its own
    /// (copied into [`HostQueue::rx_space`] piece by piece).
    pub fn on_bytes<B: DataBuffers + ?Sized>(
        &mut self,
        mut input: &[u8],
        bufs: &mut B,
    ) -> Result<(), HostError> {
        while !input.is_empty() {
            let space = self.rx_space();
            let n = space.len().min(input.len());
            space[..n].copy_from_slice(&input[..n]);
            self.on_received(n, bufs)?;
            input = &input[n..];
        }
        Ok(())
    }

    /// Completions ready to be taken.
    pub fn completions_ready(&self) -> usize {
        self.st.done.len()
    }

    /// The oldest completion not yet taken.
    pub fn completion(&mut self) -> Option<HostCompletion> {
        self.st.done.pop_front()
    }

    fn handle_whole_pdus<B: DataBuffers + ?Sized>(
        &mut self,
        bufs: &mut B,
    ) -> Result<(), HostError> {
        let max_plen = self.rx.buf.len();
        while self.rx.len - self.rx.head >= tcp::CommonHeader::SIZE {
            let b = &self.rx.buf[self.rx.head..self.rx.len];
            let ch = tcp::check_common_header(
                b,
                Direction::ControllerToHost,
                &self.st.framing,
                max_plen,
            )
            .map_err(HostError::Pdu)?;
            let plen = ch.plen as usize;
            if b.len() < plen {
                break;
            }
            let pdu = tcp::decode(&b[..plen], Direction::ControllerToHost, &self.st.framing)
                .map_err(HostError::Pdu)?;
            self.rx.head += plen;
            self.st.on_pdu(pdu, bufs)?;
        }
        Ok(())
    }
}

impl State {
    /// Whether command id `cid` may carry a command moving `xfer` now, and
    /// if so whether its data goes in the capsule.
    fn may_submit(&self, cid: u16, xfer: Transfer) -> Result<bool, HostError> {
        match self.phase {
            QueuePhase::Ready => {}
            QueuePhase::AwaitIcResp => return Err(HostError::NotReady),
            QueuePhase::Failed => return Err(HostError::Failed),
        }
        let entries = self.cfg.entries;
        let free = (cid as usize) < self.cmds.len() && !self.cmds[cid as usize].busy;
        if !free || self.in_flight + 1 >= entries as usize {
            return Err(HostError::BadCommandId { cid, entries });
        }
        let len = xfer.len_bytes();
        if len > self.cfg.max_data_bytes {
            return Err(HostError::TooLarge {
                len,
                max: self.cfg.max_data_bytes,
            });
        }
        Ok(matches!(xfer, Transfer::ToController(n) if n > 0 && n <= self.cfg.in_capsule_max_bytes))
    }

    fn on_pdu<B: DataBuffers + ?Sized>(
        &mut self,
        pdu: Pdu<'_>,
        bufs: &mut B,
    ) -> Result<(), HostError> {
        let before = self.phase == QueuePhase::AwaitIcResp;
        match pdu {
            Pdu::TermReq { hdr, .. } => Err(HostError::Terminated {
                fes: hdr.fes,
                fei: hdr.fei(),
            }),
            Pdu::IcResp(r) if before => {
                self.on_icresp(&r);
                Ok(())
            }
            Pdu::CapsuleResp(cqe) if !before => {
                let cid = self.busy(cqe.cid)?;
                if self.tx.references(cqe.cid) {
                    // Answered before its data went out: the buffer is the
                    // caller's from now on, so the data still to be sent
                    // is copied out of it first.
                    self.tx.flatten(&*bufs);
                }
                self.complete(cid, cqe);
                Ok(())
            }
            Pdu::Data {
                hdr,
                data,
                data_digest_ok,
            } if !before => self.on_c2h_data(&hdr, data, data_digest_ok, bufs),
            Pdu::R2t(h) if !before => self.on_r2t(&h),
            other => Err(HostError::Unexpected {
                what: pdu_name(&other),
                when: if before {
                    " before ICResp"
                } else {
                    " after ICResp"
                },
            }),
        }
    }

    fn on_icresp(&mut self, r: &IcResp) {
        self.maxh2cdata = r.maxh2cdata;
        let rx_align = (self.cfg.hpda as usize + 1) * 4;
        self.framing = Framing {
            header_digest: r.digest & tcp::DIGEST_HEADER != 0,
            data_digest: r.digest & tcp::DIGEST_DATA != 0,
            rx_data_align: if rx_align == 4 { 1 } else { rx_align },
            tx_data_align: (r.cpda as usize + 1) * 4,
        };
        self.phase = QueuePhase::Ready;
    }

    fn busy(&self, cid: u16) -> Result<usize, HostError> {
        match self.cmds.get(cid as usize) {
            Some(c) if c.busy => Ok(cid as usize),
            _ => Err(HostError::UnknownCommand { cid }),
        }
    }

    fn on_c2h_data<B: DataBuffers + ?Sized>(
        &mut self,
        hdr: &tcp::DataHeader,
        data: &[u8],
        digest_ok: bool,
        bufs: &mut B,
    ) -> Result<(), HostError> {
        let cid = self.busy(hdr.cccid)?;
        let c = &mut self.cmds[cid];
        let (offset, len) = (hdr.data_offset, data.len() as u32);
        if c.read_bytes == 0 || u64::from(offset) + u64::from(len) > u64::from(c.read_bytes) {
            return Err(HostError::DataOutOfRange {
                cid: hdr.cccid,
                offset,
                len,
                read_bytes: c.read_bytes,
            });
        }
        if !digest_ok {
            return Err(HostError::DataDigest { cid: hdr.cccid });
        }
        let at = offset as usize;
        bufs.incoming(hdr.cccid)[at..at + data.len()].copy_from_slice(data);
        c.received_bytes += len;
        if hdr.ch.flags & flags::DATA_SUCCESS == 0 {
            return Ok(());
        }
        if c.received_bytes != c.read_bytes {
            return Err(HostError::EarlySuccess {
                cid: hdr.cccid,
                received: c.received_bytes,
                read_bytes: c.read_bytes,
            });
        }
        let cqe = Cqe {
            cid: hdr.cccid,
            sqid: self.qid.unwrap_or(0),
            ..Default::default()
        };
        self.complete(cid, cqe);
        Ok(())
    }

    fn on_r2t(&mut self, h: &tcp::DataHeader) -> Result<(), HostError> {
        let cid = self.busy(h.cccid)?;
        let c = &mut self.cmds[cid];
        let end = u64::from(h.data_offset) + u64::from(h.data_length);
        if h.data_length == 0 || end > u64::from(c.r2t_write_bytes) {
            return Err(HostError::R2tOutOfRange {
                cid: h.cccid,
                offset: h.data_offset,
                len: h.data_length,
                write_bytes: c.r2t_write_bytes,
            });
        }
        if c.r2ts_outstanding >= self.r2t_per_command {
            return Err(HostError::TooManyR2ts {
                cid: h.cccid,
                max: self.r2t_per_command,
            });
        }
        c.r2ts_outstanding += 1;
        debug_assert!(self.r2ts.len() < self.r2ts.capacity());
        self.r2ts.push_back(PendingR2t {
            cid: h.cccid,
            ttag: h.ttag,
            offset: h.data_offset,
            end: end as u32,
        });
        Ok(())
    }

    fn complete(&mut self, cid: usize, cqe: Cqe) {
        let c = &mut self.cmds[cid];
        c.busy = false;
        if c.r2ts_outstanding > 0 {
            // The command's buffer is the caller's again: drop what of it
            // is still to be framed.
            c.r2ts_outstanding = 0;
            self.r2ts.retain(|r| r.cid as usize != cid);
        }
        if let Some(qid) = c.connect_qid.filter(|_| cqe.status().is_success()) {
            self.qid = Some(qid);
            self.cntlid = Some(cqe.result as u16);
        }
        self.in_flight -= 1;
        debug_assert!(self.done.len() < self.done.capacity());
        self.done.push_back(HostCompletion {
            cqe,
            data_bytes: c.received_bytes,
        });
    }

    /// Frames a PDU carrying `outgoing(cid)[offset..offset + len]`: copied
    /// into the send buffer, or referenced there when the queue sends
    /// vectored and the data is long enough to be worth an iovec (its data
    /// digest, if any, computed from the caller's buffer now).
    #[allow(clippy::too_many_arguments)]
    fn frame_data<B: DataBuffers + ?Sized>(
        &mut self,
        pdu: u8,
        extra_flags: u8,
        hdr: &[u8],
        cid: u16,
        offset: u32,
        len: u32,
        bufs: &B,
    ) {
        let at = offset as usize;
        let data = &bufs.outgoing(cid)[at..at + len as usize];
        if !self.vectored || data.len() < SPLICE_MIN_BYTES {
            tcp::frame(
                self.tx.bytes_mut(),
                pdu,
                extra_flags,
                hdr,
                data,
                &self.framing,
            );
            return;
        }
        let dd = tcp::frame_head(
            self.tx.bytes_mut(),
            pdu,
            extra_flags,
            hdr,
            data.len(),
            &self.framing,
        );
        self.tx.push_ref(cid, offset, len);
        if dd {
            self.tx
                .bytes_mut()
                .extend_from_slice(&nvme_spec::crc32c::crc32c(data).to_le_bytes());
        }
    }

    /// Frames H2CData PDUs of at most MAXH2CDATA for the pending R2Ts, in
    /// order, while the data window has room.
    fn frame_h2c<B: DataBuffers + ?Sized>(&mut self, bufs: &B) {
        self.tx.compact();
        let chunk = self.maxh2cdata.max(tcp::MIN_MAXH2CDATA);
        while let Some(r) = self.r2ts.front_mut() {
            let n = chunk.min(r.end - r.offset);
            if self.tx.len() + n as usize + PDU_OVERHEAD_BYTES > self.tx_data_window {
                return;
            }
            let last = r.offset + n == r.end;
            let (cid, offset) = (r.cid, r.offset);
            let body = tcp::data_body(cid, r.ttag, offset, n);
            r.offset += n;
            let fl = if last { flags::DATA_LAST } else { 0 };
            self.frame_data(pdu_type::H2C_DATA, fl, &body, cid, offset, n, bufs);
            if last {
                self.cmds[cid as usize].r2ts_outstanding -= 1;
                self.r2ts.pop_front();
            }
        }
    }
}

fn pdu_name(p: &Pdu<'_>) -> &'static str {
    match p {
        Pdu::IcReq(_) => "ICReq",
        Pdu::IcResp(_) => "ICResp",
        Pdu::CapsuleCmd { .. } => "CapsuleCmd",
        Pdu::CapsuleResp(_) => "CapsuleResp",
        Pdu::Data { .. } => "data PDU",
        Pdu::R2t(_) => "R2T",
        Pdu::TermReq { .. } => "TermReq",
    }
}

#[cfg(test)]
#[path = "queue_tests.rs"]
mod tests;
