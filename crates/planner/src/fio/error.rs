//! Errors of reading fio job files and command lines. Every error caused by
//! the input names the file (or `<command line>`) and the line (or argument
//! number) and says how to fix it.

use std::fmt;
use std::path::PathBuf;

use nvme_spec::units::UnitError;

use super::values::{CpusPolicy, IOENGINES, MEM_POLICIES};
use crate::cpuset::CpuSetError;
use crate::workload::{DistributionError, RwMode};

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
    #[error("{at}: {key}={value}: {reason}")]
    BadValue {
        /// Where.
        at: Location,
        /// The option.
        key: String,
        /// The value as written.
        value: String,
        /// What is wrong and how to fix it (boxed: it is large).
        #[source]
        reason: Box<OptionError>,
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

/// Why one option's value was refused (the job file's place, key and value
/// are [`FioError::BadValue`]'s); each says what would work.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum OptionError {
    /// An option that takes a value was given none.
    #[error("`{key}` needs a value: write `{key}=VALUE`")]
    NoValue {
        /// The option.
        key: String,
    },
    /// A size, time, count or boolean in fio's units that does not parse.
    #[error(transparent)]
    Unit(#[from] UnitError),
    /// A count outside what the option takes.
    #[error("must be between {min} and {max}")]
    OutOfRange {
        /// The count given.
        value: u64,
        /// The least allowed.
        min: u64,
        /// The most allowed.
        max: u64,
    },
    /// `rw=trim` and the like.
    #[error("trim workloads are not supported by numio")]
    TrimWorkload {
        /// The mode given.
        value: String,
    },
    /// `rw=randread:8`.
    #[error("offset modifiers (`rw=randread:8`) are not supported by numio")]
    OffsetModifier {
        /// The mode given.
        value: String,
    },
    /// An `rw` that is no mode of fio's.
    #[error("use {}", or_list(RwMode::ALL.iter().map(|m| m.fio_name())))]
    UnknownRwMode {
        /// The mode given.
        value: String,
    },
    /// `bs=4k,8k`: another size for writes.
    #[error("numio uses one block size for reads and writes; give one size or range")]
    BlockSizePerDirection {
        /// The sizes given.
        value: String,
    },
    /// `size=50%`.
    #[error("percentages other than 100% are not supported by numio; give bytes (e.g. 10g)")]
    SizePercent {
        /// The percentage given, without `%`.
        percent: String,
    },
    /// `rate_iops=100,200`: another rate for writes.
    #[error("numio takes one rate for reads and writes")]
    RatePerDirection {
        /// The rates given.
        value: String,
    },
    /// A `randseed` that is not a whole number.
    #[error("not a whole number")]
    NotWholeNumber {
        /// The value given.
        value: String,
    },
    /// An `ioengine` numio has no backend for.
    #[error("numio backends map from {}", and_list(IOENGINES.iter().map(|e| e.fio)))]
    UnknownIoengine {
        /// The engine given.
        engine: String,
    },
    /// `cmd_type` other than `nvme`.
    #[error("numio passthru speaks NVMe only: cmd_type=nvme")]
    CmdTypeNotNvme {
        /// The type given.
        value: String,
    },
    /// A `cpus_allowed_policy` that is no policy of fio's.
    #[error("use {}", or_list(CpusPolicy::ALL.iter().map(|p| p.fio_name())))]
    UnknownCpusPolicy {
        /// The policy given.
        value: String,
    },
    /// A CPU or node list that does not parse or is empty.
    #[error(transparent)]
    CpuSet(#[from] CpuSetError),
    /// `numa_mem_policy=bind` without nodes.
    #[error("bind needs nodes: `numa_mem_policy=bind:0`")]
    BindWithoutNodes,
    /// A memory policy of fio's that numio does not implement.
    #[error("`{mode}` is not supported by numio; use {}", or_list(MEM_POLICIES.iter().copied()))]
    UnsupportedMemPolicy {
        /// The mode given (`interleave`).
        mode: String,
    },
    /// A memory policy that is no policy of fio's.
    #[error("use {}", or_list(MEM_POLICIES.iter().copied()))]
    UnknownMemPolicy {
        /// The policy given.
        value: String,
    },
    /// `filename=a:b`: several files in one job.
    #[error("numio drives one file per job; split the files into sections (escape a colon in a path as `\\:`)")]
    SeveralFiles {
        /// The value given.
        value: String,
    },
    /// A `random_distribution` numio cannot take.
    #[error(transparent)]
    Distribution(#[from] DistributionError),
    /// `numa_cpu_nodes` in a section that has `cpus_allowed` too.
    #[error("numio cannot combine it with cpus_allowed (line {cpus_allowed_line}); keep one")]
    NodesWithCpusAllowed {
        /// The line of the `cpus_allowed`.
        cpus_allowed_line: usize,
    },
}

/// `a, b or c`.
pub(crate) fn or_list<'a>(names: impl Iterator<Item = &'a str>) -> String {
    joined(names, " or ")
}

/// `a, b and c`.
pub(crate) fn and_list<'a>(names: impl Iterator<Item = &'a str>) -> String {
    joined(names, " and ")
}

fn joined<'a>(names: impl Iterator<Item = &'a str>, last: &str) -> String {
    let names: Vec<&str> = names.collect();
    match names.split_last() {
        None => String::new(),
        Some((only, [])) => (*only).to_string(),
        Some((end, rest)) => format!("{}{last}{end}", rest.join(", ")),
    }
}
