//! The bounds the engine holds whatever made the placement (flags, a saved
//! plan, a fio job file of many sections).

mod common;

use common::{bounded, placement, TempFile};
use engine::{BackendKind, EngineError, RunOptions};
use planner::RwMode;

fn refused(p: &planner::Placement) -> String {
    let opts = RunOptions {
        backend: BackendKind::Sync,
        ..RunOptions::default()
    };
    match engine::run(p, &opts, &mut |_| {}) {
        Err(e @ EngineError::Workload { .. }) => e.to_string(),
        other => panic!("expected a workload error, got {other:?}"),
    }
}

/// Issue #16: `--jobs 10000` started 5,135 threads, took 8.1 GB and one
/// run panicked; a target takes 4096 jobs at most (fio's cap), a run 4096.
#[test]
fn jobs_are_bounded_per_target_and_in_all_before_any_thread_starts() {
    let f = TempFile::new("limits", 1 << 20, 0);
    let w = bounded(RwMode::RandRead, 4096, 1);
    let e = refused(&placement(&f.path_str(), w.clone(), 10_000));
    assert!(
        e.ends_with("10000 jobs; give 1 to 4096 jobs per target (fio's limit too)"),
        "{e}"
    );
    let mut two = placement(&f.path_str(), w.clone(), 2049);
    two.targets.push(two.targets[0].clone());
    let e = refused(&two);
    assert_eq!(
        e,
        "2 targets: 4098 jobs in all; one run takes at most 4096: fewer jobs or fewer targets"
    );
}
