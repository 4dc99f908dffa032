//! The errors of a session, each naming the run or arm it concerns; of
//! the verify state ([`VerifyStateError`]); and of setting up the signal
//! thread ([`SignalError`]).

use std::path::PathBuf;
use std::sync::Arc;

use planner::RwMode;

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
    /// An arm failed at a step of the caller's (the command line's flags
    /// over its plan), or its drive could not be found.
    #[error("arm {arm}")]
    InArm {
        /// The arm as the user wrote it.
        arm: String,
        /// The cause.
        #[source]
        source: crate::schedule::BoxError,
    },
    /// A `backend=` arm cannot reach its drive or names no backend.
    #[error(transparent)]
    Backend(#[from] crate::backend_arms::BackendArmError),
    /// A saved result could not be read.
    #[error(transparent)]
    Saved(report::ReportError),
    /// Two saved sweeps share no measured point.
    #[error("{a} and {b}: the sweeps share no measured point (labels such as jobs=2 must match)")]
    NoSharedPoint {
        /// The first sweep's arm as given.
        a: String,
        /// The second's.
        b: String,
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
    Signals(#[source] SignalError),
}

/// Why `interrupt::install` failed. Cloned, as every later call
/// answers what the first found (the OS error is shared).
#[derive(Debug, Clone, thiserror::Error)]
pub enum SignalError {
    /// `pthread_sigmask` refused to block SIGINT and SIGTERM.
    #[error("cannot block SIGINT/SIGTERM: {source}")]
    Block {
        /// The OS error.
        #[source]
        source: Arc<std::io::Error>,
    },
    /// The thread that takes the signals could not be started.
    #[error("cannot start the signal thread: {source}")]
    Thread {
        /// The OS error.
        #[source]
        source: Arc<std::io::Error>,
    },
}

/// What to do when the verify state's directory cannot be made (a
/// read-only home, say).
const CANNOT_MAKE_FIX: &str =
    "set XDG_STATE_HOME to a directory of yours that is writable, or name a file with --verify-state FILE";
/// What to do about a verify state directory numio must not use.
const UNSAFE_DIR_FIX: &str =
    "remove it (numio makes it again, 0700) or name a file elsewhere with --verify-state FILE";
/// What to do about a verify state file numio cannot read.
const UNREADABLE_FIX: &str = "name a numio verify state file with --verify-state FILE";

/// Why the verify state could not be found, read, replayed or saved
/// (the `verify_state` and `verify_state_file` modules); each names the
/// file or directory and the fix.
#[derive(Debug, thiserror::Error)]
pub enum VerifyStateError {
    /// Neither `$XDG_STATE_HOME` nor `$HOME` is set (or absolute).
    #[error("no place for the verify state: neither XDG_STATE_HOME nor HOME is set (numio keeps it in no shared temporary directory); name a file with --verify-state FILE")]
    NoStateDir,
    /// The state's directory (or a parent) could not be made.
    #[error("cannot make {dir}: {source}; {CANNOT_MAKE_FIX}")]
    MakeDir {
        /// The directory.
        dir: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// The state's directory could not be `lstat`ed.
    #[error("{dir}: {source}")]
    StatDir {
        /// The directory.
        dir: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// The state's directory is a link or a file.
    #[error("the verify state directory {dir} is not a directory (a link?); {UNSAFE_DIR_FIX}")]
    DirNotADirectory {
        /// The directory.
        dir: PathBuf,
    },
    /// The state's directory belongs to another user.
    #[error("the verify state directory {dir} is owned by uid {owner}, not by this user (uid {euid}); {UNSAFE_DIR_FIX}")]
    DirNotOwned {
        /// The directory.
        dir: PathBuf,
        /// Its owner.
        owner: u32,
        /// This process's effective user.
        euid: u32,
    },
    /// The state's directory may be written by its group or others.
    #[error("the verify state directory {dir} is writable by others (mode {mode:o}); chmod 700 it, or {UNSAFE_DIR_FIX}")]
    DirWritableByOthers {
        /// The directory.
        dir: PathBuf,
        /// Its permission bits.
        mode: u32,
    },
    /// The state file could not be opened or read.
    #[error("cannot read the verify state {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// The state file is a FIFO, a device, a socket or a directory.
    #[error("the verify state {path} is not a regular file ({kind}); {UNREADABLE_FIX}")]
    NotRegular {
        /// The file.
        path: PathBuf,
        /// What it is, in words (`a FIFO`).
        kind: &'static str,
    },
    /// The state file is larger than numio reads.
    #[error("the verify state {path} has {len_bytes} bytes or more, more than the {} MiB numio reads; {UNREADABLE_FIX}", max_bytes >> 20)]
    TooBig {
        /// The file.
        path: PathBuf,
        /// Bytes found.
        len_bytes: u64,
        /// The most numio reads.
        max_bytes: u64,
    },
    /// The state file is not UTF-8.
    #[error("the verify state {path} is not UTF-8 text; {UNREADABLE_FIX}")]
    NotUtf8 {
        /// The file.
        path: PathBuf,
    },
    /// The state file is not a verify state's JSON.
    #[error("{path} is not a numio verify state ({source}); name another with --verify-state or remove it")]
    NotAState {
        /// The file.
        path: PathBuf,
        /// Why it does not parse.
        #[source]
        source: serde_json::Error,
    },
    /// The state file was written for another schema version.
    #[error("{path} has verify state version {found}; this numio reads version {expected}")]
    Version {
        /// The file.
        path: PathBuf,
        /// Its version.
        found: u32,
        /// The version this numio reads.
        expected: u32,
    },
    /// The lock file could not be made.
    #[error("{path}: {source}")]
    CreateLock {
        /// The lock file.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// A lock file that exists could not be opened (a link among them).
    #[error("{path}: {source} (a symbolic link is never followed); remove it")]
    OpenLock {
        /// The lock file.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// The lock file could not be `fstat`ed.
    #[error("{path}: {source}")]
    StatLock {
        /// The lock file.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// The lock file is not a regular file of this user's.
    #[error("the verify state lock {path} is not a regular file of this user's (uid {owner}); remove it")]
    LockNotOwned {
        /// The lock file.
        path: PathBuf,
        /// Its owner.
        owner: u32,
    },
    /// `flock` failed on the lock file.
    #[error("{path}: cannot lock: {source}")]
    Lock {
        /// The lock file.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// The directory of a state file named with `--verify-state` could
    /// not be made (the caller names the file).
    #[error("{source}")]
    MakeParent {
        /// The directory.
        dir: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// The state could not be written (the caller names the file).
    #[error("{source}")]
    Save {
        /// The file.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// `--verify-only` on a target the state has no record of.
    #[error("--verify-only: {target} has no saved verify state in {file}; write it with --verify first (or name the state with --verify-state)")]
    NotSaved {
        /// The target.
        target: String,
        /// The state file.
        file: PathBuf,
    },
    /// `--verify-only` on a target whose saved run read as well as wrote.
    #[error("--verify-only: the saved run on {target} was --rw={}, which mixes reads in; only a write run is replayed", rw.fio_name())]
    NotAWriteRun {
        /// The target.
        target: String,
        /// The saved run's mode.
        rw: RwMode,
    },
    /// `--verify-only` with another number of jobs than the saved run.
    #[error("--verify-only: the saved run on {target} had {saved_jobs} jobs; run with --jobs {saved_jobs}")]
    JobCount {
        /// The target.
        target: String,
        /// The saved run's jobs.
        saved_jobs: usize,
        /// The jobs planned now.
        jobs: usize,
    },
}
