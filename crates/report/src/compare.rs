//! A/B comparison of two arms: for each metric (IOPS, mean latency, p99
//! latency), in total and per target, the percentage difference of the means
//! with a 95 % confidence interval, and a plain verdict.
//!
//! Method, chosen per metric: Welch's t-test (Welch–Satterthwaite df, CI of
//! the ratio by Fieller) when both arms have at least
//! [`MIN_RUNS_FOR_WELCH`] runs; a seeded percentile bootstrap when fewer;
//! an exact answer when neither arm varies; no inference with one run.

use serde::{Deserialize, Serialize};

use crate::format::{cv, signed_pct};
use crate::model::Arm;
use crate::repeat::{arm_stats, ArmStats, Metric, ScopeStats};
use crate::stats::{self, bootstrap, welch, Summary};

/// Confidence level of every interval.
pub const CONFIDENCE: f64 = 0.95;
/// Runs per arm from which Welch's t-test is used instead of the bootstrap.
pub const MIN_RUNS_FOR_WELCH: usize = 5;

/// How a difference was judged.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "method")]
pub enum Method {
    /// Welch's t-test.
    Welch {
        /// Welch–Satterthwaite degrees of freedom.
        df: f64,
        /// Two-sided p-value.
        p_value: f64,
    },
    /// Percentile bootstrap.
    Bootstrap {
        /// Resamples drawn.
        resamples: usize,
        /// Seed of the generator.
        seed: u64,
    },
    /// No spread in either arm: the difference is exact.
    Exact,
    /// An arm has fewer than two runs.
    TooFewRuns,
}

impl Method {
    /// How the method reads in a report.
    pub fn describe(&self) -> String {
        match self {
            Method::Welch { df, p_value } if *p_value >= 0.001 => {
                format!("Welch's t-test, df {df:.1}, p = {p_value:.3}")
            }
            Method::Welch { df, p_value } => {
                format!("Welch's t-test, df {df:.1}, p = {p_value:.1e}")
            }
            Method::Bootstrap { resamples, .. } => format!(
                "percentile bootstrap ({} resamples, fewer than {MIN_RUNS_FOR_WELCH} runs per arm)",
                crate::format::grouped(*resamples as f64)
            ),
            Method::Exact => "exact (no run-to-run spread in either arm)".to_string(),
            Method::TooFewRuns => "none (an arm has fewer than 2 runs)".to_string(),
        }
    }
}

/// The inference on one metric of one scope, `a` relative to `b`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Inference {
    /// How it was judged.
    pub method: Method,
    /// `mean(a) / mean(b) − 1` in percent; `None` when `mean(b)` is 0.
    pub pct: Option<f64>,
    /// Its confidence interval in percent.
    pub pct_ci: Option<(f64, f64)>,
    /// Confidence interval of `mean(a) − mean(b)`.
    pub diff_ci: Option<(f64, f64)>,
    /// Whether the interval of the difference excludes 0.
    pub significant: bool,
}

/// Judges `a` against `b` (see the module doc for the method).
pub fn infer(a: &[f64], b: &[f64]) -> Inference {
    let (ma, mb) = (stats::describe::mean(a), stats::describe::mean(b));
    let pct = (mb != 0.0).then(|| (ma / mb - 1.0) * 100.0);
    let none = |method| Inference {
        method,
        pct,
        pct_ci: None,
        diff_ci: None,
        significant: false,
    };
    if a.len() < 2 || b.len() < 2 {
        return none(Method::TooFewRuns);
    }
    if stats::describe::variance(a) == 0.0 && stats::describe::variance(b) == 0.0 {
        return Inference {
            method: Method::Exact,
            pct,
            pct_ci: pct.map(|p| (p, p)),
            diff_ci: Some((ma - mb, ma - mb)),
            significant: ma != mb,
        };
    }
    if a.len().min(b.len()) < MIN_RUNS_FOR_WELCH {
        return match bootstrap(
            a,
            b,
            CONFIDENCE,
            stats::bootstrap::RESAMPLES,
            stats::bootstrap::SEED,
        ) {
            Ok(bs) => Inference {
                method: Method::Bootstrap {
                    resamples: bs.resamples,
                    seed: bs.seed,
                },
                pct,
                pct_ci: bs.pct_ci,
                diff_ci: Some(bs.diff_ci),
                significant: bs.diff_ci.0 > 0.0 || bs.diff_ci.1 < 0.0,
            },
            Err(_) => none(Method::TooFewRuns),
        };
    }
    match welch(a, b, CONFIDENCE) {
        Ok(w) => Inference {
            method: Method::Welch {
                df: w.df,
                p_value: w.p_value,
            },
            pct,
            pct_ci: w.pct_ci,
            diff_ci: Some((w.diff_low, w.diff_high)),
            significant: w.diff_low > 0.0 || w.diff_high < 0.0,
        },
        Err(_) => none(Method::TooFewRuns),
    }
}

/// One metric of one scope compared.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MetricComparison {
    /// Target path, or `total`.
    pub scope: String,
    /// Which metric.
    pub metric: Metric,
    /// Summary of arm A.
    pub a: Summary,
    /// Summary of arm B.
    pub b: Summary,
    /// A relative to B.
    pub inference: Inference,
    /// The plain verdict.
    pub verdict: String,
}

/// A whole comparison.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    /// Repeat statistics of arm A.
    pub a: ArmStats,
    /// Repeat statistics of arm B.
    pub b: ArmStats,
    /// Confidence level of the intervals.
    pub confidence: f64,
    /// Every metric in total, then every metric of every target both arms ran.
    pub metrics: Vec<MetricComparison>,
    /// Warnings for the user, each with a suggested fix.
    pub warnings: Vec<String>,
}

impl Comparison {
    /// The comparison of `metric` in `scope`.
    pub fn get(&self, scope: &str, metric: Metric) -> Option<&MetricComparison> {
        self.metrics
            .iter()
            .find(|m| m.scope == scope && m.metric == metric)
    }
}

/// `t`, with busy CPU per I/O taken from its CPU per I/O when `other` has
/// one and `t` not: `t`'s workers did not poll (they slept when idle), so
/// all their CPU went to the I/O.
fn with_busy(t: &ScopeStats, other: &ScopeStats) -> ScopeStats {
    let mut t = t.clone();
    if t.get(Metric::BusyCpuPerIo).is_none() && other.get(Metric::BusyCpuPerIo).is_some() {
        if let Some(cpu) = t.get(Metric::CpuPerIo) {
            let mut busy = cpu.clone();
            busy.metric = Metric::BusyCpuPerIo;
            t.metrics.push(busy);
        }
    }
    t
}

/// Compares arm `a` with arm `b`; `None` when an arm has no runs.
pub fn compare(a: &Arm, b: &Arm) -> Option<Comparison> {
    let (sa, sb) = (arm_stats(a)?, arm_stats(b)?);
    let mut metrics = Vec::new();
    let scopes =
        std::iter::once((&sa.total, &sb.total)).chain(sa.targets.iter().filter_map(|ta| {
            sb.targets
                .iter()
                .find(|tb| tb.scope == ta.scope)
                .map(|tb| (ta, tb))
        }));
    for (ta, tb) in scopes {
        let (ta, tb) = (&with_busy(ta, tb), &with_busy(tb, ta));
        for metric in Metric::ALL.into_iter().chain(Metric::COUNTERS) {
            if ta.get(metric).is_some() && tb.get(metric).is_some() {
                metrics.push(compare_metric(&sa.label, &sb.label, ta, tb, metric));
            }
        }
    }
    let mut warnings: Vec<String> = sa.warnings.iter().chain(&sb.warnings).cloned().collect();
    warnings.extend(crate::anomalies::contrast_warning(a, b));
    if let Some(total) = metrics.first() {
        if matches!(total.inference.method, Method::Bootstrap { .. }) {
            warnings.push(format!(
                "only {} and {} runs: the 95 % intervals come from a bootstrap and are rough \
                 (too narrow with 2 or 3 runs); use --repeat {MIN_RUNS_FOR_WELCH} or more for Welch's t-test",
                sa.runs, sb.runs
            ));
        }
    }
    Some(Comparison {
        a: sa,
        b: sb,
        confidence: CONFIDENCE,
        metrics,
        warnings,
    })
}

fn compare_metric(
    la: &str,
    lb: &str,
    ta: &ScopeStats,
    tb: &ScopeStats,
    metric: Metric,
) -> MetricComparison {
    let (ma, mb) = (ta.metric(metric), tb.metric(metric));
    let inference = infer(&ma.values, &mb.values);
    let arms = VerdictArm::pair(la, &ma.values, ma.summary, lb, &mb.values, mb.summary);
    let verdict = verdict(metric, &inference, arms);
    MetricComparison {
        scope: ta.scope.clone(),
        metric,
        a: ma.summary,
        b: mb.summary,
        inference,
        verdict,
    }
}

/// What the verdict needs of one arm.
#[derive(Debug, Clone, Copy)]
struct VerdictArm<'a> {
    label: &'a str,
    values: &'a [f64],
    summary: Summary,
}

impl<'a> VerdictArm<'a> {
    fn pair(
        la: &'a str,
        va: &'a [f64],
        sa: Summary,
        lb: &'a str,
        vb: &'a [f64],
        sb: Summary,
    ) -> [VerdictArm<'a>; 2] {
        [
            VerdictArm {
                label: la,
                values: va,
                summary: sa,
            },
            VerdictArm {
                label: lb,
                values: vb,
                summary: sb,
            },
        ]
    }
}

fn ci_text(ci: Option<(f64, f64)>) -> String {
    match ci {
        Some((low, high)) => format!("95 % CI {} … {} %", signed_pct(low), signed_pct(high)),
        None => "95 % CI unbounded".to_string(),
    }
}

/// The plain verdict of `inference` (`arms[0]` relative to `arms[1]`).
fn verdict(metric: Metric, inference: &Inference, arms: [VerdictArm<'_>; 2]) -> String {
    let [a, b] = arms;
    let name = metric.name();
    let deviation = |x: &VerdictArm, y: &VerdictArm| {
        format!(
            "run-to-run deviation {} vs {}",
            cv(x.summary.cv_pct),
            cv(y.summary.cv_pct)
        )
    };
    match inference.method {
        Method::TooFewRuns => {
            let short = if a.summary.n < 2 { a } else { b };
            return format!(
                "cannot compare {name}: {} has {} run; use --repeat 2 or more ({MIN_RUNS_FOR_WELCH} or more for Welch's t-test)",
                short.label, short.summary.n
            );
        }
        Method::Exact if !inference.significant => {
            return format!(
                "no difference in {name}: every run of both arms gave {}",
                crate::format::metric_value(metric, a.summary.mean)
            );
        }
        _ => {}
    }
    if !inference.significant {
        return format!(
            "no significant difference in {name} ({} vs {}: {} %, {}), {}",
            a.label,
            b.label,
            inference.pct.map_or("n/a".to_string(), signed_pct),
            ci_text(inference.pct_ci),
            deviation(&a, &b)
        );
    }
    let a_better = (a.summary.mean > b.summary.mean) == metric.higher_is_better();
    let (win, lose, inf) = if a_better {
        (a, b, inference.clone())
    } else {
        (b, a, infer(b.values, a.values))
    };
    let pct = inf.pct.map_or("n/a".to_string(), signed_pct);
    if inf.method == Method::Exact {
        return format!(
            "{}: {pct} % {name} (every run of each arm gave the same value: the difference is exact)",
            win.label
        );
    }
    format!(
        "{}: {pct} % {name} ({}), {}",
        win.label,
        ci_text(inf.pct_ci),
        deviation(&win, &lose)
    )
}
