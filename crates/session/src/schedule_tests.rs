//! The schedule on the null backend (no device, no I/O): order, settle
//! groups, interrupts during and between runs, failures; and the task-run
//! settlement on a temp file with io_uring where the file system allows
//! O_DIRECT.

use super::*;
use crate::testutil::{counted, null_opts, placement, TempFile};

/// An arm of 200 null I/Os on `path`.
fn arm(label: &str, path: &str) -> LiveArm {
    LiveArm {
        label: label.into(),
        spec: format!("policy={label}"),
        placement: placement(&[path.to_string()], &counted(200), 1),
        opts: null_opts(),
        settle_group: 0,
    }
}

/// An arm that runs for an hour unless interrupted.
fn endless(label: &str, path: &str) -> LiveArm {
    let mut a = arm(label, path);
    let w = &mut a.placement.targets[0].workload;
    (w.number_ios, w.time_based, w.runtime_ns) = (None, true, Some(3_600_000_000_000));
    a
}

/// `(seq, arm, round)` of each run that started.
type Started = Vec<(usize, usize, usize)>;

/// Runs `s`, recording every run that starts; `on` may set the interrupt
/// flag at any event.
fn run_logged(
    s: &Schedule,
    mut on: impl FnMut(&Event<'_>, &AtomicBool),
) -> (Result<Outcome, SessionError>, Started) {
    let stop = AtomicBool::new(false);
    let mut started = Vec::new();
    let out = s.run(&stop, &mut |e| {
        if let Event::Starting(r) = e {
            started.push((r.seq, r.arm, r.round));
        }
        on(e, &stop);
    });
    (out, started)
}

fn seqs(o: &Outcome) -> Vec<Vec<usize>> {
    o.arms
        .iter()
        .map(|a| a.runs.iter().map(|r| r.seq).collect())
        .collect()
}

#[test]
fn arms_run_interleaved_and_every_run_is_kept() {
    let (a, b) = (TempFile::new("sched-a"), TempFile::new("sched-b"));
    let s = Schedule {
        arms: vec![arm("a", &a.path()), arm("b", &b.path())],
        rounds: 3,
    };
    let (out, started) = run_logged(&s, |_, _| {});
    let out = out.expect("null runs");
    assert_eq!(
        started,
        [
            (1, 0, 0),
            (2, 1, 0),
            (3, 0, 1),
            (4, 1, 1),
            (5, 0, 2),
            (6, 1, 2)
        ]
    );
    assert_eq!(seqs(&out), [vec![1, 3, 5], vec![2, 4, 6]]);
    assert_eq!(
        (out.arms[1].label.as_str(), out.arms[1].spec.as_str()),
        ("b", "policy=b")
    );
    assert_eq!((out.completed(), out.failed_runs), (6, 0));
    assert!(out.interrupted.is_none());
    for r in out.arms.iter().flat_map(|a| &a.runs) {
        assert_eq!(r.raw.as_ref().unwrap()["total"]["ops"], 200, "{r:?}");
    }
}

#[test]
fn an_interrupt_during_a_run_leaves_it_out_and_keeps_the_rest() {
    let (a, b, c) = (
        TempFile::new("int-a"),
        TempFile::new("int-b"),
        TempFile::new("int-c"),
    );
    let s = Schedule {
        arms: vec![
            arm("a", &a.path()),
            arm("b", &b.path()),
            endless("c", &c.path()),
        ],
        rounds: 2,
    };
    // Ctrl-C once run 3 (arm c, which only an interrupt ends) measures.
    let (out, started) = run_logged(&s, |e, stop| {
        if matches!(e, Event::Measuring { run, .. } if run.seq == 3) {
            stop.store(true, Ordering::Relaxed);
        }
    });
    let out = out.expect("null runs");
    assert_eq!(started.len(), 3, "no run starts after the interrupt");
    assert_eq!(seqs(&out), [vec![1], vec![2], vec![]]);
    let cut = out
        .interrupted
        .expect("the outcome says it was interrupted");
    assert_eq!((cut.run.seq, cut.run.total, cut.run.arm), (3, 6, 2));
    let partial = cut.partial.expect("run 3 measured before it stopped");
    assert_eq!(partial.record.seq, 3);
    assert_eq!(partial.record.raw.as_ref().unwrap()["interrupted"], true);
    assert!(partial.runtime_ns < 3_600_000_000_000);
}

#[test]
fn an_interrupt_between_runs_starts_no_other_run() {
    let (a, b) = (TempFile::new("between-a"), TempFile::new("between-b"));
    let s = Schedule {
        arms: vec![arm("a", &a.path()), arm("b", &b.path())],
        rounds: 3,
    };
    let (out, started) = run_logged(&s, |e, stop| {
        if matches!(e, Event::Ended(run) if run.seq == 2) {
            stop.store(true, Ordering::Relaxed);
        }
    });
    let out = out.expect("null runs");
    assert_eq!(started.len(), 2);
    assert_eq!(seqs(&out), [vec![1], vec![2]]);
    let cut = out.interrupted.expect("interrupted");
    assert_eq!((cut.run.seq, cut.run.arm, cut.run.round), (3, 0, 1));
    assert!(cut.partial.is_none(), "run 3 never started");
}

#[test]
fn a_run_that_cannot_run_ends_the_schedule_naming_it() {
    let a = TempFile::new("fail-a");
    let s = Schedule {
        arms: vec![arm("a", &a.path()), arm("b", "/nonexistent/numio-session")],
        rounds: 2,
    };
    let (out, started) = run_logged(&s, |_, _| {});
    let e = out.unwrap_err();
    assert_eq!(e.to_string(), "run 2 of 4 (b)");
    let cause = std::error::Error::source(&e)
        .expect("the engine's reason")
        .to_string();
    assert!(cause.contains("/nonexistent/numio-session"), "{cause}");
    assert_eq!(started.len(), 2);
}

#[test]
fn arms_on_the_same_targets_share_a_settle_group() {
    let mut s = Schedule {
        arms: vec![arm("a", "/x"), arm("b", "/y"), arm("c", "/x")],
        rounds: 1,
    };
    s.group_by_targets();
    let groups: Vec<usize> = s.arms.iter().map(|a| a.settle_group).collect();
    assert_eq!(groups, [0, 1, 0]);
    assert_eq!(s.group_members(0), [0, 2]);
    assert_eq!(s.group_members(1), [1]);
    assert!(s.group_members(2).is_empty());
}

#[test]
fn a_schedule_without_runs_or_with_a_bad_group_is_refused() {
    let a = TempFile::new("bad");
    let mut s = Schedule::repeat(arm("a", &a.path()), 0);
    let e = s.run(&AtomicBool::new(false), &mut |_| {}).unwrap_err();
    assert!(e.to_string().contains("0 rounds"), "{e}");
    s.rounds = 1;
    s.arms[0].settle_group = 1;
    let e = s.run(&AtomicBool::new(false), &mut |_| {}).unwrap_err();
    assert!(e.to_string().contains("settle group 1"), "{e}");
}

/// Two arms on one file: run 1's task-run trial settles the mode for runs
/// 2-4 of both arms, which run without a trial. Needs io_uring with both
/// task-run modes and O_DIRECT in the temp dir; skips (saying so) without.
#[test]
fn the_first_trial_settles_the_mode_for_the_group() {
    let f = TempFile::new("settle");
    std::fs::write(&f.0, vec![0x5au8; 4 << 20]).unwrap();
    let direct = {
        use std::os::unix::fs::OpenOptionsExt;
        std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_DIRECT)
            .open(&f.0)
            .is_ok()
    };
    if !direct {
        eprintln!("skipping: the temp dir refuses O_DIRECT, which the trial needs");
        return;
    }
    let mut w = counted(0);
    (w.number_ios, w.time_based, w.runtime_ns, w.direct) = (None, true, Some(100_000_000), true);
    let timed = |label: &str| LiveArm {
        placement: placement(&[f.path()], &w, 1),
        opts: engine::RunOptions::default(),
        ..arm(label, &f.path())
    };
    let mut s = Schedule {
        arms: vec![timed("a"), timed("b")],
        rounds: 2,
    };
    s.group_by_targets();
    let mut settled = Vec::new();
    let out = s
        .run(&AtomicBool::new(false), &mut |e| {
            if let Event::Settled { run, mode, arms } = e {
                settled.push((run.seq, *mode, arms.to_vec()));
            }
        })
        .expect("uring runs on a temp file");
    let runs: Vec<&RunRecord> = out.arms.iter().flat_map(|a| &a.runs).collect();
    let trial = |r: &RunRecord| {
        r.raw.as_ref().unwrap()["targets"][0]["workers"][0]["taskrun_trial"].clone()
    };
    let first = runs.iter().find(|r| r.seq == 1).unwrap();
    if trial(first).is_null() {
        eprintln!("skipping: this kernel grants no choice of task-run modes");
        return;
    }
    assert_eq!(settled.len(), 1, "{settled:?}");
    assert_eq!((settled[0].0, settled[0].2.clone()), (1, vec![0, 1]));
    for r in runs.iter().filter(|r| r.seq > 1) {
        assert!(trial(r).is_null(), "run {} had a trial", r.seq);
        let flag = settled[0].1.taskrun_flag().unwrap();
        let features = r.raw.as_ref().unwrap()["environment"]["uring_features"].to_string();
        assert!(
            features.contains(flag),
            "run {}: {features} / {flag}",
            r.seq
        );
    }
}

/// A runner that wraps the local one, as a coalescing sweep would (set a
/// feature, run, restore): it sees every run in order with the arm's
/// options, and its own failure ends the schedule naming the run.
#[test]
fn a_runner_wraps_each_run() {
    struct Around {
        seen: Vec<(usize, String)>,
        fail_at: usize,
    }
    impl Runner for Around {
        fn run(
            &mut self,
            arm: &LiveArm,
            opts: &RunOptions,
            run: RunInfo,
            interrupt: &AtomicBool,
            observer: &mut dyn FnMut(&Event<'_>),
        ) -> Result<RunResult, BoxError> {
            self.seen.push((run.seq, arm.label.clone()));
            if run.seq == self.fail_at {
                return Err("the controller refused feature 0x08".into());
            }
            LocalRunner.run(arm, opts, run, interrupt, observer)
        }
    }
    let (a, b) = (TempFile::new("runner-a"), TempFile::new("runner-b"));
    let s = Schedule {
        arms: vec![arm("a", &a.path()), arm("b", &b.path())],
        rounds: 2,
    };
    let mut around = Around {
        seen: Vec::new(),
        fail_at: 0,
    };
    let out = s
        .run_with(&mut around, &AtomicBool::new(false), &mut |_| {})
        .expect("null runs");
    assert_eq!(seqs(&out), [vec![1, 3], vec![2, 4]]);
    let order: Vec<(usize, &str)> = around.seen.iter().map(|(n, l)| (*n, l.as_str())).collect();
    assert_eq!(order, [(1, "a"), (2, "b"), (3, "a"), (4, "b")]);
    around.fail_at = 3;
    let e = s
        .run_with(&mut around, &AtomicBool::new(false), &mut |_| {})
        .unwrap_err();
    assert_eq!(e.to_string(), "run 3 of 4 (a)");
    let cause = std::error::Error::source(&e).unwrap().to_string();
    assert_eq!(cause, "the controller refused feature 0x08");
}

/// A repeat's outcome of `done` completed runs of 3, cut at the next run
/// (`measured`: the cut run measured something).
fn repeat_outcome(done: usize, measured: bool) -> Outcome {
    let record = |seq| report::from_engine::record(seq, &RunResult::default());
    let cut = RunInfo {
        seq: done + 1,
        total: 3,
        arm: 0,
        round: done,
    };
    Outcome {
        arms: vec![Arm {
            label: "local".into(),
            spec: "policy=local".into(),
            runs: (1..=done).map(record).collect(),
        }],
        failed_runs: 0,
        interrupted: Some(Interruption {
            run: cut,
            partial: measured.then(|| Partial {
                record: record(done + 1),
                runtime_ns: 1_500_000_000,
                had_errors: true,
            }),
        }),
    }
}

#[test]
fn a_repeat_keeps_a_lone_cut_first_run_and_says_where_it_stopped() {
    let k = repeat_outcome(0, true).kept_for_repeat(3);
    assert_eq!(k.arm.map(|a| a.runs.len()), Some(1));
    assert_eq!(k.failed_runs, 1);
    assert_eq!(
        k.note.as_deref(),
        Some("interrupted during run 1 of 3: reporting its 1.50s measured")
    );
    let k = repeat_outcome(0, false).kept_for_repeat(3);
    assert!(k.arm.is_none());
    assert_eq!(
        k.note.as_deref(),
        Some("interrupted before run 1 measured anything: nothing to report")
    );
    let k = repeat_outcome(2, true).kept_for_repeat(3);
    assert_eq!((k.arm.map(|a| a.runs.len()), k.failed_runs), (Some(2), 0));
    assert_eq!(
        k.note.as_deref(),
        Some("interrupted during run 3 of 3: it is left out; reporting the 2 completed runs")
    );
    let k = repeat_outcome(1, false).kept_for_repeat(3);
    assert_eq!(
        k.note.as_deref(),
        Some("interrupted before run 2 of 3: reporting the 1 completed runs")
    );
}
