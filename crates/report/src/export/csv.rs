//! CSV: a row per run per target, plus a `total` row per run.

use std::io::Write;

use super::{io_error, Exporter};
use crate::analysis::analyze;
use crate::error::ReportError;
use crate::model::{ResultSet, TargetMetrics};
use crate::repeat::Metric;

/// Columns, in order.
pub const COLUMNS: [&str; 10] = [
    "arm",
    "spec",
    "seq",
    "run",
    "target",
    "iops",
    "bandwidth_bytes_per_s",
    "lat_mean_ns",
    "lat_p99_ns",
    "iops_outlier",
];

/// Comma-separated values with a header line (RFC 4180 quoting).
#[derive(Debug, Clone, Copy, Default)]
pub struct CsvExporter;

/// One CSV field, quoted where RFC 4180 says it must be.
pub(crate) fn field(value: &str) -> String {
    if value.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", value.replace('"', "\"\""))
    } else {
        value.to_string()
    }
}

fn row(cells: &[String]) -> String {
    let mut line = cells.iter().map(|c| field(c)).collect::<Vec<_>>().join(",");
    line.push('\n');
    line
}

impl Exporter for CsvExporter {
    fn name(&self) -> &'static str {
        "csv"
    }
    fn export(&self, set: &ResultSet, out: &mut dyn Write) -> Result<(), ReportError> {
        let analysis = analyze(set);
        let header: Vec<String> = COLUMNS.iter().map(|c| c.to_string()).collect();
        let mut text = row(&header);
        for arm in &set.arms {
            let stats = analysis.arms.iter().find(|s| s.label == arm.label);
            for (i, run) in arm.runs.iter().enumerate() {
                for m in run.targets.iter().chain(std::iter::once(&run.total)) {
                    let outlier = stats
                        .and_then(|s| {
                            std::iter::once(&s.total)
                                .chain(&s.targets)
                                .find(|t| t.scope == m.target)
                        })
                        .map(|t| {
                            t.metric(Metric::Iops)
                                .outliers
                                .iter()
                                .any(|o| o.seq == run.seq)
                        })
                        .unwrap_or(false);
                    text.push_str(&row(&cells(
                        &arm.label,
                        &arm.spec,
                        run.seq,
                        i + 1,
                        m,
                        outlier,
                    )));
                }
            }
        }
        out.write_all(text.as_bytes()).map_err(io_error)
    }
}

fn cells(
    label: &str,
    spec: &str,
    seq: usize,
    run: usize,
    m: &TargetMetrics,
    outlier: bool,
) -> Vec<String> {
    vec![
        label.to_string(),
        spec.to_string(),
        seq.to_string(),
        run.to_string(),
        m.target.clone(),
        format!("{:.1}", m.iops),
        format!("{:.0}", m.bandwidth_bytes_per_s),
        format!("{:.1}", m.lat_mean_ns),
        format!("{:.0}", m.lat_p99_ns),
        outlier.to_string(),
    ]
}
