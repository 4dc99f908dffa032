//! `numio sweep` end to end through the binary: the null backend over
//! jobs=1,2, its JSON, chart and bad input.

mod common;

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
    ];
    for (extra, want) in cases {
        let mut a = vec!["sweep", t.path(), "--backend", "null", "--runtime", "100ms"];
        a.extend_from_slice(extra);
        let (code, _, err) = numio(&a);
        assert_eq!(code, 2, "{extra:?}: {err}");
        assert!(err.contains(want), "{extra:?}: {err}");
    }
}
