//! Result files: round trip, schema checks with fixes in the messages, CSV
//! shape, and PNG charts.

mod common;

use common::{fixture, pair};
use report::{CsvExporter, Exporter, ReportError};

/// A fresh path in the temp dir, unique to this process and `name`.
fn tmp(name: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!("numio-report-test-{}-{name}", std::process::id()))
}

#[test]
fn save_then_load_keeps_every_run() {
    let set = fixture("compare_local_spread.json");
    let path = tmp("round.json");
    report::file::save(&set, &path).unwrap();
    let back = report::file::load(&path).unwrap();
    assert_eq!(back, set);
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(
        text.contains("\"analysis\""),
        "saved files carry the analysis for other tools"
    );
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn wrong_schema_newer_version_and_garbage_are_rejected_with_a_fix() {
    let p = std::path::Path::new("x.json");
    let err = report::file::from_json(r#"{"schema":"fio","schema_version":1}"#, p).unwrap_err();
    assert!(matches!(err, ReportError::Schema { .. }), "{err}");
    let err = report::file::from_json(r#"{"schema":"numio-results","schema_version":99}"#, p)
        .unwrap_err();
    assert!(err.to_string().contains("newer numio"), "{err}");
    let err = report::file::from_json("not json", p).unwrap_err();
    assert!(err.to_string().contains("written by --save"), "{err}");
    let empty = r#"{"schema":"numio-results","schema_version":1,"kind":"repeat","command":"","created_unix_s":0,"arms":[]}"#;
    let err = report::file::from_json(empty, p).unwrap_err();
    assert!(err.to_string().contains("no runs"), "{err}");
    let err = report::file::load(std::path::Path::new("/nonexistent/r.json")).unwrap_err();
    assert!(err.to_string().contains("/nonexistent/r.json"), "{err}");
}

#[test]
fn csv_has_a_row_per_run_per_target_plus_total() {
    let set = fixture("compare_local_spread.json");
    let mut out = Vec::new();
    CsvExporter.export(&set, &mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines[0],
        "arm,spec,seq,run,target,iops,bandwidth_bytes_per_s,lat_mean_ns,lat_p99_ns,iops_outlier"
    );
    assert_eq!(lines.len(), 1 + 10 * 3, "10 runs × (2 targets + total)");
    assert!(lines.iter().all(|l| l.split(',').count() == 10));
}

/// Issue #16: a chart named out.xyz was written as SVG without a word.
#[test]
fn a_chart_of_an_unknown_format_is_refused() {
    let set = pair(&[100.0, 101.0], &[90.0, 91.0]);
    let path = tmp("chart.xyz");
    let err = report::chart::write_chart(&set, &report::analyze(&set), &path).unwrap_err();
    assert!(err.to_string().contains(".svg or .png"), "{err}");
    assert!(!path.exists(), "nothing written");
}

#[test]
fn png_chart_is_a_real_non_blank_image() {
    if !report::chart::png::system_fonts_available() {
        eprintln!(
            "skipped: no system fonts for the chart labels (apt-get install fonts-dejavu-core)"
        );
        return;
    }
    let set = pair(&[100.0, 101.0, 99.0], &[90.0, 91.0, 92.0]);
    let path = tmp("chart.png");
    report::chart::write_chart(&set, &report::analyze(&set), &path).unwrap();
    let bytes = std::fs::read(&path).unwrap();
    std::fs::remove_file(&path).unwrap();
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n");
    // IHDR: width and height at bytes 16..24, twice the SVG size.
    let w = u32::from_be_bytes(bytes[16..20].try_into().unwrap());
    let h = u32::from_be_bytes(bytes[20..24].try_into().unwrap());
    assert_eq!((w, h), (1920, 2 * (56 + 900)));
    assert!(
        bytes.len() > 20_000,
        "a chart with text and lines, not a blank page"
    );
}

#[test]
fn engine_run_json_reads_as_a_single_run_set() {
    // A real `numio bench --runtime 1s --json` of the default target.
    let path = common::fixtures().join("engine_run.json");
    let set = report::file::load(&path).unwrap();
    assert_eq!(set.kind, report::SetKind::Single);
    let run = &set.arms[0].runs[0];
    assert!(run.total.iops > 0.0 && run.total.lat_p99_ns >= run.total.lat_mean_ns * 0.5);
    assert_eq!(run.targets.len(), 1);
    assert!(!run.total.percentiles.is_empty());
    assert!(run.raw.is_some(), "the engine's result is kept whole");
    let arm = report::file::load_arm(&path, None).unwrap();
    assert_eq!(arm.runs.len(), 1);
}

/// Issue #16: a bench JSON of an unknown schema_version was accepted.
#[test]
fn engine_run_json_of_an_unknown_schema_version_is_refused() {
    let path = common::fixtures().join("engine_run.json");
    let mut run: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    for version in [0, results::RESULT_SCHEMA_VERSION + 1] {
        run["schema_version"] = version.into();
        let future = tmp(&format!("engine-v{version}.json"));
        std::fs::write(&future, run.to_string()).unwrap();
        let err = report::file::load(&future).unwrap_err();
        let arm_err = report::file::load_arm(&future, None).unwrap_err();
        std::fs::remove_file(&future).unwrap();
        assert!(matches!(err, ReportError::Schema { .. }), "{err}");
        let text = err.to_string();
        assert!(
            text.contains(&format!("version {version}")) && text.contains("numio bench --json"),
            "{text}"
        );
        assert!(matches!(arm_err, ReportError::Schema { .. }), "{arm_err}");
    }
}

#[test]
fn result_arms_pick_by_label_and_say_which_exist() {
    let path = common::fixtures().join("compare_local_spread.json");
    let arm = report::file::load_arm(&path, Some("spread")).unwrap();
    assert_eq!((arm.label.as_str(), arm.runs.len()), ("spread", 5));
    let err = report::file::load_arm(&path, None).unwrap_err().to_string();
    assert!(
        err.contains("[\"local\", \"spread\"]") && err.contains(",arm=LABEL"),
        "{err}"
    );
    let err = report::file::load_arm(&path, Some("none"))
        .unwrap_err()
        .to_string();
    assert!(err.contains("pick one of its arms"), "{err}");
}
