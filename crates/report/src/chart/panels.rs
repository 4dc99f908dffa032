//! The three panels of a chart.

use super::axis::{decades, linear, log_ticks, map, nines, Linear};
use super::svg::{Anchor, Svg, TextStyle};
use super::{color, frame_titles, legend, Frame};
use crate::analysis::Analysis;
use crate::format::grouped;
use crate::model::{Arm, ResultSet, RunRecord, TOTAL};
use crate::repeat::{ArmStats, Metric};

const GRID: &str = "#dddddd";

fn y_grid(svg: &mut Svg, frame: Frame, ticks: &[(f64, String)]) {
    for (y, label) in ticks {
        svg.line((frame.x, *y), (frame.right(), *y), GRID, 1.0, false);
        svg.text(
            frame.x - 6.0,
            y + 4.0,
            11.0,
            Anchor::End,
            label,
            TextStyle::PLAIN,
        );
    }
}

/// Horizontal grid lines and labels at the ticks of a linear axis.
fn linear_grid(svg: &mut Svg, frame: Frame, y: &Linear, label: impl Fn(f64) -> String) {
    let ticks: Vec<(f64, String)> = y
        .ticks
        .iter()
        .map(|t| (map(*t, y.min, y.max, frame.bottom(), frame.y), label(*t)))
        .collect();
    y_grid(svg, frame, &ticks);
}

/// Total IOPS of every run, by execution order, one series per arm.
pub fn iops_per_run(svg: &mut Svg, frame: Frame, set: &ResultSet, analysis: &Analysis) {
    let runs = set.runs_in_order();
    let fold = |(lo, hi): (f64, f64), r: &(&Arm, &RunRecord)| {
        (lo.min(r.1.total.iops), hi.max(r.1.total.iops))
    };
    let (lo, hi) = runs.iter().fold((f64::INFINITY, f64::NEG_INFINITY), fold);
    let max_seq = runs.iter().map(|(_, r)| r.seq).max().unwrap_or(1).max(2);
    let title = "Total IOPS of each run";
    frame_titles(
        svg,
        frame,
        title,
        "run, in execution order",
        "IOPS (I/O per second)",
    );
    if runs.is_empty() {
        return;
    }
    let pad = (hi - lo) * 0.08;
    let y = linear(lo - pad, hi + pad, 5);
    linear_grid(svg, frame, &y, grouped);
    let x_of = |seq: usize| {
        map(
            seq as f64,
            0.5,
            max_seq as f64 + 0.5,
            frame.x,
            frame.right(),
        )
    };
    let step = (max_seq / 12).max(1);
    for seq in (1..=max_seq).filter(|s| (s - 1) % step == 0) {
        let label = seq.to_string();
        svg.text(
            x_of(seq),
            frame.bottom() + 16.0,
            11.0,
            Anchor::Middle,
            &label,
            TextStyle::PLAIN,
        );
    }
    let y_of = |iops: f64| map(iops, y.min, y.max, frame.bottom(), frame.y);
    for (i, arm) in set.arms.iter().enumerate() {
        let stats = analysis.arms.iter().find(|a| a.label == arm.label);
        let scale = Scale {
            x_of: &x_of,
            y_of: &y_of,
        };
        arm_series(svg, frame, arm, stats, color(i), &scale);
    }
    let (nx, ny) = (
        frame.right() + 16.0,
        frame.y + 20.0 * set.arms.len() as f64 + 16.0,
    );
    svg.text(
        nx,
        ny,
        10.0,
        Anchor::Start,
        "dashed: mean of the arm",
        TextStyle::PLAIN,
    );
    let ring = "ring: outlier, |z| > 3.5";
    svg.text(nx, ny + 14.0, 10.0, Anchor::Start, ring, TextStyle::PLAIN);
    let labels: Vec<&str> = set.arms.iter().map(|a| a.label.as_str()).collect();
    legend(svg, frame, &labels);
}

/// Maps run number and IOPS to the plot.
struct Scale<'a> {
    x_of: &'a dyn Fn(usize) -> f64,
    y_of: &'a dyn Fn(f64) -> f64,
}

/// One arm's runs: line, points, its mean (dashed) and rings on outliers.
fn arm_series(
    svg: &mut Svg,
    frame: Frame,
    arm: &Arm,
    stats: Option<&ArmStats>,
    fill: &str,
    scale: &Scale,
) {
    let iops = stats.map(|s| s.total.metric(Metric::Iops));
    let outliers: Vec<usize> = iops
        .map(|m| m.outliers.iter().map(|o| o.seq).collect())
        .unwrap_or_default();
    let points: Vec<(usize, f64, f64)> = arm
        .runs
        .iter()
        .map(|r| (r.seq, (scale.x_of)(r.seq), (scale.y_of)(r.total.iops)))
        .collect();
    let line: Vec<(f64, f64)> = points.iter().map(|&(_, x, y)| (x, y)).collect();
    svg.polyline(&line, fill, 1.5);
    if let Some(m) = iops {
        let my = (scale.y_of)(m.summary.mean);
        svg.line((frame.x, my), (frame.right(), my), fill, 1.0, true);
    }
    for (seq, px, py) in points {
        svg.circle(px, py, 4.0, fill);
        if outliers.contains(&seq) {
            svg.ring(px, py, 9.0, fill);
            svg.text(
                px + 12.0,
                py + 4.0,
                10.0,
                Anchor::Start,
                "outlier",
                TextStyle::PLAIN,
            );
        }
    }
}

/// `path`, cut from the left to at most `max` characters.
fn short(path: &str, max: usize) -> String {
    let chars: Vec<char> = path.chars().collect();
    if chars.len() <= max {
        path.to_string()
    } else {
        let keep = max.saturating_sub(1);
        format!(
            "…{}",
            chars[chars.len() - keep..].iter().collect::<String>()
        )
    }
}

/// Stdev % of IOPS per target (and total with several targets), per arm.
pub fn deviation_bars(svg: &mut Svg, frame: Frame, analysis: &Analysis) {
    let title = "Run-to-run deviation of IOPS per target";
    frame_titles(svg, frame, title, "target", "stdev of IOPS, % of mean");
    let Some(first) = analysis.arms.first() else {
        return;
    };
    let mut scopes: Vec<String> = first.targets.iter().map(|t| t.scope.clone()).collect();
    if scopes.len() != 1 {
        scopes.push(TOTAL.to_string());
    }
    let cv_of = |arm: usize, scope: &str| {
        let a = &analysis.arms[arm];
        std::iter::once(&a.total)
            .chain(&a.targets)
            .find(|s| s.scope == scope)
            .and_then(|s| s.metric(Metric::Iops).summary.cv_pct)
    };
    let top = (0..analysis.arms.len())
        .flat_map(|a| scopes.iter().filter_map(move |s| cv_of(a, s)))
        .fold(0.0f64, f64::max);
    let y = linear(0.0, if top > 0.0 { top * 1.15 } else { 1.0 }, 5);
    linear_grid(svg, frame, &y, |t| format!("{t}"));
    let group_w = frame.w / scopes.len() as f64;
    let bar_w = (group_w * 0.7 / analysis.arms.len() as f64).min(60.0);
    for (g, scope) in scopes.iter().enumerate() {
        let center = frame.x + group_w * (g as f64 + 0.5);
        svg.text(
            center,
            frame.bottom() + 16.0,
            11.0,
            Anchor::Middle,
            &short(scope, (group_w / 7.0) as usize),
            TextStyle::PLAIN,
        );
        let left = center - bar_w * analysis.arms.len() as f64 / 2.0;
        for a in 0..analysis.arms.len() {
            let slot = (left + bar_w * a as f64, bar_w);
            bar(svg, frame, slot, cv_of(a, scope), &y, color(a));
        }
    }
    let labels: Vec<&str> = analysis.arms.iter().map(|a| a.label.as_str()).collect();
    legend(svg, frame, &labels);
}

/// One bar of `value` percent in the horizontal `slot` (x, width), or `n/a`.
fn bar(svg: &mut Svg, frame: Frame, slot: (f64, f64), value: Option<f64>, y: &Linear, fill: &str) {
    let (bx, bar_w) = slot;
    let Some(v) = value else {
        let (x, at) = (bx + bar_w / 2.0, frame.bottom() - 4.0);
        svg.text(x, at, 10.0, Anchor::Middle, "n/a", TextStyle::PLAIN);
        return;
    };
    let by = map(v, y.min, y.max, frame.bottom(), frame.y);
    svg.rect(bx + 1.0, by, bar_w - 2.0, frame.bottom() - by, fill, None);
    let label = format!("{v:.2} %");
    svg.text(
        bx + bar_w / 2.0,
        by - 4.0,
        10.0,
        Anchor::Middle,
        &label,
        TextStyle::PLAIN,
    );
}

/// Mean latency (µs) at each percentile over the runs of `arm`, by percentile.
fn mean_percentiles(arm: &Arm) -> Vec<(f64, f64)> {
    let mut points: Vec<(f64, f64, usize)> = Vec::new();
    for run in &arm.runs {
        for p in run
            .total
            .percentiles
            .iter()
            .filter(|p| p.percentile < 100.0 && p.latency_ns > 0.0)
        {
            match points
                .iter_mut()
                .find(|(q, _, _)| (q - p.percentile).abs() < 1e-9)
            {
                Some(entry) => {
                    entry.1 += p.latency_ns;
                    entry.2 += 1;
                }
                None => points.push((p.percentile, p.latency_ns, 1)),
            }
        }
    }
    points.sort_by(|a, b| a.0.total_cmp(&b.0));
    points
        .into_iter()
        .map(|(p, sum, n)| (p, sum / n as f64 / 1000.0))
        .collect()
}

/// Latency percentile curves per arm: nines scale across, log scale up.
pub fn latency_curves(svg: &mut Svg, frame: Frame, set: &ResultSet) {
    let title = "Total latency percentiles (mean over runs)";
    frame_titles(
        svg,
        frame,
        title,
        "percentile (log scale of 1 − p)",
        "latency, µs (log scale)",
    );
    let curves: Vec<Vec<(f64, f64)>> = set.arms.iter().map(mean_percentiles).collect();
    let all: Vec<(f64, f64)> = curves.iter().flatten().copied().collect();
    if all.is_empty() {
        let (cx, cy) = (frame.x + frame.w / 2.0, frame.y + frame.h / 2.0);
        svg.text(
            cx,
            cy,
            12.0,
            Anchor::Middle,
            "no latency percentiles in these runs",
            TextStyle::PLAIN,
        );
        return;
    }
    let lo = all.iter().map(|p| p.1).fold(f64::INFINITY, f64::min);
    let hi = all.iter().map(|p| p.1).fold(f64::NEG_INFINITY, f64::max);
    let (ymin, ymax, decade_ticks) = decades(lo, hi);
    let y_of = |us: f64| {
        map(
            us.log10(),
            ymin.log10(),
            ymax.log10(),
            frame.bottom(),
            frame.y,
        )
    };
    let ticks: Vec<(f64, String)> = log_ticks(ymin, ymax, &decade_ticks)
        .iter()
        .map(|t| (y_of(*t), grouped_us(*t)))
        .collect();
    y_grid(svg, frame, &ticks);
    let pmax = all.iter().map(|p| p.0).fold(0.0, f64::max);
    let xmax = nines(pmax).max(1.0) * 1.05;
    let x_of = |p: f64| map(nines(p), 0.0, xmax, frame.x, frame.right());
    percentile_axis(svg, frame, pmax, &x_of);
    for (i, curve) in curves.iter().enumerate() {
        let points: Vec<(f64, f64)> = curve.iter().map(|(p, us)| (x_of(*p), y_of(*us))).collect();
        svg.polyline(&points, color(i), 2.0);
        for (px, py) in points {
            svg.circle(px, py, 3.0, color(i));
        }
    }
    let labels: Vec<&str> = set.arms.iter().map(|a| a.label.as_str()).collect();
    legend(svg, frame, &labels);
}

/// Dashed verticals and labels at p50, p90, p99 … up to `pmax`.
fn percentile_axis(svg: &mut Svg, frame: Frame, pmax: f64, x_of: &dyn Fn(f64) -> f64) {
    for p in [0.0, 50.0, 90.0, 99.0, 99.9, 99.99, 99.999] {
        if p > pmax {
            break;
        }
        let x = x_of(p);
        svg.line((x, frame.y), (x, frame.bottom()), GRID, 1.0, true);
        let label = if p == 0.0 {
            "0".to_string()
        } else {
            format!("p{p}")
        };
        svg.text(
            x,
            frame.bottom() + 16.0,
            11.0,
            Anchor::Middle,
            &label,
            TextStyle::PLAIN,
        );
    }
}

fn grouped_us(us: f64) -> String {
    if us >= 1.0 {
        grouped(us)
    } else {
        format!("{us}")
    }
}
