//! The runner on in-memory controllers (`tune::memory`) and the null
//! backend: each run's value on its drives' controllers only, every
//! original back after each run, a controller that vanishes, Ctrl-C.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use crate::{Event, LiveArm, Schedule};
use planner::{JobPlacement, MemPolicy, Placement, TargetPlacement, Workload};
use tune::memory::{controller, MemoryAccess, MemoryController};
use tune::Journal;

use super::{points, CoalesceRunner, Point};

/// Temp files, a state directory and three in-memory controllers: nvme0
/// (off) behind the first target, nvme1 (0x0302, a value of its own) and
/// nvme2 (off) behind the second, a multipath head.
struct Lab {
    files: Vec<String>,
    state: std::path::PathBuf,
    access: MemoryAccess,
    ctrls: BTreeMap<&'static str, MemoryController>,
}

impl Lab {
    fn new(tag: &str) -> Lab {
        let dir = std::env::temp_dir().join(format!(
            "numio-coalesce-runner-{tag}-{}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("state")).unwrap();
        let files = (0..2)
            .map(|i| {
                let p = dir.join(format!("target{i}"));
                std::fs::File::create(&p).unwrap().set_len(1 << 20).unwrap();
                p.to_string_lossy().into_owned()
            })
            .collect();
        let ctrls = BTreeMap::from([
            ("nvme0", MemoryController::new(0, 2)),
            ("nvme1", MemoryController::new(0x0302, 2)),
            ("nvme2", MemoryController::new(0, 2)),
        ]);
        let mut access = MemoryAccess::default();
        for (name, c) in &ctrls {
            access = access.with(name, c.clone());
        }
        Lab {
            files,
            state: dir.join("state"),
            access,
            ctrls,
        }
    }

    fn journal(&self) -> Journal {
        Journal::at(&self.state)
    }

    fn runner(&self) -> CoalesceRunner<'_> {
        CoalesceRunner {
            access: &self.access,
            journal: self.journal(),
            command: "numio coalesce sweep (test)".into(),
            points: points(&[0, 3], &[1, 2]),
            controllers: vec![
                vec![controller("nvme0", 2)],
                vec![controller("nvme1", 2), controller("nvme2", 2)],
            ],
            time_us: 200,
        }
    }

    /// Every controller's value now, in name order.
    fn values(&self) -> Vec<u32> {
        self.ctrls
            .values()
            .map(MemoryController::coalescing)
            .collect()
    }

    /// One arm per point on the null backend, two rounds.
    fn schedule(&self) -> Schedule {
        let mut s = Schedule {
            arms: points(&[0, 3], &[1, 2])
                .into_iter()
                .map(|p| arm(p, &self.files))
                .collect(),
            rounds: 2,
        };
        s.group_by_targets();
        s
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        if let Some(dir) = self.state.parent() {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

/// An arm of `point` on the null backend over the first `devices` files.
fn arm(point: Point, files: &[String]) -> LiveArm {
    let w = Workload {
        runtime_ns: Some(20_000_000),
        iodepth: 2,
        ..Workload::default()
    };
    let placement = Placement {
        policy: "none".into(),
        targets: files[..point.devices]
            .iter()
            .map(|p| TargetPlacement {
                path: p.clone(),
                workload: w.clone(),
                jobs: vec![JobPlacement {
                    cpus: vec![],
                    mem: MemPolicy::Default,
                }],
                ..TargetPlacement::default()
            })
            .collect(),
        warnings: vec![],
    };
    LiveArm {
        label: point.label(),
        spec: point.label(),
        placement,
        opts: engine::RunOptions {
            backend: engine::BackendKind::Null,
            ..engine::RunOptions::default()
        },
        settle_group: 0,
    }
}

#[test]
fn each_run_has_its_value_on_its_drives_only_and_the_originals_come_back() {
    let lab = Lab::new("each");
    let during = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&during);
    let ctrls = lab.ctrls.clone();
    let journal = lab.journal();
    let mut observer = move |e: &Event<'_>| {
        if let Event::Measuring { run, .. } = e {
            let values: Vec<u32> = ctrls.values().map(MemoryController::coalescing).collect();
            let records = journal.records().unwrap().len();
            seen.lock().unwrap().push((run.arm, values, records));
        }
    };
    let outcome = lab
        .schedule()
        .run_with(&mut lab.runner(), &AtomicBool::new(false), &mut observer)
        .unwrap();
    assert_eq!(outcome.completed(), 8);
    // nvme0 nvme1 nvme2 while each point measured, and the records then.
    let round = [
        (0, vec![0, 0x0302, 0], 1),
        (1, vec![0x0203, 0x0302, 0], 1),
        (2, vec![0, 0, 0], 3),
        (3, vec![0x0203, 0x0203, 0x0203], 3),
    ];
    let want: Vec<(usize, Vec<u32>, usize)> = round.iter().chain(&round).cloned().collect();
    assert_eq!(*during.lock().unwrap(), want);
    assert_eq!(lab.values(), [0, 0x0302, 0], "every original is back");
    assert!(
        lab.journal().records().unwrap().is_empty(),
        "no record left"
    );
    // nvme1 only ever held its own value outside the devices=2 runs.
    assert_eq!(
        lab.ctrls["nvme1"].sets(),
        [0, 0x0302, 0x0203, 0x0302, 0, 0x0302, 0x0203, 0x0302]
    );
}

#[test]
fn a_controller_that_vanishes_mid_sweep_ends_it_with_the_others_put_back() {
    let lab = Lab::new("vanish");
    // nvme2 vanishes as nvme1 takes the first devices=2 point's value (the
    // first time nvme1 is set at all): after nvme0 and nvme1, before it.
    let nvme2 = lab.ctrls["nvme2"].clone();
    lab.ctrls["nvme1"].on_set(move |_| nvme2.vanish());
    let err = lab
        .schedule()
        .run_with(&mut lab.runner(), &AtomicBool::new(false), &mut |_| {})
        .unwrap_err();
    let text = format!("{err}: {}", std::error::Error::source(&err).unwrap());
    assert!(
        text.contains("run 3 of 8 (threshold=0 devices=2)"),
        "{text}"
    );
    assert!(
        text.contains("nvme2") && text.contains("vanished"),
        "{text}"
    );
    assert!(text.contains("put back as they were: nvme1"), "{text}");
    assert_eq!(lab.ctrls["nvme0"].coalescing(), 0, "nvme0 is back");
    assert_eq!(lab.ctrls["nvme1"].coalescing(), 0x0302, "nvme1 is back");
    // nvme2 could not be put back: its original stays on record for
    // `numio coalesce restore`, and only its.
    let records = lab.journal().records().unwrap();
    let names: Vec<&str> = records.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(names, ["nvme2"]);
    assert_eq!(records[0].original_raw, 0);
}

#[test]
fn ctrl_c_in_a_run_keeps_the_runs_done_and_puts_every_original_back() {
    let lab = Lab::new("int");
    let stop = Arc::new(AtomicBool::new(false));
    let raise = Arc::clone(&stop);
    let mut observer = move |e: &Event<'_>| {
        if let Event::Measuring { run, .. } = e {
            if run.seq == 4 {
                raise.store(true, Ordering::Relaxed);
            }
        }
    };
    let outcome = lab
        .schedule()
        .run_with(&mut lab.runner(), &stop, &mut observer)
        .unwrap();
    assert!(outcome.interrupted.is_some());
    assert_eq!(outcome.completed(), 3);
    assert_eq!(lab.values(), [0, 0x0302, 0]);
    assert!(lab.journal().records().unwrap().is_empty());
}

#[test]
fn a_sweep_reports_its_runs_as_a_coalescing_set_and_applies_by_name() {
    use crate::coalesce_plan::{plan, PlanInput};
    use crate::coalesce_sweep::{CoalesceSweep, Emit, Outputs};
    let lab = Lab::new("sweep");
    let input = PlanInput {
        targets: &lab.files,
        threshold: "0,3",
        time: "200us",
        devices: Some("1,2"),
        repeat: 2,
        max_latency: &[],
        // The plan's check; the lab's arms run on the null backend.
        backend: engine::BackendKind::Uring,
        chart: None,
    };
    let runner = lab.runner();
    let sweep = CoalesceSweep {
        access: &lab.access,
        journal: lab.journal(),
        command: "numio coalesce sweep (test)".into(),
        plan: plan(&input, &mut |n| panic!("{n}")).unwrap(),
        targets: lab.files.clone(),
        controllers: runner.controllers.clone(),
    };
    assert_eq!(sweep.plan.points, runner.points);
    sweep.preflight().unwrap();
    assert!(lab.journal().records().unwrap().is_empty(), "nothing kept");
    let done = sweep
        .run(
            &lab.schedule(),
            vec![1, 1, 2, 2],
            &AtomicBool::new(false),
            &mut |_| {},
        )
        .unwrap();
    assert!(done.clean);
    assert_eq!(
        done.notes,
        ["coalesce: put back the original values on nvme0, nvme1, nvme2 (each point's value was set for its runs only)"]
    );
    assert_eq!(lab.values(), [0, 0x0302, 0]);
    let spec = done.set.coalesce.as_ref().expect("a coalescing set");
    assert_eq!(spec.controllers, [vec!["nvme0"], vec!["nvme1", "nvme2"]]);
    assert_eq!(done.set.sweep.as_ref().unwrap().cores, [1, 1, 2, 2]);
    let mut emitted = Vec::new();
    let out = Outputs {
        json: true,
        ..Outputs::default()
    };
    sweep.finish(&done, &out, &mut |e| emitted.push(e)).unwrap();
    match emitted.as_slice() {
        [Emit::Stdout(json)] => assert!(json.contains("\"numio-coalesce-sweep\""), "{json}"),
        other => panic!("{other:?}"),
    }
    // `--apply` sets by name, kept on record.
    let note = sweep.apply(&["nvme1".to_string()], 3, 200).unwrap();
    assert!(note.starts_with("changed nvme1 (was 0x0302)"), "{note}");
    assert_eq!(lab.values(), [0, 0x0203, 0]);
    assert_eq!(lab.journal().records().unwrap().len(), 1);
}
