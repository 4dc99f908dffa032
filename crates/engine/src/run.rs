//! Running a [`Placement`]: inspect and check every target, start one pinned
//! worker per job, report progress while they run, merge their statistics.

use std::collections::BTreeMap;
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier};

use planner::{MemPolicy, Placement, TargetPlacement};
use topology::CpuId;

use crate::backend::tcp::NvmeTcp;
use crate::backend::{
    Backend, BackendKind, NullBackend, NvmeNamespace, PassthruBackend, SyncBackend, TcpBackend,
    TcpOptions, UringBackend, UringOptions, UringSetup,
};
use crate::env;
use crate::error::EngineError;
use crate::gen::{IoGen, Rng};
use crate::progress::{snapshot, ProgressSnapshot, WorkerProgress};
use crate::stats::{Dir, WorkerStats};
use crate::sys::{self, NodeBuffer};
use crate::target::{self, Region, TargetInfo};
use crate::worker::{LoopConfig, LoopLimits, LoopOutput, WorkerLoop};
use results::{
    CpuUsage, Environment, RunResult, TargetResult, TaskrunTrial, WorkerResult,
    RESULT_SCHEMA_VERSION,
};

/// Percentiles reported when none are asked for.
pub const DEFAULT_PERCENTILES: [f64; 7] = [1.0, 10.0, 50.0, 90.0, 99.0, 99.9, 99.99];
/// Seed of the verify pattern (shared by every run so a later run can check
/// what an earlier one wrote).
pub const VERIFY_SEED: u64 = 0x6e75_6d69_6f76_6572;

/// When to use IOPOLL.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum IoPoll {
    /// Where the block device has poll queues (`queue/io_poll` = 1).
    #[default]
    Auto,
    /// Always (fails on devices without poll queues).
    On,
    /// Never.
    Off,
}

/// How to run a placement.
#[derive(Debug, Clone, PartialEq)]
pub struct RunOptions {
    /// Backend of every worker.
    pub backend: BackendKind,
    /// io_uring set-up (uring and nop backends).
    pub uring: UringOptions,
    /// IOPOLL choice (overrides `uring.iopoll`).
    pub iopoll: IoPoll,
    /// Percentiles to report, each in (0, 100].
    pub percentiles: Vec<f64>,
    /// Write a verifiable pattern and check it on every read.
    pub verify: bool,
    /// Allow writes to block devices holding data.
    pub force_write: bool,
    /// Completions to wait for per reap (`None`: depth/4, 1..=32).
    pub batch_complete_min: Option<usize>,
    /// Labels shown for some targets, by path (e.g. the default target).
    pub labels: BTreeMap<String, String>,
    /// NVMe/TCP connection options (tcp backend).
    pub tcp: TcpOptions,
}

impl Default for RunOptions {
    fn default() -> Self {
        RunOptions {
            backend: BackendKind::Uring,
            uring: UringOptions::default(),
            iopoll: IoPoll::Auto,
            percentiles: DEFAULT_PERCENTILES.to_vec(),
            verify: false,
            force_write: false,
            batch_complete_min: None,
            labels: BTreeMap::new(),
            tcp: TcpOptions::default(),
        }
    }
}

/// Everything one worker needs, decided before it starts.
#[derive(Debug, Clone)]
struct JobSpec {
    target: usize,
    job: u32,
    path: String,
    cpus: Vec<u32>,
    node: Option<u32>,
    workload: planner::Workload,
    region: Region,
    uring: UringOptions,
    kind: BackendKind,
    verify: bool,
    limits: LoopLimits,
    /// Namespace of an NVMe generic device target (passthru).
    nvme: Option<NvmeNamespace>,
    /// NVMe/TCP namespace, its LBA size and the connection options (tcp).
    tcp: Option<(NvmeTcp, u32, TcpOptions)>,
}

/// What a worker hands back.
#[derive(Debug)]
struct JobOutput {
    out: LoopOutput,
    buffer_node: Option<u32>,
    features: Vec<String>,
    notes: Vec<String>,
    /// The task-run trial of this job, when one ran.
    trial: Option<TaskrunTrial>,
}

struct Control {
    start: Barrier,
    abort: AtomicBool,
    stop: AtomicBool,
}

/// How often the calling thread looks at the workers and the interrupt flag.
const WATCH_TICK: std::time::Duration = std::time::Duration::from_millis(50);
/// Ticks between two progress callbacks (200 ms).
const PROGRESS_EVERY_TICKS: u32 = 4;

/// Checks every target of `placement` and runs it. `on_progress` is called
/// from the calling thread: first once as every worker passes the start
/// barrier (set-up and any task-run trial done, `elapsed_ns` 0; not when
/// set-up failed), then about five times a second while workers run.
pub fn run(
    placement: &Placement,
    opts: &RunOptions,
    on_progress: &mut dyn FnMut(&ProgressSnapshot),
) -> Result<RunResult, EngineError> {
    run_until(placement, opts, &AtomicBool::new(false), on_progress)
}

/// As [`run`], and stops early once `interrupt` is set (e.g. by a signal
/// handler): within one watch tick (50 ms) the workers stop issuing, drain
/// what is in flight and hand back what they measured; the result covers the
/// time actually measured and has `interrupted` set.
pub fn run_until(
    placement: &Placement,
    opts: &RunOptions,
    interrupt: &AtomicBool,
    on_progress: &mut dyn FnMut(&ProgressSnapshot),
) -> Result<RunResult, EngineError> {
    let started_unix_s = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let infos = check_targets(placement, opts)?;
    let specs = job_specs(placement, &infos, opts)?;
    let planned_ns = placement
        .targets
        .iter()
        .map(|t| t.workload.runtime_ns.map(|r| r + t.workload.ramp_time_ns))
        .try_fold(0u64, |m, r| r.map(|r| m.max(r)));
    let ctl = Arc::new(Control {
        start: Barrier::new(specs.len() + 1),
        abort: AtomicBool::new(false),
        stop: AtomicBool::new(false),
    });
    let progress: Vec<Arc<WorkerProgress>> = specs
        .iter()
        .map(|_| Arc::new(WorkerProgress::default()))
        .collect();
    let handles = spawn_workers(&specs, &ctl, &progress)?;
    ctl.start.wait();
    let t0 = sys::now_ns();
    let process0 = sys::process_usage();
    if !ctl.abort.load(Ordering::Relaxed) {
        // Every worker passed the start barrier: set-up and any task-run
        // trial are done. Callers wait for this call, not for a clock.
        on_progress(&snapshot(&progress, 0, planned_ns));
    }
    let mut interrupted = false;
    let mut interrupted_in_ramp = false;
    let ramp_ns = placement
        .targets
        .iter()
        .map(|t| t.workload.ramp_time_ns)
        .max()
        .unwrap_or(0);
    let mut tick = 0u32;
    while !ctl.abort.load(Ordering::Relaxed) && progress.iter().any(|p| !p.is_finished()) {
        if !interrupted && interrupt.load(Ordering::Relaxed) {
            interrupted = true;
            interrupted_in_ramp = sys::now_ns() - t0 < ramp_ns;
            ctl.stop.store(true, Ordering::Relaxed);
        }
        std::thread::sleep(WATCH_TICK);
        tick += 1;
        if tick % PROGRESS_EVERY_TICKS == 0 {
            on_progress(&snapshot(&progress, sys::now_ns() - t0, planned_ns));
        }
    }
    let outputs = join_workers(handles, &specs)?;
    let process = sys::delta(&sys::process_usage(), &process0, sys::now_ns() - t0);
    let mut result = merge(placement, opts, &infos, &specs, outputs, started_unix_s);
    result.process_cpu_usage = process;
    result.interrupted = interrupted;
    if interrupted_in_ramp {
        result.environment.notes.push(
            "interrupted during the ramp (warm-up): the numbers are warm-up I/O over the time the workers ran".into(),
        );
    }
    Ok(result)
}

type WorkerHandle = std::thread::JoinHandle<Result<JobOutput, EngineError>>;

fn spawn_workers(
    specs: &[JobSpec],
    ctl: &Arc<Control>,
    progress: &[Arc<WorkerProgress>],
) -> Result<Vec<WorkerHandle>, EngineError> {
    let mut handles = Vec::with_capacity(specs.len());
    for (spec, p) in specs.iter().zip(progress) {
        let (spec, ctl, p) = (spec.clone(), Arc::clone(ctl), Arc::clone(p));
        let name = format!("numio-w{}.{}", spec.target, spec.job);
        let (path, job) = (spec.path.clone(), spec.job);
        let h = std::thread::Builder::new()
            .name(name)
            .spawn(move || worker_main(&spec, &ctl, &p))
            .map_err(|e| EngineError::Worker {
                path,
                job,
                reason: format!("cannot spawn a thread: {e}"),
            })?;
        handles.push(h);
    }
    Ok(handles)
}

/// Joins every worker; the first real error wins over "aborted".
fn join_workers(
    handles: Vec<WorkerHandle>,
    specs: &[JobSpec],
) -> Result<Vec<JobOutput>, EngineError> {
    let mut outputs = Vec::with_capacity(handles.len());
    let mut first_err = None;
    for (h, spec) in handles.into_iter().zip(specs) {
        let r = h.join().unwrap_or_else(|_| {
            Err(EngineError::Worker {
                path: spec.path.clone(),
                job: spec.job,
                reason: "the worker panicked".into(),
            })
        });
        match r {
            Ok(o) => outputs.push(o),
            Err(EngineError::Aborted) => {}
            Err(e) => {
                first_err.get_or_insert(e);
            }
        }
    }
    if let Some(e) = first_err {
        return Err(e);
    }
    if outputs.len() != specs.len() {
        return Err(EngineError::Aborted);
    }
    Ok(outputs)
}

fn check_targets(
    placement: &Placement,
    opts: &RunOptions,
) -> Result<Vec<(TargetInfo, Region)>, EngineError> {
    if placement.targets.is_empty() {
        return Err(EngineError::Workload {
            path: "(none)".into(),
            reason: "the placement has no targets; name a file or block device".into(),
        });
    }
    let mut out = Vec::new();
    for t in &placement.targets {
        let info = if crate::backend::tcp::is_tcp_target(&t.path) {
            target::inspect_tcp(&t.path, &opts.tcp)?
        } else {
            target::inspect(&t.path)?
        };
        let region = target::validate(&t.workload, &info)?;
        if t.jobs.is_empty() {
            return Err(EngineError::Workload {
                path: t.path.clone(),
                reason: "no jobs were placed on this target; use --jobs 1 or more".into(),
            });
        }
        let kind = match &t.backend {
            Some(name) => name.parse::<BackendKind>()?,
            None => opts.backend,
        };
        target::check_backend(&info, kind)?;
        if t.workload.rw.writes() && kind.touches_data() && !opts.force_write {
            target::check_write_safety(&info)?;
        }
        out.push((info, region));
    }
    Ok(out)
}

fn job_specs(
    placement: &Placement,
    infos: &[(TargetInfo, Region)],
    opts: &RunOptions,
) -> Result<Vec<JobSpec>, EngineError> {
    let mut specs = Vec::new();
    for (ti, (t, (info, region))) in placement.targets.iter().zip(infos).enumerate() {
        let w = &t.workload;
        let kind = match &t.backend {
            Some(name) => name.parse::<BackendKind>()?,
            None => opts.backend,
        };
        let uring = target_uring(t, info, opts, kind)?;
        let depth = w.iodepth as usize;
        let limits = LoopLimits {
            ramp_ns: w.ramp_time_ns,
            runtime_ns: w.runtime_ns,
            max_ios: w.number_ios.unwrap_or(u64::MAX),
            max_bytes: if w.time_based {
                u64::MAX
            } else {
                region.len_bytes
            },
            rate_iops: w.rate_iops,
            batch_complete_min: opts
                .batch_complete_min
                .unwrap_or((depth / 4).clamp(1, 32))
                .clamp(1, depth),
        };
        for (j, job) in t.jobs.iter().enumerate() {
            specs.push(JobSpec {
                target: ti,
                job: j as u32,
                path: t.path.clone(),
                cpus: job.cpus.iter().map(|c| c.0).collect(),
                node: job_node(job, t),
                workload: w.clone(),
                region: *region,
                uring: uring.clone(),
                kind,
                verify: opts.verify,
                limits,
                nvme: info.nvme_namespace(),
                tcp: info
                    .nvme_tcp
                    .clone()
                    .map(|t| (t, info.logical_block_size_bytes, opts.tcp.clone())),
            });
        }
    }
    Ok(specs)
}

/// SQPOLL idle time when a job file asks for `sqthread_poll` without one.
const DEFAULT_SQPOLL_IDLE_MS: u32 = 1000;

/// The io_uring set-up of target `t`: the run's options, where its job file
/// sets them overridden by `fixedbufs`, `registerfiles`, `sqthread_poll` and
/// `hipri` (so jobs of one run may differ), and IOPOLL decided against the
/// device: `auto` where it has poll queues and the target is O_DIRECT.
fn target_uring(
    t: &TargetPlacement,
    info: &TargetInfo,
    opts: &RunOptions,
    kind: BackendKind,
) -> Result<UringOptions, EngineError> {
    let o = &t.options;
    let mut uring = opts.uring.clone();
    if let Some(v) = o.fixedbufs {
        uring.fixed_buffers = v;
    }
    if let Some(v) = o.registerfiles {
        uring.registered_files = v;
    }
    match o.sqthread_poll {
        Some(true) if uring.sqpoll_idle_ms.is_none() => {
            uring.sqpoll_idle_ms = Some(DEFAULT_SQPOLL_IDLE_MS)
        }
        Some(false) => uring.sqpoll_idle_ms = None,
        _ => {}
    }
    let iopoll = match o.hipri {
        Some(true) => IoPoll::On,
        Some(false) => IoPoll::Off,
        None => opts.iopoll,
    };
    uring.iopoll = match iopoll {
        IoPoll::Off => false,
        IoPoll::Auto => info.io_poll == Some(true) && t.workload.direct,
        IoPoll::On => {
            if kind == BackendKind::Uring {
                target::check_pollable(info, t.workload.direct)?;
            }
            true
        }
    };
    Ok(uring)
}

/// The first CPU of a job (its buffers' node comes from it).
fn job_cpu(cpus: &[CpuId]) -> Option<u32> {
    cpus.first().map(|c| c.0)
}

fn job_node(job: &planner::JobPlacement, t: &TargetPlacement) -> Option<u32> {
    match &job.mem {
        MemPolicy::Default => None,
        MemPolicy::Bind(nodes) => nodes.first().map(|n| n.0),
        MemPolicy::Local => job_cpu(&job.cpus)
            .and_then(|c| {
                let root = std::path::Path::new(target::SYS_ROOT);
                topology::host::cpu_node(root, CpuId(c)).ok().flatten()
            })
            .map(|n| n.0)
            .or(t.node.map(|n| n.0)),
    }
}

fn worker_main(
    spec: &JobSpec,
    ctl: &Control,
    progress: &WorkerProgress,
) -> Result<JobOutput, EngineError> {
    let r = worker_setup_and_run(spec, ctl, progress);
    if r.is_err() {
        ctl.abort.store(true, Ordering::Relaxed);
        ctl.stop.store(true, Ordering::Relaxed);
    }
    progress.finish();
    r
}

/// The start barrier, passed exactly once: on the normal path right before
/// the loop, or on drop when set-up failed (which also aborts the run).
struct StartGate<'a> {
    ctl: &'a Control,
    passed: bool,
}

impl StartGate<'_> {
    fn pass(&mut self) -> bool {
        self.passed = true;
        self.ctl.start.wait();
        !self.ctl.abort.load(Ordering::Relaxed)
    }
}

impl Drop for StartGate<'_> {
    fn drop(&mut self) {
        if !self.passed {
            self.ctl.abort.store(true, Ordering::Relaxed);
            self.ctl.start.wait();
        }
    }
}

/// The worker's resources, owned for the whole loop.
struct Resources<'a> {
    spec: &'a JobSpec,
    buf: &'a NodeBuffer,
    slot_bytes: usize,
    ctl: &'a Control,
    progress: &'a WorkerProgress,
}

impl<'a> Resources<'a> {
    /// This worker's loop over backend `b`, running workload `w` (the job's,
    /// or a trial's) within `limits`, publishing to `progress`.
    fn worker_loop<'p, B: Backend>(
        &self,
        b: B,
        w: &planner::Workload,
        verify_seed: Option<u64>,
        limits: LoopLimits,
        progress: &'p WorkerProgress,
    ) -> WorkerLoop<'p, B>
    where
        'a: 'p,
    {
        let spec = self.spec;
        let gen = IoGen::new(
            w,
            spec.region.start_bytes,
            spec.region.len_bytes,
            spec.region.align_bytes,
            spec.job,
        );
        let config = LoopConfig {
            depth: w.iodepth as usize,
            buf_base: self.buf.as_ptr(),
            slot_bytes: self.slot_bytes,
            verify_seed,
            limits,
            stop: &self.ctl.stop,
            progress,
        };
        WorkerLoop::new(b, gen, config)
    }

    /// A failure of this worker's backend (`what`: its set-up or loop).
    fn backend_error(&self, what: &str, source: std::io::Error) -> EngineError {
        EngineError::Backend {
            backend: self.spec.kind.name(),
            path: self.spec.path.clone(),
            what: what.into(),
            source,
        }
    }
}

fn worker_setup_and_run(
    spec: &JobSpec,
    ctl: &Control,
    progress: &WorkerProgress,
) -> Result<JobOutput, EngineError> {
    let mut gate = StartGate { ctl, passed: false };
    let mut notes = Vec::new();
    if !spec.cpus.is_empty() {
        if let Err(e) = sysapi::affinity::pin_current_thread(&spec.cpus) {
            notes.push(format!(
                "job {} of {}: pinning to CPUs {:?} failed ({e}); unpinned",
                spec.job, spec.path, spec.cpus
            ));
        }
    }
    let w = &spec.workload;
    // An NVMe/TCP target is a connection, not a file.
    let file = match spec.kind {
        BackendKind::Tcp => None,
        _ => Some(target::open(&spec.path, w.rw.writes(), w.direct)?),
    };
    let fd = file.as_ref().map_or(-1, |f| f.as_raw_fd());
    let slot_bytes = (w.bs_max_bytes as usize).div_ceil(4096) * 4096;
    let depth = w.iodepth as usize;
    let (buf, note) =
        NodeBuffer::new(slot_bytes * depth, spec.node).map_err(|source| EngineError::Buffers {
            bytes: slot_bytes * depth,
            source,
        })?;
    notes.extend(note);
    if !spec.verify {
        fill_random(&buf, w.randseed ^ u64::from(spec.job));
    }
    let res = Resources {
        spec,
        buf: &buf,
        slot_bytes,
        ctl,
        progress,
    };
    let mut trial = None;
    let (out, features) = match spec.kind {
        BackendKind::Null => (
            run_generic(NullBackend::new(depth), &res, &mut gate)?,
            Vec::new(),
        ),
        BackendKind::Sync => (
            run_generic(SyncBackend::new(fd, depth), &res, &mut gate)?,
            Vec::new(),
        ),
        BackendKind::Uring | BackendKind::Nop => {
            let region = (buf.as_ptr(), buf.len_bytes());
            let mut uring = spec.uring.clone();
            if taskrun_trial_applies(spec) {
                if let Some(t) = taskrun_trial(fd, region, &res)? {
                    uring.setup = t.chosen;
                    notes.push(format!(
                        "job {} of {}: io_uring task-run mode {}, chosen by a {} ms trial \
                         (DEFER_TASKRUN {:.0} IOPS, COOP_TASKRUN {:.0} IOPS); \
                         --uring-setup defer or coop fixes it",
                        spec.job,
                        spec.path,
                        t.chosen.taskrun_flag().unwrap_or("?"),
                        t.trial_ns / 1_000_000,
                        t.defer_taskrun_iops,
                        t.coop_taskrun_iops
                    ));
                    trial = Some(t);
                }
            }
            let b = UringBackend::new(
                fd,
                depth as u32,
                region,
                &uring,
                spec.kind == BackendKind::Nop,
            )
            .map_err(|e| res.backend_error("io_uring set-up", e))?;
            let features = b.features.clone();
            notes.extend(b.notes.iter().cloned());
            (run_generic(b, &res, &mut gate)?, features)
        }
        BackendKind::Passthru => {
            let region = (buf.as_ptr(), buf.len_bytes());
            let ns = spec.nvme.ok_or_else(|| EngineError::Workload {
                path: spec.path.clone(),
                reason: "not an NVMe generic device; use /dev/ngXnY".into(),
            })?;
            let b =
                PassthruBackend::start(fd, ns, depth as u32, region, &spec.uring).map_err(|e| {
                    res.backend_error(
                        "NVMe passthrough set-up (io_uring SQE128+CQE32, one read of LBA 0)",
                        e,
                    )
                })?;
            let features = b.features.clone();
            notes.extend(b.notes.iter().cloned());
            (run_generic(b, &res, &mut gate)?, features)
        }
        BackendKind::Tcp => {
            let (t, lba_bytes, o) = spec.tcp.as_ref().ok_or_else(|| EngineError::Workload {
                path: spec.path.clone(),
                reason: "not an NVMe/TCP target; give nvme-tcp://HOST[:PORT]/SUBNQN[/NSID]".into(),
            })?;
            let b = TcpBackend::connect(t, *lba_bytes, depth, slot_bytes, o).map_err(|reason| {
                EngineError::Workload {
                    path: spec.path.clone(),
                    reason: format!("tcp backend set-up: {reason}"),
                }
            })?;
            notes.push(b.note.clone());
            (run_generic(b, &res, &mut gate)?, Vec::new())
        }
    };
    // The backend (and its ring) is gone; now the file and buffers may go.
    drop(file);
    Ok(JobOutput {
        out,
        buffer_node: buf.node(),
        features,
        notes,
        trial,
    })
}

/// Length of one slice of the task-run trial; the trial runs four.
const TRIAL_SLICE_NS: u64 = 100_000_000;

/// Whether an `auto` io_uring set-up is settled by a trial
/// ([`taskrun_trial`]): I/O on a ring of our own (not NOP, SQPOLL or
/// IOPOLL, where task work does not decide the rate), no verify pattern
/// (the trial's writes would break it), no rate cap (the rates would tie),
/// only in a time-based run: a benchmark, where 0.4 s more of the same
/// I/O is what the user asked for anyway (a run bounded by size or I/O
/// count gets exactly those I/Os, and the usual fallback chain), and only
/// with O_DIRECT (buffered, the trial would warm the page cache for the
/// measured run).
fn taskrun_trial_applies(spec: &JobSpec) -> bool {
    let w = &spec.workload;
    spec.kind == BackendKind::Uring
        && spec.uring.setup == UringSetup::Auto
        && spec.uring.sqpoll_idle_ms.is_none()
        && !spec.uring.iopoll
        && !spec.verify
        && spec.limits.rate_iops.is_none()
        && w.time_based
        && w.direct
}

/// Settles an `auto` task-run set-up by measuring. Which of DEFER_TASKRUN
/// and COOP_TASKRUN serves a target faster depends on where its completions
/// come from, not on the kernel alone: reads punted to io-wq (zram) want
/// DEFER_TASKRUN, which wakes the waiter once per batch instead of once per
/// completion, while completions from a helper thread on the same CPU
/// (a loop device's kworker and ksoftirqd) ran up to a fifth faster with
/// COOP_TASKRUN on this project's test machine. So the worker runs its own
/// workload on each for four 100 ms slices (DEFER, COOP, COOP, DEFER, so a
/// drift cancels), keeps the faster, and says so in a note. Where the kernel
/// does not grant both, there is nothing to choose: `None`, and the usual
/// fallback chain decides.
fn taskrun_trial(
    fd: i32,
    region: (*mut u8, usize),
    r: &Resources<'_>,
) -> Result<Option<TaskrunTrial>, EngineError> {
    let spec = r.spec;
    let w = &spec.workload;
    let order = [
        UringSetup::DeferTaskrun,
        UringSetup::CoopTaskrun,
        UringSetup::CoopTaskrun,
        UringSetup::DeferTaskrun,
    ];
    let mut ops = [0u64; 2];
    let mut ns = [0u64; 2];
    for (slice, setup) in order.into_iter().enumerate() {
        // Each slice draws its own offsets, none of them the measured run's.
        let mut tw = w.clone();
        tw.randseed = w.randseed ^ 0x7472_6961_6c00_0000 ^ (slice as u64 + 1);
        let mut opts = spec.uring.clone();
        opts.setup = setup;
        let b = UringBackend::new(fd, w.iodepth, region, &opts, false)
            .map_err(|e| r.backend_error("io_uring set-up (task-run trial)", e))?;
        if !b
            .features
            .iter()
            .any(|f| Some(f.as_str()) == setup.taskrun_flag())
        {
            // The kernel refused one of the two: nothing to choose between.
            return Ok(None);
        }
        let limits = LoopLimits {
            ramp_ns: 0,
            runtime_ns: Some(TRIAL_SLICE_NS),
            max_ios: u64::MAX,
            max_bytes: u64::MAX,
            rate_iops: None,
            batch_complete_min: spec.limits.batch_complete_min,
        };
        let progress = WorkerProgress::default();
        let out = r
            .worker_loop(b, &tw, None, limits, &progress)
            .run()
            .map_err(|e| r.backend_error("I/O loop (task-run trial)", e))?;
        let i = usize::from(setup == UringSetup::CoopTaskrun);
        ops[i] += out.stats.ops[0] + out.stats.ops[1];
        ns[i] += out.runtime_ns;
    }
    let rate = |i: usize| ops[i] as f64 * 1e9 / ns[i].max(1) as f64;
    let (defer, coop) = (rate(0), rate(1));
    Ok(Some(TaskrunTrial {
        chosen: if coop > defer {
            UringSetup::CoopTaskrun
        } else {
            UringSetup::DeferTaskrun
        },
        defer_taskrun_iops: defer,
        coop_taskrun_iops: coop,
        trial_ns: order.len() as u64 * TRIAL_SLICE_NS,
    }))
}

/// Waits for every worker to be ready, then runs the loop on backend `b`.
fn run_generic<B: Backend>(
    b: B,
    r: &Resources<'_>,
    gate: &mut StartGate<'_>,
) -> Result<LoopOutput, EngineError> {
    let spec = r.spec;
    let wl = r.worker_loop(
        b,
        &spec.workload,
        spec.verify.then_some(VERIFY_SEED),
        spec.limits,
        r.progress,
    );
    if !gate.pass() {
        return Err(EngineError::Aborted);
    }
    wl.run().map_err(|e| r.backend_error("I/O loop", e))
}

/// Fills the buffers with incompressible bytes so written data is not all
/// zeroes (which zram and some SSDs would short-cut).
fn fill_random(buf: &NodeBuffer, seed: u64) {
    let mut rng = Rng::new(seed);
    // SAFETY: the buffer is ours and no I/O has been issued from it yet.
    let words =
        unsafe { std::slice::from_raw_parts_mut(buf.as_ptr().cast::<u64>(), buf.len_bytes() / 8) };
    for w in words {
        *w = rng.next_u64();
    }
}

/// Merges the workers of target `ti` and records what they saw in `env`.
fn merge_target(
    ti: usize,
    t: &TargetPlacement,
    opts: &RunOptions,
    specs: &[JobSpec],
    outputs: &[JobOutput],
    env: &mut Environment,
) -> (TargetResult, WorkerStats) {
    let pcts = &opts.percentiles;
    let mut stats = WorkerStats::new();
    let mut cpu = CpuUsage::default();
    let mut workers = Vec::new();
    let mut runtime_ns = 0;
    for (spec, o) in specs.iter().zip(outputs).filter(|(s, _)| s.target == ti) {
        stats.merge(&o.out.stats);
        cpu.add(&o.out.cpu_usage);
        runtime_ns = runtime_ns.max(o.out.runtime_ns);
        workers.push(WorkerResult {
            job: spec.job,
            cpu: spec.cpus.first().copied().map(CpuId),
            buffer_node: o.buffer_node.map(topology::NodeId),
            read_ops: o.out.stats.ops[0],
            write_ops: o.out.stats.ops[1],
            bytes: o.out.stats.bytes[0] + o.out.stats.bytes[1],
            error_count: o.out.stats.error_count(),
            cpu_usage: o.out.cpu_usage,
            taskrun_trial: o.trial.clone(),
        });
        push_new(&mut env.notes, o.notes.iter().cloned());
        push_new(&mut env.uring_features, o.features.iter().cloned());
        push_new(&mut env.cpus_used, spec.cpus.iter().copied().map(CpuId));
    }
    let result = TargetResult {
        path: t.path.clone(),
        label: opts.labels.get(&t.path).cloned(),
        node: t.node,
        workload: t.workload.clone(),
        runtime_ns,
        read: stats.io_stats(Some(Dir::Read), runtime_ns, pcts),
        write: stats.io_stats(Some(Dir::Write), runtime_ns, pcts),
        total: stats.io_stats(None, runtime_ns, pcts),
        cpu_usage: cpu,
        errors: stats.errno_counts(),
        workers,
        histograms: stats.raw_histograms(),
    };
    (result, stats)
}

fn push_new<T: PartialEq>(v: &mut Vec<T>, items: impl Iterator<Item = T>) {
    for i in items {
        if !v.contains(&i) {
            v.push(i);
        }
    }
}

fn merge(
    placement: &Placement,
    opts: &RunOptions,
    infos: &[(TargetInfo, Region)],
    specs: &[JobSpec],
    outputs: Vec<JobOutput>,
    started_unix_s: u64,
) -> RunResult {
    let pcts = &opts.percentiles;
    // Job files name each target's backend: one shared by all is the run's.
    let backend = match specs.first() {
        Some(s) if specs.iter().all(|t| t.kind == s.kind) => s.kind,
        _ => opts.backend,
    };
    let mut environment = env::capture(backend);
    environment.started_unix_s = started_unix_s;
    let mut all = WorkerStats::new();
    let mut targets = Vec::new();
    for (ti, t) in placement.targets.iter().enumerate() {
        let (tr, stats) = merge_target(ti, t, opts, specs, &outputs, &mut environment);
        environment
            .targets
            .push(infos[ti].0.environment(t.node, t.workload.direct));
        all.merge(&stats);
        targets.push(tr);
    }
    let run_ns = targets.iter().map(|t| t.runtime_ns).max().unwrap_or(0);
    let mut all_cpu = CpuUsage::default();
    for t in &targets {
        all_cpu.add(&t.cpu_usage);
    }
    environment.cpus_used.sort();
    RunResult {
        schema_version: RESULT_SCHEMA_VERSION,
        environment,
        policy: placement.policy.clone(),
        read: all.io_stats(Some(Dir::Read), run_ns, pcts),
        write: all.io_stats(Some(Dir::Write), run_ns, pcts),
        total: all.io_stats(None, run_ns, pcts),
        targets,
        cpu_usage: all_cpu,
        process_cpu_usage: CpuUsage::default(),
        errors: all.errno_counts(),
        runtime_ns: run_ns,
        interrupted: false,
    }
}
