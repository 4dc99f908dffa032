//! `numio coalesce sweep` through the binary where no NVMe drive is at
//! hand: every bad input is named with exit status 2 before anything
//! changes (no state file is written), and a saved coalescing sweep (built
//! here as the sweep saves one) is reprinted, redrawn and compared by
//! `numio report` and `numio compare`. The sweep on real controllers is
//! proven in the VM lab (tests/vm/tests/coalesce/2*.sh).

mod common;

use std::path::{Path, PathBuf};

use report::coalesce::{CoalesceSpec, LatencyBudget, DEVICES_AXIS, THRESHOLD_AXIS};
use report::{
    Arm, LatencyPoint, ResultSet, RunRecord, SetKind, SweepAxis, SweepSpec, TargetMetrics,
};

/// A directory removed on drop.
struct Dir(PathBuf);

impl Dir {
    fn new(tag: &str) -> Dir {
        let p = std::env::temp_dir().join(format!("numio-coalesce-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        Dir(p)
    }
    fn file(&self, name: &str) -> String {
        self.0.join(name).to_string_lossy().into_owned()
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// numio with its state directory at `state` (so a test sees any record).
fn numio_in(state: &Path, args: &[&str]) -> (i32, String, String) {
    common::numio_env(&[("NUMIO_STATE_DIR", &state.display().to_string())], args)
}

#[test]
fn bad_sweeps_are_named_with_exit_status_2_and_nothing_recorded() {
    let state = Dir::new("bad-state");
    let file = common::Temp::new("coalesce-bad", 1 << 20);
    let two = ["/dev/nvme0n1", "/dev/nvme1n1"];
    let cases: &[(&[&str], &str)] = &[
        (&[], "no targets: give the NVMe namespaces to sweep"),
        (&["--threshold", "0,256"], "--threshold 256: above 255"),
        (&["--threshold", "3,3"], "3 is repeated"),
        (&["--devices", "0,1"], "--devices 0,1: 0 drives run nothing"),
        (
            &["--devices", "1,3"],
            "--devices 1,3: 3 drives, but 2 targets given (/dev/nvme0n1, /dev/nvme1n1); name more targets",
        ),
        (&["--time", "150us"], "--time 150us: not a multiple of 100 µs"),
        (&["--time", "26ms"], "--time 26ms: above 25.5 ms"),
        (&["--time", "1s"], "--time 1s: expected a number"),
        (&["--time", "0"], "--time 0: 0 means no delay"),
        (&["--max-latency", "p99.99"], "--max-latency p99.99: no `=`"),
        (&["--max-latency", "p100=2ms"], "`p100` is not a percentile"),
        (&["--max-latency", "p99=2"], "`2` has no unit"),
        (&["--repeat", "0"], "--repeat 0: give 1 or more"),
        (&["--backend", "null"], "--backend null: it does no I/O through the drives' PCIe queues"),
        (&["--chart", "x.txt"], "--chart x.txt: write a chart to a .svg or .png file"),
        (&["--iodepth", "0"], "--iodepth=0: must be at least 1"),
    ];
    for (extra, want) in cases {
        let mut a = vec!["coalesce", "sweep"];
        if !extra.is_empty() {
            a.extend_from_slice(&two);
        }
        a.extend_from_slice(extra);
        let (code, out, err) = numio_in(&state.0, &a);
        assert_eq!(code, 2, "{extra:?}: {err}");
        assert!(err.contains(want), "{extra:?}: {err}");
        assert!(out.is_empty(), "{extra:?}: {out}");
    }
    let (code, _, err) = numio_in(&state.0, &["coalesce", "sweep", two[0], two[1], two[0]]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("/dev/nvme0n1 is given twice (targets 1 and 3)"),
        "{err}"
    );
    // A file is no NVMe namespace: refused by name, before any change.
    let (code, _, err) = numio_in(
        &state.0,
        &["coalesce", "sweep", file.path(), "--runtime", "1s"],
    );
    assert_eq!(code, 2, "{err}");
    assert!(err.contains(file.path()), "{err}");
    let left: Vec<_> = std::fs::read_dir(&state.0).unwrap().collect();
    assert!(
        left.is_empty(),
        "bad input wrote to the state directory: {left:?}"
    );
}

/// One drive's metrics at `threshold` with `devices` busy: the IOPS per
/// drive climb with the threshold once several drives are busy, and
/// interrupts per I/O fall as 1 / (threshold + 1).
fn metrics(target: &str, threshold: u8, devices: usize, run: usize, total: bool) -> TargetMetrics {
    let t = f64::from(threshold);
    let per_drive = if devices == 1 {
        480_000.0
    } else {
        300_000.0 + 40_000.0 * t.min(5.0)
    };
    let iops = per_drive * if total { devices as f64 } else { 1.0 } + 1000.0 * run as f64;
    let lat = |base: f64| (base + 5.0 * t) * 1000.0;
    let pcts = [
        (50.0, lat(90.0)),
        (95.0, lat(200.0)),
        (99.0, lat(300.0)),
        (99.99, lat(900.0)),
    ];
    TargetMetrics {
        target: target.into(),
        iops,
        bandwidth_bytes_per_s: iops * 4096.0,
        lat_mean_ns: lat(100.0),
        lat_p99_ns: lat(300.0),
        percentiles: pcts
            .iter()
            .map(|&(percentile, latency_ns)| LatencyPoint {
                percentile,
                latency_ns,
            })
            .collect(),
        per_io: results::PerIo {
            interrupts: Some(1.0 / (t + 1.0)),
            worker_ctx_switches: Some(0.4 / (t + 1.0)),
            machine_ctx_switches: total.then_some(0.8 / (t + 1.0)),
            worker_cpu_ns: Some(1800.0),
            machine_cpu_ns: total.then_some(2400.0 + 1200.0 / (t + 1.0)),
            cpu_headroom_pct: total.then_some(35.0),
            ..Default::default()
        },
    }
}

/// A saved coalescing sweep as `numio coalesce sweep --save` writes one:
/// thresholds 0, 3, 9 on 1 and 2 drives, three runs each, interleaved.
fn saved_sweep(path: &str) {
    let (thresholds, devices) = ([0u8, 3, 9], [1usize, 2]);
    let targets = ["/dev/nvme0n1", "/dev/nvme1n1"];
    let mut arms = Vec::new();
    for (j, &d) in devices.iter().enumerate() {
        for (i, &t) in thresholds.iter().enumerate() {
            let label = format!("threshold={t} devices={d}");
            let runs = (0..3)
                .map(|r| RunRecord {
                    seq: r * 6 + j * 3 + i + 1,
                    started_unix_s: 1_700_000_000,
                    targets: targets[..d]
                        .iter()
                        .map(|p| metrics(p, t, d, r, false))
                        .collect(),
                    total: metrics("total", t, d, r, true),
                    raw: None,
                })
                .collect();
            arms.push(Arm {
                spec: label.clone(),
                label,
                runs,
            });
        }
    }
    let axis = |name: &str, values: Vec<String>| SweepAxis {
        name: name.into(),
        xs: values.iter().map(|v| v.parse().unwrap()).collect(),
        values,
    };
    let mut set = ResultSet::new(
        SetKind::Sweep,
        "numio coalesce sweep /dev/nvme0n1 /dev/nvme1n1 --threshold 0,3,9 --devices 1,2 --repeat 3",
        1_700_000_000,
        arms,
    );
    set.sweep = Some(SweepSpec {
        axes: vec![
            axis(
                THRESHOLD_AXIS,
                thresholds.iter().map(u8::to_string).collect(),
            ),
            axis(DEVICES_AXIS, devices.iter().map(usize::to_string).collect()),
        ],
        knee_efficiency: 0.8,
        cores: vec![1, 1, 1, 2, 2, 2],
        goal: None,
        interrupted: false,
        fleet: None,
    });
    set.coalesce = Some(CoalesceSpec {
        time_us: 100,
        targets: targets.map(String::from).to_vec(),
        controllers: vec![vec!["nvme0".into()], vec!["nvme1".into()]],
        max_latency: vec![LatencyBudget {
            percentile: 99.99,
            max_ns: 930_000.0,
        }],
    });
    report::file::save(&set, Path::new(path)).unwrap();
}

#[test]
fn a_saved_coalescing_sweep_reprints_redraws_and_compares() {
    let dir = Dir::new("saved");
    let (saved, chart) = (dir.file("sweep.json"), dir.file("sweep.svg"));
    saved_sweep(&saved);
    let (code, out, err) = common::numio(&["report", &saved, "--chart", &chart]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("numio coalesce sweep: 1 device at once (/dev/nvme0n1; controllers nvme0)"),
        "{out}"
    );
    assert!(
        out.contains("numio coalesce sweep: 2 devices at once"),
        "{out}"
    );
    // One drive gains nothing: off stays.
    assert!(out.contains("recommendation: leave it off"), "{out}");
    // Two drives: threshold 9 is best, but p99.99 (945 µs) misses the
    // 930 µs budget; threshold 3 (915 µs) keeps it.
    assert!(out.contains("9 (10 I/Os) (over budget)"), "{out}");
    assert!(out.contains("3 (4 I/Os) (recommended)"), "{out}");
    assert!(out.contains("recommendation: threshold 3 (an interrupt per 4 completions, or 100 µs after the first)"), "{out}");
    assert!(
        out.contains(
            "interrupts per I/O fall from 1.000 (off) to 0.100 at threshold 9: 10 % of off's"
        ),
        "{out}"
    );
    assert!(
        out.contains(
            "set it: numio coalesce set /dev/nvme0n1 /dev/nvme1n1 --threshold 3 --time 100us"
        ),
        "{out}"
    );
    let svg = std::fs::read_to_string(&chart).expect("chart written");
    assert!(
        svg.contains("numio coalesce sweep: thresholds at aggregation time 100 µs"),
        "{svg}"
    );
    assert!(svg.contains("dashed: budget p99.99 ≤ 930 µs"), "{svg}");

    let (code, json, err) = common::numio(&["report", &saved, "--json"]);
    assert_eq!(code, 0, "{err}");
    let j: serde_json::Value = serde_json::from_str(&json).expect("valid JSON");
    let two = &j["analysis"]["coalesce"]["tables"][1];
    assert_eq!(two["recommendation"]["threshold"], 3, "{two}");
    assert_eq!(two["rows"][1]["drives"].as_array().unwrap().len(), 2);
    assert_eq!(j["coalesce"]["time_us"], 100);

    let (a, b) = (
        format!("result={saved}"),
        format!("result={saved},label=again"),
    );
    let (code, cmp, err) = common::numio(&["compare", "--a", &a, "--b", &b]);
    assert_eq!(code, 0, "{err}");
    assert!(cmp.contains("point by point (6 points both ran)"), "{cmp}");
    assert!(cmp.contains("threshold=9 devices=2"), "{cmp}");
}
