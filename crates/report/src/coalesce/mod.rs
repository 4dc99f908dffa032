//! Coalescing sweeps (`numio coalesce sweep`): NVMe interrupt coalescing
//! (Feature 0x08: an interrupt per THR + 1 completions, or TIME × 100 µs
//! after the first) swept over thresholds, on the first 1, 2, 4 … drives
//! busy at once.
//!
//! A coalescing sweep is saved as a sweep set over two axes, `threshold`
//! (fastest) and `devices` (arm `i` is threshold `i % n` of `devices`
//! `i / n`), with a [`CoalesceSpec`] beside it: the aggregation time, the
//! targets and their controllers, the latency budgets. So `numio compare`
//! matches two of them point by point as it does any two sweeps, and
//! this module turns one into a [`CoalesceSweep`]: a [`DeviceTable`] per
//! device count (threshold rows, in total and per drive: IOPS with the
//! repeats' 95 % Student-t interval, clat p50/p95/p99/p99.99, interrupts,
//! context switches and CPU per I/O) with its [`Recommendation`]
//! ([`recommend`] names the rule), [`table`] prints it and [`chart`]
//! draws it. [`budget`] reads the latency budgets a sweep is given;
//! [`show`] and [`change`] are what `coalesce show`, `set`, `off` and
//! `restore` print.

pub mod budget;
pub mod change;
pub mod chart;
pub mod recommend;
pub mod show;
pub mod table;

use serde::{Deserialize, Serialize};

use crate::model::{Arm, ResultSet, TargetMetrics, TOTAL};

pub use crate::model::{CoalesceSpec, LatencyBudget};
use crate::sweep::{mean_ci95, mean_over_runs, percentile_ns};

pub use budget::{percentiles, BudgetError};
pub use recommend::{recommend, Recommendation, Verdict, MIN_GAIN_PCT};

/// The sweep axis of the aggregation threshold.
pub const THRESHOLD_AXIS: &str = "threshold";
/// The sweep axis of the drives busy at once.
pub const DEVICES_AXIS: &str = "devices";

/// The latency percentiles every row reports (clat).
pub const PERCENTILES: [f64; 4] = [50.0, 95.0, 99.0, 99.99];

/// The raw Feature 0x08 value of `threshold` with `time_us`: THR in bits
/// 7:0, TIME (100 µs units) in bits 15:8; threshold 0 is off (0).
pub fn raw_value(threshold: u8, time_us: u32) -> u32 {
    if threshold == 0 {
        0
    } else {
        u32::from(threshold) | ((time_us / 100) & 0xff) << 8
    }
}

/// One scope (a drive, or all of them) of a threshold, over its runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RowMetrics {
    /// A target's path, or `total`.
    pub scope: String,
    /// Runs measured.
    pub runs: usize,
    /// Mean IOPS.
    pub iops: f64,
    /// Half width of the 95 % Student-t interval of the mean IOPS (`None`
    /// with one run).
    pub iops_ci95: Option<f64>,
    /// Mean clat p50, ns.
    pub lat_p50_ns: Option<f64>,
    /// Mean clat p95, ns.
    pub lat_p95_ns: Option<f64>,
    /// Mean clat p99, ns.
    pub lat_p99_ns: Option<f64>,
    /// Mean clat p99.99, ns.
    pub lat_p9999_ns: Option<f64>,
    /// Mean NVMe queue interrupts per I/O (the scope's controllers).
    pub interrupts_per_io: Option<f64>,
    /// Mean context switches per I/O: the machine's in total, the drive's
    /// workers' for a drive.
    pub ctx_switches_per_io: Option<f64>,
    /// Mean CPU per I/O, ns: the machine's busy time in total, the
    /// drive's workers' for a drive.
    pub cpu_ns_per_io: Option<f64>,
}

/// A latency budget against one threshold's measurement.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct BudgetCheck {
    /// The budget.
    pub budget: LatencyBudget,
    /// The mean of its percentile over the runs (all drives), ns; `None`
    /// when the runs did not measure it.
    pub measured_ns: Option<f64>,
    /// Whether the measurement keeps the budget (an unmeasured one does not).
    pub within: bool,
}

/// One threshold of one device count.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ThresholdRow {
    /// The point's label (`threshold=3 devices=2`).
    pub label: String,
    /// The aggregation threshold (0: off).
    pub threshold: u8,
    /// All the drives together.
    pub total: RowMetrics,
    /// Each drive.
    pub drives: Vec<RowMetrics>,
    /// The latency budgets, each checked.
    #[serde(default)]
    pub budgets: Vec<BudgetCheck>,
}

impl ThresholdRow {
    /// Whether every latency budget holds (true without budgets).
    pub fn within_budget(&self) -> bool {
        self.budgets.iter().all(|b| b.within)
    }
}

/// The thresholds of one device count and what they recommend.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeviceTable {
    /// Drives busy at once.
    pub devices: usize,
    /// Those drives (the first `devices` targets).
    pub targets: Vec<String>,
    /// Their controllers, each once.
    pub controllers: Vec<String>,
    /// One row per threshold measured, ascending.
    pub rows: Vec<ThresholdRow>,
    /// What to set, with its evidence.
    pub recommendation: Recommendation,
    /// What the table says besides (interrupts per I/O against off).
    pub findings: Vec<String>,
}

/// A coalescing sweep, analysed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CoalesceSweep {
    /// Aggregation time of every threshold above 0, µs.
    pub time_us: u32,
    /// Latency budgets.
    pub max_latency: Vec<LatencyBudget>,
    /// One table per device count, in the order run.
    pub tables: Vec<DeviceTable>,
    /// Whether Ctrl-C / SIGTERM ended the sweep early.
    pub interrupted: bool,
}

impl CoalesceSweep {
    /// The table of the most drives busy at once that has rows (what
    /// `--apply` applies).
    pub fn widest(&self) -> Option<&DeviceTable> {
        self.tables
            .iter()
            .filter(|t| !t.rows.is_empty())
            .max_by_key(|t| t.devices)
    }
}

/// The thresholds and device counts of a coalescing sweep set, from its
/// axes; `None` for other sets.
pub fn grid(set: &ResultSet) -> Option<(Vec<u8>, Vec<usize>)> {
    set.coalesce.as_ref()?;
    let axes = &set.sweep.as_ref()?.axes;
    let (t, d) = (axes.first()?, axes.get(1)?);
    if t.name != THRESHOLD_AXIS || d.name != DEVICES_AXIS {
        return None;
    }
    let thresholds = t
        .values
        .iter()
        .map(|v| v.parse().ok())
        .collect::<Option<_>>()?;
    let devices = d
        .values
        .iter()
        .map(|v| v.parse().ok())
        .collect::<Option<_>>()?;
    Some((thresholds, devices))
}

/// The analysis of a coalescing sweep set; `None` for other sets (or a
/// coalescing set whose axes do not read).
pub fn analyze(set: &ResultSet) -> Option<CoalesceSweep> {
    let spec = set.coalesce.as_ref()?;
    let (thresholds, devices) = grid(set)?;
    let n = thresholds.len().max(1);
    let tables = devices
        .iter()
        .enumerate()
        .map(|(j, &d)| {
            let arms = set.arms.get(j * n..(j * n + n).min(set.arms.len()));
            let rows: Vec<ThresholdRow> = arms
                .unwrap_or(&[])
                .iter()
                .zip(&thresholds)
                .filter_map(|(arm, &t)| row(arm, t, &spec.max_latency))
                .collect();
            let recommendation = recommend(&rows, spec.time_us);
            DeviceTable {
                devices: d,
                targets: spec.targets.iter().take(d).cloned().collect(),
                controllers: spec.controllers_of(d),
                findings: recommend::findings(&rows),
                rows,
                recommendation,
            }
        })
        .collect();
    Some(CoalesceSweep {
        time_us: spec.time_us,
        max_latency: spec.max_latency.clone(),
        tables,
        interrupted: set.sweep.as_ref().is_some_and(|s| s.interrupted),
    })
}

/// The row of `arm` (threshold `t`); `None` when it has no runs.
fn row(arm: &Arm, threshold: u8, budgets: &[LatencyBudget]) -> Option<ThresholdRow> {
    let total = scope_metrics(arm, TOTAL)?;
    let drives = arm
        .target_names()
        .iter()
        .filter_map(|name| scope_metrics(arm, name))
        .collect();
    let budgets = budgets
        .iter()
        .map(|&budget| {
            let measured_ns = mean_over_runs(arm, TOTAL, |m| percentile_ns(m, budget.percentile));
            BudgetCheck {
                budget,
                measured_ns,
                within: measured_ns.is_some_and(|v| v <= budget.max_ns),
            }
        })
        .collect();
    Some(ThresholdRow {
        label: arm.label.clone(),
        threshold,
        total,
        drives,
        budgets,
    })
}

/// One scope of `arm` over its runs; `None` when no run has it.
fn scope_metrics(arm: &Arm, scope: &str) -> Option<RowMetrics> {
    let iops: Vec<f64> = arm
        .runs
        .iter()
        .filter_map(|r| r.scope(scope))
        .map(|m| m.iops)
        .collect();
    let (mean, runs, ci) = mean_ci95(&iops)?;
    let total = scope == TOTAL;
    let of = |f: &dyn Fn(&TargetMetrics) -> Option<f64>| mean_over_runs(arm, scope, f);
    let pct = |p: f64| of(&|m| percentile_ns(m, p));
    Some(RowMetrics {
        scope: scope.to_string(),
        runs,
        iops: mean,
        iops_ci95: ci,
        lat_p50_ns: pct(PERCENTILES[0]),
        lat_p95_ns: pct(PERCENTILES[1]),
        lat_p99_ns: pct(PERCENTILES[2]),
        lat_p9999_ns: pct(PERCENTILES[3]),
        interrupts_per_io: of(&|m| m.per_io.interrupts),
        ctx_switches_per_io: of(&|m| {
            if total {
                m.per_io.machine_ctx_switches
            } else {
                m.per_io.worker_ctx_switches
            }
        }),
        cpu_ns_per_io: of(&|m| {
            if total {
                m.per_io.machine_cpu_ns
            } else {
                m.per_io.worker_cpu_ns
            }
        }),
    })
}

#[cfg(test)]
mod tests;
