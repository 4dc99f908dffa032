//! The three panels of a chart.

use super::axis::{decades, linear, log_ticks, map, nines, Linear};
use super::svg::{Anchor, Svg, TextStyle};
use super::{color, frame_titles, legend, Frame};
use crate::analysis::Analysis;
use crate::format::grouped;
use crate::model::{Arm, ResultSet, TOTAL};
use crate::repeat::Metric;

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

/// Total IOPS of every run, by execution order, one series per arm.
pub fn iops_per_run(svg: &mut Svg, frame: Frame, set: &ResultSet) {
    let runs = set.runs_in_order();
    let (lo, hi) = runs
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), (_, r)| {
            (lo.min(r.total.iops), hi.max(r.total.iops))
        });
    let max_seq = runs.iter().map(|(_, r)| r.seq).max().unwrap_or(1).max(2);
    frame_titles(
        svg,
        frame,
        "Total IOPS of each run",
        "run, in execution order",
        "IOPS (I/O per second)",
    );
    if runs.is_empty() {
        return;
    }
    let y = linear(lo, hi, 5);
    let ticks: Vec<(f64, String)> = y
        .ticks
        .iter()
        .map(|t| (map(*t, y.min, y.max, frame.bottom(), frame.y), grouped(*t)))
        .collect();
    y_grid(svg, frame, &ticks);
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
        svg.text(
            x_of(seq),
            frame.bottom() + 16.0,
            11.0,
            Anchor::Middle,
            &seq.to_string(),
            TextStyle::PLAIN,
        );
    }
    for (i, arm) in set.arms.iter().enumerate() {
        let points: Vec<(f64, f64)> = arm
            .runs
            .iter()
            .map(|r| {
                (
                    x_of(r.seq),
                    map(r.total.iops, y.min, y.max, frame.bottom(), frame.y),
                )
            })
            .collect();
        svg.polyline(&points, color(i), 1.5);
        for (px, py) in points {
            svg.circle(px, py, 4.0, color(i));
        }
    }
    let labels: Vec<&str> = set.arms.iter().map(|a| a.label.as_str()).collect();
    legend(svg, frame, &labels);
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
    let ticks: Vec<(f64, String)> = y
        .ticks
        .iter()
        .map(|t| {
            (
                map(*t, y.min, y.max, frame.bottom(), frame.y),
                format!("{t}"),
            )
        })
        .collect();
    y_grid(svg, frame, &ticks);
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
