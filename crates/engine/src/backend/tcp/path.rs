//! One path of the multipath backend: its I/O queue ([`Conn`], driven by
//! the worker without blocking) and its admin queue, held by a thread of
//! its own ([`spawn`]) so the data path never waits on it.
//!
//! The path's thread keeps an Asynchronous Event Request outstanding (with
//! ANA Change notices enabled, where the controller reports ANA), polls the
//! admin socket every [`ADMIN_POLL`], and re-reads the ANA log (Get Log
//! Page 0Ch) when a notice arrives or when the worker asks (an I/O came
//! back with a path status), sending the namespace's state to the worker.
//! It sends a Keep Alive every [`KEEP_ALIVE_INTERVAL`]; none answered in
//! [`KEEP_ALIVE_TIMEOUT`], or the admin socket failing, loses the path.
//! When the path is lost (by the thread, or by the worker, whose I/O queue
//! failed) the thread reconnects it every [`RECONNECT_INTERVAL`] until it
//! returns (failback) or the backend is dropped. Each connection has a
//! generation number, so a loss reported for an old one is ignored.

use std::io::{self, Read, Write};
use std::net::IpAddr;
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::Sender;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use nvme_spec::ana::{AnaState, AEC_ANA_CHANGE, AEN_ANA_CHANGE, LID_ANA};
use nvme_spec::command::admin;
use nvme_spec::identify::{cns, IdentifyController, IdentifyNamespace, CMIC_ANA};
use nvme_spec::Sqe;
use nvmf::host::multipath::ana_state_in_log;
use nvmf::host::{command, DataBuffers, HostQueue};
use nvmf::{Initiator, InitiatorOptions};

use super::error::SetupError;
use super::portals::portal_name;
use super::setup::{admin_queue, Portal};

/// How often the path's thread looks at its admin socket and flags.
pub const ADMIN_POLL: Duration = Duration::from_millis(100);
/// How often a Keep Alive goes out on the admin queue.
pub const KEEP_ALIVE_INTERVAL: Duration = Duration::from_secs(1);
/// A Keep Alive unanswered this long loses the path.
pub const KEEP_ALIVE_TIMEOUT: Duration = Duration::from_secs(5);
/// How often a lost path is reconnected.
pub const RECONNECT_INTERVAL: Duration = Duration::from_millis(500);
/// Bytes of the ANA log read (header, groups and their nsids).
const ANA_LOG_BYTES: u32 = 4096;

/// A path's connected I/O queue.
pub struct Conn {
    /// The socket, non-blocking.
    pub stream: nvmf::host::Stream,
    /// The queue over it.
    pub queue: HostQueue,
    /// NUMA node of the local interface it leaves by (`None`: no node).
    pub node: Option<u32>,
}

impl Conn {
    /// Writes what the socket takes now.
    pub fn flush<B: DataBuffers>(&mut self, bufs: &B) -> io::Result<()> {
        loop {
            let b = self.queue.tx_pending(bufs);
            if b.is_empty() {
                return Ok(());
            }
            match self.stream.write(b) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => self.queue.tx_sent(n),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }

    /// Reads what the socket holds into the queue; false when nothing was
    /// there.
    pub fn receive<B: DataBuffers>(&mut self, bufs: &mut B) -> io::Result<bool> {
        let space = self.queue.rx_space();
        let n = loop {
            match self.stream.read(space) {
                Ok(0) => {
                    return Err(io::Error::new(
                        io::ErrorKind::ConnectionAborted,
                        "the target closed the connection",
                    ))
                }
                Ok(n) => break n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(false),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        };
        self.queue
            .on_received(n, bufs)
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e.to_string()))?;
        Ok(true)
    }
}

/// Why a path's admin queue was given up (the path is then reconnected).
#[derive(Debug, thiserror::Error)]
pub enum PathLost {
    /// The backend stopped the thread.
    #[error("stopped")]
    Stopped,
    /// An admin command could not be sent or read.
    #[error("admin queue: {step}: {source}")]
    Admin {
        /// The command.
        step: &'static str,
        /// The initiator's error.
        source: Box<nvmf::InitiatorError>,
    },
    /// A completion could not be read from the admin queue.
    #[error("admin queue: {source}")]
    Reap {
        /// The initiator's error.
        source: Box<nvmf::InitiatorError>,
    },
    /// poll(2) on the admin socket failed.
    #[error("admin queue: poll: {source}")]
    Poll {
        /// The OS error.
        source: io::Error,
    },
    /// The worker lost the path's I/O queue.
    #[error("its I/O queue failed")]
    IoQueue,
    /// A Keep Alive went unanswered.
    #[error("no Keep Alive reply in {timeout_s} s")]
    KeepAlive {
        /// The timeout, in seconds.
        timeout_s: u64,
    },
    /// Get Log Page (ANA) completed with an error.
    #[error("Get Log Page (ANA) failed: {status}")]
    AnaLogStatus {
        /// Its status.
        status: nvme_spec::Status,
    },
    /// The ANA log names neither the namespace nor its group.
    #[error("the ANA log names neither namespace {nsid} nor its group {anagrpid}")]
    AnaLog {
        /// The namespace.
        nsid: u32,
        /// Its ANA group.
        anagrpid: u32,
    },
}

impl PathLost {
    fn admin(step: &'static str) -> impl FnOnce(nvmf::InitiatorError) -> PathLost {
        move |e| PathLost::Admin {
            step,
            source: Box::new(e),
        }
    }

    fn reap(e: nvmf::InitiatorError) -> PathLost {
        PathLost::Reap {
            source: Box::new(e),
        }
    }
}

/// What a path's thread tells the worker.
pub enum PathEvent {
    /// Connected (again): connection `gen`, its I/O queue and ANA state.
    Up {
        /// Generation of the connection.
        gen: u64,
        /// Its I/O queue.
        conn: Box<Conn>,
        /// The namespace's ANA state through it.
        ana: AnaState,
    },
    /// The ANA state through connection `gen` is now `state`.
    Ana {
        /// Generation of the connection.
        gen: u64,
        /// The new state.
        state: AnaState,
    },
    /// Connection `gen` is lost.
    Down {
        /// Generation of the connection.
        gen: u64,
        /// Why.
        why: PathLost,
    },
}

/// What the worker tells a path's thread.
#[derive(Debug, Default)]
pub struct PathCtl {
    /// The backend is gone: end the thread.
    pub stop: AtomicBool,
    /// The generation whose I/O queue the worker lost (0: none).
    pub failed_gen: AtomicU64,
    /// Re-read the ANA log (an I/O came back with a path status).
    pub reread: AtomicBool,
}

/// What connecting a path needs.
#[derive(Debug, Clone)]
pub struct PathParams {
    /// Index of the path.
    pub index: usize,
    /// Its portal.
    pub portal: Portal,
    /// The namespace.
    pub nsid: u32,
    /// Options of the I/O queue (entries, data sizes, digests).
    pub io: InitiatorOptions,
}

impl PathParams {
    fn name(&self) -> String {
        portal_name(&self.portal.url)
    }
}

/// Connects a path: an admin queue (ANA Change notices on), the
/// namespace's ANA state, and I/O queue 1, non-blocking.
pub fn connect(p: &PathParams) -> Result<(Initiator, Conn, AnaState), SetupError> {
    let (url, addr) = (&p.portal.url, p.portal.addr);
    let mut a = admin_queue(url, addr, &p.io)?;
    let fail = |step: &'static str| {
        move |e: nvmf::InitiatorError| SetupError::Path {
            portal: p.name(),
            step,
            source: Box::new(e),
        }
    };
    let ctrl = a
        .identify(cns::CONTROLLER, 0)
        .map(|b| IdentifyController::decode(&b))
        .map_err(fail("Identify Controller"))?;
    let ns = a
        .identify(cns::NAMESPACE, p.nsid)
        .map(|b| IdentifyNamespace::decode(&b))
        .map_err(fail("Identify Namespace"))?;
    let ana = if ctrl.cmic & CMIC_ANA != 0 {
        let c = a
            .set_features(nvme_spec::features::fid::ASYNC_EVENT, AEC_ANA_CHANGE)
            .map_err(fail("Set Features (ANA Change notices)"))?;
        if !c.cqe.status().is_success() {
            return Err(SetupError::AnaNotices {
                portal: p.name(),
                status: c.cqe.status(),
            });
        }
        let log = a
            .get_log_page(LID_ANA, 0, ANA_LOG_BYTES, 0)
            .map_err(fail("Get Log Page (ANA)"))?;
        ana_state_in_log(&log, p.nsid, ns.anagrpid).ok_or_else(|| SetupError::AnaLog {
            portal: p.name(),
            nsid: p.nsid,
            anagrpid: ns.anagrpid,
        })?
    } else {
        AnaState::Optimized
    };
    // SQ flow control off on the I/O queue, as the single-path backend asks.
    let io = InitiatorOptions {
        disable_sqflow: true,
        ..p.io.clone()
    };
    let q = Initiator::connect_io(addr, &url.subnqn, a.cntlid, 1, &io)
        .map_err(fail("connecting I/O queue 1"))?;
    let (stream, queue) = q.into_parts().map_err(fail("I/O queue"))?;
    stream
        .set_nonblocking(true)
        .map_err(|source| SetupError::Nonblocking {
            portal: p.name(),
            source,
        })?;
    let node = stream
        .tcp()
        .local_addr()
        .ok()
        .and_then(|l| interface_node(l.ip()));
    Ok((
        a,
        Conn {
            stream,
            queue,
            node,
        },
        ana,
    ))
}

/// The NUMA node of the interface that holds local address `ip`: `None`
/// for loopback and virtual interfaces (no device, like the kernel's -1).
fn interface_node(ip: IpAddr) -> Option<u32> {
    if ip.is_loopback() {
        return None;
    }
    let name = sysapi::net::interface_of(ip).ok().flatten()?;
    topology::host::interface_node(std::path::Path::new("/"), &name)
        .ok()
        .flatten()
        .map(|n| n.0)
}

/// Starts path `p`'s thread with its connection `gen`'s admin queue.
pub fn spawn(
    p: PathParams,
    admin: Initiator,
    gen: u64,
    ctl: Arc<PathCtl>,
    tx: Sender<(usize, PathEvent)>,
) -> io::Result<JoinHandle<()>> {
    std::thread::Builder::new()
        .name(format!("numio-path{}", p.index))
        .spawn(move || path_main(&p, admin, gen, &ctl, &tx))
}

fn path_main(
    p: &PathParams,
    admin: Initiator,
    mut gen: u64,
    ctl: &PathCtl,
    tx: &Sender<(usize, PathEvent)>,
) {
    let mut admin = Some(admin);
    loop {
        if let Some(a) = admin.take() {
            let why = Agent::new(a, gen, p.nsid).run(ctl, |state| {
                tx.send((p.index, PathEvent::Ana { gen, state })).is_ok()
            });
            if ctl.stop.load(Ordering::Relaxed)
                || tx.send((p.index, PathEvent::Down { gen, why })).is_err()
            {
                return;
            }
        }
        let retry_at = Instant::now() + RECONNECT_INTERVAL;
        while Instant::now() < retry_at {
            if ctl.stop.load(Ordering::Relaxed) {
                return;
            }
            std::thread::sleep(ADMIN_POLL.min(RECONNECT_INTERVAL));
        }
        if let Ok((a, conn, ana)) = connect(p) {
            gen += 1;
            let conn = Box::new(conn);
            if tx
                .send((p.index, PathEvent::Up { gen, conn, ana }))
                .is_err()
            {
                return;
            }
            admin = Some(a);
        }
    }
}

/// The admin queue of one connection, waiting for events.
struct Agent {
    a: Initiator,
    gen: u64,
    nsid: u32,
    anagrpid: u32,
    /// Whether the controller reports ANA (CMIC bit 3); else every path is
    /// optimized.
    reports_ana: bool,
    aer: Option<u16>,
    keep_alive: Option<(u16, Instant)>,
    last_keep_alive: Instant,
}

impl Agent {
    fn new(a: Initiator, gen: u64, nsid: u32) -> Agent {
        Agent {
            a,
            gen,
            nsid,
            anagrpid: 0,
            reports_ana: false,
            aer: None,
            keep_alive: None,
            last_keep_alive: Instant::now(),
        }
    }

    /// Serves the admin queue until the path is lost; says why. `ana`
    /// gets each state read (false: nobody listens, stop).
    fn run(mut self, ctl: &PathCtl, mut ana: impl FnMut(AnaState) -> bool) -> PathLost {
        match self.serve(ctl, &mut ana) {
            Ok(()) => PathLost::Stopped,
            Err(why) => why,
        }
    }

    fn serve(
        &mut self,
        ctl: &PathCtl,
        ana: &mut impl FnMut(AnaState) -> bool,
    ) -> Result<(), PathLost> {
        let ns = self
            .a
            .identify(cns::NAMESPACE, self.nsid)
            .map_err(PathLost::admin("Identify Namespace"))?;
        self.anagrpid = IdentifyNamespace::decode(&ns).anagrpid;
        let ctrl = self
            .a
            .identify(cns::CONTROLLER, 0)
            .map_err(PathLost::admin("Identify Controller"))?;
        self.reports_ana = IdentifyController::decode(&ctrl).cmic & CMIC_ANA != 0;
        self.post_aer()?;
        loop {
            if ctl.stop.load(Ordering::Relaxed) {
                return Ok(());
            }
            if ctl.failed_gen.load(Ordering::Relaxed) == self.gen {
                return Err(PathLost::IoQueue);
            }
            if ctl.reread.swap(false, Ordering::Relaxed) && !ana(self.read_ana()?) {
                return Ok(());
            }
            self.keep_alive()?;
            if self.readable()? {
                let c = self.a.reap().map_err(PathLost::reap)?;
                if self.completed(c.cqe.cid, c.cqe.result)? && !ana(self.read_ana()?) {
                    return Ok(());
                }
            }
        }
    }

    fn post_aer(&mut self) -> Result<(), PathLost> {
        let sqe = Sqe {
            opcode: admin::ASYNC_EVENT,
            ..Default::default()
        };
        self.aer = Some(
            self.a
                .post(sqe, Vec::new(), 0)
                .map_err(PathLost::admin("Asynchronous Event Request"))?,
        );
        Ok(())
    }

    /// Sends a Keep Alive when one is due; fails when one went unanswered.
    fn keep_alive(&mut self) -> Result<(), PathLost> {
        match self.keep_alive {
            Some((_, sent)) if sent.elapsed() > KEEP_ALIVE_TIMEOUT => Err(PathLost::KeepAlive {
                timeout_s: KEEP_ALIVE_TIMEOUT.as_secs(),
            }),
            None if self.last_keep_alive.elapsed() >= KEEP_ALIVE_INTERVAL => {
                let cid = self
                    .a
                    .post(command::keep_alive(), Vec::new(), 0)
                    .map_err(PathLost::admin("Keep Alive"))?;
                self.keep_alive = Some((cid, Instant::now()));
                Ok(())
            }
            _ => Ok(()),
        }
    }

    /// Handles the completion of `cid`: true when it was an ANA Change
    /// notice (the log is to be read).
    fn completed(&mut self, cid: u16, result: u32) -> Result<bool, PathLost> {
        if self.keep_alive.is_some_and(|(k, _)| k == cid) {
            self.keep_alive = None;
            self.last_keep_alive = Instant::now();
        } else if self.aer == Some(cid) {
            self.post_aer()?;
            return Ok(result == AEN_ANA_CHANGE);
        }
        Ok(false)
    }

    /// Waits up to [`ADMIN_POLL`] for the admin socket to be readable.
    fn readable(&self) -> Result<bool, PathLost> {
        let mut pfd = libc::pollfd {
            fd: self.a.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd on the stack for the duration of the call.
        let rc = unsafe { libc::poll(&mut pfd, 1, ADMIN_POLL.as_millis() as i32) };
        if rc < 0 {
            let e = io::Error::last_os_error();
            return match e.kind() {
                io::ErrorKind::Interrupted => Ok(false),
                _ => Err(PathLost::Poll { source: e }),
            };
        }
        Ok(rc > 0)
    }

    /// Reads the ANA log (other completions handled meanwhile).
    fn read_ana(&mut self) -> Result<AnaState, PathLost> {
        if !self.reports_ana {
            return Ok(AnaState::Optimized);
        }
        let (sqe, _) = command::get_log_page(LID_ANA, 0, ANA_LOG_BYTES, 0);
        let cid = self
            .a
            .post(sqe, Vec::new(), ANA_LOG_BYTES)
            .map_err(PathLost::admin("Get Log Page (ANA)"))?;
        loop {
            let c = self.a.reap().map_err(PathLost::reap)?;
            if c.cqe.cid != cid {
                // A notice met meanwhile: this read is newer than it.
                self.completed(c.cqe.cid, c.cqe.result)?;
                continue;
            }
            if !c.cqe.status().is_success() {
                return Err(PathLost::AnaLogStatus {
                    status: c.cqe.status(),
                });
            }
            return ana_state_in_log(&c.data, self.nsid, self.anagrpid).ok_or(PathLost::AnaLog {
                nsid: self.nsid,
                anagrpid: self.anagrpid,
            });
        }
    }
}
