//! What `numio coalesce sweep` hands back: the tables (or JSON) on stdout,
//! the saved result file, the chart, and with `--apply` the
//! recommendation of the largest device count set through the same
//! recording path as `numio coalesce set`.

use std::path::PathBuf;

use anyhow::Context;
use report::coalesce::{CoalesceSweep, Verdict};
use report::ResultSet;

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
pub type Apply<'a> = dyn FnMut(&[String], u8, u32) -> anyhow::Result<String> + 'a;

/// What `--apply` did (in the JSON as `applied`).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Applied {
    /// The device count whose recommendation was applied.
    pub devices: usize,
    /// The controllers set.
    pub controllers: Vec<String>,
    /// The threshold set (0: off).
    pub threshold: u8,
    /// Its aggregation time, µs (0: off).
    pub time_us: u32,
    /// What was done, in a sentence.
    pub note: String,
}

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
    let applied = if out.apply {
        apply_recommendation(sweep, clean, apply)?
    } else {
        None
    };
    if out.json {
        let value = serde_json::json!({
            "schema": "numio-coalesce-sweep",
            "schema_version": 1,
            "coalesce": sweep,
            "applied": applied,
            "results": set,
        });
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

/// `--apply`: the recommendation of the most drives the sweep ran, set on
/// their controllers by `apply` (which keeps the record of originals);
/// nothing on a sweep that was cut short or had failed runs.
fn apply_recommendation(
    sweep: &CoalesceSweep,
    clean: bool,
    apply: &mut Apply<'_>,
) -> anyhow::Result<Option<Applied>> {
    if !clean {
        eprintln!(
            "numio: --apply: nothing applied: the sweep was interrupted or some runs failed; run it again"
        );
        return Ok(None);
    }
    let Some(table) = sweep.widest() else {
        eprintln!("numio: --apply: nothing applied: no point was measured");
        return Ok(None);
    };
    let rec = &table.recommendation;
    if rec.verdict == Verdict::NotMeasured {
        return Ok(None);
    }
    let note = apply(&table.controllers, rec.threshold, rec.time_us)?;
    let what = if rec.is_off() {
        "coalescing off".to_string()
    } else {
        format!("threshold {} with time {} µs", rec.threshold, rec.time_us)
    };
    eprintln!(
        "numio: --apply: {what} on {} (the recommendation for {} devices, the most this sweep ran): {note}",
        table.controllers.join(", "),
        table.devices
    );
    Ok(Some(Applied {
        devices: table.devices,
        controllers: table.controllers.clone(),
        threshold: rec.threshold,
        time_us: rec.time_us,
        note,
    }))
}
