//! The SVG chart of a sweep, four panels over the axis: IOPS with the
//! 95 % intervals as error bars and the ideal linear line, latency
//! percentiles (p50, p99, p99.9), scaling efficiency with the knee's
//! threshold, and CPU headroom.

use std::path::{Path, PathBuf};

use super::{scales_work, Sweep, SweepPoint};
use crate::chart::axis;
use crate::chart::svg::{Anchor, Svg, TextStyle};
use crate::error::ReportError;

/// Colours of the series, in order (the result charts' palette).
const COLORS: [&str; 4] = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd"];

pub(crate) fn color(i: usize) -> &'static str {
    COLORS[i % COLORS.len()]
}

/// Writes one chart per curve: `path` itself for one curve, else
/// `STEM-1.EXT`, `STEM-2.EXT` …; PNG when `path` ends in `.png`, SVG
/// otherwise. Returns the files written.
pub fn write(sweeps: &[Sweep], path: &Path) -> Result<Vec<PathBuf>, ReportError> {
    let mut written = Vec::new();
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .unwrap_or("svg")
        .to_string();
    for (i, s) in sweeps.iter().enumerate() {
        let file = if sweeps.len() == 1 {
            path.to_path_buf()
        } else {
            let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("sweep");
            path.with_file_name(format!("{stem}-{}.{ext}", i + 1))
        };
        let series = s
            .series
            .as_deref()
            .map_or(String::new(), |v| format!(" ({v})"));
        let title = format!("numio sweep over {}{series}", s.axis);
        write_file(svg(s, &title), &file)?;
        written.push(file);
    }
    Ok(written)
}

/// Writes the SVG document `text` to `file`, rasterized to PNG when the
/// name ends in `.png`.
pub(crate) fn write_file(text: String, file: &Path) -> Result<(), ReportError> {
    let png = file
        .extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| e.eq_ignore_ascii_case("png"));
    let bytes = if png {
        crate::chart::png::svg_to_png(&text, file)?
    } else {
        text.into_bytes()
    };
    std::fs::write(file, bytes).map_err(|source| ReportError::Write {
        path: file.to_path_buf(),
        source,
    })
}

/// Width of a sweep chart in px.
pub(crate) const CHART_WIDTH: f64 = 960.0;
/// Height of a panel's plot area in px.
pub(crate) const PANEL_H: f64 = 190.0;
/// Distance from one panel's top to the next in px.
pub(crate) const PANEL_STEP: f64 = 290.0;
/// Top of the first panel in px.
pub(crate) const FIRST_TOP: f64 = 76.0;

/// An SVG chart of a sweep: IOPS (error bars, ideal line, knee), latency
/// percentiles, scaling efficiency and CPU headroom against the axis.
pub fn svg(sweep: &Sweep, title: &str) -> String {
    let mut svg = Svg::new(CHART_WIDTH, FIRST_TOP + 4.0 * PANEL_STEP - 20.0);
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
    let plot = Plot {
        axis: &sweep.axis,
        xs: &xs,
        x_range,
    };
    iops_panel(&mut svg, sweep, &plot, panel(0));
    latency_panel(&mut svg, sweep, &plot, panel(1));
    efficiency_panel(&mut svg, sweep, &plot, panel(2));
    headroom_panel(&mut svg, sweep, &plot, panel(3));
    svg.finish()
}

/// The x side shared by every panel.
pub(crate) struct Plot<'a> {
    /// The x axis's title.
    pub axis: &'a str,
    /// The x of every point (tick labels).
    pub xs: &'a [f64],
    /// The x range drawn.
    pub x_range: (f64, f64),
}

/// A plot area: `(x, y, w, h)`.
pub(crate) type Area = (f64, f64, f64, f64);

/// The plot area of panel `index` from the top.
pub(crate) fn panel(index: usize) -> Area {
    (
        100.0,
        FIRST_TOP + PANEL_STEP * index as f64,
        CHART_WIDTH - 140.0,
        PANEL_H,
    )
}

/// A point of `area` over `x_range` and `(lo, hi)` in y.
pub(crate) fn place(
    area: Area,
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

fn iops_panel(svg: &mut Svg, sweep: &Sweep, plot: &Plot, area: Area) {
    let xs = plot.xs;
    let linear = scales_work(&sweep.axis) && xs.first().is_some_and(|&x| x > 0.0);
    let ideal = |p: &SweepPoint| sweep.points[0].iops * p.x / xs[0];
    let y_hi = sweep
        .points
        .iter()
        .map(|p| (p.iops + p.iops_ci95.unwrap_or(0.0)).max(if linear { ideal(p) } else { 0.0 }))
        .fold(1.0, f64::max);
    let y = axis::linear(0.0, y_hi, 5);
    frame(svg, area, plot, "IOPS", &y);
    let at = |x: f64, v: f64| place(area, plot.x_range, y.min, y.max, x, v);
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
    let stroke = color(0);
    let pts: Vec<(f64, f64)> = sweep.points.iter().map(|p| at(p.x, p.iops)).collect();
    svg.polyline(&pts, stroke, 2.0);
    for (p, &(cx, cy)) in sweep.points.iter().zip(&pts) {
        if let Some(ci) = p.iops_ci95 {
            let (_, lo) = at(p.x, (p.iops - ci).max(0.0));
            let (_, hi) = at(p.x, p.iops + ci);
            svg.line((cx, lo), (cx, hi), stroke, 1.5, false);
        }
        svg.circle(cx, cy, 4.0, stroke);
    }
    if let Some(k) = sweep.knee {
        let (cx, cy) = pts[k];
        svg.ring(cx, cy, 9.0, color(1));
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
        "IOPS: measured (95 % CI bars) · dashed: ideal linear from the first point"
    } else {
        "IOPS: measured (95 % CI bars)"
    };
    caption(svg, area, legend);
}

fn latency_panel(svg: &mut Svg, sweep: &Sweep, plot: &Plot, area: Area) {
    type Pick = fn(&SweepPoint) -> Option<f64>;
    let series: [(&str, Pick); 3] = [
        ("p50", |p| p.lat_p50_ns),
        ("p99", |p| Some(p.lat_p99_ns)),
        ("p99.9", |p| p.lat_p999_ns),
    ];
    let us = |v: Option<f64>| v.filter(|v| v.is_finite()).map(|v| v / 1000.0);
    let y_hi = sweep
        .points
        .iter()
        .flat_map(|p| series.iter().filter_map(move |(_, f)| us(f(p))))
        .fold(0.0, f64::max);
    let y = axis::linear(0.0, if y_hi > 0.0 { y_hi } else { 1.0 }, 5);
    frame(svg, area, plot, "latency µs", &y);
    let mut legend = vec!["latency percentiles:".to_string()];
    for (i, (name, f)) in series.iter().enumerate() {
        let stroke = color(i);
        let pts: Vec<(f64, f64)> = sweep
            .points
            .iter()
            .filter_map(|p| Some(place(area, plot.x_range, y.min, y.max, p.x, us(f(p))?)))
            .collect();
        if pts.is_empty() {
            continue;
        }
        svg.polyline(&pts, stroke, 2.0);
        for &(cx, cy) in &pts {
            svg.circle(cx, cy, 3.5, stroke);
        }
        legend.push(format!("{name} ({})", color_name(i)));
    }
    caption(svg, area, &legend.join(" "));
}

pub(crate) fn color_name(i: usize) -> &'static str {
    ["blue", "red", "green", "purple"][i % 4]
}

fn efficiency_panel(svg: &mut Svg, sweep: &Sweep, plot: &Plot, area: Area) {
    let effs: Vec<(f64, f64)> = sweep
        .points
        .iter()
        .filter_map(|p| Some((p.x, p.efficiency? * 100.0)))
        .collect();
    let y_hi = effs.iter().map(|e| e.1).fold(110.0, f64::max);
    let y = axis::linear(0.0, y_hi, 5);
    frame(svg, area, plot, "efficiency %", &y);
    if effs.is_empty() {
        caption(
            svg,
            area,
            &format!(
                "scaling efficiency: not defined for {} (it does not scale the work)",
                sweep.axis
            ),
        );
        return;
    }
    let at = |x: f64, v: f64| place(area, plot.x_range, y.min, y.max, x, v);
    let threshold = sweep.knee_efficiency * 100.0;
    for level in [100.0, threshold] {
        let (x0, x1) = (plot.x_range.0, plot.x_range.1);
        svg.line(at(x0, level), at(x1, level), "#888888", 1.0, true);
    }
    let stroke = color(3);
    let pts: Vec<(f64, f64)> = effs.iter().map(|&(x, e)| at(x, e)).collect();
    svg.polyline(&pts, stroke, 2.0);
    for &(cx, cy) in &pts {
        svg.circle(cx, cy, 4.0, stroke);
    }
    caption(
        svg,
        area,
        &format!(
            "scaling efficiency IOPS(x) / (x/x₀ · IOPS(x₀)) · dashed: 100 % and the knee threshold {threshold:.0} %"
        ),
    );
}

fn headroom_panel(svg: &mut Svg, sweep: &Sweep, plot: &Plot, area: Area) {
    let y = axis::linear(0.0, 100.0, 5);
    frame(svg, area, plot, "CPU headroom %", &y);
    let stroke = color(2);
    let pts: Vec<(f64, f64)> = sweep
        .points
        .iter()
        .filter_map(|p| {
            Some(place(
                area,
                plot.x_range,
                0.0,
                100.0,
                p.x,
                p.cpu_headroom_pct?,
            ))
        })
        .collect();
    svg.polyline(&pts, stroke, 2.0);
    for &(cx, cy) in &pts {
        svg.circle(cx, cy, 4.0, stroke);
    }
    caption(
        svg,
        area,
        "CPU headroom: the share of the machine's CPU left idle over each point (/proc/stat)",
    );
}

pub(crate) fn caption(svg: &mut Svg, area: Area, text: &str) {
    svg.text(
        area.0,
        area.1 - 10.0,
        12.0,
        Anchor::Start,
        text,
        TextStyle::PLAIN,
    );
}

/// A tick's label: large values in k / M / G (so they fit left of the
/// plot), whole numbers as they are, small steps with decimals.
pub(super) fn tick_label(t: f64, step: f64) -> String {
    let compact = |v: f64, unit: &str| {
        let text = format!("{v:.2}");
        format!("{}{unit}", text.trim_end_matches('0').trim_end_matches('.'))
    };
    if t.abs() >= 1e9 {
        compact(t / 1e9, "G")
    } else if t.abs() >= 1e6 {
        compact(t / 1e6, "M")
    } else if t.abs() >= 1e4 {
        compact(t / 1e3, "k")
    } else if step >= 1.0 {
        crate::format::grouped(t)
    } else {
        let decimals = (-step.log10()).ceil().clamp(1.0, 6.0) as usize;
        format!("{t:.decimals$}")
    }
}

pub(crate) fn frame(
    svg: &mut Svg,
    (x, y, w, h): Area,
    plot: &Plot,
    y_title: &str,
    yaxis: &axis::Linear,
) {
    svg.rect(x, y, w, h, "none", Some("#333333"));
    let step = match yaxis.ticks.as_slice() {
        [a, b, ..] => b - a,
        _ => 1.0,
    };
    for &t in &yaxis.ticks {
        let ty = axis::map(t, yaxis.min, yaxis.max, y + h, y);
        svg.line((x, ty), (x + w, ty), "#e0e0e0", 1.0, false);
        svg.text(
            x - 6.0,
            ty + 4.0,
            11.0,
            Anchor::End,
            &tick_label(t, step),
            TextStyle::PLAIN,
        );
    }
    let (x_lo, x_hi) = plot.x_range;
    for &v in plot.xs {
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
        plot.axis,
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
