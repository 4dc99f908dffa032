//! Helpers shared by the integration tests: fixture paths and synthetic arms.
#![allow(dead_code)]

use std::path::PathBuf;

use report::{Arm, LatencyPoint, ResultSet, RunRecord, SetKind, TargetMetrics};

/// `tests/fixtures/results` at the workspace root.
pub fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/results")
}

/// Loads a fixture result set.
pub fn fixture(name: &str) -> ResultSet {
    report::file::load(&fixtures().join(name)).expect("fixture loads")
}

/// Metrics of one target with latency derived from IOPS.
pub fn metrics(target: &str, iops: f64) -> TargetMetrics {
    TargetMetrics {
        target: target.to_string(),
        iops,
        bandwidth_bytes_per_s: iops * 4096.0,
        lat_mean_ns: 64.0e9 / iops.max(1.0),
        lat_p99_ns: 2.0 * 64.0e9 / iops.max(1.0),
        percentiles: vec![
            LatencyPoint {
                percentile: 50.0,
                latency_ns: 60.0e9 / iops.max(1.0),
            },
            LatencyPoint {
                percentile: 99.0,
                latency_ns: 2.0 * 64.0e9 / iops.max(1.0),
            },
        ],
        per_io: Default::default(),
    }
}

/// An arm of single-target runs with these total IOPS; `first_seq` and
/// `stride` place the runs in the execution order.
pub fn arm(label: &str, iops: &[f64], first_seq: usize, stride: usize) -> Arm {
    let runs = iops
        .iter()
        .enumerate()
        .map(|(i, &v)| RunRecord {
            seq: first_seq + i * stride,
            started_unix_s: 0,
            targets: vec![metrics("/tmp/t", v)],
            total: metrics("total", v),
            raw: None,
        })
        .collect();
    Arm {
        label: label.to_string(),
        spec: format!("policy={label}"),
        runs,
    }
}

/// A comparison of two synthetic arms, interleaved.
pub fn pair(a: &[f64], b: &[f64]) -> ResultSet {
    ResultSet::new(
        SetKind::Compare,
        "test",
        0,
        vec![arm("local", a, 1, 2), arm("spread", b, 2, 2)],
    )
}
