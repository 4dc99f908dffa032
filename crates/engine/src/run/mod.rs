//! Running a [`Placement`]: check every target, decide what each job
//! runs, start one pinned worker per job, watch them while they run, merge
//! their statistics.
//!
//! One job per module, in the order a run takes them:
//! * [`options`]: what the caller asks for ([`RunOptions`], [`IoPoll`]);
//! * `checks`: every target inspected and checked before anything starts;
//! * `spec`: what each worker is given (its backend as a `BackendSpec`,
//!   decided once per target) and what it hands back;
//! * `control`, `spawn`: the start barrier and flags; the threads, started,
//!   watched and joined;
//! * `job`, `resources`, `build`, `trial`: one worker's thread: its
//!   resources, its backend built by that backend's own constructor, and
//!   for an `auto` uring set-up the task-run trial;
//! * `merge`: the workers' numbers into the run's result;
//! * `counters`: the machine's CPU time, context switches and interrupts
//!   around the measured time (from `topology`), into the result.

use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use planner::Placement;
use results::RunResult;

use crate::error::EngineError;
use crate::progress::{snapshot, ProgressSnapshot, WorkerProgress};
use crate::sys;

mod build;
mod checks;
mod control;
mod counters;
mod job;
mod merge;
pub mod options;
mod resources;
mod spawn;
mod spec;
mod trial;

pub use options::{IoPoll, RunOptions, TargetVerify, DEFAULT_PERCENTILES};
pub use resources::VERIFY_SEED;

/// Checks every target of `placement` and runs it. `on_progress` is called
/// from the calling thread: first once as every worker passes the start
/// barrier (set-up and any task-run trial done, `elapsed_ns` 0; not when
/// set-up failed), then about five times a second while workers run.
pub fn run(
    placement: &Placement,
    opts: &RunOptions,
    on_progress: &mut dyn FnMut(&ProgressSnapshot),
) -> Result<RunResult, EngineError> {
    run_until(placement, opts, &AtomicBool::new(false), on_progress)
}

/// The checks a run makes before its workers start, and one open of each
/// target its workers open as files (for writing where the workload
/// writes, O_DIRECT where it asks), without running anything: a fleet
/// agent says `ready` only after this, so a host that cannot open its
/// targets fails at the barrier, not after the start.
pub fn preflight(placement: &Placement, opts: &RunOptions) -> Result<(), EngineError> {
    let checked = checks::check_targets(placement, opts)?;
    let specs = spec::job_specs(placement, &checked, opts)?;
    let mut opened = std::collections::BTreeSet::new();
    for s in specs.iter().filter(|s| s.backend.opens_file()) {
        if opened.insert(s.target) {
            drop(crate::targets::open(
                &s.path,
                s.workload.rw.writes(),
                s.workload.direct,
            )?);
        }
    }
    Ok(())
}

/// As [`run`], and stops early once `interrupt` is set (e.g. by a signal
/// handler): within one watch tick (50 ms) the workers stop issuing, drain
/// what is in flight and hand back what they measured; the result covers the
/// time actually measured and has `interrupted` set.
pub fn run_until(
    placement: &Placement,
    opts: &RunOptions,
    interrupt: &AtomicBool,
    on_progress: &mut dyn FnMut(&ProgressSnapshot),
) -> Result<RunResult, EngineError> {
    let started_unix_s = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let checked = checks::check_targets(placement, opts)?;
    let specs = spec::job_specs(placement, &checked, opts)?;
    let ctl = Arc::new(control::Control::new(specs.len()));
    let progress: Vec<Arc<WorkerProgress>> = specs
        .iter()
        .map(|_| Arc::new(WorkerProgress::default()))
        .collect();
    let live = serve_metrics(opts, &specs, &progress)?;
    let handles = spawn::spawn_workers(&specs, &ctl, &progress)?;
    ctl.start.wait();
    let clock = spawn::RunClock {
        t0_ns: sys::now_ns(),
        ramp_ns: longest_ramp_ns(placement),
        planned_ns: planned_ns(placement),
        interval_ns: opts.interval_ns,
    };
    let process0 = sys::process_usage();
    let mut counters = counters::CounterWatch::new(Path::new(crate::targets::SYS_ROOT), &checked);
    if clock.ramp_ns == 0 {
        counters.begin();
    }
    if !ctl.aborted() {
        // Every worker passed the start barrier: set-up and any task-run
        // trial are done. Callers wait for this call, not for a clock.
        let mut s = snapshot(&progress, 0, clock.planned_ns);
        s.metrics_addr = live;
        on_progress(&s);
    }
    let watched = spawn::watch(
        &ctl,
        &progress,
        interrupt,
        clock,
        &mut counters,
        on_progress,
    );

    let counted = counters.end();
    let outputs = spawn::join_workers(handles, &specs)?;
    let process = sys::delta(
        &sys::process_usage(),
        &process0,
        sys::now_ns() - clock.t0_ns,
    );
    let mut result = merge::merge(placement, opts, &checked, &specs, outputs, started_unix_s);
    result.process_cpu_usage = process;
    result.interrupted = watched.interrupted;
    result.counters = counted;
    add_interval_interrupts(&mut result, &counters);
    if watched.interrupted_in_ramp {
        result.environment.notes.push(
            "interrupted during the ramp (warm-up): the numbers are warm-up I/O over the time the workers ran".into(),
        );
    }
    Ok(result)
}

/// `--metrics`: the workers' live totals served at the address asked for,
/// with the address bound.
fn serve_metrics(
    opts: &RunOptions,
    specs: &[spec::JobSpec],
    progress: &[Arc<WorkerProgress>],
) -> Result<Option<std::net::SocketAddr>, EngineError> {
    let Some(addr) = opts.metrics else {
        return Ok(None);
    };
    let jobs = specs
        .iter()
        .zip(progress)
        .map(|(s, p)| (s.path.clone(), s.job, Arc::clone(p)))
        .collect();
    crate::live::serve_run(addr, jobs)
        .map(Some)
        .map_err(|source| EngineError::Metrics { addr, source })
}

/// Each interval's interrupts (where the counters were read at its end):
/// per target from its controllers' lines, the run's from all of them.
fn add_interval_interrupts(result: &mut RunResult, counters: &counters::CounterWatch) {
    for (index, per) in counters.interval_interrupts() {
        let (run, targets) = per.split_last().map_or((None, &[][..]), |(r, t)| (*r, t));
        let scopes = result.targets.iter_mut().map(|t| &mut t.intervals);
        for (ivs, n) in scopes.zip(targets) {
            if let Some(iv) = ivs.iter_mut().find(|iv| iv.index == index) {
                iv.interrupts = *n;
            }
        }
        if let Some(iv) = result.intervals.iter_mut().find(|iv| iv.index == index) {
            iv.interrupts = run;
        }
    }
}

/// The longest ramp (warm-up) of any target.
fn longest_ramp_ns(placement: &Placement) -> u64 {
    placement
        .targets
        .iter()
        .map(|t| t.workload.ramp_time_ns)
        .max()
        .unwrap_or(0)
}

/// The planned length of the run (longest ramp + runtime), when every
/// target has a runtime.
fn planned_ns(placement: &Placement) -> Option<u64> {
    placement
        .targets
        .iter()
        .map(|t| t.workload.runtime_ns.map(|r| r + t.workload.ramp_time_ns))
        .try_fold(0u64, |m, r| r.map(|r| m.max(r)))
}
