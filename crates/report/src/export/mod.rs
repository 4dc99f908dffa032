//! Exporters: one trait, four formats (text table, JSON, CSV, SVG chart),
//! and fio's JSON layout of engine runs ([`fio_json`]).
//! Each is covered by a golden-output test (`tests/golden.rs`).

use std::io::Write;
use std::path::Path;

use crate::error::ReportError;
use crate::model::ResultSet;

pub(crate) mod csv;
pub mod fio_json;
mod json;
pub(crate) mod table;
mod text;

pub use crate::format::runs as runs_label;
pub use csv::CsvExporter;
pub use json::JsonExporter;
pub use text::TextExporter;

/// Writes a result set in one format.
pub trait Exporter {
    /// Name of the format (`text`, `json`, `csv`, `svg`).
    fn name(&self) -> &'static str;
    /// Writes `set` to `out`.
    fn export(&self, set: &ResultSet, out: &mut dyn Write) -> Result<(), ReportError>;
}

/// The SVG chart as an exporter.
#[derive(Debug, Clone, Copy, Default)]
pub struct SvgExporter;

impl Exporter for SvgExporter {
    fn name(&self) -> &'static str {
        "svg"
    }
    fn export(&self, set: &ResultSet, out: &mut dyn Write) -> Result<(), ReportError> {
        let analysis = crate::analysis::analyze(set);
        let svg = crate::chart::render_svg(set, &analysis);
        out.write_all(svg.as_bytes()).map_err(io_error)
    }
}

/// Maps an I/O error of an exporter's output (the caller names the path).
pub(crate) fn io_error(source: std::io::Error) -> ReportError {
    ReportError::Write {
        path: "<output>".into(),
        source,
    }
}

/// Runs `exporter` into the file at `path`.
pub fn export_to_file(
    exporter: &dyn Exporter,
    set: &ResultSet,
    path: &Path,
) -> Result<(), ReportError> {
    let mut bytes = Vec::new();
    exporter.export(set, &mut bytes)?;
    std::fs::write(path, bytes).map_err(|source| ReportError::Write {
        path: path.to_path_buf(),
        source,
    })
}
