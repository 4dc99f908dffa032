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

/// The `--json` document: the analysis (tables, recommendations), what
/// `--apply` did, and the result set with every run.
pub fn json(
    sweep: &CoalesceSweep,
    applied: Option<&Applied>,
    set: &ResultSet,
) -> serde_json::Value {
    serde_json::json!({
        "schema": "numio-coalesce-sweep",
        "schema_version": 1,
        "coalesce": sweep,
        "applied": applied,
        "results": set,
    })
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

#[cfg(test)]
mod tests {
    use super::*;
    use report::coalesce::{DeviceTable, Recommendation, RowMetrics, ThresholdRow};

    fn row(threshold: u8) -> ThresholdRow {
        let m = RowMetrics {
            scope: "total".into(),
            runs: 1,
            iops: 1000.0,
            iops_ci95: None,
            lat_p50_ns: None,
            lat_p95_ns: None,
            lat_p99_ns: None,
            lat_p9999_ns: None,
            interrupts_per_io: Some(1.0),
            ctx_switches_per_io: None,
            cpu_ns_per_io: None,
        };
        ThresholdRow {
            label: format!("threshold={threshold}"),
            threshold,
            total: m,
            drives: vec![],
            budgets: vec![],
        }
    }

    /// A table of `devices` drives recommending `threshold` (0: off),
    /// measured or not.
    fn table(devices: usize, verdict: Verdict, threshold: u8, measured: bool) -> DeviceTable {
        DeviceTable {
            devices,
            targets: (0..devices).map(|i| format!("/dev/nvme{i}n1")).collect(),
            controllers: (0..devices).map(|i| format!("nvme{i}")).collect(),
            rows: if measured {
                vec![row(0), row(3)]
            } else {
                vec![]
            },
            recommendation: Recommendation {
                verdict,
                threshold,
                time_us: if threshold == 0 { 0 } else { 100 },
                raw: 0,
                summary: String::new(),
                evidence: vec![],
            },
            findings: vec![],
        }
    }

    fn sweep(tables: Vec<DeviceTable>) -> CoalesceSweep {
        CoalesceSweep {
            time_us: 100,
            max_latency: vec![],
            tables,
            interrupted: false,
        }
    }

    type Calls = Vec<(Vec<String>, u8, u32)>;

    /// What `apply_recommendation` applied, and the calls it made.
    fn applied(s: &CoalesceSweep, clean: bool) -> (Option<Applied>, Calls) {
        let mut calls = Vec::new();
        let mut apply = |on: &[String], t: u8, time: u32| {
            calls.push((on.to_vec(), t, time));
            Ok("changed nvme0".to_string())
        };
        let a = apply_recommendation(s, clean, &mut apply).unwrap();
        (a, calls)
    }

    #[test]
    fn apply_sets_the_recommendation_of_the_most_drives_measured() {
        let s = sweep(vec![
            table(1, Verdict::NoGain, 0, true),
            table(2, Verdict::Coalesce, 3, true),
            table(4, Verdict::NotMeasured, 0, false),
        ]);
        let (a, calls) = applied(&s, true);
        let names = vec!["nvme0".to_string(), "nvme1".to_string()];
        assert_eq!(calls, [(names.clone(), 3, 100)]);
        let a = a.unwrap();
        let set = report::ResultSet::new(report::SetKind::Sweep, "x", 0, vec![]);
        let j = json(&s, Some(&a), &set);
        assert_eq!(
            (a.devices, a.controllers, a.threshold, a.time_us),
            (2, names, 3, 100)
        );
        assert_eq!(j["schema"], "numio-coalesce-sweep");
        assert_eq!(j["applied"]["threshold"], 3);
        assert_eq!(
            j["coalesce"]["tables"][1]["recommendation"]["verdict"],
            "coalesce"
        );
        assert_eq!(j["results"]["kind"], "sweep");
    }

    #[test]
    fn leave_it_off_applies_off_and_a_cut_sweep_applies_nothing() {
        let s = sweep(vec![table(1, Verdict::NoGain, 0, true)]);
        let (a, calls) = applied(&s, true);
        assert_eq!(calls, [(vec!["nvme0".to_string()], 0, 0)]);
        assert_eq!(a.unwrap().threshold, 0);
        let (a, calls) = applied(&s, false);
        assert!(
            a.is_none() && calls.is_empty(),
            "interrupted or failed runs"
        );
        let (a, calls) = applied(&sweep(vec![table(2, Verdict::NotMeasured, 0, false)]), true);
        assert!(a.is_none() && calls.is_empty(), "nothing measured");
    }
}
