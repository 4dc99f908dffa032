//! Two sweeps side by side, point by point: the points both ran (matched
//! by label), each compared on total IOPS and p99 latency with the same
//! inference as `numio compare` (Welch, bootstrap or exact; none with a
//! single run per point).

use serde::{Deserialize, Serialize};

use crate::compare::{infer, Inference};
use crate::export::table::{Align, Table};
use crate::format::{grouped, micros, signed_pct};
use crate::model::{Arm, ResultSet};

/// One point of two sweeps compared.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PointComparison {
    /// The point's label (`jobs=4`).
    pub label: String,
    /// Mean IOPS of A and of B.
    pub iops: (f64, f64),
    /// A's IOPS relative to B's.
    pub iops_inference: Inference,
    /// Mean p99 latency of A and of B, ns.
    pub lat_p99_ns: (f64, f64),
    /// A's p99 latency relative to B's.
    pub lat_p99_inference: Inference,
}

fn series(arm: &Arm, f: fn(&crate::model::TargetMetrics) -> f64) -> Vec<f64> {
    arm.runs.iter().map(|r| f(&r.total)).collect()
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len().max(1) as f64
}

/// The points of `a` that `b` also ran (by label, in `a`'s order), each
/// compared; points without runs on either side are left out.
pub fn compare_points(a: &ResultSet, b: &ResultSet) -> Vec<PointComparison> {
    a.arms
        .iter()
        .filter(|x| !x.runs.is_empty())
        .filter_map(|xa| {
            let xb = b
                .arms
                .iter()
                .find(|x| x.label == xa.label && !x.runs.is_empty())?;
            let (ia, ib) = (series(xa, |m| m.iops), series(xb, |m| m.iops));
            let (la, lb) = (series(xa, |m| m.lat_p99_ns), series(xb, |m| m.lat_p99_ns));
            Some(PointComparison {
                label: xa.label.clone(),
                iops: (mean(&ia), mean(&ib)),
                iops_inference: infer(&ia, &ib),
                lat_p99_ns: (mean(&la), mean(&lb)),
                lat_p99_inference: infer(&la, &lb),
            })
        })
        .collect()
}

/// The comparison as a text table (`a` and `b` name the sweeps).
pub fn render(points: &[PointComparison], a: &str, b: &str) -> String {
    let mut t = Table::new(&[
        ("point", Align::Left),
        ("IOPS A", Align::Right),
        ("IOPS B", Align::Right),
        ("A vs B", Align::Right),
        ("95 % interval", Align::Right),
        ("p99 µs A", Align::Right),
        ("p99 µs B", Align::Right),
        ("A vs B ", Align::Right),
        ("verdict", Align::Left),
    ]);
    let pct = |i: &Inference| i.pct.map_or("-".into(), |p| format!("{} %", signed_pct(p)));
    let ci = |i: &Inference| {
        i.pct_ci.map_or("-".into(), |(lo, hi)| {
            format!("{} … {} %", signed_pct(lo), signed_pct(hi))
        })
    };
    for p in points {
        let verdict = match (&p.iops_inference, p.iops_inference.significant) {
            (i, _) if i.pct_ci.is_none() => "one run per point: no interval (use --repeat)",
            (i, true) if i.pct.unwrap_or(0.0) > 0.0 => "A faster",
            (_, true) => "A slower",
            (_, false) => "no significant difference",
        };
        t.row(vec![
            p.label.clone(),
            grouped(p.iops.0),
            grouped(p.iops.1),
            pct(&p.iops_inference),
            ci(&p.iops_inference),
            micros(p.lat_p99_ns.0),
            micros(p.lat_p99_ns.1),
            pct(&p.lat_p99_inference),
            verdict.to_string(),
        ]);
    }
    format!(
        "numio compare: sweep A ({a}) vs sweep B ({b}), point by point ({} points both ran)\n{}",
        points.len(),
        t.render("  ")
    )
}
