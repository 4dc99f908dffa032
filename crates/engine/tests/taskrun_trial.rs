//! The `auto` io_uring set-up of a time-based run settles DEFER_TASKRUN vs
//! COOP_TASKRUN by a short trial of the job's own workload, keeps the
//! faster, and says so; explicit set-ups and bounded runs get no trial.

mod common;

use common::{bounded, placement, TempFile};
use engine::{BackendKind, RunOptions, RunResult, UringOptions, UringSetup};
use planner::{RwMode, Workload};

/// A time-based O_DIRECT 4 KiB randread of `ms` milliseconds.
fn timed(ms: u64) -> Workload {
    Workload {
        runtime_ns: Some(ms * 1_000_000),
        time_based: true,
        direct: true,
        ..bounded(RwMode::RandRead, 4096, 16)
    }
}

/// A scratch file for the trial, or `None` (saying why) where io_uring or
/// O_DIRECT is missing (tmpfs before Linux 6.6 refuses O_DIRECT).
fn scratch(name: &str, bytes: usize) -> Option<TempFile> {
    if io_uring::IoUring::new(4).is_err() {
        eprintln!("skipping: io_uring is not available");
        return None;
    }
    let f = TempFile::new(name, bytes, 0x3c);
    if !common::opens_direct(&f.path_str()) {
        eprintln!("skipping: the temp dir refuses O_DIRECT");
        return None;
    }
    Some(f)
}

/// Runs `w` on `f` with `jobs` jobs and task-run set-up `setup`.
fn run(f: &TempFile, w: Workload, jobs: usize, setup: UringSetup) -> RunResult {
    engine::run(
        &placement(&f.path_str(), w, jobs),
        &opts(setup),
        &mut |_| {},
    )
    .expect("run")
}

fn opts(setup: UringSetup) -> RunOptions {
    RunOptions {
        backend: BackendKind::Uring,
        uring: UringOptions {
            setup,
            ..UringOptions::default()
        },
        ..RunOptions::default()
    }
}

fn trial_notes(notes: &[String]) -> Vec<&String> {
    notes.iter().filter(|n| n.contains("trial")).collect()
}

#[test]
fn auto_runs_a_trial_per_job_and_keeps_the_faster_mode() {
    let Some(f) = scratch("trial", 8 << 20) else {
        return;
    };
    let r = run(&f, timed(300), 2, UringSetup::Auto);
    let env = &r.environment;
    // A set-up choice, not a note on every run (issue 39): the result
    // carries it per worker, and `numio bench -v` prints it.
    assert!(trial_notes(&env.notes).is_empty(), "{:?}", env.notes);
    if env
        .uring_features
        .iter()
        .all(|f| f != "DEFER_TASKRUN" && f != "COOP_TASKRUN")
    {
        // A kernel without both modes has nothing to choose between.
        assert!(r.targets[0]
            .workers
            .iter()
            .all(|w| w.taskrun_trial.is_none()));
        return;
    }
    for w in &r.targets[0].workers {
        let t = w.taskrun_trial.as_ref().expect("a trial per job");
        let flag = t.chosen.taskrun_flag().expect("DEFER or COOP");
        assert!(
            t.defer_taskrun_iops > 0.0 && t.coop_taskrun_iops > 0.0,
            "both modes moved data: {t:?}"
        );
        let faster = if t.coop_taskrun_iops > t.defer_taskrun_iops {
            UringSetup::CoopTaskrun
        } else {
            UringSetup::DeferTaskrun
        };
        assert_eq!(t.chosen, faster);
        assert_eq!(t.trial_ns, 400_000_000);
        assert!(
            env.uring_features.iter().any(|f| f == flag),
            "the measured run uses the chosen mode: {:?} / {t:?}",
            env.uring_features
        );
    }
    // The trial is not part of the measurement: the measured run still
    // lasts its runtime, and its I/O is all there is in the result.
    let runtime_ns = r.targets[0].runtime_ns;
    assert!(
        (250_000_000..2_000_000_000).contains(&runtime_ns),
        "{runtime_ns}"
    );
    assert!(r.total.ops > 0 && r.errors.is_empty(), "{:?}", r.errors);
}

#[test]
fn explicit_setups_and_bounded_runs_get_no_trial() {
    let Some(f) = scratch("notrial", 4 << 20) else {
        return;
    };
    let no_trial = |r: &RunResult, what: &str| {
        assert!(
            r.targets[0]
                .workers
                .iter()
                .all(|w| w.taskrun_trial.is_none()),
            "{what}"
        );
        assert!(
            trial_notes(&r.environment.notes).is_empty(),
            "{what}: {:?}",
            r.environment.notes
        )
    };
    for setup in [
        UringSetup::DeferTaskrun,
        UringSetup::CoopTaskrun,
        UringSetup::Plain,
    ] {
        no_trial(&run(&f, timed(100), 1, setup), &format!("{setup:?}"));
    }
    // Bounded by size: exactly the file's I/Os, no extra trial reads.
    let r = run(&f, bounded(RwMode::RandRead, 4096, 16), 1, UringSetup::Auto);
    no_trial(&r, "bounded");
    assert_eq!(r.total.ops, (4 << 20) / 4096);
    // A rate cap would make both modes tie.
    let mut w = timed(100);
    w.rate_iops = Some(1000);
    no_trial(&run(&f, w, 1, UringSetup::Auto), "rate cap");
    // Buffered: the trial would warm the page cache for the measured run.
    let mut w = timed(100);
    w.direct = false;
    no_trial(&run(&f, w, 1, UringSetup::Auto), "buffered");
}
