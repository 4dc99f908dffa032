//! Unit tests of the sweep analysis: known curves with known answers.

use super::*;

/// SPDK's curve shape: linear to 4 cores, then bending as the drives
/// saturate.
#[test]
fn efficiency_knee_and_saturation_of_a_known_curve() {
    let xs = [1.0, 2.0, 4.0, 6.0, 8.0];
    let ys = [1.0e6, 2.0e6, 3.96e6, 4.4e6, 4.45e6];
    let e = efficiency(&xs, &ys);
    assert!((e[1] - 1.0).abs() < 1e-12 && (e[2] - 0.99).abs() < 1e-12);
    assert!((e[3] - 4.4 / 6.0).abs() < 1e-12);
    assert_eq!(knee(&e, &[], 0.8), Some(3));
    // A wide interval at 6 cores: the best case is still above 0.8.
    assert_eq!(knee(&e, &[0.0, 0.0, 0.0, 0.2, 0.0], 0.8), Some(4));
    assert_eq!(saturation(&ys, 2.0), Some(3), "6 → 8 cores adds 1.1 %");
    assert_eq!(saturation(&[1.0, 2.0, 3.0], 2.0), None);
    assert!(efficiency(&[], &[]).is_empty());
}

/// An arm of `iops` per run on one target, with percentiles and headroom.
fn arm(label: &str, iops: &[f64]) -> Arm {
    use crate::model::{LatencyPoint, RunRecord, TargetMetrics, TOTAL};
    let metrics = |target: &str, v: f64| TargetMetrics {
        target: target.into(),
        iops: v,
        bandwidth_bytes_per_s: v * 4096.0,
        lat_mean_ns: 1.0,
        lat_p99_ns: 2000.0,
        percentiles: [(50.0, 1000.0), (99.0, 2000.0), (99.9, 4000.0)]
            .map(|(percentile, latency_ns)| LatencyPoint {
                percentile,
                latency_ns,
            })
            .to_vec(),
        per_io: results::PerIo {
            cpu_headroom_pct: Some(50.0),
            ..Default::default()
        },
    };
    Arm {
        label: label.into(),
        spec: label.into(),
        runs: iops
            .iter()
            .enumerate()
            .map(|(i, &v)| RunRecord {
                seq: i + 1,
                started_unix_s: 0,
                targets: vec![metrics("/dev/a", v / 2.0), metrics("/dev/b", v / 2.0)],
                total: metrics(TOTAL, v),
                raw: None,
            })
            .collect(),
    }
}

#[test]
fn a_sweep_of_arms_finds_its_knee_and_says_so() {
    let arms = [
        arm("jobs=1", &[100.0, 102.0]),
        arm("jobs=2", &[200.0, 198.0]),
        arm("jobs=4", &[210.0, 212.0]),
    ];
    let s = analyze("jobs", &[1.0, 2.0, 4.0], &arms, 0.8);
    assert_eq!(s.knee, Some(2));
    assert_eq!(s.points[0].iops, 101.0);
    assert!(s.points[0].iops_ci95.is_some());
    assert_eq!(s.points[2].cpu_headroom_pct, Some(50.0));
    assert!(
        s.findings[0].starts_with("knee at jobs=4"),
        "{:?}",
        s.findings
    );
    let text = table(&s);
    assert!(
        text.contains("jobs=4 (knee)") && text.contains("CPU headroom"),
        "{text}"
    );
    let chart = svg(&s, "test");
    assert!(
        chart.starts_with("<svg") && chart.contains("knee"),
        "{chart}"
    );
    // bs does not scale work: no efficiency, no knee.
    let s = analyze("bs", &[1.0, 2.0, 4.0], &arms, 0.8);
    assert_eq!((s.knee, s.points[1].efficiency), (None, None));
}

fn sweep_set(arms: Vec<Arm>, goal: Option<SweepGoal>) -> ResultSet {
    let mut set = ResultSet::new(crate::SetKind::Sweep, "numio sweep jobs=1,2,4", 0, arms);
    set.sweep = Some(crate::SweepSpec {
        axes: vec![crate::SweepAxis {
            name: "jobs".into(),
            values: vec!["1".into(), "2".into(), "4".into()],
            xs: vec![1.0, 2.0, 4.0],
        }],
        knee_efficiency: 0.8,
        cores: vec![1, 2, 4],
        goal,
        interrupted: false,
        fleet: None,
    });
    set
}

#[test]
fn a_sweep_set_gives_per_core_per_target_percentiles_and_the_goal() {
    let arms = vec![
        arm("jobs=1", &[100.0]),
        arm("jobs=2", &[200.0]),
        arm("jobs=4", &[300.0]),
    ];
    let s = &analyze_set(&sweep_set(arms.clone(), Some(SweepGoal::Iops(150.0))))[0];
    let p = &s.points[2];
    assert_eq!((p.cores, p.iops_per_core), (Some(4), Some(75.0)));
    assert_eq!(p.targets.len(), 2);
    assert_eq!(
        (p.targets[1].target.as_str(), p.targets[1].iops),
        ("/dev/b", 150.0)
    );
    assert_eq!((p.lat_p50_ns, p.lat_p999_ns), (Some(1000.0), Some(4000.0)));
    // 150 IOPS: jobs=2 is the fewest cores that reach it.
    assert_eq!(s.goal.as_ref().unwrap().reached_at, Some(1));
    assert!(
        s.findings
            .iter()
            .any(|f| f.starts_with("goal 150 IOPS: reached first at jobs=2")),
        "{:?}",
        s.findings
    );
    let s = &analyze_set(&sweep_set(
        arms.clone(),
        Some(SweepGoal::BandwidthBytesPerS(2e6)),
    ))[0];
    assert_eq!(s.goal.as_ref().unwrap().reached_at, None);
    assert!(s
        .findings
        .iter()
        .any(|f| f.contains("not reached; the most was")));
    let csv = csv(std::slice::from_ref(s));
    let rows: Vec<&str> = csv.lines().collect();
    assert_eq!(rows[0], table::CSV_HEADER);
    assert_eq!(rows.len(), 4);
    assert!(
        rows[3].starts_with(",jobs=4,4,1,300,,1228800,4,75,150,1000,2000,4000,0.75,"),
        "{}",
        rows[3]
    );
    // Not a sweep set: no curves.
    assert!(analyze_set(&ResultSet::new(crate::SetKind::Repeat, "", 0, arms)).is_empty());
}

#[test]
fn an_interrupted_sweep_keeps_its_measured_points_and_says_so() {
    let mut set = sweep_set(
        vec![
            arm("jobs=1", &[100.0]),
            arm("jobs=2", &[190.0]),
            arm("jobs=4", &[]),
        ],
        None,
    );
    set.sweep.as_mut().unwrap().interrupted = true;
    let s = &analyze_set(&set)[0];
    assert_eq!(s.points.len(), 2);
    assert!(
        s.findings
            .iter()
            .any(|f| f.contains("interrupted: 2 of 3 points")),
        "{:?}",
        s.findings
    );
    // A saved sweep reads back and reprints as a sweep.
    let text = serde_json::to_string(&set).unwrap();
    let back = crate::file::from_json(&text, std::path::Path::new("x.json")).unwrap();
    assert_eq!(back, set);
    let analysis = crate::analysis::analyze(&back);
    assert!(
        analysis.comparison.is_none(),
        "three points are not an A/B comparison"
    );
    let mut out = Vec::new();
    crate::export::Exporter::export(&crate::TextExporter, &back, &mut out).unwrap();
    let report = String::from_utf8(out).unwrap();
    assert!(
        report.contains("sweep, one arm per point") && report.contains("numio sweep over jobs"),
        "{report}"
    );
}

#[test]
fn two_sweeps_compare_point_by_point() {
    let a = sweep_set(
        vec![
            arm("jobs=1", &[100.0, 102.0]),
            arm("jobs=2", &[200.0, 204.0]),
            arm("jobs=4", &[]),
        ],
        None,
    );
    let b = sweep_set(
        vec![
            arm("jobs=1", &[100.0, 102.0]),
            arm("jobs=2", &[100.0, 101.0]),
            arm("jobs=4", &[300.0]),
        ],
        None,
    );
    let c = compare::compare_points(&a, &b);
    assert_eq!(c.len(), 2, "jobs=4 ran only in B");
    assert_eq!(c[1].label, "jobs=2");
    assert!(c[1].iops_inference.significant && c[1].iops_inference.pct.unwrap() > 90.0);
    assert!(!c[0].iops_inference.significant);
    let text = compare::render(&c, "a.json", "b.json");
    assert!(
        text.contains("A faster") && text.contains("no significant difference"),
        "{text}"
    );
}

#[test]
fn the_chart_has_iops_latency_efficiency_and_headroom_panels() {
    let set = sweep_set(
        vec![
            arm("jobs=1", &[100.0]),
            arm("jobs=2", &[200.0]),
            arm("jobs=4", &[250.0]),
        ],
        None,
    );
    let s = &analyze_set(&set)[0];
    let chart = svg(s, "t");
    for want in [
        "IOPS",
        "latency percentiles",
        "p99.9",
        "efficiency %",
        "knee threshold 80 %",
        "CPU headroom %",
        "knee",
    ] {
        assert!(chart.contains(want), "{want} missing");
    }
    // bs does not scale work: the efficiency panel says so.
    let arms = [arm("bs=4k", &[1.0]), arm("bs=8k", &[1.0])];
    let s = analyze("bs", &[4096.0, 8192.0], &arms, 0.8);
    assert!(svg(&s, "t").contains("not defined for bs"));
}

#[test]
fn tick_labels_fit_left_of_the_plot() {
    use super::chart::tick_label;
    assert_eq!(tick_label(50_000_000.0, 1e7), "50M");
    assert_eq!(tick_label(2_500_000.0, 5e5), "2.5M");
    assert_eq!(tick_label(20_000.0, 1e4), "20k");
    assert_eq!(tick_label(5000.0, 1000.0), "5,000");
    assert_eq!(tick_label(0.25, 0.05), "0.25");
}

#[test]
fn a_served_target_shows_its_cpu_apart_from_the_initiators() {
    let plain = analyze("reactors", &[1.0], &[arm("reactors=1", &[100.0])], 0.8);
    assert!(!table::table(&plain).contains("target CPU"));
    let mut a = arm("reactors=1", &[100.0, 100.0]);
    for (r, (initiator, target)) in a.runs.iter_mut().zip([(3000.0, 1000.0), (5000.0, 3000.0)]) {
        r.total.per_io.initiator_cpu_ns = Some(initiator);
        r.total.per_io.target_cpu_ns = Some(target);
    }
    let s = analyze("reactors", &[1.0], &[a], 0.8);
    assert_eq!(s.points[0].initiator_cpu_ns_per_io, Some(4000.0));
    assert_eq!(s.points[0].target_cpu_ns_per_io, Some(2000.0));
    let text = table::table(&s);
    let header = text.lines().nth(1).unwrap();
    assert!(
        header.ends_with("initiator CPU µs/IO  target CPU µs/IO"),
        "{text}"
    );
    let row: Vec<&str> = text.lines().nth(2).unwrap().split_whitespace().collect();
    assert_eq!(row[row.len() - 2..], ["4.00", "2.00"], "{text}");
    let csv = table::csv(&[s]);
    assert!(
        csv.lines().nth(1).unwrap().ends_with(",4000,2000,"),
        "{csv}"
    );
    // A target served on another host: its machine's headroom too.
    let mut a = arm("initiators=1", &[100.0, 100.0]);
    for (r, head) in a.runs.iter_mut().zip([40.0, 60.0]) {
        r.total.per_io.target_cpu_ns = Some(1000.0);
        r.total.per_io.target_headroom_pct = Some(head);
    }
    let s = analyze("initiators", &[1.0], &[a], 0.8);
    assert_eq!(s.points[0].target_headroom_pct, Some(50.0));
    let text = table::table(&s);
    assert!(
        text.lines().nth(1).unwrap().ends_with("target headroom"),
        "{text}"
    );
    assert!(text.lines().nth(2).unwrap().ends_with("50.0 %"), "{text}");
    let csv = table::csv(&[s]);
    assert!(csv.lines().nth(1).unwrap().ends_with(",1000,50"), "{csv}");
}

/// `numio report` of a sweep over hosts: the line that says where it ran,
/// and every arm's targets in the header, not only the first arm's.
#[test]
fn a_sweep_over_hosts_reprints_where_it_ran_and_every_arms_targets() {
    let mut second = arm("jobs=2", &[200.0]);
    second.runs[0].targets[1].target = "/dev/c".into();
    let mut set = sweep_set(
        vec![arm("jobs=1", &[100.0]), second, arm("jobs=4", &[300.0])],
        None,
    );
    set.sweep.as_mut().unwrap().fleet = Some(crate::FleetSweepSpec {
        hosts: vec!["a".into(), "b".into()],
        stack: "kernel".into(),
        url: "nvme-rdma://10.0.0.1:4420/nqn.x:y/1".into(),
        target_host: Some("t".into()),
    });
    let mut out = Vec::new();
    crate::Exporter::export(&crate::TextExporter, &set, &mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    assert!(
        text.contains("  targets: /dev/a, /dev/b, /dev/c\n"),
        "{text}"
    );
    assert!(
        text.contains(
            "initiators: the Linux kernel's NVMe/RDMA host on a, b (a point of N initiators runs the first N); \
             target: numio serve on t, started for each run (nvme-rdma://10.0.0.1:4420/nqn.x:y/1)\n"
        ),
        "{text}"
    );
}
