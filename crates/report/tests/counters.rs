//! The machine's counters (interrupts, context switches, CPU per I/O, CPU
//! headroom) in repeat statistics, comparisons and the text report.

mod common;

use common::pair;
use report::model::TOTAL;
use report::repeat::Metric;
use report::{Exporter, ResultSet};

/// Sets every run's interrupts per I/O: arm A (coalescing off) takes 1.0
/// per I/O, arm B 0.25; headroom 40 % and 60 %.
fn with_counters(mut set: ResultSet) -> ResultSet {
    for (arm, (ints, headroom)) in set.arms.iter_mut().zip([(1.0, 40.0), (0.25, 60.0)]) {
        for (i, run) in arm.runs.iter_mut().enumerate() {
            let wobble = i as f64 * 0.001;
            for m in run
                .targets
                .iter_mut()
                .chain(std::iter::once(&mut run.total))
            {
                m.per_io.interrupts = Some(ints + wobble);
                m.per_io.worker_ctx_switches = Some(0.01);
                m.per_io.worker_cpu_ns = Some(1500.0);
            }
            run.total.per_io.cpu_headroom_pct = Some(headroom + wobble);
        }
    }
    set
}

#[test]
fn repeat_statistics_and_comparison_cover_the_counters() {
    let set = with_counters(pair(
        &[100.0, 101.0, 99.0, 100.5, 99.5],
        &[150.0, 151.0, 149.0, 150.5, 149.5],
    ));
    let a = report::analyze(&set);
    let stats = &a.arms[0];
    let ints = stats
        .total
        .get(Metric::InterruptsPerIo)
        .expect("measured in every run");
    assert!(
        (ints.summary.mean - 1.002).abs() < 1e-9,
        "{}",
        ints.summary.mean
    );
    assert!(stats.total.get(Metric::CpuHeadroom).is_some());
    // Measured nowhere: not reported rather than a made-up 0.
    assert!(stats.total.get(Metric::MachineCtxSwitchesPerIo).is_none());
    let c = a.comparison.expect("two arms");
    let v = &c
        .get(TOTAL, Metric::InterruptsPerIo)
        .expect("compared")
        .verdict;
    assert!(
        v.starts_with("spread:") && v.contains("interrupts per I/O"),
        "{v}"
    );
    let h = &c.get(TOTAL, Metric::CpuHeadroom).expect("compared").verdict;
    assert!(h.starts_with("spread:"), "more headroom is better: {h}");
    let mut out = Vec::new();
    report::TextExporter.export(&set, &mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    assert!(
        text.contains("interrupts/IO") && text.contains("CPU headroom %"),
        "{text}"
    );
}

#[test]
fn results_without_counters_keep_their_old_shape() {
    let set = pair(&[100.0, 101.0], &[150.0, 151.0]);
    let a = report::analyze(&set);
    assert_eq!(a.arms[0].total.metrics.len(), Metric::ALL.len());
    let json = serde_json::to_string(&set).unwrap();
    assert!(!json.contains("per_io"), "an unmeasured per_io is left out");
    let c = a.comparison.unwrap();
    assert!(c.get(TOTAL, Metric::InterruptsPerIo).is_none());
}

/// An engine result's counters reach the record's per-I/O values.
#[test]
fn a_record_takes_the_engine_results_per_io() {
    let text = std::fs::read_to_string(common::fixtures().join("engine_run.json")).unwrap();
    let mut r: results::RunResult = serde_json::from_str(&text).unwrap();
    assert!(r.counters.is_none(), "saved before counters were measured");
    r.counters = Some(results::RunCounters {
        window_ns: r.runtime_ns,
        context_switches: r.total.ops * 3,
        cpu: results::CpuSplit {
            idle_ns: 75,
            user_ns: 25,
            ..Default::default()
        },
        nvme_interrupts: Some(r.total.ops / 2),
        ..Default::default()
    });
    let rec = report::from_engine::record(1, &r);
    let p = rec.total.per_io;
    assert!((p.interrupts.unwrap() - 0.5).abs() < 0.01, "{p:?}");
    assert!(
        (p.machine_ctx_switches.unwrap() - 3.0).abs() < 0.01,
        "{p:?}"
    );
    assert_eq!(p.cpu_headroom_pct, Some(75.0));
    assert!(rec.targets[0].per_io.worker_cpu_ns.is_some());
    assert_eq!(
        rec.targets[0].per_io.cpu_headroom_pct, None,
        "machine-wide only"
    );
}

/// Busy CPU per I/O (empty polls excluded) appears where an arm polled,
/// and the arm that slept is compared by its whole CPU per I/O; without
/// polling anywhere it is not reported.
#[test]
fn busy_cpu_per_io_is_compared_where_an_arm_polled() {
    let mut set = with_counters(pair(
        &[100.0, 101.0, 99.0, 100.5, 99.5],
        &[150.0, 151.0, 149.0, 150.5, 149.5],
    ));
    let plain = report::analyze(&set);
    assert!(plain.arms[0].total.get(Metric::BusyCpuPerIo).is_none());
    assert!(plain
        .comparison
        .as_ref()
        .unwrap()
        .get(TOTAL, Metric::BusyCpuPerIo)
        .is_none());
    // Arm A polls: 1500 ns of CPU per I/O, 1200 of them in empty polls;
    // arm B sleeps (its busy CPU is its CPU).
    for (arm, busy) in set.arms.iter_mut().zip([300.0, 1500.0]) {
        for (i, run) in arm.runs.iter_mut().enumerate() {
            for m in run
                .targets
                .iter_mut()
                .chain(std::iter::once(&mut run.total))
            {
                m.per_io.worker_busy_cpu_ns = Some(busy + i as f64);
            }
        }
    }
    let a = report::analyze(&set);
    let busy_a = a.arms[0].total.get(Metric::BusyCpuPerIo).expect("A polled");
    assert!((busy_a.summary.mean - 302.0).abs() < 1e-9);
    assert!(a.arms[1].total.get(Metric::BusyCpuPerIo).is_none());
    let c = a.comparison.expect("two arms");
    let m = c.get(TOTAL, Metric::BusyCpuPerIo).expect("compared");
    assert!(m.verdict.contains("busy CPU per I/O"), "{}", m.verdict);
    // B's side is its CPU per I/O (1500 ns): A's busy CPU is lower.
    // B's side is its CPU per I/O (1502 ns mean): A's 302 is 79.9 % less.
    assert!(
        m.verdict
            .starts_with(&format!("{}: -79.9 % busy CPU per I/O", a.arms[0].label)),
        "{}",
        m.verdict
    );
}
