//! SQPOLL and IOPOLL of the uring backend, for real on this machine:
//! SQPOLL must be granted (a kernel `iou-sqp-` thread serves the ring) and
//! complete the I/O; IOPOLL is refused before the run, with the cause and
//! the fix, on devices without poll queues (every polled I/O would fail with
//! EOPNOTSUPP), and job-file ring options apply per target.

mod common;

use std::os::unix::fs::MetadataExt;

use common::{placement, TempFile};
use engine::{BackendKind, IoPoll, RunOptions, UringOptions};
use planner::{Placement, RwMode, Workload};

/// A 1 s time-based randread, O_DIRECT where the temp dir's filesystem
/// allows it.
fn timed_read(path: &str) -> Workload {
    let direct = common::opens_direct(path);
    Workload {
        rw: RwMode::RandRead,
        bs_min_bytes: 4096,
        bs_max_bytes: 4096,
        iodepth: 16,
        runtime_ns: Some(1_000_000_000),
        time_based: true,
        direct,
        ..Workload::default()
    }
}

/// Kernel SQPOLL threads of this process (`iou-sqp-PID`).
fn sqpoll_threads() -> usize {
    std::fs::read_dir("/proc/self/task")
        .map(|tasks| {
            tasks
                .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
                .filter(|comm| comm.starts_with("iou-sqp-"))
                .count()
        })
        .unwrap_or(0)
}

#[test]
fn sqpoll_is_granted_and_completes_io() {
    let f = TempFile::new("sqpoll", 16 << 20, 0x5a);
    let w = timed_read(&f.path_str());
    let opts = RunOptions {
        backend: BackendKind::Uring,
        uring: UringOptions {
            sqpoll_idle_ms: Some(50),
            ..UringOptions::default()
        },
        ..RunOptions::default()
    };
    // The engine calls back first as the workers pass the start barrier,
    // when every ring (and its SQPOLL thread) exists: no clock decides
    // whether the thread is seen.
    let mut seen_threads = 0;
    let r = engine::run(&placement(&f.path_str(), w.clone(), 1), &opts, &mut |_| {
        seen_threads = seen_threads.max(sqpoll_threads());
    })
    .unwrap_or_else(|e| panic!("SQPOLL run failed on this kernel: {e}"));
    let env = &r.environment;
    assert!(
        env.uring_features.iter().any(|f| f == "SQPOLL"),
        "SQPOLL not granted: features {:?}, notes {:?}",
        env.uring_features,
        env.notes
    );
    assert!(
        seen_threads >= 1,
        "no iou-sqp- kernel thread served the ring while it ran"
    );
    assert!(r.total.ops > 1000, "I/O completed: {} ops", r.total.ops);
    assert!(r.errors.is_empty(), "{:?}", r.errors);
    assert_eq!(r.total.bytes, r.total.ops * 4096);
    assert_eq!(env.targets[0].direct, w.direct);
}

/// `queue/io_poll` of the device holding `path`: `None` where there is no
/// block device (tmpfs, overlay) or sysfs does not say.
fn backing_io_poll(path: &str) -> Option<bool> {
    let dev = std::fs::metadata(path).ok()?.dev();
    let (major, minor) = (libc::major(dev), libc::minor(dev));
    let sys = std::fs::canonicalize(format!("/sys/dev/block/{major}:{minor}")).ok()?;
    let disk = if sys.join("partition").exists() {
        sys.parent()?.to_path_buf()
    } else {
        sys
    };
    Some(
        std::fs::read_to_string(disk.join("queue/io_poll"))
            .ok()?
            .trim()
            == "1",
    )
}

fn iopoll_on() -> RunOptions {
    RunOptions {
        backend: BackendKind::Uring,
        iopoll: IoPoll::On,
        ..RunOptions::default()
    }
}

#[test]
fn iopoll_on_a_file_without_poll_queues_is_refused_before_the_run() {
    let f = TempFile::new("iopoll", 8 << 20, 0x11);
    let w = timed_read(&f.path_str());
    let p = placement(&f.path_str(), w.clone(), 1);
    let result = engine::run(&p, &iopoll_on(), &mut |_| {});
    match (w.direct, backing_io_poll(&f.path_str())) {
        (false, _) => {
            let e = result.expect_err("IOPOLL on a buffered target").to_string();
            assert!(e.contains("needs O_DIRECT"), "{e}");
        }
        (true, Some(false)) => {
            let e = result.expect_err("IOPOLL without poll queues").to_string();
            assert!(
                e.contains(&f.path_str())
                    && e.contains("has no poll queues (queue/io_poll is 0)")
                    && e.contains("nvme.poll_queues"),
                "{e}"
            );
        }
        (true, Some(true)) => {
            let r = result.expect("IOPOLL on a device with poll queues");
            assert!(r.environment.uring_features.iter().any(|f| f == "IOPOLL"));
            assert!(r.total.ops > 0 && r.errors.is_empty(), "{:?}", r.errors);
        }
        (true, None) => eprintln!("skipped: the temp dir has no block device to ask"),
    }
}

/// A loop device: no poll queues on any kernel. Needs root and losetup;
/// skips (saying so) without them.
#[test]
fn iopoll_on_a_loop_device_is_a_clear_error_not_eopnotsupp_per_io() {
    if std::env::var_os("NUMIO_TEST_UNPRIVILEGED").is_some() {
        eprintln!("skipped: NUMIO_TEST_UNPRIVILEGED (scripts/test --quick) runs as if not root");
        return;
    }
    let f = TempFile::new("loop", 16 << 20, 0x22);
    let out = std::process::Command::new("losetup")
        .args(["--find", "--show", "--direct-io=on", &f.path_str()])
        .output();
    let dev = match out {
        Ok(o) if o.status.success() => String::from_utf8_lossy(&o.stdout).trim().to_string(),
        _ => {
            eprintln!("skipped: cannot set up a loop device here (not root, or no losetup)");
            return;
        }
    };
    let w = Workload {
        direct: true,
        ..timed_read(&f.path_str())
    };
    let result = engine::run(&placement(&dev, w, 1), &iopoll_on(), &mut |_| {});
    let _ = std::process::Command::new("losetup")
        .args(["--detach", &dev])
        .status();
    let e = result.expect_err("IOPOLL on a loop device").to_string();
    assert!(
        e.contains(&format!("{dev}: IOPOLL was asked for"))
            && e.contains("has no poll queues")
            && e.contains("--iopoll auto or off"),
        "{e}"
    );
}

/// Job-file ring options are per target: one target's `sqthread_poll` and
/// another's plain ring run side by side, and `hipri=1` is refused for the
/// target that has it, named, not for the run's other target.
#[test]
fn job_file_ring_options_apply_per_target() {
    let (a, b) = (
        TempFile::new("pt-a", 8 << 20, 1),
        TempFile::new("pt-b", 8 << 20, 2),
    );
    let mut p: Placement = placement(&a.path_str(), timed_read(&a.path_str()), 1);
    let mut second = placement(&b.path_str(), timed_read(&b.path_str()), 1).targets[0].clone();
    p.targets[0].options.sqthread_poll = Some(true);
    p.targets[0].options.fixedbufs = Some(false);
    second.options.sqthread_poll = Some(false);
    p.targets.push(second);
    let opts = RunOptions {
        backend: BackendKind::Uring,
        iopoll: IoPoll::Off,
        ..RunOptions::default()
    };
    let r = common::run(&p, &opts);
    let features = &r.environment.uring_features;
    assert!(
        features.iter().any(|f| f == "SQPOLL"),
        "target a: {features:?}"
    );
    // Target b keeps the default `auto` ring: DEFER_TASKRUN, or whichever
    // mode its task-run trial kept (a time-based O_DIRECT run has one);
    // target a's SQPOLL ring has no trial.
    assert!(r.targets[0].workers[0].taskrun_trial.is_none());
    let b_mode = r.targets[1].workers[0]
        .taskrun_trial
        .as_ref()
        .map_or(Some("DEFER_TASKRUN"), |t| t.chosen.taskrun_flag())
        .expect("a trial keeps DEFER_TASKRUN or COOP_TASKRUN");
    assert!(
        features.iter().any(|f| f == b_mode),
        "target b kept the default ring ({b_mode}): {features:?}"
    );
    assert!(
        features.iter().any(|f| f == "fixed buffers"),
        "target b registered its buffers: {features:?}"
    );
    assert!(r.targets.iter().all(|t| t.total.ops > 0));
    if backing_io_poll(&b.path_str()) == Some(false) && p.targets[1].workload.direct {
        p.targets[1].options.hipri = Some(true);
        let e = engine::run(&p, &opts, &mut |_| {})
            .expect_err("hipri=1 without poll queues")
            .to_string();
        assert!(e.starts_with(&b.path_str()) && e.contains("hipri=1"), "{e}");
    }
}
