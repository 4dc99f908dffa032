//! The errors of a session, each naming the run or arm it concerns.

use crate::event::RunInfo;

/// Why a session could not run or prepare.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    /// A run failed before or while running (the engine's reason, or the
    /// runner's).
    #[error("run {} of {} ({label})", .run.seq, .run.total)]
    Run {
        /// The run.
        run: RunInfo,
        /// Its arm's label.
        label: String,
        /// Why.
        #[source]
        source: crate::schedule::BoxError,
    },
    /// An arm's plan could not be made: `step` says what was being done.
    #[error("arm {arm}: {step}")]
    Arm {
        /// The arm as the user wrote it.
        arm: String,
        /// What failed, e.g. "reading the plan plan.json".
        step: String,
        /// The cause.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// An arm needs the machine's topology, and discovery failed.
    #[error("{arm} needs the machine's topology, and discovery under / failed; run `numio topo` to see why")]
    NoTopology {
        /// The arm as the user wrote it.
        arm: String,
    },
    /// The schedule cannot run as given (a programming error of the
    /// caller: no arms, no rounds, a settle group out of range).
    #[error("session schedule: {0}")]
    Schedule(String),
    /// The signal thread could not be set up.
    #[error("{0}")]
    Signals(String),
}
