//! One run of one plan on the engine, told as events: the step every
//! session is made of (a bench run, a repeat, an arm's run, later a sweep
//! point).

use std::sync::atomic::AtomicBool;

use engine::{EngineError, ProgressSnapshot, RunOptions, RunResult};
use planner::Placement;

use crate::event::{Event, RunInfo};

/// What a plan says about its length: the longest warm-up of its targets,
/// the longest measured time (`None` when some target has no time limit),
/// and whether some target may end before that time (at its size with
/// `time_based` off, or at its I/O count).
pub fn planned_times(placement: &Placement) -> (u64, Option<u64>, bool) {
    let workloads = || placement.targets.iter().map(|t| &t.workload);
    let ramp_ns = workloads().map(|w| w.ramp_time_ns).max().unwrap_or(0);
    let runtime_ns = workloads()
        .map(|w| w.runtime_ns)
        .try_fold(0u64, |m, r| r.map(|r| m.max(r)));
    let may_end_early = workloads().any(|w| !w.time_based || w.number_ios.is_some());
    (ramp_ns, runtime_ns, may_end_early)
}

/// Runs `placement` once with `opts` until it ends or `interrupt` is set
/// (then the result covers the time measured and has `interrupted` set).
/// `observer` hears [`Event::Starting`], [`Event::Measuring`] when the
/// workers pass the start barrier, [`Event::Progress`] while they run and
/// [`Event::Ended`], all tagged with `run`.
pub fn run_once(
    placement: &Placement,
    opts: &RunOptions,
    run: RunInfo,
    interrupt: &AtomicBool,
    observer: &mut dyn FnMut(&Event<'_>),
) -> Result<RunResult, EngineError> {
    observer(&Event::Starting(run));
    let (ramp_ns, runtime_ns, may_end_early) = planned_times(placement);
    let mut started = false;
    // The engine calls back first as the workers pass the start barrier,
    // then about five times a second.
    let mut on_progress = |snapshot: &ProgressSnapshot| {
        if started {
            observer(&Event::Progress { run, snapshot });
        } else {
            started = true;
            observer(&Event::Measuring {
                run,
                ramp_ns,
                runtime_ns,
                may_end_early,
                metrics: snapshot.metrics_addr,
            });
        }
    };
    let mut result = engine::run_until(placement, opts, interrupt, &mut on_progress);
    if let Ok(r) = &mut result {
        // Whether each drive was preconditioned, and writes to one that was.
        let dir = crate::precondition_state::default_dir();
        let now = r.environment.started_unix_s + r.runtime_ns / 1_000_000_000;
        crate::precondition_state::after_run(dir.as_deref(), r, now);
    }
    observer(&Event::Ended(run));
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{counted, null_opts, placement, TempFile};
    use std::sync::atomic::Ordering;

    /// What an observer heard, without the progress snapshots.
    fn names(events: &[String]) -> Vec<&str> {
        events.iter().map(String::as_str).collect()
    }

    fn record(log: &mut Vec<String>) -> impl FnMut(&Event<'_>) + '_ {
        |e| {
            let name = match e {
                Event::Starting(_) => "starting",
                Event::Measuring { .. } => "measuring",
                Event::Progress { .. } => "progress",
                Event::Ended(_) => "ended",
                Event::Settled { .. } => "settled",
            };
            if log.last().map(String::as_str) != Some(name) {
                log.push(name.to_string());
            }
        }
    }

    #[test]
    fn a_run_is_told_from_start_to_end() {
        let f = TempFile::new("once");
        let p = placement(&[f.path()], &counted(200), 1);
        let mut log = Vec::new();
        let r = run_once(
            &p,
            &null_opts(),
            RunInfo::SINGLE,
            &AtomicBool::new(false),
            &mut record(&mut log),
        )
        .expect("a null run");
        assert_eq!(r.total.ops, 200);
        let heard = names(&log);
        assert_eq!(heard.first(), Some(&"starting"), "{heard:?}");
        assert_eq!(heard.get(1), Some(&"measuring"), "{heard:?}");
        assert_eq!(heard.last(), Some(&"ended"), "{heard:?}");
    }

    #[test]
    fn a_failed_set_up_never_says_measuring() {
        let p = placement(&["/nonexistent/numio-session".into()], &counted(8), 1);
        let mut log = Vec::new();
        let e = run_once(
            &p,
            &null_opts(),
            RunInfo::SINGLE,
            &AtomicBool::new(false),
            &mut record(&mut log),
        )
        .unwrap_err();
        assert!(e.to_string().contains("/nonexistent/numio-session"), "{e}");
        assert_eq!(names(&log), ["starting", "ended"]);
    }

    /// The interrupt is set when the workers pass the start barrier (the
    /// event a user's Ctrl-C test waits for): the run stops early, marked.
    #[test]
    fn an_interrupt_after_the_barrier_cuts_the_run_short() {
        let f = TempFile::new("once-int");
        let mut w = counted(u64::MAX);
        w.number_ios = None;
        w.time_based = true;
        w.runtime_ns = Some(3_600_000_000_000);
        let p = placement(&[f.path()], &w, 1);
        let stop = AtomicBool::new(false);
        let r = run_once(&p, &null_opts(), RunInfo::SINGLE, &stop, &mut |e| {
            if let Event::Measuring {
                runtime_ns,
                ramp_ns,
                may_end_early,
                ..
            } = e
            {
                let planned = (*ramp_ns, *runtime_ns, *may_end_early);
                assert_eq!(planned, (0, Some(3_600_000_000_000), false));
                stop.store(true, Ordering::Relaxed);
            }
        })
        .expect("a null run");
        assert!(r.interrupted);
        assert!(r.runtime_ns < 3_600_000_000_000);
    }

    #[test]
    fn planned_times_take_the_longest_target() {
        let mut a = counted(8);
        a.time_based = true;
        a.runtime_ns = Some(5);
        a.ramp_time_ns = 2;
        a.number_ios = None;
        let mut b = a.clone();
        b.runtime_ns = Some(7);
        let mut p = placement(&["a".into()], &a, 1);
        p.targets.extend(placement(&["b".into()], &b, 1).targets);
        assert_eq!(planned_times(&p), (2, Some(7), false));
        p.targets[1].workload.time_based = false;
        assert_eq!(
            planned_times(&p),
            (2, Some(7), true),
            "b may end at its size"
        );
        p.targets[0].workload.runtime_ns = None;
        assert_eq!(planned_times(&p), (2, None, true), "a has no time limit");
    }
}
