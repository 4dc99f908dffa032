//! Sweep analysis: a curve of runs over one axis (cores, queue depth,
//! drives, block size, mix), one arm per point. Per point the mean IOPS
//! with its 95 % Student-t interval over the repeats, p99 latency, CPU per
//! I/O, interrupts per I/O and CPU headroom; over the curve the scaling
//! efficiency per step, the knee and the saturation point; and the table
//! and SVG chart that show them.
//!
//! Methods, each named:
//! * **efficiency** of point i: `(IOPS(i) / IOPS(0)) / (x(i) / x(0))`, the
//!   share of linear scaling from the first point (for cores:
//!   `IOPS(n) / (n × IOPS(1))`); only for axes that scale work (jobs,
//!   iodepth, devices);
//! * **knee**: the first point whose efficiency falls below the threshold
//!   (0.8 unless asked), judged on the upper end of its interval where
//!   there are repeats, so noise alone does not make a knee;
//! * **saturation**: the first point after which the next adds less than
//!   [`SATURATION_GAIN_PCT`] IOPS.

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use crate::chart::axis;
use crate::chart::svg::{Anchor, Svg, TextStyle};
use crate::model::{Arm, Metric};
use crate::stats::{summarize, tdist::t_quantile};

/// A step that adds less than this share of IOPS means the curve saturated.
pub const SATURATION_GAIN_PCT: f64 = 2.0;

/// Efficiency below which a step is the knee, unless asked otherwise.
pub const DEFAULT_KNEE_EFFICIENCY: f64 = 0.8;

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
    /// Mean p99 latency in nanoseconds.
    pub lat_p99_ns: f64,
    /// Mean CPU headroom of the machine, percent.
    pub cpu_headroom_pct: Option<f64>,
    /// Mean machine CPU per I/O, nanoseconds.
    pub machine_cpu_ns_per_io: Option<f64>,
    /// Mean NVMe interrupts per I/O.
    pub interrupts_per_io: Option<f64>,
    /// Scaling efficiency against the first point (scaling axes only).
    pub efficiency: Option<f64>,
}

/// A whole sweep, analysed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Sweep {
    /// The axis (`jobs`, `iodepth`, …).
    pub axis: String,
    /// Points in axis order.
    pub points: Vec<SweepPoint>,
    /// Efficiency threshold of the knee.
    pub knee_efficiency: f64,
    /// Index of the knee point, if the curve bends.
    pub knee: Option<usize>,
    /// Index of the point where the curve saturates, if it does.
    pub saturation: Option<usize>,
    /// What the analysis says, in sentences.
    pub findings: Vec<String>,
}

/// Whether an axis scales the work, so that linear scaling is the ideal.
pub fn scales_work(axis: &str) -> bool {
    matches!(
        axis,
        "jobs" | "iodepth" | "devices" | "reactors" | "initiator-cores"
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

fn mean_of(arm: &Arm, metric: Metric) -> Option<f64> {
    let v: Vec<f64> = arm
        .runs
        .iter()
        .map(|r| metric.value(&r.total))
        .collect::<Option<Vec<f64>>>()?;
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}

fn point(arm: &Arm, x: f64) -> Option<SweepPoint> {
    let iops: Vec<f64> = arm.runs.iter().map(|r| r.total.iops).collect();
    let s = summarize(&iops)?;
    let ci =
        (s.n >= 2).then(|| t_quantile(0.975, (s.n - 1) as f64) * s.stdev / (s.n as f64).sqrt());
    let bw = arm
        .runs
        .iter()
        .map(|r| r.total.bandwidth_bytes_per_s)
        .sum::<f64>()
        / s.n as f64;
    Some(SweepPoint {
        label: arm.label.clone(),
        x,
        runs: s.n,
        iops: s.mean,
        iops_ci95: ci,
        bandwidth_bytes_per_s: bw,
        lat_p99_ns: mean_of(arm, Metric::LatP99).unwrap_or(f64::NAN),
        cpu_headroom_pct: mean_of(arm, Metric::CpuHeadroom),
        machine_cpu_ns_per_io: mean_of(arm, Metric::MachineCpuPerIo),
        interrupts_per_io: mean_of(arm, Metric::InterruptsPerIo),
        efficiency: None,
    })
}

/// Analyses the arms of a sweep over `axis`, the point of arm i at
/// `xs[i]`; arms without runs (an interrupted sweep) are left out.
pub fn analyze(axis: &str, xs: &[f64], arms: &[Arm], knee_efficiency: f64) -> Sweep {
    let mut points: Vec<SweepPoint> = arms
        .iter()
        .zip(xs)
        .filter_map(|(a, &x)| point(a, x))
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
    let findings = findings(axis, &points, knee_at, saturation_at, knee_efficiency);
    Sweep {
        axis: axis.to_string(),
        points,
        knee_efficiency,
        knee: knee_at,
        saturation: saturation_at,
        findings,
    }
}

fn findings(
    axis: &str,
    points: &[SweepPoint],
    knee: Option<usize>,
    sat: Option<usize>,
    threshold: f64,
) -> Vec<String> {
    let mut out = Vec::new();
    let si = |v: f64| crate::format::grouped(v);
    match knee {
        Some(k) => out.push(format!(
            "knee at {}: scaling efficiency {:.0} % (below {:.0} %) after {:.0} % at {}",
            points[k].label,
            points[k].efficiency.unwrap_or(f64::NAN) * 100.0,
            threshold * 100.0,
            points[k.saturating_sub(1)].efficiency.unwrap_or(1.0) * 100.0,
            points[k.saturating_sub(1)].label,
        )),
        None if points
            .iter()
            .any(|p| p.efficiency.is_some_and(|e| e < threshold)) =>
        {
            out.push(format!(
                "no confirmed knee: efficiency falls below {:.0} % only within the 95 % intervals of the repeats; \
                 run more --repeat rounds or a longer --runtime to narrow them",
                threshold * 100.0
            ))
        }
        None if scales_work(axis) && points.len() > 1 => out.push(format!(
            "no knee: every step keeps {:.0} % or more of linear scaling",
            threshold * 100.0
        )),
        None => {}
    }
    if let Some(s) = sat {
        out.push(format!(
            "saturation: {} IOPS reached at {}; {} adds less than {SATURATION_GAIN_PCT} %",
            si(points[s].iops),
            points[s].label,
            points[s + 1].label
        ));
    }
    out
}

/// The sweep as a text table, then its findings.
pub fn table(sweep: &Sweep) -> String {
    use crate::export::table::{Align, Table};
    let mut t = Table::new(&[
        ("point", Align::Left),
        ("runs", Align::Right),
        ("IOPS", Align::Right),
        ("±95 %", Align::Right),
        ("MB/s", Align::Right),
        ("lat p99 µs", Align::Right),
        ("efficiency", Align::Right),
        ("CPU µs/IO", Align::Right),
        ("interrupts/IO", Align::Right),
        ("CPU headroom", Align::Right),
    ]);
    let opt = |v: Option<f64>, f: &dyn Fn(f64) -> String| v.map_or("-".to_string(), f);
    for (i, p) in sweep.points.iter().enumerate() {
        let mark = if Some(i) == sweep.knee { " (knee)" } else { "" };
        t.row(vec![
            format!("{}{mark}", p.label),
            p.runs.to_string(),
            crate::format::grouped(p.iops),
            opt(p.iops_ci95, &|c| crate::format::grouped(c)),
            format!("{:.1}", p.bandwidth_bytes_per_s / 1e6),
            crate::format::micros(p.lat_p99_ns),
            opt(p.efficiency, &|e| format!("{:.0} %", e * 100.0)),
            opt(p.machine_cpu_ns_per_io, &|v| format!("{:.2}", v / 1000.0)),
            opt(p.interrupts_per_io, &|v| format!("{v:.3}")),
            opt(p.cpu_headroom_pct, &|v| format!("{v:.1} %")),
        ]);
    }
    let mut out = format!("numio sweep over {}\n{}", sweep.axis, t.render("  "));
    for f in &sweep.findings {
        let _ = writeln!(out, "  {f}");
    }
    out
}

/// An SVG chart of a sweep: IOPS against the axis with the 95 % intervals
/// as error bars and, for scaling axes, the ideal linear line from the
/// first point; below it the CPU headroom against the axis.
pub fn svg(sweep: &Sweep, title: &str) -> String {
    let mut svg = Svg::new(CHART_WIDTH, 640.0);
    svg.text(
        CHART_WIDTH / 2.0,
        30.0,
        18.0,
        Anchor::Middle,
        title,
        TextStyle::BOLD,
    );
    let xs: Vec<f64> = sweep.points.iter().map(|p| p.x).collect();
    let x_lo = xs.iter().copied().fold(f64::INFINITY, f64::min);
    let x_hi = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let x_range = (x_lo, if x_hi > x_lo { x_hi } else { x_lo + 1.0 });
    iops_panel(&mut svg, sweep, &xs, x_range);
    headroom_panel(&mut svg, sweep, &xs, x_range);
    svg.finish()
}

/// Width of a sweep chart in px.
const CHART_WIDTH: f64 = 960.0;

/// The plot area of the panel whose top is `top`: `(x, y, w, h)`.
fn panel(top: f64) -> (f64, f64, f64, f64) {
    (100.0, top, CHART_WIDTH - 140.0, 200.0)
}

/// A point of the panel `area` over `x_range` and `(lo, hi)` in y.
fn place(
    area: (f64, f64, f64, f64),
    x_range: (f64, f64),
    lo: f64,
    hi: f64,
    x: f64,
    y: f64,
) -> (f64, f64) {
    let (fx, fy, fw, fh) = area;
    (
        axis::map(x, x_range.0, x_range.1, fx, fx + fw),
        axis::map(y, lo, hi, fy + fh, fy),
    )
}

fn iops_panel(svg: &mut Svg, sweep: &Sweep, xs: &[f64], x_range: (f64, f64)) {
    let area = panel(70.0);
    let linear = scales_work(&sweep.axis) && xs.first().is_some_and(|&x| x > 0.0);
    let ideal = |p: &SweepPoint| sweep.points[0].iops * p.x / xs[0];
    let y_hi = sweep
        .points
        .iter()
        .map(|p| (p.iops + p.iops_ci95.unwrap_or(0.0)).max(if linear { ideal(p) } else { 0.0 }))
        .fold(1.0, f64::max);
    let y = axis::linear(0.0, y_hi, 5);
    frame(svg, area, &sweep.axis, "IOPS", &y, x_range.0, x_range.1, xs);
    let at = |x: f64, v: f64| place(area, x_range, y.min, y.max, x, v);
    if linear {
        let pts: Vec<(f64, f64)> = sweep
            .points
            .iter()
            .map(|p| at(p.x, ideal(p).min(y.max)))
            .collect();
        for w in pts.windows(2) {
            svg.line(w[0], w[1], "#888888", 1.5, true);
        }
    }
    let color = crate::chart::color(0);
    let pts: Vec<(f64, f64)> = sweep.points.iter().map(|p| at(p.x, p.iops)).collect();
    svg.polyline(&pts, color, 2.0);
    for (p, &(cx, cy)) in sweep.points.iter().zip(&pts) {
        if let Some(ci) = p.iops_ci95 {
            let (_, lo) = at(p.x, (p.iops - ci).max(0.0));
            let (_, hi) = at(p.x, p.iops + ci);
            svg.line((cx, lo), (cx, hi), color, 1.5, false);
        }
        svg.circle(cx, cy, 4.0, color);
    }
    if let Some(k) = sweep.knee {
        let (cx, cy) = pts[k];
        svg.ring(cx, cy, 9.0, crate::chart::color(1));
        svg.text(
            cx + 12.0,
            cy - 10.0,
            12.0,
            Anchor::Start,
            "knee",
            TextStyle::BOLD,
        );
    }
    let legend = if linear {
        "measured (95 % CI bars) · dashed: ideal linear from the first point"
    } else {
        "measured (95 % CI bars)"
    };
    svg.text(
        area.0,
        area.1 - 10.0,
        12.0,
        Anchor::Start,
        legend,
        TextStyle::PLAIN,
    );
}

fn headroom_panel(svg: &mut Svg, sweep: &Sweep, xs: &[f64], x_range: (f64, f64)) {
    let area = panel(380.0);
    let y = axis::linear(0.0, 100.0, 5);
    frame(
        svg,
        area,
        &sweep.axis,
        "CPU headroom %",
        &y,
        x_range.0,
        x_range.1,
        xs,
    );
    let color = crate::chart::color(2);
    let pts: Vec<(f64, f64)> = sweep
        .points
        .iter()
        .filter_map(|p| Some(place(area, x_range, 0.0, 100.0, p.x, p.cpu_headroom_pct?)))
        .collect();
    svg.polyline(&pts, color, 2.0);
    for &(cx, cy) in &pts {
        svg.circle(cx, cy, 4.0, color);
    }
}

#[allow(clippy::too_many_arguments)]
fn frame(
    svg: &mut Svg,
    (x, y, w, h): (f64, f64, f64, f64),
    x_title: &str,
    y_title: &str,
    yaxis: &axis::Linear,
    x_lo: f64,
    x_hi: f64,
    xs: &[f64],
) {
    svg.rect(x, y, w, h, "none", Some("#333333"));
    for &t in &yaxis.ticks {
        let ty = axis::map(t, yaxis.min, yaxis.max, y + h, y);
        svg.line((x, ty), (x + w, ty), "#e0e0e0", 1.0, false);
        svg.text(
            x - 6.0,
            ty + 4.0,
            11.0,
            Anchor::End,
            &crate::format::grouped(t),
            TextStyle::PLAIN,
        );
    }
    for &v in xs {
        let tx = axis::map(v, x_lo, x_hi, x, x + w);
        svg.text(
            tx,
            y + h + 18.0,
            11.0,
            Anchor::Middle,
            &format!("{v}"),
            TextStyle::PLAIN,
        );
    }
    svg.text(
        x + w / 2.0,
        y + h + 40.0,
        13.0,
        Anchor::Middle,
        x_title,
        TextStyle::PLAIN,
    );
    svg.text(
        x - 60.0,
        y + h / 2.0,
        13.0,
        Anchor::Middle,
        y_title,
        TextStyle::VERTICAL,
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    /// SPDK's curve shape: linear to 4 cores, then bending as the drives
    /// saturate.
    #[test]
    fn efficiency_knee_and_saturation_of_a_known_curve() {
        let xs = [1.0, 2.0, 4.0, 6.0, 8.0];
        let ys = [1.0e6, 2.0e6, 3.96e6, 4.4e6, 4.45e6];
        let e = efficiency(&xs, &ys);
        assert!((e[1] - 1.0).abs() < 1e-12 && (e[2] - 0.99).abs() < 1e-12);
        assert!((e[3] - 4.4 / 6.0).abs() < 1e-12);
        assert_eq!(knee(&e, &[], 0.8), Some(3));
        // A wide interval at 6 cores: the best case is still above 0.8.
        assert_eq!(knee(&e, &[0.0, 0.0, 0.0, 0.2, 0.0], 0.8), Some(4));
        assert_eq!(saturation(&ys, 2.0), Some(3), "6 → 8 cores adds 1.1 %");
        assert_eq!(saturation(&[1.0, 2.0, 3.0], 2.0), None);
        assert!(efficiency(&[], &[]).is_empty());
    }

    #[test]
    fn a_sweep_of_arms_finds_its_knee_and_says_so() {
        let arm = |label: &str, iops: &[f64]| Arm {
            label: label.into(),
            spec: label.into(),
            runs: iops
                .iter()
                .enumerate()
                .map(|(i, &v)| crate::model::RunRecord {
                    seq: i + 1,
                    started_unix_s: 0,
                    targets: vec![],
                    total: crate::model::TargetMetrics {
                        target: crate::model::TOTAL.into(),
                        iops: v,
                        bandwidth_bytes_per_s: v * 4096.0,
                        lat_mean_ns: 1.0,
                        lat_p99_ns: 1.0,
                        percentiles: vec![],
                        per_io: results::PerIo {
                            cpu_headroom_pct: Some(50.0),
                            ..Default::default()
                        },
                    },
                    raw: None,
                })
                .collect(),
        };
        let arms = [
            arm("jobs=1", &[100.0, 102.0]),
            arm("jobs=2", &[200.0, 198.0]),
            arm("jobs=4", &[210.0, 212.0]),
        ];
        let s = analyze("jobs", &[1.0, 2.0, 4.0], &arms, 0.8);
        assert_eq!(s.knee, Some(2));
        assert_eq!(s.points[0].iops, 101.0);
        assert!(s.points[0].iops_ci95.is_some());
        assert_eq!(s.points[2].cpu_headroom_pct, Some(50.0));
        assert!(
            s.findings[0].starts_with("knee at jobs=4"),
            "{:?}",
            s.findings
        );
        let text = table(&s);
        assert!(
            text.contains("jobs=4 (knee)") && text.contains("CPU headroom"),
            "{text}"
        );
        let chart = svg(&s, "test");
        assert!(
            chart.starts_with("<svg") && chart.contains("knee"),
            "{chart}"
        );
        // bs does not scale work: no efficiency, no knee.
        let s = analyze("bs", &[1.0, 2.0, 4.0], &arms, 0.8);
        assert_eq!((s.knee, s.points[1].efficiency), (None, None));
    }
}
