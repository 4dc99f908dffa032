//! `numio bench --hosts` over real OpenSSH: hosts are network namespaces
//! joined by veth pairs, each with its own sshd (`common::sshlab`). Root
//! only; elsewhere each test says why it did not run.

mod common;

use std::process::{Command, Stdio};

use common::lines::{lines_of, next_line};
use common::sshlab::{unavailable, Numio, SshLab};
use common::Temp;

fn skip() -> bool {
    if let Some(why) = unavailable() {
        // CI has root and installs openssh-server: a skip there is a
        // failure.
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "the fleet tests cannot run: {why}"
        );
        eprintln!("skipped: {why}");
        return true;
    }
    false
}

/// `numio bench --hosts LIST` with the lab's ssh flags and `rest`.
fn fleet_bench(lab: &SshLab, hosts: &str, rest: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_numio"))
        .arg("bench")
        .args(["--hosts", hosts])
        .args(lab.ssh_flags())
        .args(rest)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

const QUICK: [&str; 6] = ["--runtime", "2", "--ramp-time", "0", "--iodepth", "4"];

/// `numio sweep WORDS --hosts INITIATORS --target-host HOST0` (hosts of
/// `lab`; numio serve on host 0 with a mem:64M namespace), `flags`, then a
/// bench of `runtime` seconds at QD4 without ramp.
fn fleet_sweep(
    lab: &SshLab,
    words: &[&str],
    initiators: &[usize],
    flags: &[&str],
    runtime: &str,
) -> Command {
    let list: Vec<String> = initiators.iter().map(|&i| lab.login(i)).collect();
    let mut c = Command::new(env!("CARGO_BIN_EXE_numio"));
    c.arg("sweep")
        .args(words)
        .args(["--hosts", &list.join(",")])
        .args(["--target-host", &lab.login(0), "--target-ns", "mem:64M"])
        .args(flags)
        .args(lab.ssh_flags())
        .args(["--runtime", runtime, "--ramp-time", "0", "--iodepth", "4"]);
    c
}

/// A finished command's exit status, stdout and stderr.
fn outcome(c: &mut Command) -> (Option<i32>, String, String) {
    let out = c.output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Two hosts, then three, each on a file of its own (`ADDR:PATH`): every
/// host reports, the totals add up, and the fleet's percentiles are those
/// of one histogram of every I/O of every host.
#[test]
fn two_and_three_hosts_bench_at_once_and_merge_histograms() {
    if skip() {
        return;
    }
    let lab = SshLab::new(1, &[Numio::This, Numio::This, Numio::This]);
    let files: Vec<Temp> = (0..3)
        .map(|i| Temp::new(&format!("fleet{i}"), 16 << 20))
        .collect();
    let target = |i: usize| format!("{}:{}", lab.hosts[i].addr, files[i].0.display());
    let list2 = format!("root@{},root@{}", lab.hosts[0].addr, lab.hosts[1].addr);
    let (t0, t1) = (target(0), target(1));
    let mut args: Vec<&str> = vec![&t0, &t1, "--json"];
    args.extend(QUICK);
    let (rc, out, err) = fleet_bench(&lab, &list2, &args);
    assert_eq!(rc, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["schema"], "numio-fleet");
    assert_eq!(v["partial"], false);
    let hosts = v["hosts"].as_array().unwrap();
    assert_eq!(hosts.len(), 2);
    // numio report reprints the fleet run as bench --hosts prints it.
    let saved = Temp(std::env::temp_dir().join(format!("numio-fleet-{}.json", std::process::id())));
    std::fs::write(&saved.0, &out).unwrap();
    let again = Command::new(env!("CARGO_BIN_EXE_numio"))
        .args(["report", saved.0.to_str().unwrap()])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&again.stdout);
    assert!(
        again.status.success(),
        "{}",
        String::from_utf8_lossy(&again.stderr)
    );
    assert!(text.starts_with("host "), "{text}");
    assert!(text.contains("fleet (2 of 2 hosts): "), "{text}");
    let mut all = engine::stats::new_histogram();
    let mut all_slat = engine::stats::new_histogram();
    let mut ops = 0;
    for (i, h) in hosts.iter().enumerate() {
        assert_eq!(h["ok"], true, "{h}");
        let r: results::RunResult = serde_json::from_value(h["result"].clone()).unwrap();
        assert_eq!(r.targets.len(), 1, "host {i} ran only its own file");
        assert_eq!(r.targets[0].path, files[i].0.display().to_string());
        assert!(r.total.ops > 0);
        ops += r.total.ops;
        all.add(engine::stats::decode_histogram(&r.targets[0].histograms.clat_hex).unwrap())
            .unwrap();
        let reads = r.targets[0]
            .histograms
            .read
            .as_ref()
            .expect("read histograms kept");
        all_slat
            .add(engine::stats::decode_histogram(&reads.slat_hex).unwrap())
            .unwrap();
        assert!(
            h["clock_offset_ns"].as_i64().unwrap().abs() < 50_000_000,
            "one kernel, one clock"
        );
    }
    let merged: results::RunResult = serde_json::from_value(v["merged"].clone()).unwrap();
    assert_eq!(merged.total.ops, ops);
    let want = engine::stats::summarize(&all, &engine::DEFAULT_PERCENTILES);
    let got = &merged.total.latency.clat;
    assert_eq!(got.percentiles, want.percentiles);
    assert_eq!(
        (got.samples, got.min_ns, got.max_ns),
        (want.samples, want.min_ns, want.max_ns)
    );
    assert!((got.mean_ns - want.mean_ns).abs() < 1e-6 * want.mean_ns.max(1.0));
    // A read-only run: the reads' merged percentiles are the total's, and
    // the submission latency is one histogram of both hosts' too.
    assert_eq!(merged.read.latency.clat.percentiles, want.percentiles);
    let want_slat = engine::stats::summarize(&all_slat, &engine::DEFAULT_PERCENTILES);
    assert_eq!(merged.read.latency.slat.percentiles, want_slat.percentiles);
    assert_eq!(merged.total.latency.slat.samples, want_slat.samples);
    let paths: Vec<&str> = merged.targets.iter().map(|t| t.path.as_str()).collect();
    assert!(
        paths[0].starts_with(&format!("root@{}:", lab.hosts[0].addr)),
        "{paths:?}"
    );

    let t2 = target(2);
    let mut args: Vec<&str> = vec![&t0, &t1, &t2];
    args.extend(QUICK);
    let (rc, out, err) = fleet_bench(&lab, &lab.host_list(), &args);
    assert_eq!(rc, 0, "{err}");
    for h in &lab.hosts {
        assert!(out.contains(&format!("root@{}", h.addr)), "{out}");
    }
    assert!(out.contains("fleet (3 of 3 hosts)"), "{out}");
    assert!(err.contains("3 host(s) start together"), "{err}");
    lab.assert_no_numio_left();

    // numio compare across hosts: one host against the other two,
    // interleaved, with the per-host rows in the saved set.
    let (a0, a12) = (
        format!("hosts=root@{},label=one", lab.hosts[0].addr),
        format!(
            "hosts=root@{},root@{}",
            lab.hosts[1].addr, lab.hosts[2].addr
        ),
    );
    let out = Command::new(env!("CARGO_BIN_EXE_numio"))
        .args([
            "compare", "--a", &a0, "--b", &a12, "--repeat", "2", "--json",
        ])
        .args(lab.ssh_flags())
        .args([&t0, &t1, &t2])
        .args(QUICK)
        .output()
        .unwrap();
    let (o, e) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert_eq!(out.status.code(), Some(0), "{o}{e}");
    let v: serde_json::Value = serde_json::from_str(&o).unwrap();
    let arms = v["set"]["arms"]
        .as_array()
        .or(v["arms"].as_array())
        .unwrap_or_else(|| panic!("{o}"));
    assert_eq!(arms.len(), 2);
    assert_eq!(arms[0]["label"], "one");
    let seqs: Vec<u64> = arms
        .iter()
        .flat_map(|a| {
            a["runs"]
                .as_array()
                .unwrap()
                .iter()
                .map(|r| r["seq"].as_u64().unwrap())
        })
        .collect();
    assert_eq!(seqs, [1, 3, 2, 4], "interleaved A B A B");
    let b_targets: Vec<&str> = arms[1]["runs"][0]["targets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["target"].as_str().unwrap())
        .collect();
    assert_eq!(
        b_targets.len(),
        2,
        "one row per host and drive: {b_targets:?}"
    );
}

/// A host without numio, one with another version and one that is down
/// are each named with the fix; the host that ran is reported and the run
/// marked partial (exit status 1).
#[test]
fn hosts_without_numio_of_another_version_or_down_are_named() {
    if skip() {
        return;
    }
    let mut lab = SshLab::new(
        2,
        &[
            Numio::This,
            Numio::Missing,
            Numio::OtherVersion,
            Numio::This,
        ],
    );
    lab.kill_host(3);
    let f = Temp::new("fleet-partial", 16 << 20);
    let path = f.0.display().to_string();
    let mut args: Vec<&str> = vec![&path];
    args.extend(QUICK);
    let (rc, out, err) = fleet_bench(&lab, &lab.host_list(), &args);
    assert_eq!(rc, 1, "partial: {out}{err}");
    let a = |i: usize| lab.login(i);
    assert!(
        err.contains(&format!("{}: numio is not there or not executable", a(1))),
        "{err}"
    );
    assert!(err.contains("install numio"), "{err}");
    assert!(
        err.contains(&format!("{}: it runs numio 0.0.1-other", a(2))),
        "{err}"
    );
    assert!(
        err.contains(&format!("{}: ssh could not reach or log in", a(3))),
        "{err}"
    );
    assert!(out.contains("fleet (1 of 4 hosts, PARTIAL)"), "{out}");
    assert!(err.contains("numio: partial:"), "{err}");

    // --push copies this numio over: the host without one and the host
    // with another version both run.
    let list = format!("{},{}", a(1), a(2));
    let (rc, out, err) = fleet_bench(
        &lab,
        &list,
        &[&[path.as_str(), "--push"][..], &QUICK].concat(),
    );
    let home = std::env::var("HOME").unwrap_or_else(|_| "/root".into());
    let pushed = std::path::Path::new(&home).join(".cache/numio");
    let copies: Vec<_> = std::fs::read_dir(&pushed)
        .map(|d| d.flatten().collect())
        .unwrap_or_default();
    for c in &copies {
        if c.file_name().to_string_lossy().starts_with("numio-") {
            let _ = std::fs::remove_file(c.path());
        }
    }
    assert_eq!(rc, 0, "{out}{err}");
    assert!(out.contains("fleet (2 of 2 hosts)"), "{out}");
    assert_eq!(copies.len(), 1, "one copy, renamed into place: {copies:?}");
}

/// A host that dies mid-run is named; the other's result is kept, and
/// nothing of numio is left running on it afterwards.
#[test]
fn a_host_killed_mid_run_leaves_the_others_result() {
    if skip() {
        return;
    }
    let mut lab = SshLab::new(3, &[Numio::This, Numio::This]);
    let f = Temp::new("fleet-kill", 16 << 20);
    let mut child = Command::new(env!("CARGO_BIN_EXE_numio"))
        .arg("bench")
        .args(["--hosts", &lab.host_list()])
        .args(lab.ssh_flags())
        .arg(&f.0)
        .args(["--runtime", "6", "--ramp-time", "0", "--iodepth", "4"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let err = lines_of(child.stderr.take().unwrap());
    // Both hosts measure: the progress line shows the second one's IOPS.
    let second = format!("root@{} ", lab.hosts[1].addr);
    loop {
        let l = next_line(&err, "total");
        if l.contains(&second) && !l.contains(&format!("{second}0 ")) {
            break;
        }
    }
    lab.kill_host(1);
    let mut rest = String::new();
    for l in err.iter() {
        rest.push_str(&l);
        rest.push('\n');
    }
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}{rest}");
    assert!(rest.contains("the connection ended mid-run"), "{rest}");
    assert!(stdout.contains("fleet (1 of 2 hosts, PARTIAL)"), "{stdout}");
    lab.assert_no_numio_left();
}

/// A sweep over hosts: numio serve on one host, numio's initiator on one
/// and then two others; each point's run merges its hosts (the total is
/// their sum), the target's CPU and its machine's headroom are measured,
/// and nothing is left running afterwards.
#[test]
fn sweep_over_hosts_serves_a_target_and_tears_down() {
    if skip() {
        return;
    }
    let lab = SshLab::new(4, &[Numio::This, Numio::This, Numio::This]);
    let (code, stdout, stderr) = outcome(&mut fleet_sweep(
        &lab,
        &["initiators=1,2"],
        &[1, 2],
        &["--json"],
        "2",
    ));
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(v["schema"], "numio-sweep");
    let set = &v["results"];
    assert_eq!(
        set["sweep"]["fleet"]["url"],
        format!(
            "nvme-tcp://{}:4420/nqn.2026-01.io.numio:subsys0/1",
            lab.hosts[0].addr
        )
    );
    assert_eq!(set["sweep"]["fleet"]["target_host"], lab.login(0));
    let arms = set["arms"].as_array().unwrap();
    assert_eq!(arms.len(), 2);
    for (k, arm) in arms.iter().enumerate() {
        assert_eq!(arm["label"], format!("initiators={}", k + 1));
        let run = &arm["runs"][0];
        let targets = run["raw"]["targets"].as_array().unwrap();
        assert_eq!(targets.len(), k + 1, "one target per host: {run}");
        let sum: u64 = targets
            .iter()
            .map(|t| t["total"]["ops"].as_u64().unwrap())
            .sum();
        assert!(sum > 0);
        assert_eq!(run["raw"]["total"]["ops"].as_u64().unwrap(), sum);
        let per_io = &run["total"]["per_io"];
        assert!(per_io["target_cpu_ns"].as_f64().unwrap() > 0.0, "{run}");
        assert!(per_io["target_headroom_pct"].as_f64().is_some(), "{run}");
        assert!(per_io["machine_cpu_ns"].as_f64().unwrap() > 0.0, "{run}");
    }
    let points = v["sweeps"][0]["points"].as_array().unwrap();
    assert!(points.iter().all(|p| p["target_headroom_pct"].is_number()));
    assert!(stderr.contains("numio serve: ready"), "{stderr}");
    lab.assert_no_numio_left();
}

/// --verify across hosts: each host keeps its own verify state (its
/// XDG_STATE_HOME here, as on a machine of its own); a later --verify-only
/// finds the block damaged behind numio's back on one host, names it with
/// its host, and the run exits 1.
#[test]
fn verify_across_hosts_finds_damage_on_one_host() {
    if skip() {
        return;
    }
    let lab = SshLab::new(8, &[Numio::This, Numio::This]);
    let files: Vec<Temp> = (0..2)
        .map(|i| Temp::new(&format!("fleet-verify{i}"), 1 << 20))
        .collect();
    let target = |i: usize| format!("{}:{}", lab.hosts[i].addr, files[i].0.display());
    let (t0, t1) = (target(0), target(1));
    let write = [
        t0.as_str(),
        &t1,
        "--rw",
        "write",
        "--bs",
        "64k",
        "--iodepth",
        "4",
        "--no-time-based",
        "--verify",
        "--ramp-time",
        "0",
    ];
    let (rc, out, err) = fleet_bench(&lab, &lab.host_list(), &write);
    assert_eq!(rc, 0, "{out}{err}");
    for i in 0..2 {
        let state = lab.state_dir(i).join("numio/verify-state.json");
        assert!(state.exists(), "host {i} saved its own verify state");
    }
    // One flipped byte in host 1's file.
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(&files[1].0)
        .unwrap();
    let byte = std::fs::read(&files[1].0).unwrap()[(512 << 10) + 100];
    std::os::unix::fs::FileExt::write_all_at(&f, &[byte ^ 0x40], (512 << 10) + 100).unwrap();
    drop(f);
    let (rc, out, err) = fleet_bench(
        &lab,
        &lab.host_list(),
        &[t0.as_str(), &t1, "--verify-only", "--json"],
    );
    assert_eq!(rc, 1, "a mismatch exits 1: {err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let targets = v["merged"]["targets"].as_array().unwrap();
    let corrupt = |t: &serde_json::Value| {
        assert_eq!(t["verify"]["checked_blocks"], 2048, "{t}");
        t["verify"]["mismatched_blocks"]["corrupt"]
            .as_u64()
            .unwrap_or(0)
    };
    assert_eq!(targets.len(), 2);
    assert!(
        targets[0]["path"]
            .as_str()
            .unwrap()
            .starts_with(&format!("root@{}:", lab.hosts[0].addr)),
        "{}",
        targets[0]["path"]
    );
    assert_eq!(corrupt(&targets[0]), 0, "host 0 is whole");
    assert_eq!(corrupt(&targets[1]), 1, "host 1's flipped byte");
    assert_eq!(targets[1]["verify"]["ranges"][0]["offset_bytes"], 512 << 10);
    lab.assert_no_numio_left();
}

/// A sweep over the target's cores, repeated and saved: numio serve
/// starts on the first K CPUs of --target-cpus for each run of K, every
/// point runs twice (interleaved), the file keeps every run, and `numio
/// report` reprints the table and exports it as any sweep.
#[test]
fn sweep_over_hosts_varies_target_cores_repeats_and_saves() {
    if skip() {
        return;
    }
    let lab = SshLab::new(7, &[Numio::This, Numio::This]);
    let saved = std::env::temp_dir().join(format!("fleet-sweep-{}.json", std::process::id()));
    let saved_arg = saved.display().to_string();
    let (code, stdout, stderr) = outcome(&mut fleet_sweep(
        &lab,
        &["reactors=1,2"],
        &[1],
        &[
            "--target-cpus",
            "0,1",
            "--repeat",
            "2",
            "--save",
            &saved_arg,
        ],
        "1",
    ));
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    // The target started for each run, on those CPUs.
    assert_eq!(stderr.matches("--cpus 0)").count(), 2, "{stderr}");
    assert_eq!(stderr.matches("--cpus 0,1)").count(), 2, "{stderr}");
    assert_eq!(stderr.matches("numio serve: ready").count(), 4, "{stderr}");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&saved).unwrap()).unwrap();
    assert_eq!(v["schema"], "numio-results");
    assert_eq!(v["kind"], "sweep");
    let seqs: Vec<(String, u64)> = v["arms"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|a| {
            a["runs"].as_array().unwrap().iter().map(move |r| {
                (
                    a["label"].as_str().unwrap().to_string(),
                    r["seq"].as_u64().unwrap(),
                )
            })
        })
        .collect();
    let expect = |l: &str, n| (l.to_string(), n);
    assert_eq!(
        seqs,
        [
            expect("reactors=1", 1),
            expect("reactors=1", 3),
            expect("reactors=2", 2),
            expect("reactors=2", 4)
        ],
        "interleaved"
    );
    for a in v["arms"].as_array().unwrap() {
        for r in a["runs"].as_array().unwrap() {
            assert!(r["raw"]["total"]["ops"].as_u64().unwrap() > 0, "{r}");
            // One core of the target kept at most about one core busy.
            let c = &r["raw"]["counters"];
            let p = &c["target_process"];
            let cores = (p["user_ns"].as_f64().unwrap() + p["system_ns"].as_f64().unwrap())
                / c["window_ns"].as_f64().unwrap();
            if a["label"] == "reactors=1" {
                assert!(cores < 1.2, "{cores}");
            }
        }
    }
    // The table: where it ran, one row per point with two runs each.
    assert!(
        stdout.starts_with("initiators: numio's NVMe/TCP host on "),
        "{stdout}"
    );
    assert!(stdout.contains("target headroom"), "{stdout}");
    for point in ["reactors=1", "reactors=2"] {
        let row = stdout
            .lines()
            .find(|l| l.trim_start().starts_with(point))
            .unwrap();
        let runs = row.replace(" (knee)", "");
        assert_eq!(runs.split_whitespace().nth(1), Some("2"), "{row}");
    }
    let report = |extra: &[&str]| {
        outcome(
            Command::new(env!("CARGO_BIN_EXE_numio"))
                .args(["report", &saved_arg])
                .args(extra),
        )
    };
    let (code, text, _) = report(&[]);
    assert_eq!(code, Some(0));
    for line in stdout.lines() {
        assert!(text.contains(line), "report reprints {line:?}: {text}");
    }
    let (code, csv, err) = report(&["--csv", "-"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(csv.contains("reactors=2"), "{csv}");
    std::fs::remove_file(&saved).unwrap();
    lab.assert_no_numio_left();
}

/// Ctrl-C in the middle of a sweep over hosts stops the initiators and the
/// target: the measured part of the run is reported, and nothing is left
/// on any host.
#[test]
fn sweep_over_hosts_ctrl_c_stops_everything() {
    if skip() {
        return;
    }
    let lab = SshLab::new(5, &[Numio::This, Numio::This]);
    let mut child = fleet_sweep(&lab, &["initiators=1"], &[1], &[], "60")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let err = lines_of(child.stderr.take().unwrap());
    next_line(&err, "total");
    // SAFETY: kill(2) on our own child's pid.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let rest: Vec<String> = err.iter().collect();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", rest.join("\n"));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout
            .lines()
            .any(|l| l.trim_start().starts_with("initiators=1 ")),
        "the measured part is reported: {stdout}"
    );
    lab.assert_no_numio_left();
}

/// The controlling numio killed outright (no chance to stop anything):
/// the ssh sessions end, and every agent stops its run and exits.
#[test]
fn agents_exit_when_the_controller_dies() {
    if skip() {
        return;
    }
    let lab = SshLab::new(6, &[Numio::This, Numio::This]);
    let f = Temp::new("fleet-orphan", 16 << 20);
    let mut child = Command::new(env!("CARGO_BIN_EXE_numio"))
        .arg("bench")
        .args(["--hosts", &lab.host_list()])
        .args(lab.ssh_flags())
        .arg(&f.0)
        .args(["--runtime", "120", "--ramp-time", "0", "--iodepth", "4"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let err = lines_of(child.stderr.take().unwrap());
    next_line(&err, "total");
    let agents: Vec<u32> = (0..2).flat_map(|i| lab.processes(i, "agent")).collect();
    assert_eq!(agents.len(), 2, "one agent per host while it runs");
    // pidfds first: a pid that exits is then reported, never reused.
    let fds: Vec<i32> = agents
        .iter()
        // SAFETY: pidfd_open(2) with a pid and no flags.
        .map(|&p| unsafe { libc::syscall(libc::SYS_pidfd_open, p, 0) } as i32)
        .collect();
    child.kill().unwrap();
    child.wait().unwrap();
    for (fd, pid) in fds.into_iter().zip(agents) {
        if fd < 0 {
            continue; // it had already exited
        }
        let mut p = libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd; the pidfd is readable once the process
        // has exited.
        let n = unsafe { libc::poll(&mut p, 1, 60_000) };
        assert_eq!(
            n, 1,
            "agent {pid} still runs a minute after its controller died"
        );
        // SAFETY: closing the pidfd we opened.
        unsafe { libc::close(fd) };
    }
}
