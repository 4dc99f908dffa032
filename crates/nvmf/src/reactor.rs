//! Reactors: one thread per CPU, each owning its connections outright.
//!
//! An acceptor thread takes new sockets and hands each to one reactor
//! (round robin) through that reactor's channel and wake-up eventfd. A
//! reactor runs a `poll(2)` loop over its sockets, its wake-up eventfd and
//! its own io_uring's descriptor, and drives each [`Connection`]. Storage
//! I/O of file and block device namespaces (`O_DIRECT`) is submitted on the
//! reactor's io_uring and completes asynchronously while the connection
//! serves other commands; RAM namespaces are copied synchronously. No state
//! is shared between reactors on the I/O path.

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::config::TargetConfig;
use crate::error::TargetError;
use crate::io::{StorageKind, StorageOp};
use crate::queue::{Connection, Phase};
use crate::ring::{Ring, Tag};
use crate::subsystem::Target;

/// How long in-flight writes get to finish after SIGINT/SIGTERM.
pub const DRAIN_GRACE: Duration = Duration::from_secs(5);
const TICK: Duration = Duration::from_millis(100);
const READ_CHUNK_BYTES: usize = 256 * 1024;

static SIGNALLED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_sig: libc::c_int) {
    SIGNALLED.store(true, Ordering::SeqCst);
}

/// Makes SIGINT and SIGTERM request a clean shutdown of running servers.
pub fn install_signal_handlers() -> Result<(), TargetError> {
    for sig in [libc::SIGINT, libc::SIGTERM] {
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
                what: "installing SIGINT/SIGTERM handlers",
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
    /// Bound discovery listeners.
    pub discovery_addrs: Vec<SocketAddr>,
    /// CPUs the reactors run on.
    pub cpus: Vec<usize>,
    /// The backing devices' NUMA node, when the CPUs were chosen from it.
    pub numa_node: Option<u32>,
    /// io_uring fallbacks the reactors took, in words.
    pub ring_notes: Vec<String>,
    threads: Vec<JoinHandle<()>>,
}

fn bind(addr: SocketAddr) -> Result<TcpListener, TargetError> {
    let l = TcpListener::bind(addr).map_err(|source| TargetError::Listen { addr, source })?;
    l.set_nonblocking(true)
        .map_err(|source| TargetError::Listen { addr, source })?;
    Ok(l)
}

/// CPUs this process may run on, at most `max`.
pub fn default_cpus(max: usize) -> Vec<usize> {
    // SAFETY: cpu_set_t is plain data, valid when zeroed.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: sched_getaffinity writes at most size_of::<cpu_set_t>() bytes
    // into the live local `set`.
    let rc =
        unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) };
    if rc != 0 {
        return vec![0];
    }
    // SAFETY: CPU_ISSET reads the set filled above.
    let cpus: Vec<usize> = (0..libc::CPU_SETSIZE as usize)
        .filter(|&c| unsafe { libc::CPU_ISSET(c, &set) })
        .collect();
    cpus.into_iter().take(max.max(1)).collect()
}

/// Default reactor CPUs: those of the backing devices' NUMA node that this
/// process may use (at most 4), else any it may use (at most 4).
fn choose_cpus(cfg: &TargetConfig) -> (Vec<usize>, Option<u32>) {
    let allowed = default_cpus(libc::CPU_SETSIZE as usize);
    let paths: Vec<std::path::PathBuf> = cfg
        .subsystems
        .iter()
        .flat_map(|s| s.namespaces.iter())
        .filter(|n| !n.backing.starts_with("mem:"))
        .map(|n| n.backing.clone().into())
        .collect();
    match crate::numa::local_cpus(std::path::Path::new("/sys"), &paths, &allowed, 4) {
        Some((node, cpus)) => (cpus, Some(node)),
        None => (allowed.into_iter().take(4).collect(), None),
    }
}

fn pin_to(cpu: usize) {
    // SAFETY: as in default_cpus; the set names one CPU and applies to the
    // calling thread only.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            eprintln!(
                "numio serve: cannot pin reactor to CPU {cpu}: {}",
                std::io::Error::last_os_error()
            );
        }
    }
}

fn eventfd() -> Result<OwnedFd, TargetError> {
    // SAFETY: eventfd returns a new descriptor or -1; a valid one is owned
    // by exactly one OwnedFd.
    let fd = unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) };
    if fd < 0 {
        return Err(TargetError::Os {
            what: "creating a reactor wake-up eventfd",
            source: std::io::Error::last_os_error(),
        });
    }
    // SAFETY: fd is fresh and owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn poke(fd: RawFd) {
    let one: u64 = 1;
    // SAFETY: writes 8 bytes from a live local to an eventfd.
    unsafe { libc::write(fd, &one as *const u64 as *const libc::c_void, 8) };
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
            for a in &cfg.listen {
                let addr = SocketAddr::new(a.ip(), cfg.discovery_port);
                if listen_addrs.contains(&addr) {
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
        let mut resolved = cfg.clone();
        resolved.listen = listen_addrs.clone();
        let target = Target::new(&resolved)?;
        let (cpus, numa_node) = if cfg.cpus.is_empty() {
            choose_cpus(cfg)
        } else {
            (cfg.cpus.clone(), None)
        };
        let (mut threads, inboxes, ring_notes) = spawn_reactors(&target, &cpus)?;
        let t = target.clone();
        let acceptor = std::thread::Builder::new()
            .name("numio-acceptor".into())
            .spawn(move || accept_loop(t, listeners, inboxes))
            .map_err(|source| TargetError::Os {
                what: "spawning the acceptor thread",
                source,
            })?;
        threads.push(acceptor);
        Ok(Self {
            target,
            listen_addrs,
            discovery_addrs,
            cpus,
            numa_node,
            ring_notes,
            threads,
        })
    }

    /// Blocks until SIGINT/SIGTERM (or [`Server::stop`] from elsewhere),
    /// then drains and flushes.
    pub fn wait(self) -> Result<(), TargetError> {
        while !self.target.shutting_down.load(Ordering::Acquire) {
            if SIGNALLED.load(Ordering::SeqCst) {
                self.target.shutting_down.store(true, Ordering::Release);
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
type Inbox = (Sender<TcpStream>, Arc<OwnedFd>);

/// Reactor threads, their inboxes and the io_uring fallback notes.
type Reactors = (Vec<JoinHandle<()>>, Vec<Inbox>, Vec<String>);

fn spawn_reactors(target: &Arc<Target>, cpus: &[usize]) -> Result<Reactors, TargetError> {
    let mut threads = Vec::new();
    let mut inboxes = Vec::new();
    let (ready_tx, ready_rx) = channel::<Result<Vec<String>, String>>();
    for &cpu in cpus {
        let (tx, rx) = channel::<TcpStream>();
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
                match Ring::new(false) {
                    Ok(ring) => {
                        let _ = ready.send(Ok(ring.notes.clone()));
                        Reactor::new(t, rx, reactor_wake, ring).run();
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
    let mut failed = None;
    for _ in cpus {
        match ready_rx.recv() {
            Ok(Ok(n)) => notes.extend(n),
            Ok(Err(e)) => failed = Some(e),
            Err(_) => failed = Some("a reactor thread exited during set-up".into()),
        }
    }
    if let Some(e) = failed {
        target.shutting_down.store(true, Ordering::Release);
        for (_, w) in &inboxes {
            poke(w.as_raw_fd());
        }
        for h in threads {
            let _ = h.join();
        }
        return Err(TargetError::Os {
            what: "starting a reactor",
            source: std::io::Error::other(e),
        });
    }
    notes.sort();
    notes.dedup();
    Ok((threads, inboxes, notes))
}

fn accept_loop(target: Arc<Target>, listeners: Vec<TcpListener>, inboxes: Vec<Inbox>) {
    let mut next = 0usize;
    let mut fds: Vec<libc::pollfd> = listeners
        .iter()
        .map(|l| libc::pollfd {
            fd: l.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    while !target.shutting_down.load(Ordering::Acquire) {
        let n = poll_fds(&mut fds);
        if n <= 0 {
            continue;
        }
        for l in &listeners {
            while let Ok((s, peer)) = l.accept() {
                let open = target.connections.load(Ordering::Acquire);
                if open >= target.limits.max_connections {
                    eprintln!(
                        "numio serve: refusing {peer}: connection limit {} reached",
                        target.limits.max_connections
                    );
                    continue;
                }
                if s.set_nonblocking(true).is_err() || s.set_nodelay(true).is_err() {
                    continue;
                }
                target.connections.fetch_add(1, Ordering::AcqRel);
                let (tx, wake) = &inboxes[next % inboxes.len()];
                next += 1;
                if tx.send(s).is_ok() {
                    poke(wake.as_raw_fd());
                }
            }
        }
    }
    for (_, wake) in &inboxes {
        poke(wake.as_raw_fd());
    }
}

struct Slot {
    stream: TcpStream,
    conn: Connection,
    out: Vec<u8>,
    out_pos: usize,
    dead: bool,
}

struct Reactor {
    target: Arc<Target>,
    inbox: Receiver<TcpStream>,
    wake: Arc<OwnedFd>,
    ring: Ring,
    /// Connections by stable index (a completion names its connection by
    /// index, so entries never move); None = free.
    slots: Vec<Option<Slot>>,
    free: Vec<u32>,
    rbuf: Vec<u8>,
}

impl Reactor {
    fn new(
        target: Arc<Target>,
        inbox: Receiver<TcpStream>,
        wake: Arc<OwnedFd>,
        ring: Ring,
    ) -> Self {
        Self {
            target,
            inbox,
            wake,
            ring,
            slots: Vec::new(),
            free: Vec::new(),
            rbuf: vec![0u8; READ_CHUNK_BYTES],
        }
    }

    fn live(&mut self) -> impl Iterator<Item = &mut Slot> {
        self.slots.iter_mut().flatten()
    }

    fn run(mut self) {
        let mut last_tick = Instant::now();
        let mut drain_deadline: Option<Instant> = None;
        let mut fds: Vec<libc::pollfd> = Vec::new();
        let mut fd_conn: Vec<u32> = Vec::new();
        loop {
            while let Ok(s) = self.inbox.try_recv() {
                let conn = Connection::new(self.target.clone());
                let slot = Slot {
                    stream: s,
                    conn,
                    out: Vec::new(),
                    out_pos: 0,
                    dead: false,
                };
                match self.free.pop() {
                    Some(i) => self.slots[i as usize] = Some(slot),
                    None => self.slots.push(Some(slot)),
                }
            }
            if self.target.shutting_down.load(Ordering::Acquire) {
                let deadline = *drain_deadline.get_or_insert_with(|| Instant::now() + DRAIN_GRACE);
                let late = Instant::now() >= deadline;
                for s in self.live() {
                    if late || s.conn.can_close_for_shutdown() {
                        s.conn.close("target shutting down".into());
                    }
                }
                if self.slots.iter().all(Option::is_none) {
                    return;
                }
            }
            self.submit_storage();
            self.poll_once(&mut fds, &mut fd_conn);
            self.reap_storage();
            let now = Instant::now();
            if now.duration_since(last_tick) >= TICK {
                last_tick = now;
                for s in self.live() {
                    s.conn.tick(now);
                }
            }
            for s in self.live() {
                flush(s);
            }
            self.reap();
        }
    }

    /// Hands every queued storage operation to the ring.
    fn submit_storage(&mut self) {
        for (i, s) in self.slots.iter_mut().enumerate() {
            let Some(s) = s else { continue };
            while let Some((op, buf)) = s.conn.take_storage() {
                let e = storage_entry(&op, buf).user_data(
                    Tag::Storage {
                        conn: i as u32,
                        slot: op.slot,
                    }
                    .encode(),
                );
                // SAFETY: buf is the request slot's buffer of at least
                // op.len bytes; the connection leaves it alone while the
                // request is Executing, and the reactor keeps the
                // connection (and so the buffer) until the completion is
                // reaped (reap() skips connections with executing() > 0).
                // op.fd belongs to a namespace the target keeps open.
                if let Err(e) = unsafe { self.ring.push(&e) } {
                    eprintln!("numio serve: io_uring submit failed: {e}");
                }
            }
        }
        if let Err(e) = self.ring.ring.submit() {
            eprintln!("numio serve: io_uring submit failed: {e}");
        }
    }

    /// Completes every storage operation the ring has finished.
    fn reap_storage(&mut self) {
        let done: Vec<(u64, i32)> = self
            .ring
            .ring
            .completion()
            .map(|c| (c.user_data(), c.result()))
            .collect();
        for (ud, res) in done {
            if let Some(Tag::Storage { conn, slot }) = Tag::decode(ud) {
                if let Some(Some(s)) = self.slots.get_mut(conn as usize) {
                    s.conn.complete_storage(slot, res);
                    flush(s);
                }
            }
        }
    }

    fn poll_once(&mut self, fds: &mut Vec<libc::pollfd>, fd_conn: &mut Vec<u32>) {
        fds.clear();
        fd_conn.clear();
        fds.push(libc::pollfd {
            fd: self.wake.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        });
        fds.push(libc::pollfd {
            fd: self.ring.ring.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        });
        for (i, s) in self.slots.iter().enumerate() {
            let Some(s) = s else { continue };
            let mut ev = libc::POLLIN;
            if s.out_pos < s.out.len() || s.conn.tx_pending() > 0 {
                ev |= libc::POLLOUT;
            }
            fds.push(libc::pollfd {
                fd: s.stream.as_raw_fd(),
                events: ev,
                revents: 0,
            });
            fd_conn.push(i as u32);
        }
        let n = poll_fds(fds);
        if n <= 0 {
            return;
        }
        if fds[0].revents != 0 {
            let mut v = [0u8; 8];
            // SAFETY: reads 8 bytes into a live local from our eventfd.
            unsafe {
                libc::read(
                    self.wake.as_raw_fd(),
                    v.as_mut_ptr() as *mut libc::c_void,
                    8,
                )
            };
        }
        for (k, &i) in fd_conn.iter().enumerate() {
            let re = fds[k + 2].revents;
            if re & (libc::POLLIN | libc::POLLHUP | libc::POLLERR) != 0 {
                if let Some(s) = self.slots[i as usize].as_mut() {
                    read_some(s, &mut self.rbuf);
                }
            }
        }
    }

    fn reap(&mut self) {
        for i in 0..self.slots.len() {
            let Some(s) = &self.slots[i] else { continue };
            if s.conn.executing() > 0 {
                continue; // the kernel still owns some of its buffers
            }
            let drained = s.out_pos >= s.out.len() && s.conn.tx_pending() == 0;
            if s.dead || (s.conn.phase() == Phase::Closing && drained) {
                let mut s = self.slots[i].take().expect("checked above");
                self.free.push(i as u32);
                let why = s
                    .conn
                    .close_reason
                    .clone()
                    .unwrap_or_else(|| "host closed the connection".into());
                let q = s
                    .conn
                    .qid()
                    .map(|q| format!(" qid {q}"))
                    .unwrap_or_default();
                let peer = s
                    .stream
                    .peer_addr()
                    .map(|a| a.to_string())
                    .unwrap_or_else(|_| "?".into());
                if !why.starts_with("host closed") && !why.starts_with("target shutting") {
                    eprintln!("numio serve: closing {peer}{q}: {why}");
                }
                s.conn.release();
                let _ = s.stream.shutdown(std::net::Shutdown::Both);
                self.target.connections.fetch_sub(1, Ordering::AcqRel);
            }
        }
        while self.slots.last().is_some_and(Option::is_none) {
            self.slots.pop();
            let n = self.slots.len() as u32;
            self.free.retain(|&f| f < n);
        }
    }
}

/// The SQE for a storage operation on `buf`.
fn storage_entry(op: &StorageOp, buf: *mut u8) -> io_uring::squeue::Entry {
    use io_uring::{opcode, types};
    let fd = types::Fd(op.fd);
    match op.kind {
        StorageKind::Read => opcode::Read::new(fd, buf, op.len).offset(op.offset).build(),
        StorageKind::Write => opcode::Write::new(fd, buf, op.len)
            .offset(op.offset)
            .build(),
        StorageKind::Flush => opcode::Fsync::new(fd)
            .flags(types::FsyncFlags::DATASYNC)
            .build(),
    }
}

fn read_some(s: &mut Slot, rbuf: &mut [u8]) {
    let mut budget = 4 * READ_CHUNK_BYTES;
    while budget > 0 && s.conn.phase() != Phase::Closing {
        match s.stream.read(rbuf) {
            Ok(0) => {
                s.dead = true;
                return;
            }
            Ok(n) => {
                s.conn.on_bytes(&rbuf[..n]);
                budget = budget.saturating_sub(n);
                flush(s);
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => return,
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(_) => {
                s.dead = true;
                return;
            }
        }
    }
}

fn flush(s: &mut Slot) {
    loop {
        if s.out_pos >= s.out.len() {
            s.out.clear();
            s.out_pos = 0;
            if s.conn.tx_pending() == 0 {
                return;
            }
            s.out = s.conn.take_tx();
        }
        match s.stream.write(&s.out[s.out_pos..]) {
            Ok(0) => {
                s.dead = true;
                return;
            }
            Ok(n) => s.out_pos += n,
            Err(e) if e.kind() == ErrorKind::WouldBlock => return,
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(_) => {
                s.dead = true;
                return;
            }
        }
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
