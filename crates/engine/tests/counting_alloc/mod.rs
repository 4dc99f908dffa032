//! A counting global allocator for the zero-allocation tests: each test
//! binary that uses it declares `#[global_allocator] static GLOBAL:
//! counting_alloc::Counting = counting_alloc::Counting;` and runs the
//! steady-state loop through [`steady_state`] (the worker loop, counted by
//! [`tracked`]).

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

/// Forwards to the system allocator and counts allocations made by the
/// current thread while [`tracked`] runs.
pub struct Counting;

thread_local! {
    static TRACK: Cell<bool> = const { Cell::new(false) };
    static ALLOCS: Cell<u64> = const { Cell::new(0) };
}

fn note_alloc() {
    if TRACK.with(|t| t.get()) {
        ALLOCS.with(|a| a.set(a.get() + 1));
    }
}

/// Runs `f`, counting the allocations this thread makes meanwhile.
pub fn tracked<T>(f: impl FnOnce() -> T) -> (T, u64) {
    ALLOCS.with(|a| a.set(0));
    TRACK.with(|t| t.set(true));
    let r = f();
    TRACK.with(|t| t.set(false));
    (r, ALLOCS.with(|a| a.get()))
}

// SAFETY: forwards every call to the system allocator unchanged; only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note_alloc();
        // SAFETY: same contract as ours.
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        note_alloc();
        // SAFETY: same contract as ours.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note_alloc();
        // SAFETY: same contract as ours.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as ours.
        unsafe { System.dealloc(ptr, layout) }
    }
}

/// Runs `backend` through the worker loop for `ios` I/Os of `w` (depth
/// `w.iodepth`) over the first `region_bytes` of its target, with the
/// buffers `buf` in slots of `slot_bytes` and `verify`, counting the
/// allocations the loop makes: (its output, the count).
pub fn steady_state<B: engine::backend::Backend>(
    backend: B,
    w: &planner::Workload,
    region_bytes: u64,
    buf: &engine::sys::NodeBuffer,
    slot_bytes: usize,
    ios: u64,
    verify: Option<engine::worker::VerifyKey>,
) -> (engine::worker::LoopOutput, u64) {
    cut_every(backend, w, region_bytes, buf, slot_bytes, ios, verify, None)
}

/// [`steady_state`] with the measured time cut into intervals of
/// `interval_ns` (`None`: none).
#[allow(clippy::too_many_arguments, dead_code)]
pub fn cut_every<B: engine::backend::Backend>(
    backend: B,
    w: &planner::Workload,
    region_bytes: u64,
    buf: &engine::sys::NodeBuffer,
    slot_bytes: usize,
    ios: u64,
    verify: Option<engine::worker::VerifyKey>,
    interval_ns: Option<u64>,
) -> (engine::worker::LoopOutput, u64) {
    use engine::worker::{LoopConfig, LoopLimits, WorkerLoop};
    let gen = engine::gen::IoGen::new(w, 0, region_bytes, 512, 0);
    let stop = std::sync::atomic::AtomicBool::new(false);
    let progress = engine::progress::WorkerProgress::default();
    let config = LoopConfig {
        depth: w.iodepth as usize,
        buf_base: buf.as_ptr(),
        slot_bytes,
        verify,
        limits: LoopLimits {
            ramp_ns: 0,
            runtime_ns: None,
            max_ios: ios,
            max_bytes: u64::MAX,
            rate_iops: None,
            batch_complete_min: 4,
            interval_ns,
        },
        stop: &stop,
        progress: &progress,
    };
    let wl = WorkerLoop::new(backend, gen, config);
    let (out, allocs) = tracked(|| wl.run());
    (out.expect("loop runs"), allocs)
}
