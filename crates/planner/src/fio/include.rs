//! Where a job file and its includes come from, and the limits of reading
//! them: [`FsResolver`] opens regular files only, without blocking (an
//! `include` of a FIFO hung, one of `/dev/zero` read until memory ran
//! out), and every read is held to what is left of one byte budget. The
//! reader counts sections and entries against [`SECTIONS_MAX`] and
//! [`ENTRIES_MAX`], so includes that fan out (seven 150-byte files, each
//! including the next ten times: 10^6 sections) stop early. Tests and
//! the fuzz target resolve includes from memory through the same trait.

use std::io::{Error, ErrorKind, Read};
use std::path::{Path, PathBuf};

/// Most bytes of job-file text read for one job file, its includes (each
/// time they are included) counted in. Real job files are a few KiB.
pub const JOB_TEXT_BYTES_MAX: u64 = 1 << 20;

/// Most job sections one job file may make, includes counted in: a run
/// takes at most this many jobs anyway.
pub const SECTIONS_MAX: usize = crate::workload::JOBS_TOTAL_MAX as usize;

/// Most options held over all sections, each section's copy of the
/// `[global]` options counted in.
pub const ENTRIES_MAX: usize = 1 << 18;

/// Reads the job files an `include` names.
pub trait IncludeResolver {
    /// The identity of `path`, for finding include cycles (on the file
    /// system: its canonical path).
    fn canonical(&self, path: &Path) -> PathBuf;

    /// The text of the job file `path`; an error when it holds more than
    /// `max_bytes`, or is not a job file this resolver reads. The error
    /// quotes nothing of the file.
    fn read(&self, path: &Path, max_bytes: u64) -> std::io::Result<String>;
}

/// Job files from the file system: regular files only, opened without
/// blocking.
#[derive(Debug, Clone, Copy, Default)]
pub struct FsResolver;

impl IncludeResolver for FsResolver {
    fn canonical(&self, path: &Path) -> PathBuf {
        std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
    }

    fn read(&self, path: &Path, max_bytes: u64) -> std::io::Result<String> {
        use std::os::unix::fs::OpenOptionsExt;
        let file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
            .open(path)?;
        if !file.metadata()?.file_type().is_file() {
            return Err(Error::new(
                ErrorKind::InvalidInput,
                "not a regular file (a device, FIFO or socket is no job file); include job files only",
            ));
        }
        let mut bytes = Vec::new();
        file.take(max_bytes + 1).read_to_end(&mut bytes)?;
        check_size(bytes.len(), max_bytes)?;
        text(bytes)
    }
}

/// An error when `len_bytes` is past the `max_bytes` left of the budget.
pub fn check_size(len_bytes: usize, max_bytes: u64) -> std::io::Result<()> {
    if len_bytes as u64 > max_bytes {
        return Err(Error::new(
            ErrorKind::InvalidData,
            format!(
                "more than the {max_bytes} bytes left of the {} KiB a job file may read with its includes; include smaller job files, fewer times",
                JOB_TEXT_BYTES_MAX >> 10
            ),
        ));
    }
    Ok(())
}

/// `bytes` as text, or an error that shows none of them.
pub fn text(bytes: Vec<u8>) -> std::io::Result<String> {
    String::from_utf8(bytes).map_err(|_| {
        Error::new(
            ErrorKind::InvalidData,
            "not UTF-8 text, so not a job file; include job files only",
        )
    })
}

/// Job files held in memory, by path (for tests and fuzzing).
#[derive(Debug, Clone, Default)]
pub struct MemResolver {
    /// Path → contents.
    pub files: std::collections::BTreeMap<PathBuf, Vec<u8>>,
}

impl IncludeResolver for MemResolver {
    fn canonical(&self, path: &Path) -> PathBuf {
        path.to_path_buf()
    }

    fn read(&self, path: &Path, max_bytes: u64) -> std::io::Result<String> {
        let bytes = self
            .files
            .get(path)
            .ok_or_else(|| Error::new(ErrorKind::NotFound, "no such job file"))?;
        check_size(bytes.len(), max_bytes)?;
        text(bytes.clone())
    }
}
