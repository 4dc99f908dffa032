//! The chart of a coalescing sweep, in the sweep chart's style, panels
//! over the threshold: IOPS (95 % intervals as error bars, the
//! recommended threshold ringed) and interrupts per I/O, one line per
//! device count; then per device count the clat percentiles p50, p95, p99
//! and p99.99.

use std::path::Path;

use super::{CoalesceSweep, DeviceTable, RowMetrics, ThresholdRow};
use crate::chart::axis;
use crate::chart::svg::{Anchor, Svg, TextStyle};
use crate::error::ReportError;
use crate::sweep::chart::{
    caption, color, color_name, frame, panel, place, write_file, Area, Plot, CHART_WIDTH,
    FIRST_TOP, PANEL_STEP,
};

/// Writes the chart to `path` (PNG when it ends in `.png`, else SVG).
pub fn write(sweep: &CoalesceSweep, path: &Path) -> Result<(), ReportError> {
    write_file(svg(sweep), path)
}

/// The chart as an SVG document.
pub fn svg(sweep: &CoalesceSweep) -> String {
    let tables: Vec<&DeviceTable> = sweep.tables.iter().filter(|t| !t.rows.is_empty()).collect();
    let panels = 2 + tables.len();
    let mut svg = Svg::new(CHART_WIDTH, FIRST_TOP + panels as f64 * PANEL_STEP - 20.0);
    svg.text(
        CHART_WIDTH / 2.0,
        30.0,
        18.0,
        Anchor::Middle,
        &format!(
            "numio coalesce sweep: thresholds at aggregation time {} µs",
            sweep.time_us
        ),
        TextStyle::BOLD,
    );
    let mut xs: Vec<f64> = tables
        .iter()
        .flat_map(|t| t.rows.iter().map(|r| f64::from(r.threshold)))
        .collect();
    xs.sort_by(f64::total_cmp);
    xs.dedup();
    let x_hi = xs.last().copied().unwrap_or(1.0).max(1.0);
    let plot = Plot {
        axis: "threshold (an interrupt per threshold + 1 completions; 0: off)",
        xs: &xs,
        x_range: (0.0, x_hi),
    };
    iops_panel(&mut svg, &tables, &plot, panel(0));
    interrupts_panel(&mut svg, &tables, &plot, panel(1));
    for (i, t) in tables.iter().enumerate() {
        latency_panel(&mut svg, t, &plot, panel(2 + i));
    }
    svg.finish()
}

/// `1 device (blue), 2 devices (red)`.
fn legend(tables: &[&DeviceTable]) -> String {
    tables
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let s = if t.devices == 1 { "" } else { "s" };
            format!("{} device{s} ({})", t.devices, color_name(i))
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// One line per device count of `f` of the total over the thresholds.
fn lines(
    svg: &mut Svg,
    tables: &[&DeviceTable],
    plot: &Plot,
    area: Area,
    y: &axis::Linear,
    f: fn(&RowMetrics) -> Option<f64>,
) {
    for (i, t) in tables.iter().enumerate() {
        let stroke = color(i);
        let pts: Vec<(f64, f64)> = t
            .rows
            .iter()
            .filter_map(|r| {
                let v = f(&r.total).filter(|v| v.is_finite())?;
                Some(place(
                    area,
                    plot.x_range,
                    y.min,
                    y.max,
                    f64::from(r.threshold),
                    v,
                ))
            })
            .collect();
        svg.polyline(&pts, stroke, 2.0);
        for &(cx, cy) in &pts {
            svg.circle(cx, cy, 4.0, stroke);
        }
    }
}

fn iops_panel(svg: &mut Svg, tables: &[&DeviceTable], plot: &Plot, area: Area) {
    let y_hi = tables
        .iter()
        .flat_map(|t| t.rows.iter())
        .map(|r| r.total.iops + r.total.iops_ci95.unwrap_or(0.0))
        .fold(1.0, f64::max);
    let y = axis::linear(0.0, y_hi, 5);
    frame(svg, area, plot, "IOPS", &y);
    lines(svg, tables, plot, area, &y, |m| Some(m.iops));
    for (i, t) in tables.iter().enumerate() {
        for r in &t.rows {
            let x = f64::from(r.threshold);
            if let Some(ci) = r.total.iops_ci95 {
                let (cx, lo) = place(
                    area,
                    plot.x_range,
                    y.min,
                    y.max,
                    x,
                    (r.total.iops - ci).max(0.0),
                );
                let (_, hi) = place(area, plot.x_range, y.min, y.max, x, r.total.iops + ci);
                svg.line((cx, lo), (cx, hi), color(i), 1.5, false);
            }
            if recommended(t, r) {
                let (cx, cy) = place(area, plot.x_range, y.min, y.max, x, r.total.iops);
                svg.ring(cx, cy, 9.0, color(i));
            }
        }
    }
    caption(
        svg,
        area,
        &format!(
            "total IOPS (95 % CI bars; ringed: recommended) per device count: {}",
            legend(tables)
        ),
    );
}

fn recommended(t: &DeviceTable, r: &ThresholdRow) -> bool {
    !t.recommendation.is_off() && t.recommendation.threshold == r.threshold
}

fn interrupts_panel(svg: &mut Svg, tables: &[&DeviceTable], plot: &Plot, area: Area) {
    let y_hi = tables
        .iter()
        .flat_map(|t| t.rows.iter())
        .filter_map(|r| r.total.interrupts_per_io)
        .fold(0.0, f64::max);
    let y = axis::linear(0.0, if y_hi > 0.0 { y_hi } else { 1.0 }, 5);
    frame(svg, area, plot, "interrupts / I/O", &y);
    lines(svg, tables, plot, area, &y, |m| m.interrupts_per_io);
    caption(
        svg,
        area,
        &format!(
            "NVMe queue interrupts per I/O per device count: {}",
            legend(tables)
        ),
    );
}

fn latency_panel(svg: &mut Svg, table: &DeviceTable, plot: &Plot, area: Area) {
    type Pick = fn(&RowMetrics) -> Option<f64>;
    let series: [(&str, Pick); 4] = [
        ("p50", |m| m.lat_p50_ns),
        ("p95", |m| m.lat_p95_ns),
        ("p99", |m| m.lat_p99_ns),
        ("p99.99", |m| m.lat_p9999_ns),
    ];
    let us = |v: Option<f64>| v.filter(|v| v.is_finite()).map(|v| v / 1000.0);
    let y_hi = table
        .rows
        .iter()
        .flat_map(|r| series.iter().filter_map(move |(_, f)| us(f(&r.total))))
        .fold(0.0, f64::max);
    let y = axis::linear(0.0, if y_hi > 0.0 { y_hi } else { 1.0 }, 5);
    frame(svg, area, plot, "clat µs", &y);
    let mut legend = Vec::new();
    for (i, (label, f)) in series.iter().enumerate() {
        let pts: Vec<(f64, f64)> = table
            .rows
            .iter()
            .filter_map(|r| {
                let v = us(f(&r.total))?;
                Some(place(
                    area,
                    plot.x_range,
                    y.min,
                    y.max,
                    f64::from(r.threshold),
                    v,
                ))
            })
            .collect();
        if pts.is_empty() {
            continue;
        }
        svg.polyline(&pts, color(i), 2.0);
        for &(cx, cy) in &pts {
            svg.circle(cx, cy, 3.5, color(i));
        }
        legend.push(format!("{label} ({})", color_name(i)));
    }
    for b in table.rows.first().map_or(&[][..], |r| &r.budgets[..]) {
        let level = b.budget.max_ns / 1000.0;
        if level <= y.max {
            let (x0, x1) = plot.x_range;
            let from = place(area, plot.x_range, y.min, y.max, x0, level);
            let to = place(area, plot.x_range, y.min, y.max, x1, level);
            svg.line(from, to, "#888888", 1.0, true);
            legend.push(format!("dashed: budget {}", b.budget.describe()));
        }
    }
    let s = if table.devices == 1 { "" } else { "s" };
    caption(
        svg,
        area,
        &format!(
            "clat percentiles, {} device{s} at once: {}",
            table.devices,
            legend.join(" ")
        ),
    );
}
