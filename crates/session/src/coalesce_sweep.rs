//! `numio coalesce sweep` from a checked plan to its outputs: a check
//! before the first run that every controller can be opened, read and
//! recorded ([`CoalesceSweep::preflight`]), the schedule run through
//! [`CoalesceRunner`] (each point's value set for its runs only), the
//! result set (a sweep over `threshold` × `devices` with a coalesce spec,
//! which `numio report` and `numio compare` read as any sweep), and what
//! it hands back ([`CoalesceSweep::finish`]): the tables or JSON, the
//! saved file, the chart, and with `--apply` the recommendation of the
//! largest device count set through `tune::change::set_and_keep`.

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;

use report::coalesce::{CoalesceSpec, DEVICES_AXIS, THRESHOLD_AXIS};
use report::{ReportError, ResultSet, SetKind, SweepSpec};
use tune::{Access, Controller, Journal, TuneError};

use crate::axes::Axis;
use crate::coalesce::{all, apply_recommendation, json, ApplyOutcome, CoalesceRunner};
use crate::coalesce_plan::SweepPlan;
use crate::{Event, Schedule, SessionError};

/// A coalescing sweep, planned, on its controllers.
pub struct CoalesceSweep<'a> {
    /// Opens the controllers.
    pub access: &'a dyn Access,
    /// The state file of originals.
    pub journal: Journal,
    /// The command line: recorded with the originals and in the result.
    pub command: String,
    /// The checked flags.
    pub plan: SweepPlan,
    /// The namespaces, in order.
    pub targets: Vec<String>,
    /// The controllers of each target, in target order.
    pub controllers: Vec<Vec<Controller>>,
}

/// What [`CoalesceSweep::run`] measured.
#[derive(Debug)]
pub struct SweepRun {
    /// Every run, as a sweep set with the coalesce spec.
    pub set: ResultSet,
    /// Not interrupted, and no run failed: `--apply` may set its advice.
    pub clean: bool,
    /// Completed runs in which some I/O failed.
    pub failed_runs: usize,
    /// What to tell the user now (originals put back, an interrupt).
    pub notes: Vec<String>,
}

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

/// What [`CoalesceSweep::finish`] hands the caller to print, in order.
#[derive(Debug, Clone, PartialEq)]
pub enum Emit {
    /// Text for stdout, as it is.
    Stdout(String),
    /// A line for stderr.
    Note(String),
}

/// Why a sweep's outputs could not be made.
#[derive(Debug, thiserror::Error)]
pub enum FinishError {
    /// The set carries no coalescing analysis.
    #[error("the result set is not a coalescing sweep")]
    NotCoalesce,
    /// `--apply` failed.
    #[error(transparent)]
    Apply(#[from] TuneError),
    /// The JSON could not be made.
    #[error(transparent)]
    Json(#[from] serde_json::Error),
    /// The result file could not be saved.
    #[error(transparent)]
    Save(#[from] ReportError),
    /// The chart could not be drawn.
    #[error("drawing the chart {}", .path.display())]
    Chart {
        /// The chart file.
        path: PathBuf,
        /// Why.
        source: ReportError,
    },
}

impl CoalesceSweep<'_> {
    /// Opens, reads and records every controller, then drops the records:
    /// what would stop a run later stops the sweep now, nothing changed.
    pub fn preflight(&self) -> Result<(), TuneError> {
        tune::change::preflight(
            self.access,
            &self.journal,
            &all(&self.controllers),
            &self.command,
        )
    }

    /// Runs `schedule` (an arm per point of the plan, in order; `cores`:
    /// each point's) with each point's value set around its runs. Each run
    /// puts its controllers' originals back as it ends, failed,
    /// interrupted or not.
    pub fn run(
        &self,
        schedule: &Schedule,
        cores: Vec<usize>,
        interrupt: &AtomicBool,
        observer: &mut dyn FnMut(&Event<'_>),
    ) -> Result<SweepRun, SessionError> {
        let mut runner = CoalesceRunner {
            access: self.access,
            journal: self.journal.clone(),
            command: self.command.clone(),
            points: self.plan.points.clone(),
            controllers: self.controllers.clone(),
            time_us: self.plan.time_us,
        };
        let outcome = schedule.run_with(&mut runner, interrupt, observer)?;
        let names: Vec<String> = all(&self.controllers).into_iter().map(|c| c.name).collect();
        let mut notes = vec![format!(
            "coalesce: put back the original values on {} (each point's value was set for its runs only)",
            names.join(", ")
        )];
        let interrupted = outcome.interrupted.is_some();
        if interrupted {
            notes.push(format!(
                "coalesce sweep interrupted: reporting the {} runs completed; the result is marked interrupted",
                outcome.completed()
            ));
        }
        let completed_clean = !interrupted && outcome.failed_runs == 0;
        Ok(SweepRun {
            set: self.result_set(outcome.arms, cores, interrupted),
            clean: completed_clean,
            failed_runs: outcome.failed_runs,
            notes,
        })
    }

    /// The sweep's result set: its arms (one per point, in plan order) as
    /// a sweep over `threshold` × `devices` (as `numio sweep` saves a
    /// grid), with the coalesce spec.
    fn result_set(
        &self,
        arms: Vec<report::Arm>,
        cores: Vec<usize>,
        interrupted: bool,
    ) -> ResultSet {
        let axes = [
            Axis {
                name: THRESHOLD_AXIS.into(),
                values: self.plan.thresholds.iter().map(u8::to_string).collect(),
            },
            Axis {
                name: DEVICES_AXIS.into(),
                values: self.plan.devices.iter().map(usize::to_string).collect(),
            },
        ];
        let now_unix_s = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let mut set = ResultSet::new(SetKind::Sweep, self.command.clone(), now_unix_s, arms);
        set.sweep = Some(SweepSpec {
            axes: crate::axes::spec(&axes),
            knee_efficiency: report::sweep::DEFAULT_KNEE_EFFICIENCY,
            cores,
            goal: None,
            interrupted,
            fleet: None,
        });
        set.coalesce = Some(CoalesceSpec {
            time_us: self.plan.time_us,
            targets: self.targets.clone(),
            controllers: self
                .controllers
                .iter()
                .map(|cs| cs.iter().map(|c| c.name.clone()).collect())
                .collect(),
            max_latency: self.plan.budgets.clone(),
        });
        set
    }

    /// `--apply`'s setting: `threshold` (0: off) with `time_us` on the
    /// named controllers, kept on record as `numio coalesce set` keeps it.
    pub fn apply(&self, on: &[String], threshold: u8, time_us: u32) -> Result<String, TuneError> {
        let on: Vec<Controller> = all(&self.controllers)
            .into_iter()
            .filter(|c| on.contains(&c.name))
            .collect();
        let command = format!("{} (--apply)", self.command);
        tune::change::set_and_keep(
            self.access,
            &self.journal,
            &on,
            threshold,
            time_us,
            &command,
        )
    }

    /// Prints (through `emit`), saves, charts and (with `out.apply`, on a
    /// clean run) applies `run`'s set.
    pub fn finish(
        &self,
        run: &SweepRun,
        out: &Outputs,
        emit: &mut dyn FnMut(Emit),
    ) -> Result<(), FinishError> {
        let set = &run.set;
        let analysis = report::analyze(set);
        let sweep = analysis.coalesce.as_ref().ok_or(FinishError::NotCoalesce)?;
        let applied = match out.apply {
            false => None,
            true => match apply_recommendation(sweep, run.clean, &mut |on, t, time| {
                self.apply(on, t, time)
            })? {
                ApplyOutcome::Applied(a) => {
                    emit(Emit::Note(format!("--apply: {}", a.sentence())));
                    Some(a)
                }
                ApplyOutcome::Skipped(why) => {
                    emit(Emit::Note(format!("--apply: nothing applied: {why}")));
                    None
                }
                ApplyOutcome::NotMeasured => None,
            },
        };
        emit(Emit::Stdout(if out.json {
            let value = json(sweep, applied.as_ref(), set);
            serde_json::to_string_pretty(&value)? + "\n"
        } else {
            report::coalesce::table::render(sweep)
        }));
        if let Some(path) = &out.save {
            report::file::save(set, path)?;
            emit(Emit::Note(format!(
                "saved {} (reprint: numio report {}; compare two sweeps: numio compare --a result=A.json --b result=B.json)",
                path.display(),
                path.display()
            )));
        }
        if let Some(path) = &out.chart {
            report::coalesce::chart::write(sweep, path).map_err(|source| FinishError::Chart {
                path: path.clone(),
                source,
            })?;
            emit(Emit::Note(format!("chart written to {}", path.display())));
        }
        Ok(())
    }
}
