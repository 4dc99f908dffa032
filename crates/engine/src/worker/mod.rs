//! The worker loop: one thread, one backend, one slab of slots.
//!
//! Per batch: queue new I/Os into free slots (stamped with the time the
//! previous reap ended), submit, stamp, reap a batch of completions, stamp
//! once more, record. Two clock reads per batch, one slat record per batch
//! and direction, a clat and a lat record per run of completions of one
//! batch, one relaxed load of the stop flag. Everything it touches was
//! allocated before the first I/O.
//!
//! Per I/O the loop does as little as it can: pop a free slot, ask the
//! generator (not even that when the backend ignores offsets and every I/O
//! has the same shape), hand the request to the backend and store one 8-byte
//! tag (its batch, its direction) in the slot. Times live per batch, in a
//! table of `depth + 1` stamps, each counting its I/Os still in flight; a
//! completion loads its slot's tag, and consecutive completions of one batch
//! are recorded together. Offsets are kept only when verifying (the only
//! reader).
//!
//! Its invariants are asserted once per batch, in release builds too (a
//! compare or two per batch; `bench/null.sh` and `bench/nop.sh` show no
//! cost): what must hold, free slots + I/Os in flight = depth; what must
//! not happen, more completions reaped than were in flight, or a batch
//! completing more I/Os than it issued; and once drained, nothing left in
//! flight and no batch stamp still counting.

use std::sync::atomic::{AtomicBool, Ordering};

use crate::backend::{Backend, Completion, IoRequest};
use crate::gen::IoGen;
use crate::progress::WorkerProgress;
use crate::stats::{Dir, WorkerStats};
use crate::sys;
use results::{CpuUsage, VERIFY_ERRNO};

mod interval;
mod verify;

use interval::Timeline;
pub use interval::WorkerInterval;
use verify::Verify;
pub use verify::{
    check_blocks, classify, fill_blocks, judge, Verdict, VerifyKey, VerifyLog, BLOCK_BYTES,
};

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
    /// Cut the measured time into intervals of this length (`None`: no
    /// intervals, as in a set-up trial).
    pub interval_ns: Option<u64>,
}

/// How a worker loop is set up, besides its backend and generator.
#[derive(Debug, Clone, Copy)]
pub struct LoopConfig<'a> {
    /// I/Os in flight at most: the number of slots (at least 1).
    pub depth: usize,
    /// Start of the caller's buffer region of `depth * slot_bytes` bytes,
    /// which must outlive the loop and every I/O it issues.
    pub buf_base: *mut u8,
    /// Bytes of one slot (the largest I/O).
    pub slot_bytes: usize,
    /// Write verify blocks with this key and check them on reads.
    pub verify: Option<VerifyKey>,
    /// Limits and timing.
    pub limits: LoopLimits,
    /// Stop issuing and drain once set (read once per batch).
    pub stop: &'a AtomicBool,
    /// Where the loop publishes progress.
    pub progress: &'a WorkerProgress,
}

/// What a finished loop hands back.
#[derive(Debug)]
pub struct LoopOutput {
    /// Measured statistics.
    pub stats: WorkerStats,
    /// The measured time, interval by interval (they add up to `stats`).
    pub intervals: Vec<WorkerInterval>,
    /// The ramp's I/O, not measured; `None` without a ramp.
    pub ramp: Option<results::PhaseIo>,
    /// CPU usage over the measured period.
    pub cpu_usage: CpuUsage,
    /// Length of the measured period.
    pub runtime_ns: u64,
    /// What verifying found (with a verify key only); kept from the
    /// start, ramp included: a mismatch is one whenever it is seen.
    pub verify: Option<VerifyLog>,
    /// The backend failure that ended the loop early (a lost connection,
    /// a failed submit or reap): the statistics so far are kept and the
    /// I/Os then in flight counted as errors with its errno (EIO when it
    /// has none), so the run still reports (issue #16).
    pub failure: Option<std::io::Error>,
}

/// What a slot remembers about its I/O in flight.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Tag {
    /// Index of its batch's [`Stamp`].
    stamp: u32,
    /// 1 for a write, 0 for a read (the histogram index).
    dir: u32,
}

impl Tag {
    /// The tag as one `u32` (the stamp index shifted left, the direction in
    /// bit 0): what an I/O without a slot carries through the backend.
    #[inline(always)]
    fn pack(self) -> u32 {
        self.stamp << 1 | self.dir
    }
    #[inline(always)]
    fn unpack(code: u32) -> Tag {
        Tag {
            stamp: code >> 1,
            dir: code & 1,
        }
    }
}

/// Consecutive completions with one packed tag, `failed` of them errors.
#[derive(Debug, Clone, Copy, Default)]
struct TagRun {
    code: u32,
    len: u32,
    failed: u32,
}

/// Times of one submitted batch, shared by its I/Os.
#[derive(Debug, Clone, Copy, Default)]
struct Stamp {
    /// When the batch was submitted.
    submitted_ns: u64,
    /// When it was queued (the end of the reap before it).
    queued_ns: u64,
    /// Its I/Os still in flight; the stamp is reused only at zero.
    inflight: u32,
}

/// The state of one worker's loop, all allocated up front.
pub struct WorkerLoop<'a, B: Backend> {
    backend: B,
    gen: IoGen,
    /// Slots: the most I/Os in flight.
    depth: usize,
    tags: Box<[Tag]>,
    /// Batch stamps: `depth + 1`, so a free one always exists (at most
    /// `depth` batches have I/Os in flight).
    stamps: Box<[Stamp]>,
    /// The stamp of the batch being queued.
    stamp: u32,
    /// Offsets of the slots' I/Os; only kept when verifying.
    offsets: Box<[u64]>,
    /// Indexes of the slots' I/Os among the reads (or the writes); only
    /// kept when verifying.
    seqs: Box<[u64]>,
    /// Free slot indexes, a stack of `free_len` entries.
    free: Box<[u32]>,
    free_len: usize,
    /// Reads and writes in the batch being queued.
    batch_counts: [u64; 2],
    comps: Vec<Completion>,
    /// What was recorded since the last interval cut.
    stats: WorkerStats,
    /// The cuts so far, and what they add up to.
    timeline: Timeline,
    buf_base: *mut u8,
    slot_bytes: usize,
    inflight: usize,
    issued_ios: u64,
    issued_bytes: u64,
    verify: Option<VerifyKey>,
    verify_log: VerifyLog,
    /// Writes issued with a verify key (their sequence numbers).
    verify_writes: u64,
    /// Reads issued with a verify key (a replay's write numbers).
    verify_reads: u64,
    limits: LoopLimits,
    stop: &'a AtomicBool,
    progress: &'a WorkerProgress,
    begin_ns: u64,
    /// Runs of equal tags among the completions just reaped (fixed I/Os).
    runs: Box<[TagRun]>,
    runs_len: usize,
    /// Whether the backend moves data (see [`Backend::moves_data`]).
    moves_data: bool,
    /// Lengths of the slots' I/Os; only kept for a backend that moves no
    /// data (its completions carry no byte count).
    lens: Box<[u32]>,
    /// Direction and length of every I/O, when the backend moves no data
    /// and they never vary: I/Os then need no generator and no slot, and
    /// carry their [`Tag`] (packed) as the backend's tag.
    fixed: Option<(Dir, u32)>,
}

impl<'a, B: Backend> WorkerLoop<'a, B> {
    /// A loop of `backend` over I/Os from `gen`, set up as `config` says.
    pub fn new(backend: B, gen: IoGen, config: LoopConfig<'a>) -> Self {
        let LoopConfig {
            depth,
            buf_base,
            slot_bytes,
            verify,
            limits,
            stop,
            progress,
        } = config;
        let depth = depth.max(1);
        let moves_data = backend.moves_data();
        let fixed = if moves_data || verify.is_some() {
            None
        } else {
            gen.fixed_shape()
        };
        WorkerLoop {
            backend,
            gen,
            depth,
            tags: vec![Tag::default(); depth].into_boxed_slice(),
            stamps: vec![Stamp::default(); depth + 1].into_boxed_slice(),
            stamp: 0,
            offsets: vec![0; if verify.is_some() { depth } else { 0 }].into_boxed_slice(),
            seqs: vec![0; if verify.is_some() { depth } else { 0 }].into_boxed_slice(),
            free: (0..depth as u32).rev().collect(),
            free_len: depth,
            batch_counts: [0; 2],
            comps: vec![Completion::default(); depth],
            stats: WorkerStats::new(),
            timeline: Timeline::new(limits.interval_ns),
            buf_base,
            slot_bytes,
            inflight: 0,
            issued_ios: 0,
            issued_bytes: 0,
            verify,
            verify_log: if verify.is_some() {
                VerifyLog::default()
            } else {
                VerifyLog {
                    ranges: Vec::new(),
                    ..VerifyLog::default()
                }
            },
            verify_writes: 0,
            verify_reads: 0,
            limits,
            stop,
            progress,
            begin_ns: 0,
            moves_data,
            lens: vec![0; if moves_data { 0 } else { depth }].into_boxed_slice(),
            runs: vec![TagRun::default(); if fixed.is_some() { depth } else { 0 }]
                .into_boxed_slice(),
            runs_len: 0,
            fixed,
        }
    }

    /// Runs until the time, I/O or byte limit or the stop flag, then drains
    /// every I/O in flight. A backend error ends the loop early: the output
    /// holds it as `failure` (see [`LoopOutput::failure`]).
    pub fn run(mut self) -> std::io::Result<LoopOutput> {
        self.begin_ns = sys::now_ns();
        let ramp_end_ns = self.begin_ns + self.limits.ramp_ns;
        let end_ns = self
            .limits
            .runtime_ns
            .map_or(u64::MAX, |r| ramp_end_ns.saturating_add(r));
        let mut measuring = self.limits.ramp_ns == 0;
        let mut usage0 = self.usage();
        let mut measure_start_ns = self.begin_ns;
        let mut next_publish_ns = self.begin_ns + PUBLISH_INTERVAL_NS;
        let mut stopping = false;
        let mut now_ns = self.begin_ns;
        let mut ramp = None;
        if measuring {
            self.timeline.begin(now_ns, usage0);
        }
        self.publish(measuring);
        let failure = loop {
            if !stopping
                && (now_ns >= end_ns || self.stop.load(Ordering::Relaxed) || self.exhausted())
            {
                stopping = true;
            }
            if !measuring && now_ns >= ramp_end_ns {
                ramp = Some(interval::phase(&self.stats, now_ns - self.begin_ns));
                self.stats.reset();
                usage0 = self.usage();
                measure_start_ns = now_ns;
                measuring = true;
                self.timeline.begin(now_ns, usage0);
            }
            if stopping && self.inflight == 0 {
                break None;
            }
            let queued = if stopping { 0 } else { self.fill(now_ns) };
            if let Err(e) = self.backend.submit() {
                break Some(e);
            }
            if queued > 0 {
                self.stamp_batch(queued, now_ns, sys::now_ns());
            }
            let min = self.limits.batch_complete_min.min(self.inflight);
            let reaped = if self.fixed.is_some() {
                self.reap_fixed(min)
            } else {
                self.backend.reap(&mut self.comps, min)
            };
            let n = match reaped {
                Ok(n) => n,
                Err(e) => break Some(e),
            };
            self.assert_reaped(n);
            now_ns = sys::now_ns();
            self.complete(n, now_ns);
            self.assert_slots();
            if now_ns >= self.timeline.next_cut_ns {
                let usage = self.usage();
                self.timeline
                    .cut(&mut self.stats, now_ns, usage, &self.progress.live);
            }
            if now_ns >= next_publish_ns {
                next_publish_ns = now_ns + PUBLISH_INTERVAL_NS;
                self.publish(measuring);
            }
            if n == 0 && self.inflight == 0 && !stopping {
                self.throttle(now_ns);
            }
        };
        match &failure {
            None => self.assert_drained(),
            Some(e) => {
                self.count_lost(e);
                now_ns = sys::now_ns();
            }
        }
        if !measuring {
            // Stopped in the ramp: what ran is all there is, reported as
            // the numbers (the run says it was interrupted in the ramp),
            // one interval from the start.
            self.timeline.begin(self.begin_ns, usage0);
        }
        let usage = self.usage();
        self.timeline
            .cut(&mut self.stats, now_ns, usage, &self.progress.live);
        self.publish(measuring);
        let runtime_ns = now_ns.saturating_sub(measure_start_ns);
        Ok(LoopOutput {
            cpu_usage: sys::delta(&usage, &usage0, runtime_ns),
            stats: self.timeline.done,
            intervals: self.timeline.intervals,
            ramp,
            runtime_ns,
            verify: self.verify.map(|_| self.verify_log),
            failure,
        })
    }

    /// This thread's CPU counters, with the backend's empty polls so far.
    fn usage(&self) -> results::CpuUsage {
        results::CpuUsage {
            idle_poll_ns: self.backend.idle_poll_ns(),
            ..sys::thread_usage()
        }
    }

    /// After the backend failed with `e`: the I/Os in flight will never
    /// complete here, so each is an error with its errno (EIO when it has
    /// none), one at least, so the run says it failed.
    fn count_lost(&mut self, e: &std::io::Error) {
        let errno = e.raw_os_error().unwrap_or(libc::EIO);
        for _ in 0..self.inflight.max(1) {
            self.stats.record_error(errno);
        }
    }

    /// What must not happen, checked once per batch before `n` reaped
    /// completions are accounted: more completions than I/Os in flight
    /// (a backend handing one back twice, or one it was never given).
    /// Kept in release builds: a compare per batch costs nothing
    /// measurable (`bench/null.sh`, `bench/nop.sh`).
    #[inline(always)]
    fn assert_reaped(&self, n: usize) {
        assert!(
            n <= self.inflight,
            "the backend reaped {n} completions with {} I/Os in flight",
            self.inflight
        );
    }

    /// What must hold after every batch: each slot is free or in flight,
    /// never both or neither (free slots + I/Os in flight = depth).
    #[inline(always)]
    fn assert_slots(&self) {
        assert!(
            self.free_len + self.inflight == self.depth,
            "{} free slots + {} I/Os in flight != depth {}",
            self.free_len,
            self.inflight,
            self.depth
        );
    }

    /// What must hold once the loop has drained: nothing in flight, every
    /// slot free, and no batch stamp still counting an I/O.
    fn assert_drained(&self) {
        self.assert_slots();
        assert_eq!(self.inflight, 0, "the loop ended with I/Os in flight");
        let held = self.stamps.iter().filter(|s| s.inflight > 0).count();
        assert_eq!(
            held, 0,
            "{held} batch stamps still count I/Os after the drain"
        );
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

    /// Queues new I/Os into free slots, within the limits, tagged with a free
    /// batch stamp; returns how many.
    fn fill(&mut self, queued_ns: u64) -> usize {
        self.stamp = self.free_stamp();
        match self.fixed {
            Some((dir, len)) => self.fill_fixed(queued_ns, dir, len),
            None => self.fill_slots(queued_ns),
        }
    }

    /// A stamp with no I/O in flight: the one after the last batch's, as a
    /// rule (a batch's I/Os usually complete before `depth` batches pass).
    /// There always is one: at most `depth` batches have I/Os in flight
    /// and there are `depth + 1` stamps; the search is bounded by them.
    fn free_stamp(&self) -> u32 {
        let n = self.stamps.len() as u32;
        let mut i = self.stamp;
        for _ in 0..n {
            i = if i + 1 == n { 0 } else { i + 1 };
            if self.stamps[i as usize].inflight == 0 {
                return i;
            }
        }
        panic!(
            "no free batch stamp among {n} with {} I/Os in flight",
            self.inflight
        )
    }

    /// How many I/Os may be queued now.
    fn room(&self, queued_ns: u64) -> u64 {
        self.rate_room(queued_ns)
            .min(self.free_len as u64)
            .min(self.limits.max_ios.saturating_sub(self.issued_ios))
    }

    /// [`Self::fill`] for a backend that moves no data, every I/O of
    /// direction `dir` and length `len`: no generator, no slots; each I/O
    /// carries its packed tag.
    fn fill_fixed(&mut self, queued_ns: u64, dir: Dir, len: u32) -> usize {
        let bytes_left = self.limits.max_bytes.saturating_sub(self.issued_bytes);
        let by_bytes = bytes_left.div_ceil(u64::from(len.max(1)));
        let n = self.room(queued_ns).min(by_bytes) as usize;
        let write = dir == Dir::Write;
        let code = Tag {
            stamp: self.stamp,
            dir: u32::from(write),
        }
        .pack();
        // SAFETY: this backend moves no data (`fill_fixed` runs only then),
        // so it ignores the null `buf` and hands the kernel no memory.
        unsafe {
            self.backend.queue_many(
                IoRequest {
                    slot: code,
                    dir,
                    offset_bytes: 0,
                    len_bytes: len,
                    buf: std::ptr::null_mut(),
                },
                n,
            )
        };
        self.free_len -= n;
        self.inflight += n;
        self.issued_ios += n as u64;
        self.issued_bytes += n as u64 * u64::from(len);
        let w = if write { n as u64 } else { 0 };
        self.batch_counts = [n as u64 - w, w];
        n
    }

    /// [`Self::fill`] with I/Os from the generator, each in a free slot.
    /// Counters are kept in locals and written back once per batch.
    #[inline(always)]
    fn fill_slots(&mut self, queued_ns: u64) -> usize {
        let room = self.room(queued_ns);
        let bytes_left = self.limits.max_bytes.saturating_sub(self.issued_bytes);
        let stamp = self.stamp;
        let (mut n, mut writes, mut bytes) = (0usize, 0u64, 0u64);
        let mut free_len = self.free_len;
        let (free, tags, backend, gen) = (
            &*self.free,
            &mut *self.tags,
            &mut self.backend,
            &mut self.gen,
        );
        let (buf_base, slot_bytes) = (self.buf_base, self.slot_bytes);
        while (n as u64) < room && bytes < bytes_left {
            free_len -= 1;
            let slot = free[free_len];
            let io = gen.next_io();
            // Inside the caller's region of depth * slot_bytes (slot < depth).
            let buf = buf_base.wrapping_add(slot as usize * slot_bytes);
            let write = io.dir == Dir::Write;
            if let Some(key) = &self.verify {
                self.offsets[slot as usize] = io.offset_bytes;
                self.seqs[slot as usize] = if write {
                    self.verify_writes
                } else {
                    self.verify_reads
                };
                self.verify_reads += u64::from(!write);
                if write {
                    // SAFETY: the slot is free (just popped): no I/O owns its
                    // buffer until `queue` hands it to the backend below.
                    let b = unsafe { std::slice::from_raw_parts_mut(buf, slot_bytes) };
                    fill_blocks(b, io.offset_bytes, io.len_bytes, key, self.verify_writes);
                    self.verify_writes += 1;
                }
            }
            // SAFETY: `buf` is slot `slot`'s `slot_bytes` (≥ the I/O's
            // length) of the caller's region, which outlives the loop and
            // every I/O it issues (`LoopConfig::buf_base`); the slot was just
            // popped from the free stack and goes back only when the
            // completion carrying it is reaped, so until then nothing else
            // touches or queues that buffer.
            unsafe {
                backend.queue(IoRequest {
                    slot,
                    dir: io.dir,
                    offset_bytes: io.offset_bytes,
                    len_bytes: io.len_bytes,
                    buf,
                })
            };
            tags[slot as usize] = Tag {
                stamp,
                dir: u32::from(write),
            };
            if !self.moves_data {
                self.lens[slot as usize] = io.len_bytes;
            }
            n += 1;
            writes += u64::from(write);
            bytes += u64::from(io.len_bytes);
        }
        self.free_len = free_len;
        self.inflight += n;
        self.issued_ios += n as u64;
        self.issued_bytes += bytes;
        self.batch_counts = [n as u64 - writes, writes];
        n
    }

    /// Stamps the `n` I/Os just submitted and records their submission
    /// latency.
    fn stamp_batch(&mut self, n: usize, queued_ns: u64, submitted_ns: u64) {
        self.stamps[self.stamp as usize] = Stamp {
            submitted_ns,
            queued_ns,
            inflight: n as u32,
        };
        let slat_ns = submitted_ns.saturating_sub(queued_ns).max(1);
        for (d, &c) in self.batch_counts.iter().enumerate() {
            if c > 0 {
                self.stats.hist[d].slat.saturating_record_n(slat_ns, c);
            }
        }
    }

    /// Accounts `n` reaped completions, all stamped `reaped_ns`. Counters
    /// are kept in locals and written back once per batch; a run of
    /// completions with the same tag is recorded as one. The fields it uses
    /// are borrowed apart up front so the loop keeps them in registers.
    fn complete(&mut self, n: usize, reaped_ns: u64) {
        match self.fixed {
            Some((_, len)) => self.complete_fixed(n, reaped_ns, len),
            None => self.complete_slots(n, reaped_ns),
        }
    }

    /// Reaps I/Os without slots, run-length coding their tags into `runs`
    /// straight from the backend's completion queue.
    fn reap_fixed(&mut self, min: usize) -> std::io::Result<usize> {
        let runs = &mut self.runs[..];
        let stats = &mut self.stats;
        let mut runs_len = 0;
        let mut cur = TagRun::default();
        let n = self.backend.reap_each(&mut self.comps, min, |c| {
            if c.slot != cur.code || cur.len == 0 {
                if cur.len > 0 {
                    runs[runs_len] = cur;
                    runs_len += 1;
                }
                cur = TagRun {
                    code: c.slot,
                    len: 0,
                    failed: 0,
                };
            }
            cur.len += 1;
            if c.result < 0 {
                cur.failed += 1;
                stats.record_error(-c.result);
            }
        })?;
        if cur.len > 0 {
            runs[runs_len] = cur;
            runs_len += 1;
        }
        self.runs_len = runs_len;
        Ok(n)
    }

    /// [`Self::complete`] for I/Os without slots, each `len` bytes: records
    /// the runs [`Self::reap_fixed`] counted.
    fn complete_fixed(&mut self, n: usize, reaped_ns: u64, len: u32) {
        for r in &self.runs[..std::mem::take(&mut self.runs_len)] {
            let tag = Tag::unpack(r.code);
            let ok = u64::from(r.len - r.failed);
            end_run(&mut self.stamps, &mut self.stats, tag, r.len, ok, reaped_ns);
            self.stats.ops[tag.dir as usize] += ok;
            self.stats.bytes[tag.dir as usize] += ok * u64::from(len);
        }
        self.free_len += n;
        self.inflight -= n;
    }

    /// [`Self::complete`] for I/Os in slots.
    fn complete_slots(&mut self, n: usize, reaped_ns: u64) {
        let moves_data = self.moves_data;
        let lens = &*self.lens;
        let comps = &self.comps[..n];
        let tags = &*self.tags;
        let free = &mut self.free[..];
        let stamps = &mut self.stamps[..];
        let stats = &mut self.stats;
        let log = &mut self.verify_log;
        let verify = self.verify.map(|key| Verify {
            key,
            offsets: &self.offsets,
            seqs: &self.seqs,
            buf_base: self.buf_base,
            slot_bytes: self.slot_bytes,
        });
        // Totals and the write share, in registers (indexing an array by
        // direction would chain every completion through a memory store).
        let (mut ops, mut bytes, mut w_ops, mut w_bytes) = (0u64, 0u64, 0u64, 0u64);
        let mut free_len = self.free_len;
        let (mut run, mut run_len, mut run_ok) = (Tag::default(), 0u32, 0u64);
        let (writes_issued, mut window) = (self.verify_writes, log.sequence_window);
        for &c in comps {
            let tag = tags[c.slot as usize];
            free[free_len] = c.slot;
            free_len += 1;
            if let Some(v) = verify.as_ref().filter(|_| tag.dir == 1) {
                window = window.max(v.issued_past(c.slot, writes_issued));
            }
            if tag != run {
                end_run(stamps, stats, run, run_len, run_ok, reaped_ns);
                (run, run_len, run_ok) = (tag, 0, 0);
            }
            run_len += 1;
            if c.result < 0 {
                stats.record_error(-c.result);
                continue;
            }
            if moves_data && c.result == 0 {
                // No byte moved: the device is gone (reads past its end,
                // as after a controller's removal), never a success.
                stats.record_error(libc::ENODATA);
                continue;
            }
            if let Some(v) = &verify {
                if tag.dir == 0 && !v.check(c, log) {
                    stats.record_error(VERIFY_ERRNO);
                    continue;
                }
            }
            let done = if moves_data {
                c.result as u64
            } else {
                u64::from(lens[c.slot as usize])
            };
            let w = u64::from(tag.dir);
            run_ok += 1;
            ops += 1;
            bytes += done;
            w_ops += w;
            w_bytes += w * done;
        }
        end_run(stamps, stats, run, run_len, run_ok, reaped_ns);
        log.sequence_window = window;
        self.free_len = free_len;
        self.inflight -= n;
        self.stats.ops[0] += ops - w_ops;
        self.stats.ops[1] += w_ops;
        self.stats.bytes[0] += bytes - w_bytes;
        self.stats.bytes[1] += w_bytes;
    }

    /// Publishes the measured counts so far (the cut intervals and the one
    /// running) and the p99 of the latest latencies: the running
    /// interval's, or the last cut's totals early in one.
    fn publish(&self, measuring: bool) {
        let (s, done) = (&self.stats, &self.timeline.done);
        let ops = s.ops[0] + s.ops[1] + done.ops[0] + done.ops[1];
        let bytes = s.bytes[0] + s.bytes[1] + done.bytes[0] + done.bytes[1];
        let h = if s.ops[0] + s.ops[1] > 0 { s } else { done };
        let d = if h.ops[0] >= h.ops[1] { 0 } else { 1 };
        let p99 = if h.ops[d] > 0 {
            h.hist[d].lat.value_at_quantile(0.99)
        } else {
            0
        };
        self.progress
            .publish(ops, bytes, p99, measuring, sys::now_ns());
    }
}

/// Ends a run of `len` completions of one batch and direction: releases
/// them from the batch's stamp and records the latencies of its `ok`
/// successes.
#[inline]
fn end_run(
    stamps: &mut [Stamp],
    stats: &mut WorkerStats,
    tag: Tag,
    len: u32,
    ok: u64,
    reaped_ns: u64,
) {
    if len == 0 {
        return;
    }
    let s = &mut stamps[tag.stamp as usize];
    // Must not happen: a batch completing more I/Os than it issued.
    assert!(s.inflight >= len, "more completions than the batch issued");
    s.inflight -= len;
    if ok > 0 {
        let clat_ns = reaped_ns.saturating_sub(s.submitted_ns).max(1);
        let lat_ns = reaped_ns.saturating_sub(s.queued_ns).max(1);
        let h = &mut stats.hist[tag.dir as usize];
        h.clat.saturating_record_n(clat_ns, ok);
        h.lat.saturating_record_n(lat_ns, ok);
    }
}

#[cfg(test)]
mod tests;
