//! The error types of topology: discovery and snapshots
//! ([`TopologyError`]), and the text of one sysfs or procfs file
//! ([`ParseError`]).

use std::path::PathBuf;

use crate::cpulist::CpuListError;

/// Why discovery or a snapshot operation failed.
///
/// Missing optional files are not errors (they leave fields empty) and
/// unreadable files are recorded in [`crate::Topology::unreadable`]; these
/// variants are for inputs that make the whole result meaningless.
#[derive(Debug, thiserror::Error)]
pub enum TopologyError {
    /// The root directory or snapshot file does not exist.
    #[error("{path} does not exist; pass --root / for this machine, or a snapshot directory or .tar.gz made by `numio topo --save`")]
    RootMissing {
        /// The path given.
        path: PathBuf,
    },
    /// A file every sysfs tree has is missing under the root.
    #[error("{path} is missing, so {root} is not a complete sysfs/procfs root ({what}); pass --root / for this machine, or a snapshot made by `numio topo --save`")]
    MissingRequired {
        /// The missing path (root joined).
        path: PathBuf,
        /// The root searched.
        root: PathBuf,
        /// What the file is for.
        what: &'static str,
    },
    /// A required file exists but cannot be read or parsed.
    #[error("cannot use {path}: {reason}")]
    BadRequired {
        /// The file.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// A required file was read, but its text does not parse.
    #[error("cannot use {path}: {source}")]
    Unparsable {
        /// The file.
        path: PathBuf,
        /// What is wrong with its text.
        #[source]
        source: ParseError,
    },
    /// A path given to look up cannot be `stat`ed.
    #[error("cannot use {path}: {source}")]
    Stat {
        /// The path.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// A path given to look up is a character device, a socket or a FIFO:
    /// nothing that sits on a block device.
    #[error("cannot use {path}: not a block device, regular file or directory")]
    NotOnBlockDevice {
        /// The path.
        path: PathBuf,
    },
    /// The snapshot was written by another schema version.
    #[error("snapshot {path} has schema version {found}, but this numio reads version {expected}; replay it with the numio version that saved it, or save a new snapshot")]
    SchemaMismatch {
        /// The manifest.
        path: PathBuf,
        /// Version in the manifest.
        found: u32,
        /// [`crate::SCHEMA_VERSION`].
        expected: u32,
    },
    /// The snapshot manifest cannot be parsed.
    #[error("snapshot manifest {path} is not valid: {reason}; save the snapshot again with `numio topo --save`")]
    BadManifest {
        /// The manifest.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// A `.json` root that is not a `numio topo --json` topology.
    #[error("{}: not a `numio topo --json` topology", path.display())]
    NotATopologyJson {
        /// The file.
        path: PathBuf,
        /// Why it does not parse.
        #[source]
        source: serde_json::Error,
    },
    /// The root is neither a directory nor a `.tar.gz` snapshot.
    #[error("{path} is neither a directory nor a .tar.gz snapshot; pass a sysfs root directory or a file made by `numio topo --save`")]
    NotASnapshot {
        /// The path given.
        path: PathBuf,
    },
    /// Reading or writing a snapshot or a temporary directory failed.
    #[error("{action} {path}: {source}")]
    Io {
        /// What was being done (`writing snapshot`, ...).
        action: &'static str,
        /// The file or directory.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// A device number with no entry under `sys/dev/block` or `sys/dev/char`.
    #[error("{path} does not exist: {dev} is not a {kind} device of this machine (or the root is not its sysfs)")]
    NoDevice {
        /// `block` or `character`.
        kind: &'static str,
        /// The device number (`259:3`).
        dev: String,
        /// The link that is missing.
        path: PathBuf,
    },
    /// A character device that is not an NVMe generic device.
    #[error("character device {dev} ({path}) is of class `{class}`, not an NVMe generic device (nvme-generic)")]
    NotNvmeGeneric {
        /// The device number (`259:3`).
        dev: String,
        /// Its sysfs directory.
        path: PathBuf,
        /// The class it belongs to (empty when unknown).
        class: String,
    },
    /// An NVMe generic device whose namespace has no block device.
    #[error("no block device of namespace {nsid} under {dir}")]
    NoNamespaceBlockDevice {
        /// The namespace id.
        nsid: u32,
        /// The controller or subsystem directory searched.
        dir: PathBuf,
    },
}

/// Why the text of a sysfs or procfs file does not parse. Each variant
/// names what was expected and carries what was found (the value, the
/// word or the line), so a caller can record the file as unreadable with a
/// reason a person can act on.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    /// A CPU or node list or mask that does not parse.
    #[error(transparent)]
    List(#[from] CpuListError),
    /// Not a decimal number (`numa_node`, `nsid`, `size`).
    #[error("expected a number, found `{text}`")]
    NotANumber {
        /// The text, trimmed.
        text: String,
    },
    /// An id of 2^32 or more.
    #[error("expected an id below 2^32, found `{value}`")]
    IdTooLarge {
        /// The value.
        value: i64,
    },
    /// Not a hexadecimal number (`class`, `vendor`).
    #[error("`{text}`: {source}")]
    NotHex {
        /// The text, trimmed.
        text: String,
        /// Why Rust's parser refused it.
        #[source]
        source: std::num::ParseIntError,
    },
    /// Not a kernel boolean (`0`/`1`, `Y`/`N`).
    #[error("expected 0/1 or Y/N, found `{text}`")]
    NotABool {
        /// The text, trimmed.
        text: String,
    },
    /// A `queue/scheduler` whose `[` is not closed.
    #[error("unclosed `[` in `{text}`")]
    UnclosedBracket {
        /// The text, trimmed.
        text: String,
    },
    /// A `queue/scheduler` of several entries, none bracketed.
    #[error("no bracketed scheduler in `{text}`")]
    NoActiveScheduler {
        /// The text, trimmed.
        text: String,
    },
    /// A meminfo without the line asked for.
    #[error("no {field} line")]
    NoMeminfoField {
        /// The key (`MemTotal`).
        field: &'static str,
    },
    /// A meminfo line whose value is not a number.
    #[error("bad {field} line `{line}`")]
    BadMeminfoLine {
        /// The key (`MemTotal`).
        field: &'static str,
        /// The line.
        line: String,
    },
    /// A meminfo value too large to count in bytes.
    #[error("{field} out of range in `{line}`")]
    MeminfoOutOfRange {
        /// The key (`MemTotal`).
        field: &'static str,
        /// The line.
        line: String,
    },
    /// A meminfo value in a unit other than `kB`.
    #[error("unknown unit `{unit}` in `{line}`")]
    UnknownMeminfoUnit {
        /// The unit written.
        unit: String,
        /// The line.
        line: String,
    },
    /// An empty file where a header was expected (`/proc/interrupts`).
    #[error("empty file")]
    Empty,
    /// A `/proc/interrupts` header word that is not `CPUn`.
    #[error("bad header word `{word}`")]
    BadInterruptsHeader {
        /// The word.
        word: String,
    },
    /// A `/proc/interrupts` line whose counts do not parse.
    #[error("bad counts on IRQ {irq} line")]
    BadIrqCounts {
        /// The IRQ number.
        irq: u32,
    },
    /// A `/proc/interrupts` line with fewer counts than CPU columns.
    #[error("IRQ {irq} line has {found} counts, expected {expected}")]
    IrqCountsShort {
        /// The IRQ number.
        irq: u32,
        /// Counts found.
        found: usize,
        /// CPU columns of the header.
        expected: usize,
    },
    /// A word of a block device's `stat` that is not a number.
    #[error("`{word}` is not a number")]
    BlockStatWord {
        /// The word.
        word: String,
    },
    /// A block device's `stat` with fewer than 7 numbers.
    #[error("{found} numbers, at least 7 expected")]
    BlockStatShort {
        /// Numbers found.
        found: usize,
    },
    /// A `/proc/PID/stat` without the `(comm)` field.
    #[error("no `(comm)` field (is this /proc/PID/stat?)")]
    NoComm,
    /// A `/proc/PID/stat` that ends before the field asked for.
    #[error("no {name} field ({found} fields after the name)")]
    NoPidStatField {
        /// The field's name in proc(5) (`utime`).
        name: &'static str,
        /// Fields after the command name.
        found: usize,
    },
    /// A `/proc/PID/stat` field that is not a tick count.
    #[error("{name} `{word}` is not a tick count")]
    PidStatTicks {
        /// The field's name in proc(5) (`utime`).
        name: &'static str,
        /// The word found.
        word: String,
    },
    /// A `/proc/stat` without the `cpu` line.
    #[error("no `cpu` line (is this /proc/stat?)")]
    NoCpuLine,
    /// A `/proc/stat` `cpuN` whose N is not a number.
    #[error("not a CPU number")]
    NotACpuNumber,
    /// A `/proc/stat` `ctxt` or `intr` line without its number.
    #[error("no number")]
    NoCount,
    /// A `/proc/stat` `ctxt` or `intr` count that is not a number.
    #[error("`{word}` is not a count")]
    NotACount {
        /// The word.
        word: String,
    },
    /// A `/proc/stat` CPU column that is not a tick count.
    #[error("`{word}` is not a tick count")]
    NotATickCount {
        /// The word.
        word: String,
    },
    /// A `/proc/stat` CPU line with fewer than 4 columns.
    #[error("{found} columns, expected at least 4 (user nice system idle)")]
    TooFewCpuColumns {
        /// Columns found.
        found: usize,
    },
    /// A mountinfo line without the ` - ` before the filesystem type.
    #[error("no ` - ` separator")]
    NoSeparator,
    /// A mountinfo line with too few fields around its ` - `.
    #[error("too few fields")]
    TooFewFields,
    /// A device number that is not `MAJOR:MINOR`.
    #[error("expected MAJOR:MINOR, found `{text}`")]
    NotADevNum {
        /// The text, trimmed.
        text: String,
    },
    /// One line of a file of lines (`/proc/stat`, mountinfo) is wrong.
    #[error("line {line}: {reason}: `{text}`")]
    Line {
        /// The 1-based line number.
        line: usize,
        /// The line (its first 80 characters for long ones).
        text: String,
        /// What is wrong with it.
        #[source]
        reason: Box<ParseError>,
    },
}

impl ParseError {
    /// `reason`, found on line `line` (1-based) whose text is `text`.
    pub fn at_line(line: usize, text: impl Into<String>, reason: ParseError) -> ParseError {
        ParseError::Line {
            line,
            text: text.into(),
            reason: Box::new(reason),
        }
    }
}
