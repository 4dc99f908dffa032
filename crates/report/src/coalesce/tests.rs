//! Unit tests of the coalescing sweep: rows from runs, the recommendation
//! rule (the smallest threshold within the best's interval, the latency
//! budget, "leave it off"), the table, the JSON and the saved file.

use super::*;
use crate::model::{LatencyPoint, RunRecord, SetKind, SweepAxis, SweepSpec};
use crate::Exporter;

/// What one drive measured in one run at one threshold.
#[derive(Clone, Copy)]
struct Drive {
    iops: f64,
    /// clat p50, p95, p99, p99.99 in µs.
    lat_us: [f64; 4],
    interrupts_per_io: f64,
}

fn metrics(target: &str, d: Drive, total: bool) -> TargetMetrics {
    let percentiles = PERCENTILES
        .iter()
        .zip(d.lat_us)
        .map(|(&percentile, us)| LatencyPoint {
            percentile,
            latency_ns: us * 1000.0,
        })
        .collect();
    TargetMetrics {
        target: target.into(),
        iops: d.iops,
        bandwidth_bytes_per_s: d.iops * 4096.0,
        lat_mean_ns: d.lat_us[0] * 1000.0,
        lat_p99_ns: d.lat_us[2] * 1000.0,
        percentiles,
        per_io: results::PerIo {
            interrupts: Some(d.interrupts_per_io),
            worker_ctx_switches: Some(d.interrupts_per_io * 0.5),
            machine_ctx_switches: total.then_some(d.interrupts_per_io * 0.9),
            worker_cpu_ns: Some(2000.0),
            machine_cpu_ns: total.then_some(2500.0 + 1500.0 * d.interrupts_per_io),
            cpu_headroom_pct: total.then_some(40.0),
            ..Default::default()
        },
    }
}

/// An arm of `runs`, each with `drives` on `/dev/nvme{i}n1` (the total
/// sums IOPS and takes the first drive's latency and interrupts).
fn arm(label: &str, runs: &[Vec<Drive>]) -> Arm {
    Arm {
        label: label.into(),
        spec: label.into(),
        runs: runs
            .iter()
            .enumerate()
            .map(|(i, drives)| {
                let total = Drive {
                    iops: drives.iter().map(|d| d.iops).sum(),
                    ..drives[0]
                };
                RunRecord {
                    seq: i + 1,
                    started_unix_s: 0,
                    targets: drives
                        .iter()
                        .enumerate()
                        .map(|(j, &d)| metrics(&format!("/dev/nvme{j}n1"), d, false))
                        .collect(),
                    total: metrics(TOTAL, total, true),
                    raw: None,
                }
            })
            .collect(),
    }
}

/// `devices` drives at `threshold`, three runs spread by ±`spread` IOPS
/// around `iops` per drive.
fn point(threshold: u8, devices: usize, iops: f64, spread: f64, lat_us: [f64; 4]) -> Arm {
    let irq = 1.0 / (f64::from(threshold) + 1.0);
    let runs: Vec<Vec<Drive>> = [-spread, 0.0, spread]
        .iter()
        .map(|&s| {
            vec![
                Drive {
                    iops: iops + s,
                    lat_us,
                    interrupts_per_io: irq,
                };
                devices
            ]
        })
        .collect();
    arm(&format!("threshold={threshold} devices={devices}"), &runs)
}

/// The study's shape: one drive gains nothing; four drives drown in
/// interrupts with coalescing off and recover from threshold 3 on, at the
/// price of a longer tail.
fn study_set(budgets: Vec<LatencyBudget>) -> ResultSet {
    let one = [
        point(0, 1, 500_000.0, 3000.0, [80.0, 120.0, 150.0, 400.0]),
        point(3, 1, 501_000.0, 3000.0, [85.0, 125.0, 160.0, 450.0]),
        point(9, 1, 499_000.0, 3000.0, [90.0, 130.0, 170.0, 500.0]),
    ];
    let four = [
        point(0, 4, 406_000.0, 2000.0, [300.0, 971.0, 1200.0, 1431.0]),
        point(3, 4, 1_960_000.0, 4000.0, [200.0, 541.0, 800.0, 1857.0]),
        point(9, 4, 1_965_000.0, 4000.0, [210.0, 560.0, 900.0, 2400.0]),
    ];
    let arms: Vec<Arm> = one.into_iter().chain(four).collect();
    let mut set = ResultSet::new(SetKind::Sweep, "numio coalesce sweep", 1, arms);
    let axis = |name: &str, values: &[&str]| SweepAxis {
        name: name.into(),
        values: values.iter().map(|v| v.to_string()).collect(),
        xs: values.iter().map(|v| v.parse().unwrap()).collect(),
    };
    set.sweep = Some(SweepSpec {
        axes: vec![
            axis(THRESHOLD_AXIS, &["0", "3", "9"]),
            axis(DEVICES_AXIS, &["1", "4"]),
        ],
        knee_efficiency: 0.8,
        cores: vec![],
        goal: None,
        interrupted: false,
        fleet: None,
    });
    set.coalesce = Some(CoalesceSpec {
        time_us: 100,
        targets: (0..4).map(|i| format!("/dev/nvme{i}n1")).collect(),
        controllers: (0..4).map(|i| vec![format!("nvme{i}")]).collect(),
        max_latency: budgets,
    });
    set
}

#[test]
fn rows_carry_the_mean_the_interval_and_every_drive() {
    let c = analyze(&study_set(vec![])).expect("a coalescing sweep");
    assert_eq!(c.tables.len(), 2);
    let four = &c.tables[1];
    assert_eq!(four.devices, 4);
    assert_eq!(four.controllers, ["nvme0", "nvme1", "nvme2", "nvme3"]);
    let t3 = &four.rows[1];
    assert_eq!(
        (t3.threshold, t3.label.as_str()),
        (3, "threshold=3 devices=4")
    );
    assert!((t3.total.iops - 4.0 * 1_960_000.0).abs() < 1e-6);
    assert_eq!(t3.drives.len(), 4);
    assert!((t3.drives[2].iops - 1_960_000.0).abs() < 1e-6);
    // Three runs, sample stdev 4000 per drive (16000 total): t(0.975, 2) =
    // 4.303 × 16000 / √3.
    let ci = t3.total.iops_ci95.unwrap();
    assert!(
        (ci - 4.302_652_7 * 16_000.0 / 3f64.sqrt()).abs() < 1.0,
        "{ci}"
    );
    assert_eq!(t3.total.lat_p95_ns, Some(541_000.0));
    assert_eq!(t3.total.lat_p9999_ns, Some(1_857_000.0));
    assert_eq!(t3.total.interrupts_per_io, Some(0.25));
    // Total rows take the machine's context switches and CPU, drive rows
    // their workers'.
    assert_eq!(t3.total.ctx_switches_per_io, Some(0.25 * 0.9));
    assert_eq!(t3.drives[0].ctx_switches_per_io, Some(0.25 * 0.5));
    assert_eq!(t3.total.cpu_ns_per_io, Some(2500.0 + 1500.0 * 0.25));
    assert_eq!(t3.drives[0].cpu_ns_per_io, Some(2000.0));
    assert_eq!(raw_value(9, 100), 0x0109, "the study's -v 0x0109");
    assert_eq!(raw_value(0, 100), 0, "threshold 0 is off");
}

#[test]
fn the_smallest_threshold_within_the_best_interval_is_recommended() {
    let c = analyze(&study_set(vec![])).unwrap();
    let rec = &c.tables[1].recommendation;
    // Threshold 9 is best (7.86 M), threshold 3 (7.84 M) lies within its
    // interval: the smaller one wins.
    assert_eq!(rec.verdict, Verdict::Coalesce, "{rec:?}");
    assert_eq!((rec.threshold, rec.time_us, rec.raw), (3, 100, 0x0103));
    assert!(
        rec.summary
            .starts_with("threshold 3 (an interrupt per 4 completions"),
        "{}",
        rec.summary
    );
    let evidence = rec.evidence.join("\n");
    assert!(evidence.contains("the best is threshold 9"), "{evidence}");
    assert!(evidence.contains("+382.8 %"), "{evidence}");
    assert!(evidence.contains("p95 971.0 → 541.0 µs"), "{evidence}");
    assert!(
        evidence.contains("interrupts per I/O: 1.000 off, 0.250 at threshold 3"),
        "{evidence}"
    );
    assert!(
        evidence.contains("machine CPU per I/O: 4.00 µs off, 2.88 µs at threshold 3"),
        "{evidence}"
    );
}

#[test]
fn a_single_drive_that_gains_nothing_is_left_off() {
    let c = analyze(&study_set(vec![])).unwrap();
    let rec = &c.tables[0].recommendation;
    assert_eq!(rec.verdict, Verdict::NoGain, "{rec:?}");
    assert!(rec.is_off());
    assert_eq!(rec.raw, 0);
    assert!(rec.summary.starts_with("leave it off"), "{}", rec.summary);
    let evidence = rec.evidence.join("\n");
    assert!(
        evidence.contains("against off (500,000 ± 7,452 IOPS, 1.000 interrupts/IO, 4.00 µs CPU/IO): threshold 3: 501,000 IOPS (+0.2 %), 0.250 interrupts/IO, 2.88 µs CPU/IO; threshold 9: 499,000 IOPS (-0.2 %)"),
        "{evidence}"
    );
}

#[test]
fn a_gain_beyond_the_noise_but_under_the_minimum_is_left_off() {
    let rows: Vec<ThresholdRow> = [(0, 500_000.0), (3, 505_000.0)]
        .iter()
        .map(|&(t, iops)| {
            let a = point(t, 1, iops, 500.0, [80.0, 100.0, 120.0, 200.0]);
            row(&a, t, &[]).unwrap()
        })
        .collect();
    let rec = recommend(&rows, 100);
    assert_eq!(rec.verdict, Verdict::NoGain, "{rec:?}");
    assert!(
        rec.summary.contains("adds +1.0 % IOPS over off"),
        "{}",
        rec.summary
    );
}

#[test]
fn the_latency_budget_cuts_thresholds_and_can_cut_them_all() {
    let p9999 = |ms: f64| LatencyBudget {
        percentile: 99.99,
        max_ns: ms * 1e6,
    };
    // p99.99 ≤ 2 ms: threshold 9 (2.4 ms) is out, 3 is still the answer.
    let c = analyze(&study_set(vec![p9999(2.0)])).unwrap();
    let four = &c.tables[1];
    assert!(!four.rows[2].within_budget() && four.rows[1].within_budget());
    let rec = &four.recommendation;
    assert_eq!((rec.verdict, rec.threshold), (Verdict::Coalesce, 3));
    let evidence = rec.evidence.join("\n");
    assert!(
        evidence.contains("latency budget p99.99 ≤ 2 ms: threshold 9 (p99.99 2400.0 µs) exceeds it and is left out"),
        "{evidence}"
    );
    // p99.99 ≤ 1.5 ms: only off keeps it, so off it stays.
    let c = analyze(&study_set(vec![p9999(1.5)])).unwrap();
    let rec = &c.tables[1].recommendation;
    assert_eq!(rec.verdict, Verdict::NoGain, "{rec:?}");
    assert!(
        rec.summary
            .contains("more IOPS than off exceed the latency budget"),
        "{}",
        rec.summary
    );
    // p99.99 ≤ 0.3 ms: nothing keeps it.
    let c = analyze(&study_set(vec![p9999(0.3)])).unwrap();
    let rec = &c.tables[1].recommendation;
    assert_eq!(rec.verdict, Verdict::OverBudget, "{rec:?}");
    assert!(
        rec.summary.contains("relax --max-latency"),
        "{}",
        rec.summary
    );
    assert!(rec.is_off());
}

#[test]
fn budgets_read_in_the_unit_they_were_given_in() {
    let b = |percentile: f64, max_ns: f64| LatencyBudget { percentile, max_ns }.describe();
    assert_eq!(b(99.99, 2e6), "p99.99 ≤ 2 ms");
    assert_eq!(b(99.9, 1.5e6), "p99.9 ≤ 1.5 ms");
    assert_eq!(b(99.0, 500e3), "p99 ≤ 500 µs");
    assert_eq!(b(50.0, 12_500.0), "p50 ≤ 12.5 µs");
}

#[test]
fn polled_io_takes_no_interrupts_so_it_is_left_off() {
    let mut a = point(0, 1, 500_000.0, 0.0, [10.0, 12.0, 14.0, 30.0]);
    let mut b = point(3, 1, 520_000.0, 0.0, [10.0, 12.0, 14.0, 30.0]);
    for arm in [&mut a, &mut b] {
        for r in &mut arm.runs {
            r.total.per_io.interrupts = Some(0.0);
        }
    }
    let rows = vec![row(&a, 0, &[]).unwrap(), row(&b, 3, &[]).unwrap()];
    let rec = recommend(&rows, 100);
    assert_eq!(rec.verdict, Verdict::Polled, "{rec:?}");
    assert!(rec.summary.contains("polled"), "{}", rec.summary);
    assert_eq!(
        recommend::findings(&rows),
        ["interrupts per I/O: 0 with coalescing off (polled I/O)"]
    );
}

#[test]
fn one_run_per_point_has_no_interval_so_the_best_counts() {
    let one = |t: u8, iops: f64| {
        let a = arm(
            &format!("threshold={t} devices=2"),
            &[vec![
                Drive {
                    iops,
                    lat_us: [100.0, 200.0, 300.0, 400.0],
                    interrupts_per_io: 1.0 / (f64::from(t) + 1.0),
                };
                2
            ]],
        );
        row(&a, t, &[]).unwrap()
    };
    let rows = vec![one(0, 100_000.0), one(3, 150_000.0), one(9, 151_000.0)];
    let rec = recommend(&rows, 200);
    assert_eq!(
        (rec.verdict, rec.threshold, rec.raw),
        (Verdict::Coalesce, 9, 0x0209)
    );
    assert!(
        rec.evidence.iter().any(|e| e.contains("--repeat 3")),
        "{:?}",
        rec.evidence
    );
    assert_eq!(recommend(&[], 100).verdict, Verdict::NotMeasured);
}

#[test]
fn falling_interrupts_are_said_with_their_share_of_off() {
    let c = analyze(&study_set(vec![])).unwrap();
    assert_eq!(
        c.tables[1].findings,
        ["interrupts per I/O fall from 1.000 (off) to 0.100 at threshold 9: 10 % of off's (10.0× fewer)"]
    );
}

#[test]
fn the_table_has_threshold_rows_drive_rows_and_the_recommendation() {
    let c = analyze(&study_set(vec![])).unwrap();
    let text = table::render(&c);
    assert!(
        text.contains("numio coalesce sweep: 4 devices at once (/dev/nvme0n1, /dev/nvme1n1, /dev/nvme2n1, /dev/nvme3n1; controllers nvme0, nvme1, nvme2, nvme3), aggregation time 100 µs"),
        "{text}"
    );
    let lines: Vec<&str> = text.lines().collect();
    let header = lines.iter().position(|l| l.contains("±95 %")).unwrap();
    let columns: Vec<&str> = lines[header].split_whitespace().collect();
    assert_eq!(
        columns,
        [
            "threshold",
            "runs",
            "IOPS",
            "±95",
            "%",
            "p50",
            "µs",
            "p95",
            "µs",
            "p99",
            "µs",
            "p99.99",
            "µs",
            "irq/IO",
            "ctx/IO",
            "CPU",
            "µs/IO"
        ]
    );
    // Threshold 0, off, with the single drive: no drive rows under it.
    assert!(
        lines[header + 1].trim_start().starts_with("0 (off)"),
        "{text}"
    );
    assert!(
        lines[header + 2].trim_start().starts_with("3 (4 I/Os)"),
        "{text}"
    );
    let row3 = text
        .lines()
        .find(|l| l.contains("3 (4 I/Os) (recommended)"))
        .expect("the recommended row is marked");
    assert!(row3.contains("7,840,000"), "{row3}");
    assert!(
        row3.contains("541.0") && row3.contains("1857.0") && row3.contains("0.250"),
        "{row3}"
    );
    assert_eq!(
        text.lines()
            .filter(|l| l.trim_start().starts_with("/dev/nvme3n1"))
            .count(),
        3,
        "a drive row per threshold of the 4-drive table: {text}"
    );
    assert!(text.contains("recommendation: leave it off"), "{text}");
    assert!(
        text.contains("set it: numio coalesce set /dev/nvme0n1 /dev/nvme1n1 /dev/nvme2n1 /dev/nvme3n1 --threshold 3 --time 100us"),
        "{text}"
    );
    assert_eq!(
        table::summary_lines(&c),
        ["1 device: leave it off", "4 devices: threshold 3"]
    );
}

#[test]
fn the_analysis_goes_out_as_json_and_reads_back() {
    let set = study_set(vec![LatencyBudget {
        percentile: 99.99,
        max_ns: 2e6,
    }]);
    let a = crate::analyze(&set);
    assert!(a.sweeps.is_empty(), "a coalescing sweep has its own tables");
    let json = serde_json::to_value(&a).unwrap();
    let four = &json["coalesce"]["tables"][1];
    assert_eq!(four["devices"], 4);
    assert_eq!(four["recommendation"]["verdict"], "coalesce");
    assert_eq!(four["recommendation"]["threshold"], 3);
    assert_eq!(four["recommendation"]["raw"], 0x0103);
    assert_eq!(four["rows"][2]["budgets"][0]["within"], false);
    assert_eq!(four["rows"][0]["total"]["interrupts_per_io"], 1.0);
    let back: CoalesceSweep = serde_json::from_value(json["coalesce"].clone()).unwrap();
    assert_eq!(Some(back), a.coalesce);
}

#[test]
fn a_saved_coalescing_sweep_reloads_reprints_and_redraws() {
    let set = study_set(vec![]);
    let dir = std::env::temp_dir();
    let path = dir.join(format!("numio-coalesce-test-{}.json", std::process::id()));
    crate::file::save(&set, &path).unwrap();
    let back = crate::file::load(&path).unwrap();
    let _ = std::fs::remove_file(&path);
    assert_eq!(back, set);
    let mut out = Vec::new();
    crate::TextExporter.export(&back, &mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    assert!(
        text.starts_with("numio results: sweep, one arm per point"),
        "{text}"
    );
    assert!(text.contains("recommendation: threshold 3"), "{text}");
    assert!(!text.contains("numio sweep over threshold"), "{text}");
    let svg_path = dir.join(format!("numio-coalesce-test-{}.svg", std::process::id()));
    crate::chart::write_chart(&back, &crate::analyze(&back), &svg_path).unwrap();
    let svg = std::fs::read_to_string(&svg_path).unwrap();
    let _ = std::fs::remove_file(&svg_path);
    assert!(svg.contains("numio coalesce sweep: thresholds at aggregation time 100 µs"));
    assert!(svg.contains(
        "NVMe queue interrupts per I/O per device count: 1 device (blue), 4 devices (red)"
    ));
    assert!(svg.contains(
        "clat percentiles, 4 devices at once: p50 (blue) p95 (red) p99 (green) p99.99 (purple)"
    ));
}

#[test]
fn an_interrupted_sweep_keeps_the_thresholds_it_measured() {
    let mut set = study_set(vec![]);
    set.arms[5].runs.clear();
    set.sweep.as_mut().unwrap().interrupted = true;
    let c = analyze(&set).unwrap();
    assert_eq!(c.tables[1].rows.len(), 2);
    assert!(c.interrupted);
    assert!(table::render(&c).contains("interrupted: the sweep stopped early"));
    // Other sweeps are not coalescing sweeps.
    set.coalesce = None;
    assert!(analyze(&set).is_none());
}
