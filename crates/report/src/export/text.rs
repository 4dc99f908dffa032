//! Text: the verdicts first, then the repeat statistics, every run, and the
//! warnings with their fixes.

use std::fmt::Write as _;
use std::io::Write;

use super::table::{Align, Table};
use super::{io_error, Exporter};
use crate::analysis::{analyze, Analysis};
use crate::compare::Comparison;
use crate::error::ReportError;
use crate::format::{cv, grouped, metric_number, micros, runs};
use crate::model::{ResultSet, SetKind, TOTAL};
use crate::repeat::ArmStats;

/// Human-readable report.
#[derive(Debug, Clone, Copy, Default)]
pub struct TextExporter;

impl Exporter for TextExporter {
    fn name(&self) -> &'static str {
        "text"
    }
    fn export(&self, set: &ResultSet, out: &mut dyn Write) -> Result<(), ReportError> {
        let analysis = analyze(set);
        let text = render(set, &analysis);
        out.write_all(text.as_bytes()).map_err(io_error)
    }
}

/// The whole text report.
pub fn render(set: &ResultSet, analysis: &Analysis) -> String {
    let mut out = header(set);
    if let Some(c) = &analysis.coalesce {
        out.push('\n');
        out.push_str(&crate::coalesce::table::render(c));
        return out;
    }
    if set.kind == SetKind::Sweep {
        if let Some(f) = set.sweep.as_ref().and_then(|s| s.fleet.as_ref()) {
            out.push_str(&crate::sweep::table::fleet_line(f));
        }
        for s in &analysis.sweeps {
            out.push('\n');
            out.push_str(&crate::sweep::table(s));
        }
        return out;
    }
    // Two arms: one verdict; three: B against A, then C against A, each
    // headed by its arms.
    let named = !analysis.more_comparisons.is_empty();
    for c in analysis.comparison.iter().chain(&analysis.more_comparisons) {
        out.push_str(&verdicts(c, named));
    }
    out.push_str(&stats_table(&analysis.arms));
    out.push_str(&runs_table(set, analysis));
    let warnings = analysis.warnings();
    if !warnings.is_empty() {
        out.push_str("\nWarnings\n");
        for w in warnings {
            let _ = writeln!(out, "  - {w}");
        }
    }
    out
}

fn header(set: &ResultSet) -> String {
    let arms: Vec<String> = set
        .arms
        .iter()
        .map(|a| format!("{} ({}, {})", a.label, a.spec, runs(a.runs.len())))
        .collect();
    let what = match set.kind {
        SetKind::Single => "single run",
        SetKind::Repeat => "repeat set",
        SetKind::Compare if set.interleaved == Some(false) => {
            "comparison with saved results (runs not interleaved)"
        }
        SetKind::Compare if set.arms.len() > 2 => "comparison, runs interleaved A B C A B C …",
        SetKind::Compare => "comparison, runs interleaved A B A B …",
        SetKind::Sweep => "sweep, one arm per point",
    };
    let mut out = format!("numio results: {what}\n");
    let _ = writeln!(out, "  command: {}", set.command);
    // Every arm's, each once in the order met (a sweep's devices axis, a
    // sweep over hosts and a comparison of two fleets have more than the
    // first arm's).
    let mut targets: Vec<String> = Vec::new();
    for t in set.arms.iter().flat_map(|a| a.target_names()) {
        if !targets.contains(&t) {
            targets.push(t);
        }
    }
    if !set.arms.is_empty() {
        let _ = writeln!(out, "  targets: {}", targets.join(", "));
    }
    if set.arms.len() == 2 {
        let _ = writeln!(out, "  A: {}\n  B: {}", arms[0], arms[1]);
    } else if set.kind == SetKind::Compare && set.arms.len() == 3 {
        let _ = writeln!(out, "  A: {}\n  B: {}\n  C: {}", arms[0], arms[1], arms[2]);
    } else {
        for a in &arms {
            let _ = writeln!(out, "  arm: {a}");
        }
    }
    out
}

fn verdicts(c: &Comparison, named: bool) -> String {
    let arms = if named {
        format!(", {} vs {}", c.b.label, c.a.label)
    } else {
        String::new()
    };
    let mut out = format!(
        "\nVerdict{arms} ({:.0} % confidence)\n",
        c.confidence * 100.0
    );
    let mut last_scope = "";
    let one_target = c.a.targets.len() <= 1;
    let shown: Vec<_> = c
        .metrics
        .iter()
        .filter(|m| m.scope == TOTAL || !one_target)
        .collect();
    // The method once when every verdict shares it, else beside each.
    let methods: Vec<String> = shown
        .iter()
        .map(|m| m.inference.method.describe())
        .collect();
    let one_method = methods.windows(2).all(|w| w[0] == w[1]);
    if one_method {
        if let Some(m) = methods.first() {
            let _ = writeln!(out, "  method: {m}");
        }
    }
    for m in shown {
        if m.scope != last_scope {
            let scope = if m.scope == TOTAL {
                "in total".to_string()
            } else {
                format!("on {}", m.scope)
            };
            let _ = writeln!(out, "  {scope}:");
            last_scope = &m.scope;
        }
        let _ = writeln!(out, "    {}", m.verdict);
        if !one_method {
            let _ = writeln!(out, "      method: {}", m.inference.method.describe());
        }
    }
    out
}

fn stats_table(arms: &[ArmStats]) -> String {
    let mut t = Table::new(&[
        ("arm", Align::Left),
        ("target", Align::Left),
        ("metric", Align::Left),
        ("runs", Align::Right),
        ("mean", Align::Right),
        ("median", Align::Right),
        ("min", Align::Right),
        ("max", Align::Right),
        ("stdev", Align::Right),
        ("CV", Align::Right),
    ]);
    for arm in arms {
        let scopes = std::iter::once(&arm.total).chain(if arm.targets.len() > 1 {
            &arm.targets[..]
        } else {
            &[]
        });
        for scope in scopes {
            for m in &scope.metrics {
                let unit = m.metric.column();
                let n = |v: f64| metric_number(m.metric, v);
                let s = &m.summary;
                t.row(vec![
                    arm.label.clone(),
                    scope.scope.clone(),
                    unit.to_string(),
                    s.n.to_string(),
                    n(s.mean),
                    n(s.median),
                    n(s.min),
                    n(s.max),
                    if s.n < 2 { "-".to_string() } else { n(s.stdev) },
                    if s.n < 2 {
                        "-".to_string()
                    } else {
                        cv(s.cv_pct)
                    },
                ]);
            }
        }
    }
    format!(
        "\nRepeat statistics (stdev: sample; CV: stdev / mean)\n{}",
        t.render("  ")
    )
}

fn runs_table(set: &ResultSet, analysis: &Analysis) -> String {
    let mut t = Table::new(&[
        ("seq", Align::Right),
        ("arm", Align::Left),
        ("target", Align::Left),
        ("IOPS", Align::Right),
        ("MB/s", Align::Right),
        ("lat mean µs", Align::Right),
        ("lat p99 µs", Align::Right),
        ("flag", Align::Left),
    ]);
    for (arm, run) in set.runs_in_order() {
        let stats = analysis.arms.iter().find(|s| s.label == arm.label);
        let many = run.targets.len() > 1;
        let rows = std::iter::once(&run.total).chain(if many { &run.targets[..] } else { &[] });
        for m in rows {
            let flagged = stats
                .and_then(|s| {
                    std::iter::once(&s.total)
                        .chain(&s.targets)
                        .find(|x| x.scope == m.target)
                })
                .map(|x| {
                    x.metrics
                        .iter()
                        .any(|ms| ms.outliers.iter().any(|o| o.seq == run.seq))
                })
                .unwrap_or(false);
            t.row(vec![
                run.seq.to_string(),
                arm.label.clone(),
                m.target.clone(),
                grouped(m.iops),
                format!("{:.1}", m.bandwidth_bytes_per_s / 1e6),
                micros(m.lat_mean_ns),
                micros(m.lat_p99_ns),
                if flagged {
                    "outlier".to_string()
                } else {
                    String::new()
                },
            ]);
        }
    }
    format!("\nRuns (in execution order)\n{}", t.render("  "))
}
