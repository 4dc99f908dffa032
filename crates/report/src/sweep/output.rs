//! Where a sweep goes once it ran (`numio sweep`, a sweep over hosts, a
//! coalescing sweep's points): the table, or JSON, on standard output; the
//! points as CSV (a file, or `-` for standard output instead of the
//! table); the saved result file; the chart. `numio report FILE` reprints
//! a saved sweep the same way.

use std::io::Write;
use std::path::PathBuf;

use crate::{ReportError, ResultSet};

/// Where the sweep goes besides the terminal.
#[derive(Debug, Clone, Default)]
pub struct Outputs {
    /// JSON on stdout instead of the table.
    pub json: bool,
    /// Points as CSV (`-`: stdout, instead of the table).
    pub csv: Option<PathBuf>,
    /// The result file.
    pub save: Option<PathBuf>,
    /// The chart (`.svg` or `.png`).
    pub chart: Option<PathBuf>,
}

/// Writes `set` as `out` asks: its text to `stdout`, files where named;
/// `say` hears each file written.
pub fn write(
    set: &ResultSet,
    out: &Outputs,
    stdout: &mut dyn Write,
    say: &mut dyn FnMut(String),
) -> Result<(), ReportError> {
    let analysis = crate::analyze(set);
    let csv_to_stdout = out.csv.as_deref().is_some_and(|p| p.as_os_str() == "-");
    let mut text = String::new();
    if out.json {
        let value = serde_json::json!({
            "schema": "numio-sweep",
            "schema_version": 1,
            "sweeps": analysis.sweeps,
            "results": set,
        });
        text = serde_json::to_string_pretty(&value).expect("a sweep always serializes");
        text.push('\n');
    } else if !csv_to_stdout {
        if let Some(f) = set.sweep.as_ref().and_then(|s| s.fleet.as_ref()) {
            text.push_str(&super::table::fleet_line(f));
        }
        for s in &analysis.sweeps {
            text.push_str(&super::table(s));
            text.push('\n');
        }
    }
    stdout
        .write_all(text.as_bytes())
        .map_err(ReportError::stdout)?;
    if let Some(path) = &out.csv {
        let csv = super::csv(&analysis.sweeps);
        if csv_to_stdout {
            stdout
                .write_all(csv.as_bytes())
                .map_err(ReportError::stdout)?;
        } else {
            std::fs::write(path, csv).map_err(|source| ReportError::Write {
                path: path.clone(),
                source,
            })?;
            say(format!("wrote CSV {} (one row per point)", path.display()));
        }
    }
    stdout.flush().map_err(ReportError::stdout)?;
    if let Some(path) = &out.save {
        crate::file::save(set, path)?;
        say(format!(
            "saved {} (reprint: numio report {}; compare two sweeps: numio compare --a result=A.json --b result=B.json)",
            path.display(),
            path.display()
        ));
    }
    if let Some(path) = &out.chart {
        for f in super::chart::write(&analysis.sweeps, path)? {
            say(format!("chart written to {}", f.display()));
        }
    }
    Ok(())
}
