//! Sweep analysis: a curve of runs over one axis (cores, queue depth,
//! drives, block size, mix, reactors), one arm per point. Per point the
//! mean IOPS with its 95 % Student-t interval over the repeats, IOPS per
//! target and per core, latency percentiles, CPU per I/O, interrupts per
//! I/O and CPU headroom; over the curve the scaling efficiency per step,
//! the knee, the saturation point and the fewest cores (smallest axis
//! value) that reach a goal. [`table`] prints it (text and CSV), [`chart`]
//! draws it, [`compare`] sets two sweeps side by side point by point.
//!
//! Methods, each named:
//! * **efficiency** of point i: `(IOPS(i) / IOPS(0)) / (x(i) / x(0))`, the
//!   share of linear scaling from the first point (for cores:
//!   `IOPS(n) / (n × IOPS(1))`); only for axes that scale work (jobs,
//!   iodepth, devices, reactors, initiator-cores);
//! * **knee**: the first point whose efficiency falls below the threshold
//!   (0.8 unless asked), judged on the upper end of its interval where
//!   there are repeats, so noise alone does not make a knee;
//! * **saturation**: the first point after which the next adds less than
//!   [`SATURATION_GAIN_PCT`] IOPS;
//! * **goal**: the point of smallest axis value whose mean reaches it.

pub mod chart;
pub mod compare;
pub mod output;
pub mod table;

use serde::{Deserialize, Serialize};

use crate::model::{Arm, Metric, ResultSet, SweepGoal, TargetMetrics, TOTAL};
use crate::stats::{summarize, tdist::t_quantile};

pub use chart::svg;
pub use table::{csv, table};

/// A step that adds less than this share of IOPS means the curve saturated.
pub const SATURATION_GAIN_PCT: f64 = 2.0;

/// Efficiency below which a step is the knee, unless asked otherwise.
pub const DEFAULT_KNEE_EFFICIENCY: f64 = 0.8;

/// One target's share of a point (mean over the repeats).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PointTarget {
    /// The target's path.
    pub target: String,
    /// Mean IOPS on it.
    pub iops: f64,
    /// Mean bandwidth on it, bytes per second.
    pub bandwidth_bytes_per_s: f64,
}

/// One point of a sweep, over its repeats.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepPoint {
    /// The arm's label (`jobs=4`, `jobs=4 iodepth=16`).
    pub label: String,
    /// The axis value as a number (its position for non-numeric axes).
    pub x: f64,
    /// Runs measured.
    pub runs: usize,
    /// Mean total IOPS.
    pub iops: f64,
    /// Half width of the 95 % Student-t interval of the mean IOPS (`None`
    /// with one run).
    pub iops_ci95: Option<f64>,
    /// Mean bandwidth in bytes per second.
    pub bandwidth_bytes_per_s: f64,
    /// Cores (pinned workers) of the point's plan, when known.
    #[serde(default)]
    pub cores: Option<usize>,
    /// Mean IOPS per core.
    #[serde(default)]
    pub iops_per_core: Option<f64>,
    /// Mean IOPS and bandwidth per target.
    #[serde(default)]
    pub targets: Vec<PointTarget>,
    /// Mean median latency in nanoseconds.
    #[serde(default)]
    pub lat_p50_ns: Option<f64>,
    /// Mean p99 latency in nanoseconds.
    pub lat_p99_ns: f64,
    /// Mean p99.9 latency in nanoseconds.
    #[serde(default)]
    pub lat_p999_ns: Option<f64>,
    /// Mean CPU headroom of the machine, percent.
    pub cpu_headroom_pct: Option<f64>,
    /// Mean machine CPU per I/O, nanoseconds.
    pub machine_cpu_ns_per_io: Option<f64>,
    /// Mean NVMe interrupts per I/O.
    pub interrupts_per_io: Option<f64>,
    /// Mean CPU per I/O of the initiator (the numio process), nanoseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub initiator_cpu_ns_per_io: Option<f64>,
    /// Mean CPU per I/O of the `numio serve` target the sweep started on
    /// this machine (the `reactors` axis), nanoseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_cpu_ns_per_io: Option<f64>,
    /// Mean CPU headroom of the target's machine, percent, when the sweep
    /// served its target on another host (`--target-host`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_headroom_pct: Option<f64>,
    /// Scaling efficiency against the first point (scaling axes only).
    pub efficiency: Option<f64>,
}

/// Where a sweep met its goal.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GoalResult {
    /// What was asked.
    pub goal: SweepGoal,
    /// The point of smallest axis value that reaches it, if any does.
    pub reached_at: Option<usize>,
}

/// A whole sweep, analysed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Sweep {
    /// The axis (`jobs`, `iodepth`, …).
    pub axis: String,
    /// The value of the grid's second axis this curve holds (`bs=4k`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub series: Option<String>,
    /// Points in axis order.
    pub points: Vec<SweepPoint>,
    /// Efficiency threshold of the knee.
    pub knee_efficiency: f64,
    /// Index of the knee point, if the curve bends.
    pub knee: Option<usize>,
    /// Index of the point where the curve saturates, if it does.
    pub saturation: Option<usize>,
    /// The goal and where it was met.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub goal: Option<GoalResult>,
    /// What the analysis says, in sentences.
    pub findings: Vec<String>,
}

/// Whether an axis scales the work, so that linear scaling is the ideal.
pub fn scales_work(axis: &str) -> bool {
    matches!(
        axis,
        "jobs" | "iodepth" | "devices" | "reactors" | "initiator-cores" | "initiators"
    )
}

/// Efficiency of each point against the first: `(y_i / y_0) / (x_i / x_0)`.
pub fn efficiency(xs: &[f64], ys: &[f64]) -> Vec<f64> {
    let (Some(&x0), Some(&y0)) = (xs.first(), ys.first()) else {
        return Vec::new();
    };
    xs.iter()
        .zip(ys)
        .map(|(&x, &y)| {
            if x0 > 0.0 && y0 > 0.0 && x > 0.0 {
                (y / y0) / (x / x0)
            } else {
                f64::NAN
            }
        })
        .collect()
}

/// The first index whose efficiency (its best case: plus `slack[i]`, the
/// relative interval half width) is below `threshold`.
pub fn knee(eff: &[f64], slack: &[f64], threshold: f64) -> Option<usize> {
    eff.iter()
        .enumerate()
        .find(|&(i, &e)| {
            e.is_finite() && e * (1.0 + slack.get(i).copied().unwrap_or(0.0)) < threshold
        })
        .map(|(i, _)| i)
}

/// The first index after which the next point adds less than `gain_pct`
/// percent of IOPS (the last point is never one: nothing follows it).
pub fn saturation(ys: &[f64], gain_pct: f64) -> Option<usize> {
    ys.windows(2)
        .position(|w| w[1] < w[0] * (1.0 + gain_pct / 100.0))
}

/// The point of smallest `x` whose value (IOPS or bandwidth, as the goal
/// asks) reaches the goal.
pub fn fewest_reaching(points: &[SweepPoint], goal: SweepGoal) -> Option<usize> {
    points
        .iter()
        .enumerate()
        .filter(|(_, p)| match goal {
            SweepGoal::Iops(v) => p.iops >= v,
            SweepGoal::BandwidthBytesPerS(v) => p.bandwidth_bytes_per_s >= v,
        })
        .min_by(|a, b| a.1.x.total_cmp(&b.1.x))
        .map(|(i, _)| i)
}

fn mean(v: &[f64]) -> Option<f64> {
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}

/// The mean over `arm`'s runs of `f` of scope `scope` (a target path or
/// `total`), if every run measured it.
pub(crate) fn mean_over_runs(
    arm: &Arm,
    scope: &str,
    f: impl Fn(&TargetMetrics) -> Option<f64>,
) -> Option<f64> {
    let v: Vec<f64> = arm
        .runs
        .iter()
        .map(|r| r.scope(scope).and_then(&f))
        .collect::<Option<Vec<f64>>>()?;
    mean(&v)
}

/// The mean of `values`, how many there are and the half width of the
/// 95 % Student-t interval of the mean (`None` with one value).
pub(crate) fn mean_ci95(values: &[f64]) -> Option<(f64, usize, Option<f64>)> {
    let s = summarize(values)?;
    let ci =
        (s.n >= 2).then(|| t_quantile(0.975, (s.n - 1) as f64) * s.stdev / (s.n as f64).sqrt());
    Some((s.mean, s.n, ci))
}

fn mean_of(arm: &Arm, metric: Metric) -> Option<f64> {
    mean_over_runs(arm, TOTAL, |m| metric.value(m))
}

/// The mean of a per-I/O value over the runs, if every run measured it.
fn mean_per_io(arm: &Arm, f: fn(&results::PerIo) -> Option<f64>) -> Option<f64> {
    mean_over_runs(arm, TOTAL, |m| f(&m.per_io))
}

/// The latency at `percentile` of `m`, if it was measured.
pub(crate) fn percentile_ns(m: &TargetMetrics, percentile: f64) -> Option<f64> {
    m.percentiles
        .iter()
        .find(|p| (p.percentile - percentile).abs() < 1e-9)
        .map(|p| p.latency_ns)
}

fn mean_percentile(arm: &Arm, percentile: f64) -> Option<f64> {
    mean_over_runs(arm, TOTAL, |m| percentile_ns(m, percentile))
}

fn point_targets(arm: &Arm) -> Vec<PointTarget> {
    arm.target_names()
        .into_iter()
        .map(|name| {
            let of = |f: fn(&TargetMetrics) -> f64| {
                let v: Vec<f64> = arm
                    .runs
                    .iter()
                    .filter_map(|r| r.scope(&name).map(f))
                    .collect();
                mean(&v).unwrap_or(f64::NAN)
            };
            PointTarget {
                iops: of(|m| m.iops),
                bandwidth_bytes_per_s: of(|m| m.bandwidth_bytes_per_s),
                target: name,
            }
        })
        .collect()
}

fn point(arm: &Arm, x: f64, cores: Option<usize>) -> Option<SweepPoint> {
    let iops: Vec<f64> = arm.runs.iter().map(|r| r.total.iops).collect();
    let (iops_mean, runs, ci) = mean_ci95(&iops)?;
    let bw: Vec<f64> = arm
        .runs
        .iter()
        .map(|r| r.total.bandwidth_bytes_per_s)
        .collect();
    Some(SweepPoint {
        label: arm.label.clone(),
        x,
        runs,
        iops: iops_mean,
        iops_ci95: ci,
        bandwidth_bytes_per_s: mean(&bw).unwrap_or(f64::NAN),
        cores,
        iops_per_core: cores.filter(|&c| c > 0).map(|c| iops_mean / c as f64),
        targets: point_targets(arm),
        lat_p50_ns: mean_percentile(arm, 50.0),
        lat_p99_ns: mean_of(arm, Metric::LatP99).unwrap_or(f64::NAN),
        lat_p999_ns: mean_percentile(arm, 99.9),
        cpu_headroom_pct: mean_of(arm, Metric::CpuHeadroom),
        machine_cpu_ns_per_io: mean_of(arm, Metric::MachineCpuPerIo),
        interrupts_per_io: mean_of(arm, Metric::InterruptsPerIo),
        initiator_cpu_ns_per_io: mean_per_io(arm, |p| p.initiator_cpu_ns),
        target_cpu_ns_per_io: mean_per_io(arm, |p| p.target_cpu_ns),
        target_headroom_pct: mean_per_io(arm, |p| p.target_headroom_pct),
        efficiency: None,
    })
}

/// Analyses the arms of a sweep over `axis`, the point of arm i at
/// `xs[i]`; arms without runs (an interrupted sweep) are left out.
pub fn analyze(axis: &str, xs: &[f64], arms: &[Arm], knee_efficiency: f64) -> Sweep {
    analyze_points(axis, xs, arms, &[], knee_efficiency, None)
}

/// As [`analyze`], with the cores of each arm (`cores[i]`, where known)
/// and a goal to reach.
pub fn analyze_points(
    axis: &str,
    xs: &[f64],
    arms: &[Arm],
    cores: &[usize],
    knee_efficiency: f64,
    goal: Option<SweepGoal>,
) -> Sweep {
    let mut points: Vec<SweepPoint> = arms
        .iter()
        .zip(xs)
        .enumerate()
        .filter_map(|(i, (a, &x))| point(a, x, cores.get(i).copied()))
        .collect();
    let px: Vec<f64> = points.iter().map(|p| p.x).collect();
    let py: Vec<f64> = points.iter().map(|p| p.iops).collect();
    let mut knee_at = None;
    if scales_work(axis) {
        let eff = efficiency(&px, &py);
        let slack: Vec<f64> = points
            .iter()
            .map(|p| {
                p.iops_ci95
                    .map_or(0.0, |c| c / p.iops.max(f64::MIN_POSITIVE))
            })
            .collect();
        for (p, e) in points.iter_mut().zip(&eff) {
            p.efficiency = e.is_finite().then_some(*e);
        }
        knee_at = knee(&eff, &slack, knee_efficiency);
    }
    let saturation_at = saturation(&py, SATURATION_GAIN_PCT);
    let goal = goal.map(|g| GoalResult {
        goal: g,
        reached_at: fewest_reaching(&points, g),
    });
    let mut sweep = Sweep {
        axis: axis.to_string(),
        series: None,
        points,
        knee_efficiency,
        knee: knee_at,
        saturation: saturation_at,
        goal,
        findings: Vec::new(),
    };
    sweep.findings = table::findings(&sweep);
    sweep
}

/// The curves of a sweep result set: one per value of the second axis
/// (one in all without it); empty for other sets.
pub fn analyze_set(set: &ResultSet) -> Vec<Sweep> {
    let Some(spec) = &set.sweep else {
        return Vec::new();
    };
    let Some(first) = spec.axes.first() else {
        return Vec::new();
    };
    let n = first.values.len().max(1);
    let series: Vec<Option<String>> = match spec.axes.get(1) {
        Some(a) => a
            .values
            .iter()
            .map(|v| Some(format!("{}={v}", a.name)))
            .collect(),
        None => vec![None],
    };
    set.arms
        .chunks(n)
        .zip(series)
        .enumerate()
        .map(|(i, (chunk, series))| {
            let cores = spec.cores.get(i * n..).unwrap_or(&[]);
            let mut s = analyze_points(
                &first.name,
                &first.xs,
                chunk,
                cores,
                spec.knee_efficiency,
                spec.goal,
            );
            s.series = series;
            if spec.interrupted {
                s.findings.push(format!(
                    "interrupted: {} of {} points measured (Ctrl-C); the rest did not run",
                    s.points.len(),
                    chunk.len()
                ));
            }
            s
        })
        .collect()
}

#[cfg(test)]
mod tests;
