//! `numio bench` end to end through the binary: JSON output, errors for
//! bad input that name the value and the fix.

mod common;

use common::{numio, Temp};

#[test]
fn json_result_has_the_documented_fields() {
    let t = Temp::new("json", 16 << 20);
    let (code, out, err) = numio(&[
        "bench",
        t.path(),
        "--backend",
        "sync",
        "--runtime",
        "300ms",
        "--iodepth",
        "4",
        "--percentiles",
        "50,99.99",
        "--json",
    ]);
    assert_eq!(code, 0, "{err}");
    let j: serde_json::Value = serde_json::from_str(&out).expect("valid JSON");
    assert_eq!(j["schema_version"], 1);
    assert_eq!(j["environment"]["backend"], "sync");
    assert!(j["environment"]["kernel"]
        .as_str()
        .is_some_and(|k| !k.is_empty()));
    let t0 = &j["targets"][0];
    assert_eq!(t0["path"], t.path());
    assert!(t0["read"]["ops"].as_u64().unwrap() > 0);
    let p = &t0["read"]["latency"]["clat"]["percentiles"];
    assert_eq!(p[0]["percentile"], 50.0);
    assert_eq!(p[1]["percentile"], 99.99);
    assert!(j["cpu_usage"]["user_ns"].is_u64());
    assert!(j["process_cpu_usage"]["system_ns"].is_u64());
    assert!(
        err.is_empty() || !err.contains('\r'),
        "no progress when stderr is not a TTY: {err:?}"
    );
}

#[test]
fn bad_values_are_named() {
    let t = Temp::new("bad", 1 << 20);
    let cases: &[(&[&str], &str)] = &[
        (&["--iodepth", "0"], "--iodepth=0"),
        (&["--runtime", "-5"], "--runtime=-5"),
        (
            &["--bs", "1000"],
            "bs=1000 is not a multiple of the logical block size 512",
        ),
        (&["--size", "2m"], "beyond the end"),
        (&["--bs", "4q"], "--bs=4q: unknown size suffix `q`"),
        (
            &["--rw", "randomread"],
            "invalid value 'randomread' for '--rw <MODE>'",
        ),
        (
            &["--rw", "randomread"],
            "[possible values: read, write, randread",
        ),
        (
            &["--backend", "spdk"],
            "invalid value 'spdk' for '--backend <NAME>'",
        ),
        (
            &["--backend", "spdk"],
            "uring, sync, null, nop, passthru, tcp",
        ),
    ];
    for (extra, needle) in cases {
        let mut args = vec!["bench", t.path()];
        if !extra.contains(&"--runtime") {
            args.extend(["--runtime", "1s"]);
        }
        args.extend_from_slice(extra);
        let (code, _, err) = numio(&args);
        assert_ne!(code, 0, "{extra:?} must fail");
        assert!(err.contains(needle), "{extra:?}: {err}");
    }
}

#[test]
fn unknown_options_and_missing_targets_fail_clearly() {
    let (code, _, err) = numio(&["bench", "--frobnicate"]);
    assert_ne!(code, 0);
    assert!(err.contains("--frobnicate"), "{err}");
    let (code, _, err) = numio(&["bench", "/nonexistent/numio-target", "--runtime", "1s"]);
    assert_ne!(code, 0);
    assert!(err.contains("/nonexistent/numio-target"), "{err}");
}

#[test]
fn writes_without_targets_are_refused() {
    let (code, _, err) = numio(&["bench", "--rw", "randwrite", "--runtime", "1s"]);
    assert_ne!(code, 0);
    assert!(
        err.contains("write workloads need explicit targets"),
        "{err}"
    );
}

#[test]
fn cpus_for_pins_each_target_and_job_files_run_in_stonewall_groups() {
    let a = Temp::new("cpus-for-a", 4 << 20);
    let b = Temp::new("cpus-for-b", 4 << 20);
    let fa = format!("{}=0", a.path());
    let fb = format!("{}=0", b.path());
    let (code, out, err) = numio(&[
        "bench",
        a.path(),
        b.path(),
        "--cpus-for",
        &fa,
        "--cpus-for",
        &fb,
        "--backend",
        "sync",
        "--runtime",
        "200ms",
        "--json",
    ]);
    assert_eq!(code, 0, "{err}");
    let j: serde_json::Value = serde_json::from_str(&out).expect("valid JSON");
    for t in j["targets"].as_array().unwrap() {
        assert_eq!(t["workers"][0]["cpu"], 0, "{t}");
    }
    let (code, _, err) = numio(&["bench", a.path(), "--cpus-for", &fa, "--cpus", "0"]);
    assert_eq!(code, 2);
    assert!(err.contains("drop --cpus"), "{err}");

    let job = std::env::temp_dir().join(format!("numio-cli-{}.fio", std::process::id()));
    let text = format!(
        "[global]\nioengine=psync\nrw=randread\nbs=4k\nruntime=200ms\ntime_based\n\n[a]\nfilename={}\ncpus_allowed=0\n\n[b]\nstonewall\nfilename={}\ncpus_allowed=0\n",
        a.path(),
        b.path()
    );
    std::fs::write(&job, text).unwrap();
    let (code, out, err) = numio(&["bench", job.to_str().unwrap(), "--json"]);
    let _ = std::fs::remove_file(&job);
    assert_eq!(code, 0, "{err}");
    let groups: serde_json::Value = serde_json::from_str(&out).expect("valid JSON");
    let paths: Vec<&str> = groups
        .as_array()
        .expect("two stonewall groups: an array of results")
        .iter()
        .map(|g| g["targets"][0]["path"].as_str().unwrap())
        .collect();
    assert_eq!(paths, vec![a.path(), b.path()]);
}

/// `--repeat`: the first run's task-run trial settles the io_uring set-up
/// for the later runs, so the mode cannot flip between repeats; it says so,
/// and the saved runs show it. An explicit `--uring-setup` has no trial.
#[test]
fn repeats_keep_the_mode_the_first_trial_chose() {
    use std::os::unix::fs::OpenOptionsExt;
    let t = Temp::filled("settle", 16 << 20, 0x5a);
    let direct = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECT)
        .open(t.path())
        .is_ok();
    if !direct {
        eprintln!("skipping: the trial needs O_DIRECT, which the temp dir refuses");
        return;
    }
    let save_path = std::env::temp_dir()
        .join(format!("numio-settle-{}.json", std::process::id()))
        .to_string_lossy()
        .into_owned();
    let run = |extra: &[&str]| {
        let mut args = vec![
            "bench",
            t.path(),
            "--repeat",
            "3",
            "--runtime",
            "300ms",
            "--numa",
            "none",
            "--save",
            &save_path,
        ];
        args.extend_from_slice(extra);
        let (code, _, err) = numio(&args);
        assert_eq!(code, 0, "{err}");
        let saved: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&save_path).unwrap()).unwrap();
        let _ = std::fs::remove_file(&save_path);
        (err, saved["arms"][0]["runs"].as_array().unwrap().clone())
    };

    let (err, runs) = run(&[]);
    let line = err
        .lines()
        .find(|l| l.contains("task-run trial kept"))
        .unwrap_or_else(|| panic!("the settled mode is announced: {err}"));
    assert!(
        line.starts_with("numio: run 1's task-run trial kept "),
        "{line}"
    );
    assert!(line.contains("runs 2-3 use it without a trial"), "{line}");
    let trial = &runs[0]["raw"]["targets"][0]["workers"][0]["taskrun_trial"];
    let chosen = trial["chosen"].as_str().expect("run 1 had a trial");
    let flag = chosen.to_ascii_uppercase();
    assert!(line.contains(&flag), "{line} / {chosen}");
    assert_eq!(runs.len(), 3);
    for r in &runs[1..] {
        assert!(
            r["raw"]["targets"][0]["workers"][0]["taskrun_trial"].is_null(),
            "no trial after run 1: {r}"
        );
        let features = r["raw"]["environment"]["uring_features"].to_string();
        assert!(features.contains(&flag), "{features} / {flag}");
    }

    let (err, runs) = run(&["--uring-setup", "coop"]);
    assert!(!err.contains("task-run trial"), "{err}");
    assert!(runs
        .iter()
        .all(|r| r["raw"]["targets"][0]["workers"][0]["taskrun_trial"].is_null()));
}

/// The machine's counters ride along every run: CPU headroom and per-I/O
/// costs from /proc, checked against /proc/stat read here around the run.
#[test]
fn every_run_counts_the_machine_cpu_and_context_switches() {
    let stat = || {
        let text = std::fs::read_to_string("/proc/stat").unwrap();
        let cpu: Vec<u64> = text
            .lines()
            .next()
            .unwrap()
            .split_whitespace()
            .skip(1)
            .map(|w| w.parse().unwrap())
            .collect();
        // user nice system idle iowait irq softirq steal: busy, all (ticks).
        (
            cpu[0] + cpu[1] + cpu[2] + cpu[5] + cpu[6],
            cpu[..8].iter().sum::<u64>(),
        )
    };
    let t = Temp::new("counters", 16 << 20);
    let before = stat();
    let (code, out, err) = numio(&[
        "bench",
        t.path(),
        "--backend",
        "null",
        "--runtime",
        "500ms",
        "--jobs",
        "2",
        "--json",
    ]);
    let after = stat();
    assert_eq!(code, 0, "{err}");
    let j: serde_json::Value = serde_json::from_str(&out).expect("valid JSON");
    let c = &j["counters"];
    let window_ns = c["window_ns"].as_u64().expect("counted");
    assert!(
        (400_000_000..2_000_000_000).contains(&window_ns),
        "{window_ns}"
    );
    let cpu = &c["cpu"];
    let field = |k: &str| cpu[k].as_u64().unwrap();
    let busy_ns: u64 = ["user_ns", "nice_ns", "system_ns", "irq_ns", "softirq_ns"]
        .iter()
        .map(|k| field(k))
        .sum();
    let total_ns = busy_ns + field("idle_ns") + field("iowait_ns") + field("steal_ns");
    // The run's window lies inside this test's: never more ticks than it saw.
    let tick_ns = 10_000_000;
    assert!(total_ns <= (after.1 - before.1) * tick_ns, "{total_ns} ns");
    assert!(busy_ns <= (after.0 - before.0) * tick_ns, "{busy_ns} ns");
    // Two null workers spin: the machine was busy for a good share.
    assert!(busy_ns * 4 >= window_ns, "busy {busy_ns} of {window_ns} ns");
    assert!(c["context_switches"].as_u64().unwrap() > 0);
    assert!(c["process"]["user_ns"].as_u64().unwrap() > 0);
    // A file in /tmp is not on an NVMe controller here, or it is: either
    // way the target says which controllers it counted.
    let tc = &c["targets"][0];
    assert_eq!(tc["path"], t.path());
    if tc["controllers"].as_array().unwrap().is_empty() {
        assert!(tc["interrupts"].is_null(), "not counted, not a made-up 0");
    }
    let (code, text, err) = numio(&["bench", t.path(), "--backend", "null", "--runtime", "200ms"]);
    assert_eq!(code, 0, "{err}");
    assert!(text.contains("CPU headroom"), "{text}");
    assert!(text.contains("per I/O interrupts"), "{text}");
}
