//! `numio report`: reprints a saved result file (single run, repeat set or
//! comparison) and exports it as CSV, JSON or a chart.

use std::path::PathBuf;

use anyhow::Context;
use report::{CsvExporter, Exporter, JsonExporter, TextExporter};

/// Flags of `numio report`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Result file written by `numio bench --save` or `numio compare --save`.
    pub file: PathBuf,
    /// Print the result set (with its analysis) as JSON instead of text.
    #[arg(long)]
    pub json: bool,
    /// Write a row per run per target as CSV to this file (`-`: standard output).
    #[arg(long, value_name = "OUT.csv")]
    pub csv: Option<PathBuf>,
    /// Draw the chart to this file: `.svg`, or `.png` (rasterized).
    #[arg(long, value_name = "OUT.svg|OUT.png")]
    pub chart: Option<PathBuf>,
}

/// Runs `numio report`.
pub fn run(args: Args) -> anyhow::Result<i32> {
    let set = report::file::load(&args.file)?;
    let stdout_csv = args.csv.as_deref().is_some_and(|p| p.as_os_str() == "-");
    if !stdout_csv {
        let exporter: &dyn Exporter = if args.json {
            &JsonExporter
        } else {
            &TextExporter
        };
        exporter.export(&set, &mut std::io::stdout().lock())?;
    }
    export_extras(&set, args.csv.as_deref(), args.chart.as_deref())?;
    Ok(0)
}

/// Writes the CSV and the chart when asked; shared with `numio compare`.
pub fn export_extras(
    set: &report::ResultSet,
    csv: Option<&std::path::Path>,
    chart: Option<&std::path::Path>,
) -> anyhow::Result<()> {
    if let Some(path) = csv {
        if path.as_os_str() == "-" {
            CsvExporter.export(set, &mut std::io::stdout().lock())?;
        } else {
            report::export::export_to_file(&CsvExporter, set, path)?;
            eprintln!("numio: wrote CSV {}", path.display());
        }
    }
    if let Some(path) = chart {
        let analysis = report::analyze(set);
        report::chart::write_chart(set, &analysis, path)
            .with_context(|| format!("drawing the chart {}", path.display()))?;
        eprintln!("numio: wrote chart {}", path.display());
    }
    Ok(())
}
