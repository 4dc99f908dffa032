//! What `numio sweep` hands back: the sweep as a result set (kind sweep,
//! with its axes, cores per point, goal and whether Ctrl-C cut it), then
//! the table or JSON on stdout, the points as CSV, the saved file and the
//! chart. `numio report FILE` reprints a saved sweep the same way.

use std::path::{Path, PathBuf};

use anyhow::Context;
use report::{ResultSet, SetKind, SweepGoal, SweepSpec};

use session::axes::Axis;

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

/// The arms of `outcome` and whether Ctrl-C cut it: the completed runs,
/// or, when it cut the first run, that run's measured part (marked
/// interrupted in its result), so a long first point still reports.
pub fn keep_measured(outcome: session::Outcome) -> (Vec<report::Arm>, bool) {
    let completed = outcome.completed();
    let mut arms = outcome.arms;
    let Some(cut) = outcome.interrupted else {
        return (arms, false);
    };
    match cut.partial {
        Some(p) if completed == 0 && p.runtime_ns > 0 => {
            eprintln!(
                "numio: sweep interrupted in its first run: reporting its measured {:.1} s of {}; the result is marked interrupted",
                p.runtime_ns as f64 / 1e9,
                arms[cut.run.arm].label
            );
            arms[cut.run.arm].runs.push(p.record);
        }
        _ => eprintln!(
            "numio: sweep interrupted: reporting the {completed} runs completed; the result is marked interrupted"
        ),
    }
    (arms, true)
}

/// The sweep's result set.
pub fn result_set(
    axes: &[Axis],
    arms: Vec<report::Arm>,
    cores: Vec<usize>,
    knee_efficiency: f64,
    goal: Option<SweepGoal>,
    interrupted: bool,
) -> ResultSet {
    let mut set = ResultSet::new(
        SetKind::Sweep,
        super::report::command_line(),
        super::report::now_unix_s(),
        arms,
    );
    set.sweep = Some(SweepSpec {
        axes: session::axes::spec(axes),
        knee_efficiency,
        cores,
        goal,
        interrupted,
        fleet: None,
    });
    set
}

/// Prints, saves and exports `set` as `out` asks.
pub fn write(set: &ResultSet, out: &Outputs) -> anyhow::Result<()> {
    let analysis = report::analyze(set);
    let csv_to_stdout = out.csv.as_deref().is_some_and(|p| p.as_os_str() == "-");
    if out.json {
        let value = serde_json::json!({
            "schema": "numio-sweep",
            "schema_version": 1,
            "sweeps": analysis.sweeps,
            "results": set,
        });
        println!("{}", serde_json::to_string_pretty(&value)?);
    } else if !csv_to_stdout {
        if let Some(f) = set.sweep.as_ref().and_then(|s| s.fleet.as_ref()) {
            print!("{}", report::sweep::table::fleet_line(f));
        }
        for s in &analysis.sweeps {
            println!("{}", report::sweep::table(s));
        }
    }
    if let Some(path) = &out.csv {
        let text = report::sweep::csv(&analysis.sweeps);
        if csv_to_stdout {
            print!("{text}");
        } else {
            std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))?;
            eprintln!("numio: wrote CSV {} (one row per point)", path.display());
        }
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
        chart(&analysis.sweeps, path)?;
    }
    Ok(())
}

fn chart(sweeps: &[report::sweep::Sweep], path: &Path) -> anyhow::Result<()> {
    let files = report::sweep::chart::write(sweeps, path)
        .with_context(|| format!("drawing the chart {}", path.display()))?;
    for f in files {
        eprintln!("numio: chart written to {}", f.display());
    }
    Ok(())
}
