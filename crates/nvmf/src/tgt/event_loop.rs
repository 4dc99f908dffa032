//! One reactor's loop: every socket receive and send, every storage
//! operation and the wake-up for new connections on one io_uring.
//!
//! Each connection has at most one receive (re-armed after each completion,
//! into the connection's own receive buffer) and one send (of the
//! connection's output, which stays in the slot until its completion) in
//! flight, plus its storage operations. A connection is released only when
//! the ring holds nothing of it: its socket is shut down first, which
//! completes an outstanding receive or send, and storage operations are
//! waited for. The loop waits at most one [`TICK`] so keep-alive and
//! shutdown are checked even when nothing arrives.
//!
//! Each loop drives only the connections something happened to: a
//! completion of theirs, a new connection, and every connection on a
//! wake-up (DH or TLS work done off the reactor, new connections), on a
//! tick (deadlines, keep-alives, parked commands, events) and during
//! shutdown. Issue 38: driving every connection on every loop made 64
//! idle admin queues cost each I/O of another host 64 idle checks.

use std::net::TcpStream;
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::Ordering;
use std::sync::mpsc::Receiver;
use std::sync::Arc;
use std::time::{Duration, Instant};

use io_uring::{opcode, squeue, types};

use super::admission::Ticket;
use super::counters::Refused;
use super::log_limit::LogLimit;
use super::queue::{Connection, Phase};
use super::ring::{Ring, Tag};
use super::splice::{Splices, MAX_IOVECS};
use super::storage::{StorageKind, StorageOp};
use super::subsystem::Target;
use super::tls_pool::{HandshakeCharge, HandshakeDone, HandshakeTicket};
use crate::log::{Level, Stream};
use crate::tls::ossl::{Received, ServerSession};

/// How long in-flight writes get to finish after SIGINT/SIGTERM.
pub const DRAIN_GRACE: Duration = Duration::from_secs(5);
/// Longest a reactor waits before checking keep-alive and shutdown.
pub const TICK: Duration = Duration::from_millis(100);

/// Receive buffer per connection: one H2CData PDU of the default
/// MAXH2CDATA arrives in one or two receives.
const RECV_BYTES: usize = 128 * 1024;
/// Receive buffer of a socket that has not reached Connect: enough for
/// ICReq and a Connect capsule in one receive, and small, so sockets that
/// never connect (a flood, each closed for room or at its deadline) cost
/// little memory; it grows to [`RECV_BYTES`] at Connect.
const RECV_BYTES_BEFORE_CONNECT: usize = 4096;

/// One connection on this reactor.
struct Slot {
    stream: TcpStream,
    /// The host's address, kept from the start (a socket that failed or was
    /// shut down no longer says).
    peer: String,
    /// The slot [`Target::admit`] gave it: reported at Connect, given
    /// back with the connection.
    ticket: Arc<Ticket>,
    /// Its queue is connected (reported to the admission ledger).
    connected: bool,
    conn: Connection,
    /// Receive buffer; the kernel owns it while `recv_armed`.
    rbuf: Box<[u8]>,
    recv_armed: bool,
    /// Bytes being sent, with RAM data spliced in; the kernel reads them
    /// while `send_armed`. `out_pos` counts the output's bytes, spliced
    /// ones included.
    out: Vec<u8>,
    out_splices: Splices,
    out_pos: usize,
    /// The iovecs and message header of a send with splices (boxed: the
    /// kernel reads them while `send_armed`, and the slot may move).
    iov: Vec<libc::iovec>,
    msg: Box<libc::msghdr>,
    send_armed: bool,
    /// The socket failed or the host closed it.
    dead: bool,
    /// shutdown(2) was called (to complete whatever the ring holds).
    shut: bool,
    /// Its TLS session, on a target that requires TLS: the ring moves
    /// records, the connection sees plain text.
    tls: Option<Box<ServerSession>>,
    /// A step of its unfinished handshake out on the target's `tls_pool`:
    /// the session is there (`tls` is `None`), and nothing is received or
    /// sent until it is back ([`Slot::resume_handshake`]).
    handshake: Option<HandshakeTicket>,
    /// When the socket was accepted (the handshake's deadline).
    accepted: Instant,
    /// Why it closes was already said (a TLS failure, rate-limited on the
    /// target's `auth_log`): the closing line is a debug line.
    failure_said: bool,
    /// Plain text taken from the connection to encrypt (reused).
    plain: Vec<u8>,
    /// When the connection started closing (for the flush deadline).
    closing_since: Option<Instant>,
    /// On the reactor's ready list (driven on its next loop).
    ready: bool,
}

impl Slot {
    fn new(
        stream: TcpStream,
        port: u16,
        cpu: usize,
        target: &Arc<Target>,
        wake: &Arc<OwnedFd>,
        ticket: Arc<Ticket>,
    ) -> Self {
        // io_uring does not need O_NONBLOCK; without it a kernel lacking
        // FAST_POLL waits in an io-wq worker instead of spinning.
        let _ = stream.set_nonblocking(false);
        let addr = stream.peer_addr().ok();
        let peer = addr.map_or_else(|| "an unknown peer".into(), |a| a.to_string());
        let mut conn = Connection::new(target.clone())
            .on_port(port)
            .on_reactor(cpu)
            .from_source(addr.map(|a| a.ip()))
            .woken_by(wake.clone());
        let tls = match target.tls.as_ref().map(|t| t.session()) {
            None => None,
            Some(Ok(session)) => Some(Box::new(session)),
            Some(Err(e)) => {
                conn.close(format!("cannot start its TLS session: {e}"));
                None
            }
        };
        Self {
            stream,
            peer,
            ticket,
            connected: false,
            conn,
            rbuf: vec![0u8; RECV_BYTES_BEFORE_CONNECT].into_boxed_slice(),
            recv_armed: false,
            out: Vec::new(),
            out_splices: Splices::default(),
            out_pos: 0,
            iov: Vec::with_capacity(MAX_IOVECS),
            // SAFETY: msghdr is plain old data; all zeroes is an empty one.
            msg: Box::new(unsafe { std::mem::zeroed() }),
            send_armed: false,
            dead: false,
            shut: false,
            closing_since: None,
            tls,
            handshake: None,
            accepted: Instant::now(),
            failure_said: false,
            plain: Vec::new(),
            ready: false,
        }
    }

    /// Takes back a handshake step a worker finished: the session returns
    /// to the slot and the connection sees what it decrypted.
    fn resume_handshake(&mut self, target: &Target) {
        let Some(done) = self.handshake.as_ref().and_then(HandshakeTicket::take) else {
            return;
        };
        self.handshake = None;
        let HandshakeDone {
            session,
            result,
            plain,
        } = done;
        self.tls = Some(session);
        match result {
            Ok(Received::More) => {}
            Ok(Received::Established(peer)) => self.conn.set_tls_peer(peer),
            Ok(Received::Closed) => self.dead = true,
            Err(why) => self.tls_failed(why, target),
        }
        if !plain.is_empty() {
            self.conn.on_bytes(&plain);
        }
    }

    /// Counts a failed TLS session and says why, within the target's
    /// `auth_log` rate (its closing line is then a debug line).
    fn tls_failed(&mut self, why: impl std::fmt::Display, target: &Target) {
        let why = why.to_string();
        target.refusals.count(Refused::TlsFailed);
        self.failure_said = true;
        if crate::log::enabled(Level::Warn) && target.auth_log.admit(Instant::now()) {
            crate::log::emit(
                Stream::Err,
                Level::Warn,
                "tls_failed",
                format_args!("TLS failed for {}: {why}", self.peer),
                &[
                    ("peer", self.peer.as_str().into()),
                    ("reason", why.as_str().into()),
                ],
            );
        }
        self.conn.close(why);
    }

    /// Hands the received `bytes` of an unfinished handshake to the
    /// target's `tls_pool`, or refuses the handshake over its budget.
    fn step_handshake(&mut self, res: usize, target: &Target) {
        let session = self.tls.take().expect("a TLS connection handshaking");
        let charge = HandshakeCharge {
            source: self.conn.source,
            accepted: self.accepted,
            waker: self.conn.waker.clone(),
        };
        let bytes = self.rbuf[..res].to_vec();
        match target.tls_handshakes.submit(session, bytes, charge) {
            Ok(ticket) => self.handshake = Some(ticket),
            Err((session, refusal)) => {
                self.tls = Some(session);
                target.refusals.count(Refused::TlsBusy);
                self.conn.close(format!("TLS handshake refused: {refusal}"));
            }
        }
    }

    fn closing(&self) -> bool {
        self.dead || self.conn.phase() == Phase::Closing
    }

    /// Replies not yet sent: the send buffer's rest and the connection's.
    fn backlog(&self) -> usize {
        self.out_len().saturating_sub(self.out_pos) + self.conn.tx_pending()
    }

    /// Bytes of the output being sent, spliced ones included.
    fn out_len(&self) -> usize {
        self.out.len() + self.out_splices.bytes()
    }

    /// The host is not reading its replies fast enough: read no more of
    /// its commands until they drain ([`Connection::reply_budget`]).
    fn backlogged(&self) -> bool {
        self.backlog() >= self.conn.reply_budget() || self.conn.rx_waiting()
    }

    fn output_drained(&self) -> bool {
        self.out_pos >= self.out_len() && self.conn.tx_pending() == 0
    }

    /// Nothing of this connection is left in the ring.
    fn idle_in_ring(&self) -> bool {
        !self.recv_armed && !self.send_armed && self.conn.executing() == 0
    }

    /// A receive when none is armed and the connection is open: the rest
    /// of a partly received PDU in one completion (MSG_WAITALL), else
    /// whatever is there.
    fn recv_entry(&mut self, conn: u32) -> Option<squeue::Entry> {
        if self.recv_armed
            || self.handshake.is_some()
            || self.closing()
            || self.shut
            || self.backlogged()
        {
            return None;
        }
        self.recv_armed = true;
        // Under TLS the socket carries records, not PDUs: whatever is there.
        let missing = match self.tls {
            Some(_) => 0,
            None => self.conn.rx_missing().min(self.rbuf.len()),
        };
        let (len, flags) = match missing {
            0 => (self.rbuf.len(), 0),
            n => (n, libc::MSG_WAITALL),
        };
        let fd = types::Fd(self.stream.as_raw_fd());
        let e = opcode::Recv::new(fd, self.rbuf.as_mut_ptr(), len as u32).flags(flags);
        Some(e.build().user_data(Tag::Recv { conn }.encode()))
    }

    /// A send of what remains of the output, or of the connection's next
    /// output, when none is armed.
    fn send_entry(&mut self, conn: u32) -> Option<squeue::Entry> {
        if self.send_armed || self.dead || self.shut || self.handshake.is_some() {
            return None;
        }
        if self.out_pos >= self.out_len() {
            self.out.clear();
            self.out_splices.clear();
            self.out_pos = 0;
            match self.tls.as_mut() {
                None if self.conn.tx_pending() > 0 => {
                    self.conn.swap_tx(&mut self.out, &mut self.out_splices)
                }
                None => {}
                Some(tls) => {
                    if self.conn.tx_pending() > 0 {
                        // A TLS connection's output has no splices.
                        let mut none = Splices::default();
                        self.conn.swap_tx(&mut self.plain, &mut none);
                        debug_assert!(none.is_empty());
                        let sent = tls.send(&self.plain);
                        self.plain.clear();
                        if let Err(why) = sent {
                            self.conn.close(why.to_string());
                        }
                    }
                    if tls.has_output() {
                        tls.take_output(&mut self.out);
                    }
                }
            }
        }
        if self.out_pos >= self.out_len() {
            return None;
        }
        self.send_armed = true;
        let fd = types::Fd(self.stream.as_raw_fd());
        let e = if self.out_splices.is_empty() {
            let rest = &self.out[self.out_pos..];
            opcode::Send::new(fd, rest.as_ptr(), rest.len() as u32)
                .flags(libc::MSG_NOSIGNAL)
                .build()
        } else {
            self.out_splices
                .iovecs(&self.out, self.out_pos, &mut self.iov);
            self.msg.msg_iov = self.iov.as_mut_ptr();
            self.msg.msg_iovlen = self.iov.len() as _;
            opcode::SendMsg::new(fd, &*self.msg)
                .flags(libc::MSG_NOSIGNAL as u32)
                .build()
        };
        Some(e.user_data(Tag::Send { conn }.encode()))
    }

    /// A closing connection shuts its socket down once its output is out
    /// (or it is dead, or [`DRAIN_GRACE`] has passed): that completes an
    /// outstanding receive or send, and the slot is freed once both
    /// completions and all storage are back.
    fn shut_when_done(&mut self) {
        if !self.closing() || self.shut {
            return;
        }
        let since = *self.closing_since.get_or_insert_with(Instant::now);
        if self.dead || self.output_drained() || since.elapsed() >= DRAIN_GRACE {
            let _ = self.stream.shutdown(std::net::Shutdown::Both);
            self.shut = true;
        }
    }
}

/// One reactor: its ring, its connections and its inbox.
pub(crate) struct Reactor {
    target: Arc<Target>,
    /// The rate of its connection lines.
    log: LogLimit,
    /// The CPU it runs on (named in the connection log).
    cpu: usize,
    inbox: Receiver<(TcpStream, u16, Arc<Ticket>)>,
    wake: Arc<OwnedFd>,
    wake_armed: bool,
    tick_armed: bool,
    tick_ts: types::Timespec,
    ring: Ring,
    /// Connections by stable index (completions name them by index, and an
    /// entry is freed only when the ring holds nothing of it).
    slots: Vec<Option<Slot>>,
    free: Vec<u32>,
    /// Connections to drive on the next loop, each once (`Slot::ready`).
    ready: Vec<u32>,
    /// Connections driven and sweeps of every connection (a test's view).
    #[cfg(test)]
    drives: Arc<(std::sync::atomic::AtomicU64, std::sync::atomic::AtomicU64)>,
    /// Completions reaped in one batch (reused).
    cqes: Vec<(u64, i32)>,
}

impl Reactor {
    pub(crate) fn new(
        target: Arc<Target>,
        cpu: usize,
        inbox: Receiver<(TcpStream, u16, Arc<Ticket>)>,
        wake: Arc<OwnedFd>,
        ring: Ring,
    ) -> Self {
        Self {
            target,
            log: LogLimit::standard(),
            cpu,
            inbox,
            wake,
            wake_armed: false,
            tick_armed: false,
            tick_ts: types::Timespec::new().nsec(TICK.as_nanos() as u32),
            ring,
            slots: Vec::new(),
            free: Vec::new(),
            ready: Vec::new(),
            #[cfg(test)]
            drives: Default::default(),
            cqes: Vec::with_capacity(super::ring::CQ_ENTRIES as usize),
        }
    }

    pub(crate) fn run(mut self) {
        let mut last_tick = Instant::now();
        let mut drain_deadline: Option<Instant> = None;
        loop {
            self.adopt_new_connections();
            if self.target.shutting_down.load(Ordering::Acquire) {
                let deadline = *drain_deadline.get_or_insert_with(|| Instant::now() + DRAIN_GRACE);
                let late = Instant::now() >= deadline;
                for s in self.slots.iter_mut().flatten() {
                    if late || s.conn.can_close_for_shutdown() {
                        s.conn.close("target shutting down".into());
                    }
                }
                if self.slots.iter().all(Option::is_none) {
                    return;
                }
                self.mark_all();
            }
            let mut ready = std::mem::take(&mut self.ready);
            for &i in &ready {
                // A connection released since it was marked is gone (and
                // the list of slots may have shrunk past it).
                let Some(s) = self.slots.get_mut(i as usize).and_then(Option::as_mut) else {
                    continue;
                };
                s.ready = false;
                self.drive(i as usize);
            }
            ready.clear();
            self.ready = ready;
            self.arm_wake_and_tick();
            self.wait();
            self.dispatch();
            let now = Instant::now();
            if now.duration_since(last_tick) >= TICK {
                last_tick = now;
                for s in self.slots.iter_mut().flatten() {
                    s.conn.tick(now);
                }
                self.mark_all();
                if let Some(said) = self.log.roll(now) {
                    super::log_limit::said_held_back(&said);
                }
                self.target.auth_log.roll(now);
                self.target.refusal_log.roll(now);
            }
            self.release_finished();
        }
    }

    fn adopt_new_connections(&mut self) {
        while let Ok((stream, port, ticket)) = self.inbox.try_recv() {
            let slot = Slot::new(stream, port, self.cpu, &self.target, &self.wake, ticket);
            let i = match self.free.pop() {
                Some(i) => {
                    self.slots[i as usize] = Some(slot);
                    i
                }
                None => {
                    self.slots.push(Some(slot));
                    (self.slots.len() - 1) as u32
                }
            };
            self.mark(i);
        }
    }

    /// Queues what connection `i` needs: a receive, its storage
    /// operations, a send; or, when closing, the shutdown that empties the
    /// ring of it.
    /// Puts connection `i` on the ready list (once).
    fn mark(&mut self, i: u32) {
        if let Some(s) = self.slots.get_mut(i as usize).and_then(Option::as_mut) {
            if !s.ready {
                s.ready = true;
                self.ready.push(i);
            }
        }
    }

    /// Puts every connection on the ready list.
    fn mark_all(&mut self) {
        #[cfg(test)]
        self.drives.1.fetch_add(1, Ordering::Relaxed);
        for i in 0..self.slots.len() {
            self.mark(i as u32);
        }
    }

    fn drive(&mut self, i: usize) {
        let Some(s) = self.slots[i].as_mut() else {
            return;
        };
        #[cfg(test)]
        self.drives.0.fetch_add(1, Ordering::Relaxed);
        let conn = i as u32;
        s.conn.resume_auth();
        s.resume_handshake(&self.target);
        let entries = [s.recv_entry(conn), s.send_entry(conn)];
        s.shut_when_done();
        for e in entries.iter().flatten() {
            // SAFETY: the receive buffer (rbuf), the output (out) and a
            // spliced send's iovecs and header (iov, msg) are heap
            // allocations of the slot, which is not freed, nor are they
            // reallocated or touched, while recv_armed / send_armed is set;
            // those flags are cleared only when the matching completion is
            // reaped. The spliced RAM stays mapped while the connection is
            // not released (RamData), and it is released only after that.
            // The socket stays open for as long as the slot does.
            unsafe { self.ring.push(e) };
        }
        while let Some((op, buf)) = self.slots[i].as_mut().and_then(|s| s.conn.take_storage()) {
            let tag = Tag::Storage {
                conn,
                slot: op.slot,
            };
            let e = storage_entry(&op, buf).user_data(tag.encode());
            // SAFETY: buf is the request slot's page-aligned buffer of at
            // least op.len bytes; the connection leaves it alone while the
            // request is Executing, and the slot (so the buffer) is freed
            // only when executing() is 0, i.e. after this completion. op.fd
            // belongs to a namespace the target keeps open.
            unsafe { self.ring.push(&e) };
        }
    }

    fn arm_wake_and_tick(&mut self) {
        if !self.wake_armed {
            self.wake_armed = true;
            let e = opcode::PollAdd::new(types::Fd(self.wake.as_raw_fd()), libc::POLLIN as u32)
                .build()
                .user_data(Tag::Wake.encode());
            // SAFETY: a poll names no buffer; the eventfd is shared with
            // the acceptor through an Arc that this reactor holds until it
            // returns, after which the ring is dropped too.
            unsafe { self.ring.push(&e) };
        }
        if !self.ring.ext_arg && !self.tick_armed {
            self.tick_armed = true;
            let e = opcode::Timeout::new(&self.tick_ts)
                .build()
                .user_data(Tag::Tick.encode());
            // SAFETY: tick_ts lives in the reactor, which outlives the ring
            // operation (the ring is dropped with the reactor).
            unsafe { self.ring.push(&e) };
        }
    }

    /// Submits what is queued and waits for one completion or a tick.
    fn wait(&mut self) {
        // With entries still in the backlog, reap without blocking and come
        // back to push them.
        let backlog = self.ring.flush_backlog();
        let to_submit = self.ring.ring.submission().len() as u32;
        let submitter = self.ring.ring.submitter();
        let r = if self.target.poll && !backlog {
            // Busy-polling: submit and reap what is there, never wait. An
            // enter carrying GETEVENTS (with nothing to wait for) runs the
            // ring's deferred task work (DEFER_TASKRUN), without which
            // socket completions are never posted.
            const IORING_ENTER_GETEVENTS: u32 = 1;
            // SAFETY: io_uring_enter on our own ring with no signal mask or
            // extended argument; the SQEs it submits were pushed under the
            // SAFETY contracts of their pushes.
            unsafe { submitter.enter::<libc::sigset_t>(to_submit, 0, IORING_ENTER_GETEVENTS, None) }
        } else if self.ring.ext_arg {
            let args = types::SubmitArgs::new().timespec(&self.tick_ts);
            submitter.submit_with_args(usize::from(!backlog), &args)
        } else {
            submitter.submit_and_wait(usize::from(!backlog))
        };
        match r {
            Ok(_) => {}
            Err(e)
                if matches!(
                    e.raw_os_error(),
                    Some(libc::ETIME | libc::EINTR | libc::EBUSY)
                ) => {}
            Err(e) => crate::log::emit(
                Stream::Err,
                Level::Error,
                "io_uring_wait_failed",
                format_args!("io_uring wait failed: {e}"),
                &[("error", e.to_string().into())],
            ),
        }
    }

    fn dispatch(&mut self) {
        let mut cqes = std::mem::take(&mut self.cqes);
        cqes.clear();
        cqes.extend(
            self.ring
                .ring
                .completion()
                .map(|c| (c.user_data(), c.result())),
        );
        for &(ud, res) in &cqes {
            match Tag::decode(ud) {
                Some(Tag::Wake) => {
                    // Work done off the reactor (DH, TLS) names no
                    // connection: every one looks.
                    self.mark_all();
                    self.wake_armed = false;
                    let mut v = [0u8; 8];
                    // SAFETY: reads 8 bytes into a live local from our
                    // non-blocking eventfd.
                    unsafe {
                        libc::read(
                            self.wake.as_raw_fd(),
                            v.as_mut_ptr() as *mut libc::c_void,
                            8,
                        )
                    };
                }
                Some(Tag::Tick) => self.tick_armed = false,
                Some(Tag::Recv { conn }) => {
                    if let Some(s) = self.slots.get_mut(conn as usize).and_then(Option::as_mut) {
                        on_recv(s, res, &self.target);
                    }
                    self.mark(conn);
                }
                Some(Tag::Send { conn }) => {
                    if let Some(s) = self.slot(conn) {
                        on_send(s, res);
                    }
                    self.mark(conn);
                }
                Some(Tag::Storage { conn, slot }) => {
                    if let Some(s) = self.slot(conn) {
                        s.conn.complete_storage(slot, res);
                    }
                    self.mark(conn);
                }
                None => {}
            }
        }
        self.cqes = cqes;
    }

    fn slot(&mut self, conn: u32) -> Option<&mut Slot> {
        self.slots.get_mut(conn as usize).and_then(Option::as_mut)
    }

    /// Frees every closed connection the ring holds nothing of.
    fn release_finished(&mut self) {
        for i in 0..self.slots.len() {
            let done = self.slots[i]
                .as_ref()
                .is_some_and(|s| s.shut && s.idle_in_ring());
            if !done {
                continue;
            }
            let mut s = self.slots[i].take().expect("checked above");
            self.free.push(i as u32);
            let why = s
                .conn
                .close_reason
                .clone()
                .unwrap_or_else(|| "host closed the connection".into());
            // An ordinary close (the host's, the shutdown's, an I/O queue
            // whose controller went with its admin queue) is a debug line;
            // any other a warning.
            let ordinary = ["host closed", "target shutting", "controller torn down"];
            let level = if s.failure_said || ordinary.iter().any(|o| why.starts_with(o)) {
                Level::Debug
            } else {
                Level::Warn
            };
            if crate::log::enabled(level) && self.log.admit() {
                log_closed(&s, level, &why);
            }
            s.conn.release();
            self.target.release(&s.ticket);
            self.target.changed();
        }
        while self.slots.last().is_some_and(Option::is_none) {
            self.slots.pop();
            let n = self.slots.len() as u32;
            self.free.retain(|&f| f < n);
        }
    }
}

fn transient(res: i32) -> bool {
    matches!(-res, libc::EAGAIN | libc::EINTR | libc::ENOBUFS)
}

fn on_recv(s: &mut Slot, res: i32, target: &Target) {
    s.recv_armed = false;
    let handshaking = s.tls.as_ref().is_some_and(|t| !t.established());
    if res > 0 && handshaking {
        // The handshake's CPU (its key exchange) is not the reactor's.
        s.step_handshake(res as usize, target);
    } else if res > 0 {
        let bytes = &s.rbuf[..res as usize];
        match s.tls.as_mut() {
            None => s.conn.on_bytes(bytes),
            Some(tls) => {
                let conn = &mut s.conn;
                match tls.receive(bytes, |plain| conn.on_bytes(plain)) {
                    Ok(Received::More) => {}
                    Ok(Received::Established(peer)) => conn.set_tls_peer(peer),
                    Ok(Received::Closed) => s.dead = true,
                    Err(why) => s.tls_failed(why, target),
                }
            }
        }
    } else if res == 0 || !transient(res) {
        s.dead = true;
    }
    if !s.connected && s.conn.qid().is_some() {
        // Connected: no longer a socket that may be closed for room, and
        // it gets its full receive buffer (no receive is armed here: its
        // completion is the one being handled).
        s.connected = true;
        target.reached_connect(&s.ticket);
        debug_assert!(!s.recv_armed);
        s.rbuf = vec![0u8; RECV_BYTES].into_boxed_slice();
    }
}

fn on_send(s: &mut Slot, res: i32) {
    s.send_armed = false;
    if res > 0 {
        s.out_pos += res as usize;
        // Replies drained below the budget: the commands held back go on.
        if s.conn.rx_waiting() && s.backlog() < s.conn.reply_budget() {
            s.conn.on_bytes(&[]);
        }
    } else if res == 0 || !transient(res) {
        s.dead = true;
    }
}

/// The SQE for a storage operation on `buf`.
fn storage_entry(op: &StorageOp, buf: *mut u8) -> squeue::Entry {
    let fd = types::Fd(op.fd);
    match op.kind {
        StorageKind::Read => opcode::Read::new(fd, buf, op.len).offset(op.offset).build(),
        StorageKind::Write => opcode::Write::new(fd, buf, op.len)
            .offset(op.offset)
            .build(),
        StorageKind::Flush => opcode::Fsync::new(fd)
            .flags(types::FsyncFlags::DATASYNC)
            .build(),
        StorageKind::Zero { mode } => opcode::Fallocate::new(fd, u64::from(op.len))
            .offset(op.offset)
            .mode(mode)
            .build(),
    }
}

/// The line for a connection that closed.
fn log_closed(s: &Slot, level: Level, why: &str) {
    let qid = s.conn.qid();
    let q = qid.map(|q| format!(" qid {q}")).unwrap_or_default();
    let mut fields = vec![("peer", s.peer.as_str().into()), ("reason", why.into())];
    if let Some(qid) = qid {
        fields.push(("qid", qid.into()));
    }
    crate::log::emit(
        Stream::Err,
        level,
        "connection_closed",
        format_args!("closing {}{q}: {why}", s.peer),
        &fields,
    );
}

/// Hands every socket `listener` accepts to the reactor whose inbox is
/// `tx` (port 1, a slot without an address) and pokes it, as the
/// acceptor does, on a thread of its own until the reactor is gone: for
/// tests that run a [`Reactor`] without the target's acceptor.
#[cfg(test)]
pub(super) fn forward_accepts(
    listener: std::net::TcpListener,
    tx: std::sync::mpsc::Sender<(TcpStream, u16, Arc<Ticket>)>,
    target: Arc<Target>,
    wake: Arc<OwnedFd>,
) {
    std::thread::spawn(move || {
        for s in listener.incoming() {
            let Ok(s) = s else { return };
            if tx.send((s, 1, target.admit_unaddressed())).is_err() {
                return;
            }
            super::wake::poke(&*wake);
        }
    });
}

#[cfg(test)]
mod tests {
    use super::super::config::TargetConfig;
    use super::super::wake::{eventfd, poke};
    use super::*;
    use crate::host::{Initiator, InitiatorError, InitiatorOptions};
    use std::net::TcpListener;

    /// A target with one subsystem `nqn` that any host may use and a
    /// 1 MiB RAM namespace.
    fn ram_target(nqn: &str) -> Arc<Target> {
        let cfg = TargetConfig::from_toml(
            &format!(
                "[[subsystem]]\nnqn = \"{nqn}\"\nallow_any_host = true\n\
                 [[subsystem.namespace]]\nbacking = \"mem:1M\"\n"
            ),
            "test",
        )
        .unwrap();
        Target::new(&cfg).unwrap()
    }

    /// A failure bound, not a wait: each step below waits for its event.
    const LONG: Duration = Duration::from_secs(60);

    /// The fallback for kernels without IORING_FEAT_EXT_ARG (before 5.11):
    /// the tick is an IORING_OP_TIMEOUT, so a reactor whose connection
    /// sends nothing still ticks: it expires the keep-alive timeout and
    /// closes the connection, and later sees shutdown, with no wake-up poke.
    #[test]
    fn tick_by_timeout_op_without_ext_arg() {
        const NQN: &str = "nqn.2026-01.io.numio:tick";
        let target = ram_target(NQN);
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let wake = Arc::new(eventfd().unwrap());
        let (t, w) = (target.clone(), wake.clone());
        let (done_tx, done_rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut ring = Ring::new(true).unwrap();
            ring.ext_arg = false;
            Reactor::new(t, 0, rx, w, ring).run();
            done_tx.send(()).unwrap();
        });
        let client = std::thread::spawn(move || {
            let o = InitiatorOptions {
                kato_ms: 300,
                timeout: LONG,
                ..Default::default()
            };
            let mut a = Initiator::connect_admin(addr, NQN, &o)?;
            a.enable()?;
            // Silence: only a tick can notice the keep-alive timeout, and
            // the target then closes the connection (the event).
            a.recv_pdu_bytes().map(|_| ())
        });
        let (s, _) = listener.accept().unwrap();
        tx.send((s, 1, target.admit_unaddressed())).unwrap();
        poke(&*wake);
        match client.join().unwrap() {
            Err(InitiatorError::Io(e)) if e.kind() == std::io::ErrorKind::UnexpectedEof => {}
            other => panic!("expected the target to close the connection, got {other:?}"),
        }
        assert!(
            target.wait_until(LONG, |t| t.connections.load(Ordering::Acquire) == 0),
            "connection released"
        );
        target.shutting_down.store(true, Ordering::Release);
        done_rx
            .recv_timeout(LONG)
            .expect("the reactor saw shutdown through its timeout tick");
    }

    /// Idle connections are not driven for another host's commands: 32
    /// admin queues sit silent while one host sends 2,000 Keep Alives;
    /// the reactor drives the busy host per command and the idle ones
    /// only on its sweeps (ticks, wake-ups). Issue 38: every loop drove
    /// every connection, 33 per command here (over 66,000 drives).
    #[test]
    fn idle_connections_are_driven_only_on_sweeps() {
        const NQN: &str = "nqn.2026-01.io.numio:ready";
        const IDLE: usize = 32;
        const COMMANDS: u64 = 2000;
        let target = ram_target(NQN);
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let wake = Arc::new(eventfd().unwrap());
        let (t, w) = (target.clone(), wake.clone());
        let (counts_tx, counts_rx) = std::sync::mpsc::channel();
        let reactor = std::thread::spawn(move || {
            let r = Reactor::new(t, 0, rx, w, Ring::new(true).unwrap());
            counts_tx.send(r.drives.clone()).unwrap();
            r.run();
        });
        let counts = counts_rx.recv_timeout(LONG).unwrap();
        forward_accepts(listener, tx, target.clone(), wake.clone());
        let o = InitiatorOptions {
            kato_ms: 0,
            timeout: LONG,
            ..Default::default()
        };
        let _idle: Vec<Initiator> = (0..IDLE)
            .map(|_| Initiator::connect_admin(addr, NQN, &o).unwrap())
            .collect();
        let mut busy = Initiator::connect_admin(addr, NQN, &o).unwrap();
        let before = (
            counts.0.load(Ordering::Relaxed),
            counts.1.load(Ordering::Relaxed),
        );
        for _ in 0..COMMANDS {
            busy.keep_alive().unwrap();
        }
        let drives = counts.0.load(Ordering::Relaxed) - before.0;
        let sweeps = counts.1.load(Ordering::Relaxed) - before.1;
        // Sweeps are ticks (100 ms) and wake-ups, not per command.
        assert!(
            sweeps < COMMANDS / 10,
            "{sweeps} sweeps for {COMMANDS} commands"
        );
        // Each command: a receive and a send completion, at most a drive
        // each; each sweep drives every connection once more.
        let bound = COMMANDS * 3 + sweeps * (IDLE as u64 + 1);
        assert!(
            drives <= bound,
            "{drives} drives for {COMMANDS} commands and {sweeps} sweeps (at most {bound})"
        );
        target.shutting_down.store(true, Ordering::Release);
        poke(&*wake);
        reactor.join().unwrap();
    }
}
