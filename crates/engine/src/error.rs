//! Errors of the engine.

use std::io;

/// Everything that can stop a run before or while it starts.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// A target could not be opened.
    #[error("cannot open {path}: {source} (check the path and permissions)")]
    Open {
        /// The target.
        path: String,
        /// The OS error.
        source: io::Error,
    },
    /// A target's size or block size could not be read.
    #[error("cannot inspect {path}: {source}")]
    Inspect {
        /// The target.
        path: String,
        /// The OS error.
        source: io::Error,
    },
    /// The workload does not fit the target or makes no sense.
    #[error("{path}: {reason}")]
    Workload {
        /// The target.
        path: String,
        /// What is wrong and how to fix it.
        reason: String,
    },
    /// Writing would destroy data.
    #[error(
        "refusing to write to {path}: it holds {what}; pass --force-write to overwrite it anyway"
    )]
    Unsafe {
        /// The device.
        path: String,
        /// What was found (partition table, filesystem signature, mount).
        what: String,
    },
    /// A backend could not be set up.
    #[error("{backend} backend on {path}: {what}: {source}")]
    Backend {
        /// Backend name.
        backend: &'static str,
        /// The target.
        path: String,
        /// The step that failed.
        what: String,
        /// The OS error.
        source: io::Error,
    },
    /// Worker buffers could not be allocated.
    #[error("cannot allocate {bytes} bytes of I/O buffers: {source}")]
    Buffers {
        /// Requested size.
        bytes: usize,
        /// The OS error.
        source: io::Error,
    },
    /// A worker thread failed to start or panicked.
    #[error("worker {job} of {path}: {reason}")]
    Worker {
        /// The target.
        path: String,
        /// Job index.
        job: u32,
        /// Why.
        reason: String,
    },
    /// An unknown backend name.
    #[error("unknown backend `{0}` (this engine runs: uring, sync, null, nop, passthru)")]
    UnknownBackend(String),
    /// Another worker failed to start, so this one did not run.
    #[error("the run was aborted because a worker failed to start")]
    Aborted,
}
