//! The multipath `tcp` backend: one namespace through several portals
//! (`nvme-tcp://A/NQN,nvme-tcp://B/NQN`), one I/O queue per path per
//! worker, each I/O sent on the path nvmf's [`PathSelector`] picks under
//! the run's `--iopolicy`.
//!
//! A slot's command id is its slot index on whichever path carries it, so
//! one buffer table ([`Slots`]) serves every queue. Failover: when a path
//! fails (its socket closes or errs, no reply for [`IO_TIMEOUT`] with I/Os
//! in flight, its admin queue lost, or its ANA state leaves optimized and
//! non-optimized) its I/Os in flight go back to the pending list and are
//! sent again on another usable path; an I/O answered with a path status
//! (SCT 3) is sent again too, and the path's ANA log re-read. The path's
//! thread (`path.rs`) reconnects a lost path in the background and hands
//! the new I/O queue over (failback). While no path is usable I/Os wait;
//! after [`NO_PATH_LIMIT`] without one the run fails naming every portal.
//! A write sent again may land twice with the same data: harmless, as the
//! slot is not reused before its completion.

use std::collections::VecDeque;
use std::io;
use std::os::fd::AsRawFd;
use std::sync::atomic::Ordering;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use nvme_spec::ana::AnaState;
use nvmf::host::multipath::{ana_state_of, is_path_error};
use nvmf::host::{command, HostCompletion, IoPolicy, PathSelector, PathView};
use results::{MultipathResult, PathResult};

use super::error::SetupError;
use super::path::{self, Conn, PathCtl, PathEvent, PathParams};
use super::portals::portal_name;
use super::setup::{NvmeTcp, TcpOptions, MAX_QUEUE_ENTRIES};
use super::{Slot, Slots};
use crate::backend::{Backend, Completion, IoRequest};
use crate::stats::Dir;

/// A path with I/Os in flight and no byte received for this long is lost.
pub const IO_TIMEOUT: Duration = Duration::from_secs(5);
/// I/Os wait this long for a usable path before the run fails.
pub const NO_PATH_LIMIT: Duration = Duration::from_secs(10);
/// Longest wait in one poll, so path events are seen promptly.
const WAIT_SLICE: Duration = Duration::from_millis(20);
/// A slot on no path.
const NO_PATH: u8 = u8::MAX;

/// One path as the worker sees it.
struct PathRt {
    name: String,
    conn: Option<Conn>,
    gen: u64,
    ctl: Arc<PathCtl>,
    last_progress: Instant,
    counts: PathResult,
}

/// What the backend's paths carried, published when it is dropped.
pub type PathsReport = Arc<Mutex<Option<MultipathResult>>>;

/// Several NVMe/TCP paths of one namespace driven as one queue.
pub struct MultipathBackend {
    paths: Vec<PathRt>,
    views: Vec<PathView>,
    selector: PathSelector,
    slots: Slots,
    reqs: Box<[IoRequest]>,
    slot_path: Box<[u8]>,
    retry: Box<[bool]>,
    pending: VecDeque<u16>,
    no_path_since: Option<Instant>,
    events: Receiver<(usize, PathEvent)>,
    nsid: u32,
    lba_shift: u32,
    report: PathsReport,
    /// What set-up did, reported with the result.
    pub note: String,
}

impl MultipathBackend {
    /// Connects every portal of `t` (one admin and one I/O queue of
    /// `depth + 1` entries each) for a worker on `node`.
    pub fn connect(
        t: &NvmeTcp,
        lba_bytes: u32,
        depth: usize,
        max_io_bytes: usize,
        o: &TcpOptions,
        node: Option<u32>,
    ) -> Result<MultipathBackend, SetupError> {
        let depth = depth.max(1);
        let entries = depth as u32 + 1;
        if entries > t.max_queue_entries.min(MAX_QUEUE_ENTRIES) {
            return Err(SetupError::QueueEntries {
                depth,
                entries,
                granted: t.max_queue_entries,
                paths: true,
            });
        }
        let mut io = o.initiator();
        io.queue_entries = entries as u16;
        io.in_capsule_max_bytes = t.in_capsule_max_bytes;
        io.max_data_bytes = max_io_bytes as u32;
        let (paths, views, events) = connect_paths(t, &io)?;
        let idle = Slot {
            buf: std::ptr::null_mut(),
            len_bytes: 0,
            dir: Dir::Read,
        };
        let note = format!(
            "tcp backend: multipath over {} (iopolicy {}), an I/O queue of {entries} entries on each",
            paths
                .iter()
                .zip(&views)
                .map(|(p, v)| format!("{} ({})", p.name, v.ana))
                .collect::<Vec<_>>()
                .join(", "),
            o.iopolicy.name()
        );
        Ok(MultipathBackend {
            paths,
            views,
            selector: PathSelector::new(o.iopolicy, node),
            slots: Slots(vec![idle; depth].into_boxed_slice()),
            reqs: vec![IoRequest::blank(Dir::Read); depth].into_boxed_slice(),
            slot_path: vec![NO_PATH; depth].into_boxed_slice(),
            retry: vec![false; depth].into_boxed_slice(),
            pending: VecDeque::with_capacity(depth),
            no_path_since: None,
            events,
            nsid: t.url.nsid,
            lba_shift: lba_bytes.trailing_zeros(),
            report: Arc::new(Mutex::new(None)),
            note,
        }
        .with_report())
    }

    /// The backend with its report allocated now, so that publishing it
    /// when dropped (at the end of the measured loop) allocates nothing.
    fn with_report(self) -> Self {
        if let Ok(mut r) = self.report.lock() {
            *r = Some(self.counts());
        }
        self
    }

    /// Where the per-path counts appear when the backend is dropped.
    pub fn report(&self) -> PathsReport {
        self.report.clone()
    }

    /// The policy.
    pub fn policy(&self) -> IoPolicy {
        self.selector.policy()
    }

    /// Sends slot `slot`'s I/O on a usable path, or leaves it pending.
    fn dispatch(&mut self, slot: u16) {
        let Some(p) = self.selector.pick(&self.views) else {
            self.pending.push_back(slot);
            return;
        };
        let io = self.reqs[slot as usize];
        let (sqe, xfer) = match io.dir {
            Dir::Read => command::read(self.nsid, io.offset_bytes, io.len_bytes, self.lba_shift),
            Dir::Write => command::write(self.nsid, io.offset_bytes, io.len_bytes, self.lba_shift),
        };
        let conn = self.paths[p]
            .conn
            .as_mut()
            .expect("a usable path is connected");
        match conn.queue.submit(slot, sqe, xfer, &self.slots) {
            Ok(()) => {
                if self.views[p].in_flight == 0 {
                    self.paths[p].last_progress = Instant::now();
                }
                self.views[p].in_flight += 1;
                self.slot_path[slot as usize] = p as u8;
                if std::mem::take(&mut self.retry[slot as usize]) {
                    self.paths[p].counts.retries += 1;
                }
            }
            Err(e) => {
                self.pending.push_back(slot);
                self.lose(p, format_args!("its queue refused a command: {e}"));
            }
        }
    }

    /// Path `p` is lost: its I/Os in flight go back to pending, its thread
    /// reconnects it.
    fn lose(&mut self, p: usize, why: impl std::fmt::Display) {
        let Some(_conn) = self.paths[p].conn.take() else {
            return;
        };
        let moved = self.views[p].in_flight;
        say(&format!(
            "path {} lost ({why}); {moved} I/Os in flight sent again on another path, reconnecting every {} ms",
            self.paths[p].name,
            path::RECONNECT_INTERVAL.as_millis()
        ));
        let was_usable = self.views[p].usable();
        self.views[p].connected = false;
        self.views[p].in_flight = 0;
        let rt = &mut self.paths[p];
        rt.ctl.failed_gen.store(rt.gen, Ordering::Relaxed);
        rt.counts.state_changes += 1;
        if was_usable {
            rt.counts.failovers += 1;
        }
        for slot in 0..self.slot_path.len() {
            if self.slot_path[slot] == p as u8 {
                self.slot_path[slot] = NO_PATH;
                self.retry[slot] = true;
                self.pending.push_back(slot as u16);
            }
        }
    }

    /// Takes what the paths' threads said.
    fn take_events(&mut self) {
        while let Ok((p, ev)) = self.events.try_recv() {
            self.on_event(p, ev);
        }
    }

    fn on_event(&mut self, p: usize, ev: PathEvent) {
        match ev {
            PathEvent::Up { gen, conn, ana } => {
                self.lose(p, "replaced");
                say(&format!("path {} reconnected ({ana})", self.paths[p].name));
                let rt = &mut self.paths[p];
                rt.gen = gen;
                rt.counts.reconnects += 1;
                rt.counts.state_changes += 1;
                rt.last_progress = Instant::now();
                self.views[p] = PathView {
                    connected: true,
                    ana,
                    in_flight: 0,
                    node: conn.node,
                };
                rt.conn = Some(*conn);
            }
            PathEvent::Ana { gen, state } if gen == self.paths[p].gen => self.set_ana(p, state),
            PathEvent::Down { gen, why } if gen == self.paths[p].gen => self.lose(p, why),
            PathEvent::Ana { .. } | PathEvent::Down { .. } => {}
        }
    }

    fn set_ana(&mut self, p: usize, state: AnaState) {
        if self.views[p].ana == state {
            return;
        }
        let was_usable = self.views[p].usable();
        say(&format!(
            "path {}: ANA {} -> {state}",
            self.paths[p].name, self.views[p].ana
        ));
        self.views[p].ana = state;
        let c = &mut self.paths[p].counts;
        c.state_changes += 1;
        if was_usable && !self.views[p].usable() {
            c.failovers += 1;
        }
    }

    /// Sends pending I/Os where a path is usable; fails after
    /// [`NO_PATH_LIMIT`] without one.
    fn dispatch_pending(&mut self) -> io::Result<()> {
        while let Some(&slot) = self.pending.front() {
            if !self.views.iter().any(PathView::usable) {
                let since = *self.no_path_since.get_or_insert_with(Instant::now);
                if since.elapsed() > NO_PATH_LIMIT {
                    return Err(self.no_path_error());
                }
                return Ok(());
            }
            self.pending.pop_front();
            self.dispatch(slot);
        }
        self.no_path_since = None;
        Ok(())
    }

    fn no_path_error(&self) -> io::Error {
        let paths: Vec<String> = self
            .paths
            .iter()
            .zip(&self.views)
            .map(|(p, v)| {
                let state = if v.connected {
                    v.ana.name()
                } else {
                    "not connected"
                };
                format!("{} ({state})", p.name)
            })
            .collect();
        io::Error::new(
            io::ErrorKind::NotConnected,
            format!(
                "NVMe/TCP multipath: no usable path for {} s to any of {}; {} I/Os waiting",
                NO_PATH_LIMIT.as_secs(),
                paths.join(", "),
                self.pending.len()
            ),
        )
    }

    /// Flushes and reads every connected path; true when bytes came in.
    fn pump(&mut self) -> bool {
        let mut got = false;
        for p in 0..self.paths.len() {
            let Some(conn) = self.paths[p].conn.as_mut() else {
                continue;
            };
            let r = conn.flush(&self.slots).and_then(|()| {
                let g = conn.receive(&mut self.slots)?;
                if conn.queue.wants_to_send() {
                    conn.flush(&self.slots)?;
                }
                Ok(g)
            });
            match r {
                Ok(true) => {
                    got = true;
                    self.paths[p].last_progress = Instant::now();
                }
                Ok(false) => {}
                Err(e) => self.lose(p, e),
            }
        }
        got
    }

    /// Moves the paths' completions into `out` from `n`; I/Os answered
    /// with a path status go back to pending.
    fn collect(&mut self, out: &mut [Completion], mut n: usize) -> io::Result<usize> {
        for p in 0..self.paths.len() {
            while n < out.len() {
                let Some(c) = self.paths[p]
                    .conn
                    .as_mut()
                    .and_then(|c| c.queue.completion())
                else {
                    break;
                };
                if let Some(done) = self.complete(p, c)? {
                    out[n] = done;
                    n += 1;
                }
            }
        }
        Ok(n)
    }

    fn complete(&mut self, p: usize, c: HostCompletion) -> io::Result<Option<Completion>> {
        let slot = c.cqe.cid;
        self.slot_path[slot as usize] = NO_PATH;
        self.views[p].in_flight -= 1;
        let st = c.cqe.status();
        if is_path_error(st) {
            if let Some(state) = ana_state_of(st) {
                self.set_ana(p, state);
            }
            self.paths[p].ctl.reread.store(true, Ordering::Relaxed);
            self.retry[slot as usize] = true;
            self.pending.push_back(slot);
            return Ok(None);
        }
        let s = self.slots.0[slot as usize];
        let result = if !st.is_success() {
            crate::backend::nvme_error_result(st.field())
        } else if s.dir == Dir::Read && c.data_bytes != s.len_bytes {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "NVMe/TCP: read cid {slot} completed on {} with {} of {} bytes",
                    self.paths[p].name, c.data_bytes, s.len_bytes
                ),
            ));
        } else {
            let counts = &mut self.paths[p].counts;
            counts.ios += 1;
            counts.bytes += u64::from(s.len_bytes);
            s.len_bytes as i32
        };
        Ok(Some(Completion {
            slot: u32::from(slot),
            result,
        }))
    }

    /// Waits up to [`WAIT_SLICE`] for a path's socket or a path event;
    /// loses a path silent for [`IO_TIMEOUT`] with I/Os in flight.
    fn wait(&mut self) -> io::Result<()> {
        let buffered = self
            .paths
            .iter()
            .any(|p| p.conn.as_ref().is_some_and(|c| c.stream.buffered()));
        if buffered {
            // TLS decrypted more than a queue took: no need to poll.
            return Ok(());
        }
        let mut fds = [libc::pollfd {
            fd: -1,
            events: 0,
            revents: 0,
        }; super::portals::MAX_PORTALS];
        let mut any = false;
        for (p, f) in self.paths.iter().zip(fds.iter_mut()) {
            if let Some(c) = &p.conn {
                any = true;
                f.fd = c.stream.as_raw_fd();
                f.events = libc::POLLIN
                    | if c.queue.wants_to_send() {
                        libc::POLLOUT
                    } else {
                        0
                    };
            }
        }
        if !any {
            match self.events.recv_timeout(WAIT_SLICE) {
                Ok((p, ev)) => self.on_event(p, ev),
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => {
                    return Err(io::Error::other(
                        "NVMe/TCP multipath: every path's thread ended",
                    ))
                }
            }
            return Ok(());
        }
        let n = self.paths.len();
        // SAFETY: `n` valid pollfds on the stack for the duration of the
        // call (fd -1 entries are ignored by poll).
        let rc = unsafe {
            libc::poll(
                fds.as_mut_ptr(),
                n as libc::nfds_t,
                WAIT_SLICE.as_millis() as i32,
            )
        };
        if rc < 0 {
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::Interrupted {
                return Err(e);
            }
        }
        for p in 0..n {
            if self.views[p].in_flight > 0
                && self.paths[p].conn.is_some()
                && self.paths[p].last_progress.elapsed() > IO_TIMEOUT
            {
                self.lose(p, "no reply");
            }
        }
        Ok(())
    }

    /// The counts as they stand.
    fn counts(&self) -> MultipathResult {
        MultipathResult {
            policy: self.selector.policy().name().into(),
            paths: self
                .paths
                .iter()
                .zip(&self.views)
                .map(|(p, v)| {
                    let mut state = String::with_capacity(STATE_NAME_MAX_BYTES);
                    state.push_str(state_name(v));
                    PathResult {
                        state,
                        ..p.counts.clone()
                    }
                })
                .collect(),
        }
    }

    /// Writes the counts into the report allocated at connect, in place.
    fn publish(&self) {
        let Ok(mut g) = self.report.lock() else {
            return;
        };
        let Some(r) = g.as_mut() else {
            return;
        };
        for ((out, p), v) in r.paths.iter_mut().zip(&self.paths).zip(&self.views) {
            out.state.clear();
            out.state.push_str(state_name(v));
            let c = &p.counts;
            out.ios = c.ios;
            out.bytes = c.bytes;
            out.retries = c.retries;
            out.failovers = c.failovers;
            out.reconnects = c.reconnects;
            out.state_changes = c.state_changes;
        }
    }
}

/// Room for the longest state name (`non-optimized`, `persistent-loss`).
const STATE_NAME_MAX_BYTES: usize = 16;

/// A path's state as the report names it.
fn state_name(v: &PathView) -> &'static str {
    if v.connected {
        v.ana.name()
    } else {
        "down"
    }
}

/// The paths, their views and where their threads report.
type Connected = (Vec<PathRt>, Vec<PathView>, Receiver<(usize, PathEvent)>);

/// Connects every portal of `t` and starts each path's thread.
fn connect_paths(t: &NvmeTcp, io: &nvmf::InitiatorOptions) -> Result<Connected, SetupError> {
    let (tx, events) = mpsc::channel();
    let mut paths = Vec::with_capacity(t.portals.len());
    let mut views = Vec::with_capacity(t.portals.len());
    for (index, portal) in t.portals.iter().enumerate() {
        let params = PathParams {
            index,
            portal: portal.clone(),
            nsid: t.url.nsid,
            io: io.clone(),
        };
        let (admin, conn, ana) = path::connect(&params)?;
        let ctl = Arc::new(PathCtl::default());
        path::spawn(params, admin, 1, ctl.clone(), tx.clone())
            .map_err(|source| SetupError::PathThread { index, source })?;
        views.push(PathView {
            connected: true,
            ana,
            in_flight: 0,
            node: conn.node,
        });
        let name = portal_name(&portal.url);
        paths.push(PathRt {
            counts: PathResult {
                portal: name.clone(),
                state: ana.name().into(),
                ..PathResult::default()
            },
            name,
            conn: Some(conn),
            gen: 1,
            ctl,
            last_progress: Instant::now(),
        });
    }
    Ok((paths, views, events))
}

/// Tells the user of a path's change on stderr, as the kernel logs its
/// own (`nvme nvme1: ANA group 1: inaccessible`): rare, never per I/O.
fn say(what: &str) {
    eprintln!("numio: multipath: {what}");
}

impl Backend for MultipathBackend {
    unsafe fn queue(&mut self, io: IoRequest) {
        let slot = io.slot as usize;
        debug_assert_eq!(self.slot_path[slot], NO_PATH, "slot queued twice");
        self.reqs[slot] = io;
        self.slots.0[slot] = Slot {
            buf: io.buf,
            len_bytes: io.len_bytes,
            dir: io.dir,
        };
        self.retry[slot] = false;
        self.dispatch(slot as u16);
    }

    fn submit(&mut self) -> io::Result<()> {
        for p in 0..self.paths.len() {
            if let Some(conn) = self.paths[p].conn.as_mut() {
                if let Err(e) = conn.flush(&self.slots) {
                    self.lose(p, e);
                }
            }
        }
        Ok(())
    }

    fn reap(&mut self, out: &mut [Completion], min: usize) -> io::Result<usize> {
        let mut n = 0;
        loop {
            self.take_events();
            self.dispatch_pending()?;
            let got = self.pump();
            n = self.collect(out, n)?;
            if n >= min.max(1) || n == out.len() || (min == 0 && !got) {
                return Ok(n);
            }
            if !got {
                self.wait()?;
            }
        }
    }
}

impl Drop for MultipathBackend {
    fn drop(&mut self) {
        for p in &self.paths {
            p.ctl.stop.store(true, Ordering::Relaxed);
        }
        self.publish();
    }
}
