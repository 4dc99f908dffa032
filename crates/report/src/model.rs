//! The result set: every run of every arm, as saved to one JSON file.
//!
//! A single run, a repeat set and a comparison share one shape: a list of
//! arms, each with its runs in the order they ran. Each run keeps the few
//! numbers the statistics need (per target and total) and, when it came from
//! the engine, the engine's whole result under `raw`, so nothing measured is
//! lost. The schema is versioned ([`SCHEMA`], [`SCHEMA_VERSION`]); readers
//! reject other schemas and newer versions with the fix in the message.

use serde::{Deserialize, Serialize};

/// Name of the schema in the `schema` field.
pub const SCHEMA: &str = "numio-results";
/// Version of the schema; bumped on any change that is not additive.
pub const SCHEMA_VERSION: u32 = 1;

/// One latency percentile.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct LatencyPoint {
    /// The percentile, 0 < p ≤ 100.
    pub percentile: f64,
    /// Latency at that percentile in nanoseconds.
    pub latency_ns: f64,
}

/// What one run measured on one target (or on all targets together).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TargetMetrics {
    /// Path of the target, or `total` for all targets together.
    pub target: String,
    /// Completed I/Os per second.
    pub iops: f64,
    /// Bytes per second.
    pub bandwidth_bytes_per_s: f64,
    /// Mean latency (submission to completion) in nanoseconds.
    pub lat_mean_ns: f64,
    /// 99th percentile latency in nanoseconds.
    pub lat_p99_ns: f64,
    /// Latency percentiles, ascending (for the percentile curves).
    #[serde(default)]
    pub percentiles: Vec<LatencyPoint>,
    /// What one I/O cost (interrupts, context switches, CPU) and the CPU
    /// headroom, from the machine's counters; every field `None` in
    /// results saved before they were measured.
    #[serde(default, skip_serializing_if = "results::PerIo::is_unmeasured")]
    pub per_io: results::PerIo,
}

/// A measured quantity of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Metric {
    /// I/Os per second.
    Iops,
    /// Mean latency.
    LatMean,
    /// 99th percentile latency.
    LatP99,
    /// NVMe queue interrupts per I/O.
    InterruptsPerIo,
    /// The workers' context switches per I/O.
    CtxSwitchesPerIo,
    /// The whole machine's context switches per I/O (total only).
    MachineCtxSwitchesPerIo,
    /// The workers' CPU time per I/O, nanoseconds.
    CpuPerIo,
    /// The workers' CPU time per I/O less their empty polls (a polling
    /// backend's busy waiting), nanoseconds: what the I/O itself cost.
    BusyCpuPerIo,
    /// The whole machine's busy CPU time per I/O, nanoseconds (total only).
    MachineCpuPerIo,
    /// The share of the machine's CPU left unused, percent (total only).
    CpuHeadroom,
}

impl Metric {
    /// All metrics, in report order.
    pub const ALL: [Metric; 3] = [Metric::Iops, Metric::LatMean, Metric::LatP99];

    /// The metrics from the machine's counters, in report order: present
    /// where every run measured them (busy CPU per I/O where some run
    /// polled: elsewhere it is the CPU per I/O).
    pub const COUNTERS: [Metric; 7] = [
        Metric::InterruptsPerIo,
        Metric::CtxSwitchesPerIo,
        Metric::MachineCtxSwitchesPerIo,
        Metric::CpuPerIo,
        Metric::BusyCpuPerIo,
        Metric::MachineCpuPerIo,
        Metric::CpuHeadroom,
    ];

    /// Name in verdicts ("IOPS", "mean latency", "p99 latency").
    pub fn name(self) -> &'static str {
        match self {
            Metric::Iops => "IOPS",
            Metric::LatMean => "mean latency",
            Metric::LatP99 => "p99 latency",
            Metric::InterruptsPerIo => "interrupts per I/O",
            Metric::CtxSwitchesPerIo => "context switches per I/O",
            Metric::MachineCtxSwitchesPerIo => "machine context switches per I/O",
            Metric::CpuPerIo => "CPU per I/O",
            Metric::BusyCpuPerIo => "busy CPU per I/O (empty polls excluded)",
            Metric::MachineCpuPerIo => "machine CPU per I/O",
            Metric::CpuHeadroom => "CPU headroom",
        }
    }

    /// Whether a larger value is better.
    pub fn higher_is_better(self) -> bool {
        matches!(self, Metric::Iops | Metric::CpuHeadroom)
    }

    /// The value in a target's metrics (latencies and CPU times in
    /// nanoseconds); NaN for a counter that was not measured.
    pub fn of(self, m: &TargetMetrics) -> f64 {
        self.value(m).unwrap_or(f64::NAN)
    }

    /// The value in a target's metrics, when it was measured.
    pub fn value(self, m: &TargetMetrics) -> Option<f64> {
        let p = &m.per_io;
        match self {
            Metric::Iops => Some(m.iops),
            Metric::LatMean => Some(m.lat_mean_ns),
            Metric::LatP99 => Some(m.lat_p99_ns),
            Metric::InterruptsPerIo => p.interrupts,
            Metric::CtxSwitchesPerIo => p.worker_ctx_switches,
            Metric::MachineCtxSwitchesPerIo => p.machine_ctx_switches,
            Metric::CpuPerIo => p.worker_cpu_ns,
            Metric::BusyCpuPerIo => p.worker_busy_cpu_ns,
            Metric::MachineCpuPerIo => p.machine_cpu_ns,
            Metric::CpuHeadroom => p.cpu_headroom_pct,
        }
    }

    /// Its unit as a table column says it.
    pub fn column(self) -> &'static str {
        match self {
            Metric::Iops => "IOPS",
            Metric::LatMean => "lat mean µs",
            Metric::LatP99 => "lat p99 µs",
            Metric::InterruptsPerIo => "interrupts/IO",
            Metric::CtxSwitchesPerIo => "ctx sw/IO",
            Metric::MachineCtxSwitchesPerIo => "machine ctx sw/IO",
            Metric::CpuPerIo => "CPU µs/IO",
            Metric::BusyCpuPerIo => "busy CPU µs/IO",
            Metric::MachineCpuPerIo => "machine CPU µs/IO",
            Metric::CpuHeadroom => "CPU headroom %",
        }
    }
}

/// One run: every target and the total.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    /// Position of the run in execution order over all arms, from 1
    /// (shows the interleaving A B A B …).
    pub seq: usize,
    /// Start of the run, seconds since the Unix epoch (0: unknown).
    #[serde(default)]
    pub started_unix_s: u64,
    /// Per target, in the order given.
    pub targets: Vec<TargetMetrics>,
    /// All targets together.
    pub total: TargetMetrics,
    /// The engine's full result of this run, when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw: Option<serde_json::Value>,
}

/// One arm: a label, what it ran, and its runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Arm {
    /// Short label shown in verdicts and legends (e.g. `local`).
    pub label: String,
    /// What the arm ran (e.g. `policy=local`, `plan=plan.json`).
    pub spec: String,
    /// The runs, in the order they ran.
    pub runs: Vec<RunRecord>,
}

/// What a result set holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SetKind {
    /// One run of one arm.
    Single,
    /// Several runs of one arm (`--repeat N`).
    Repeat,
    /// Two arms (`numio compare`).
    Compare,
    /// One arm per point of a sweep (`numio sweep`); the set's `sweep`
    /// says where each arm lies on the axes.
    Sweep,
}

/// One axis of a sweep as run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepAxis {
    /// Its name (`jobs`, `iodepth`, `bs`, `devices`, `rw`, `rwmixread`,
    /// `reactors`, `initiator-cores`; `threshold` in a coalescing sweep).
    pub name: String,
    /// The values as written, in order.
    pub values: Vec<String>,
    /// Each value as a number on the chart's x axis (bs in bytes; its
    /// place in the list for non-numeric axes).
    pub xs: Vec<f64>,
}

/// What a sweep should reach (`--target-iops`, `--target-bw`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SweepGoal {
    /// Total IOPS.
    Iops(f64),
    /// Total bandwidth, bytes per second.
    BandwidthBytesPerS(f64),
}

/// How the arms of a sweep set lie on its axes: arm `i` is value
/// `i % n0` of the first axis (of `n0` values) and `i / n0` of the second.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepSpec {
    /// One axis, or two for a grid (the first varies fastest).
    pub axes: Vec<SweepAxis>,
    /// Efficiency below which a step is the knee.
    pub knee_efficiency: f64,
    /// Cores (pinned workers) of each arm's plan, in arm order.
    #[serde(default)]
    pub cores: Vec<usize>,
    /// The goal asked for, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub goal: Option<SweepGoal>,
    /// Whether Ctrl-C ended the sweep early: points after it are missing.
    #[serde(default)]
    pub interrupted: bool,
    /// Where a sweep over a fleet ran (`numio sweep --hosts`); `None` for
    /// one on this machine.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fleet: Option<FleetSweepSpec>,
}

/// Where a sweep over a fleet ran: the initiator hosts, whose NVMe-oF host
/// they ran, the namespace they reached and the host that served it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FleetSweepSpec {
    /// The initiator hosts in the order given (a point of N initiators ran
    /// on the first N).
    pub hosts: Vec<String>,
    /// Whose NVMe-oF host they ran: `numio` (numio bench's own) or
    /// `kernel` (the Linux host, through its block device).
    pub stack: String,
    /// The namespace every initiator reached.
    pub url: String,
    /// The host `numio serve` ran on for each run, when the sweep served
    /// the target (else the target was given by its URL).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_host: Option<String>,
}

/// A latency budget (`--max-latency p99.99=2ms`): a threshold is
/// recommended only where the mean of this percentile over its runs, for
/// all the drives together, stays at or below `max_ns`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct LatencyBudget {
    /// The percentile, 0 < p < 100.
    pub percentile: f64,
    /// The most it may be, nanoseconds.
    pub max_ns: f64,
}

impl LatencyBudget {
    /// `p99.99 ≤ 2 ms`, `p99 ≤ 500 µs`, `p99.9 ≤ 1.5 ms`.
    pub fn describe(&self) -> String {
        let trim = |v: f64, decimals: usize| {
            let text = format!("{v:.decimals$}");
            match text.contains('.') {
                true => text.trim_end_matches('0').trim_end_matches('.').to_string(),
                false => text,
            }
        };
        let time = if self.max_ns >= 1e6 {
            format!("{} ms", trim(self.max_ns / 1e6, 3))
        } else {
            format!("{} µs", trim(self.max_ns / 1e3, 1))
        };
        format!("p{} ≤ {time}", self.percentile)
    }
}

/// What a coalescing sweep set on the controllers, saved with its runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CoalesceSpec {
    /// Aggregation time of every threshold above 0, µs (a multiple of
    /// 100); threshold 0 is coalescing off (THR 0, TIME 0).
    pub time_us: u32,
    /// The targets in the order given: a point of D devices runs the
    /// first D of them at once.
    pub targets: Vec<String>,
    /// The controllers of each target, in target order (a multipath head
    /// has several; two namespaces may share one).
    #[serde(default)]
    pub controllers: Vec<Vec<String>>,
    /// Latency budgets the recommendation keeps (none: any latency).
    #[serde(default)]
    pub max_latency: Vec<LatencyBudget>,
}

impl CoalesceSpec {
    /// The controllers of the first `devices` targets, each once, in order.
    pub fn controllers_of(&self, devices: usize) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for c in self.controllers.iter().take(devices).flatten() {
            if !out.contains(c) {
                out.push(c.clone());
            }
        }
        out
    }
}

/// A saved result: one JSON file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResultSet {
    /// Always [`SCHEMA`].
    pub schema: String,
    /// [`SCHEMA_VERSION`] of the writer.
    pub schema_version: u32,
    /// Single, repeat or compare.
    pub kind: SetKind,
    /// The command line or a description of how it was produced.
    pub command: String,
    /// Creation time, seconds since the Unix epoch.
    pub created_unix_s: u64,
    /// One arm (single, repeat), two (compare) or one per point (sweep).
    pub arms: Vec<Arm>,
    /// Where the arms of a sweep lie on its axes (sweep sets only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sweep: Option<SweepSpec>,
    /// What a coalescing sweep set on the controllers (`numio coalesce
    /// sweep`: a sweep over `threshold` × `devices`); `None` for others.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub coalesce: Option<CoalesceSpec>,
    /// Whether the arms' runs were interleaved (A B A B …): `Some(false)`
    /// for a comparison with an arm read from saved results; `None` in
    /// files written before numio said (their live comparisons were).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interleaved: Option<bool>,
}

impl ResultSet {
    /// A result set of `kind` with the current schema.
    pub fn new(
        kind: SetKind,
        command: impl Into<String>,
        created_unix_s: u64,
        arms: Vec<Arm>,
    ) -> Self {
        ResultSet {
            schema: SCHEMA.to_string(),
            schema_version: SCHEMA_VERSION,
            kind,
            command: command.into(),
            created_unix_s,
            arms,
            sweep: None,
            coalesce: None,
            interleaved: None,
        }
    }

    /// The set of one arm's runs: a repeat set with several runs, a single
    /// one with one.
    pub fn of_one_arm(arm: Arm, command: impl Into<String>, created_unix_s: u64) -> Self {
        let kind = if arm.runs.len() > 1 {
            SetKind::Repeat
        } else {
            SetKind::Single
        };
        ResultSet::new(kind, command, created_unix_s, vec![arm])
    }

    /// Every run of every arm in execution order (by `seq`), with its arm.
    pub fn runs_in_order(&self) -> Vec<(&Arm, &RunRecord)> {
        let mut all: Vec<(&Arm, &RunRecord)> = self
            .arms
            .iter()
            .flat_map(|arm| arm.runs.iter().map(move |run| (arm, run)))
            .collect();
        all.sort_by_key(|(_, run)| run.seq);
        all
    }
}

impl RunRecord {
    /// The metrics of `target` (a path, or `total`).
    pub fn scope(&self, target: &str) -> Option<&TargetMetrics> {
        if target == TOTAL {
            return Some(&self.total);
        }
        self.targets.iter().find(|t| t.target == target)
    }
}

/// The scope name of all targets together.
pub const TOTAL: &str = "total";

impl Arm {
    /// Target paths in the order of the first run that names them.
    pub fn target_names(&self) -> Vec<String> {
        let mut names: Vec<String> = Vec::new();
        for run in &self.runs {
            for t in &run.targets {
                if !names.contains(&t.target) {
                    names.push(t.target.clone());
                }
            }
        }
        names
    }
}
