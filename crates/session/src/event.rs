//! What a session tells its caller while it runs: one callback, one enum.
//! The caller decides what to show (a line on stderr, a live progress line,
//! nothing); the session never prints.

use engine::{ProgressSnapshot, UringSetup};

/// Where a run stands in its session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunInfo {
    /// Position in execution order, from 1.
    pub seq: usize,
    /// Runs the session plans in all.
    pub total: usize,
    /// Index of the arm (or point) the run belongs to in its schedule.
    pub arm: usize,
    /// Round the run belongs to, from 0 (every arm runs once per round).
    pub round: usize,
}

impl RunInfo {
    /// The only run of a one-run session.
    pub const SINGLE: RunInfo = RunInfo {
        seq: 1,
        total: 1,
        arm: 0,
        round: 0,
    };
}

/// One thing that happened in a session.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Event<'a> {
    /// The run's set-up begins: targets are checked and workers start.
    Starting(RunInfo),
    /// The run's workers passed the start barrier: set-up and any io_uring
    /// task-run trial are done, and the ramp (if any) or the measured time
    /// starts now. A test that must signal a run while it measures waits
    /// for this, not for a clock.
    Measuring {
        /// The run.
        run: RunInfo,
        /// Warm-up before measuring (the longest of the plan's targets), ns.
        ramp_ns: u64,
        /// Measured time (the longest of the plan's targets), ns; `None`
        /// when some target has no time limit.
        runtime_ns: Option<u64>,
        /// Whether some target may end sooner: at its size (`time_based`
        /// off) or its I/O count.
        may_end_early: bool,
        /// Where the run's live metrics are served (`--metrics`).
        metrics: Option<std::net::SocketAddr>,
    },
    /// Live counters of the run, about five times a second.
    Progress {
        /// The run.
        run: RunInfo,
        /// What the workers have published so far.
        snapshot: &'a ProgressSnapshot,
    },
    /// The engine handed the run back (completed, cut short or failed).
    Ended(RunInfo),
    /// `run`'s task-run trial kept `mode` for every job: the later runs of
    /// the arms `arms` use it without a trial.
    Settled {
        /// The run whose trial settled it.
        run: RunInfo,
        /// The mode kept (DEFER_TASKRUN or COOP_TASKRUN).
        mode: UringSetup,
        /// The arms that share the settlement (indices in the schedule).
        arms: &'a [usize],
    },
}
