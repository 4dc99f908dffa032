//! The `auto` io_uring set-up of a time-based run settles DEFER_TASKRUN vs
//! COOP_TASKRUN by a short trial of the job's own workload, keeps the
//! faster, and says so; explicit set-ups and bounded runs get no trial.

mod common;

use common::{bounded, placement, TempFile};
use engine::{BackendKind, RunOptions, UringOptions, UringSetup};
use planner::{RwMode, Workload};

fn uring_available() -> bool {
    io_uring::IoUring::new(4).is_ok()
}

/// A time-based O_DIRECT 4 KiB randread of `ms` milliseconds.
fn timed(ms: u64) -> Workload {
    Workload {
        runtime_ns: Some(ms * 1_000_000),
        time_based: true,
        direct: true,
        ..bounded(RwMode::RandRead, 4096, 16)
    }
}

/// Whether `f` can be opened with O_DIRECT (the trial needs it; tmpfs
/// before Linux 6.6 refuses it).
fn direct_ok(f: &TempFile) -> bool {
    use std::os::unix::fs::OpenOptionsExt;
    let ok = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECT)
        .open(f.path_str())
        .is_ok();
    if !ok {
        eprintln!("skipping: the temp dir refuses O_DIRECT");
    }
    ok
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

/// The IOPS figure after `label` in a trial note ("DEFER_TASKRUN 123 IOPS").
fn iops_after(note: &str, label: &str) -> f64 {
    let rest = &note[note.find(&format!("{label} ")).expect(label) + label.len() + 1..];
    rest.split(' ').next().unwrap().parse().unwrap()
}

#[test]
fn auto_runs_a_trial_per_job_and_keeps_the_faster_mode() {
    if !uring_available() {
        eprintln!("skipping: io_uring is not available");
        return;
    }
    let f = TempFile::new("trial", 8 << 20, 0x3c);
    if !direct_ok(&f) {
        return;
    }
    let r = engine::run(
        &placement(&f.path_str(), timed(300), 2),
        &opts(UringSetup::Auto),
        &mut |_| {},
    )
    .expect("run");
    let env = &r.environment;
    let notes = trial_notes(&env.notes);
    if env
        .uring_features
        .iter()
        .all(|f| f != "DEFER_TASKRUN" && f != "COOP_TASKRUN")
    {
        // A kernel without both modes has nothing to choose between.
        assert!(notes.is_empty(), "{notes:?}");
        return;
    }
    assert_eq!(notes.len(), 2, "one trial note per job: {:?}", env.notes);
    for (job, note) in notes.iter().enumerate() {
        assert!(note.starts_with(&format!("job {job} of ")), "{note}");
        assert!(note.contains("400 ms trial"), "{note}");
        let (defer, coop) = (
            iops_after(note, "DEFER_TASKRUN"),
            iops_after(note, "COOP_TASKRUN"),
        );
        assert!(defer > 0.0 && coop > 0.0, "both modes moved data: {note}");
        let chosen = if coop > defer {
            "COOP_TASKRUN"
        } else {
            "DEFER_TASKRUN"
        };
        assert!(
            note.contains(&format!("task-run mode {chosen},")),
            "the faster mode is kept: {note}"
        );
        assert!(
            env.uring_features.iter().any(|f| f == chosen),
            "the measured run uses the chosen mode: {:?} / {note}",
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
    if !uring_available() {
        eprintln!("skipping: io_uring is not available");
        return;
    }
    let f = TempFile::new("notrial", 4 << 20, 0x3c);
    if !direct_ok(&f) {
        return;
    }
    for setup in [
        UringSetup::DeferTaskrun,
        UringSetup::CoopTaskrun,
        UringSetup::Plain,
    ] {
        let r = engine::run(
            &placement(&f.path_str(), timed(100), 1),
            &opts(setup),
            &mut |_| {},
        )
        .expect("run");
        assert!(trial_notes(&r.environment.notes).is_empty(), "{setup:?}");
    }
    // Bounded by size: exactly the file's I/Os, no extra trial reads.
    let w = bounded(RwMode::RandRead, 4096, 16);
    let r = engine::run(
        &placement(&f.path_str(), w, 1),
        &opts(UringSetup::Auto),
        &mut |_| {},
    )
    .expect("run");
    assert!(trial_notes(&r.environment.notes).is_empty());
    assert_eq!(r.total.ops, (4 << 20) / 4096);
    // A rate cap would make both modes tie.
    let mut w = timed(100);
    w.rate_iops = Some(1000);
    let r = engine::run(
        &placement(&f.path_str(), w, 1),
        &opts(UringSetup::Auto),
        &mut |_| {},
    )
    .expect("run");
    assert!(trial_notes(&r.environment.notes).is_empty());
    // Buffered: the trial would warm the page cache for the measured run.
    let mut w = timed(100);
    w.direct = false;
    let r = engine::run(
        &placement(&f.path_str(), w, 1),
        &opts(UringSetup::Auto),
        &mut |_| {},
    )
    .expect("run");
    assert!(trial_notes(&r.environment.notes).is_empty());
}
