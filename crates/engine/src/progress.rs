//! Live progress: each worker owns one [`WorkerProgress`] and publishes into
//! it a few times a second (relaxed stores of its own counters, written by it
//! alone); the main thread reads them. Nothing on the I/O path waits on it.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// The published counters of one worker, on its own cache lines.
#[derive(Debug, Default)]
#[repr(align(128))]
pub struct WorkerProgress {
    ops: AtomicU64,
    bytes: AtomicU64,
    lat_p99_ns: AtomicU64,
    measuring: AtomicBool,
    finished: AtomicBool,
}

impl WorkerProgress {
    /// Publishes measured ops, bytes and p99 total latency so far.
    pub fn publish(&self, ops: u64, bytes: u64, lat_p99_ns: u64, measuring: bool) {
        self.ops.store(ops, Ordering::Relaxed);
        self.bytes.store(bytes, Ordering::Relaxed);
        self.lat_p99_ns.store(lat_p99_ns, Ordering::Relaxed);
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
    /// Workers still running.
    pub running_workers: usize,
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
        }
    }
    s
}
