//! Ctrl-C keeps the run: the real binary gets SIGINT (or SIGTERM) a second
//! into a 30 s run and must print a valid report of the time measured,
//! marked interrupted, then exit 128 + the signal.

mod common;

use common::Temp;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Runs numio with `args`, sends `signal` after `after`, and returns the exit
/// code, stdout, stderr and how long it took from the signal to the exit.
fn interrupt(args: &[&str], signal: i32, after: Duration) -> (i32, String, String, Duration) {
    let child = Command::new(env!("CARGO_BIN_EXE_numio"))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("numio starts");
    std::thread::sleep(after);
    let pid = i32::try_from(child.id()).expect("pid fits");
    // SAFETY: kill(2) on the pid of our own child, which has not been
    // waited for yet, so the pid cannot have been reused.
    assert_eq!(unsafe { libc::kill(pid, signal) }, 0, "signal delivered");
    let sent = Instant::now();
    let out = child.wait_with_output().expect("numio exits");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        sent.elapsed(),
    )
}

fn check_interrupted_json(code: i32, want_code: i32, out: &str, err: &str, took: Duration) {
    assert_eq!(code, want_code, "exit status; stderr: {err}");
    assert!(took < Duration::from_secs(5), "stopped in {took:?}");
    let j: serde_json::Value = serde_json::from_str(out).expect("a valid JSON report");
    assert_eq!(j["interrupted"], true, "{out}");
    let ops = j["total"]["ops"].as_u64().expect("total.ops");
    assert!(ops > 0, "I/O was measured before the signal: {out}");
    let runtime_s = j["runtime_ns"].as_u64().expect("runtime_ns") as f64 / 1e9;
    assert!(
        (0.2..10.0).contains(&runtime_s),
        "the report covers the time measured ({runtime_s}s), not the planned 30 s"
    );
    let iops = j["total"]["iops"].as_f64().unwrap();
    let expect = ops as f64 / runtime_s;
    assert!(
        (iops - expect).abs() <= expect * 0.01,
        "IOPS over the measured time: {iops} vs {expect}"
    );
    assert!(err.contains("stopping"), "the user is told: {err}");
}

#[test]
fn sigint_keeps_the_run_uring_on_a_file() {
    let t = Temp::new("uring", 64 << 20);
    let args = [
        "bench",
        t.path(),
        "--backend",
        "uring",
        "--runtime",
        "30s",
        "--iodepth",
        "8",
        "--json",
    ];
    let (code, out, err, took) = interrupt(&args, libc::SIGINT, Duration::from_secs(1));
    check_interrupted_json(code, 130, &out, &err, took);
}

#[test]
fn sigint_keeps_the_run_null_backend() {
    let t = Temp::new("null", 16 << 20);
    let args = [
        "bench",
        t.path(),
        "--backend",
        "null",
        "--runtime",
        "30s",
        "--json",
    ];
    let (code, out, err, took) = interrupt(&args, libc::SIGINT, Duration::from_secs(1));
    check_interrupted_json(code, 130, &out, &err, took);
}

#[test]
fn sigterm_keeps_the_run_with_exit_143() {
    let t = Temp::new("term", 16 << 20);
    let args = [
        "bench",
        t.path(),
        "--backend",
        "sync",
        "--runtime",
        "30s",
        "--json",
    ];
    let (code, out, err, took) = interrupt(&args, libc::SIGTERM, Duration::from_secs(1));
    check_interrupted_json(code, 143, &out, &err, took);
}

#[test]
fn sigint_human_report_says_interrupted() {
    let t = Temp::new("human", 16 << 20);
    let args = [
        "bench",
        t.path(),
        "--backend",
        "sync",
        "--runtime",
        "30s",
        "--iodepth",
        "4",
    ];
    let (code, out, err, _) = interrupt(&args, libc::SIGINT, Duration::from_secs(1));
    assert_eq!(code, 130, "{err}");
    assert!(
        out.contains("interrupted: stopped early after") && out.contains("of 30.00s planned"),
        "{out}"
    );
    assert!(out.contains("IOPS"), "the normal report follows: {out}");
}

#[test]
fn sigint_during_repeat_reports_the_completed_runs() {
    let t = Temp::new("repeat", 16 << 20);
    let args = [
        "bench",
        t.path(),
        "--backend",
        "null",
        "--runtime",
        "400ms",
        "--repeat",
        "20",
        "--json",
    ];
    let (code, out, err, took) = interrupt(&args, libc::SIGINT, Duration::from_millis(1500));
    assert_eq!(code, 130, "{err}");
    assert!(took < Duration::from_secs(5), "stopped in {took:?}");
    let j: serde_json::Value = serde_json::from_str(&out).expect("a valid JSON result set");
    let runs = j["arms"][0]["runs"]
        .as_array()
        .unwrap_or_else(|| panic!("runs in {out}"));
    assert!(
        (1..20).contains(&runs.len()),
        "{} completed runs reported",
        runs.len()
    );
    for r in runs {
        assert_ne!(r["raw"]["interrupted"], true, "the cut-off run is left out");
    }
    assert!(err.contains("it is left out; reporting the"), "{err}");
}

/// Interrupted in the warm-up: the report must not pass warm-up I/O off as
/// measured without saying so.
#[test]
fn sigint_during_the_ramp_says_so() {
    let t = Temp::new("ramp", 16 << 20);
    let args = [
        "bench",
        t.path(),
        "--backend",
        "null",
        "--ramp",
        "30s",
        "--runtime",
        "1s",
        "--json",
    ];
    let (code, out, err, _) = interrupt(&args, libc::SIGINT, Duration::from_secs(1));
    assert_eq!(code, 130, "{err}");
    let j: serde_json::Value = serde_json::from_str(&out).expect("a valid JSON report");
    assert_eq!(j["interrupted"], true);
    let notes = j["environment"]["notes"].to_string();
    assert!(notes.contains("interrupted during the ramp"), "{notes}");
}
