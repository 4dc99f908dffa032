//! From the engine's [`RunResult`] to a [`RunRecord`]: the numbers the
//! statistics use, with the engine's whole result kept under `raw`.

use results::{IoStats, LatencySummary, RunResult};

use crate::model::{LatencyPoint, RunRecord, TargetMetrics, TOTAL};

/// p99 of a latency summary in nanoseconds: the requested 99th percentile
/// when there is one; otherwise linear interpolation between the nearest
/// requested percentiles around 99 (the maximum above the last one); the
/// mean when no percentile was requested.
pub fn p99_ns(lat: &LatencySummary) -> f64 {
    if let Some(v) = lat.at(99.0) {
        return v as f64;
    }
    let below = lat.percentiles.iter().rev().find(|p| p.percentile < 99.0);
    let above = lat.percentiles.iter().find(|p| p.percentile > 99.0);
    match (below, above) {
        (Some(b), Some(a)) => {
            let f = (99.0 - b.percentile) / (a.percentile - b.percentile);
            b.latency_ns as f64 + f * (a.latency_ns as f64 - b.latency_ns as f64)
        }
        (Some(b), None) => {
            let f = (99.0 - b.percentile) / (100.0 - b.percentile);
            b.latency_ns as f64 + f * (lat.max_ns as f64 - b.latency_ns as f64)
        }
        (None, Some(a)) => a.latency_ns as f64,
        (None, None) => lat.mean_ns,
    }
}

/// The metrics of one target's (or the total's) I/O statistics.
pub fn metrics(target: &str, io: &IoStats) -> TargetMetrics {
    let lat = &io.latency.lat;
    TargetMetrics {
        target: target.to_string(),
        iops: io.iops,
        bandwidth_bytes_per_s: io.bandwidth_bytes_per_s,
        lat_mean_ns: lat.mean_ns,
        lat_p99_ns: p99_ns(lat),
        percentiles: lat
            .percentiles
            .iter()
            .map(|p| LatencyPoint {
                percentile: p.percentile,
                latency_ns: p.latency_ns as f64,
            })
            .collect(),
        per_io: Default::default(),
    }
}

/// The record of one engine run, `seq`-th in execution order.
pub fn record(seq: usize, result: &RunResult) -> RunRecord {
    RunRecord {
        seq,
        started_unix_s: result.environment.started_unix_s,
        targets: result
            .targets
            .iter()
            .enumerate()
            .map(|(i, t)| TargetMetrics {
                per_io: result.target_per_io(i),
                ..metrics(&t.path, &t.total)
            })
            .collect(),
        total: TargetMetrics {
            per_io: result.per_io(),
            ..metrics(TOTAL, &result.total)
        },
        raw: serde_json::to_value(result).ok(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use results::Percentile;

    fn summary(points: &[(f64, u64)]) -> LatencySummary {
        LatencySummary {
            samples: 10,
            min_ns: 10,
            max_ns: 1000,
            mean_ns: 100.0,
            stdev_ns: 5.0,
            percentiles: points
                .iter()
                .map(|&(percentile, latency_ns)| Percentile {
                    percentile,
                    latency_ns,
                })
                .collect(),
        }
    }

    #[test]
    fn p99_prefers_the_requested_value_then_interpolates() {
        assert_eq!(p99_ns(&summary(&[(50.0, 80), (99.0, 300)])), 300.0);
        // 90 → 200, 99.9 → 2000: 99 is (9 / 9.9) of the way.
        let v = p99_ns(&summary(&[(90.0, 200), (99.9, 2000)]));
        assert!((v - (200.0 + 9.0 / 9.9 * 1800.0)).abs() < 1e-9);
        // Only 90 → 200: towards max_ns = 1000 at p100.
        assert!((p99_ns(&summary(&[(90.0, 200)])) - 920.0).abs() < 1e-9);
        assert_eq!(p99_ns(&summary(&[])), 100.0);
    }
}
