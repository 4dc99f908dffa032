//! The workers' threads: started one per job ([`spawn_workers`]), watched
//! from the calling thread while they run ([`watch`]: progress, interrupt),
//! joined at the end ([`join_workers`]).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use super::control::Control;
use super::counters::CounterWatch;
use super::job::worker_main;
use super::spec::{JobOutput, JobSpec};
use crate::error::EngineError;
use crate::progress::{snapshot, ProgressSnapshot, WorkerProgress};
use crate::sys;

/// How often the calling thread looks at the workers and the interrupt flag.
const WATCH_TICK: std::time::Duration = std::time::Duration::from_millis(50);
/// Ticks between two progress callbacks (200 ms).
const PROGRESS_EVERY_TICKS: u32 = 4;

/// A worker thread.
pub(super) type WorkerHandle = std::thread::JoinHandle<Result<JobOutput, EngineError>>;

/// Starts one named thread per spec, each running [`worker_main`].
pub(super) fn spawn_workers(
    specs: &[JobSpec],
    ctl: &Arc<Control>,
    progress: &[Arc<WorkerProgress>],
) -> Result<Vec<WorkerHandle>, EngineError> {
    let mut handles = Vec::with_capacity(specs.len());
    for (spec, p) in specs.iter().zip(progress) {
        let (spec, ctl, p) = (spec.clone(), Arc::clone(ctl), Arc::clone(p));
        let name = format!("numio-w{}.{}", spec.target, spec.job);
        let (path, job) = (spec.path.clone(), spec.job);
        let h = std::thread::Builder::new()
            .name(name)
            .spawn(move || worker_main(&spec, &ctl, &p))
            .map_err(|e| EngineError::Worker {
                path,
                job,
                reason: format!("cannot spawn a thread: {e}"),
            })?;
        handles.push(h);
    }
    Ok(handles)
}

/// How a run ended, as the calling thread saw it.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Watched {
    /// The interrupt flag stopped it early.
    pub interrupted: bool,
    /// ... while the workers were still ramping (warming up).
    pub interrupted_in_ramp: bool,
}

/// The run's clock as the calling thread keeps it.
#[derive(Debug, Clone, Copy)]
pub(super) struct RunClock {
    /// When every worker had passed the start barrier.
    pub t0_ns: u64,
    /// The longest ramp of any target.
    pub ramp_ns: u64,
    /// The planned length (longest ramp + runtime), when every target has one.
    pub planned_ns: Option<u64>,
    /// The result's interval (0: none): the counters are read at each
    /// interval's end, for the intervals' interrupts.
    pub interval_ns: u64,
}

/// Watches the workers from the calling thread once they passed the start
/// barrier: every tick it stops them when `interrupt` is set and, once
/// the ramp is over, starts `counters` (the measured time begins),
/// and every [`PROGRESS_EVERY_TICKS`] it calls `on_progress`; returns when
/// every worker finished or one aborted the run.
pub(super) fn watch(
    ctl: &Control,
    progress: &[Arc<WorkerProgress>],
    interrupt: &AtomicBool,
    clock: RunClock,
    counters: &mut CounterWatch,
    on_progress: &mut dyn FnMut(&ProgressSnapshot),
) -> Watched {
    let mut w = Watched::default();
    let mut tick = 0u32;
    let mut next_interval = 0u64;
    while !ctl.aborted() && progress.iter().any(|p| !p.is_finished()) {
        if !w.interrupted && interrupt.load(Ordering::Relaxed) {
            w.interrupted = true;
            w.interrupted_in_ramp = sys::now_ns() - clock.t0_ns < clock.ramp_ns;
            ctl.stop();
        }
        std::thread::sleep(WATCH_TICK);
        tick += 1;
        if !counters.started() && sys::now_ns() - clock.t0_ns >= clock.ramp_ns {
            counters.begin();
        }
        let measured_ns = (sys::now_ns() - clock.t0_ns).saturating_sub(clock.ramp_ns);
        if counters.started()
            && clock.interval_ns > 0
            && measured_ns >= (next_interval + 1) * clock.interval_ns
        {
            // The interval just ended (one the watch slept through keeps
            // no count of its own).
            let ended = measured_ns / clock.interval_ns - 1;
            counters.tick(ended);
            next_interval = ended + 1;
        }
        if tick % PROGRESS_EVERY_TICKS == 0 {
            let elapsed_ns = sys::now_ns() - clock.t0_ns;
            on_progress(&snapshot(progress, elapsed_ns, clock.planned_ns));
        }
    }
    // The last interval, cut short by the end of the run.
    let measured_ns = (sys::now_ns() - clock.t0_ns).saturating_sub(clock.ramp_ns);
    if counters.started() && clock.interval_ns > 0 {
        counters.tick((measured_ns / clock.interval_ns).max(next_interval));
    }
    w
}

/// Joins every worker; the first real error wins over "aborted".
pub(super) fn join_workers(
    handles: Vec<WorkerHandle>,
    specs: &[JobSpec],
) -> Result<Vec<JobOutput>, EngineError> {
    let mut outputs = Vec::with_capacity(handles.len());
    let mut first_err = None;
    for (h, spec) in handles.into_iter().zip(specs) {
        let r = h.join().unwrap_or_else(|_| {
            Err(EngineError::Worker {
                path: spec.path.clone(),
                job: spec.job,
                reason: "the worker panicked".into(),
            })
        });
        match r {
            Ok(o) => outputs.push(o),
            Err(EngineError::Aborted) => {}
            Err(e) => {
                first_err.get_or_insert(e);
            }
        }
    }
    if let Some(e) = first_err {
        return Err(e);
    }
    if outputs.len() != specs.len() {
        return Err(EngineError::Aborted);
    }
    Ok(outputs)
}
