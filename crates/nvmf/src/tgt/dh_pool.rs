//! DH-HMAC-CHAP's exponentiations off the reactors: a few worker threads
//! (started on first use, at a lower CPU priority than the reactors) take
//! key generation and shared-secret jobs from a bounded queue, and each job
//! is charged to its host NQN and its source address while it waits or
//! runs. A host NQN is not a secret, so anyone who knows one can ask for
//! 8192-bit exponentiations (about 20 ms each); here they cost the workers'
//! time, never a reactor's, and one source (or one NQN) holds at most its
//! budget of jobs at a time: past it, the transaction fails at once
//! ([`DhRefusal`]) and the queue closes.
//!
//! A job's result is collected by the connection ([`DhTicket::take`]); the
//! worker pokes the reactor's eventfd so the connection resumes on its next
//! loop, not a tick later.
//!
//! A connection driven without a reactor (the fuzz targets, tests) may use
//! an inline pool ([`DhPool::inline`]): the same budgets, but each job runs
//! on the thread that submits it, so nothing waits for a worker.

use std::collections::HashMap;
use std::net::IpAddr;
use std::os::fd::OwnedFd;
use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};

use zeroize::Zeroizing;

use crate::auth::{DhError, DhGroup, KeyPair};

/// Worker threads doing DH work (at most; fewer on a machine with few
/// CPUs, at least one).
pub const DH_WORKERS_MAX: usize = 4;
/// DH jobs one source address may have queued or running.
pub const DH_JOBS_PER_SOURCE: u32 = 32;
/// DH jobs one host NQN may have queued or running: a Linux host
/// authenticates its admin queue and up to 16 I/O queues per controller
/// at once.
pub const DH_JOBS_PER_HOST: u32 = 64;
/// DH jobs queued or running over all hosts.
pub const DH_JOBS_MAX: usize = 256;

/// What a job computes.
#[derive(Debug)]
pub enum DhWork {
    /// A key pair in a group (not the null one).
    Generate(DhGroup),
    /// The shared secret of `pair` with the peer's public value.
    Shared {
        /// Our key pair.
        pair: Arc<KeyPair>,
        /// The peer's public value.
        peer: Vec<u8>,
    },
}

/// What a job computed.
#[derive(Debug)]
pub enum DhDone {
    /// The key pair.
    Pair(Option<KeyPair>),
    /// The shared secret, or why the peer's value is not one.
    Shared(Result<Zeroizing<Vec<u8>>, DhError>),
}

/// Why a DH job was not taken: the budget it would have overrun.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DhRefusal {
    /// The source address holds its budget of jobs.
    Source(u32),
    /// The host NQN holds its budget of jobs.
    Host(u32),
    /// The queue over all hosts is full.
    Full(usize),
}

impl std::fmt::Display for DhRefusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DhRefusal::Source(n) => write!(
                f,
                "DH work limit per source address reached ({n} DH-HMAC-CHAP exponentiations \
                 queued from this address; DH_JOBS_PER_SOURCE)"
            ),
            DhRefusal::Host(n) => write!(
                f,
                "DH work limit per host NQN reached ({n} DH-HMAC-CHAP exponentiations queued \
                 for this host NQN; DH_JOBS_PER_HOST)"
            ),
            DhRefusal::Full(n) => write!(
                f,
                "DH work queue full ({n} DH-HMAC-CHAP exponentiations queued over all hosts; \
                 DH_JOBS_MAX)"
            ),
        }
    }
}

/// A submitted job's result, once a worker has it.
#[derive(Debug, Clone)]
pub struct DhTicket(Arc<Mutex<Option<DhDone>>>);

impl DhTicket {
    /// The result, once (`None` while the job waits or runs).
    pub fn take(&self) -> Option<DhDone> {
        self.0.lock().expect("DH ticket lock").take()
    }

    /// Whether the result is in.
    pub fn ready(&self) -> bool {
        self.0.lock().expect("DH ticket lock").is_some()
    }
}

/// Who a job is charged to.
#[derive(Debug, Clone)]
pub struct DhCharge {
    /// The host NQN the queue connected as.
    pub hostnqn: String,
    /// The socket's source address (`None`: driven without a socket).
    pub source: Option<IpAddr>,
    /// The reactor to wake when the job is done.
    pub waker: Option<Arc<OwnedFd>>,
}

struct Job {
    work: DhWork,
    charge: DhCharge,
    out: DhTicket,
}

#[derive(Debug, Default)]
struct Budgets {
    by_host: HashMap<String, u32>,
    by_source: HashMap<IpAddr, u32>,
    queued: usize,
}

/// The pool: a bounded queue and its workers.
#[derive(Default)]
pub struct DhPool {
    tx: Mutex<Option<SyncSender<Job>>>,
    budgets: Arc<Mutex<Budgets>>,
    /// Jobs run in `submit`, on the caller's thread ([`DhPool::inline`]).
    inline: bool,
}

impl std::fmt::Debug for DhPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let b = self.budgets.lock().expect("DH budgets lock");
        write!(f, "DhPool({} jobs)", b.queued)
    }
}

impl DhPool {
    /// A pool that runs each job in [`DhPool::submit`], on the caller's
    /// thread, under the same budgets: for connections driven without a
    /// reactor, never for a target's reactors (the work would be theirs).
    pub fn inline() -> Self {
        Self {
            inline: true,
            ..Self::default()
        }
    }

    /// Queues `work` charged to `charge`, or refuses it over a budget.
    pub fn submit(&self, work: DhWork, charge: DhCharge) -> Result<DhTicket, DhRefusal> {
        {
            let mut b = self.budgets.lock().expect("DH budgets lock");
            if b.queued >= DH_JOBS_MAX {
                return Err(DhRefusal::Full(DH_JOBS_MAX));
            }
            if let Some(ip) = charge.source {
                if b.by_source.get(&ip).copied().unwrap_or(0) >= DH_JOBS_PER_SOURCE {
                    return Err(DhRefusal::Source(DH_JOBS_PER_SOURCE));
                }
            }
            if b.by_host.get(&charge.hostnqn).copied().unwrap_or(0) >= DH_JOBS_PER_HOST {
                return Err(DhRefusal::Host(DH_JOBS_PER_HOST));
            }
            b.queued += 1;
            *b.by_host.entry(charge.hostnqn.clone()).or_insert(0) += 1;
            if let Some(ip) = charge.source {
                *b.by_source.entry(ip).or_insert(0) += 1;
            }
        }
        let out = DhTicket(Arc::new(Mutex::new(None)));
        if self.inline {
            *out.0.lock().expect("DH ticket lock") = Some(compute(work));
            uncharge(&self.budgets, &charge);
            return Ok(out);
        }
        let job = Job {
            work,
            charge,
            out: out.clone(),
        };
        let mut tx = self.tx.lock().expect("DH queue lock");
        let sender = tx.get_or_insert_with(|| start_workers(self.budgets.clone()));
        match sender.try_send(job) {
            Ok(()) => Ok(out),
            // The budgets keep the channel from filling (it holds
            // DH_JOBS_MAX); a worker that died leaves it disconnected.
            Err(TrySendError::Full(job) | TrySendError::Disconnected(job)) => {
                uncharge(&self.budgets, &job.charge);
                Err(DhRefusal::Full(DH_JOBS_MAX))
            }
        }
    }

    /// Jobs queued or running.
    pub fn queued(&self) -> usize {
        self.budgets.lock().expect("DH budgets lock").queued
    }
}

fn uncharge(budgets: &Mutex<Budgets>, c: &DhCharge) {
    let mut b = budgets.lock().expect("DH budgets lock");
    b.queued = b.queued.saturating_sub(1);
    if let Some(n) = b.by_host.get_mut(&c.hostnqn) {
        *n -= 1;
        if *n == 0 {
            b.by_host.remove(&c.hostnqn);
        }
    }
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
    let (tx, rx) = sync_channel::<Job>(DH_JOBS_MAX);
    let rx = Arc::new(Mutex::new(rx));
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let workers = (cpus / 4).clamp(1, DH_WORKERS_MAX);
    for i in 0..workers {
        let (rx, budgets) = (rx.clone(), budgets.clone());
        std::thread::Builder::new()
            .name(format!("numio-dh-{i}"))
            .spawn(move || work(&rx, &budgets))
            .expect("spawn a DH worker");
    }
    tx
}

fn compute(work: DhWork) -> DhDone {
    match work {
        DhWork::Generate(g) => DhDone::Pair(KeyPair::generate(g)),
        DhWork::Shared { pair, peer } => DhDone::Shared(pair.shared(&peer)),
    }
}

fn work(rx: &Mutex<Receiver<Job>>, budgets: &Mutex<Budgets>) {
    // Background work: a reactor waking on this CPU preempts it at once.
    sysapi::affinity::background_current_thread();
    loop {
        let job = match rx.lock().expect("DH queue lock").recv() {
            Ok(j) => j,
            Err(_) => return,
        };
        let done = compute(job.work);
        *job.out.0.lock().expect("DH ticket lock") = Some(done);
        uncharge(budgets, &job.charge);
        if let Some(w) = &job.charge.waker {
            super::wake::poke(&**w);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn charge(host: &str, ip: &str) -> DhCharge {
        DhCharge {
            hostnqn: host.into(),
            source: Some(ip.parse().unwrap()),
            waker: None,
        }
    }

    #[test]
    fn a_source_and_a_host_get_their_budget_and_no_more() {
        let pool = DhPool::default();
        let mut held = Vec::new();
        for _ in 0..DH_JOBS_PER_SOURCE {
            held.push(
                pool.submit(DhWork::Generate(DhGroup::Null), charge("h1", "10.0.0.1"))
                    .unwrap(),
            );
        }
        // The null group is instant: let every job settle, then charge the
        // budgets as if jobs were queued (a real one would drain).
        while pool.queued() > 0 {
            std::thread::yield_now();
        }
        let mut b = pool.budgets.lock().unwrap();
        b.by_source
            .insert("10.0.0.1".parse().unwrap(), DH_JOBS_PER_SOURCE);
        b.by_host.insert("h2".into(), DH_JOBS_PER_HOST);
        drop(b);
        assert_eq!(
            pool.submit(DhWork::Generate(DhGroup::Null), charge("h1", "10.0.0.1"))
                .unwrap_err(),
            DhRefusal::Source(DH_JOBS_PER_SOURCE)
        );
        assert_eq!(
            pool.submit(DhWork::Generate(DhGroup::Null), charge("h2", "10.0.0.2"))
                .unwrap_err(),
            DhRefusal::Host(DH_JOBS_PER_HOST)
        );
        let t = pool
            .submit(DhWork::Generate(DhGroup::Null), charge("h3", "10.0.0.3"))
            .unwrap();
        while !t.ready() {
            std::thread::yield_now();
        }
        assert!(matches!(t.take(), Some(DhDone::Pair(None))));
        assert!(held
            .iter()
            .all(|t| matches!(t.take(), Some(DhDone::Pair(None)))));
        assert!(DhRefusal::Source(32)
            .to_string()
            .contains("limit per source"));
    }

    #[test]
    fn an_inline_pool_has_the_result_at_once_and_keeps_the_budgets() {
        let pool = DhPool::inline();
        let t = pool
            .submit(
                DhWork::Generate(DhGroup::Ffdhe2048),
                charge("h1", "10.0.0.1"),
            )
            .unwrap();
        assert!(t.ready(), "no worker to wait for");
        assert!(matches!(t.take(), Some(DhDone::Pair(Some(_)))));
        assert_eq!(pool.queued(), 0, "uncharged");
        assert!(pool.tx.lock().unwrap().is_none(), "no worker started");
        pool.budgets
            .lock()
            .unwrap()
            .by_source
            .insert("10.0.0.1".parse().unwrap(), DH_JOBS_PER_SOURCE);
        assert_eq!(
            pool.submit(DhWork::Generate(DhGroup::Null), charge("h1", "10.0.0.1"))
                .unwrap_err(),
            DhRefusal::Source(DH_JOBS_PER_SOURCE)
        );
    }
}
