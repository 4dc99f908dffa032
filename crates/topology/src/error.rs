//! The error type of topology discovery and snapshots.

use std::path::PathBuf;

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
