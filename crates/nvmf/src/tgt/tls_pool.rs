//! TLS handshakes off the reactors. A handshake's key exchange costs a
//! millisecond or so of CPU, and anyone may send ClientHellos: run on the
//! reactor, a stream of them delays every queue that reactor serves.
//!
//! So the reactor keeps the socket and its ring (it still receives the
//! handshake's records and sends its replies), but each step of an
//! unfinished handshake (feeding what arrived to OpenSSL and letting it
//! answer) runs here: the reactor moves the session and the bytes into a
//! job, reads no more from that socket while the job is out, and takes the
//! session back when a worker pokes its eventfd ([`HandshakeTicket`]). Once
//! established, records are decrypted on the reactor as before (AES-GCM
//! is cheap; the key exchange is not).
//!
//! Like `dh_pool`, the queue is bounded and charged to the source address:
//! one source holds at most [`TLS_JOBS_PER_SOURCE`] steps queued or
//! running, all sources [`TLS_JOBS_MAX`]; past either the handshake is
//! refused at once ([`TlsRefusal`], counted as `tls_busy`). A step still
//! queued [`HANDSHAKE_DEADLINE`] after its socket was accepted is dropped
//! unrun: the queue never spends CPU on a host that has given up.

use std::collections::HashMap;
use std::net::IpAddr;
use std::os::fd::OwnedFd;
use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::tls::ossl::{Received, ServerSession, SessionError};

/// Worker threads running handshake steps (at most; fewer on a machine
/// with few CPUs, at least one).
pub const TLS_WORKERS_MAX: usize = 4;
/// Handshake steps one source address may have queued or running: a Linux
/// host connects its admin queue and one I/O queue per CPU at once.
pub const TLS_JOBS_PER_SOURCE: u32 = 64;
/// Handshake steps queued or running over all sources.
pub const TLS_JOBS_MAX: usize = 256;
/// A step still queued this long after its socket was accepted is dropped
/// unrun (the connection closes; the ICReq deadline would close it soon
/// after anyway).
pub const HANDSHAKE_DEADLINE: Duration = Duration::from_secs(5);

/// One handshake step's outcome, for the reactor.
#[derive(Debug)]
pub struct HandshakeDone {
    /// The session, back to its connection.
    pub session: Box<ServerSession>,
    /// What [`ServerSession::receive`] said (or why the step was dropped).
    pub result: Result<Received, StepError>,
    /// Plain text decrypted after the handshake finished (records that came
    /// with the host's Finished).
    pub plain: Vec<u8>,
}

/// Why a handshake step failed.
#[derive(Debug, thiserror::Error)]
pub enum StepError {
    /// The step waited in the queue past [`HANDSHAKE_DEADLINE`], unrun.
    #[error(
        "TLS handshake not done within {deadline_s} s of connecting (HANDSHAKE_DEADLINE): the \
         handshake queue was too long"
    )]
    Late {
        /// The deadline, in seconds.
        deadline_s: u64,
    },
    /// The session failed.
    #[error(transparent)]
    Session(#[from] SessionError),
}

/// Why a handshake step was not taken: the budget it would have overrun.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TlsRefusal {
    /// The source address holds its budget of steps.
    Source(u32),
    /// The queue over all sources is full.
    Full(usize),
}

impl std::fmt::Display for TlsRefusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TlsRefusal::Source(n) => write!(
                f,
                "TLS handshake limit per source address reached ({n} handshakes queued from \
                 this address; TLS_JOBS_PER_SOURCE)"
            ),
            TlsRefusal::Full(n) => write!(
                f,
                "TLS handshake queue full ({n} handshakes queued over all sources; TLS_JOBS_MAX)"
            ),
        }
    }
}

/// A submitted step's outcome, once a worker has it.
#[derive(Debug, Clone)]
pub struct HandshakeTicket(Arc<Mutex<Option<HandshakeDone>>>);

impl HandshakeTicket {
    /// The outcome, once (`None` while the step waits or runs).
    pub fn take(&self) -> Option<HandshakeDone> {
        self.0.lock().expect("TLS ticket lock").take()
    }
}

/// Who a step is charged to, and when its socket was accepted.
#[derive(Debug, Clone)]
pub struct HandshakeCharge {
    /// The socket's source address (`None`: driven without a socket).
    pub source: Option<IpAddr>,
    /// When the socket was accepted ([`HANDSHAKE_DEADLINE`] runs from it).
    pub accepted: Instant,
    /// The reactor to wake when the step is done.
    pub waker: Option<Arc<OwnedFd>>,
}

struct Job {
    session: Box<ServerSession>,
    cipher: Vec<u8>,
    charge: HandshakeCharge,
    out: HandshakeTicket,
}

#[derive(Debug, Default)]
struct Budgets {
    by_source: HashMap<IpAddr, u32>,
    queued: usize,
}

/// The pool: a bounded queue and its workers (started on first use).
#[derive(Default)]
pub struct TlsPool {
    tx: Mutex<Option<SyncSender<Job>>>,
    budgets: Arc<Mutex<Budgets>>,
}

impl std::fmt::Debug for TlsPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "TlsPool({} steps)", self.queued())
    }
}

impl TlsPool {
    /// Queues feeding `cipher` to `session` charged to `charge`, or gives
    /// the session back with the budget it would overrun.
    pub fn submit(
        &self,
        session: Box<ServerSession>,
        cipher: Vec<u8>,
        charge: HandshakeCharge,
    ) -> Result<HandshakeTicket, (Box<ServerSession>, TlsRefusal)> {
        if let Err(r) = self.charge(&charge) {
            return Err((session, r));
        }
        let out = HandshakeTicket(Arc::new(Mutex::new(None)));
        let job = Job {
            session,
            cipher,
            charge,
            out: out.clone(),
        };
        let mut tx = self.tx.lock().expect("TLS queue lock");
        let sender = tx.get_or_insert_with(|| start_workers(self.budgets.clone()));
        match sender.try_send(job) {
            Ok(()) => Ok(out),
            // The budgets keep the channel from filling (it holds
            // TLS_JOBS_MAX); a worker that died leaves it disconnected.
            Err(TrySendError::Full(job) | TrySendError::Disconnected(job)) => {
                uncharge(&self.budgets, &job.charge);
                Err((job.session, TlsRefusal::Full(TLS_JOBS_MAX)))
            }
        }
    }

    fn charge(&self, c: &HandshakeCharge) -> Result<(), TlsRefusal> {
        let mut b = self.budgets.lock().expect("TLS budgets lock");
        if b.queued >= TLS_JOBS_MAX {
            return Err(TlsRefusal::Full(TLS_JOBS_MAX));
        }
        if let Some(ip) = c.source {
            let n = b.by_source.entry(ip).or_insert(0);
            if *n >= TLS_JOBS_PER_SOURCE {
                return Err(TlsRefusal::Source(TLS_JOBS_PER_SOURCE));
            }
            *n += 1;
        }
        b.queued += 1;
        Ok(())
    }

    /// Steps queued or running.
    pub fn queued(&self) -> usize {
        self.budgets.lock().expect("TLS budgets lock").queued
    }
}

fn uncharge(budgets: &Mutex<Budgets>, c: &HandshakeCharge) {
    let mut b = budgets.lock().expect("TLS budgets lock");
    b.queued = b.queued.saturating_sub(1);
    if let Some(ip) = c.source {
        if let Some(n) = b.by_source.get_mut(&ip) {
            *n -= 1;
            if *n == 0 {
                b.by_source.remove(&ip);
            }
        }
    }
}

fn start_workers(budgets: Arc<Mutex<Budgets>>) -> SyncSender<Job> {
    let (tx, rx) = sync_channel::<Job>(TLS_JOBS_MAX);
    let rx = Arc::new(Mutex::new(rx));
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let workers = (cpus / 4).clamp(1, TLS_WORKERS_MAX);
    for i in 0..workers {
        let (rx, budgets) = (rx.clone(), budgets.clone());
        std::thread::Builder::new()
            .name(format!("numio-tls-{i}"))
            .spawn(move || work(&rx, &budgets))
            .expect("spawn a TLS handshake worker");
    }
    tx
}

fn work(rx: &Mutex<Receiver<Job>>, budgets: &Mutex<Budgets>) {
    // Background work: a reactor waking on this CPU preempts it at once.
    sysapi::affinity::background_current_thread();
    loop {
        let job = match rx.lock().expect("TLS queue lock").recv() {
            Ok(j) => j,
            Err(_) => return,
        };
        let done = step(
            job.session,
            &job.cipher,
            job.charge.accepted,
            Instant::now(),
        );
        *job.out.0.lock().expect("TLS ticket lock") = Some(done);
        uncharge(budgets, &job.charge);
        if let Some(w) = &job.charge.waker {
            super::wake::poke(&**w);
        }
    }
}

/// Feeds `cipher` to `session`, unless the step is past its deadline.
fn step(
    mut session: Box<ServerSession>,
    cipher: &[u8],
    accepted: Instant,
    now: Instant,
) -> HandshakeDone {
    let mut plain = Vec::new();
    let result = if now.saturating_duration_since(accepted) > HANDSHAKE_DEADLINE {
        Err(StepError::Late {
            deadline_s: HANDSHAKE_DEADLINE.as_secs(),
        })
    } else {
        session
            .receive(cipher, |p| plain.extend_from_slice(p))
            .map_err(StepError::from)
    };
    HandshakeDone {
        session,
        result,
        plain,
    }
}

#[cfg(test)]
mod tests;
