//! Live progress: each worker owns one [`WorkerProgress`] and publishes into
//! it a few times a second (relaxed stores of its own counters, written by it
//! alone); the main thread reads them. Nothing on the I/O path waits on it.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use nvmf::tgt::counters::{LATENCY_BOUNDS_NS, LATENCY_BUCKETS};

use crate::stats::WorkerStats;

/// A worker's measured totals as of its last interval cut, for `numio
/// bench --metrics`: counts, bytes, errors and a bucketed latency
/// histogram (the buckets `numio serve --metrics` uses). Written by the
/// worker alone at each cut, read by the metrics endpoint.
#[derive(Debug, Default)]
pub struct LiveTotals {
    /// Successful I/Os per direction (read, write).
    pub ops: [AtomicU64; 2],
    /// Bytes per direction.
    pub bytes: [AtomicU64; 2],
    /// Failed I/Os.
    pub errors: AtomicU64,
    /// Total latency per direction, by bucket of [`LATENCY_BOUNDS_NS`]
    /// (the last: slower).
    pub lat_buckets: [[AtomicU64; LATENCY_BUCKETS]; 2],
    /// Sum of the total latencies per direction, in nanoseconds.
    pub lat_sum_ns: [AtomicU64; 2],
}

impl LiveTotals {
    /// Adds what `stats` recorded over one interval.
    pub fn add(&self, stats: &WorkerStats) {
        let add = |a: &AtomicU64, n: u64| a.store(a.load(Ordering::Relaxed) + n, Ordering::Relaxed);
        for d in 0..2 {
            add(&self.ops[d], stats.ops[d]);
            add(&self.bytes[d], stats.bytes[d]);
            let h = &stats.hist[d].lat;
            if h.is_empty() {
                continue;
            }
            // Cumulative counts (a range's ends are rounded to the
            // histogram's resolution: adjacent ranges would overlap).
            let mut counted = 0;
            for (i, &bound) in LATENCY_BOUNDS_NS.iter().enumerate() {
                let upto = h.count_between(0, bound).max(counted);
                add(&self.lat_buckets[d][i], upto - counted);
                counted = upto;
            }
            add(
                &self.lat_buckets[d][LATENCY_BUCKETS - 1],
                h.len().saturating_sub(counted),
            );
            add(&self.lat_sum_ns[d], (h.mean() * h.len() as f64) as u64);
        }
        add(&self.errors, stats.error_count());
    }
}

/// The published counters of one worker, on its own cache lines.
#[derive(Debug, Default)]
#[repr(align(128))]
pub struct WorkerProgress {
    ops: AtomicU64,
    bytes: AtomicU64,
    lat_p99_ns: AtomicU64,
    /// When the worker last published (its monotonic clock), 0 before.
    at_ns: AtomicU64,
    /// I/Os and bytes per second since the publish before (f64 bits).
    iops: AtomicU64,
    bytes_per_s: AtomicU64,
    measuring: AtomicBool,
    finished: AtomicBool,
    /// Measured totals as of the last interval cut.
    pub live: LiveTotals,
}

impl WorkerProgress {
    /// Publishes measured ops, bytes and p99 total latency so far, at
    /// `now_ns`, with the rates since the previous publish. The rates are
    /// the worker's own, over its own interval, so a reader polling on
    /// another rhythm never sees an interval without a publish as "0 IOPS".
    /// When the counts went back (the ramp ended and the stats were reset),
    /// the previous rates stand for one more interval.
    pub fn publish(&self, ops: u64, bytes: u64, lat_p99_ns: u64, measuring: bool, now_ns: u64) {
        // Only this worker stores these, so its own loads see its last stores.
        let (ops0, bytes0) = (
            self.ops.load(Ordering::Relaxed),
            self.bytes.load(Ordering::Relaxed),
        );
        let at0 = self.at_ns.load(Ordering::Relaxed);
        if at0 > 0 && now_ns > at0 && ops >= ops0 && bytes >= bytes0 {
            let dt = (now_ns - at0) as f64 / 1e9;
            let iops = (ops - ops0) as f64 / dt;
            let bw = (bytes - bytes0) as f64 / dt;
            self.iops.store(iops.to_bits(), Ordering::Relaxed);
            self.bytes_per_s.store(bw.to_bits(), Ordering::Relaxed);
        }
        self.ops.store(ops, Ordering::Relaxed);
        self.bytes.store(bytes, Ordering::Relaxed);
        self.lat_p99_ns.store(lat_p99_ns, Ordering::Relaxed);
        self.at_ns.store(now_ns.max(1), Ordering::Relaxed);
        self.measuring.store(measuring, Ordering::Relaxed);
    }
    /// Marks the worker done.
    pub fn finish(&self) {
        self.finished.store(true, Ordering::Release);
    }
    /// Whether the worker is done.
    pub fn is_finished(&self) -> bool {
        self.finished.load(Ordering::Acquire)
    }
}

/// What all workers have published, summed.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct ProgressSnapshot {
    /// Time since the workers started, in nanoseconds.
    pub elapsed_ns: u64,
    /// Planned total time (ramp + runtime) in nanoseconds, when time-bound.
    pub planned_ns: Option<u64>,
    /// Whether every worker has left its ramp.
    pub measuring: bool,
    /// Measured I/Os so far.
    pub ops: u64,
    /// Measured bytes so far.
    pub bytes: u64,
    /// Largest p99 total latency over the workers, in nanoseconds.
    pub lat_p99_ns: u64,
    /// I/Os per second of the running workers, each over its own last
    /// publish interval (about 250 ms).
    pub iops: f64,
    /// Bytes per second, likewise.
    pub bytes_per_s: f64,
    /// Workers still running.
    pub running_workers: usize,
    /// Where the run's live metrics are served (`--metrics`), if they are.
    pub metrics_addr: Option<SocketAddr>,
}

/// Sums the published counters of `workers`.
pub fn snapshot(
    workers: &[std::sync::Arc<WorkerProgress>],
    elapsed_ns: u64,
    planned_ns: Option<u64>,
) -> ProgressSnapshot {
    let mut s = ProgressSnapshot {
        elapsed_ns,
        planned_ns,
        measuring: true,
        ..ProgressSnapshot::default()
    };
    for w in workers {
        s.ops += w.ops.load(Ordering::Relaxed);
        s.bytes += w.bytes.load(Ordering::Relaxed);
        s.lat_p99_ns = s.lat_p99_ns.max(w.lat_p99_ns.load(Ordering::Relaxed));
        s.measuring &= w.measuring.load(Ordering::Relaxed);
        if !w.is_finished() {
            s.running_workers += 1;
            s.iops += f64::from_bits(w.iops.load(Ordering::Relaxed));
            s.bytes_per_s += f64::from_bits(w.bytes_per_s.load(Ordering::Relaxed));
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    const MS: u64 = 1_000_000;

    #[test]
    fn rates_are_each_workers_own_and_survive_a_poll_between_publishes() {
        let (a, b) = (
            Arc::new(WorkerProgress::default()),
            Arc::new(WorkerProgress::default()),
        );
        a.publish(0, 0, 0, true, 1000 * MS);
        b.publish(0, 0, 0, true, 1100 * MS);
        // Nothing to rate yet: one publish each.
        assert_eq!(snapshot(&[a.clone(), b.clone()], 0, None).iops, 0.0);
        a.publish(1000, 4_096_000, 7, true, 1250 * MS); // 4,000 IOPS
        b.publish(500, 2_048_000, 9, true, 1350 * MS); // 2,000 IOPS
        let s = snapshot(&[a.clone(), b.clone()], 0, None);
        assert_eq!((s.iops, s.bytes_per_s), (6000.0, 6000.0 * 4096.0));
        assert_eq!((s.ops, s.lat_p99_ns, s.running_workers), (1500, 9, 2));
        // A poll with no publish in between sees the same rates, not zero.
        assert_eq!(snapshot(&[a.clone(), b.clone()], 0, None).iops, 6000.0);
        // The ramp ends: counts restart from zero; the last rate stands.
        a.publish(10, 40_960, 7, true, 1500 * MS);
        assert_eq!(snapshot(&[a.clone(), b.clone()], 0, None).iops, 6000.0);
        a.publish(510, 2_088_960, 7, true, 1750 * MS); // 2,000 IOPS
        assert_eq!(snapshot(&[a.clone(), b.clone()], 0, None).iops, 4000.0);
        // A finished worker no longer counts.
        b.finish();
        let s = snapshot(&[a, b], 0, None);
        assert_eq!((s.iops, s.running_workers), (2000.0, 1));
    }
}
