//! `--apply` of a coalescing sweep: which recommendation is set, on
//! which controllers, and when nothing is.

use super::*;
use report::coalesce::{DeviceTable, Recommendation, RowMetrics, ThresholdRow};

fn row(threshold: u8) -> ThresholdRow {
    let m = RowMetrics {
        scope: "total".into(),
        runs: 1,
        iops: 1000.0,
        iops_ci95: None,
        lat_p50_ns: None,
        lat_p95_ns: None,
        lat_p99_ns: None,
        lat_p9999_ns: None,
        interrupts_per_io: Some(1.0),
        ctx_switches_per_io: None,
        cpu_ns_per_io: None,
    };
    ThresholdRow {
        label: format!("threshold={threshold}"),
        threshold,
        total: m,
        drives: vec![],
        budgets: vec![],
    }
}

/// A table of `devices` drives recommending `threshold` (0: off),
/// measured or not.
fn table(devices: usize, verdict: Verdict, threshold: u8, measured: bool) -> DeviceTable {
    DeviceTable {
        devices,
        targets: (0..devices).map(|i| format!("/dev/nvme{i}n1")).collect(),
        controllers: (0..devices).map(|i| format!("nvme{i}")).collect(),
        rows: if measured {
            vec![row(0), row(3)]
        } else {
            vec![]
        },
        recommendation: Recommendation {
            verdict,
            threshold,
            time_us: if threshold == 0 { 0 } else { 100 },
            raw: 0,
            summary: String::new(),
            evidence: vec![],
        },
        findings: vec![],
    }
}

fn sweep(tables: Vec<DeviceTable>) -> CoalesceSweep {
    CoalesceSweep {
        time_us: 100,
        max_latency: vec![],
        tables,
        interrupted: false,
    }
}

type Calls = Vec<(Vec<String>, u8, u32)>;

/// What `apply_recommendation` applied, and the calls it made.
fn applied(s: &CoalesceSweep, clean: bool) -> (Option<Applied>, Calls) {
    let mut calls = Vec::new();
    let mut apply = |on: &[String], t: u8, time: u32| -> Result<String, ()> {
        calls.push((on.to_vec(), t, time));
        Ok("changed nvme0".to_string())
    };
    let a = match apply_recommendation(s, clean, &mut apply).unwrap() {
        ApplyOutcome::Applied(a) => Some(a),
        _ => None,
    };
    (a, calls)
}

#[test]
fn apply_sets_the_recommendation_of_the_most_drives_measured() {
    let s = sweep(vec![
        table(1, Verdict::NoGain, 0, true),
        table(2, Verdict::Coalesce, 3, true),
        table(4, Verdict::NotMeasured, 0, false),
    ]);
    let (a, calls) = applied(&s, true);
    let names = vec!["nvme0".to_string(), "nvme1".to_string()];
    assert_eq!(calls, [(names.clone(), 3, 100)]);
    let a = a.unwrap();
    let set = report::ResultSet::new(report::SetKind::Sweep, "x", 0, vec![]);
    let j = json(&s, Some(&a), &set);
    assert_eq!(
        (a.devices, a.controllers, a.threshold, a.time_us),
        (2, names, 3, 100)
    );
    assert_eq!(j["schema"], "numio-coalesce-sweep");
    assert_eq!(j["applied"]["threshold"], 3);
    assert_eq!(
        j["coalesce"]["tables"][1]["recommendation"]["verdict"],
        "coalesce"
    );
    assert_eq!(j["results"]["kind"], "sweep");
}

#[test]
fn leave_it_off_applies_off_and_a_cut_sweep_applies_nothing() {
    let s = sweep(vec![table(1, Verdict::NoGain, 0, true)]);
    let (a, calls) = applied(&s, true);
    assert_eq!(calls, [(vec!["nvme0".to_string()], 0, 0)]);
    assert_eq!(a.unwrap().threshold, 0);
    let (a, calls) = applied(&s, false);
    assert!(
        a.is_none() && calls.is_empty(),
        "interrupted or failed runs"
    );
    let (a, calls) = applied(&sweep(vec![table(2, Verdict::NotMeasured, 0, false)]), true);
    assert!(a.is_none() && calls.is_empty(), "nothing measured");
}
