//! `numio sweep reactors=1,2` end to end on loopback: the sweep starts a
//! `numio serve` of its own per run, drives it over NVMe/TCP, stops it, and
//! reports the target's CPU apart from the initiator's; bad reactor lists
//! are named with exit status 2.

mod common;

use common::numio;
use common::running::{Running, GIVE_UP};

/// `numio sweep AXES… --json` of short randread runs against the target the
/// sweep serves itself; asserts exit 0 and gives the JSON.
fn served_sweep(axes: &[&str]) -> serde_json::Value {
    let mut args = vec!["sweep"];
    args.extend_from_slice(axes);
    args.extend_from_slice(&[
        "--rw",
        "randread",
        "--iodepth",
        "4",
        "--runtime",
        "300ms",
        "--json",
    ]);
    let (code, out, err) = numio(&args);
    assert_eq!(code, 0, "{axes:?}: {err}");
    serde_json::from_str(&out).expect("valid JSON")
}

/// The points' labels, in order.
fn labels(points: &[serde_json::Value]) -> Vec<&str> {
    points
        .iter()
        .map(|p| p["label"].as_str().unwrap())
        .collect()
}

#[test]
fn a_reactors_sweep_serves_its_own_target_and_splits_the_cpu() {
    let j = served_sweep(&["reactors=1,2"]);
    let points = j["sweeps"][0]["points"].as_array().unwrap();
    let labels = labels(points);
    assert_eq!(labels, ["reactors=1", "reactors=2"]);
    for p in points {
        assert!(p["iops"].as_f64().unwrap() > 0.0, "{p}");
        let target = p["target_cpu_ns_per_io"]
            .as_f64()
            .expect("target CPU measured");
        let initiator = p["initiator_cpu_ns_per_io"]
            .as_f64()
            .expect("initiator CPU");
        assert!(target > 0.0 && initiator > 0.0, "{p}");
        // One target name for every run, whatever port its serve had.
        assert_eq!(
            p["targets"][0]["target"],
            "nvme-tcp://127.0.0.1/nqn.2026-01.io.numio:sweep"
        );
    }
    let run = &j["results"]["arms"][1]["runs"][0]["raw"];
    assert!(
        run["counters"]["target_process"]["user_ns"]
            .as_u64()
            .is_some(),
        "{run}"
    );
    assert_eq!(run["environment"]["backend"], "tcp");
}

/// The initiator side of the NVMe-oF study: initiator cores against one
/// served target (a grid with reactors), the jobs of each point counted as
/// its cores.
#[test]
fn an_initiator_cores_sweep_places_one_job_per_core_against_the_served_target() {
    let j = served_sweep(&["initiator-cores=1,2", "reactors=1"]);
    let points = j["sweeps"][0]["points"].as_array().unwrap();
    let labels = labels(points);
    assert_eq!(
        labels,
        [
            "initiator-cores=1 reactors=1",
            "initiator-cores=2 reactors=1"
        ]
    );
    for (p, jobs) in points.iter().zip([1, 2]) {
        assert!(p["iops"].as_f64().unwrap() > 0.0, "{p}");
        assert!(p["target_cpu_ns_per_io"].as_f64().is_some(), "{p}");
        let run = &j["results"]["arms"][jobs - 1]["runs"][0]["raw"];
        let workers = run["targets"][0]["workers"].as_array().expect("workers");
        assert_eq!(workers.len(), jobs, "one initiator job per core: {run}");
    }
}

/// The processes `pid`'s threads started (`/proc/PID/task/*/children`).
fn children(pid: u32) -> Vec<i32> {
    let mut out = Vec::new();
    for task in std::fs::read_dir(format!("/proc/{pid}/task")).expect("tasks") {
        let path = task.expect("task").path().join("children");
        let text = std::fs::read_to_string(path).unwrap_or_default();
        out.extend(
            text.split_whitespace()
                .map(|c| c.parse::<i32>().expect("pid")),
        );
    }
    out
}

/// A sweep killed outright (SIGKILL: nothing of its own runs) leaves no
/// `numio serve` listening: the kernel sends the serve SIGTERM when its
/// parent dies. The test waits on the serve's pidfd, not a clock.
#[test]
fn a_killed_sweep_leaves_no_serve_behind() {
    let sweep = Running::start(&[
        "sweep",
        "reactors=1",
        "--rw",
        "randread",
        "--runtime",
        "60s",
    ]);
    sweep.wait_for(1, "the set-up line", |l| {
        l.contains("set-up done; measuring")
    });
    let serves = children(sweep.pid());
    assert_eq!(serves.len(), 1, "one numio serve: {serves:?}");
    // SAFETY: pidfd_open on the serve's pid, still running (it only ends
    // when the sweep stops it or dies, and the sweep is alive here).
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, serves[0], 0) };
    assert!(fd >= 0, "pidfd_open: {}", std::io::Error::last_os_error());
    let (code, _, _, _) = sweep.signal_and_wait(libc::SIGKILL);
    assert_eq!(code, -1, "killed by a signal");
    let mut pfd = libc::pollfd {
        fd: fd as i32,
        events: libc::POLLIN,
        revents: 0,
    };
    let ms = i32::try_from(GIVE_UP.as_millis()).expect("fits");
    // SAFETY: one valid pollfd for the call's duration.
    let ready = unsafe { libc::poll(&mut pfd, 1, ms) };
    assert_eq!(ready, 1, "the serve ended after its sweep was killed");
    // SAFETY: closing the pidfd this test opened.
    unsafe { libc::close(fd as i32) };
}

#[test]
fn bad_reactor_sweeps_are_named_with_exit_status_2() {
    let cases: &[(&[&str], &str)] = &[
        (
            &["reactors=0"],
            "reactors=0: give a whole number of reactors",
        ),
        (&["reactors=100000"], "reactors=100000: the machine has"),
        (&["reactors=1", "/dev/null"], "drop the targets"),
        (&["reactors=1", "devices=1"], "reactors with devices"),
        (
            &["initiator-cores=1,2", "jobs=1,2"],
            "initiator-cores=1,2 with jobs: both set the jobs per target",
        ),
        (
            &["initiator-cores=1,2"],
            "initiator-cores=1,2 without a target: give nvme-tcp://",
        ),
        (
            &["initiator-cores=1", "/dev/null"],
            "initiator-cores=1 with /dev/null: the axis sweeps an NVMe-oF initiator",
        ),
    ];
    for (words, want) in cases {
        let mut args = vec!["sweep"];
        args.extend_from_slice(words);
        let (code, _, err) = numio(&args);
        assert_eq!(code, 2, "{words:?}: {err}");
        assert!(err.contains(want), "{words:?}: {err}");
    }
}
