//! One NVMe/TCP connection (one queue), without I/O: bytes in, bytes out,
//! storage operations out, their completions in.
//!
//! The reactor feeds received bytes to [`Connection::on_bytes`], writes out
//! whatever [`Connection::swap_tx`] (or `take_tx`) hands it, submits what
//! [`Connection::take_storage`] yields and reports each completion to
//! [`Connection::complete_storage`]. Framing, the ICReq exchange and
//! TermReq on protocol violations are here; each command's way through its
//! states is in `lifecycle.rs` (handlers decide, the connection applies
//! their outcome) and R2T flow in `transfer.rs`. None of it does I/O, so the
//! same code runs under the reactor, in unit tests (with
//! [`Connection::run_storage_blocking`]) and in the fuzz target.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};

use nvme_spec::tcp::{self, fes, pdu_type, Direction, FatalError, Framing, Pdu};

use super::command::{Binding, Outcome};
use super::config::R2T_OUTSTANDING_LIMIT;
use super::counters::{IoCounters, QueueCounters, Refused};
use super::request::{RequestState, Requests, StateCounts};
use super::splice::Splices;
use super::storage::{StorageKind, StorageOp};
use super::subsystem::Target;

/// Largest per-slot data buffer kept after its command completes.
pub const RETAINED_BUF_BYTES: usize = 256 * 1024;

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

/// How long a new socket may take to send its ICReq.
pub const ICREQ_DEADLINE: Duration = Duration::from_secs(5);
/// How long a new socket may take to connect a queue (ICReq to a
/// successful Connect; a refused Connect closes at once).
pub const CONNECT_DEADLINE: Duration = Duration::from_secs(10);
/// How long an admin queue that asked for no keep-alive (KATO 0) may sit
/// without a command while its controller has no I/O queue: such queues
/// otherwise hold controller slots (`max_controllers`) for ever. A host
/// that does I/O, or sends any admin command (Keep Alive included) within
/// this, is never closed by it.
pub const ADMIN_IDLE_DEADLINE: Duration = Duration::from_secs(60);

/// One connection.
#[derive(Debug)]
pub struct Connection {
    pub(crate) target: Arc<Target>,
    pub(crate) phase: Phase,
    pub(crate) framing: Framing,
    rx: Vec<u8>,
    pub(crate) tx: Vec<u8>,
    /// RAM namespace data that goes into `tx`'s output in place.
    pub(crate) tx_splices: Splices,
    pub(crate) binding: Option<Binding>,
    /// DH-HMAC-CHAP state of the bound queue.
    pub(crate) auth: super::auth::QueueAuth,
    /// Bytes of the target's buffer budget this connection's request
    /// buffers hold (their capacities); given back on drop.
    pub(crate) charged: u64,
    pub(crate) reqs: Requests,
    /// Storage operations queued for the reactor's ring (at most one per
    /// request, so never more than the depth).
    storage: VecDeque<StorageOp>,
    pub(crate) sqhd: u16,
    pub(crate) sq_flow_disabled: bool,
    /// R2Ts the host lets us have outstanding per command (its MAXR2T + 1,
    /// at most [`R2T_OUTSTANDING_LIMIT`]).
    pub(crate) r2t_outstanding_max: u32,
    pub(crate) last_keepalive: Instant,
    /// When the socket was accepted (the ICReq and Connect deadlines).
    opened: Instant,
    pub(crate) counters: QueueCounters,
    /// The connection's clock: read once per receive fed and once per
    /// storage completion (not per command). A command's latency runs from
    /// the reading when its capsule arrived to the one when it completed.
    pub(crate) clock: Instant,
    /// Why the connection is closing, for the log.
    pub close_reason: Option<String>,
    /// Id of the port (listener) the connection came through; 1 unless
    /// [`Connection::on_port`] says.
    pub port: u16,
    /// CPU of the reactor serving it, where a reactor does
    /// ([`Connection::on_reactor`]).
    pub reactor_cpu: Option<usize>,
    /// The identity its TLS handshake proved, on a target that requires
    /// TLS ([`Connection::set_tls_peer`]).
    pub(crate) tls_peer: Option<crate::tls::ossl::TlsPeer>,
    /// The socket's source address ([`Connection::from_source`]).
    pub(crate) source: Option<std::net::IpAddr>,
    /// The reactor's wake-up eventfd ([`Connection::woken_by`]): work done
    /// off the reactor for this connection pokes it.
    pub(crate) waker: Option<Arc<std::os::fd::OwnedFd>>,
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
            tx_splices: Splices::default(),
            binding: None,
            auth: Default::default(),
            charged: 0,
            reqs: Requests::new(depth),
            storage: VecDeque::with_capacity(depth),
            sqhd: 0,
            sq_flow_disabled: false,
            r2t_outstanding_max: 1,
            last_keepalive: Instant::now(),
            clock: Instant::now(),
            opened: Instant::now(),
            counters: QueueCounters::default(),
            close_reason: None,
            port: 1,
            reactor_cpu: None,
            tls_peer: None,
            source: None,
            waker: None,
        }
    }

    /// The same connection, from source address `ip` (charged for its DH
    /// work).
    pub fn from_source(mut self, ip: Option<std::net::IpAddr>) -> Self {
        self.source = ip;
        self
    }

    /// The same connection, on the reactor that `fd` (an eventfd) wakes.
    pub fn woken_by(mut self, fd: Arc<std::os::fd::OwnedFd>) -> Self {
        self.waker = Some(fd);
        self
    }

    /// Runs again the authentication commands whose DH work (done off the
    /// reactor) is in. Cheap when none waits: the reactor calls it each
    /// time it drives the connection (on every wake-up among others).
    pub fn resume_auth(&mut self) {
        if self.reqs.counts().get(RequestState::AwaitingAuth) == 0 {
            return;
        }
        for slot in 0..self.reqs.len() {
            if self.phase == Phase::Closing {
                return;
            }
            if self.reqs[slot].state() == RequestState::AwaitingAuth
                && self.auth.resumable(slot as u16)
            {
                self.reqs.set_state(slot, RequestState::ReadyToExecute);
                self.advance(slot);
            }
        }
    }

    /// Waits for the DH work of every authentication command and runs them
    /// again (for driving a connection without a reactor, as the unit
    /// tests and the fuzz targets do; with `DhPool::inline` nothing
    /// waits).
    pub fn run_auth_blocking(&mut self) {
        while self.phase != Phase::Closing && self.reqs.counts().get(RequestState::AwaitingAuth) > 0
        {
            self.resume_auth();
            std::thread::yield_now();
        }
    }

    /// The host finished its TLS handshake as `peer`: its Connects must
    /// name the host and subsystem its PSK identity does.
    pub fn set_tls_peer(&mut self, peer: crate::tls::ossl::TlsPeer) {
        self.tls_peer = Some(peer);
    }

    /// The same connection, arrived through port `port`.
    pub fn on_port(mut self, port: u16) -> Self {
        self.port = port;
        self
    }

    /// The same connection, served by the reactor on CPU `cpu`.
    pub fn on_reactor(mut self, cpu: usize) -> Self {
        self.reactor_cpu = Some(cpu);
        self
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
        self.tx.len() + self.tx_splices.bytes()
    }

    /// Bytes of the output waiting to be sent that stay in a RAM
    /// namespace until the kernel copies them ([`super::splice`]).
    pub fn tx_spliced(&self) -> usize {
        self.tx_splices.bytes()
    }

    /// Takes the bytes to send (the caller writes them in order), spliced
    /// data copied in place.
    pub fn take_tx(&mut self) -> Vec<u8> {
        if self.tx_splices.is_empty() {
            return std::mem::take(&mut self.tx);
        }
        let mut out = Vec::new();
        self.tx_splices.flatten(&self.tx, &mut out);
        self.tx.clear();
        self.tx_splices.clear();
        out
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

    /// Swaps the output into `out` and `splices`, which must be empty, and
    /// keeps their allocations for the next output: the reactor's send
    /// buffer and this one trade places, so steady-state sending allocates
    /// nothing. The splices stay valid while the connection is not
    /// released ([`super::request::RamData`]).
    pub fn swap_tx(&mut self, out: &mut Vec<u8>, splices: &mut Splices) {
        assert!(
            out.is_empty() && splices.is_empty(),
            "the previous output was sent"
        );
        std::mem::swap(&mut self.tx, out);
        std::mem::swap(&mut self.tx_splices, splices);
    }

    /// How many of the connection's requests are in each state.
    pub fn state_counts(&self) -> StateCounts {
        *self.reqs.counts()
    }

    /// Commands waiting for host data (in-flight writes).
    pub fn awaiting_data(&self) -> usize {
        self.reqs.counts().get(RequestState::AwaitingH2CData) as usize
    }

    /// Commands whose storage operation is queued or in flight. The
    /// connection (and its buffers) must outlive every one of them.
    pub fn executing(&self) -> usize {
        self.reqs.counts().get(RequestState::Executing) as usize
    }

    /// The next storage operation to submit and the start of its slot's
    /// buffer (for a read or write, `len` bytes, page-aligned), which stays
    /// put and untouched by the connection until
    /// [`Connection::complete_storage`] for that slot.
    pub fn take_storage(&mut self) -> Option<(StorageOp, *mut u8)> {
        let op = self.storage.pop_front()?;
        let r = &mut self.reqs[op.slot as usize];
        debug_assert_eq!(r.state(), RequestState::Executing);
        debug_assert!(
            !matches!(op.kind, StorageKind::Read | StorageKind::Write)
                || r.buf.len() >= op.len as usize
        );
        Some((op, r.buf.as_mut_ptr()))
    }

    /// Queues a storage operation for the reactor; the request waits in
    /// `Executing`.
    pub(crate) fn queue_storage(&mut self, op: StorageOp) {
        assert!(
            self.storage.len() < self.reqs.len(),
            "one operation per request"
        );
        self.reqs[op.slot as usize].storage = Some(op);
        self.storage.push_back(op);
    }

    /// A storage operation finished with `res` (bytes or a negated errno):
    /// the command completes (C2HData and/or the response are queued).
    pub fn complete_storage(&mut self, slot: u16, res: i32) {
        self.clock = Instant::now();
        let slot = slot as usize;
        let r = &mut self.reqs[slot];
        assert_eq!(
            r.state(),
            RequestState::Executing,
            "completion for slot {slot}"
        );
        let op = r
            .storage
            .take()
            .expect("an executing request has its operation");
        let b = self.binding.as_ref();
        let res = super::io::zero_fallback(b, &r.sqe, &op, res);
        if let Some(next) = super::io::next_piece(b, r, &op, res) {
            // The command's next storage operation; it stays `Executing`.
            self.queue_storage(next);
            return;
        }
        let outcome = super::io::finish(op.kind, op.len, res);
        let next = self.apply(slot, outcome);
        self.reqs.set_state(slot, next);
        self.advance(slot);
    }

    /// Runs every queued storage operation with blocking system calls (for
    /// driving a connection without a reactor, as the unit tests do).
    pub fn run_storage_blocking(&mut self) {
        while let Some((op, buf)) = self.take_storage() {
            // SAFETY: buf points at the slot's buffer of at least `op.len`
            // bytes (take_storage), which nothing else touches until the
            // completion below.
            let res = unsafe { op.run_blocking(buf) };
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

    /// Replies waiting to be sent past which the connection takes no more
    /// commands: the largest transfer (MDTS), at least [`RETAINED_BUF_BYTES`].
    /// A host that stops reading its replies then stops being read (TCP
    /// pushes back on it), so it pins at most about twice this (this queue
    /// and the reactor's send buffer) beyond its requests' buffers.
    pub fn reply_budget(&self) -> usize {
        (self.target.limits.max_transfer_bytes as usize).max(RETAINED_BUF_BYTES)
    }

    /// Whether received PDUs wait unprocessed (the reply budget was spent).
    pub fn rx_waiting(&self) -> bool {
        self.rx.len() >= tcp::CommonHeader::SIZE && self.rx_missing() == 0
    }

    /// Feeds received bytes; processes every complete PDU while the replies
    /// waiting to be sent stay within [`Connection::reply_budget`] (the
    /// rest stays in the receive buffer; `on_bytes(&[])` goes on).
    pub fn on_bytes(&mut self, input: &[u8]) {
        if self.phase == Phase::Closing {
            return;
        }
        let budget = self.reply_budget();
        if !input.is_empty() {
            self.clock = Instant::now();
        }
        self.rx.extend_from_slice(input);
        let rx = std::mem::take(&mut self.rx);
        let mut pos = 0;
        let max_plen = self.target.limits.max_rx_pdu_bytes();
        while self.phase != Phase::Closing
            && self.tx_pending() < budget
            && rx.len() - pos >= tcp::CommonHeader::SIZE
        {
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

    /// Periodic work: keep alive enforcement, controller teardown, counters.
    /// Returns false when the connection should close.
    pub fn tick(&mut self, now: Instant) -> bool {
        if self.binding.is_none() {
            self.enforce_deadlines(now);
        }
        self.retry_parked();
        self.resume_auth();
        if let Some(b) = &self.binding {
            use std::sync::atomic::Ordering::Relaxed;
            let c = b.ctrl.stats.queues.fold(b.qid, &mut self.counters);
            if b.qid > 0 && c.reads + c.writes > 0 {
                let s = &b.ctrl.stats;
                s.read_bytes.fetch_add(c.read_bytes, Relaxed);
                s.written_bytes.fetch_add(c.written_bytes, Relaxed);
                s.reads.fetch_add(c.reads, Relaxed);
                s.writes.fetch_add(c.writes, Relaxed);
            }
            if c != IoCounters::default() {
                self.target.changed();
            }
            if !b.ctrl.is_alive() {
                self.close("controller torn down".into());
            } else if self.auth.overdue(now) {
                self.target.refusals.count(Refused::AuthDeadline);
                self.close(format!(
                    "DH-HMAC-CHAP not completed within {} s",
                    super::auth::AUTH_DEADLINE.as_secs()
                ));
            } else if b.qid == 0 {
                self.deliver_events();
                let b = self.binding.as_ref().expect("bound above");
                let kato = b.ctrl.kato_ms.load(Relaxed);
                let idle = now.saturating_duration_since(self.last_keepalive);
                if kato > 0 && idle > Duration::from_millis(kato as u64) {
                    self.close(format!("keep alive timeout ({kato} ms) expired"));
                } else if kato == 0
                    && idle > ADMIN_IDLE_DEADLINE
                    && b.ctrl.io_qids.lock().expect("queue lock").is_empty()
                {
                    self.target.refusals.count(Refused::AdminIdle);
                    self.close(format!(
                        "admin queue idle for {} s with no keep-alive (KATO 0) and no I/O queue \
                         (ADMIN_IDLE_DEADLINE): it held a controller slot of max_controllers",
                        ADMIN_IDLE_DEADLINE.as_secs()
                    ));
                }
            }
        }
        self.phase != Phase::Closing
    }

    /// Closes a socket that sent no ICReq within [`ICREQ_DEADLINE`], or no
    /// successful Connect within [`CONNECT_DEADLINE`] of being accepted:
    /// an idle or slow socket holds no connection slot for long.
    fn enforce_deadlines(&mut self, now: Instant) {
        let age = now.saturating_duration_since(self.opened);
        let why = match self.phase {
            Phase::AwaitIcReq if age > ICREQ_DEADLINE => "no ICReq",
            Phase::Ready if age > CONNECT_DEADLINE => "no Connect",
            _ => return,
        };
        let (limit, reason) = if self.phase == Phase::AwaitIcReq {
            (ICREQ_DEADLINE, Refused::IcreqDeadline)
        } else {
            (CONNECT_DEADLINE, Refused::ConnectDeadline)
        };
        self.target.refusals.count(reason);
        self.close(format!("{why} within {} s of connecting", limit.as_secs()));
    }

    /// Completes outstanding Asynchronous Event Requests with the
    /// controller's pending events, one each (admin queue only).
    fn deliver_events(&mut self) {
        let Some(ctrl) = self.binding.as_ref().map(|b| b.ctrl.clone()) else {
            return;
        };
        while let Some(slot) = self.reqs.first_in(RequestState::AwaitingEvent) {
            let Some(event) = ctrl.take_event() else {
                return;
            };
            let next = self.apply(slot, Outcome::ok(u64::from(event)));
            self.reqs.set_state(slot, next);
            self.advance(slot);
        }
    }

    /// Moves on the commands that waited for buffer space (they stay
    /// `New` until the budget lets their buffer grow).
    fn retry_parked(&mut self) {
        for slot in 0..self.reqs.len() {
            if self.phase == Phase::Closing {
                return;
            }
            if self.reqs[slot].state() == RequestState::New {
                self.advance(slot);
            }
        }
    }

    /// Charges the budget for a request buffer that went from `before` to
    /// `after` bytes of capacity (`taken` already taken for it).
    pub(crate) fn recharge(&mut self, before: usize, after: usize, taken: u64) {
        // The common case (a retained buffer reused) touches no shared
        // counter.
        if before == after && taken == 0 {
            return;
        }
        let grown = after.saturating_sub(before) as u64;
        let shrunk = before.saturating_sub(after) as u64;
        let budget = &self.target.buffers;
        match grown.cmp(&taken) {
            std::cmp::Ordering::Greater => budget.take(grown - taken),
            std::cmp::Ordering::Less => budget.give(taken - grown),
            std::cmp::Ordering::Equal => {}
        }
        if shrunk > 0 {
            budget.give(shrunk);
        }
        self.charged = self.charged + grown - shrunk;
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
        for slot in 0..self.reqs.len() {
            if self.reqs[slot].busy() {
                self.reqs.set_state(slot, RequestState::Free);
            }
        }
        self.phase = Phase::Closing;
    }
}

impl Drop for Connection {
    fn drop(&mut self) {
        if self.charged > 0 {
            self.target.buffers.give(self.charged);
            self.target.changed();
        }
    }
}
