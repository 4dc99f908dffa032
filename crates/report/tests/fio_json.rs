//! numio's fio-shaped JSON against JSON real fio 3.33 printed for the
//! same jobs (`tests/fixtures/fio/fio-3.33-*.json`, captured with the
//! commands in `tests/fixtures/fio/README.md`): the same keys with the same
//! JSON types, recursively, so a parser written against fio's output reads
//! numio's.

use std::path::{Path, PathBuf};

use serde_json::Value;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/fio")
        .join(name)
}

fn load(name: &str) -> Value {
    let text = std::fs::read_to_string(fixture(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn numio_run(name: &str) -> results::RunResult {
    serde_json::from_value(load(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_f64() => "float",
        Value::Number(_) => "integer",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Maps whose keys depend on the job, not on the format: their values'
/// types are compared, not their keys.
const FREE_KEYS: [&str; 3] = ["job options", "global options", "percentile"];

fn same_shape(fio: &Value, numio: &Value, at: &str, problems: &mut Vec<String>) {
    if kind(fio) != kind(numio) {
        problems.push(format!(
            "{at}: fio has {}, numio {}",
            kind(fio),
            kind(numio)
        ));
        return;
    }
    match (fio, numio) {
        (Value::Object(f), Value::Object(n)) => {
            let free = FREE_KEYS.iter().any(|k| at.ends_with(&format!("/{k}")));
            if free {
                for (k, v) in n {
                    if let Some(fv) = f.values().next() {
                        same_shape(fv, v, &format!("{at}/{k}"), problems);
                    }
                }
                return;
            }
            for k in f.keys().filter(|k| !n.contains_key(*k)) {
                problems.push(format!("{at}/{k}: in fio's, missing in numio's"));
            }
            for k in n.keys().filter(|k| !f.contains_key(*k)) {
                problems.push(format!("{at}/{k}: in numio's, not in fio's"));
            }
            for (k, v) in f {
                if let Some(nv) = n.get(k) {
                    same_shape(v, nv, &format!("{at}/{k}"), problems);
                }
            }
        }
        (Value::Array(f), Value::Array(n)) => {
            if let Some(first) = f.first() {
                for (i, item) in n.iter().enumerate() {
                    same_shape(first, item, &format!("{at}[{i}]"), problems);
                }
            }
        }
        _ => {}
    }
}

fn check(fio_name: &str, numio: &Value) {
    let mut fio = load(fio_name);
    // fio writes disk_util where it reads disk stats; numio reads none.
    fio.as_object_mut().unwrap().remove("disk_util");
    let mut problems = Vec::new();
    same_shape(&fio, numio, "", &mut problems);
    assert!(
        problems.is_empty(),
        "{fio_name} vs numio:\n{}",
        problems.join("\n")
    );
}

fn global_fio() -> Value {
    // A command line with options before the first --name has fio's
    // `global options`; numio always writes them (the backend).
    load("fio-3.33-null-global.json")
}

#[test]
fn null_randread_has_fio_s_keys_and_types() {
    let run = numio_run("numio-null-randread.json");
    let doc: Value =
        serde_json::from_str(&report::export::fio_json::to_string(&[run], false)).unwrap();
    check("fio-3.33-null-randread.json", &strip_globals(&doc));
    // The same job shape on io_uring (numio's null backend reports as its
    // io_uring one does).
    check("fio-3.33-io_uring-randread.json", &strip_globals(&doc));
    assert!(
        (bucket_sum(&doc["jobs"][0]) - 100.0).abs() < 0.01,
        "every I/O in one bucket"
    );
    let mut problems = Vec::new();
    same_shape(&global_fio(), &doc, "", &mut problems);
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

fn strip_globals(doc: &Value) -> Value {
    let mut doc = doc.clone();
    doc.as_object_mut().unwrap().remove("global options");
    doc
}

#[test]
fn randrw_on_a_file_matches_fio_libaio() {
    let run = numio_run("numio-uring-randrw.json");
    let doc: Value = serde_json::from_str(&report::export::fio_json::to_string(
        std::slice::from_ref(&run),
        false,
    ))
    .unwrap();
    check("fio-3.33-libaio-randrw.json", &strip_globals(&doc));
    let job = &doc["jobs"][0];
    assert_eq!(job["read"]["total_ios"], run.read.ops);
    assert_eq!(job["write"]["total_ios"], run.write.ops);
    assert_eq!(job["read"]["io_bytes"], run.read.bytes);
    assert_eq!(job["job options"]["rw"], "randrw");
    let p99 = run.read.latency.clat.at(99.0).expect("p99 measured");
    assert_eq!(job["read"]["clat_ns"]["percentile"]["99.000000"], p99);
    let buckets = bucket_sum(job);
    assert!(
        (buckets - 100.0).abs() < 0.01,
        "latency buckets cover every I/O: {buckets}"
    );
}

#[test]
fn group_reporting_is_one_job_per_run_from_the_total() {
    let run = numio_run("numio-null-randread.json");
    let runs = [run.clone(), run.clone()];
    let doc: Value =
        serde_json::from_str(&report::export::fio_json::to_string(&runs, true)).unwrap();
    check("fio-3.33-null-group-reporting.json", &strip_globals(&doc));
    let jobs = doc["jobs"].as_array().unwrap();
    assert_eq!(jobs.len(), 2, "one per run");
    assert_eq!(
        jobs[1]["groupid"], 1,
        "the second run is fio's second group"
    );
    assert_eq!(jobs[0]["read"]["total_ios"], run.read.ops);
    assert_eq!(doc["timestamp"], run.environment.started_unix_s);
}

/// The share of I/Os over fio's latency buckets (100 when each is counted once).
fn bucket_sum(job: &Value) -> f64 {
    ["latency_ns", "latency_us", "latency_ms"]
        .iter()
        .flat_map(|k| {
            job[*k]
                .as_object()
                .unwrap()
                .values()
                .map(|v| v.as_f64().unwrap())
        })
        .sum()
}
