//! One NVMe/TCP connection (one queue), without I/O: bytes in, bytes out,
//! storage operations out, their completions in.
//!
//! The reactor feeds received bytes to [`Connection::on_bytes`], writes out
//! whatever [`Connection::swap_tx`] (or `take_tx`) hands it, submits what
//! [`Connection::take_storage`] yields and reports each completion to
//! [`Connection::complete_storage`]. Framing, the ICReq exchange, Connect,
//! the per-command state machine, R2T flow (in `transfer.rs`) and TermReq on
//! protocol violations all live here, so the same code runs under the
//! reactor, in unit tests (with [`Connection::run_storage_blocking`]) and in
//! the fuzz target.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};

use nvme_spec::command::{admin, SGL_IN_CAPSULE, SGL_TRANSPORT};
use nvme_spec::tcp::{self, fes, flags, pdu_type, Direction, FatalError, Framing, Pdu};
use nvme_spec::{Cqe, Sqe, Status};

use crate::config::ADMIN_IN_CAPSULE_BYTES;
use crate::io::{StorageKind, StorageOp};
use crate::request::{Outcome, Request, RequestState, Xfer};
use crate::subsystem::{Controller, Target};

/// Largest per-slot data buffer kept after its command completes.
pub const RETAINED_BUF_BYTES: usize = 256 * 1024;
/// Most R2Ts outstanding for one command, whatever the host's MAXR2T.
pub const R2T_OUTSTANDING_LIMIT: u32 = 16;

/// Connection phase.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Waiting for ICReq.
    AwaitIcReq,
    /// Serving PDUs.
    Ready,
    /// A fatal error or teardown: flush `tx` and close.
    Closing,
}

/// What the queue is bound to after Connect.
#[derive(Debug)]
pub struct Binding {
    /// Queue id (0: admin).
    pub qid: u16,
    /// Entries of the submission queue (one-based).
    pub sq_entries: u16,
    /// The controller.
    pub ctrl: Arc<Controller>,
}

/// Per-queue counters, folded into the controller on each tick.
#[derive(Debug, Default, Clone, Copy)]
pub struct QueueCounters {
    /// Bytes read.
    pub read_bytes: u64,
    /// Bytes written.
    pub written_bytes: u64,
    /// Read commands.
    pub reads: u64,
    /// Write commands.
    pub writes: u64,
}

/// One connection.
#[derive(Debug)]
pub struct Connection {
    pub(crate) target: Arc<Target>,
    pub(crate) phase: Phase,
    pub(crate) framing: Framing,
    rx: Vec<u8>,
    pub(crate) tx: Vec<u8>,
    pub(crate) binding: Option<Binding>,
    pub(crate) reqs: Vec<Request>,
    /// Storage operations queued for the reactor's ring (at most one per
    /// request, so never more than the depth).
    storage: VecDeque<StorageOp>,
    sqhd: u16,
    pub(crate) sq_flow_disabled: bool,
    /// R2Ts the host lets us have outstanding per command (its MAXR2T + 1,
    /// at most [`R2T_OUTSTANDING_LIMIT`]).
    pub(crate) r2t_outstanding_max: u32,
    pub(crate) last_keepalive: Instant,
    pub(crate) counters: QueueCounters,
    /// Why the connection is closing, for the log.
    pub close_reason: Option<String>,
}

impl Connection {
    /// A fresh connection waiting for ICReq.
    pub fn new(target: Arc<Target>) -> Self {
        let depth = target
            .limits
            .max_queue_depth
            .max(target.limits.admin_queue_depth) as usize;
        Self {
            target,
            phase: Phase::AwaitIcReq,
            framing: Framing::INITIAL,
            rx: Vec::new(),
            tx: Vec::new(),
            binding: None,
            reqs: (0..depth).map(|_| Request::new()).collect(),
            storage: VecDeque::with_capacity(depth),
            sqhd: 0,
            sq_flow_disabled: false,
            r2t_outstanding_max: 1,
            last_keepalive: Instant::now(),
            counters: QueueCounters::default(),
            close_reason: None,
        }
    }

    /// Current phase.
    pub fn phase(&self) -> Phase {
        self.phase
    }

    /// Queue id once connected.
    pub fn qid(&self) -> Option<u16> {
        self.binding.as_ref().map(|b| b.qid)
    }

    /// Bytes waiting to be sent.
    pub fn tx_pending(&self) -> usize {
        self.tx.len()
    }

    /// Takes the bytes to send (the caller writes them in order).
    pub fn take_tx(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.tx)
    }

    /// Bytes still missing from the PDU being received, once its common
    /// header is in (0 when none is partly received). The reactor asks the
    /// socket for exactly these with MSG_WAITALL, so a large H2CData PDU
    /// arrives in one completion instead of one per TCP segment.
    pub fn rx_missing(&self) -> usize {
        if self.rx.len() < tcp::CommonHeader::SIZE {
            return 0;
        }
        let plen = u32::from_le_bytes(self.rx[4..8].try_into().expect("4 bytes")) as usize;
        plen.saturating_sub(self.rx.len())
    }

    /// Swaps the bytes to send into `out`, which must be empty, and keeps
    /// `out`'s allocation for the next output: the reactor's send buffer and
    /// this one trade places, so steady-state sending allocates nothing.
    pub fn swap_tx(&mut self, out: &mut Vec<u8>) {
        assert!(out.is_empty(), "the previous output was sent");
        std::mem::swap(&mut self.tx, out);
    }

    /// Gives back bytes the socket did not accept, ahead of newer output.
    pub fn untake_tx(&mut self, mut rest: Vec<u8>) {
        rest.extend_from_slice(&self.tx);
        self.tx = rest;
    }

    /// Commands waiting for host data (in-flight writes).
    pub fn awaiting_data(&self) -> usize {
        self.reqs
            .iter()
            .filter(|r| r.state == RequestState::AwaitingH2CData)
            .count()
    }

    /// Commands whose storage operation is queued or in flight. The
    /// connection (and its buffers) must outlive every one of them.
    pub fn executing(&self) -> usize {
        self.reqs
            .iter()
            .filter(|r| r.state == RequestState::Executing)
            .count()
    }

    /// The next storage operation to submit and the start of its slot's
    /// buffer (for a read or write, `len` bytes, page-aligned), which stays
    /// put and untouched by the connection until
    /// [`Connection::complete_storage`] for that slot.
    pub fn take_storage(&mut self) -> Option<(StorageOp, *mut u8)> {
        let op = self.storage.pop_front()?;
        let r = &mut self.reqs[op.slot as usize];
        debug_assert_eq!(r.state, RequestState::Executing);
        debug_assert!(
            !matches!(op.kind, StorageKind::Read | StorageKind::Write)
                || r.buf.len() >= op.len as usize
        );
        Some((op, r.buf.as_mut_ptr()))
    }

    /// Queues a storage operation for the reactor; the request waits in
    /// `Executing`.
    pub(crate) fn queue_storage(&mut self, op: StorageOp) -> Outcome {
        assert!(
            self.storage.len() < self.reqs.len(),
            "one operation per request"
        );
        self.reqs[op.slot as usize].storage = Some(op);
        self.storage.push_back(op);
        Outcome::Submitted
    }

    /// A storage operation finished with `res` (bytes or a negated errno):
    /// the command completes (C2HData and/or the response are queued).
    pub fn complete_storage(&mut self, slot: u16, res: i32) {
        let slot = slot as usize;
        let r = &mut self.reqs[slot];
        assert_eq!(
            r.state,
            RequestState::Executing,
            "completion for slot {slot}"
        );
        let op = r
            .storage
            .take()
            .expect("an executing request has its operation");
        let res = crate::io::zero_fallback(self, &op, res);
        if let Some(next) = crate::io::next_piece(self, &op, res) {
            // The command's next storage operation; it stays `Executing`.
            self.queue_storage(next);
            return;
        }
        let outcome = crate::io::finish(self, op.kind, op.len, res);
        let next = self.apply(slot, outcome);
        self.reqs[slot].state = next;
        self.advance(slot);
    }

    /// Runs every queued storage operation with blocking system calls (for
    /// driving a connection without a reactor, as the unit tests do).
    pub fn run_storage_blocking(&mut self) {
        while let Some((op, buf)) = self.take_storage() {
            let len = op.len as usize;
            // SAFETY: buf points at the slot's buffer of at least `len`
            // bytes (take_storage), which nothing else touches until the
            // completion below; fd is the namespace's open descriptor.
            let res = unsafe {
                match op.kind {
                    StorageKind::Read => {
                        libc::pread(op.fd, buf as *mut libc::c_void, len, op.offset as i64)
                    }
                    StorageKind::Write => {
                        libc::pwrite(op.fd, buf as *const libc::c_void, len, op.offset as i64)
                    }
                    StorageKind::Flush => libc::fdatasync(op.fd) as isize,
                    StorageKind::Zero { mode } => {
                        libc::fallocate(op.fd, mode, op.offset as i64, len as i64) as isize
                    }
                }
            };
            let res = if res < 0 {
                -std::io::Error::last_os_error()
                    .raw_os_error()
                    .unwrap_or(libc::EIO)
            } else {
                res as i32
            };
            self.complete_storage(op.slot, res);
        }
    }

    /// True when a draining target may close this queue now: no write is
    /// waiting for host data or storage, and an admin queue outlives its I/O
    /// queues (closing it tears the controller down with them).
    pub fn can_close_for_shutdown(&self) -> bool {
        if self.awaiting_data() > 0 || self.executing() > 0 {
            return false;
        }
        match &self.binding {
            Some(b) if b.qid == 0 => b.ctrl.io_qids.lock().expect("queue lock").is_empty(),
            _ => true,
        }
    }

    /// Feeds received bytes; processes every complete PDU.
    pub fn on_bytes(&mut self, input: &[u8]) {
        if self.phase == Phase::Closing {
            return;
        }
        self.rx.extend_from_slice(input);
        let rx = std::mem::take(&mut self.rx);
        let mut pos = 0;
        let max_plen = self.target.limits.max_rx_pdu_bytes();
        while self.phase != Phase::Closing && rx.len() - pos >= tcp::CommonHeader::SIZE {
            let b = &rx[pos..];
            let ch = match tcp::check_common_header(
                b,
                Direction::HostToController,
                &self.framing,
                max_plen,
            ) {
                Ok(ch) => ch,
                Err(e) => {
                    self.fatal(e, &b[..b.len().min(128)]);
                    break;
                }
            };
            let seq_ok = match self.phase {
                Phase::AwaitIcReq => ch.pdu_type == pdu_type::IC_REQ,
                _ => ch.pdu_type != pdu_type::IC_REQ,
            };
            if !seq_ok {
                let e = FatalError {
                    fes: fes::PDU_SEQUENCE_ERROR,
                    fei: 0,
                    what: "PDU out of sequence",
                };
                self.fatal(e, &b[..b.len().min(ch.hlen as usize)]);
                break;
            }
            let plen = ch.plen as usize;
            if b.len() < plen {
                break;
            }
            match tcp::decode(&b[..plen], Direction::HostToController, &self.framing) {
                Ok(pdu) => self.on_pdu(pdu),
                Err(e) => self.fatal(e, &b[..(ch.hlen as usize).min(plen)]),
            }
            pos += plen;
        }
        let mut rx = rx;
        rx.drain(..pos);
        self.rx = rx;
    }

    /// Queues a C2HTermReq and moves to Closing.
    pub(crate) fn fatal(&mut self, e: FatalError, offending: &[u8]) {
        tcp::frame_term_req(&mut self.tx, pdu_type::C2H_TERM_REQ, &e, offending);
        self.close(format!("sent C2HTermReq: {e}"));
    }

    /// Moves to Closing without a TermReq.
    pub(crate) fn close(&mut self, why: String) {
        if self.phase != Phase::Closing {
            self.phase = Phase::Closing;
            self.close_reason = Some(why);
        }
    }

    fn on_pdu(&mut self, pdu: Pdu<'_>) {
        match pdu {
            Pdu::IcReq(r) => self.on_icreq(r.hpda, r.digest, r.maxr2t),
            Pdu::CapsuleCmd {
                sqe,
                data,
                data_digest_ok,
            } => self.on_capsule(sqe, data, data_digest_ok),
            Pdu::Data {
                hdr,
                data,
                data_digest_ok,
            } => self.on_h2c_data(hdr, data, data_digest_ok),
            Pdu::TermReq { hdr, .. } => self.close(format!(
                "host sent H2CTermReq fes={:#x} fei={}",
                hdr.fes,
                hdr.fei()
            )),
            _ => self.fatal(
                FatalError {
                    fes: fes::INVALID_HEADER_FIELD,
                    fei: 0,
                    what: "unexpected PDU type",
                },
                &[],
            ),
        }
    }

    fn on_icreq(&mut self, hpda: u8, digest: u8, maxr2t: u32) {
        self.r2t_outstanding_max = maxr2t.saturating_add(1).min(R2T_OUTSTANDING_LIMIT);
        let enabled = digest & (tcp::DIGEST_HEADER | tcp::DIGEST_DATA);
        let body = tcp::icresp_body(0, enabled, self.target.limits.max_h2c_data_bytes);
        tcp::frame(
            &mut self.tx,
            pdu_type::IC_RESP,
            0,
            &body,
            &[],
            &Framing::INITIAL,
        );
        self.framing = Framing {
            header_digest: enabled & tcp::DIGEST_HEADER != 0,
            data_digest: enabled & tcp::DIGEST_DATA != 0,
            rx_data_align: 1,
            tx_data_align: (hpda as usize + 1) * 4,
        };
        self.phase = Phase::Ready;
    }

    fn active_depth(&self) -> usize {
        match &self.binding {
            Some(b) => b.sq_entries as usize,
            None => 1,
        }
    }

    fn on_capsule(&mut self, sqe: Sqe, data: &[u8], digest_ok: bool) {
        self.sqhd = self.sqhd.wrapping_add(1);
        if let Some(b) = &self.binding {
            self.sqhd %= b.sq_entries.max(1);
        }
        if self.reqs.iter().any(|r| r.busy() && r.sqe.cid == sqe.cid) {
            self.send_response(sqe.cid, Status::CID_CONFLICT, 0);
            return;
        }
        let depth = self.active_depth().min(self.reqs.len());
        let Some(slot) = self.reqs[..depth].iter().position(|r| !r.busy()) else {
            let e = FatalError {
                fes: fes::PDU_SEQUENCE_ERROR,
                fei: 0,
                what: "more commands outstanding than the queue size",
            };
            self.fatal(e, &sqe.encode());
            return;
        };
        let r = &mut self.reqs[slot];
        r.sqe = sqe;
        r.xfer = Xfer::of(&sqe);
        r.len_bytes = sqe.dptr.length;
        r.received_bytes = 0;
        r.in_capsule = !data.is_empty();
        r.digest_failed = !digest_ok;
        r.status = Status::SUCCESS;
        r.result = 0;
        r.out_len = 0;
        r.storage = None;
        r.storage_progress = 0;
        r.buf.clear();
        if !data.is_empty() && data.len() <= sqe.dptr.length as usize {
            r.buf.assign(data);
            r.received_bytes = data.len() as u32;
        } else if !data.is_empty() {
            // More in-capsule data than the SGL describes.
            r.in_capsule = true;
            r.received_bytes = u32::MAX;
        }
        r.state = RequestState::New;
        self.advance(slot);
    }

    /// The one place a request changes state. Runs until the request waits
    /// for something (host data, an event) or is free again.
    pub(crate) fn advance(&mut self, slot: usize) {
        loop {
            let state = self.reqs[slot].state;
            let next = match state {
                RequestState::Free | RequestState::AwaitingEvent | RequestState::Executing => {
                    return
                }
                RequestState::New => self.plan_transfer(slot),
                RequestState::AwaitingH2CData => {
                    let r = &self.reqs[slot];
                    if r.received_bytes < r.len_bytes {
                        return;
                    }
                    RequestState::ReadyToExecute
                }
                RequestState::ReadyToExecute => self.execute(slot),
                RequestState::Completed => {
                    self.send_completion(slot);
                    // Keep small buffers for reuse; give large ones back so an
                    // idle queue does not pin depth x MDTS bytes.
                    self.reqs[slot].buf.shrink_above(RETAINED_BUF_BYTES);
                    RequestState::Free
                }
            };
            self.reqs[slot].state = next;
        }
    }

    /// New → AwaitingH2CData (R2T sent), ReadyToExecute or Completed (error).
    fn plan_transfer(&mut self, slot: usize) -> RequestState {
        let max_xfer = self.target.limits.max_transfer_bytes;
        let io_queue = self.qid().is_some_and(|q| q > 0);
        let in_capsule_max = if io_queue {
            self.target.limits.io_in_capsule_bytes
        } else {
            ADMIN_IN_CAPSULE_BYTES
        };
        let r = &mut self.reqs[slot];
        let fail = |r: &mut Request, s: Status| {
            r.status = s;
            RequestState::Completed
        };
        if r.digest_failed {
            return fail(r, Status::TRANSIENT_TRANSPORT);
        }
        let len = r.len_bytes;
        if len == 0 {
            return if r.in_capsule {
                fail(r, Status::SGL_LENGTH_INVALID)
            } else {
                RequestState::ReadyToExecute
            };
        }
        if r.xfer == Xfer::None {
            return fail(r, Status::INVALID_FIELD);
        }
        match r.sqe.dptr.type_byte {
            SGL_IN_CAPSULE => {
                if r.xfer != Xfer::HostToCtrl || r.sqe.dptr.addr != 0 {
                    return fail(r, Status::SGL_OFFSET_INVALID);
                }
                if len > in_capsule_max || r.received_bytes != len {
                    return fail(r, Status::SGL_LENGTH_INVALID);
                }
                RequestState::ReadyToExecute
            }
            SGL_TRANSPORT => {
                if r.in_capsule || len > max_xfer {
                    return fail(r, Status::SGL_LENGTH_INVALID);
                }
                // I/O data is wholly overwritten (by storage or the host)
                // before it is used; admin replies start from zeroes.
                if io_queue {
                    r.buf.set_len_stale(len as usize);
                } else {
                    r.buf.set_len_zeroed(len as usize);
                }
                if r.xfer == Xfer::CtrlToHost {
                    return RequestState::ReadyToExecute;
                }
                r.r2t_sent_bytes = 0;
                self.send_r2ts(slot);
                RequestState::AwaitingH2CData
            }
            _ => fail(r, Status::SGL_TYPE_INVALID),
        }
    }

    /// ReadyToExecute → Completed, Executing or AwaitingEvent.
    fn execute(&mut self, slot: usize) -> RequestState {
        let sqe = self.reqs[slot].sqe;
        let outcome = if sqe.opcode == admin::FABRICS {
            crate::fabrics::execute(self, slot)
        } else {
            match &self.binding {
                None => Outcome::err(Status::CMD_SEQ_ERROR),
                Some(b) if b.qid == 0 => crate::admin::execute(self, slot),
                Some(_) => crate::io::execute(self, slot),
            }
        };
        self.apply(slot, outcome)
    }

    /// The state an outcome leads to, with its status recorded.
    fn apply(&mut self, slot: usize, outcome: Outcome) -> RequestState {
        let r = &mut self.reqs[slot];
        match outcome {
            Outcome::Deferred => RequestState::AwaitingEvent,
            Outcome::Submitted => RequestState::Executing,
            Outcome::Done {
                status,
                result,
                out_len,
            } => {
                r.status = status;
                r.result = result;
                r.out_len = out_len.min(r.len_bytes);
                RequestState::Completed
            }
        }
    }

    /// Sends C2HData (for successful reads) and the response capsule.
    fn send_completion(&mut self, slot: usize) {
        let chunk = self.target.limits.max_c2h_data_bytes as usize;
        let r = &self.reqs[slot];
        let (cid, status, result) = (r.sqe.cid, r.status, r.result);
        let send_data = status.is_success() && r.xfer == Xfer::CtrlToHost && r.out_len > 0;
        let mut skip_resp = false;
        if send_data {
            let total = r.out_len as usize;
            let mut off = 0;
            while off < total {
                let n = chunk.min(total - off);
                let last = off + n == total;
                let mut fl = 0;
                if last {
                    fl |= flags::DATA_LAST;
                    if self.sq_flow_disabled {
                        fl |= flags::DATA_SUCCESS;
                        skip_resp = true;
                    }
                }
                let body = tcp::data_body(cid, 0, off as u32, n as u32);
                tcp::frame(
                    &mut self.tx,
                    pdu_type::C2H_DATA,
                    fl,
                    &body,
                    &r.buf[off..off + n],
                    &self.framing,
                );
                off += n;
            }
        }
        if !status.is_success() {
            if let Some(b) = &self.binding {
                b.ctrl.log_error(nvme_spec::log::ErrorEntry {
                    sqid: b.qid,
                    cid,
                    status: status.field() << 1,
                    nsid: r.sqe.nsid,
                    ..Default::default()
                });
            }
        }
        if !skip_resp {
            self.send_response(cid, status, result);
        }
    }

    pub(crate) fn send_response(&mut self, cid: u16, status: Status, result: u64) {
        let mut cqe = Cqe {
            result: result as u32,
            dw1: (result >> 32) as u32,
            sqhd: if self.sq_flow_disabled {
                0xFFFF
            } else {
                self.sqhd
            },
            sqid: self.qid().unwrap_or(0),
            cid,
            ..Default::default()
        };
        cqe.set_status(status);
        tcp::frame(
            &mut self.tx,
            pdu_type::CAPSULE_RESP,
            0,
            &cqe.encode(),
            &[],
            &self.framing,
        );
    }

    /// Periodic work: keep alive enforcement, controller teardown, counters.
    /// Returns false when the connection should close.
    pub fn tick(&mut self, now: Instant) -> bool {
        if let Some(b) = &self.binding {
            let s = &b.ctrl.stats;
            let c = std::mem::take(&mut self.counters);
            use std::sync::atomic::Ordering::Relaxed;
            s.read_bytes.fetch_add(c.read_bytes, Relaxed);
            s.written_bytes.fetch_add(c.written_bytes, Relaxed);
            s.reads.fetch_add(c.reads, Relaxed);
            s.writes.fetch_add(c.writes, Relaxed);
            if !b.ctrl.is_alive() {
                self.close("controller torn down".into());
            } else if b.qid == 0 {
                self.deliver_events();
                let b = self.binding.as_ref().expect("bound above");
                let kato = b.ctrl.kato_ms.load(Relaxed);
                if kato > 0
                    && now.duration_since(self.last_keepalive) > Duration::from_millis(kato as u64)
                {
                    self.close(format!("keep alive timeout ({kato} ms) expired"));
                }
            }
        }
        self.phase != Phase::Closing
    }

    /// Completes outstanding Asynchronous Event Requests with the
    /// controller's pending events, one each (admin queue only).
    fn deliver_events(&mut self) {
        let Some(ctrl) = self.binding.as_ref().map(|b| b.ctrl.clone()) else {
            return;
        };
        while let Some(slot) = self
            .reqs
            .iter()
            .position(|r| r.state == RequestState::AwaitingEvent)
        {
            let Some(event) = ctrl.take_event() else {
                return;
            };
            let next = self.apply(slot, Outcome::ok(u64::from(event)));
            self.reqs[slot].state = next;
            self.advance(slot);
        }
    }

    /// Releases the queue's claim on its controller; the admin queue takes
    /// the controller down with it. Call once, when the socket closes.
    pub fn release(&mut self) {
        if let Some(b) = self.binding.take() {
            if b.qid == 0 {
                self.target.destroy_controller(b.ctrl.cntlid);
            } else {
                self.target.leave_controller(&b.ctrl, b.qid);
            }
        }
        assert_eq!(
            self.executing(),
            0,
            "a connection is released only when no storage operation is in flight"
        );
        for r in &mut self.reqs {
            r.state = RequestState::Free;
        }
        self.phase = Phase::Closing;
    }
}
