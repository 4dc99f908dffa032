//! The I/O engine.
//!
//! One worker per CPU, pinned, with NUMA-local buffers allocated at start-up;
//! a small [`Backend`] trait split like a hardware queue (queue, submit,
//! reap) and its backends: `uring` (io_uring reads and writes), `passthru`
//! (NVMe commands through io_uring passthrough on `/dev/ngXnY`), `tcp`
//! (NVMe/TCP from user space), `sync` (pread/pwrite, the reference), `null`
//! (no I/O: measures numio) and `nop` (io_uring NOPs: the kernel round trip);
//! workload generators named as fio names them, on one seeded generator
//! ([`gen`]); per-worker HdrHistograms merged at the end into the
//! serializable [`result`] model (the `results` crate, below the engine and
//! `report` both).
//!
//! A run ([`run()`], [`mod@run`]) checks every target first ([`target`]: what a path is, as
//! a [`targets::TargetKind`], and whether a workload and backend fit it),
//! decides each job's backend once per target, then starts the workers,
//! each building its backend by that backend's own constructor.
//!
//! The io_uring `unsafe` lives at one boundary, `sysapi::uring` (the ring
//! set-up fallback chain, the registered-fd `io_uring_enter`, typed SQE
//! views); what stays here is the promise
//! about buffers: [`Backend::queue`] is an `unsafe fn`, since the buffer it
//! hands over belongs to the kernel until the completion arrives.
//!
//! The shape follows the hot path: a worker owns its ring, buffers, slot slab
//! and statistics; it shares nothing with other workers but a stop flag read
//! once per batch and its own progress counters, stored a few times a second
//! for the main thread to read ([`progress`]); it allocates nothing after
//! start-up (pinned by the `zero_alloc` integration test).
#![deny(missing_docs)]

pub mod backend;
pub mod env;
pub mod error;
pub mod export;
#[cfg(test)]
mod fixtures;
pub mod gen;
mod limits;
pub mod live;
pub mod progress;
pub mod run;
pub mod safety;
pub mod stats;
pub mod sys;
pub mod targets;
pub mod worker;

pub use backend::{Backend, BackendKind, UringOptions, UringSetup};
pub use error::EngineError;
pub use progress::ProgressSnapshot;
/// The result model (the `results` crate, which `report` reads too):
/// `engine::result::RunResult` and the rest, as before it moved below both.
pub use results as result;
pub use results::{
    CpuUsage, Environment, LatencySummary, RunResult, TargetResult, TaskrunTrial, WorkerResult,
};
pub use run::{run, run_until, IoPoll, RunOptions, TargetVerify, DEFAULT_PERCENTILES};
