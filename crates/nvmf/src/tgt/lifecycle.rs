//! A command's way through its states on one connection: its capsule
//! arrives (`New`), its data transfer is planned (in the capsule, or asked
//! for by R2T in `transfer.rs`), its handler runs and the connection
//! applies the [`Outcome`] (a status, a storage operation, an event to wait
//! for, a binding), then its data and response go out and it is `Free`
//! again. [`Connection::advance`] drives it; `Requests::set_state` makes
//! each move.

use std::time::Instant;

use nvme_spec::command::{admin, io, SGL_IN_CAPSULE, SGL_TRANSPORT};
use nvme_spec::tcp::{self, fes, flags, pdu_type, FatalError};
use nvme_spec::{Cqe, Sqe, Status};

use super::command::{Ctx, Outcome};
use super::config::ADMIN_IN_CAPSULE_BYTES;
use super::queue::{Connection, RETAINED_BUF_BYTES};
use super::request::{RamData, Request, RequestState, Xfer};

impl Connection {
    fn active_depth(&self) -> usize {
        match &self.binding {
            Some(b) => b.sq_entries as usize,
            None => 1,
        }
    }

    pub(crate) fn on_capsule(&mut self, sqe: Sqe, data: &[u8], digest_ok: bool) {
        self.sqhd = self.sqhd.wrapping_add(1);
        if let Some(b) = &self.binding {
            self.sqhd %= b.sq_entries.max(1);
        }
        // One pass over the slots for a request holding this command id. A
        // host that reuses the id of its own outstanding Asynchronous Event
        // Request has given that request up (SPDK's host aborts its AERs on
        // its side before shutting a controller down, then reuses their
        // ids): the AER is dropped without a completion, which would
        // otherwise arrive under another command's id. Any other holder is
        // a conflict.
        let holder = self
            .reqs
            .iter()
            .position(|r| r.busy() && r.sqe.cid == sqe.cid);
        if let Some(i) = holder {
            if self.reqs[i].state() != RequestState::AwaitingEvent {
                self.send_response(sqe.cid, Status::CID_CONFLICT, 0);
                return;
            }
            self.reqs.set_state(i, RequestState::Free);
        }
        let depth = self.active_depth().min(self.reqs.len());
        let Some(slot) = self.reqs.first_free(depth) else {
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
        r.waited_for_buffer = false;
        r.status = Status::SUCCESS;
        r.result = 0;
        r.out_len = 0;
        r.ram = None;
        r.storage = None;
        r.storage_progress = 0;
        r.arrived = self.clock;
        r.buf.clear();
        let before = r.buf.capacity();
        if !data.is_empty() && data.len() <= sqe.dptr.length as usize {
            r.buf.assign(data);
            r.received_bytes = data.len() as u32;
        } else if !data.is_empty() {
            // More in-capsule data than the SGL describes.
            r.in_capsule = true;
            r.received_bytes = u32::MAX;
        }
        let after = r.buf.capacity();
        self.recharge(before, after, 0);
        self.reqs.set_state(slot, RequestState::New);
        self.advance(slot);
    }

    /// Moves a request on from state to state ([`Requests::set_state`]
    /// makes each move) until it waits for something (host data, storage,
    /// an event) or is free again.
    pub(crate) fn advance(&mut self, slot: usize) {
        loop {
            let state = self.reqs[slot].state();
            let next = match state {
                RequestState::Free
                | RequestState::AwaitingEvent
                | RequestState::AwaitingAuth
                | RequestState::Executing => return,
                RequestState::New => match self.plan_transfer(slot) {
                    Some(next) => next,
                    // Waiting for buffer space: retried every tick.
                    None => return,
                },
                RequestState::AwaitingH2CData => {
                    let r = &self.reqs[slot];
                    if r.received_bytes < r.len_bytes {
                        return;
                    }
                    RequestState::ReadyToExecute
                }
                RequestState::ReadyToExecute => self.execute(slot),
                RequestState::Completed => {
                    self.count(slot);
                    self.send_completion(slot);
                    if self.refused_connect(slot) {
                        // The response is queued; the socket closes once it
                        // is sent, so a refused host holds no slot.
                        self.close("Connect refused".into());
                    } else if self.auth.failed() {
                        // Its Failure1 is queued (or the host's Failure2
                        // came in): the queue ends.
                        self.close("DH-HMAC-CHAP authentication failed".into());
                    }
                    // Keep small buffers for reuse; give large ones back so an
                    // idle queue does not pin depth x MDTS bytes.
                    let before = self.reqs[slot].buf.capacity();
                    self.reqs[slot].buf.shrink_above(RETAINED_BUF_BYTES);
                    let after = self.reqs[slot].buf.capacity();
                    self.recharge(before, after, 0);
                    RequestState::Free
                }
            };
            self.reqs.set_state(slot, next);
        }
    }

    /// Whether request `slot` is a Connect this unbound queue was refused.
    fn refused_connect(&self, slot: usize) -> bool {
        let r = &self.reqs[slot];
        self.binding.is_none()
            && r.sqe.opcode == admin::FABRICS
            && r.sqe.fctype() == nvme_spec::fabrics::FCTYPE_CONNECT
            && !r.status.is_success()
    }

    /// New → AwaitingH2CData (R2T sent), ReadyToExecute or Completed
    /// (error); `None` while the target's buffer budget cannot take the
    /// command's buffer (it stays `New` and is retried).
    fn plan_transfer(&mut self, slot: usize) -> Option<RequestState> {
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
            Some(RequestState::Completed)
        };
        if r.digest_failed {
            return fail(r, Status::TRANSIENT_TRANSPORT);
        }
        let len = r.len_bytes;
        if len == 0 {
            return if r.in_capsule {
                fail(r, Status::SGL_LENGTH_INVALID)
            } else {
                Some(RequestState::ReadyToExecute)
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
                Some(RequestState::ReadyToExecute)
            }
            SGL_TRANSPORT => {
                if r.in_capsule || len > max_xfer {
                    return fail(r, Status::SGL_LENGTH_INVALID);
                }
                // The buffer grows only within the target's budget; the
                // command waits (stays New) until there is room.
                let before = r.buf.capacity();
                let need = (len as usize).saturating_sub(before) as u64;
                if need > 0 && !self.target.buffers.try_take(need) {
                    if !r.waited_for_buffer {
                        r.waited_for_buffer = true;
                        self.target.buffers.count_wait();
                        self.target.changed();
                    }
                    return None;
                }
                // I/O data is wholly overwritten (by storage or the host)
                // before it is used; admin replies start from zeroes.
                if io_queue {
                    r.buf.set_len_stale(len as usize);
                } else {
                    r.buf.set_len_zeroed(len as usize);
                }
                let (after, xfer) = (r.buf.capacity(), r.xfer);
                self.recharge(before, after, need);
                if xfer == Xfer::CtrlToHost {
                    return Some(RequestState::ReadyToExecute);
                }
                self.reqs[slot].r2t_sent_bytes = 0;
                self.send_r2ts(slot);
                Some(RequestState::AwaitingH2CData)
            }
            _ => fail(r, Status::SGL_TYPE_INVALID),
        }
    }

    /// ReadyToExecute → Completed, Executing or AwaitingEvent: the
    /// command's handler decides, the connection applies its outcome. Every
    /// admin command counts as a keep-alive. A queue that must
    /// authenticate runs only authentication commands until it has.
    fn execute(&mut self, slot: usize) -> RequestState {
        let sqe = self.reqs[slot].sqe;
        let is_fabrics = sqe.opcode == admin::FABRICS;
        let qid = self.qid();
        let auth_cmd = is_fabrics
            && matches!(
                sqe.fctype(),
                nvme_spec::auth::FCTYPE_AUTH_SEND | nvme_spec::auth::FCTYPE_AUTH_RECEIVE
            );
        if qid.is_some() && !auth_cmd && !self.auth.may_run_commands() {
            return self.apply(slot, Outcome::err(Status::AUTH_REQUIRED));
        }
        if !is_fabrics && qid == Some(0) {
            self.last_keepalive = Instant::now();
            if let Some(b) = &self.binding {
                *b.ctrl.last_admin_command.lock().expect("controller lock") = self.last_keepalive;
            }
        }
        let events_waiting = self.reqs.counts().get(RequestState::AwaitingEvent) as usize;
        let mut ctx = Ctx {
            target: &self.target,
            binding: self.binding.as_ref(),
            framing: self.framing,
            slot: slot as u16,
            req: &mut self.reqs[slot],
            events_waiting,
            port: self.port,
            reactor_cpu: self.reactor_cpu,
            auth: &mut self.auth,
            now: self.clock,
            tls: self.tls_peer.as_ref(),
            source: self.source,
            waker: self.waker.as_ref(),
        };
        let outcome = match qid {
            _ if is_fabrics => super::fabrics::execute(&mut ctx),
            None => Outcome::err(Status::CMD_SEQ_ERROR),
            Some(0) => super::admin::execute(&mut ctx),
            Some(_) => super::io::execute(&mut ctx),
        };
        self.apply(slot, outcome)
    }

    /// Applies a handler's outcome: the state it leads to, with the
    /// command's status recorded, its storage operation queued or the queue
    /// bound.
    pub(crate) fn apply(&mut self, slot: usize, outcome: Outcome) -> RequestState {
        let (status, result, out_len) = match outcome {
            Outcome::Deferred => return RequestState::AwaitingEvent,
            Outcome::AwaitingAuth => return RequestState::AwaitingAuth,
            Outcome::Storage(op) => {
                debug_assert_eq!(op.slot as usize, slot);
                self.queue_storage(op);
                return RequestState::Executing;
            }
            Outcome::Connected {
                binding,
                sq_flow_disabled,
            } => {
                let cntlid = binding.ctrl.cntlid;
                let keys = binding.ctrl.subsys.host_keys(&binding.ctrl.hostnqn);
                self.auth = super::auth::QueueAuth::on_connect(keys, self.clock);
                self.binding = Some(binding);
                self.sq_flow_disabled = sq_flow_disabled;
                self.last_keepalive = Instant::now();
                let atr = if self.auth.required() {
                    nvme_spec::auth::CONNECT_AUTHREQ_ATR
                } else {
                    0
                };
                (Status::SUCCESS, u64::from(u32::from(cntlid) | atr), 0)
            }
            Outcome::Done {
                status,
                result,
                out_len,
            } => (status, result, out_len),
        };
        let r = &mut self.reqs[slot];
        r.status = status;
        r.result = result;
        r.out_len = out_len.min(r.len_bytes);
        RequestState::Completed
    }

    /// Counts a completed command of this queue by namespace (the admin
    /// queue's under nsid 0), folded into the controller's table (and, for
    /// I/O, its SMART counters) on the next tick.
    fn count(&mut self, slot: usize) {
        let Some(qid) = self.qid() else {
            return;
        };
        let r = &self.reqs[slot];
        let (ok, digest_failed, opcode) = (r.status.is_success(), r.digest_failed, r.sqe.opcode);
        let (nsid, len) = (
            if qid == 0 { 0 } else { r.sqe.nsid },
            u64::from(r.len_bytes),
        );
        let took = self.clock.saturating_duration_since(r.arrived);
        let c = self.counters.entry(nsid);
        c.latency.record(took);
        c.digest_failures += u64::from(digest_failed);
        if !ok {
            c.errors += 1;
            return;
        }
        match opcode {
            io::READ if qid > 0 => {
                c.reads += 1;
                c.read_bytes += len;
            }
            io::WRITE if qid > 0 => {
                c.writes += 1;
                c.written_bytes += len;
            }
            _ => c.other_commands += 1,
        }
    }

    /// Sends C2HData (for successful reads) and the response capsule.
    fn send_completion(&mut self, slot: usize) {
        let chunk = self.target.limits.max_c2h_data_bytes as usize;
        let r = &self.reqs[slot];
        let (cid, status, result) = (r.sqe.cid, r.status, r.result);
        let send_data = status.is_success() && r.xfer == Xfer::CtrlToHost && r.out_len > 0;
        // RAM data goes out in place where the bytes themselves are not
        // needed here: no data digest to compute, no TLS to encrypt.
        let splice = !self.framing.data_digest && self.target.tls.is_none();
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
                match r.ram {
                    None => tcp::frame(
                        &mut self.tx,
                        pdu_type::C2H_DATA,
                        fl,
                        &body,
                        &r.buf[off..off + n],
                        &self.framing,
                    ),
                    Some(RamData(src)) => {
                        let dd = tcp::frame_head(
                            &mut self.tx,
                            pdu_type::C2H_DATA,
                            fl,
                            &body,
                            n,
                            &self.framing,
                        );
                        // SAFETY: src..src+out_len lies in a RAM namespace
                        // of this connection's subsystem (checked by the
                        // read), mapped while the connection holds its
                        // controller (RamData), i.e. until it is released,
                        // which the reactor does only with no send in
                        // flight; off + n <= out_len.
                        unsafe {
                            self.tx_splices
                                .append(&mut self.tx, src.add(off), n, splice)
                        };
                        if dd {
                            let d = nvme_spec::crc32c::crc32c(&self.tx[self.tx.len() - n..]);
                            self.tx.extend_from_slice(&d.to_le_bytes());
                        }
                    }
                }
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
}
