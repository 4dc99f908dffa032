//! Ctrl-C keeps the run: the real binary gets SIGINT (or SIGTERM) while it
//! measures a 30 s run and must print a valid report of the time measured,
//! marked interrupted, then exit 128 + the signal.
//!
//! No test waits for a clock: each waits for numio's own word on stderr
//! (the `numio: set-up done; …` line when the workers pass the start
//! barrier, or a `--progress always` line showing measured I/O), then
//! signals. A fixed one-second sleep once landed 0.05 s into measuring on
//! a busy machine, and the report then covered too little to check.

mod common;

use common::running::Running;
use common::Temp;
use std::time::Duration;

/// The workers passed the start barrier.
fn set_up_done(line: &str) -> bool {
    line.starts_with("numio: set-up done;")
}

/// A progress line (`[  1.0s / 30.0s, 29.0s left] 1.23M IOPS  …`) of the
/// measured part showing I/O: each worker has published twice, 250 ms
/// apart, so at least that much was measured.
fn measured_io(line: &str) -> bool {
    let iops = line
        .split(" IOPS")
        .next()
        .and_then(|head| head.rsplit(' ').next());
    line.starts_with('[') && !line.contains("(ramp)") && iops.is_some_and(|v| v != "0")
}

/// Starts numio with `args` and `--progress always`, waits until it has
/// measured I/O, and signals it.
fn interrupt_measuring(args: &[&str], signal: i32) -> (i32, String, String, Duration) {
    let mut args = args.to_vec();
    args.extend(["--progress", "always"]);
    let numio = Running::start(&args);
    numio.wait_for(1, "the set-up done line", set_up_done);
    numio.wait_for(1, "a progress line with measured I/O", measured_io);
    numio.signal_and_wait(signal)
}

fn check_interrupted_json(code: i32, want_code: i32, out: &str, err: &str, took: Duration) {
    assert_eq!(code, want_code, "exit status; stderr: {err}");
    // Far below the 30 s planned: the run stopped at the signal.
    assert!(took < Duration::from_secs(10), "stopped in {took:?}");
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
    let (code, out, err, took) = interrupt_measuring(&args, libc::SIGINT);
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
    let (code, out, err, took) = interrupt_measuring(&args, libc::SIGINT);
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
    let (code, out, err, took) = interrupt_measuring(&args, libc::SIGTERM);
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
    let (code, out, err, _) = interrupt_measuring(&args, libc::SIGINT);
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
    // Signal once run 2 has passed its start barrier: run 1 is complete.
    let numio = Running::start(&args);
    numio.wait_for(2, "run 2's set-up done line", set_up_done);
    let (code, out, err, took) = numio.signal_and_wait(libc::SIGINT);
    assert_eq!(code, 130, "{err}");
    assert!(took < Duration::from_secs(10), "stopped in {took:?}");
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
    // The signal lands in a run (left out) or, rarely, between two runs;
    // either way the user is told how many runs the report covers.
    let told = format!("reporting the {} completed runs", runs.len());
    assert!(err.contains(&told), "{err}");
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
        "--ramp-time",
        "30s",
        "--runtime",
        "1s",
        "--json",
    ];
    let numio = Running::start(&args);
    let line = numio.wait_for(1, "the set-up done line", set_up_done);
    assert_eq!(
        line, "numio: set-up done; 30s ramp, then measuring for 1s",
        "the line says what follows"
    );
    let (code, out, err, _) = numio.signal_and_wait(libc::SIGINT);
    assert_eq!(code, 130, "{err}");
    let j: serde_json::Value = serde_json::from_str(&out).expect("a valid JSON report");
    assert_eq!(j["interrupted"], true);
    let notes = j["environment"]["notes"].to_string();
    assert!(notes.contains("interrupted during the ramp"), "{notes}");
}
