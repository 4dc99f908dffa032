//! Where a result set goes once its runs are done (`numio bench --repeat`,
//! `numio compare`, `numio report`): the text (or JSON) on standard output
//! unless the CSV goes there, the saved result file, the CSV (a file, or
//! `-` for standard output) and the chart. A sweep's are
//! [`crate::sweep::output`].

use std::io::Write;
use std::path::Path;

use crate::{CsvExporter, Exporter, JsonExporter, ReportError, ResultSet, TextExporter};

/// The outputs asked for.
#[derive(Debug, Clone, Copy, Default)]
pub struct SetOutputs<'a> {
    /// JSON (the set with its analysis) instead of the text.
    pub json: bool,
    /// The result file.
    pub save: Option<&'a Path>,
    /// A row per run per target as CSV (`-`: standard output).
    pub csv: Option<&'a Path>,
    /// The chart (`.svg` or `.png`).
    pub chart: Option<&'a Path>,
}

/// Prints `set` (text, or JSON) to `stdout` unless the CSV goes there,
/// then saves it and writes the CSV and the chart when asked; `say` hears
/// each file written.
pub fn write(
    set: &ResultSet,
    out: SetOutputs<'_>,
    stdout: &mut dyn Write,
    say: &mut dyn FnMut(String),
) -> Result<(), ReportError> {
    if out.csv.is_none_or(|p| p.as_os_str() != "-") {
        let exporter: &dyn Exporter = if out.json {
            &JsonExporter
        } else {
            &TextExporter
        };
        exporter.export(set, stdout)?;
        stdout.flush().map_err(ReportError::stdout)?;
    }
    if let Some(path) = out.save {
        crate::file::save(set, path)?;
        say(format!(
            "saved {} (reprint: numio report {})",
            path.display(),
            path.display()
        ));
    }
    extras(set, out.csv, out.chart, stdout, say)
}

/// Writes the CSV (to `stdout` for `-`) and the chart when asked.
pub fn extras(
    set: &ResultSet,
    csv: Option<&Path>,
    chart: Option<&Path>,
    stdout: &mut dyn Write,
    say: &mut dyn FnMut(String),
) -> Result<(), ReportError> {
    if let Some(path) = csv {
        if path.as_os_str() == "-" {
            CsvExporter.export(set, stdout)?;
            stdout.flush().map_err(ReportError::stdout)?;
        } else {
            crate::export::export_to_file(&CsvExporter, set, path)?;
            say(format!("wrote CSV {}", path.display()));
        }
    }
    if let Some(path) = chart {
        let analysis = crate::analyze(set);
        crate::chart::write_chart(set, &analysis, path)?;
        say(format!("wrote chart {}", path.display()));
    }
    Ok(())
}
