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
    assert_eq!(j["schema_version"], 2);
    assert_eq!(j["environment"]["backend"], "sync");
    // The time axis: 1 s intervals by default, adding up to the run.
    assert_eq!(j["interval_ns"], 1_000_000_000);
    let ivs = j["targets"][0]["intervals"].as_array().expect("intervals");
    let sum: u64 = ivs
        .iter()
        .map(|i| i["total"]["ops"].as_u64().unwrap())
        .sum();
    assert_eq!(sum, j["targets"][0]["total"]["ops"].as_u64().unwrap());
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

/// Issue 39: `numio bench --plan p.json --iodepth 4 --runtime 300ms` ran at
/// the plan's iodepth 64 for its runtime, and `numio bench two.fio
/// --iodepth 4` at the file's 16, exit 0. The command line now wins (fio's
/// rule), the report says which values came from where, and `--numjobs`,
/// which would need CPUs the plan did not choose, is refused.
#[test]
fn workload_flags_apply_over_a_plan_and_a_job_file() {
    let f = Temp::new("over", 4 << 20);
    let (plan_file, job) = plan_and_job_file("over", &f, &["--runtime", "5s"]);
    for input in [
        vec!["--plan", plan_file.path()],
        vec![job.path(), "--backend", "sync"],
    ] {
        let mut args = vec!["bench"];
        args.extend(&input);
        args.extend(["--iodepth", "4", "--runtime", "200ms", "--json"]);
        let (code, out, err) = numio(&args);
        assert_eq!(code, 0, "{input:?}: {err}");
        let j: serde_json::Value = serde_json::from_str(&out).expect("valid JSON");
        let w = &j["targets"][0]["workload"];
        assert_eq!(w["iodepth"], 4, "{input:?}: {w}");
        assert_eq!(w["runtime_ns"], 200_000_000u64, "{input:?}: {w}");
        assert!(
            j["runtime_ns"].as_u64().unwrap() < 3_000_000_000,
            "{input:?}"
        );

        let mut args = vec!["bench"];
        args.extend(&input);
        args.extend(["--iodepth", "4", "--runtime", "200ms"]);
        let (code, out, err) = numio(&args);
        assert_eq!(code, 0, "{input:?}: {err}");
        assert!(
            out.contains("note: from the command line over the")
                && out.contains("iodepth=4 (was 16), runtime=0.2s (was 5s)"),
            "{input:?}: {out}"
        );

        let mut args = vec!["bench"];
        args.extend(&input);
        args.extend(["--numjobs", "2"]);
        let (code, _, err) = numio(&args);
        assert_eq!(code, 2, "{input:?}");
        assert!(
            err.contains("--numjobs=2 with the") && err.contains("placed already"),
            "{err}"
        );
    }
}

/// A saved plan of `f` at iodepth 16 (with `plan_flags`) and a fio job file
/// (psync, randread, iodepth 16, runtime 5 s) on it, named by `tag`.
fn plan_and_job_file(tag: &str, f: &Temp, plan_flags: &[&str]) -> (Temp, Temp) {
    let mut args = vec!["plan", f.path(), "--format", "numio", "--iodepth", "16"];
    args.extend(plan_flags);
    let (code, plan, err) = numio(&args);
    assert_eq!(code, 0, "{err}");
    let plan_file = Temp::new(&format!("{tag}-plan.json"), 0);
    std::fs::write(&plan_file.0, plan).unwrap();
    // A job file is known by its extension.
    let job = Temp(std::env::temp_dir().join(format!("numio-{tag}-{}.fio", std::process::id())));
    std::fs::write(
        &job.0,
        format!(
            "[global]\nioengine=psync\nrw=randread\niodepth=16\nruntime=5\ntime_based\n\n[a]\nfilename={}\n",
            f.path()
        ),
    )
    .unwrap();
    (plan_file, job)
}

/// Issue 39: compare's `plan=` and `fio=` arms ran at the file's values
/// whatever the command line said; they now take the workload flags as
/// bench does, and a `result=` arm says the flags do not change it.
#[test]
fn compare_applies_workload_flags_over_plan_and_fio_arms() {
    let f = Temp::filled("cmp-over", 1 << 20, 5);
    let (plan_file, job) = plan_and_job_file("cmp-over", &f, &[]);
    let saved =
        Temp(std::env::temp_dir().join(format!("numio-cmp-over-{}.json", std::process::id())));
    let a = format!("plan={},label=A", plan_file.path());
    let b = format!("fio={},label=B", job.path());
    let (code, out, err) = numio(&[
        "compare",
        "--a",
        &a,
        "--b",
        &b,
        "--repeat",
        "2",
        "--iodepth",
        "4",
        "--runtime",
        "100ms",
        "--backend",
        "sync",
        "--save",
        saved.path(),
    ]);
    assert_eq!(code, 0, "{err}");
    for from in ["over the plan", "over the job file"] {
        assert!(
            err.contains(&format!("from the command line {from}"))
                && err.contains("iodepth=4 (was 16), runtime=0.1s (was"),
            "{from}: {err}"
        );
    }
    let set: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&saved.0).unwrap()).unwrap();
    let text = set.to_string();
    assert!(text.contains("\"iodepth\":4"), "{text}");
    assert!(!text.contains("\"iodepth\":16"), "{text}");
    let _ = out;
    let a = format!("result={},arm=A", saved.path());
    let (code, _, err) = numio(&[
        "compare",
        "--a",
        &a,
        "--b",
        &format!("result={},arm=B", saved.path()),
        "--iodepth",
        "8",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("its runs were measured already")
            && err.contains("--iodepth does not change them"),
        "{err}"
    );
}

/// Issue 39: a target is classified once (planner::TargetAddr), so `numio
/// plan` takes what bench takes: `nvme-rdma://` and `pci:` targets were
/// refused as "does not exist", and a device name that is not on this
/// machine planned anyway, exit 0.
#[test]
fn plan_takes_every_target_form_bench_takes_and_refuses_missing_devices() {
    let (code, out, err) = numio(&["plan", "nvme-rdma://127.0.0.1/nqn.2026-11.io.numio:x/1"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("nvme-rdma://127.0.0.1"), "{out}");
    assert!(
        out.contains("remote NVMe/RDMA namespace reached as 127.0.0.1:4420"),
        "{out}"
    );

    // Any PCI function this machine has (a host bridge at least).
    let function = std::fs::read_dir("/sys/bus/pci/devices")
        .ok()
        .and_then(|mut d| d.next())
        .and_then(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned());
    if let Some(f) = function {
        let t = format!("pci:{f}/1");
        let (code, out, err) = numio(&["plan", &t]);
        assert_eq!(code, 0, "{t}: {err}");
        assert!(out.contains(&t), "{out}");
    }
    let (code, _, err) = numio(&["plan", "pci:00ff:ff:1f.7/1"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("no PCI function 00ff:ff:1f.7 on this machine"),
        "{err}"
    );

    for typo in ["/dev/nvme99n1", "nvme99n1"] {
        let (code, _, err) = numio(&["plan", typo]);
        assert_eq!(code, 2, "{typo}: {err}");
        assert!(
            err.contains("nvme99n1") && err.contains("numio topo"),
            "{err}"
        );
    }
}

/// Issue 39: a plain run on a file printed the NUMA-unknown fact three
/// times on a one-node machine (a warning naming the path twice, then two
/// notes) and the io_uring task-run trial as a note on every run. Now the
/// fact is one note (a warning only where a node must be chosen) and the
/// trial is a `-v` line (and the JSON's `taskrun_trial`).
#[test]
fn a_plain_run_states_each_fact_once() {
    let f = Temp::filled("once", 8 << 20, 0);
    let one_node = !std::path::Path::new("/sys/devices/system/node/node1").exists();
    let (code, out, err) = numio(&["bench", f.path(), "--runtime", "200ms"]);
    assert_eq!(code, 0, "{err}");
    let all = format!("{out}{err}");
    assert!(!all.contains("task-run"), "{all}");
    if one_node {
        assert_eq!(all.matches("NUMA node").count(), 1, "{all}");
        assert!(!all.contains("warning"), "{all}");
    }
    let (code, out, err) = numio(&["bench", f.path(), "--runtime", "200ms", "-v"]);
    assert_eq!(code, 0, "{err}");
    let lines = out.lines().filter(|l| l.contains("task-run mode")).count();
    let (code, json, err) = numio(&["bench", f.path(), "--runtime", "200ms", "--json"]);
    assert_eq!(code, 0, "{err}");
    let j: serde_json::Value = serde_json::from_str(&json).unwrap();
    // A kernel without both task-run modes runs no trial.
    let trials = usize::from(!j["targets"][0]["workers"][0]["taskrun_trial"].is_null());
    assert_eq!(lines, trials, "-v prints the trial the JSON holds: {out}");
}

/// Issue 39: fio's first words (`--filename=`, `--ioengine=`, `--direct=`,
/// `--time_based`, `--name=`) got clap's generic tip; a missing file with
/// `--size` was not laid out as fio does; a sparse file was read with no
/// word that its reads hit holes.
#[test]
fn fio_words_work_new_files_are_laid_out_and_holes_are_named() {
    let f = Temp::new("fio-words", 4 << 20);
    let file = format!("--filename={}", f.path());
    let (code, out, err) = numio(&[
        "bench",
        &file,
        "--ioengine=psync",
        "--direct=1",
        "--time_based",
        "--name=a",
        "--runtime=200ms",
        "--json",
    ]);
    assert_eq!(code, 0, "{err}");
    let j: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(j["environment"]["backend"], "sync");
    assert_eq!(j["targets"][0]["path"], f.path());
    let (code, _, err) = numio(&["bench", &file, "--ioengine=libaio"]);
    assert_eq!(code, 2);
    assert!(
        err.contains("--ioengine=libaio") && err.contains("--backend uring"),
        "{err}"
    );

    // The sparse file is named as such.
    let (code, out, err) = numio(&["bench", f.path(), "--runtime=200ms"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("is sparse (0 of 4194304 bytes allocated)"),
        "{out}"
    );

    // A new file with --size is laid out, said so, and has no holes.
    let new = Temp(std::env::temp_dir().join(format!("numio-new-{}.img", std::process::id())));
    let (code, _, err) = numio(&["bench", new.path(), "--runtime=200ms"]);
    assert_eq!(code, 2);
    assert!(
        err.contains("does not exist; give --size to create it"),
        "{err}"
    );
    let (code, out, err) = numio(&["bench", new.path(), "--size", "2m", "--runtime=200ms"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("was laid out before the run: 2097152 bytes written"),
        "{err}"
    );
    assert!(!out.contains("is sparse"), "{out}");
    assert_eq!(std::fs::metadata(new.path()).unwrap().len(), 2 << 20);
}

/// Issue 39: `--force` meant three things (export a used device, take a
/// used controller, run a huge sweep grid). Each has its own name now;
/// the old spelling still parses.
#[test]
fn each_force_has_its_own_name() {
    for (cmd, flag) in [
        (vec!["serve", "--help"], "--force-export"),
        (vec!["vfio", "bind", "--help"], "--force-unbind"),
        (vec!["sweep", "--help"], "--allow-large-grid"),
        (vec!["bench", "--help"], "--force-write"),
    ] {
        let (code, out, _) = numio(&cmd);
        assert_eq!(code, 0, "{cmd:?}");
        assert!(out.contains(flag), "{cmd:?}: {out}");
        assert!(
            !out.lines().any(|l| l.trim_start().starts_with("--force ")),
            "{cmd:?} still shows a bare --force: {out}"
        );
    }
    let (code, _, err) = numio(&["serve", "--force", "--ns", "mem:1X"]);
    assert_eq!(code, 2);
    assert!(err.contains("mem:1X"), "the old --force parses: {err}");
}

/// Issue 39: placement had four spellings (`bench --numa`, `plan --policy`
/// and `--numa auto|off`, `compare --a policy=` and `--fio-numa-auto`), so
/// `numio plan X --numa local` and `compare --a numa=local` were refused.
/// `--numa` is the one name now; the old ones still work.
#[test]
fn placement_has_one_name_everywhere() {
    let f = Temp::filled("numa-name", 1 << 20, 7);
    for args in [
        vec!["plan", f.path(), "--numa", "local"],
        vec!["plan", f.path(), "--numa", "spread"],
        vec!["plan", f.path(), "--policy", "none"],
    ] {
        let (code, out, err) = numio(&args);
        assert_eq!(code, 0, "{args:?}: {err}");
        assert!(out.starts_with("policy "), "{args:?}: {out}");
    }
    let (code, out, err) = numio(&[
        "compare",
        "--a",
        "numa=local",
        "--b",
        "policy=none",
        f.path(),
        "--repeat",
        "2",
        "--runtime",
        "100ms",
        "--backend",
        "sync",
        "--json",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("\"local\"") && out.contains("\"none\""),
        "{out}"
    );
}

/// Issue 39 (flags silently ignored): `bench --cpus 0 --numa spread` ran
/// on CPU 0 and dropped --numa, `bench JOB.fio --cpus 0` dropped --cpus,
/// and `sweep --numa auto` was refused where bench takes it as local.
/// One placement grammar (`planner::flags::Placing`) now refuses the
/// first two, naming the fix, and accepts the third.
#[test]
fn placement_flags_are_never_silently_dropped() {
    let f = Temp::filled("placing", 1 << 20, 7);
    let (code, _, err) = numio(&[
        "bench",
        f.path(),
        "--cpus",
        "0",
        "--numa",
        "spread",
        "--runtime",
        "100ms",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("--cpus 0 with --numa spread") && err.contains("drop --numa"),
        "{err}"
    );
    let job =
        Temp(std::env::temp_dir().join(format!("numio-test-placing-{}.fio", std::process::id())));
    let text = format!(
        "[a]\nfilename={}\nrw=randread\nbs=4k\nruntime=100ms\ntime_based\n",
        f.path()
    );
    std::fs::write(job.path(), text).unwrap();
    let (code, _, err) = numio(&["bench", job.path(), "--cpus", "0"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("a job file places its own jobs"), "{err}");
    let (code, _, err) = numio(&[
        "sweep",
        "iodepth=1",
        f.path(),
        "--numa",
        "auto",
        "--runtime",
        "100ms",
        "--backend",
        "sync",
    ]);
    assert_eq!(code, 0, "{err}");
}

/// Issue 40: `--numa remote` never quietly runs local. A file has no NUMA
/// node and a one-node machine no other node, so bench, plan and a
/// `policy=remote` compare arm all refuse before any I/O, naming the
/// target and the fix (the lab's two-socket check runs it for real).
#[test]
fn remote_placement_without_a_remote_node_is_refused_with_the_fix() {
    let f = Temp::filled("remote", 1 << 20, 7);
    let bench = ["bench", f.path(), "--numa", "remote", "--runtime", "100ms"];
    let plan = ["plan", f.path(), "--numa", "remote"];
    let compare = [
        "compare",
        "--a",
        "policy=local",
        "--b",
        "policy=remote",
        f.path(),
        "--runtime",
        "100ms",
        "--backend",
        "sync",
    ];
    for args in [&bench[..], &plan[..], &compare[..]] {
        let (code, out, err) = numio(args);
        assert_ne!(code, 0, "{args:?}: {out}");
        assert!(
            err.contains(&format!("target {}:", f.path()))
                && err.contains("--numa remote")
                && (err.contains("use --numa local or spread") || err.contains("--cpus-for")),
            "{args:?}: {err}"
        );
        assert!(!out.contains("IOPS"), "{args:?} ran: {out}");
    }
}

/// Issue 39: `compare` printed its "method:" line once per metric (seven
/// times) and called a comparison of saved results "interleaved".
#[test]
fn compare_states_its_method_once_and_what_was_interleaved() {
    let f = Temp::filled("cmp-once", 1 << 20, 7);
    let saved = Temp(std::env::temp_dir().join(format!("numio-cmp-{}.json", std::process::id())));
    let (code, out, err) = numio(&[
        "compare",
        "--a",
        "numa=local",
        "--b",
        "numa=none",
        f.path(),
        "--repeat",
        "2",
        "--runtime",
        "100ms",
        "--backend",
        "sync",
        "--save",
        saved.path(),
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("runs interleaved A B A B"), "{out}");
    // Once when every verdict shares the method; beside each only when they
    // differ (a metric that did not vary, e.g. CPU headroom 0.0 % in every
    // run on a loaded machine, is compared exactly).
    let methods: Vec<&str> = out
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with("method:"))
        .collect();
    assert!(!methods.is_empty(), "{out}");
    if methods.windows(2).all(|w| w[0] == w[1]) {
        assert_eq!(methods.len(), 1, "{out}");
    }
    let a = format!("result={},arm=local", saved.path());
    let b = format!("result={},arm=none", saved.path());
    let (code, out, err) = numio(&["compare", "--a", &a, "--b", &b]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("comparison with saved results (runs not interleaved)"),
        "{out}"
    );
    assert!(!out.contains("runs interleaved"), "{out}");
}

/// Issue 39: `numio report` of a `bench --json` file printed a one-run
/// "repeat statistics" table in other units than bench; of a fio-json file
/// numio wrote, "use the numio version that wrote it". Now the first
/// reprints with bench's renderer and the second says what the file is.
#[test]
fn report_reprints_a_bench_json_as_bench_did_and_names_fio_json() {
    let f = Temp::filled("reprint", 1 << 20, 3);
    let json =
        Temp(std::env::temp_dir().join(format!("numio-reprint-{}.json", std::process::id())));
    let fio =
        Temp(std::env::temp_dir().join(format!("numio-reprint-fio-{}.json", std::process::id())));
    let (code, out, err) = numio(&[
        "bench",
        f.path(),
        "--runtime",
        "200ms",
        "--backend",
        "sync",
        "--json",
    ]);
    assert_eq!(code, 0, "{err}");
    std::fs::write(&json.0, &out).unwrap();
    let j: serde_json::Value = serde_json::from_str(&out).unwrap();
    let ops = j["targets"][0]["read"]["ops"].as_u64().unwrap();
    let (code, text, err) = numio(&["report", json.path()]);
    assert_eq!(code, 0, "{err}");
    assert!(text.starts_with("numio bench: sync backend"), "{text}");
    assert!(
        text.contains(&format!("({ops} I/Os,")),
        "the run's own numbers: {text}"
    );
    assert!(!text.contains("Repeat statistics"), "{text}");

    let (code, out, err) = numio(&[
        "bench",
        f.path(),
        "--runtime",
        "200ms",
        "--backend",
        "sync",
        "--output-format",
        "fio-json",
    ]);
    assert_eq!(code, 0, "{err}");
    std::fs::write(&fio.0, out).unwrap();
    let (code, _, err) = numio(&["report", fio.path()]);
    assert_eq!(code, 2);
    assert!(
        err.contains("this is fio's JSON output") && err.contains("--save FILE"),
        "{err}"
    );
}
