//! `numio bench --output-format fio-json` and `numio report FILE
//! --fio-json` through the binary: fio's layout (the keys real fio 3.33
//! printed, `tests/fixtures/fio/`), one job per target, group_reporting.

mod common;

use common::{numio, Temp};
use serde_json::Value;

fn fio_fixture() -> Value {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/fixtures/fio/fio-3.33-null-global.json"
    );
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn keys(v: &Value) -> Vec<String> {
    let mut k: Vec<String> = v.as_object().expect("an object").keys().cloned().collect();
    k.sort();
    k
}

#[test]
fn bench_prints_fio_s_json_one_job_per_target() {
    let a = Temp::new("fio-a", 16 << 20);
    let b = Temp::new("fio-b", 16 << 20);
    let (code, out, err) = numio(&[
        "bench",
        a.path(),
        b.path(),
        "--backend",
        "sync",
        "--runtime",
        "200ms",
        "--output-format",
        "fio-json",
    ]);
    assert_eq!(code, 0, "{err}");
    let j: Value = serde_json::from_str(&out).expect("stdout is one JSON document");
    let fio = fio_fixture();
    assert_eq!(keys(&j), keys(&fio), "fio's top-level keys");
    let jobs = j["jobs"].as_array().unwrap();
    assert_eq!(jobs.len(), 2, "one job per target");
    assert_eq!(keys(&jobs[0]), keys(&fio["jobs"][0]), "fio's job keys");
    assert_eq!(
        keys(&jobs[0]["read"]),
        keys(&fio["jobs"][0]["read"]),
        "fio's read keys"
    );
    assert_eq!(jobs[0]["jobname"], a.path());
    assert_eq!(jobs[1]["job options"]["filename"], b.path());
    assert!(jobs[0]["read"]["total_ios"].as_u64().unwrap() > 0);
    assert!(jobs[0]["read"]["clat_ns"]["percentile"]["99.000000"].is_u64());

    let (code, out, err) = numio(&[
        "bench",
        a.path(),
        b.path(),
        "--backend",
        "sync",
        "--runtime",
        "200ms",
        "--output-format",
        "fio-json",
        "--group-reporting",
    ]);
    assert_eq!(code, 0, "{err}");
    let g: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        g["jobs"].as_array().unwrap().len(),
        1,
        "group_reporting: one job"
    );
    assert_eq!(
        g["jobs"][0]["job options"]["filename"],
        format!("{}:{}", a.path(), b.path()),
        "fio's multi-file form"
    );
}

#[test]
fn report_converts_a_saved_file() {
    let t = Temp::new("fio-saved", 16 << 20);
    let saved = format!("{}.json", t.path());
    let (code, _, err) = numio(&[
        "bench",
        t.path(),
        "--backend",
        "sync",
        "--runtime",
        "150ms",
        "--save",
        &saved,
    ]);
    assert_eq!(code, 0, "{err}");
    let (code, out, err) = numio(&["report", &saved, "--fio-json"]);
    std::fs::remove_file(&saved).unwrap();
    assert_eq!(code, 0, "{err}");
    let j: Value = serde_json::from_str(&out).expect("fio JSON");
    assert_eq!(j["jobs"].as_array().unwrap().len(), 1);
    assert!(j["jobs"][0]["read"]["iops"].as_f64().unwrap() > 0.0);
    assert!(j["fio version"].as_str().unwrap().contains("fio-3.33 json"));
}

#[test]
fn group_reporting_without_fio_json_is_refused() {
    let t = Temp::new("fio-bad", 1 << 20);
    let (code, _, err) = numio(&["bench", t.path(), "--group-reporting"]);
    assert_ne!(code, 0);
    assert!(err.contains("--output-format fio-json"), "{err}");
}
