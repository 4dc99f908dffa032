//! A coalescing sweep in words: a table per device count (threshold rows
//! in total, drive rows under them), its findings and its recommendation
//! with the evidence and the command that sets it.

use std::fmt::Write as _;

use super::recommend::{name, Verdict};
use super::{CoalesceSweep, DeviceTable, RowMetrics, ThresholdRow};
use crate::export::table::{Align, Table};
use crate::format::{grouped, micros};

/// The columns of every table.
const COLUMNS: [(&str, Align); 11] = [
    ("threshold", Align::Left),
    ("runs", Align::Right),
    ("IOPS", Align::Right),
    ("±95 %", Align::Right),
    ("p50 µs", Align::Right),
    ("p95 µs", Align::Right),
    ("p99 µs", Align::Right),
    ("p99.99 µs", Align::Right),
    ("irq/IO", Align::Right),
    ("ctx/IO", Align::Right),
    ("CPU µs/IO", Align::Right),
];

fn opt(v: Option<f64>, f: &dyn Fn(f64) -> String) -> String {
    v.filter(|v| v.is_finite()).map_or("-".to_string(), f)
}

/// `3 (4 I/Os)` or `0 (off)`.
fn threshold_cell(t: u8) -> String {
    if t == 0 {
        "0 (off)".to_string()
    } else {
        format!("{t} ({} I/Os)", u32::from(t) + 1)
    }
}

fn cells(first: String, m: &RowMetrics) -> Vec<String> {
    vec![
        first,
        m.runs.to_string(),
        grouped(m.iops),
        opt(m.iops_ci95, &grouped),
        opt(m.lat_p50_ns, &micros),
        opt(m.lat_p95_ns, &micros),
        opt(m.lat_p99_ns, &micros),
        opt(m.lat_p9999_ns, &micros),
        opt(m.interrupts_per_io, &|v| format!("{v:.3}")),
        opt(m.ctx_switches_per_io, &|v| format!("{v:.3}")),
        opt(m.cpu_ns_per_io, &|v| format!("{:.2}", v / 1000.0)),
    ]
}

fn row_mark(table: &DeviceTable, r: &ThresholdRow) -> &'static str {
    let rec = &table.recommendation;
    if rec.verdict == Verdict::Coalesce && rec.threshold == r.threshold {
        " (recommended)"
    } else if !r.within_budget() {
        " (over budget)"
    } else {
        ""
    }
}

/// The table of one device count, its findings and recommendation.
pub fn device_table(table: &DeviceTable, time_us: u32) -> String {
    let mut t = Table::new(&COLUMNS);
    for r in &table.rows {
        t.row(cells(
            format!("{}{}", threshold_cell(r.threshold), row_mark(table, r)),
            &r.total,
        ));
        if r.drives.len() > 1 {
            for d in &r.drives {
                t.row(cells(format!("  {}", d.scope), d));
            }
        }
    }
    let plural = if table.devices == 1 { "" } else { "s" };
    let mut out = format!(
        "numio coalesce sweep: {} device{plural} at once ({}; controllers {}), aggregation time {time_us} µs\n{}",
        table.devices,
        table.targets.join(", "),
        if table.controllers.is_empty() {
            "-".to_string()
        } else {
            table.controllers.join(", ")
        },
        t.render("  ")
    );
    for f in &table.findings {
        let _ = writeln!(out, "  {f}");
    }
    let rec = &table.recommendation;
    let _ = writeln!(out, "  recommendation: {}", rec.summary);
    for e in &rec.evidence {
        let _ = writeln!(out, "    - {e}");
    }
    if rec.verdict == Verdict::Coalesce {
        let _ = writeln!(
            out,
            "    set it: numio coalesce set {} --threshold {} --time {}us",
            table.targets.join(" "),
            rec.threshold,
            rec.time_us
        );
    }
    out
}

/// Every table of the sweep, the legend, and a note when it was cut short.
pub fn render(sweep: &CoalesceSweep) -> String {
    let mut out = String::new();
    for t in &sweep.tables {
        out.push_str(&device_table(t, sweep.time_us));
        out.push('\n');
    }
    out.push_str(
        "  threshold N: an interrupt per N+1 completions, or the aggregation time after the first; 0: coalescing off.\n  \
         total rows: all drives' IOPS and clat, their controllers' queue interrupts, the machine's context switches and CPU;\n  \
         drive rows: that drive's, with its workers' context switches and CPU. ±95 %: Student-t interval of the mean over the runs.\n",
    );
    if !sweep.max_latency.is_empty() {
        let budgets: Vec<String> = sweep.max_latency.iter().map(|b| b.describe()).collect();
        let _ = writeln!(
            out,
            "  latency budget (--max-latency): {} of all drives together",
            budgets.join(", ")
        );
    }
    if sweep.interrupted {
        let _ = writeln!(
            out,
            "  interrupted: the sweep stopped early; thresholds not measured are missing"
        );
    }
    out
}

/// One line per device count: what to set (for a summary after the run).
pub fn summary_lines(sweep: &CoalesceSweep) -> Vec<String> {
    sweep
        .tables
        .iter()
        .map(|t| {
            format!(
                "{} device{}: {}",
                t.devices,
                if t.devices == 1 { "" } else { "s" },
                match t.recommendation.verdict {
                    Verdict::Coalesce => name(t.recommendation.threshold),
                    _ => "leave it off".to_string(),
                }
            )
        })
        .collect()
}
