//! Errors of reading fio job files and command lines. Every error caused by
//! the input names the file (or `<command line>`) and the line (or argument
//! number) and says how to fix it.

use std::fmt;
use std::path::PathBuf;

/// A place in a job file or command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    /// The file as given (or `<command line>`).
    pub file: String,
    /// 1-based line (or argument) number.
    pub line: usize,
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.file, self.line)
    }
}

/// Why a job file or command line could not be read.
#[derive(Debug, thiserror::Error)]
pub enum FioError {
    /// A file could not be read.
    #[error("{}: {source}{}", path.display(), included_from.as_ref().map(|l| format!(" (included from {l})")).unwrap_or_default())]
    Io {
        /// The file.
        path: PathBuf,
        /// Where it was included from, if it was.
        included_from: Option<Location>,
        /// The OS error.
        source: std::io::Error,
    },
    /// A line that is neither a section, an option, a comment nor an include.
    #[error("{at}: {message}")]
    Syntax {
        /// Where.
        at: Location,
        /// What is wrong and how to fix it.
        message: String,
    },
    /// Past one of the reader's limits (sections, options).
    #[error("{at}: {message}")]
    Limit {
        /// Where the limit was passed.
        at: Location,
        /// Which limit, and how to stay within it.
        message: String,
    },
    /// An option numio does not implement.
    #[error("{at}: option `{key}` is not supported by numio{hint}; remove it, or pass --ignore-unknown to skip it with a warning")]
    UnknownOption {
        /// Where.
        at: Location,
        /// The option.
        key: String,
        /// ` (did you mean …?)` or empty.
        hint: String,
    },
    /// A value numio cannot read or does not support.
    #[error("{at}: {key}={value}: {message}")]
    BadValue {
        /// Where.
        at: Location,
        /// The option.
        key: String,
        /// The value as written.
        value: String,
        /// What is wrong and how to fix it.
        message: String,
    },
    /// A file includes itself, directly or through others.
    #[error("{at}: circular include of {}: {chain}; remove one of the includes", file.display())]
    IncludeCycle {
        /// The include line that closes the cycle.
        at: Location,
        /// The file included again.
        file: PathBuf,
        /// The chain of files, outermost first.
        chain: String,
    },
    /// A job without `filename`.
    #[error("{at}: job `{job}` has no filename; add `filename=/dev/nvme0n1` (or a file path) to the section or to [global]")]
    MissingFilename {
        /// The section header.
        at: Location,
        /// The job name.
        job: String,
    },
    /// `--section NAME` names no section of the file.
    #[error("{origin}: no job section named `{name}`; sections are: {known}")]
    UnknownSection {
        /// The file.
        origin: String,
        /// The name asked for.
        name: String,
        /// The sections the file has.
        known: String,
    },
    /// `wait_for` names no earlier job.
    #[error("{at}: wait_for={name} names no earlier job; earlier jobs are: {known}")]
    UnknownJobReference {
        /// The `wait_for` line.
        at: Location,
        /// The name given.
        name: String,
        /// The jobs defined before it.
        known: String,
    },
    /// The input has no job section.
    #[error("{origin}: no job sections; add a section such as `[job1]` with a filename")]
    NoJobs {
        /// The file.
        origin: String,
    },
    /// A CPU or node the file names is not on this machine.
    #[error("{at}: {key}={value}: {message}")]
    NotOnThisMachine {
        /// Where.
        at: Location,
        /// The option.
        key: String,
        /// The value as written.
        value: String,
        /// What is missing and how to fix it.
        message: String,
    },
}
