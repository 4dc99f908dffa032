//! The worker loop against scripted backends: batch stamps, backends that
//! move no data, the verify pattern, and the invariants it asserts.

use super::*;
use planner::{RwMode, Workload};
use std::collections::VecDeque;

/// A scripted device: completes queued I/Os at the next reap, except
/// that the very first I/O is held back for `hold` reaps; with
/// `moves_data` false it behaves like a NOP ring (result 0, the tag
/// handed back as given).
struct Scripted {
    queued: Vec<IoRequest>,
    done: VecDeque<Completion>,
    held: Option<(Completion, u32)>,
    hold: u32,
    first: bool,
    moves_data: bool,
    fail_every: u32,
    count: u32,
    /// Data I/Os complete with 0 bytes (a device that went away).
    empty: bool,
}

impl Scripted {
    fn new(hold: u32, moves_data: bool, fail_every: u32) -> Self {
        Scripted {
            queued: Vec::new(),
            done: VecDeque::new(),
            held: None,
            hold,
            first: true,
            moves_data,
            fail_every,
            count: 0,
            empty: false,
        }
    }
}

impl Backend for Scripted {
    unsafe fn queue(&mut self, io: IoRequest) {
        self.queued.push(io);
    }
    fn submit(&mut self) -> std::io::Result<()> {
        for io in self.queued.drain(..) {
            self.count += 1;
            let result = if self.fail_every > 0 && self.count % self.fail_every == 0 {
                -libc::EIO
            } else if self.moves_data && !self.empty {
                io.len_bytes as i32
            } else {
                0
            };
            let c = Completion {
                slot: io.slot,
                result,
            };
            if std::mem::take(&mut self.first) && self.hold > 0 {
                self.held = Some((c, self.hold));
            } else {
                self.done.push_back(c);
            }
        }
        Ok(())
    }
    fn reap(&mut self, out: &mut [Completion], min: usize) -> std::io::Result<usize> {
        if let Some((c, left)) = self.held {
            if left == 0 || self.done.len() < min {
                self.done.push_back(c);
                self.held = None;
            } else {
                self.held = Some((c, left - 1));
            }
        }
        let n = self.done.len().min(out.len());
        for o in out.iter_mut().take(n) {
            *o = self.done.pop_front().expect("counted");
        }
        Ok(n)
    }
    fn moves_data(&self) -> bool {
        self.moves_data
    }
}

fn run_scripted(b: Scripted, rw: RwMode, bs: (u64, u64), ios: u64) -> LoopOutput {
    let w = Workload {
        rw,
        bs_min_bytes: bs.0,
        bs_max_bytes: bs.1,
        norandommap: true,
        ..Workload::default()
    };
    let depth = 8;
    let mut buf = vec![0u8; depth * bs.1 as usize];
    let stop = AtomicBool::new(false);
    let progress = WorkerProgress::default();
    let limits = LoopLimits {
        ramp_ns: 0,
        runtime_ns: None,
        max_ios: ios,
        max_bytes: u64::MAX,
        rate_iops: None,
        batch_complete_min: 1,
        interval_ns: Some(results::DEFAULT_INTERVAL_NS),
    };
    let gen = IoGen::new(&w, 0, 1 << 20, 512, 0);
    let config = LoopConfig {
        depth,
        buf_base: buf.as_mut_ptr(),
        slot_bytes: bs.1 as usize,
        verify: None,
        limits,
        stop: &stop,
        progress: &progress,
    };
    let wl = WorkerLoop::new(b, gen, config);
    wl.run().expect("scripted loop runs")
}

fn recorded(out: &LoopOutput, d: usize) -> u64 {
    out.stats.hist[d].clat.len()
}

// One I/O outlives far more batches than there are stamps: its stamp
// must not be reused under it, and every I/O is counted exactly once.
#[test]
fn a_long_io_keeps_its_batch_stamp() {
    for moves_data in [true, false] {
        let out = run_scripted(
            Scripted::new(200, moves_data, 0),
            RwMode::RandRead,
            (4096, 4096),
            1000,
        );
        assert_eq!(out.stats.ops, [1000, 0], "moves_data={moves_data}");
        assert_eq!(out.stats.bytes[0], 1000 * 4096);
        assert_eq!(recorded(&out, 0), 1000);
        assert_eq!(out.stats.hist[0].lat.len(), 1000);
        // The held read waited ~200 reaps; the others one each.
        let max = out.stats.hist[0].clat.max();
        let p50 = out.stats.hist[0].clat.value_at_quantile(0.5);
        assert!(max > 20 * p50.max(1), "max {max} vs p50 {p50}");
    }
}

/// Issue #16: reads of an NVMe namespace whose controller was removed
/// complete with 0 bytes; they counted as successes (520k IOPS of 0 bytes,
/// exit 0). A data I/O that moves no byte is an error (ENODATA).
#[test]
fn a_data_io_of_zero_bytes_is_an_error() {
    let mut gone = Scripted::new(0, true, 0);
    gone.empty = true;
    let out = run_scripted(gone, RwMode::RandRead, (4096, 4096), 100);
    assert_eq!(out.stats.ops, [0, 0]);
    assert_eq!(out.stats.errors[libc::ENODATA as usize], 100);
}

// A backend that moves no data reports result 0: bytes come from the
// requested lengths, for a fixed shape (no slots) and for mixed ones.
#[test]
fn no_data_backend_counts_requested_bytes_and_errors() {
    let out = run_scripted(
        Scripted::new(0, false, 7),
        RwMode::RandWrite,
        (8192, 8192),
        700,
    );
    assert_eq!(out.stats.ops, [0, 600]);
    assert_eq!(out.stats.bytes, [0, 600 * 8192]);
    assert_eq!(out.stats.errors[libc::EIO as usize], 100);
    assert_eq!(recorded(&out, 1), 600);

    let out = run_scripted(
        Scripted::new(3, false, 0),
        RwMode::RandRw,
        (4096, 16384),
        2000,
    );
    let ops = out.stats.ops[0] + out.stats.ops[1];
    assert_eq!(ops, 2000);
    assert!(out.stats.ops[0] > 500 && out.stats.ops[1] > 500);
    let bytes = out.stats.bytes[0] + out.stats.bytes[1];
    assert!(bytes > ops * 4096 && bytes < ops * 16384, "{bytes}");
    assert_eq!(recorded(&out, 0) + recorded(&out, 1), 2000);
}

/// A backend that hands back one completion more than it was given:
/// the first I/O of the first batch, twice.
struct Doubling(Scripted, bool);

impl Backend for Doubling {
    unsafe fn queue(&mut self, io: IoRequest) {
        // SAFETY: passed on with this fn's own contract.
        unsafe { self.0.queue(io) };
    }
    fn submit(&mut self) -> std::io::Result<()> {
        let first = self.0.queued.first().copied();
        self.0.submit()?;
        if let (Some(io), false) = (first, std::mem::replace(&mut self.1, true)) {
            self.0.done.push_back(Completion {
                slot: io.slot,
                result: io.len_bytes as i32,
            });
        }
        Ok(())
    }
    fn reap(&mut self, out: &mut [Completion], min: usize) -> std::io::Result<usize> {
        self.0.reap(out, min)
    }
}

// Must not happen: more completions than I/Os in flight. The loop
// stops there (in release builds too) instead of counting garbage.
#[test]
#[should_panic(expected = "completions with")]
fn a_backend_completing_more_than_in_flight_is_caught() {
    // One I/O in flight, two completions reaped for it.
    run_doubling(Doubling(Scripted::new(0, true, 0), false));
}

fn run_doubling(b: Doubling) -> LoopOutput {
    let w = Workload {
        rw: RwMode::RandRead,
        bs_min_bytes: 4096,
        bs_max_bytes: 4096,
        norandommap: true,
        ..Workload::default()
    };
    let mut buf = vec![0u8; 2 * 4096];
    let (stop, progress) = (AtomicBool::new(false), WorkerProgress::default());
    let config = LoopConfig {
        depth: 2,
        buf_base: buf.as_mut_ptr(),
        slot_bytes: 4096,
        verify: None,
        limits: LoopLimits {
            ramp_ns: 0,
            runtime_ns: None,
            max_ios: 1,
            max_bytes: u64::MAX,
            rate_iops: None,
            batch_complete_min: 1,
            interval_ns: Some(results::DEFAULT_INTERVAL_NS),
        },
        stop: &stop,
        progress: &progress,
    };
    let gen = IoGen::new(&w, 0, 1 << 20, 512, 0);
    WorkerLoop::new(b, gen, config).run().expect("runs")
}

fn key(generation: u64) -> VerifyKey {
    VerifyKey {
        write: results::VerifyStamp {
            generation,
            seed: 7,
        },
        expect: Some(results::VerifyStamp {
            generation,
            seed: 7,
        }),
        also: None,
        job: 3,
        replay_window: None,
    }
}

#[test]
fn verify_blocks_round_trip() {
    let mut buf = vec![0u8; 4096];
    fill_blocks(&mut buf, 8192, 4096, &key(2), 5);
    let mut log = VerifyLog::default();
    assert!(check_blocks(&buf, 8192, 0, &key(2), &mut log));
    assert_eq!(log.checked_blocks, 8);
    assert!(log.ranges.is_empty() && log.mismatched == [0; 4]);
    // Read back 512 bytes at a time, at any block: each block stands alone.
    assert!(check_blocks(
        &buf[1024..1536],
        8192 + 1024,
        0,
        &key(2),
        &mut log
    ));
}

/// Issue #16: verify said how many, not where, and its pattern depended
/// only on the offset and a fixed seed, so a lost write over an earlier
/// numio pattern went unnoticed. Each kind is told apart, with its offset.
#[test]
fn verify_classifies_every_kind_of_mismatch_at_its_offset() {
    use results::MismatchKind::*;
    let mut buf = vec![0u8; 8 * BLOCK_BYTES];
    fill_blocks(&mut buf, 0, 4096, &key(2), 0);
    // Block 1: an older generation (the write of generation 2 was lost).
    fill_blocks(&mut buf[512..1024], 512, 512, &key(1), 0);
    // Block 2: a flipped bit.
    buf[2 * 512 + 300] ^= 0x10;
    // Blocks 3 and 4: what was written for offset 1 MiB (misdirected).
    fill_blocks(&mut buf[1536..2560], 1 << 20, 1024, &key(2), 0);
    // Blocks 6 and 7: zeroes (discarded).
    buf[3072..4096].fill(0);
    let mut log = VerifyLog::default();
    assert!(!check_blocks(&buf, 0, 0, &key(2), &mut log));
    let found: Vec<_> = log
        .ranges
        .iter()
        .map(|r| (r.kind, r.offset_bytes, r.len_bytes))
        .collect();
    assert_eq!(
        found,
        [
            (LostWrite, 512, 512),
            (Corrupt, 1024, 512),
            (Misdirected, 1536, 1024),
            (Zeroes, 3072, 1024),
        ]
    );
    assert_eq!(log.checked_blocks, 8);
    // Counts in MismatchKind::ALL order: corrupt, lost, misdirected, zeroes.
    assert_eq!(log.mismatched, [1, 1, 2, 2]);
    // Without a saved state any generation passes; the rest still counts.
    let any = VerifyKey {
        expect: None,
        ..key(2)
    };
    assert_eq!(classify(&buf[512..1024], 512, 0, &any), None);
    assert_eq!(classify(&buf[1024..1536], 1024, 0, &any), Some(Corrupt));
    // A mixed run accepts the saved generation too.
    let mixed = VerifyKey {
        also: Some(results::VerifyStamp {
            generation: 1,
            seed: 7,
        }),
        ..key(2)
    };
    assert_eq!(classify(&buf[512..1024], 512, 0, &mixed), None);
}

/// Issue #16: sequence numbers were written but never checked, so when
/// the last overwrite of a block was lost (the block kept an older write
/// of the same generation) a replay took it. A replay's read `i` reads
/// where write `i` went: an older sequence of its job there, past the
/// reorder window, is a lost write; a newer one is a later overwrite.
#[test]
fn a_replay_catches_a_lost_overwrite_by_its_sequence() {
    use results::MismatchKind::LostWrite;
    let replay = |window| VerifyKey {
        replay_window: Some(window),
        ..key(2)
    };
    let mut buf = vec![0u8; 1024];
    // Written at offset 4096 by writes 5 (block 0) and 9 (block 1).
    fill_blocks(&mut buf[..512], 4096, 512, &key(2), 5);
    fill_blocks(&mut buf[512..], 4608, 512, &key(2), 9);
    // Read 7 replays a write 7 there: block 0 lost it (holds 5).
    let mut log = VerifyLog::default();
    assert!(!check_blocks(&buf, 4096, 7, &replay(0), &mut log));
    let found: Vec<_> = log
        .ranges
        .iter()
        .map(|r| (r.kind, r.offset_bytes, r.len_bytes))
        .collect();
    assert_eq!(found, [(LostWrite, 4096, 512)]);
    // The write just before, in flight with it, may have landed last.
    assert_eq!(classify(&buf[..512], 4096, 7, &replay(2)), None);
    assert_eq!(classify(&buf[..512], 4096, 8, &replay(2)), Some(LostWrite));
    // The replay's own write or a later one checks out.
    assert_eq!(classify(&buf[..512], 4096, 5, &replay(0)), None);
    assert_eq!(classify(&buf[..512], 4096, 3, &replay(0)), None);
    // Another job's block: no order between jobs; no replay: no check.
    let other = VerifyKey {
        job: 4,
        ..replay(0)
    };
    assert_eq!(classify(&buf[..512], 4096, 7, &other), None);
    assert_eq!(classify(&buf[..512], 4096, 7, &key(2)), None);
}

// Regression (issue 38): a block of a newer generation than the saved
// state (a state restored from a backup) was called a lost write.
#[test]
fn a_newer_generation_says_the_state_is_stale_not_a_lost_write() {
    use results::MismatchKind::LostWrite;
    let mut buf = vec![0u8; 2048];
    fill_blocks(&mut buf[..512], 0, 512, &key(3), 0);
    // Generation 2 with another seed: another run's, same number.
    let other_seed = VerifyKey {
        write: results::VerifyStamp {
            generation: 2,
            seed: 8,
        },
        ..key(2)
    };
    fill_blocks(&mut buf[512..1024], 512, 512, &other_seed, 0);
    fill_blocks(&mut buf[1024..1536], 1024, 512, &key(1), 0);
    fill_blocks(&mut buf[1536..], 1536, 512, &key(2), 0);
    assert_eq!(
        judge(&buf[..512], 0, 0, &key(2)),
        Verdict::Stale { generation: 3 }
    );
    assert_eq!(
        judge(&buf[512..1024], 512, 0, &key(2)),
        Verdict::Stale { generation: 2 }
    );
    assert_eq!(
        judge(&buf[1024..1536], 1024, 0, &key(2)),
        Verdict::Bad(LostWrite)
    );
    assert_eq!(judge(&buf[1536..], 1536, 0, &key(2)), Verdict::Good);
    let mut log = VerifyLog::default();
    assert!(
        !check_blocks(&buf, 0, 0, &key(2), &mut log),
        "the older block still fails"
    );
    assert_eq!((log.stale_blocks, log.stale_generation), (2, 3));
    assert_eq!(log.mismatched, [0, 1, 0, 0], "only the older block is lost");
    let mut log = VerifyLog::default();
    assert!(
        check_blocks(&buf[..1024], 0, 0, &key(2), &mut log),
        "stale blocks fail no read"
    );
}

/// The write side: the reorder window is the most writes issued while
/// one was in flight (0 at depth 1).
#[test]
fn verify_window_counts_writes_issued_past_one_in_flight() {
    let window = |depth, hold| {
        let out = run_verify_writes(Scripted::new(hold, true, 0), depth);
        out.verify.expect("a verify log").sequence_window
    };
    assert_eq!(window(1, 0), 0);
    // Batches of 8 complete in order: the first of each saw 7 more issued.
    assert_eq!(window(8, 0), 7);
    // The first write held over many reaps: far more went past it.
    assert!(window(8, 20) > 7, "{}", window(8, 20));
}

fn run_verify_writes(b: Scripted, depth: usize) -> LoopOutput {
    let w = Workload {
        rw: RwMode::RandWrite,
        bs_min_bytes: 4096,
        bs_max_bytes: 4096,
        norandommap: true,
        ..Workload::default()
    };
    let mut buf = vec![0u8; depth * 4096];
    let stop = AtomicBool::new(false);
    let progress = WorkerProgress::default();
    let limits = LoopLimits {
        ramp_ns: 0,
        runtime_ns: None,
        max_ios: 256,
        max_bytes: u64::MAX,
        rate_iops: None,
        batch_complete_min: 1,
        interval_ns: Some(results::DEFAULT_INTERVAL_NS),
    };
    let config = LoopConfig {
        depth,
        buf_base: buf.as_mut_ptr(),
        slot_bytes: 4096,
        verify: Some(key(1)),
        limits,
        stop: &stop,
        progress: &progress,
    };
    let gen = IoGen::new(&w, 0, 1 << 20, 512, 0);
    WorkerLoop::new(b, gen, config)
        .run()
        .expect("scripted loop runs")
}

#[test]
fn verify_log_is_bounded_and_merges_adjacent_blocks() {
    let buf = vec![0u8; 512];
    let mut log = VerifyLog::default();
    let cap = log.ranges.capacity();
    for i in 0..(cap as u64 + 10) {
        // Every other block: nothing merges.
        check_blocks(&buf, i * 1024, 0, &key(1), &mut log);
    }
    assert_eq!(log.ranges.len(), cap);
    assert_eq!(log.dropped, 10);
    let mut log = VerifyLog::default();
    for i in 0..100u64 {
        check_blocks(&buf, i * 512, 0, &key(1), &mut log);
    }
    assert_eq!(log.ranges.len(), 1);
    assert_eq!(log.ranges[0].len_bytes, 100 * 512);
}
