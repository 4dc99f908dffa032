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
        let path = fixtures().join(format!("{name}.golden.{ext}"));
        if std::env::var_os("UPDATE_GOLDEN").is_some() {
            std::fs::write(&path, &got).unwrap();
            continue;
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
                "{} differs from the {} exporter's output (first differing line: {line:?}); \
                 rerun with UPDATE_GOLDEN=1 if the change is deliberate",
                path.display(),
                exporter.name()
            );
        }
    }
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
    let path = fixtures().join("bench_two_targets.json");
    let run: results::RunResult =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let placement = planner::Placement {
        policy: run.policy.clone(),
        ..planner::Placement::default()
    };
    let got = report::bench::render(&run, &placement, false);
    let golden = fixtures().join("bench_two_targets.golden.txt");
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::write(&golden, &got).unwrap();
        return;
    }
    let want = std::fs::read_to_string(&golden).unwrap_or_else(|e| {
        panic!(
            "{}: {e}; run with UPDATE_GOLDEN=1 to create it",
            golden.display()
        )
    });
    assert_eq!(
        got, want,
        "rerun with UPDATE_GOLDEN=1 if the change is deliberate"
    );
}
