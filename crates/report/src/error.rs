//! Errors of the report crate: each names the input and the fix.

use std::path::PathBuf;

/// Why a report could not be made.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// The result file could not be read.
    #[error("cannot read result file {path} (check the path; result files are written by --save)")]
    Read {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The result file is not valid JSON of the expected shape.
    #[error("{path} is not a numio result file: pass one written by --save (numio bench, numio compare) or by numio bench --json")]
    Parse {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: serde_json::Error,
    },
    /// The result file has another schema or a newer version.
    #[error("{path} has schema {found}; this numio reads {expected}: use the numio version that wrote it, or a newer numio")]
    Schema {
        /// The file.
        path: PathBuf,
        /// `schema` and `schema_version` found.
        found: String,
        /// What this build reads.
        expected: String,
    },
    /// The result file holds no runs where some are needed.
    #[error("{what}: {reason}")]
    Invalid {
        /// What was being read or built.
        what: String,
        /// What is wrong and how to fix it.
        reason: String,
    },
    /// An output could not be written.
    #[error("cannot write {path} (check that the folder exists and is writable)")]
    Write {
        /// The output.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// An arm specification could not be parsed.
    #[error("bad arm {spec:?}: {reason}; use policy=local|spread|remote|none, backend=uring|passthru|vfio|sync, plan=FILE.json, fio=FILE.fio or result=FILE.json")]
    ArmSpec {
        /// The text given.
        spec: String,
        /// What is wrong.
        reason: String,
    },
    /// A chart could not be rasterized to PNG.
    #[error("cannot draw PNG {path}: {reason}; write an .svg chart instead")]
    Png {
        /// The output.
        path: PathBuf,
        /// What went wrong.
        reason: String,
    },
}

impl ReportError {
    /// A failed write to standard output.
    pub fn stdout(source: std::io::Error) -> ReportError {
        ReportError::Write {
            path: PathBuf::from("standard output"),
            source,
        }
    }
}
