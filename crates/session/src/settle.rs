//! The task-run settlement: an `auto` io_uring set-up runs a short trial of
//! DEFER_TASKRUN against COOP_TASKRUN in each job of a time-based run and
//! keeps the faster (the engine's `taskrun_trial`). Across the runs of a
//! session the first trial settles the mode: later runs of the same arm, or
//! of every arm in the same settle group (arms on the same targets), use it
//! without a trial, so they differ only in what the arms name, never in a
//! mode two trials happened to pick apart, and they pay the trial once.

use engine::{RunOptions, RunResult, UringSetup};

/// The mode every job's task-run trial in `result` kept, when every job had
/// a trial and all kept the same mode; `None` otherwise (no trial ran, or
/// the jobs disagree: nothing is settled then, and the next run tries again).
pub fn kept_mode(result: &RunResult) -> Option<UringSetup> {
    let mut kept = result
        .targets
        .iter()
        .flat_map(|t| &t.workers)
        .map(|w| w.taskrun_trial.as_ref().map(|t| t.chosen));
    let first = kept.next()??;
    kept.all(|c| c == Some(first)).then_some(first)
}

/// The settled mode of each settle group of a schedule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settlements {
    modes: Vec<Option<UringSetup>>,
}

impl Settlements {
    /// `groups` groups, none settled yet.
    pub fn new(groups: usize) -> Settlements {
        Settlements {
            modes: vec![None; groups],
        }
    }

    /// The mode `group` settled on, if it has.
    pub fn mode(&self, group: usize) -> Option<UringSetup> {
        self.modes.get(group).copied().flatten()
    }

    /// The engine options of a run in `group`: `opts`, with an `auto`
    /// set-up replaced by the group's settled mode. An explicit set-up
    /// (`--uring-setup defer`, …) is never replaced.
    pub fn options(&self, group: usize, opts: &RunOptions) -> RunOptions {
        let mut out = opts.clone();
        if out.uring.setup == UringSetup::Auto {
            if let Some(mode) = self.mode(group) {
                out.uring.setup = mode;
            }
        }
        out
    }

    /// Records a run of `group` that ran with `ran_with` and gave `result`:
    /// where the run had an `auto` set-up and its jobs' trials kept one
    /// mode, the group settles on it. Returns the mode when it settled now
    /// (never twice for a group).
    pub fn record(
        &mut self,
        group: usize,
        ran_with: &RunOptions,
        result: &RunResult,
    ) -> Option<UringSetup> {
        if ran_with.uring.setup != UringSetup::Auto || self.mode(group).is_some() {
            return None;
        }
        let mode = kept_mode(result)?;
        *self.modes.get_mut(group)? = Some(mode);
        Some(mode)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{counted, null_opts, placement, TempFile};
    use engine::TaskrunTrial;

    /// A real null-backend result of two targets with two jobs each, its
    /// workers' trials then set to `trials` in order (missing: none).
    fn result(trials: &[Option<UringSetup>]) -> RunResult {
        let (a, b) = (TempFile::new("settle-a"), TempFile::new("settle-b"));
        let p = placement(&[a.path(), b.path()], &counted(8), 2);
        let mut r = engine::run(&p, &null_opts(), &mut |_| {}).expect("a null run");
        let mut trials = trials.iter();
        for w in r.targets.iter_mut().flat_map(|t| &mut t.workers) {
            w.taskrun_trial = trials.next().copied().flatten().map(|chosen| TaskrunTrial {
                chosen,
                defer_taskrun_iops: 1.0,
                coop_taskrun_iops: 2.0,
                trial_ns: 400_000_000,
                io: Default::default(),
            });
        }
        r
    }

    const COOP: UringSetup = UringSetup::CoopTaskrun;
    const DEFER: UringSetup = UringSetup::DeferTaskrun;

    #[test]
    fn a_mode_is_kept_only_when_every_job_agrees() {
        let all = |m| [Some(m); 4];
        assert_eq!(kept_mode(&result(&all(COOP))), Some(COOP));
        assert_eq!(kept_mode(&result(&all(DEFER))), Some(DEFER));
        let mut mixed = all(COOP);
        mixed[3] = Some(DEFER);
        assert_eq!(kept_mode(&result(&mixed)), None, "the jobs disagree");
        mixed[3] = None;
        assert_eq!(kept_mode(&result(&mixed)), None, "one job had no trial");
        assert_eq!(kept_mode(&result(&[])), None, "no trial at all");
    }

    #[test]
    fn a_group_settles_once_and_only_from_an_auto_run() {
        let auto = RunOptions::default();
        assert_eq!(auto.uring.setup, UringSetup::Auto);
        let (coop, defer) = (result(&[Some(COOP); 4]), result(&[Some(DEFER); 4]));
        let mut s = Settlements::new(2);
        // Jobs that disagree settle nothing; the next run tries again.
        let mut mixed = coop.clone();
        mixed.targets[1].workers[1].taskrun_trial = None;
        assert_eq!(s.record(0, &auto, &mixed), None);
        assert_eq!(s.options(0, &auto).uring.setup, UringSetup::Auto);
        assert_eq!(s.record(0, &auto, &coop), Some(COOP));
        assert_eq!(s.options(0, &auto).uring.setup, COOP);
        // The other group is not touched.
        assert_eq!(s.options(1, &auto).uring.setup, UringSetup::Auto);
        // Settled: a later trial does not move it.
        assert_eq!(s.record(0, &auto, &defer), None);
        assert_eq!(s.mode(0), Some(COOP));
        // An explicit set-up is neither replaced nor a source.
        let mut plain = RunOptions::default();
        plain.uring.setup = UringSetup::Plain;
        assert_eq!(s.options(0, &plain).uring.setup, UringSetup::Plain);
        assert_eq!(s.record(1, &plain, &defer), None);
        assert_eq!(s.mode(1), None);
        // A group out of range settles nothing and does not panic.
        assert_eq!(s.record(7, &auto, &defer), None);
    }
}
