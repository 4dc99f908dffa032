//! What the calling thread and the workers share: the start barrier and
//! two flags ([`Control`]), and each worker's one pass through the barrier
//! ([`StartGate`]).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Barrier;

/// The start barrier and the flags every worker reads.
pub(super) struct Control {
    /// Every worker and the calling thread meet here once set-up is done.
    pub start: Barrier,
    /// A worker failed to set up (or failed later): the others give up.
    pub abort: AtomicBool,
    /// Stop issuing, drain what is in flight (interrupt, failure).
    pub stop: AtomicBool,
}

impl Control {
    /// Control of `workers` workers and the calling thread.
    pub fn new(workers: usize) -> Control {
        Control {
            start: Barrier::new(workers + 1),
            abort: AtomicBool::new(false),
            stop: AtomicBool::new(false),
        }
    }

    /// Whether a worker aborted the run.
    pub fn aborted(&self) -> bool {
        self.abort.load(Ordering::Relaxed)
    }

    /// Aborts the run: every worker stops, and those still setting up do
    /// not start.
    pub fn abort(&self) {
        self.abort.store(true, Ordering::Relaxed);
        self.stop.store(true, Ordering::Relaxed);
    }

    /// Asks every worker to stop issuing and drain.
    pub fn stop(&self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// The start barrier, passed exactly once: on the normal path right before
/// the loop, or on drop when set-up failed (which also aborts the run).
pub(super) struct StartGate<'a> {
    ctl: &'a Control,
    passed: bool,
}

impl<'a> StartGate<'a> {
    /// The gate of one worker, not yet passed.
    pub fn new(ctl: &'a Control) -> Self {
        StartGate { ctl, passed: false }
    }

    /// Waits for every worker to be ready; whether the run goes on (no
    /// worker failed to set up).
    pub fn pass(&mut self) -> bool {
        self.passed = true;
        self.ctl.start.wait();
        !self.ctl.aborted()
    }
}

impl Drop for StartGate<'_> {
    fn drop(&mut self) {
        if !self.passed {
            self.ctl.abort.store(true, Ordering::Relaxed);
            self.ctl.start.wait();
        }
    }
}
