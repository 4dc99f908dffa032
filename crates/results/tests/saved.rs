//! Saved results load: a result of an older version (before
//! `process_cpu_usage`, `interrupted` and `taskrun_trial`) reads with
//! those fields defaulted, and writes back with every field it had in the
//! same order and form, the new ones added.

use results::{RunResult, UringSetup, RESULT_SCHEMA_VERSION};

fn fixture() -> String {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/fixtures/results/engine_run.json"
    );
    std::fs::read_to_string(path).expect("fixture engine_run.json")
}

#[test]
fn an_older_result_loads_with_new_fields_defaulted() {
    let r: RunResult = serde_json::from_str(&fixture()).expect("an older result loads");
    // Saved as version 1: it loads as such, without a time axis.
    assert_eq!(r.schema_version, 1);
    assert!(RESULT_SCHEMA_VERSION >= r.schema_version);
    assert!(!r.interrupted);
    assert_eq!(r.interval_ns, 0);
    assert!(r.intervals.is_empty() && r.targets.iter().all(|t| t.intervals.is_empty()));
    assert!(r.setup_io.is_none() && r.ramp_io.is_none());
    assert_eq!(r.process_cpu_usage, Default::default());
    assert!(r.targets[0]
        .workers
        .iter()
        .all(|w| w.taskrun_trial.is_none()));
}

#[test]
fn an_older_result_writes_back_as_it_was_plus_the_new_fields() {
    let text = fixture();
    let r: RunResult = serde_json::from_str(&text).expect("loads");
    let mut back: serde_json::Value = serde_json::to_value(&r).expect("serializes");
    let obj = back.as_object_mut().expect("an object");
    assert!(obj.remove("process_cpu_usage").is_some());
    assert_eq!(obj.remove("interval_ns"), Some(serde_json::Value::from(0)));
    assert_eq!(
        obj.remove("interrupted"),
        Some(serde_json::Value::Bool(false))
    );
    for t in obj["targets"].as_array_mut().expect("targets") {
        for w in t["workers"].as_array_mut().expect("workers") {
            let w = w.as_object_mut().expect("a worker");
            assert_eq!(w.remove("taskrun_trial"), Some(serde_json::Value::Null));
        }
    }
    let was: serde_json::Value = serde_json::from_str(&text).expect("json");
    assert_eq!(back, was);
}

#[test]
fn task_run_modes_are_named_as_saved() {
    for (mode, name) in [
        (UringSetup::Auto, "\"auto\""),
        (UringSetup::DeferTaskrun, "\"defer_taskrun\""),
        (UringSetup::CoopTaskrun, "\"coop_taskrun\""),
        (UringSetup::Plain, "\"plain\""),
    ] {
        assert_eq!(serde_json::to_string(&mode).expect("serializes"), name);
        let back: UringSetup = serde_json::from_str(name).expect("parses");
        assert_eq!(back, mode);
    }
}
