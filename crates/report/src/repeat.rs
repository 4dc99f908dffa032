//! Repeat statistics of one arm: per target and in total, the summary
//! (mean, median, min, max, stdev, CV) of IOPS, of mean latency and of p99
//! latency over the runs, and the runs that stand out by modified z-score
//! over the MAD, each with a warning that says what to do.

use serde::{Deserialize, Serialize};

pub use crate::model::Metric;
use crate::model::{Arm, RunRecord, TargetMetrics, TOTAL};
use crate::stats::{self, Summary, Trend};

/// Runs needed before any run is flagged as an outlier: with fewer, the MAD
/// of the few values is too small a yardstick and flags ordinary runs.
pub const MIN_RUNS_FOR_OUTLIERS: usize = 5;

/// p-value below which a drift of IOPS over the run order is reported.
pub const DRIFT_P: f64 = 0.05;

/// Run-to-run deviation of IOPS above which the user is warned, in percent.
pub const HIGH_CV_PCT: f64 = 5.0;

/// A run whose value stands out.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OutlierRun {
    /// `seq` of the run.
    pub seq: usize,
    /// Its value.
    pub value: f64,
    /// Its modified z-score.
    pub z: f64,
}

/// One metric over the runs of one scope.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MetricStats {
    /// Which metric.
    pub metric: Metric,
    /// Its values, one per run, in run order.
    pub values: Vec<f64>,
    /// Their summary.
    pub summary: Summary,
    /// Runs with |modified z| > 3.5.
    pub outliers: Vec<OutlierRun>,
}

/// Statistics of one target (or the total) over the runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScopeStats {
    /// Target path, or `total`.
    pub scope: String,
    /// IOPS, mean latency, p99 latency, in [`Metric::ALL`] order, then
    /// those of [`Metric::COUNTERS`] that every run measured.
    pub metrics: Vec<MetricStats>,
}

impl ScopeStats {
    /// The statistics of `metric`, one of [`Metric::ALL`].
    pub fn metric(&self, metric: Metric) -> &MetricStats {
        self.get(metric).expect("every scope has every metric")
    }

    /// The statistics of `metric`, when every run measured it.
    pub fn get(&self, metric: Metric) -> Option<&MetricStats> {
        self.metrics.iter().find(|m| m.metric == metric)
    }
}

/// Repeat statistics of one arm.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ArmStats {
    /// Label of the arm.
    pub label: String,
    /// Number of runs.
    pub runs: usize,
    /// All targets together.
    pub total: ScopeStats,
    /// Per target, in order.
    pub targets: Vec<ScopeStats>,
    /// Drift of total IOPS over the run order (Mann–Kendall), from 3 runs.
    pub iops_trend: Option<Trend>,
    /// Warnings for the user, each with a suggested fix.
    pub warnings: Vec<String>,
}

fn scope_stats(scope: &str, runs: &[&RunRecord]) -> Option<ScopeStats> {
    let rows: Vec<(usize, &TargetMetrics)> = runs
        .iter()
        .filter_map(|r| r.scope(scope).map(|m| (r.seq, m)))
        .collect();
    let metrics = Metric::ALL
        .iter()
        .map(|&metric| metric_stats(metric, &rows))
        .collect::<Option<Vec<_>>>()?
        .into_iter()
        .chain(
            Metric::COUNTERS
                .iter()
                .filter(|&&metric| {
                    metric != Metric::BusyCpuPerIo || rows.iter().any(|(_, m)| polled(m))
                })
                .filter_map(|&metric| metric_stats(metric, &rows)),
        )
        .collect();
    Some(ScopeStats {
        scope: scope.to_string(),
        metrics,
    })
}

/// Whether a run's workers polled (some CPU went to empty polls): only
/// then is busy CPU per I/O other than CPU per I/O.
fn polled(m: &TargetMetrics) -> bool {
    matches!(
        (m.per_io.worker_busy_cpu_ns, m.per_io.worker_cpu_ns),
        (Some(busy), Some(cpu)) if busy < cpu
    )
}

/// The statistics of `metric` over `rows` (`(seq, metrics)` of each run);
/// `None` when some run did not measure it.
fn metric_stats(metric: Metric, rows: &[(usize, &TargetMetrics)]) -> Option<MetricStats> {
    let values: Vec<f64> = rows
        .iter()
        .map(|(_, m)| metric.value(m))
        .collect::<Option<Vec<f64>>>()?;
    // Outliers are looked for in the measured metrics only: the counters
    // move with them (and CPU ticks are 10 ms coarse), so a run that
    // stands out is already flagged by its IOPS or latency.
    let flagged = if values.len() >= MIN_RUNS_FOR_OUTLIERS && Metric::ALL.contains(&metric) {
        stats::outliers(&values)
    } else {
        Vec::new()
    };
    let outliers = flagged
        .into_iter()
        .map(|o| OutlierRun {
            seq: rows[o.index].0,
            value: o.value,
            z: o.z,
        })
        .collect();
    stats::summarize(&values).map(|summary| MetricStats {
        metric,
        values,
        summary,
        outliers,
    })
}

/// Repeat statistics of `arm`; `None` when it has no runs.
pub fn arm_stats(arm: &Arm) -> Option<ArmStats> {
    let runs: Vec<&RunRecord> = arm.runs.iter().collect();
    let total = scope_stats(TOTAL, &runs)?;
    let targets: Vec<ScopeStats> = arm
        .target_names()
        .iter()
        .filter_map(|name| scope_stats(name, &runs))
        .collect();
    let iops_trend = stats::trend(&total.metric(Metric::Iops).values);
    let mut stats = ArmStats {
        label: arm.label.clone(),
        runs: runs.len(),
        total,
        targets,
        iops_trend,
        warnings: Vec::new(),
    };
    stats.warnings = warnings(&stats);
    stats.warnings.extend(crate::anomalies::arm_warnings(arm));
    Some(stats)
}

fn scope_label(scope: &str) -> String {
    if scope == TOTAL {
        "in total".to_string()
    } else {
        format!("on {scope}")
    }
}

fn outlier_warnings(label: &str, scope: &ScopeStats) -> Vec<String> {
    let mut seqs: Vec<usize> = scope
        .metrics
        .iter()
        .flat_map(|m| m.outliers.iter().map(|o| o.seq))
        .collect();
    seqs.sort_unstable();
    seqs.dedup();
    seqs.into_iter()
        .map(|seq| {
            let parts: Vec<String> = scope
                .metrics
                .iter()
                .flat_map(|m| m.outliers.iter().filter(move |o| o.seq == seq).map(move |o| (m.metric, o)))
                .map(|(metric, o)| format!("{} (modified z {:+.1})", crate::format::named_value(metric, o.value), o.z))
                .collect();
            format!(
                "{label}: run {seq} stands out {}: {} (|z| over the MAD above 3.5); \
                 something else ran or the device had not settled: use a longer --ramp, a quieter machine, and repeat",
                scope_label(&scope.scope),
                parts.join(", ")
            )
        })
        .collect()
}

fn warnings(arm: &ArmStats) -> Vec<String> {
    let mut out = Vec::new();
    let targets = if arm.targets.len() > 1 {
        &arm.targets[..]
    } else {
        &[]
    };
    for scope in std::iter::once(&arm.total).chain(targets) {
        out.extend(outlier_warnings(&arm.label, scope));
        let iops = scope.metric(Metric::Iops);
        if let Some(cv) = iops.summary.cv_pct.filter(|cv| *cv > HIGH_CV_PCT) {
            out.push(format!(
                "{}: run-to-run deviation of IOPS {} is {cv:.1} % (stdev/mean, over {} runs), above {HIGH_CV_PCT} %: \
                 use a longer --ramp and --runtime, stop other load, or pin the jobs near the device (numio bench --numa local)",
                arm.label,
                scope_label(&scope.scope),
                iops.summary.n
            ));
        }
    }
    if let Some(t) = arm
        .iops_trend
        .filter(|t| t.n >= MIN_RUNS_FOR_OUTLIERS && t.p_value < DRIFT_P)
    {
        let way = if t.tau > 0.0 { "up" } else { "down" };
        out.push(format!(
            "{}: IOPS drift {way} over the runs (Mann–Kendall: Kendall's tau {:+.2} against run order, p = {:.3}): \
             the target or the machine was still settling (caches, clocks, other load), so the runs are not alike; \
             use a longer --ramp or one unmeasured warm-up run, and repeat",
            arm.label, t.tau, t.p_value
        ));
    }
    if arm.runs == 1 {
        out.push(format!(
            "{}: one run has no run-to-run deviation: use --repeat {MIN_RUNS_FOR_OUTLIERS} or more to measure it and spot outliers",
            arm.label
        ));
    } else if arm.runs < MIN_RUNS_FOR_OUTLIERS {
        out.push(format!(
            "{}: {} runs are too few to spot outliers (needs {MIN_RUNS_FOR_OUTLIERS}) or to trust the deviation: use --repeat {MIN_RUNS_FOR_OUTLIERS} or more",
            arm.label, arm.runs
        ));
    }
    out
}
