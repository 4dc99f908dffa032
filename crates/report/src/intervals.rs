//! The time axis of bench runs: what `numio bench` says of its intervals
//! and of the I/O outside the measured time, and `numio report
//! --intervals`: a table per target, the intervals as CSV, and a chart of
//! IOPS and latency percentiles over time with the anomalies marked.

use std::fmt::Write as _;
use std::io::Write;
use std::path::Path;

use results::{IntervalResult, PhaseIo, RunResult};

use crate::chart::svg::{Anchor, Svg, TextStyle};
use crate::chart::{axis, color, frame_titles, legend, Frame, PANEL_HEIGHT, WIDTH};
use crate::export::csv::field;
use crate::format::{bandwidth, latency, si};
use crate::{ReportError, ResultSet};

/// The percentiles the table, the CSV and the chart show.
pub const SHOWN: [f64; 3] = [50.0, 99.0, 99.9];

/// `set-up I/O` and `ramp` lines of a target (or a run), indented by
/// `indent`: every I/O numio issued outside the measured time.
pub fn phase_lines(
    out: &mut String,
    indent: &str,
    setup: Option<&PhaseIo>,
    ramp: Option<&PhaseIo>,
) {
    for (what, p, why) in [
        (
            "set-up I/O",
            setup,
            "choosing io_uring's mode, -v says which",
        ),
        ("ramp", ramp, "warm-up"),
    ] {
        if let Some(p) = p.filter(|p| !p.is_empty()) {
            let errors = if p.errors > 0 {
                format!(", {} errors", p.errors)
            } else {
                String::new()
            };
            let _ = writeln!(
                out,
                "{indent}{what}: {} reads, {} writes{errors} in {:.2}s ({why}; not measured)",
                p.reads,
                p.writes,
                p.time_ns as f64 / 1e9
            );
        }
    }
}

/// One line on the intervals of a target (or a run) and one per anomaly.
pub fn summary_lines(out: &mut String, indent: &str, ivs: &[IntervalResult], interval_ns: u64) {
    let full: Vec<f64> = ivs
        .iter()
        .filter(|i| i.len_ns() * 2 >= interval_ns)
        .map(|i| i.total.iops)
        .collect();
    if full.len() < 2 {
        return;
    }
    let mut sorted = full.clone();
    sorted.sort_by(f64::total_cmp);
    let _ = writeln!(
        out,
        "{indent}intervals: {} of {}; IOPS min {} median {} max {}",
        ivs.len(),
        step(interval_ns),
        si(sorted[0]),
        si(sorted[sorted.len() / 2]),
        si(sorted[sorted.len() - 1])
    );
    for (start, f) in results::intervals::anomalies(ivs) {
        let _ = writeln!(
            out,
            "{indent}anomaly at {:.1}s: {}",
            start as f64 / 1e9,
            f.describe()
        );
    }
}

fn step(interval_ns: u64) -> String {
    if interval_ns % 1_000_000_000 == 0 {
        format!("{} s", interval_ns / 1_000_000_000)
    } else {
        format!("{} ms", interval_ns / 1_000_000)
    }
}

/// A run of a set with its place: arm label, run number in the arm.
struct Run {
    label: String,
    run: usize,
    result: RunResult,
}

/// The engine results of `set`'s runs that kept intervals; an error names
/// `file` when none did.
fn runs(set: &ResultSet, file: &str) -> Result<Vec<Run>, ReportError> {
    let mut out = Vec::new();
    for arm in &set.arms {
        for (i, rec) in arm.runs.iter().enumerate() {
            let Some(raw) = &rec.raw else { continue };
            let Ok(result) = serde_json::from_value::<RunResult>(raw.clone()) else {
                continue;
            };
            if !result.intervals.is_empty() {
                out.push(Run {
                    label: arm.label.clone(),
                    run: i + 1,
                    result,
                });
            }
        }
    }
    if out.is_empty() {
        return Err(ReportError::Invalid {
            what: file.to_string(),
            reason: "no run in it kept intervals (a result saved before numio kept them, or a sweep's): run numio bench --save again".into(),
        });
    }
    Ok(out)
}

/// Each target's intervals (and the run's, with several targets).
fn scopes(r: &RunResult) -> Vec<(String, &[IntervalResult])> {
    let mut v: Vec<(String, &[IntervalResult])> = r
        .targets
        .iter()
        .map(|t| (t.path.clone(), t.intervals.as_slice()))
        .collect();
    if r.targets.len() > 1 {
        v.push((
            format!("total ({} targets)", r.targets.len()),
            r.intervals.as_slice(),
        ));
    }
    v
}

/// The table `numio report FILE --intervals` prints.
pub fn table(set: &ResultSet, file: &str) -> Result<String, ReportError> {
    let mut out = String::new();
    let all = runs(set, file)?;
    let many = all.len() > 1;
    for run in &all {
        if many {
            let _ = writeln!(out, "\n== {} run {}", run.label, run.run);
        }
        phase_lines(
            &mut out,
            "",
            run.result.setup_io.as_ref(),
            run.result.ramp_io.as_ref(),
        );
        for (scope, ivs) in scopes(&run.result) {
            let _ = writeln!(out, "\n{scope}");
            let _ = writeln!(
                out,
                "  {:>7} {:>9} {:>11} {:>9} {:>9} {:>9} {:>9} {:>6}  flags",
                "t (s)", "IOPS", "BW", "lat p50", "p99", "p99.9", "max", "errors"
            );
            for iv in ivs {
                let l = &iv.total.latency.lat;
                let p = |q: f64| l.at(q).map_or("-".into(), |v| latency(v as f64));
                let flags: Vec<String> = iv.flags.iter().map(|f| f.describe()).collect();
                let _ = writeln!(
                    out,
                    "  {:>7.1} {:>9} {:>11} {:>9} {:>9} {:>9} {:>9} {:>6}  {}",
                    iv.start_ns as f64 / 1e9,
                    si(iv.total.iops),
                    bandwidth(iv.total.bandwidth_bytes_per_s),
                    p(50.0),
                    p(99.0),
                    p(99.9),
                    latency(l.max_ns as f64),
                    iv.errors,
                    flags.join("; ")
                );
            }
            let ops: u64 = ivs.iter().map(|i| i.total.ops).sum();
            let _ = writeln!(out, "  {} I/Os in {} intervals", ops, ivs.len());
        }
    }
    Ok(out)
}

/// Columns of the intervals' CSV.
pub const CSV_COLUMNS: [&str; 20] = [
    "arm",
    "run",
    "target",
    "index",
    "start_s",
    "end_s",
    "read_ops",
    "write_ops",
    "iops",
    "read_iops",
    "write_iops",
    "bandwidth_bytes_per_s",
    "lat_mean_ns",
    "lat_p50_ns",
    "lat_p99_ns",
    "lat_p99.9_ns",
    "lat_max_ns",
    "clat_p99_ns",
    "errors",
    "flags",
];

/// The intervals as CSV: a row per interval per target (and per run with
/// several targets), every run of `set`.
pub fn csv(set: &ResultSet, file: &str) -> Result<String, ReportError> {
    let mut text = CSV_COLUMNS.join(",");
    text.push('\n');
    for run in runs(set, file)? {
        for (scope, ivs) in scopes(&run.result) {
            for iv in ivs {
                let l = &iv.total.latency.lat;
                let at = |q: f64| l.at(q).map_or(String::new(), |v| v.to_string());
                let flags: Vec<&str> = iv
                    .flags
                    .iter()
                    .map(|f| match f.kind {
                        results::AnomalyKind::IopsDrop => "iops_drop",
                        results::AnomalyKind::LatencyJump => "latency_jump",
                    })
                    .collect();
                let cells = [
                    field(&run.label),
                    run.run.to_string(),
                    field(&scope),
                    iv.index.to_string(),
                    format!("{:.3}", iv.start_ns as f64 / 1e9),
                    format!("{:.3}", iv.end_ns as f64 / 1e9),
                    iv.read.ops.to_string(),
                    iv.write.ops.to_string(),
                    format!("{:.1}", iv.total.iops),
                    format!("{:.1}", iv.read.iops),
                    format!("{:.1}", iv.write.iops),
                    format!("{:.1}", iv.total.bandwidth_bytes_per_s),
                    format!("{:.1}", l.mean_ns),
                    at(50.0),
                    at(99.0),
                    at(99.9),
                    l.max_ns.to_string(),
                    iv.total
                        .latency
                        .clat
                        .at(99.0)
                        .map_or(String::new(), |v| v.to_string()),
                    iv.errors.to_string(),
                    flags.join(";"),
                ];
                text.push_str(&cells.join(","));
                text.push('\n');
            }
        }
    }
    Ok(text)
}

/// The chart of the first run of `set` that kept intervals: per target,
/// IOPS over time and lat p50/p99/p99.9 over time (log scale), anomalies
/// marked with a red band and ring.
pub fn chart_svg(set: &ResultSet, file: &str) -> Result<String, ReportError> {
    let all = runs(set, file)?;
    let run = &all[0];
    let sc = scopes(&run.result);
    let title_h = 56.0;
    let mut svg = Svg::new(WIDTH, title_h + 2.0 * PANEL_HEIGHT * sc.len() as f64);
    let title = format!("numio: {} run {} over time", run.label, run.run);
    svg.text(
        WIDTH / 2.0,
        26.0,
        18.0,
        Anchor::Middle,
        &title,
        TextStyle::BOLD,
    );
    let sub = format!(
        "{} intervals of {}; red: anomalies{}",
        run.result.intervals.len(),
        step(run.result.interval_ns),
        if all.len() > 1 {
            format!(" (the set has {} runs; the CSV has them all)", all.len())
        } else {
            String::new()
        }
    );
    svg.text(
        WIDTH / 2.0,
        46.0,
        12.0,
        Anchor::Middle,
        &sub,
        TextStyle::PLAIN,
    );
    for (i, (scope, ivs)) in sc.iter().enumerate() {
        let top = title_h + 2.0 * PANEL_HEIGHT * i as f64;
        iops_panel(&mut svg, panel(top), scope, ivs);
        latency_panel(&mut svg, panel(top + PANEL_HEIGHT), scope, ivs);
    }
    Ok(svg.finish())
}

fn panel(top: f64) -> Frame {
    Frame {
        x: 100.0,
        y: top + 36.0,
        w: WIDTH - 100.0 - 190.0,
        h: PANEL_HEIGHT - 36.0 - 58.0,
    }
}

/// The x axis (seconds) of a panel and the x of an interval's middle.
fn time_axis(svg: &mut Svg, f: Frame, ivs: &[IntervalResult]) -> impl Fn(&IntervalResult) -> f64 {
    let end = ivs.iter().map(|i| i.end_ns).max().unwrap_or(1) as f64 / 1e9;
    let x = axis::linear(0.0, end, 8);
    for &t in &x.ticks {
        let px = axis::map(t, x.min, x.max, f.x, f.right());
        svg.line(
            (px, f.bottom()),
            (px, f.bottom() + 5.0),
            "#888888",
            1.0,
            false,
        );
        svg.text(
            px,
            f.bottom() + 18.0,
            11.0,
            Anchor::Middle,
            &format!("{t}"),
            TextStyle::PLAIN,
        );
    }
    let (min, max) = (x.min, x.max);
    move |iv: &IntervalResult| {
        let mid = (iv.start_ns + iv.end_ns) as f64 / 2e9;
        axis::map(mid, min, max, f.x, f.right())
    }
}

/// A red band behind each flagged interval.
fn mark_anomalies(
    svg: &mut Svg,
    f: Frame,
    ivs: &[IntervalResult],
    xs: &dyn Fn(&IntervalResult) -> f64,
) {
    for iv in ivs.iter().filter(|i| !i.flags.is_empty()) {
        let w = ivs.len().max(1) as f64;
        let band = (f.w / w).max(3.0);
        svg.rect(xs(iv) - band / 2.0, f.y, band, f.h, "#f8d0d0", None);
    }
}

fn iops_panel(svg: &mut Svg, f: Frame, scope: &str, ivs: &[IntervalResult]) {
    frame_titles(svg, f, &format!("{scope}: IOPS"), "time (s)", "IOPS");
    let xs = time_axis(svg, f, ivs);
    mark_anomalies(svg, f, ivs, &xs);
    let hi = ivs.iter().map(|i| i.total.iops).fold(0.0, f64::max);
    let y = axis::linear(0.0, hi.max(1.0), 5);
    for &t in &y.ticks {
        let py = axis::map(t, y.min, y.max, f.bottom(), f.y);
        svg.text(
            f.x - 6.0,
            py + 4.0,
            11.0,
            Anchor::End,
            &si(t),
            TextStyle::PLAIN,
        );
    }
    let pts: Vec<(f64, f64)> = ivs
        .iter()
        .map(|i| {
            (
                xs(i),
                axis::map(i.total.iops, y.min, y.max, f.bottom(), f.y),
            )
        })
        .collect();
    svg.polyline(&pts, color(0), 2.0);
    for (iv, p) in ivs.iter().zip(&pts) {
        if !iv.flags.is_empty() {
            svg.ring(p.0, p.1, 5.0, "#d62728");
        }
    }
    legend(svg, f, &["IOPS"]);
}

fn latency_panel(svg: &mut Svg, f: Frame, scope: &str, ivs: &[IntervalResult]) {
    frame_titles(
        svg,
        f,
        &format!("{scope}: latency"),
        "time (s)",
        "latency (us, log)",
    );
    let xs = time_axis(svg, f, ivs);
    mark_anomalies(svg, f, ivs, &xs);
    let vals = |q: f64| -> Vec<Option<f64>> {
        ivs.iter()
            .map(|i| {
                i.total
                    .latency
                    .lat
                    .at(q)
                    .filter(|&v| v > 0)
                    .map(|v| v as f64 / 1e3)
            })
            .collect()
    };
    let series: Vec<Vec<Option<f64>>> = SHOWN.iter().map(|&q| vals(q)).collect();
    let known: Vec<f64> = series.iter().flatten().flatten().copied().collect();
    let (Some(lo), Some(hi)) = (
        known.iter().copied().reduce(f64::min),
        known.iter().copied().reduce(f64::max),
    ) else {
        return;
    };
    let (min, max, ticks) = axis::decades(lo, hi);
    let ly = |v: f64| axis::map(v.log10(), min.log10(), max.log10(), f.bottom(), f.y);
    for &t in &ticks {
        svg.text(
            f.x - 6.0,
            ly(t) + 4.0,
            11.0,
            Anchor::End,
            &format!("{t}"),
            TextStyle::PLAIN,
        );
    }
    for (k, s) in series.iter().enumerate() {
        let pts: Vec<(f64, f64)> = ivs
            .iter()
            .zip(s)
            .filter_map(|(i, v)| v.map(|v| (xs(i), ly(v))))
            .collect();
        svg.polyline(&pts, color(k), 2.0);
    }
    legend(svg, f, &["lat p50", "lat p99", "lat p99.9"]);
}

/// `numio report FILE --intervals`: the table on `stdout` unless the CSV
/// goes there, the CSV and the chart of the intervals when asked.
pub fn output(
    set: &ResultSet,
    file: &Path,
    csv_to: Option<&Path>,
    chart_to: Option<&Path>,
    stdout: &mut dyn Write,
    say: &mut dyn FnMut(String),
) -> Result<(), ReportError> {
    let write_file = |path: &Path, bytes: Vec<u8>| {
        std::fs::write(path, bytes).map_err(|source| ReportError::Write {
            path: path.to_path_buf(),
            source,
        })
    };
    let file = &file.display().to_string();
    if csv_to.is_none_or(|p| p.as_os_str() != "-") {
        stdout
            .write_all(table(set, file)?.as_bytes())
            .map_err(ReportError::stdout)?;
    }
    if let Some(path) = csv_to {
        let text = csv(set, file)?;
        if path.as_os_str() == "-" {
            stdout
                .write_all(text.as_bytes())
                .map_err(ReportError::stdout)?;
        } else {
            write_file(path, text.into_bytes())?;
            say(format!(
                "wrote CSV {} (one row per interval)",
                path.display()
            ));
        }
    }
    if let Some(path) = chart_to {
        let svg = chart_svg(set, file)?;
        let bytes = if path
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("png"))
        {
            crate::chart::png::svg_to_png(&svg, path)?
        } else {
            svg.into_bytes()
        };
        write_file(path, bytes)?;
        say(format!("wrote chart {}", path.display()));
    }
    Ok(())
}
