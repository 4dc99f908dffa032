//! A memory and time budget the input-reading targets assert: a counting
//! global allocator (each target installs [`Counting`]) records the most
//! bytes held at once while one input runs, and [`Budget`] checks it and
//! the input's time when it ends. A hostile input that makes a reader
//! allocate far more than it is (a snapshot's deep path, an include fan
//! out, a histogram header's length) fails here, not only at libFuzzer's
//! RSS limit.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

static HELD: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

/// The system allocator, counting the bytes held and their peak.
pub struct Counting;

// SAFETY: every call is forwarded to `System` with the same arguments;
// the counters only observe.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        // SAFETY: as `System.alloc`, under the caller's promise.
        let p = unsafe { System.alloc(l) };
        if !p.is_null() {
            held(l.size() as isize);
        }
        p
    }

    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        // SAFETY: as `System.dealloc`, under the caller's promise.
        unsafe { System.dealloc(p, l) };
        held(-(l.size() as isize));
    }

    unsafe fn alloc_zeroed(&self, l: Layout) -> *mut u8 {
        // SAFETY: as `System.alloc_zeroed`, under the caller's promise.
        let p = unsafe { System.alloc_zeroed(l) };
        if !p.is_null() {
            held(l.size() as isize);
        }
        p
    }

    unsafe fn realloc(&self, p: *mut u8, l: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: as `System.realloc`, under the caller's promise.
        let q = unsafe { System.realloc(p, l, new_size) };
        if !q.is_null() {
            held(new_size as isize - l.size() as isize);
        }
        q
    }
}

fn held(delta: isize) {
    let now = if delta >= 0 {
        HELD.fetch_add(delta as usize, Ordering::Relaxed) + delta as usize
    } else {
        HELD.fetch_sub(delta.unsigned_abs(), Ordering::Relaxed) - delta.unsigned_abs()
    };
    PEAK.fetch_max(now, Ordering::Relaxed);
}

/// One input's budget: started before the input runs, checked after.
pub struct Budget {
    what: &'static str,
    max_bytes: usize,
    max_time: Duration,
    base: usize,
    t0: Instant,
}

impl Budget {
    /// Starts counting for `what`: at most `max_bytes` held above what is
    /// held now, and `max_time`.
    pub fn start(what: &'static str, max_bytes: usize, max_time: Duration) -> Budget {
        let base = HELD.load(Ordering::Relaxed);
        PEAK.store(base, Ordering::Relaxed);
        Budget {
            what,
            max_bytes,
            max_time,
            base,
            t0: Instant::now(),
        }
    }

    /// The most bytes held above the start so far.
    pub fn peak_bytes(&self) -> usize {
        PEAK.load(Ordering::Relaxed).saturating_sub(self.base)
    }

    /// Panics (a finding) when the input went over its budget.
    pub fn check(self, input_bytes: usize) {
        let peak = self.peak_bytes();
        let took = self.t0.elapsed();
        assert!(
            peak <= self.max_bytes,
            "{}: {input_bytes} bytes of input held {peak} bytes at once, over the budget of {}",
            self.what,
            self.max_bytes
        );
        assert!(
            took <= self.max_time,
            "{}: {input_bytes} bytes of input took {took:?}, over the budget of {:?}",
            self.what,
            self.max_time
        );
    }
}
