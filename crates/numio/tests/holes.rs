//! The holes a careful tester found (issue #16), end to end through the
//! binary: each test reproduces one and pins its fix.

mod common;

use common::{numio, Temp};

/// Issue #16: several errors printed the OS error text twice (the message
/// held it, and so did its source, which the error chain printed again).
#[test]
fn errors_print_the_os_error_text_once() {
    let fio = std::env::temp_dir().join(format!("numio-holes-{}-none.fio", std::process::id()));
    let fio = fio.to_str().unwrap();
    // A missing target is said once in numio's words (issue 39: with
    // --size it would be laid out, as fio does).
    let (code, _, err) = numio(&["bench", "/nonexistent/numio-target", "--runtime", "1s"]);
    assert_eq!(code, 2, "{err}");
    assert_eq!(err.matches("does not exist").count(), 1, "{err}");
    for args in [
        vec!["bench", fio],
        vec!["plan", "--fio", fio],
        vec!["bench", "--plan", "/nonexistent/plan.json"],
        vec!["report", "/nonexistent/r.json"],
    ] {
        let (code, _, err) = numio(&args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert_eq!(
            err.matches("No such file or directory").count(),
            1,
            "{args:?}: {err}"
        );
    }
}

/// Issue #16: `numio plan /nonexistent` succeeded and called it a regular
/// file.
#[test]
fn plan_refuses_a_target_that_does_not_exist() {
    let (code, out, err) = numio(&["plan", "/nonexistent/numio-target"]);
    assert_eq!(code, 2, "{out}{err}");
    assert!(
        err.contains("/nonexistent/numio-target does not exist") && !err.contains("regular file"),
        "{err}"
    );
    let t = Temp::new("plan-exists", 1 << 20);
    let (code, _, err) = numio(&["plan", t.path()]);
    assert_eq!(code, 0, "an existing file plans: {err}");
}

/// Issue #16: `numio serve --cpus 99` warned and served unpinned where
/// `numio bench --cpus 99` refuses.
#[test]
fn serve_refuses_cpus_it_cannot_run_on() {
    use std::io::BufRead;
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_numio"))
        .args(["serve", "--ns", "mem:1M", "--cpus", "999", "--listen"])
        .args(["127.0.0.1:0", "--discovery-port", "0"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("numio runs");
    // The bug: serve starts and says it is ready. Stop it there.
    let stdout = std::io::BufReader::new(child.stdout.take().unwrap());
    for line in stdout.lines().map_while(Result::ok) {
        if line.contains("ready") {
            let _ = child.kill();
            let _ = child.wait();
            panic!("numio serve started on CPU 999: {line}");
        }
    }
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("--cpus: CPU 999 is not one this process may run on"),
        "{err}"
    );
}

/// Issue #16: `--repeat 0`, `--batch-complete 0` and `--chart out.xyz` were
/// accepted silently (one run, a reap that waits for nothing, an SVG under
/// a name that says otherwise).
#[test]
fn zero_repeats_zero_batches_and_unknown_chart_formats_are_refused() {
    let t = Temp::new("flags", 1 << 20);
    let report = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/results/engine_run.json");
    let report = report.to_str().unwrap();
    let cases: &[(&[&str], &str)] = &[
        (
            &["bench", t.path(), "--repeat", "0", "--runtime", "100ms"],
            "--repeat=0: give 1 to 1000 runs",
        ),
        (
            &["bench", t.path(), "--batch-complete", "0"],
            "--batch-complete=0: give 1 to 4096 completions",
        ),
        (
            &["bench", t.path(), "--chart", "out.xyz"],
            "--chart=out.xyz: write a chart to a .svg or .png file",
        ),
        (
            &["report", report, "--chart", "out.xyz"],
            "--chart=out.xyz: write a chart to a .svg or .png file",
        ),
        (
            &[
                "compare",
                "--a",
                "policy=local",
                "--b",
                "policy=none",
                t.path(),
                "--chart",
                "x",
            ],
            "--chart=x: write a chart to a .svg or .png file",
        ),
    ];
    for (args, needle) in cases {
        let (code, _, err) = numio(args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: {err}");
    }
}

/// Issue #16: `--jobs` had no upper bound (`--jobs 10000` reached 8.1 GB
/// with 5,135 threads); one target takes 4096, a run 4096 in all.
#[test]
fn jobs_are_bounded_per_target_and_in_all() {
    let t = Temp::new("jobs", 1 << 20);
    let (code, _, err) = numio(&["bench", t.path(), "--jobs", "10000", "--runtime", "1s"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("--numjobs=10000: must be at least 1 and at most 4096"),
        "{err}"
    );
    let (code, _, err) = numio(&["plan", t.path(), t.path(), "--jobs", "4096"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("8192 jobs in all (2 targets); one run takes at most 4096"),
        "{err}"
    );
}

/// Issue #16: with its NVMe/TCP target killed mid-run, numio ended with
/// exit 2 and no report (the loop's error dropped every number). Now the
/// run ends at once, reports what it measured, counts the I/Os then in
/// flight as errors and exits 1.
#[test]
fn a_tcp_target_killed_mid_run_still_gets_its_report() {
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};
    let bin = env!("CARGO_BIN_EXE_numio");
    let mut serve = Command::new(bin)
        .args(["serve", "--ns", "mem:16M", "--listen", "127.0.0.1:0"])
        .args(["--discovery-port", "0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("numio serve runs");
    let mut port = None;
    for line in BufReader::new(serve.stdout.take().unwrap()).lines() {
        let line = line.unwrap();
        if let Some(p) = line.strip_prefix("numio serve: NVMe/TCP listening on 127.0.0.1:") {
            port = Some(p.trim().to_string());
        }
        if line.contains("ready") {
            break;
        }
    }
    let url = format!(
        "nvme-tcp://127.0.0.1:{}/nqn.2026-01.io.numio:subsys0/1",
        port.expect("serve says its port")
    );
    let mut bench = Command::new(bin)
        .args([
            "bench",
            &url,
            "--backend",
            "tcp",
            "--iodepth",
            "8",
            "--runtime",
            "60s",
        ])
        .args(["--progress", "always", "--json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("numio bench runs");
    // The event: a progress line with I/O done; then the target goes.
    let mut err = BufReader::new(bench.stderr.take().unwrap());
    let mut line = String::new();
    while err.read_line(&mut line).unwrap() > 0 {
        if line.contains("IOPS") && !line.contains(" 0 IOPS") {
            break;
        }
        line.clear();
    }
    serve.kill().unwrap();
    serve.wait().unwrap();
    let killed = std::time::Instant::now();
    let out = bench.wait_with_output().unwrap();
    let after = killed.elapsed();
    assert!(after.as_secs() < 10, "bench ended {after:?} after the kill");
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("a JSON report");
    assert!(v["total"]["ops"].as_u64().unwrap() > 0, "{v}");
    // The I/Os in flight (8), as the socket's error (ECONNRESET) or EIO.
    let e = &v["errors"][0];
    assert!(e["name"] == "ECONNRESET" || e["name"] == "EIO", "{e}");
    assert_eq!(e["count"], 8, "{e}");
    let notes = v["environment"]["notes"].to_string();
    assert!(notes.contains("the I/O loop ended early"), "{notes}");
}
