//! The result model of a numio run: plain, serializable data.
//!
//! This is the public schema of `numio bench --json` ([`RESULT_SCHEMA_VERSION`]):
//! the engine produces it, `report` reads it (repeat statistics, comparison,
//! exporters) and `session` saves it. It lives in a crate of its own, below
//! both, so the pure report crate reads results without pulling in the
//! engine's runtime (io_uring, the NVMe/TCP host). It holds data and the few
//! derived values that need no more than the data (percentages, rates);
//! how the numbers are measured is the engine's business.
//!
//! Field names carry their unit last (`latency_ns`, `bytes_per_s`). Change
//! it additively, together with `docs/readme/bench.md`: saved results of
//! older versions must still load.
#![deny(missing_docs)]
#![forbid(unsafe_code)]

use serde::{Deserialize, Serialize};

mod counters;
pub mod histogram;
pub mod intervals;
mod multipath;

pub use counters::{CpuSplit, NodeCpu, PerIo, ProcessCounters, RunCounters, TargetCounters};
pub use intervals::{
    AnomalyKind, AnomalyRule, IntervalFlag, IntervalResult, PhaseIo, DEFAULT_INTERVAL_NS,
};
pub use multipath::{MultipathResult, PathResult};
pub mod verify;
pub use verify::{
    MismatchKind, MismatchRange, VerifyResult, VerifyStamp, MISMATCH_RANGES_MAX, VERIFY_BLOCK_BYTES,
};

use planner::{RwMode, Workload};
use topology::{CpuId, NodeId};

/// Version of the JSON schema of [`RunResult`]. Version 2 added the time
/// axis (`interval_ns`, `intervals`) and the I/O outside the measured time
/// (`setup_io`, `ramp_io`); version 1 results still load (without them).
pub const RESULT_SCHEMA_VERSION: u32 = 2;

/// One requested percentile and its value.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Percentile {
    /// The percentile, 0 < p ≤ 100 (e.g. `99.9`).
    pub percentile: f64,
    /// Latency at that percentile in nanoseconds.
    pub latency_ns: u64,
}

/// Summary of one latency histogram (HdrHistogram, 3 significant digits).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct LatencySummary {
    /// Number of recorded samples.
    pub samples: u64,
    /// Smallest sample in nanoseconds (0 when there are no samples).
    pub min_ns: u64,
    /// Largest sample in nanoseconds.
    pub max_ns: u64,
    /// Arithmetic mean in nanoseconds.
    pub mean_ns: f64,
    /// Population standard deviation in nanoseconds.
    pub stdev_ns: f64,
    /// The requested percentiles, ascending.
    pub percentiles: Vec<Percentile>,
}

impl LatencySummary {
    /// The value at percentile `p` when it was requested.
    pub fn at(&self, p: f64) -> Option<u64> {
        self.percentiles
            .iter()
            .find(|q| (q.percentile - p).abs() < 1e-9)
            .map(|q| q.latency_ns)
    }
}

/// The three latencies fio reports, for one direction or all.
///
/// * `slat`: submission latency, from the moment the I/O is prepared until the
///   submit call that carried it returned;
/// * `clat`: completion latency, from that return until the completion was reaped;
/// * `lat`: both together.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Latencies {
    /// Submission latency.
    pub slat: LatencySummary,
    /// Completion latency.
    pub clat: LatencySummary,
    /// Total latency.
    pub lat: LatencySummary,
}

/// Counts and rates of one direction (or of both together).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct IoStats {
    /// Completed I/Os (successful ones; errors are counted in `errors`).
    pub ops: u64,
    /// Bytes transferred by those I/Os.
    pub bytes: u64,
    /// `ops` per second of measured time.
    pub iops: f64,
    /// `bytes` per second of measured time.
    pub bandwidth_bytes_per_s: f64,
    /// Latency summaries.
    pub latency: Latencies,
}

/// I/O errors with one errno.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrnoCount {
    /// The errno (positive), e.g. 5 for EIO. [`VERIFY_ERRNO`] marks data that
    /// did not match the written pattern; codes from [`NVME_STATUS_BASE`] up
    /// are NVMe completion statuses (passthru backend).
    pub errno: i32,
    /// Its name, e.g. `EIO`.
    pub name: String,
    /// How many I/Os failed with it.
    pub count: u64,
}

/// The errno used for verify mismatches (EILSEQ).
pub const VERIFY_ERRNO: i32 = 84;

/// Codes from this one up (to `+ 0x7ff`) are NVMe completion statuses of the
/// passthru backend, not errnos: `errno - NVME_STATUS_BASE` is the status
/// code type and status code, `SCT << 8 | SC` (e.g. `0x10281`: media error,
/// unrecovered read error). Far above every errno (< 4096).
pub const NVME_STATUS_BASE: i32 = 0x1_0000;

/// CPU time and scheduling of one worker thread (or a sum of them).
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct CpuUsage {
    /// Wall time the numbers cover, in nanoseconds.
    pub wall_ns: u64,
    /// User CPU time in nanoseconds (getrusage RUSAGE_THREAD).
    pub user_ns: u64,
    /// System CPU time in nanoseconds.
    pub system_ns: u64,
    /// Voluntary context switches.
    pub voluntary_ctx_switches: u64,
    /// Involuntary context switches.
    pub involuntary_ctx_switches: u64,
    /// Of the CPU time, nanoseconds spent polling an empty completion
    /// queue (busy waiting for the device): backends that poll instead of
    /// sleeping (numio's own NVMe driver) count it, as SPDK counts its
    /// reactors' idle polls; 0 for the others.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub idle_poll_ns: u64,
}

fn is_zero(v: &u64) -> bool {
    *v == 0
}

impl CpuUsage {
    /// User time as a percentage of wall time.
    pub fn user_percent(&self) -> f64 {
        percent(self.user_ns, self.wall_ns)
    }
    /// System time as a percentage of wall time.
    pub fn system_percent(&self) -> f64 {
        percent(self.system_ns, self.wall_ns)
    }
    /// Adds another worker's usage (wall times add up too: CPU-seconds available).
    pub fn add(&mut self, other: &CpuUsage) {
        self.wall_ns += other.wall_ns;
        self.user_ns += other.user_ns;
        self.system_ns += other.system_ns;
        self.voluntary_ctx_switches += other.voluntary_ctx_switches;
        self.involuntary_ctx_switches += other.involuntary_ctx_switches;
        self.idle_poll_ns += other.idle_poll_ns;
    }
}

fn percent(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 * 100.0 / whole as f64
    }
}

/// One worker (one job) of one target.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkerResult {
    /// Job index within its target.
    pub job: u32,
    /// CPU the worker was pinned to (`None`: not pinned).
    pub cpu: Option<CpuId>,
    /// Node its buffers were bound to (`None`: default policy).
    pub buffer_node: Option<NodeId>,
    /// Successful reads.
    pub read_ops: u64,
    /// Successful writes.
    pub write_ops: u64,
    /// Bytes moved.
    pub bytes: u64,
    /// Failed I/Os.
    pub error_count: u64,
    /// CPU usage over the measured period.
    pub cpu_usage: CpuUsage,
    /// The task-run trial that chose this job's io_uring set-up (`auto`
    /// set-up, time-based O_DIRECT uring runs); `None` where none ran.
    #[serde(default)]
    pub taskrun_trial: Option<TaskrunTrial>,
    /// The I/O of the ramp (warm-up) before the measured time, counted
    /// apart; `None` without a ramp.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ramp: Option<PhaseIo>,
}

/// What a task-run trial measured and kept (the engine's `run::trial`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskrunTrial {
    /// The mode kept for the measured run: `defer_taskrun` or `coop_taskrun`.
    pub chosen: UringSetup,
    /// I/Os per second the job's workload reached under each.
    pub defer_taskrun_iops: f64,
    /// Likewise under COOP_TASKRUN.
    pub coop_taskrun_iops: f64,
    /// Length of the whole trial (both modes), in nanoseconds.
    pub trial_ns: u64,
    /// The I/O the trial issued (set-up I/O, never measured); zero in
    /// results saved before it was counted.
    #[serde(default)]
    pub io: PhaseIo,
}

/// How completions are run on the submitting task: the io_uring task-run
/// mode asked for (`--uring-setup`) or kept by a task-run trial.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum UringSetup {
    /// The best the kernel grants: DEFER_TASKRUN, else COOP_TASKRUN, else
    /// plain; in a time-based O_DIRECT run, the faster of the first two by
    /// a trial ([`TaskrunTrial`]).
    #[default]
    Auto,
    /// SINGLE_ISSUER + DEFER_TASKRUN (falls back like `Auto` when refused).
    DeferTaskrun,
    /// COOP_TASKRUN + TASKRUN_FLAG (falls back to plain when refused).
    CoopTaskrun,
    /// No task-run flags: what tools without them (fio 3.33) get.
    Plain,
}

impl UringSetup {
    /// The io_uring set-up flag that names this mode, as `uring_features`
    /// lists it (`None` for `Auto` and `Plain`).
    pub fn taskrun_flag(self) -> Option<&'static str> {
        match self {
            UringSetup::DeferTaskrun => Some("DEFER_TASKRUN"),
            UringSetup::CoopTaskrun => Some("COOP_TASKRUN"),
            UringSetup::Auto | UringSetup::Plain => None,
        }
    }
}

/// Serialized raw histograms (HdrHistogram V2 + deflate, hex encoded), so that
/// repeats and workers can be merged exactly later.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct RawHistograms {
    /// Completion latency of all I/Os.
    pub clat_hex: String,
    /// Total latency of all I/Os.
    pub lat_hex: String,
    /// The reads' own histograms; `None` without reads (or in a result
    /// saved before they were kept). With `write`, what a merge across
    /// hosts needs for per-direction and submission percentiles.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read: Option<DirHistogramsHex>,
    /// The writes' own histograms; `None` without writes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub write: Option<DirHistogramsHex>,
}

/// One direction's serialized histograms (as [`RawHistograms`]'s).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct DirHistogramsHex {
    /// Submission latency.
    pub slat_hex: String,
    /// Completion latency.
    pub clat_hex: String,
    /// Total latency.
    pub lat_hex: String,
}

/// Everything measured on one target.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TargetResult {
    /// Path of the file or block device.
    pub path: String,
    /// A label shown to the user (e.g. "default target: 1 GiB file under $TMPDIR").
    pub label: Option<String>,
    /// NUMA node of the target, when known.
    pub node: Option<NodeId>,
    /// The workload every job ran.
    pub workload: Workload,
    /// Measured time in nanoseconds (longest worker, ramp excluded).
    pub runtime_ns: u64,
    /// Reads.
    pub read: IoStats,
    /// Writes.
    pub write: IoStats,
    /// Reads and writes together.
    pub total: IoStats,
    /// Sum of the workers' CPU usage.
    pub cpu_usage: CpuUsage,
    /// Errors by errno, most frequent first.
    pub errors: Vec<ErrnoCount>,
    /// The workers.
    pub workers: Vec<WorkerResult>,
    /// Raw histograms of `total`.
    pub histograms: RawHistograms,
    /// What `--verify` found (absent without it, and in older results).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verify: Option<VerifyResult>,
    /// The paths of a multipath NVMe/TCP target (absent for one portal,
    /// and in older results).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub multipath: Option<MultipathResult>,
    /// The measured time, interval by interval (`intervals`); empty in
    /// results saved before they were kept.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub intervals: Vec<IntervalResult>,
    /// I/O the workers issued to set up before measuring (the task-run
    /// trial); `None` where there was none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub setup_io: Option<PhaseIo>,
    /// I/O of the ramp (warm-up), not measured; `None` without a ramp.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ramp_io: Option<PhaseIo>,
}

impl TargetResult {
    /// Whether the workload writes.
    pub fn writes(&self) -> bool {
        self.workload.rw.writes()
    }
    /// The access pattern.
    pub fn rw(&self) -> RwMode {
        self.workload.rw
    }
}

/// What a target was, as the run saw it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TargetEnvironment {
    /// Path.
    pub path: String,
    /// `block_device`, `file`, `nvme_generic` (`/dev/ngXnY`, passthru) or
    /// `nvme_tcp` (`nvme-tcp://`, the tcp backend).
    pub kind: String,
    /// Size in bytes.
    pub size_bytes: u64,
    /// Logical block size in bytes (512 for files).
    pub logical_block_size_bytes: u32,
    /// NUMA node of the device, when known.
    pub node: Option<NodeId>,
    /// Active I/O scheduler of the block device (`none`, `mq-deadline`, ...).
    pub scheduler: Option<String>,
    /// Poll queues of the device (`io_poll` enabled), when known.
    pub io_poll: Option<bool>,
    /// Opened with O_DIRECT.
    pub direct: bool,
}

/// The machine and the engine setup of a run.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Environment {
    /// numio version.
    pub numio_version: String,
    /// Host name.
    pub hostname: String,
    /// Kernel release (`uname -r`).
    pub kernel: String,
    /// CPU model name from /proc/cpuinfo.
    pub cpu_model: String,
    /// Online CPUs.
    pub online_cpus: u32,
    /// `nvme.poll_queues` module parameter, when readable.
    pub nvme_poll_queues: Option<u32>,
    /// Backend name (`uring`, `sync`, `null`, `nop`, `passthru`, `tcp`).
    pub backend: String,
    /// io_uring setup actually used (flags that were granted), empty otherwise.
    pub uring_features: Vec<String>,
    /// Every CPU a worker ran on, ascending.
    pub cpus_used: Vec<CpuId>,
    /// The targets.
    pub targets: Vec<TargetEnvironment>,
    /// Fallbacks and other notes (e.g. "mbind failed: buffers use the default policy").
    pub notes: Vec<String>,
    /// Start of the run, seconds since the Unix epoch.
    pub started_unix_s: u64,
}

/// A whole run: every target and the total.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct RunResult {
    /// [`RESULT_SCHEMA_VERSION`].
    pub schema_version: u32,
    /// Machine and setup.
    pub environment: Environment,
    /// Placement policy that produced the jobs.
    pub policy: String,
    /// Per target, in the order given.
    pub targets: Vec<TargetResult>,
    /// All targets together: reads.
    pub read: IoStats,
    /// All targets together: writes.
    pub write: IoStats,
    /// All targets together.
    pub total: IoStats,
    /// All workers together (their own threads, getrusage RUSAGE_THREAD).
    pub cpu_usage: CpuUsage,
    /// The whole process over the run (RUSAGE_SELF): the workers plus the
    /// kernel's io_uring worker threads (iou-wrk) serving punted I/O, and
    /// the mostly idle main thread. Compare this with tools that report
    /// per-process CPU (fio).
    #[serde(default)]
    pub process_cpu_usage: CpuUsage,
    /// All errors together.
    pub errors: Vec<ErrnoCount>,
    /// Measured time (longest target).
    pub runtime_ns: u64,
    /// The run was stopped early (SIGINT / SIGTERM): every number covers
    /// the time actually measured, `runtime_ns`, not the planned runtime.
    #[serde(default)]
    pub interrupted: bool,
    /// The machine's counters over the run (CPU time, context switches,
    /// interrupts); `None` where `/proc` could not be read, and in results
    /// saved before they were measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counters: Option<RunCounters>,
    /// Length of one interval of `intervals` (and of each target's), in
    /// nanoseconds; 0 in results saved before intervals were kept.
    #[serde(default)]
    pub interval_ns: u64,
    /// All targets together, interval by interval.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub intervals: Vec<IntervalResult>,
    /// Set-up I/O of all targets (see [`TargetResult::setup_io`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub setup_io: Option<PhaseIo>,
    /// Ramp I/O of all targets (see [`TargetResult::ramp_io`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ramp_io: Option<PhaseIo>,
}

impl RunResult {
    /// Total I/Os per CPU-second (user + system) over all workers.
    pub fn iops_per_cpu_s(&self) -> f64 {
        let cpu_ns = self.cpu_usage.user_ns + self.cpu_usage.system_ns;
        if cpu_ns == 0 {
            0.0
        } else {
            self.total.ops as f64 * 1e9 / cpu_ns as f64
        }
    }

    /// What one I/O cost over all targets: interrupts, the workers' and
    /// the machine's context switches and CPU time, and the CPU headroom.
    pub fn per_io(&self) -> PerIo {
        let c = self.counters.as_ref();
        let iops = self.total.iops;
        let mut out = workers_per_io(&self.cpu_usage, self.total.ops);
        out.interrupts = c.and_then(|c| c.per_io(c.nvme_interrupts?, iops));
        out.machine_ctx_switches = c.and_then(|c| c.per_io(c.context_switches, iops));
        out.machine_cpu_ns = c.and_then(|c| c.per_io(c.cpu.busy_ns(), iops));
        out.cpu_headroom_pct = c.and_then(|c| c.cpu.headroom_pct());
        out.initiator_cpu_ns = c.and_then(|c| c.per_io(c.process.as_ref()?.cpu_ns(), iops));
        out.target_cpu_ns = c.and_then(|c| c.per_io(c.target_process.as_ref()?.cpu_ns(), iops));
        out.target_headroom_pct = c.and_then(|c| c.target_machine.as_ref()?.headroom_pct());
        out
    }

    /// What one I/O of target `index` cost: its controllers' interrupts
    /// and its workers' context switches and CPU time (the machine's are
    /// shared and only in [`RunResult::per_io`]).
    pub fn target_per_io(&self, index: usize) -> PerIo {
        let Some(t) = self.targets.get(index) else {
            return PerIo::default();
        };
        let mut out = workers_per_io(&t.cpu_usage, t.total.ops);
        out.interrupts = self.counters.as_ref().and_then(|c| {
            let tc = c.targets.iter().find(|tc| tc.path == t.path)?;
            c.per_io(tc.interrupts?, t.total.iops)
        });
        out
    }
}

/// The workers' context switches and CPU time per I/O (both over the
/// measured time).
fn workers_per_io(cpu: &CpuUsage, ops: u64) -> PerIo {
    let per = |n: u64| (ops > 0).then(|| n as f64 / ops as f64);
    let cpu_ns = cpu.user_ns + cpu.system_ns;
    PerIo {
        worker_ctx_switches: per(cpu.voluntary_ctx_switches + cpu.involuntary_ctx_switches),
        worker_cpu_ns: per(cpu_ns),
        worker_busy_cpu_ns: per(cpu_ns.saturating_sub(cpu.idle_poll_ns)),
        ..PerIo::default()
    }
}
