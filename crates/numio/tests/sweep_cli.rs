//! `numio sweep` end to end through the binary: the null backend over
//! jobs=1,2, its JSON, CSV, chart, saved file (reprinted and compared),
//! goal, the jobs cap, Ctrl-C and bad input.

mod common;

use common::running::Running;
use common::{numio, Temp};

#[test]
fn a_jobs_sweep_on_the_null_backend_scales_and_counts_headroom() {
    let t = Temp::new("sweep", 16 << 20);
    let chart = std::env::temp_dir().join(format!("numio-sweep-test-{}.svg", std::process::id()));
    let (code, out, err) = numio(&[
        "sweep",
        "jobs=1,2",
        t.path(),
        "--backend",
        "null",
        "--runtime",
        "400ms",
        "--json",
        "--chart",
        chart.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let j: serde_json::Value = serde_json::from_str(&out).expect("valid JSON");
    let points = j["sweeps"][0]["points"].as_array().unwrap();
    assert_eq!(points.len(), 2);
    assert_eq!(points[0]["label"], "jobs=1");
    assert_eq!(points[1]["x"], 2.0);
    let (h1, h2) = (
        points[0]["cpu_headroom_pct"].as_f64().unwrap(),
        points[1]["cpu_headroom_pct"].as_f64().unwrap(),
    );
    assert!(
        (0.0..=100.0).contains(&h1) && (0.0..=100.0).contains(&h2),
        "{h1} {h2}"
    );
    // A second spinning worker never leaves more of the machine idle.
    assert!(h2 <= h1 + 5.0, "headroom {h1} % at 1 job, {h2} % at 2");
    assert!(points[1]["efficiency"].as_f64().unwrap() > 0.0);
    assert_eq!(j["results"]["arms"].as_array().unwrap().len(), 2);
    let svg = std::fs::read_to_string(&chart).expect("chart written");
    let _ = std::fs::remove_file(&chart);
    assert!(
        svg.contains("<svg") && svg.contains("CPU headroom"),
        "{svg}"
    );
}

#[test]
fn bad_sweeps_are_named_with_exit_status_2() {
    let t = Temp::new("sweep-bad", 1 << 20);
    let cases: &[(&[&str], &str)] = &[
        (&["cores=1,2"], "unknown axis `cores`"),
        (&["jobs=1,1"], "1 is repeated"),
        (&["jobs="], "empty value"),
        (&["devices=1,2"], "devices=2: only 1 targets given"),
        (&["iodepth=1,x"], "iodepth=x: not a whole number"),
        (&["jobs=1", "--knee", "1.5"], "--knee 1.5"),
        (&["jobs=1,2", "--cpus", "0"], "jobs=1,2 with --cpus 0"),
        (
            &["iodepth=1", "--cpus", "0", "--numa", "spread"],
            "drop --numa",
        ),
        (&["jobs=1", "--target-iops", "lots"], "--target-iops lots"),
        (
            &["jobs=1", "--target-iops", "1", "--target-bw", "1G"],
            "give one goal",
        ),
        // Across hosts (refused before any ssh).
        (&["initiators=1,2"], "initiators=1,2 without --hosts"),
        (
            &["iodepth=1", "--target-host", "t"],
            "--target-host t without --hosts",
        ),
        (&["devices=1", "--hosts", "a"], "devices= with --hosts"),
        (
            &["initiators=1,3", "--hosts", "a,b"],
            "initiators=1,3: 3 is not a count from 1 to 2 (the hosts given)",
        ),
        (
            &["iodepth=1", "--hosts", "a", "--target-host", "t"],
            "with --target-host: the hosts reach the namespace numio serve serves there",
        ),
        (
            &["reactors=1", "--hosts", "a"],
            "reactors=1 with --hosts: name the host that serves, --target-host HOST",
        ),
        (
            &["iodepth=1", "--hosts", "a", "--stack", "kernel"],
            "--stack kernel on a: its kernel connects to one NVMe-oF namespace",
        ),
        (&["iodepth=1", "--hosts", "a", "--cpus", "0"], "drop --cpus"),
    ];
    for (extra, want) in cases {
        let mut a = vec!["sweep", t.path(), "--backend", "null", "--runtime", "100ms"];
        a.extend_from_slice(extra);
        let (code, _, err) = numio(&a);
        assert_eq!(code, 2, "{extra:?}: {err}");
        assert!(err.contains(want), "{extra:?}: {err}");
    }
}

/// `numio fabric` is gone: a command line written for it is answered
/// with the sweep that does the same.
#[test]
fn numio_fabric_names_the_sweep_that_replaced_it() {
    let (code, _, err) = numio(&["fabric", "--target", "t", "--initiators", "a,b"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains(
            "numio sweep initiators=1,2 reactors=1,2,4 --hosts INI1,INI2 --target-host TGT"
        ),
        "{err}"
    );
}

#[test]
fn a_grid_over_1000_points_needs_allow_large_grid() {
    let depths: Vec<String> = (1..=40).map(|d| d.to_string()).collect();
    let sizes: Vec<String> = (1..=30).map(|k| format!("{}k", 4 * k)).collect();
    let (a, b) = (
        format!("iodepth={}", depths.join(",")),
        format!("bs={}", sizes.join(",")),
    );
    let (code, _, err) = numio(&["sweep", &a, &b, "--backend", "null"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("1200 points: more than 1000; narrow the axes or add --allow-large-grid"),
        "{err}"
    );
}

#[test]
fn more_jobs_than_the_node_has_are_warned_and_capped() {
    let t = Temp::new("sweep-cap", 4 << 20);
    let (code, out, err) = numio(&[
        "sweep",
        "jobs=1,4096",
        t.path(),
        "--backend",
        "null",
        "--runtime",
        "100ms",
        "--json",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("jobs=4096: more cores than the"), "{err}");
    let j: serde_json::Value = serde_json::from_str(&out).expect("valid JSON");
    let points = j["sweeps"][0]["points"].as_array().unwrap();
    let last = points.last().unwrap();
    let cap = last["cores"].as_u64().unwrap();
    assert!(
        cap < 4096 && last["label"] == format!("jobs={cap}"),
        "{last}"
    );
}

#[test]
fn a_saved_sweep_reprints_compares_point_by_point_and_meets_its_goal() {
    let t = Temp::new("sweep-save", 16 << 20);
    let dir = std::env::temp_dir();
    let id = std::process::id();
    let (saved, csv) = (
        dir.join(format!("numio-sweep-save-{id}.json")),
        dir.join(format!("numio-sweep-save-{id}.csv")),
    );
    let (saved_s, csv_s) = (saved.to_str().unwrap(), csv.to_str().unwrap());
    let (code, out, err) = numio(&[
        "sweep",
        "iodepth=1,4",
        t.path(),
        "--backend",
        "null",
        "--runtime",
        "200ms",
        "--repeat",
        "2",
        "--save",
        saved_s,
        "--csv",
        csv_s,
        "--target-iops",
        "1",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("numio sweep over iodepth"), "{out}");
    assert!(
        out.contains("goal 1 IOPS: reached first at iodepth=1"),
        "{out}"
    );
    assert!(
        out.contains("IOPS/core") && out.contains("p99.9 µs"),
        "{out}"
    );
    let rows = std::fs::read_to_string(&csv).expect("CSV written");
    assert_eq!(rows.lines().count(), 3, "{rows}");
    assert!(
        rows.lines().nth(2).unwrap().starts_with(",iodepth=4,4,2,"),
        "{rows}"
    );
    let (code, again, err) = numio(&["report", saved_s]);
    assert_eq!(code, 0, "{err}");
    assert!(
        again.contains("numio results: sweep") && again.contains("numio sweep over iodepth"),
        "{again}"
    );
    let (a, b) = (
        format!("result={saved_s}"),
        format!("result={saved_s},label=again"),
    );
    let (code, cmp, err) = numio(&["compare", "--a", &a, "--b", &b]);
    assert_eq!(code, 0, "{err}");
    assert!(cmp.contains("point by point (2 points both ran)"), "{cmp}");
    assert!(cmp.contains("iodepth=4"), "{cmp}");
    let _ = (std::fs::remove_file(&saved), std::fs::remove_file(&csv));
}

#[test]
fn ctrl_c_keeps_the_points_measured_and_marks_the_sweep_interrupted() {
    let t = Temp::new("sweep-int", 16 << 20);
    let numio = Running::start(&[
        "sweep",
        "jobs=1,2",
        t.path(),
        "--backend",
        "null",
        "--runtime",
        "300ms",
        "--json",
        "--repeat",
        "20",
        "--progress",
        "never",
    ]);
    // Signal once run 2 (jobs=2) measures: run 1 (jobs=1) is complete.
    numio.wait_for(2, "run 2's set-up done line", |l| {
        l.starts_with("numio: set-up done;")
    });
    let (code, out, err, _) = numio.signal_and_wait(libc::SIGINT);
    assert_eq!(code, 130, "{err}");
    assert!(
        err.contains("numio: sweep run 2 of 40: point jobs=2 (2 of 2), repeat 1 of 20; sweep ETA "),
        "{err}"
    );
    assert!(err.contains("the result is marked interrupted"), "{err}");
    let j: serde_json::Value = serde_json::from_str(&out).expect("valid JSON");
    assert_eq!(j["results"]["sweep"]["interrupted"], true, "{out}");
    assert_eq!(j["results"]["kind"], "sweep");
    let points = j["sweeps"][0]["points"].as_array().unwrap();
    assert_eq!(points[0]["label"], "jobs=1", "{out}");
    assert!(points[0]["runs"].as_u64().unwrap() >= 1);
    let findings = j["sweeps"][0]["findings"].to_string();
    assert!(findings.contains("interrupted: "), "{findings}");
}
