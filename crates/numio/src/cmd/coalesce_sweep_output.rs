//! What `numio coalesce sweep` hands back: the tables (or JSON) on stdout,
//! the saved result file, the chart, and with `--apply` the
//! recommendation of the largest device count set through the same
//! recording path as `numio coalesce set`.

use std::path::PathBuf;

use anyhow::Context;
use report::ResultSet;
use session::coalesce::{apply_recommendation, json, ApplyOutcome};

/// Where the sweep goes besides the terminal, and whether to apply it.
#[derive(Debug, Clone, Default)]
pub struct Outputs {
    /// JSON on stdout instead of the tables.
    pub json: bool,
    /// The result file.
    pub save: Option<PathBuf>,
    /// The chart (`.svg` or `.png`).
    pub chart: Option<PathBuf>,
    /// Set the recommendation afterwards.
    pub apply: bool,
}

/// Sets a threshold (0: off) with a time in µs on the named controllers
/// and keeps it on record; says what it did.
pub type Apply<'a> = session::coalesce::Apply<'a, anyhow::Error>;

/// Prints, saves, charts and (with `apply`, on a `clean` sweep: not
/// interrupted, no failed run) applies `set`.
pub fn write(
    set: &ResultSet,
    out: &Outputs,
    apply: &mut Apply<'_>,
    clean: bool,
) -> anyhow::Result<()> {
    let analysis = report::analyze(set);
    let sweep = analysis
        .coalesce
        .as_ref()
        .context("the result set is not a coalescing sweep")?;
    let applied = match out.apply {
        false => None,
        true => match apply_recommendation(sweep, clean, apply)? {
            ApplyOutcome::Applied(a) => {
                eprintln!("numio: --apply: {}", a.sentence());
                Some(a)
            }
            ApplyOutcome::Skipped(why) => {
                eprintln!("numio: --apply: nothing applied: {why}");
                None
            }
            ApplyOutcome::NotMeasured => None,
        },
    };
    if out.json {
        let value = json(sweep, applied.as_ref(), set);
        println!("{}", serde_json::to_string_pretty(&value)?);
    } else {
        print!("{}", report::coalesce::table::render(sweep));
    }
    if let Some(path) = &out.save {
        report::file::save(set, path)?;
        eprintln!(
            "numio: saved {} (reprint: numio report {}; compare two sweeps: numio compare --a result=A.json --b result=B.json)",
            path.display(),
            path.display()
        );
    }
    if let Some(path) = &out.chart {
        report::coalesce::chart::write(sweep, path)
            .with_context(|| format!("drawing the chart {}", path.display()))?;
        eprintln!("numio: chart written to {}", path.display());
    }
    Ok(())
}
