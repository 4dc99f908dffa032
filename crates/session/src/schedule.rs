//! A schedule: live arms (each a plan with its engine options) run round
//! after round, every arm once per round in order (A B A B …, the order
//! `report::arm::interleave` fixes), with the task-run settlement between
//! runs and an interrupt that keeps the completed runs. `numio bench
//! --repeat` is one arm, `numio compare` two; a sweep is one arm per point.

use std::sync::atomic::{AtomicBool, Ordering};

use engine::{RunOptions, RunResult};
use planner::Placement;
use report::{Arm, RunRecord};

use crate::event::{Event, RunInfo};
use crate::once::run_once;
use crate::settle::Settlements;
use crate::SessionError;

/// An arm that runs live: a plan, its engine options and its settle group.
#[derive(Debug, Clone)]
pub struct LiveArm {
    /// Label in events, verdicts and legends.
    pub label: String,
    /// The arm as the user wrote it (kept in the result set).
    pub spec: String,
    /// The plan every run of the arm runs.
    pub placement: Placement,
    /// Its engine options (an `auto` io_uring set-up is settled by the
    /// first trial of its group).
    pub opts: RunOptions,
    /// Arms of one group share one task-run settlement (an index below the
    /// number of arms; [`Schedule::group_by_targets`] sets the usual one).
    pub settle_group: usize,
}

/// Live arms and the number of rounds.
#[derive(Debug, Clone)]
pub struct Schedule {
    /// The arms, in the order each round runs them.
    pub arms: Vec<LiveArm>,
    /// Runs of each arm.
    pub rounds: usize,
}

/// What a run cut short by an interrupt measured.
#[derive(Debug, Clone)]
pub struct Partial {
    /// The run as recorded (its `raw` result says `interrupted`).
    pub record: RunRecord,
    /// The time it measured, ns.
    pub runtime_ns: u64,
    /// Whether some of its I/O failed.
    pub had_errors: bool,
}

/// Where an interrupt ended a schedule.
#[derive(Debug, Clone)]
pub struct Interruption {
    /// The run it cut short, or the next run, which then did not start.
    pub run: RunInfo,
    /// What the cut run measured; `None` when the interrupt came between
    /// two runs. It is not among the outcome's runs: the caller decides
    /// (a lone first run of `bench --repeat` is still worth reporting).
    pub partial: Option<Partial>,
}

/// The runs a schedule completed.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// Every arm with its completed runs, in the schedule's arm order
    /// (`seq` is each run's place in execution order).
    pub arms: Vec<Arm>,
    /// Completed runs in which some I/O failed.
    pub failed_runs: usize,
    /// Set when an interrupt ended the schedule early.
    pub interrupted: Option<Interruption>,
}

impl Outcome {
    /// Completed runs over all arms.
    pub fn completed(&self) -> usize {
        self.arms.iter().map(|a| a.runs.len()).sum()
    }

    /// What a one-arm schedule of `runs` runs (`numio bench --repeat`)
    /// reports: a run an interrupt cut short is left out, unless it is the
    /// first (then it is all there is, and it is reported as interrupted).
    /// The arm is `None` when the interrupt came before any run measured
    /// anything; the note says where an interrupt stopped the runs.
    pub fn kept_for_repeat(self, runs: usize) -> Kept {
        let completed = self.completed();
        let mut failed_runs = self.failed_runs;
        let mut arm = self.arms.into_iter().next();
        let Some(cut) = self.interrupted else {
            return Kept {
                arm,
                failed_runs,
                note: None,
            };
        };
        let note = match (cut.partial.clone(), arm.as_mut()) {
            (Some(p), Some(arm)) if completed == 0 => {
                failed_runs += usize::from(p.had_errors);
                arm.runs.push(p.record);
                (runs > 1).then(|| {
                    format!(
                        "interrupted during run 1 of {runs}: reporting its {:.2}s measured",
                        p.runtime_ns as f64 / 1e9
                    )
                })
            }
            _ if completed == 0 => {
                arm = None;
                Some("interrupted before run 1 measured anything: nothing to report".into())
            }
            _ => Some(cut.note(runs, completed, "reporting")),
        };
        Kept {
            arm,
            failed_runs,
            note,
        }
    }
}

/// What a repeat reports of its outcome ([`Outcome::kept_for_repeat`]).
#[derive(Debug, Clone)]
pub struct Kept {
    /// The arm with the runs to report; `None`: nothing to report.
    pub arm: Option<Arm>,
    /// Its runs with I/O errors.
    pub failed_runs: usize,
    /// Where an interrupt stopped the runs, for the user.
    pub note: Option<String>,
}

impl Interruption {
    /// Where the interrupt stopped a schedule of `total` runs, `completed`
    /// of them kept, which the caller goes on `doing` (`comparing`).
    pub fn note(&self, total: usize, completed: usize, doing: &str) -> String {
        let seq = self.run.seq;
        match self.partial {
            Some(_) => format!(
                "interrupted during run {seq} of {total}: it is left out; {doing} the {completed} completed runs"
            ),
            None => format!(
                "interrupted before run {seq} of {total}: {doing} the {completed} completed runs"
            ),
        }
    }
}

/// How one run of an arm is carried out: [`LocalRunner`] runs the plan on
/// this machine's engine ([`run_once`]). A run that needs more around it
/// wraps that (a coalescing sweep sets a controller feature before the run
/// and restores it after); one that runs elsewhere replaces it (a fleet run
/// starts numio on each host and merges the results). The schedule, its
/// settlement and its interrupt handling stay the same.
pub trait Runner {
    /// Runs `arm`'s plan once with `opts` (the arm's options, settled),
    /// telling `observer` as [`run_once`] does, until it ends or
    /// `interrupt` is set.
    fn run(
        &mut self,
        arm: &LiveArm,
        opts: &RunOptions,
        run: RunInfo,
        interrupt: &AtomicBool,
        observer: &mut dyn FnMut(&Event<'_>),
    ) -> Result<RunResult, BoxError>;
}

/// Any error a [`Runner`] hands back.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Runs each plan on this machine's engine.
#[derive(Debug, Clone, Copy, Default)]
pub struct LocalRunner;

impl Runner for LocalRunner {
    fn run(
        &mut self,
        arm: &LiveArm,
        opts: &RunOptions,
        run: RunInfo,
        interrupt: &AtomicBool,
        observer: &mut dyn FnMut(&Event<'_>),
    ) -> Result<RunResult, BoxError> {
        Ok(run_once(&arm.placement, opts, run, interrupt, observer)?)
    }
}

/// Why the interleaved loop stopped early.
enum Stop {
    Interrupted,
    Failed(SessionError),
}

impl Schedule {
    /// One arm run `runs` times (`numio bench --repeat N`).
    pub fn repeat(arm: LiveArm, runs: usize) -> Schedule {
        Schedule {
            arms: vec![arm],
            rounds: runs,
        }
    }

    /// A plan run `runs` times, its arm labelled by the placement policy
    /// (`numio bench --repeat N`: `local`, spec `policy=local`).
    pub fn repeat_plan(placement: Placement, opts: RunOptions, runs: usize) -> Schedule {
        let label = placement.policy.clone();
        let arm = LiveArm {
            spec: format!("policy={label}"),
            label,
            placement,
            opts,
            settle_group: 0,
        };
        Schedule::repeat(arm, runs)
    }

    /// Runs in all.
    pub fn total_runs(&self) -> usize {
        self.arms.len() * self.rounds
    }

    /// Puts arms that name the same targets (in the same order) in one
    /// settle group, each other arm in its own: arms on the same targets
    /// then differ only in what they name, not in a task-run mode.
    pub fn group_by_targets(&mut self) {
        let targets: Vec<Vec<&str>> = self
            .arms
            .iter()
            .map(|a| {
                a.placement
                    .targets
                    .iter()
                    .map(|t| t.path.as_str())
                    .collect()
            })
            .collect();
        let groups: Vec<usize> = (0..targets.len())
            .map(|i| (0..=i).find(|&j| targets[j] == targets[i]).unwrap_or(i))
            .collect();
        for (arm, group) in self.arms.iter_mut().zip(groups) {
            arm.settle_group = group;
        }
    }

    /// The arms of settle group `group`.
    pub fn group_members(&self, group: usize) -> Vec<usize> {
        (0..self.arms.len())
            .filter(|&i| self.arms[i].settle_group == group)
            .collect()
    }

    fn check(&self) -> Result<(), SessionError> {
        let bad = |why: String| Err(SessionError::Schedule(why));
        if self.arms.is_empty() || self.rounds == 0 {
            return bad(format!(
                "{} arms and {} rounds: give at least one of each",
                self.arms.len(),
                self.rounds
            ));
        }
        match self.arms.iter().find(|a| a.settle_group >= self.arms.len()) {
            Some(a) => bad(format!(
                "arm {} has settle group {}, beyond its {} arms",
                a.label,
                a.settle_group,
                self.arms.len()
            )),
            None => Ok(()),
        }
    }

    /// Runs every arm `rounds` times, interleaved. Each run's I/O errors are
    /// counted, not fatal; a run that fails to run ends the schedule with
    /// that error. An interrupt (checked before each run, and by the engine
    /// during it) ends it early: the completed runs are kept and
    /// [`Outcome::interrupted`] says where it stopped. Each run goes
    /// through [`LocalRunner`].
    pub fn run(
        &self,
        interrupt: &AtomicBool,
        observer: &mut dyn FnMut(&Event<'_>),
    ) -> Result<Outcome, SessionError> {
        self.run_with(&mut LocalRunner, interrupt, observer)
    }

    /// As [`Schedule::run`], each run through `runner`.
    pub fn run_with(
        &self,
        runner: &mut dyn Runner,
        interrupt: &AtomicBool,
        observer: &mut dyn FnMut(&Event<'_>),
    ) -> Result<Outcome, SessionError> {
        self.check()?;
        let total = self.total_runs();
        let mut state = RunState {
            members: (0..self.arms.len())
                .map(|g| self.group_members(g))
                .collect(),
            settlements: Settlements::new(self.arms.len()),
            done: Vec::with_capacity(total),
            failed_runs: 0,
            interrupted: None,
        };
        let live: Vec<usize> = (0..self.arms.len()).collect();
        let outcome = report::arm::interleave(&live, self.rounds, |arm, round, seq| {
            let run = RunInfo {
                seq,
                total,
                arm,
                round,
            };
            self.step(run, &mut state, runner, interrupt, observer)
        });
        if let Err(Stop::Failed(e)) = outcome {
            return Err(e);
        }
        let arms = self
            .arms
            .iter()
            .enumerate()
            .map(|(i, a)| Arm {
                label: a.label.clone(),
                spec: a.spec.clone(),
                runs: state
                    .done
                    .iter()
                    .filter(|(arm, _)| *arm == i)
                    .map(|(_, r)| r.clone())
                    .collect(),
            })
            .collect();
        Ok(Outcome {
            arms,
            failed_runs: state.failed_runs,
            interrupted: state.interrupted,
        })
    }

    /// One run of the schedule: settled options in, settlement and the
    /// completed run (or where an interrupt stopped) out.
    fn step(
        &self,
        run: RunInfo,
        state: &mut RunState,
        runner: &mut dyn Runner,
        interrupt: &AtomicBool,
        observer: &mut dyn FnMut(&Event<'_>),
    ) -> Result<RunRecord, Stop> {
        if interrupt.load(Ordering::Relaxed) {
            state.interrupted = Some(Interruption { run, partial: None });
            return Err(Stop::Interrupted);
        }
        let a = &self.arms[run.arm];
        let opts = state.settlements.options(a.settle_group, &a.opts);
        let result = runner
            .run(a, &opts, run, interrupt, observer)
            .map_err(|source| {
                Stop::Failed(SessionError::Run {
                    run,
                    label: a.label.clone(),
                    source,
                })
            })?;
        let record = report::from_engine::record(run.seq, &result);
        let had_errors = !result.errors.is_empty();
        if result.interrupted {
            let partial = Partial {
                record,
                runtime_ns: result.runtime_ns,
                had_errors,
            };
            state.interrupted = Some(Interruption {
                run,
                partial: Some(partial),
            });
            return Err(Stop::Interrupted);
        }
        if run.seq < run.total {
            if let Some(mode) = state.settlements.record(a.settle_group, &opts, &result) {
                let arms = &state.members[a.settle_group];
                observer(&Event::Settled { run, mode, arms });
            }
        }
        state.failed_runs += usize::from(had_errors);
        // Kept here too, so that an interrupt can end the loop (interleave's
        // error path) without losing the completed runs.
        state.done.push((run.arm, record.clone()));
        Ok(record)
    }
}

/// What [`Schedule::run`] keeps between runs.
struct RunState {
    /// The arms of each settle group.
    members: Vec<Vec<usize>>,
    settlements: Settlements,
    /// Completed runs with their arm, in execution order.
    done: Vec<(usize, RunRecord)>,
    failed_runs: usize,
    interrupted: Option<Interruption>,
}

#[cfg(test)]
#[path = "schedule_tests.rs"]
mod tests;
