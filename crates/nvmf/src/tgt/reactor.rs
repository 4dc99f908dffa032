//! Reactors: one thread per CPU, each owning its connections outright.
//!
//! An acceptor thread takes new sockets (a `poll(2)` loop over the
//! listeners) and hands each to one reactor, round robin, through that
//! reactor's channel and wake-up eventfd. A reactor (`event_loop.rs`)
//! runs everything on one io_uring: a receive per connection re-armed after
//! each completion, a send per connection whose output buffer stays alive
//! until its completion, the eventfd poll for new connections, and the
//! storage I/O of file and block device namespaces (`O_DIRECT`). RAM
//! namespaces are copied synchronously on the reactor. Ring features are
//! probed at start-up (fallbacks are printed); a kernel without io_uring
//! fails the start with the cause. No state is shared between reactors on
//! the I/O path.

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{channel, Sender};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::admission::{Crowded, Ticket};
use super::config::TargetConfig;
use super::counters::Refused;
use super::error::{ReactorError, TargetError};
use super::event_loop::Reactor;
use super::log_limit::LogLimit;
use super::ring::Ring;
use super::subsystem::Target;
use super::wake::{eventfd, poke};
use crate::log::{Level, Stream};

pub use super::event_loop::{DRAIN_GRACE, TICK};

/// How often the acceptor looks for resized namespaces.
const SIZE_CHECK: Duration = Duration::from_secs(1);
/// Reactors started when the configuration names no CPUs.
pub const DEFAULT_REACTORS: usize = 4;

static SIGNALLED: AtomicBool = AtomicBool::new(false);
static RELOAD: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(sig: libc::c_int) {
    if sig == libc::SIGHUP {
        RELOAD.store(true, Ordering::SeqCst);
    } else {
        SIGNALLED.store(true, Ordering::SeqCst);
    }
}

/// True once SIGINT or SIGTERM asked for a shutdown: work on the thread
/// that waits for signals (a reload) looks here so it never holds the stop.
pub fn stop_requested() -> bool {
    SIGNALLED.load(Ordering::SeqCst)
}

/// Makes SIGINT and SIGTERM request a clean shutdown of running servers,
/// and SIGHUP a reload ([`Server::wait_with`]).
pub fn install_signal_handlers() -> Result<(), TargetError> {
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        // SAFETY: the handler only stores to an atomic (async-signal-safe);
        // sigaction copies the struct, which lives across the call.
        let rc = unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_signal as *const () as usize;
            libc::sigemptyset(&mut sa.sa_mask);
            libc::sigaction(sig, &sa, std::ptr::null_mut())
        };
        if rc != 0 {
            return Err(TargetError::Os {
                what: "installing SIGINT/SIGTERM/SIGHUP handlers",
                source: std::io::Error::last_os_error(),
            });
        }
    }
    // SAFETY: ignoring SIGPIPE only changes the disposition; writes to a
    // closed socket then return EPIPE, which the reactor handles.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_IGN) };
    Ok(())
}

/// A running target.
#[derive(Debug)]
pub struct Server {
    /// Shared target state.
    pub target: Arc<Target>,
    /// Bound NVMe/TCP listeners (ports resolved when 0 was given).
    pub listen_addrs: Vec<SocketAddr>,
    /// Bound NVMe/RDMA listeners (ports resolved when 0 was given).
    pub rdma_addrs: Vec<SocketAddr>,
    /// Bound discovery listeners.
    pub discovery_addrs: Vec<SocketAddr>,
    /// CPUs the reactors run on: [`TargetConfig::cpus`], else
    /// [`default_cpus`] (the caller picks NUMA-local ones: `numio serve`
    /// asks topology for the backing devices' node).
    pub cpus: Vec<usize>,
    /// The CPUs of the reactors serving each NVMe listener's port, in
    /// `listen_addrs` order ([`TargetConfig::port_cpus`]; all of `cpus`
    /// where it names none).
    pub port_cpus: Vec<Vec<usize>>,
    /// io_uring set-up of the reactors' rings, in words.
    pub ring_setup: String,
    /// io_uring fallbacks the reactors took, in words.
    pub ring_notes: Vec<String>,
    threads: Vec<JoinHandle<()>>,
}

/// Connections the kernel completes and queues for the acceptor (it caps
/// this at `net.core.somaxconn`): a burst, a flood or many hosts at once,
/// that arrives while the acceptor waits for a CPU is queued, not dropped
/// (std's 128 overflowed under a 1,000-connection flood on 2 busy cores,
/// and each host whose SYN was dropped waited 1 s for its retransmit).
const LISTEN_BACKLOG: i32 = 4096;

fn bind(addr: SocketAddr) -> Result<TcpListener, TargetError> {
    let l = TcpListener::bind(addr).map_err(|source| TargetError::Listen { addr, source })?;
    // listen(2) again on a listening socket sets its backlog.
    rustix::net::listen(&l, LISTEN_BACKLOG).map_err(|e| TargetError::Listen {
        addr,
        source: e.into(),
    })?;
    l.set_nonblocking(true)
        .map_err(|source| TargetError::Listen { addr, source })?;
    Ok(l)
}

/// CPUs this process may run on, at most `max` (CPU 0 where the kernel
/// does not say): the reactors' CPUs when the configuration names none.
pub fn default_cpus(max: usize) -> Vec<usize> {
    let cpus = sysapi::affinity::allowed_cpus().unwrap_or_else(|_| vec![0]);
    cpus.into_iter()
        .take(max.max(1))
        .map(|c| c as usize)
        .collect()
}

fn pin_to(cpu: usize) {
    if let Err(e) = sysapi::affinity::pin_current_thread(&[cpu as u32]) {
        crate::log::emit(
            Stream::Err,
            Level::Warn,
            "reactor_not_pinned",
            format_args!("cannot pin reactor to CPU {cpu}: {e}"),
            &[("cpu", cpu.into()), ("error", e.to_string().into())],
        );
    }
}

impl Server {
    /// Binds every listener, opens namespaces and starts the reactors.
    pub fn start(cfg: &TargetConfig) -> Result<Self, TargetError> {
        cfg.validate()?;
        let mut listeners = Vec::new();
        let mut listen_addrs = Vec::new();
        for a in &cfg.listen {
            let l = bind(*a)?;
            listen_addrs.push(
                l.local_addr()
                    .map_err(|source| TargetError::Listen { addr: *a, source })?,
            );
            listeners.push(l);
        }
        let mut discovery_addrs = Vec::new();
        if cfg.discovery_port != 0 {
            for (i, a) in cfg.listen.iter().enumerate() {
                let addr = SocketAddr::new(a.ip(), cfg.discovery_port);
                // One discovery listener per address, however many ports
                // share it.
                if listen_addrs.contains(&addr) || cfg.listen[..i].iter().any(|b| b.ip() == a.ip())
                {
                    continue;
                }
                let l = bind(addr)?;
                discovery_addrs.push(
                    l.local_addr()
                        .map_err(|source| TargetError::Listen { addr, source })?,
                );
                listeners.push(l);
            }
        }
        // NVMe/RDMA listeners are bound with the TCP ones, before the
        // target exists: its ports name the bound addresses (port 0
        // resolved), and a missing rdma-core or RDMA device fails the
        // start with its fix.
        let rdma = match cfg.rdma_listen.is_empty() {
            true => None,
            false => Some(super::rdma::bind(&cfg.rdma_listen)?),
        };
        let mut resolved = cfg.clone();
        resolved.listen = listen_addrs.clone();
        let rdma_addrs = rdma.as_ref().map(|l| l.addrs.clone()).unwrap_or_default();
        resolved.rdma_listen = rdma_addrs.clone();
        let target = Target::new(&resolved)?;
        let mut cpus = cfg.reactor_cpus();
        if cpus.is_empty() {
            cpus = default_cpus(DEFAULT_REACTORS);
        }
        let by_port = port_reactors(&cpus, &cfg.port_cpus, listen_addrs.len());
        let port_cpus = by_port
            .iter()
            .map(|r| r.iter().map(|&i| cpus[i]).collect())
            .collect();
        // Discovery listeners (after the ports) go to every reactor.
        let mut routes: Vec<Route> = by_port.into_iter().map(Route::new).collect();
        routes.resize_with(listeners.len(), || Route::new((0..cpus.len()).collect()));
        let (mut threads, inboxes, ring_setup, ring_notes) = spawn_reactors(&target, &cpus)?;
        let t = target.clone();
        let acceptor = std::thread::Builder::new()
            .name("numio-acceptor".into())
            .spawn(move || accept_loop(t, listeners, routes, inboxes))
            .map_err(|source| TargetError::Os {
                what: "spawning the acceptor thread",
                source,
            })?;
        threads.push(acceptor);
        if let Some(l) = rdma {
            threads.push(l.serve(&target, listen_addrs.len() as u16 + 1)?);
        }
        Ok(Self {
            target,
            listen_addrs,
            rdma_addrs,
            discovery_addrs,
            cpus,
            port_cpus,
            ring_setup,
            ring_notes,
            threads,
        })
    }

    /// Blocks until SIGINT/SIGTERM (or [`Server::stop`] from elsewhere),
    /// then drains and flushes.
    pub fn wait(self) -> Result<(), TargetError> {
        self.wait_with(|_| {})
    }

    /// [`Server::wait`], calling `on_reload` (on this thread) after each
    /// SIGHUP.
    pub fn wait_with(self, mut on_reload: impl FnMut(&Target)) -> Result<(), TargetError> {
        while !self.target.shutting_down.load(Ordering::Acquire) {
            if SIGNALLED.load(Ordering::SeqCst) {
                self.target.shutting_down.store(true, Ordering::Release);
            }
            if RELOAD.swap(false, Ordering::SeqCst) {
                on_reload(&self.target);
            }
            std::thread::sleep(TICK);
        }
        self.stop()
    }

    /// Stops accepting, lets in-flight writes finish (up to [`DRAIN_GRACE`]),
    /// closes every connection and flushes every namespace.
    pub fn stop(self) -> Result<(), TargetError> {
        self.target.shutting_down.store(true, Ordering::Release);
        for h in self.threads {
            let _ = h.join();
        }
        for s in &self.target.subsystems {
            for ns in &s.namespaces {
                ns.flush().map_err(|source| TargetError::Os {
                    what: "flushing a namespace at shutdown",
                    source,
                })?;
            }
        }
        Ok(())
    }
}

/// A reactor's channel and wake-up eventfd. The eventfd is shared so it
/// closes only when both the acceptor and the reactor are done with it.
/// (Regression: a bare fd number poked after the reactor closed it wrote 8
/// bytes into whatever socket reused the number, corrupting a host's stream.)
type Inbox = (Sender<(TcpStream, u16, Arc<Ticket>)>, Arc<OwnedFd>);

/// Reactor threads, their inboxes, the io_uring set-up and fallback notes.
type Reactors = (Vec<JoinHandle<()>>, Vec<Inbox>, String, Vec<String>);
/// What a reactor reports once its ring is up: set-up and notes, or why not.
type Ready = Result<(String, Vec<String>), super::ring::RingError>;

fn spawn_reactors(target: &Arc<Target>, cpus: &[usize]) -> Result<Reactors, TargetError> {
    let mut threads = Vec::new();
    let mut inboxes = Vec::new();
    let (ready_tx, ready_rx) = channel::<Ready>();
    for &cpu in cpus {
        let (tx, rx) = channel::<(TcpStream, u16, Arc<Ticket>)>();
        let wake = Arc::new(eventfd()?);
        let reactor_wake = wake.clone();
        let t = target.clone();
        let ready = ready_tx.clone();
        let h = std::thread::Builder::new()
            .name(format!("numio-reactor-{cpu}"))
            .spawn(move || {
                pin_to(cpu);
                // The ring is made here: a single-issuer ring belongs to the
                // thread that creates it.
                match Ring::new(true) {
                    Ok(ring) => {
                        let _ = ready.send(Ok((ring.features.join("+"), ring.notes.clone())));
                        Reactor::new(t, cpu, rx, reactor_wake, ring).run();
                    }
                    Err(e) => {
                        let _ = ready.send(Err(e));
                    }
                }
            })
            .map_err(|source| TargetError::Os {
                what: "spawning a reactor thread",
                source,
            })?;
        threads.push(h);
        inboxes.push((tx, wake));
    }
    let mut notes = Vec::new();
    let mut setup = String::new();
    let mut failed = None;
    for _ in cpus {
        match ready_rx.recv() {
            Ok(Ok((f, n))) => {
                setup = f;
                notes.extend(n);
            }
            Ok(Err(e)) => failed = Some(ReactorError::Ring(e)),
            Err(_) => failed = Some(ReactorError::Exited),
        }
    }
    if let Some(source) = failed {
        target.shutting_down.store(true, Ordering::Release);
        for (_, w) in &inboxes {
            poke(w);
        }
        for h in threads {
            let _ = h.join();
        }
        return Err(TargetError::Reactor { source });
    }
    notes.sort();
    notes.dedup();
    Ok((threads, inboxes, setup, notes))
}

/// The reactor indexes (into `cpus`) serving each of `ports` ports: those
/// on the port's `port_cpus` list, every reactor where it has none.
fn port_reactors(cpus: &[usize], port_cpus: &[Vec<usize>], ports: usize) -> Vec<Vec<usize>> {
    (0..ports)
        .map(|p| {
            let list = port_cpus.get(p).map_or(&[][..], Vec::as_slice);
            let mine: Vec<usize> = (0..cpus.len())
                .filter(|&i| list.contains(&cpus[i]))
                .collect();
            if mine.is_empty() {
                (0..cpus.len()).collect()
            } else {
                mine
            }
        })
        .collect()
}

/// A listener's reactors and whose turn is next (round robin).
struct Route {
    reactors: Vec<usize>,
    next: usize,
}

impl Route {
    fn new(reactors: Vec<usize>) -> Self {
        Self { reactors, next: 0 }
    }

    fn take(&mut self) -> usize {
        let r = self.reactors[self.next % self.reactors.len()];
        self.next = self.next.wrapping_add(1);
        r
    }
}

fn accept_loop(
    target: Arc<Target>,
    listeners: Vec<TcpListener>,
    mut routes: Vec<Route>,
    inboxes: Vec<Inbox>,
) {
    let mut fds: Vec<libc::pollfd> = listeners
        .iter()
        .map(|l| libc::pollfd {
            fd: l.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    let mut next_size_check = Instant::now() + SIZE_CHECK;
    let mut log = LogLimit::standard();
    while !target.shutting_down.load(Ordering::Acquire) {
        let n = poll_fds(&mut fds);
        if let Some(said) = log.roll(Instant::now()) {
            super::log_limit::said_held_back(&said);
        }
        if Instant::now() >= next_size_check {
            next_size_check = Instant::now() + SIZE_CHECK;
            report_resizes(&target);
        }
        if n <= 0 {
            continue;
        }
        for (i, l) in listeners.iter().enumerate() {
            // Port ids follow the NVMe listeners (1..); discovery listeners
            // come after them and name no port.
            let port = i as u16 + 1;
            while let Ok((s, peer)) = l.accept() {
                let ticket = match admit(&target, &s, peer, &mut log) {
                    Some(t) => t,
                    // Dropping the socket closes it at once.
                    None => continue,
                };
                if s.set_nonblocking(true).is_err() || s.set_nodelay(true).is_err() {
                    target.release(&ticket);
                    continue;
                }
                let (tx, wake) = &inboxes[routes[i].take()];
                match tx.send((s, port, ticket)) {
                    Ok(()) => poke(wake),
                    Err(e) => target.release(&e.0 .2),
                }
            }
        }
    }
    for (_, wake) in &inboxes {
        poke(wake);
    }
}

/// Takes a slot for `s` from `peer`, closing the oldest socket that has
/// not reached Connect when every slot is taken; `None` (counted and
/// logged, naming the limit) when it is refused.
fn admit(
    target: &Target,
    s: &TcpStream,
    peer: SocketAddr,
    log: &mut LogLimit,
) -> Option<Arc<Ticket>> {
    let dup = s.try_clone().ok().map(OwnedFd::from);
    match target.admit(peer.ip(), dup) {
        Ok((ticket, evicted)) => {
            if let Some(e) = evicted {
                target.refusals.count(Refused::Evicted);
                if crate::log::enabled(Level::Info) && log.admit() {
                    crate::log::emit(
                        Stream::Err,
                        Level::Info,
                        "connection_evicted",
                        format_args!(
                            "closing a socket from {} that held its slot {:.1} s without a \
                             Connect, to admit {peer}: every connection slot is taken \
                             (max_connections = {})",
                            e.source,
                            e.held.as_secs_f64(),
                            target.limits.max_connections
                        ),
                        &[
                            ("source", e.source.to_string().into()),
                            ("held_ms", (e.held.as_millis() as u64).into()),
                            ("peer", peer.to_string().into()),
                            ("limit", "max_connections".into()),
                        ],
                    );
                }
            }
            Some(ticket)
        }
        Err(why) => {
            let (reason, limit) = match why {
                Crowded::Target(_) => (Refused::ConnectionLimit, "max_connections"),
                Crowded::Source(_) => (Refused::SourceLimit, "max_connections_per_source"),
                Crowded::Backoff(_) => (Refused::SourceBackoff, "UNAUTHENTICATED_PER_SOURCE"),
            };
            target.refusals.count(reason);
            // A refusal is a change a waiter may look for.
            target.changed();
            if crate::log::enabled(Level::Warn) && log.admit() {
                crate::log::emit(
                    Stream::Err,
                    Level::Warn,
                    "connection_refused",
                    format_args!("refusing {peer}: {why}"),
                    &[
                        ("peer", peer.to_string().into()),
                        ("reason", why.to_string().into()),
                        ("limit", limit.into()),
                    ],
                );
            }
            None
        }
    }
}

/// Looks for resized file and device namespaces (the acceptor does it,
/// off the I/O path) and says what it told the hosts.
fn report_resizes(target: &Target) {
    let (changes, errors) = target.check_namespace_sizes();
    for c in changes {
        crate::log::emit(
            Stream::Err,
            Level::Info,
            "namespace_resized",
            format_args!(
                "{} namespace {} is now {} bytes; \
                 Namespace Attribute Changed notice sent to {} controller(s)",
                c.nqn, c.nsid, c.size_bytes, c.notified
            ),
            &[
                ("subsystem", c.nqn.as_str().into()),
                ("nsid", c.nsid.into()),
                ("size_bytes", c.size_bytes.into()),
                ("controllers_notified", c.notified.into()),
            ],
        );
    }
    for e in errors {
        crate::log::emit(
            Stream::Err,
            Level::Warn,
            "namespace_size_unreadable",
            format_args!("cannot read a namespace's size: {e}"),
            &[("error", e.to_string().into())],
        );
    }
}

/// `poll(2)` on `fds` for at most one [`TICK`]; the number of ready entries,
/// 0 on timeout, negative on error (EINTR included).
fn poll_fds(fds: &mut [libc::pollfd]) -> i32 {
    // SAFETY: `fds` is a live, exclusively borrowed slice of pollfd and its
    // length is passed with it; the kernel writes only `revents` within it.
    unsafe {
        libc::poll(
            fds.as_mut_ptr(),
            fds.len() as libc::nfds_t,
            TICK.as_millis() as i32,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_port_goes_to_its_cpus_reactors_in_turn() {
        // Reactors on CPUs 4, 5, 0, 1; port 1 on node 1's CPUs 4-5, port 2
        // on 0-1, port 3 names none: every reactor.
        let by_port = port_reactors(&[4, 5, 0, 1], &[vec![4, 5], vec![0, 1]], 3);
        assert_eq!(by_port, [vec![0, 1], vec![2, 3], vec![0, 1, 2, 3]]);
        let mut r = Route::new(by_port[1].clone());
        let turns: Vec<usize> = (0..5).map(|_| r.take()).collect();
        assert_eq!(turns, [2, 3, 2, 3, 2]);
        // Two reactors on one CPU (tests do that) both serve its port.
        assert_eq!(port_reactors(&[0, 0], &[vec![0]], 1), [vec![0, 1]]);
    }
}
