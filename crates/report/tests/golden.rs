//! Golden-output tests of every exporter on the result fixtures.
//! Run with `UPDATE_GOLDEN=1` to rewrite the golden files after a deliberate change.

mod common;

use common::{fixture, fixtures};
use report::{CsvExporter, Exporter, JsonExporter, SvgExporter, TextExporter};

const FIXTURES: [&str; 2] = ["compare_local_spread", "repeat_outlier"];

fn check(exporter: &dyn Exporter, ext: &str) {
    for name in FIXTURES {
        let set = fixture(&format!("{name}.json"));
        let mut out = Vec::new();
        exporter.export(&set, &mut out).unwrap();
        let got = String::from_utf8(out).unwrap();
        golden(
            &format!("{name}.golden.{ext}"),
            &got,
            &format!("the {} exporter's output", exporter.name()),
        );
    }
}

/// Holds `got` to the golden file `name` under the fixtures (`what` says
/// whose output it is); `UPDATE_GOLDEN=1` rewrites the file instead.
fn golden(name: &str, got: &str, what: &str) {
    let path = fixtures().join(name);
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::write(&path, got).unwrap();
        return;
    }
    let want = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "{}: {e}; run with UPDATE_GOLDEN=1 to create it",
            path.display()
        )
    });
    if got != want {
        let line = got.lines().zip(want.lines()).position(|(g, w)| g != w);
        panic!(
            "{} differs from {what} (first differing line: {line:?}); \
             rerun with UPDATE_GOLDEN=1 if the change is deliberate",
            path.display()
        );
    }
}

/// The real two-target `numio bench --json` run the views are drawn from.
fn bench_run() -> results::RunResult {
    let path = fixtures().join("bench_two_targets.json");
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
}

#[test]
fn text_golden() {
    check(&TextExporter, "txt");
}

#[test]
fn json_golden() {
    check(&JsonExporter, "json");
}

#[test]
fn csv_golden() {
    check(&CsvExporter, "csv");
}

#[test]
fn svg_golden() {
    check(&SvgExporter, "svg");
}

/// The human view of one bench run (`report::bench::render`, what `numio
/// bench` prints and `numio report` reprints) on a real `numio bench
/// --json` file: two files, randrw, sync backend.
#[test]
fn bench_run_text_golden() {
    let run = bench_run();
    let placement = planner::Placement {
        policy: run.policy.clone(),
        ..planner::Placement::default()
    };
    let got = report::bench::render(&run, &placement, false);
    golden(
        "bench_two_targets.golden.txt",
        &got,
        "report::bench::render",
    );
}

/// The human view of a fleet run (`report::fleet::render`, what `numio
/// bench --hosts` prints and `numio report` reprints): two hosts that ran
/// (each the real two-target run of the bench fixture), one that did not.
#[test]
fn fleet_run_text_golden() {
    let run = bench_run();
    let host = |name: &str, offset: i64, skew: i64| fleet::report::HostReport {
        host: name.into(),
        ok: true,
        reason: None,
        clock_offset_ns: Some(offset),
        clock_rtt_ns: Some(84_000),
        start_skew_ns: Some(skew),
        result: Some(run.clone()),
    };
    let merged = fleet::merge::merge(&[("a", &run), ("b", &run)], &[50.0, 99.0, 99.9]).unwrap();
    let r = fleet::report::FleetReport {
        schema: fleet::report::FLEET_SCHEMA.into(),
        partial: true,
        hosts: vec![
            host("root@10.0.0.1", -12_345, 0),
            host("root@10.0.0.2", 2_000_000, 1_500_000),
            fleet::report::HostReport {
                host: "root@10.0.0.3".into(),
                ok: false,
                reason: Some("ssh: connect to host 10.0.0.3 port 22: Connection refused".into()),
                clock_offset_ns: None,
                clock_rtt_ns: None,
                start_skew_ns: None,
                result: None,
            },
        ],
        merged: Some(merged),
    };
    let got = report::fleet::render(&r);
    golden(
        "fleet_three_hosts.golden.txt",
        &got,
        "report::fleet::render",
    );
    // And it reads back from the JSON bench --hosts --json writes.
    let back: fleet::report::FleetReport =
        serde_json::from_str(&serde_json::to_string(&r).unwrap()).unwrap();
    assert_eq!(report::fleet::render(&back), got);
}

/// The human view of a `numio fabric` study (`report::fabric::render`): two
/// initiator counts, each run twice, the target's CPU known.
#[test]
fn fabric_study_text_golden() {
    let run = bench_run();
    let fleet_of = |hosts: usize| {
        let parts: Vec<(String, &results::RunResult)> =
            (0..hosts).map(|i| (format!("h{i}"), &run)).collect();
        let named: Vec<(&str, &results::RunResult)> =
            parts.iter().map(|(n, r)| (n.as_str(), *r)).collect();
        fleet::report::FleetReport {
            schema: fleet::report::FLEET_SCHEMA.into(),
            partial: false,
            hosts: parts
                .iter()
                .map(|(n, r)| fleet::report::HostReport {
                    host: n.clone(),
                    ok: true,
                    reason: None,
                    clock_offset_ns: Some(0),
                    clock_rtt_ns: Some(0),
                    start_skew_ns: Some(0),
                    result: Some((*r).clone()),
                })
                .collect(),
            merged: Some(fleet::merge::merge(&named, &[50.0, 99.0, 99.9]).unwrap()),
        }
    };
    let point = |initiators: usize, run: usize, cpu_s: f64| fleet::study::Point {
        target_cores: None,
        initiators,
        run,
        initiator_cpu: fleet::study::InitiatorCpu::of(&fleet_of(initiators)),
        target_cpu: Some(fleet::target::TargetCpu {
            wall_s: 0.3,
            process_cpu_s: cpu_s,
            process_cores: cpu_s / 0.3,
            headroom_pct: 40.0,
        }),
        fleet: fleet_of(initiators),
    };
    let study = fleet::study::Study {
        schema: fleet::study::FABRIC_SCHEMA.into(),
        command:
            "numio fabric --target root@tgt --initiators a,b --initiator-counts 1,2 --repeat 2"
                .into(),
        target: "root@tgt".into(),
        url: "nvme-tcp://10.0.0.5:4420/nqn.2026-01.io.numio:subsys0".into(),
        stack: fleet::study::Stack::Numio,
        repeat: 2,
        target_lines: vec!["numio serve: ready".into()],
        points: vec![
            point(1, 1, 0.2),
            point(2, 1, 0.35),
            point(1, 2, 0.21),
            point(2, 2, 0.33),
        ],
    };
    let got = report::fabric::render(&study);
    golden("fabric_study.golden.txt", &got, "report::fabric::render");
    let text = serde_json::to_string(&study).unwrap();
    let back = fleet::study::Study::from_json(&text).unwrap().unwrap();
    assert_eq!(report::fabric::render(&back), got);
}
