//! The worker loop: one thread, one backend, one slab of slots.
//!
//! Per batch: queue new I/Os into free slots (stamped with the time the
//! previous reap ended), submit, stamp, reap a batch of completions into a
//! fixed array, stamp once more, record. Three clock reads per batch, three
//! histogram records per run of equal latencies, one relaxed load of the stop
//! flag. Everything it touches was allocated before the first I/O.

use std::sync::atomic::{AtomicBool, Ordering};

use crate::backend::{Backend, Completion, IoRequest};
use crate::gen::{mix64, IoGen};
use crate::progress::WorkerProgress;
use crate::result::{CpuUsage, VERIFY_ERRNO};
use crate::stats::{Dir, WorkerStats};
use crate::sys;

/// How often a worker publishes progress.
const PUBLISH_INTERVAL_NS: u64 = 250_000_000;

/// Limits and timing of one job.
#[derive(Debug, Clone, Copy)]
pub struct LoopLimits {
    /// Warm-up before measuring.
    pub ramp_ns: u64,
    /// Measured time after the ramp (`None`: until the other limits).
    pub runtime_ns: Option<u64>,
    /// Stop after issuing this many I/Os.
    pub max_ios: u64,
    /// Stop after issuing this many bytes.
    pub max_bytes: u64,
    /// Cap on I/Os per second.
    pub rate_iops: Option<u64>,
    /// Wait for at least this many completions per reap (≥ 1).
    pub batch_complete_min: usize,
}

/// What a finished loop hands back.
#[derive(Debug)]
pub struct LoopOutput {
    /// Measured statistics.
    pub stats: WorkerStats,
    /// CPU usage over the measured period.
    pub cpu_usage: CpuUsage,
    /// Length of the measured period.
    pub runtime_ns: u64,
}

#[derive(Debug, Clone, Copy, Default)]
struct Slot {
    queued_ns: u64,
    submitted_ns: u64,
    offset_bytes: u64,
    write: bool,
}

/// Consecutive equal (direction, clat, lat) samples, recorded as one.
#[derive(Debug, Clone, Copy, Default)]
struct Run {
    dir: usize,
    clat_ns: u64,
    lat_ns: u64,
    count: u64,
}

/// The state of one worker's loop, all allocated up front.
pub struct WorkerLoop<'a, B: Backend> {
    backend: B,
    gen: IoGen,
    slots: Vec<Slot>,
    free: Vec<u32>,
    batch: Vec<u32>,
    batch_counts: [u64; 2],
    comps: Vec<Completion>,
    stats: WorkerStats,
    buf_base: *mut u8,
    slot_bytes: usize,
    inflight: usize,
    issued_ios: u64,
    issued_bytes: u64,
    verify_seed: Option<u64>,
    limits: LoopLimits,
    stop: &'a AtomicBool,
    progress: &'a WorkerProgress,
    run: Run,
    begin_ns: u64,
}

impl<'a, B: Backend> WorkerLoop<'a, B> {
    /// A loop over `depth` slots of `slot_bytes` each, starting at `buf_base`
    /// (the caller's region of `depth * slot_bytes` bytes, which must outlive
    /// the loop and every I/O it issues).
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        backend: B,
        gen: IoGen,
        depth: usize,
        buf_base: *mut u8,
        slot_bytes: usize,
        verify_seed: Option<u64>,
        limits: LoopLimits,
        stop: &'a AtomicBool,
        progress: &'a WorkerProgress,
    ) -> Self {
        WorkerLoop {
            backend,
            gen,
            slots: vec![Slot::default(); depth],
            free: (0..depth as u32).rev().collect(),
            batch: Vec::with_capacity(depth),
            batch_counts: [0; 2],
            comps: vec![Completion::default(); depth],
            stats: WorkerStats::new(),
            buf_base,
            slot_bytes,
            inflight: 0,
            issued_ios: 0,
            issued_bytes: 0,
            verify_seed,
            limits,
            stop,
            progress,
            run: Run::default(),
            begin_ns: 0,
        }
    }

    /// Runs until the time, I/O or byte limit or the stop flag, then drains
    /// every I/O in flight. A backend error ends the loop with that error.
    pub fn run(mut self) -> std::io::Result<LoopOutput> {
        self.begin_ns = sys::now_ns();
        let ramp_end_ns = self.begin_ns + self.limits.ramp_ns;
        let end_ns = self
            .limits
            .runtime_ns
            .map_or(u64::MAX, |r| ramp_end_ns.saturating_add(r));
        let mut measuring = self.limits.ramp_ns == 0;
        let mut usage0 = sys::thread_usage();
        let mut measure_start_ns = self.begin_ns;
        let mut next_publish_ns = self.begin_ns + PUBLISH_INTERVAL_NS;
        let mut stopping = false;
        let mut now_ns = self.begin_ns;
        self.publish(measuring);
        loop {
            if !stopping
                && (now_ns >= end_ns || self.stop.load(Ordering::Relaxed) || self.exhausted())
            {
                stopping = true;
            }
            if !measuring && now_ns >= ramp_end_ns {
                self.stats.reset();
                usage0 = sys::thread_usage();
                measure_start_ns = now_ns;
                measuring = true;
            }
            if stopping && self.inflight == 0 {
                break;
            }
            if !stopping {
                self.fill(now_ns);
            }
            self.backend.submit()?;
            let submitted_ns = sys::now_ns();
            self.stamp_batch(submitted_ns);
            let min = self.limits.batch_complete_min.min(self.inflight);
            let n = self.backend.reap(&mut self.comps, min)?;
            now_ns = sys::now_ns();
            self.complete(n, now_ns);
            if now_ns >= next_publish_ns {
                next_publish_ns = now_ns + PUBLISH_INTERVAL_NS;
                self.publish(measuring);
            }
            if n == 0 && self.inflight == 0 && !stopping {
                self.throttle(now_ns);
            }
        }
        self.publish(measuring);
        let runtime_ns = now_ns.saturating_sub(measure_start_ns);
        Ok(LoopOutput {
            cpu_usage: sys::usage_since(&usage0, runtime_ns),
            stats: self.stats,
            runtime_ns,
        })
    }

    fn exhausted(&self) -> bool {
        self.issued_ios >= self.limits.max_ios || self.issued_bytes >= self.limits.max_bytes
    }

    /// How many I/Os the rate limit allows now.
    fn rate_room(&self, now_ns: u64) -> u64 {
        match self.limits.rate_iops {
            None => u64::MAX,
            Some(rate) => {
                let elapsed = now_ns.saturating_sub(self.begin_ns) as u128;
                let allowed = (elapsed * rate as u128 / 1_000_000_000) as u64 + 1;
                allowed.saturating_sub(self.issued_ios)
            }
        }
    }

    /// Sleeps until the rate limit allows the next I/O (nothing in flight).
    fn throttle(&self, now_ns: u64) {
        if let Some(rate) = self.limits.rate_iops {
            let due_ns = self.begin_ns
                + (self.issued_ios as u128 * 1_000_000_000 / rate.max(1) as u128) as u64;
            let wait_ns = due_ns.saturating_sub(now_ns).min(10_000_000);
            if wait_ns > 0 {
                std::thread::sleep(std::time::Duration::from_nanos(wait_ns));
            }
        }
    }

    /// Queues new I/Os into free slots, within the limits. Counters are
    /// kept in locals and written back once per batch.
    fn fill(&mut self, queued_ns: u64) {
        let room = self
            .rate_room(queued_ns)
            .min(self.free.len() as u64)
            .min(self.limits.max_ios.saturating_sub(self.issued_ios));
        let bytes_left = self.limits.max_bytes.saturating_sub(self.issued_bytes);
        let (mut n, mut writes, mut bytes) = (0u64, 0u64, 0u64);
        while n < room && bytes < bytes_left {
            let Some(slot) = self.free.pop() else { break };
            let io = self.gen.next_io();
            let buf = self.slot_ptr(slot);
            let write = io.dir == Dir::Write;
            if let (Some(seed), true) = (self.verify_seed, write) {
                // SAFETY: the slot is free (just popped): no I/O owns its
                // buffer until `queue` hands it to the backend below.
                let bytes = unsafe { std::slice::from_raw_parts_mut(buf, self.slot_bytes) };
                fill_pattern(bytes, io.offset_bytes, io.len_bytes, seed);
            }
            self.slots[slot as usize] = Slot {
                queued_ns,
                submitted_ns: 0,
                offset_bytes: io.offset_bytes,
                write,
            };
            self.backend.queue(IoRequest {
                slot,
                dir: io.dir,
                offset_bytes: io.offset_bytes,
                len_bytes: io.len_bytes,
                buf,
            });
            self.batch.push(slot);
            n += 1;
            writes += u64::from(write);
            bytes += u64::from(io.len_bytes);
        }
        self.inflight += n as usize;
        self.issued_ios += n;
        self.issued_bytes += bytes;
        self.batch_counts = [n - writes, writes];
    }

    /// Start of a slot's buffer: slot < depth, so `slot_bytes` from there lie
    /// inside the caller's region of depth * slot_bytes bytes.
    fn slot_ptr(&self, slot: u32) -> *mut u8 {
        debug_assert!((slot as usize) < self.slots.len());
        self.buf_base.wrapping_add(slot as usize * self.slot_bytes)
    }

    /// Stamps the batch just submitted and records its submission latency.
    fn stamp_batch(&mut self, submitted_ns: u64) {
        let Some(&first) = self.batch.first() else {
            return;
        };
        let queued_ns = self.slots[first as usize].queued_ns;
        for &s in &self.batch {
            self.slots[s as usize].submitted_ns = submitted_ns;
        }
        self.batch.clear();
        let slat_ns = submitted_ns.saturating_sub(queued_ns).max(1);
        for (d, &c) in self.batch_counts.iter().enumerate() {
            if c > 0 {
                self.stats.hist[d].slat.saturating_record_n(slat_ns, c);
            }
        }
    }

    /// Accounts `n` reaped completions, all stamped `reaped_ns`. Counters
    /// are kept in locals and written back once per batch.
    fn complete(&mut self, n: usize, reaped_ns: u64) {
        let mut ops = [0u64; 2];
        let mut bytes = [0u64; 2];
        for i in 0..n {
            let c = self.comps[i];
            let slot = self.slots[c.slot as usize];
            let d = slot.write as usize;
            self.free.push(c.slot);
            if c.result < 0 {
                self.stats.record_error(-c.result);
                continue;
            }
            if let (Some(seed), false) = (self.verify_seed, slot.write) {
                // SAFETY: the completion for this slot was just reaped, so
                // the backend has handed its buffer back to this worker.
                let buf =
                    unsafe { std::slice::from_raw_parts(self.slot_ptr(c.slot), self.slot_bytes) };
                if !check_pattern(buf, slot.offset_bytes, c.result as u32, seed) {
                    self.stats.record_error(VERIFY_ERRNO);
                    continue;
                }
            }
            ops[d] += 1;
            bytes[d] += c.result as u64;
            let clat_ns = reaped_ns.saturating_sub(slot.submitted_ns).max(1);
            let lat_ns = reaped_ns.saturating_sub(slot.queued_ns).max(1);
            let r = &mut self.run;
            if r.count > 0 && r.dir == d && r.clat_ns == clat_ns && r.lat_ns == lat_ns {
                r.count += 1;
            } else {
                self.flush_run();
                self.run = Run {
                    dir: d,
                    clat_ns,
                    lat_ns,
                    count: 1,
                };
            }
        }
        self.flush_run();
        self.inflight -= n;
        for d in 0..2 {
            self.stats.ops[d] += ops[d];
            self.stats.bytes[d] += bytes[d];
        }
    }

    fn flush_run(&mut self) {
        let r = self.run;
        if r.count > 0 {
            let h = &mut self.stats.hist[r.dir];
            h.clat.saturating_record_n(r.clat_ns, r.count);
            h.lat.saturating_record_n(r.lat_ns, r.count);
            self.run.count = 0;
        }
    }

    fn publish(&self, measuring: bool) {
        let s = &self.stats;
        let ops = s.ops[0] + s.ops[1];
        let d = if s.ops[0] >= s.ops[1] { 0 } else { 1 };
        let p99 = if ops > 0 {
            s.hist[d].lat.value_at_quantile(0.99)
        } else {
            0
        };
        self.progress
            .publish(ops, s.bytes[0] + s.bytes[1], p99, measuring);
    }
}

/// The verify pattern: every 8-byte word holds a hash of its byte offset in
/// the target, so misplaced or stale data is caught, not only corrupt data.
#[inline]
fn pattern_word(offset_bytes: u64, seed: u64) -> u64 {
    mix64(offset_bytes ^ seed)
}

/// Writes the verify pattern for `len` bytes at `offset` into `buf`.
pub fn fill_pattern(buf: &mut [u8], offset_bytes: u64, len_bytes: u32, seed: u64) {
    for (i, w) in buf[..len_bytes as usize].chunks_exact_mut(8).enumerate() {
        w.copy_from_slice(&pattern_word(offset_bytes + 8 * i as u64, seed).to_le_bytes());
    }
}

/// Whether `buf` holds the verify pattern for `len` bytes at `offset`.
pub fn check_pattern(buf: &[u8], offset_bytes: u64, len_bytes: u32, seed: u64) -> bool {
    buf[..len_bytes as usize]
        .chunks_exact(8)
        .enumerate()
        .all(|(i, w)| w == pattern_word(offset_bytes + 8 * i as u64, seed).to_le_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pattern_round_trip_and_mismatch() {
        let mut buf = vec![0u8; 4096];
        fill_pattern(&mut buf, 8192, 4096, 7);
        assert!(check_pattern(&buf, 8192, 4096, 7));
        // Stale data from another offset must not pass.
        assert!(!check_pattern(&buf, 0, 4096, 7));
        buf[100] ^= 1;
        assert!(!check_pattern(&buf, 8192, 4096, 7));
    }
}
