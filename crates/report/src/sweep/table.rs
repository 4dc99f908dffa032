//! A sweep in words: its findings, the text table and the CSV of its
//! points (one row per point).

use std::fmt::Write as _;

use super::{scales_work, Sweep, SweepPoint, SATURATION_GAIN_PCT};
use crate::export::table::{Align, Table};
use crate::format::{grouped, micros};
use crate::model::SweepGoal;

/// What the analysis of `sweep` says: the knee, the saturation point and
/// the goal, each a sentence.
pub fn findings(sweep: &Sweep) -> Vec<String> {
    let (points, threshold) = (&sweep.points, sweep.knee_efficiency);
    let mut out = Vec::new();
    match sweep.knee {
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
        None if scales_work(&sweep.axis) && points.len() > 1 => out.push(format!(
            "no knee: every step keeps {:.0} % or more of linear scaling",
            threshold * 100.0
        )),
        None => {}
    }
    if let Some(s) = sweep.saturation {
        out.push(format!(
            "saturation: {} IOPS reached at {}; {} adds less than {SATURATION_GAIN_PCT} %",
            grouped(points[s].iops),
            points[s].label,
            points[s + 1].label
        ));
    }
    if let Some(g) = &sweep.goal {
        out.push(goal_sentence(sweep, g.goal, g.reached_at));
    }
    out
}

fn goal_sentence(sweep: &Sweep, goal: SweepGoal, at: Option<usize>) -> String {
    let (what, value_of): (String, fn(&SweepPoint) -> f64) = match goal {
        SweepGoal::Iops(v) => (format!("{} IOPS", grouped(v)), |p| p.iops),
        SweepGoal::BandwidthBytesPerS(v) => (format!("{:.1} MB/s", v / 1e6), |p| {
            p.bandwidth_bytes_per_s / 1e6
        }),
    };
    let unit = match goal {
        SweepGoal::Iops(_) => "IOPS",
        SweepGoal::BandwidthBytesPerS(_) => "MB/s",
    };
    match at {
        Some(i) => format!(
            "goal {what}: reached first at {} ({} {unit}), the smallest {} that does",
            sweep.points[i].label,
            grouped(value_of(&sweep.points[i])),
            sweep.axis
        ),
        None => {
            let best = sweep
                .points
                .iter()
                .max_by(|a, b| value_of(a).total_cmp(&value_of(b)));
            match best {
                Some(b) => format!(
                    "goal {what}: not reached; the most was {} {unit} at {}: extend the {} axis",
                    grouped(value_of(b)),
                    b.label,
                    sweep.axis
                ),
                None => format!("goal {what}: no point measured"),
            }
        }
    }
}

fn opt(v: Option<f64>, f: &dyn Fn(f64) -> String) -> String {
    v.filter(|v| v.is_finite()).map_or("-".to_string(), f)
}

/// Mean IOPS over the point's targets.
fn per_target(p: &SweepPoint) -> Option<f64> {
    (!p.targets.is_empty())
        .then(|| p.targets.iter().map(|t| t.iops).sum::<f64>() / p.targets.len() as f64)
}

/// Where a sweep over a fleet ran, in one line: `initiators: numio's
/// NVMe/TCP host on a, b (the first N at a point of N); target: numio serve
/// on t, each run (nvme-tcp://…)`.
pub fn fleet_line(f: &crate::model::FleetSweepSpec) -> String {
    let transport = planner::TargetAddr::parse(&f.url)
        .fabric()
        .unwrap_or(planner::Fabric::Tcp)
        .prose();
    let stack = match f.stack.as_str() {
        "kernel" => format!("the Linux kernel's {transport} host"),
        _ => format!("numio's {transport} host"),
    };
    let target = match &f.target_host {
        Some(h) => format!("numio serve on {h}, started for each run ({})", f.url),
        None => f.url.clone(),
    };
    format!(
        "initiators: {stack} on {} (a point of N initiators runs the first N); target: {target}\n",
        f.hosts.join(", ")
    )
}

/// The sweep as a text table, then its findings.
pub fn table(sweep: &Sweep) -> String {
    // A numio serve target on this machine: its CPU and the initiator's apart.
    let split = sweep
        .points
        .iter()
        .any(|p| p.target_cpu_ns_per_io.is_some());
    let mut columns = vec![
        ("point", Align::Left),
        ("runs", Align::Right),
        ("IOPS", Align::Right),
        ("±95 %", Align::Right),
        ("MB/s", Align::Right),
        ("IOPS/target", Align::Right),
        ("IOPS/core", Align::Right),
        ("p50 µs", Align::Right),
        ("p99 µs", Align::Right),
        ("p99.9 µs", Align::Right),
        ("efficiency", Align::Right),
        ("CPU µs/IO", Align::Right),
        ("interrupts/IO", Align::Right),
        ("CPU headroom", Align::Right),
    ];
    if split {
        columns.push(("initiator CPU µs/IO", Align::Right));
        columns.push(("target CPU µs/IO", Align::Right));
    }
    // A target served on another host: its machine's headroom too.
    let remote = sweep.points.iter().any(|p| p.target_headroom_pct.is_some());
    if remote {
        columns.push(("target headroom", Align::Right));
    }
    let mut t = Table::new(&columns);
    let us = |v: f64| format!("{:.2}", v / 1000.0);
    for (i, p) in sweep.points.iter().enumerate() {
        let mark = if Some(i) == sweep.knee { " (knee)" } else { "" };
        let mut row = vec![
            format!("{}{mark}", p.label),
            p.runs.to_string(),
            grouped(p.iops),
            opt(p.iops_ci95, &grouped),
            format!("{:.1}", p.bandwidth_bytes_per_s / 1e6),
            opt(per_target(p), &grouped),
            opt(p.iops_per_core, &grouped),
            opt(p.lat_p50_ns, &micros),
            micros(p.lat_p99_ns),
            opt(p.lat_p999_ns, &micros),
            opt(p.efficiency, &|e| format!("{:.0} %", e * 100.0)),
            opt(p.machine_cpu_ns_per_io, &|v| format!("{:.2}", v / 1000.0)),
            opt(p.interrupts_per_io, &|v| format!("{v:.3}")),
            opt(p.cpu_headroom_pct, &|v| format!("{v:.1} %")),
        ];
        if split {
            row.push(opt(p.initiator_cpu_ns_per_io, &us));
            row.push(opt(p.target_cpu_ns_per_io, &us));
        }
        if remote {
            row.push(opt(p.target_headroom_pct, &|v| format!("{v:.1} %")));
        }
        t.row(row);
    }
    let series = sweep
        .series
        .as_deref()
        .map_or(String::new(), |s| format!(" ({s})"));
    let mut out = format!(
        "numio sweep over {}{series}\n{}",
        sweep.axis,
        t.render("  ")
    );
    for f in &sweep.findings {
        let _ = writeln!(out, "  {f}");
    }
    out
}

/// Header of [`csv`].
pub const CSV_HEADER: &str = "series,point,x,runs,iops,iops_ci95,bandwidth_bytes_per_s,cores,\
iops_per_core,iops_per_target,lat_p50_ns,lat_p99_ns,lat_p999_ns,efficiency,machine_cpu_ns_per_io,\
interrupts_per_io,cpu_headroom_pct,knee,saturation,initiator_cpu_ns_per_io,target_cpu_ns_per_io,\
target_headroom_pct";

/// The points of every curve as CSV, one row per point, with a header.
pub fn csv(sweeps: &[Sweep]) -> String {
    let num = |v: Option<f64>| {
        v.filter(|v| v.is_finite())
            .map_or(String::new(), |v| format!("{v}"))
    };
    let mut out = format!("{CSV_HEADER}\n");
    for s in sweeps {
        for (i, p) in s.points.iter().enumerate() {
            let cells = [
                s.series.clone().unwrap_or_default(),
                p.label.clone(),
                format!("{}", p.x),
                p.runs.to_string(),
                num(Some(p.iops)),
                num(p.iops_ci95),
                num(Some(p.bandwidth_bytes_per_s)),
                p.cores.map_or(String::new(), |c| c.to_string()),
                num(p.iops_per_core),
                num(per_target(p)),
                num(p.lat_p50_ns),
                num(Some(p.lat_p99_ns)),
                num(p.lat_p999_ns),
                num(p.efficiency),
                num(p.machine_cpu_ns_per_io),
                num(p.interrupts_per_io),
                num(p.cpu_headroom_pct),
                (s.knee == Some(i)).to_string(),
                (s.saturation == Some(i)).to_string(),
                num(p.initiator_cpu_ns_per_io),
                num(p.target_cpu_ns_per_io),
                num(p.target_headroom_pct),
            ];
            let quoted: Vec<String> = cells
                .iter()
                .map(|c| {
                    if c.contains([',', '"', ' ']) {
                        format!("\"{}\"", c.replace('"', "\"\""))
                    } else {
                        c.clone()
                    }
                })
                .collect();
            let _ = writeln!(out, "{}", quoted.join(","));
        }
    }
    out
}
