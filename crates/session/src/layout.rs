//! Files numio makes before a run, as fio lays out a job's file: a target
//! that does not exist, given with `--size`, is created and written whole
//! (pseudo-random data, so reads hit real blocks, not holes) before the
//! run, and numio says so, with the bytes written (set-up I/O is never in
//! the figures, and never hidden). And the word a sparse file is owed:
//! reads of its holes return zeros without touching the device.
//!
//! And the embedded default target ([`default_target`]):
//! `$TMPDIR/numio-default-target-1GiB.bin`, filled with incompressible data
//! the first time. `$TMPDIR` is shared with other users, so an existing
//! target is reused only when it is a regular file this user owns, and a
//! new one is written to a `.part` file created new (`O_EXCL|O_NOFOLLOW`,
//! 0600) then renamed into place (issue #16).

use std::io::Write;
use std::path::{Path, PathBuf};

/// Most `.part` names tried before giving up.
const PART_TRIES_MAX: usize = 64;

/// Why a file could not be laid out.
#[derive(Debug, thiserror::Error)]
pub enum LayoutError {
    /// The path is under `/dev`: numio never creates device nodes.
    #[error("{0} does not exist, and numio makes no files under /dev; check the device name (`numio topo` lists NVMe namespaces)")]
    UnderDev(PathBuf),
    /// Its directory does not exist.
    #[error("{0} does not exist, nor does its directory; create the directory, or give an existing file or device")]
    NoDirectory(PathBuf),
    /// Creating or writing failed.
    #[error("laying out {path}: {source}")]
    Io {
        /// The file being made.
        path: PathBuf,
        /// What failed.
        source: std::io::Error,
    },
}

/// Creates `path` with `len_bytes` of pseudo-random data: written to a
/// private `.part` file beside it (never through a planted symlink), synced,
/// then renamed into place, so a crash leaves no half-made target.
pub fn lay_out(path: &Path, len_bytes: u64) -> Result<(), LayoutError> {
    if path.starts_with("/dev") {
        return Err(LayoutError::UnderDev(path.to_path_buf()));
    }
    let dir = match path.parent() {
        Some(d) if d.as_os_str().is_empty() => Path::new("."),
        Some(d) => d,
        None => Path::new("/"),
    };
    if !dir.is_dir() {
        return Err(LayoutError::NoDirectory(path.to_path_buf()));
    }
    let io = |source| LayoutError::Io {
        path: path.to_path_buf(),
        source,
    };
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    static FILLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let (tmp, mut file) = (0..PART_TRIES_MAX)
        .find_map(|_| {
            let n = FILLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let tmp = dir.join(format!(".{name}.{}.{n}.part", std::process::id()));
            match sysapi::file::create_new_private(&tmp) {
                Ok(f) => Some(Ok((tmp, f))),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => None,
                Err(e) => Some(Err(e)),
            }
        })
        .unwrap_or_else(|| {
            Err(std::io::Error::other(format!(
                "{PART_TRIES_MAX} .part names were all taken"
            )))
        })
        .map_err(io)?;
    let mut write = || -> std::io::Result<()> {
        let mut rng = engine::gen::Rng::new(0x006e_756d_696f);
        let mut chunk = vec![0u8; 1 << 20];
        let mut left = len_bytes;
        while left > 0 {
            for w in chunk.chunks_exact_mut(8) {
                w.copy_from_slice(&rng.next_u64().to_le_bytes());
            }
            let n = left.min(chunk.len() as u64) as usize;
            file.write_all(&chunk[..n])?;
            left -= n as u64;
        }
        file.sync_all()?;
        std::fs::rename(&tmp, path)
    };
    write()
        .inspect_err(|_| {
            let _ = std::fs::remove_file(&tmp);
        })
        .map_err(io)
}

/// For a regular file with holes (fewer bytes allocated than its length),
/// the note its read results need; `None` for a file without holes or
/// anything else.
pub fn sparse_note(path: &Path) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(path).ok()?;
    if !m.is_file() || m.len() == 0 {
        return None;
    }
    let allocated = m.blocks().saturating_mul(512);
    (allocated < m.len()).then(|| {
        format!(
            "{} is sparse ({} of {} bytes allocated): reads of its holes return zeros without \
             touching the device; write it first (or let numio lay out a new file with --size)",
            path.display(),
            allocated,
            m.len()
        )
    })
}

/// Size of the embedded default target.
pub const DEFAULT_TARGET_BYTES: u64 = 1 << 30;

/// File name of the embedded default target under `$TMPDIR`.
pub const DEFAULT_TARGET_NAME: &str = "numio-default-target-1GiB.bin";

/// What to do about a default target numio will not use.
const DEFAULT_TARGET_FIX: &str = "remove it, or set TMPDIR to a directory only you can write";

/// Why the embedded default target could not be used or made.
#[derive(Debug, thiserror::Error)]
pub enum DefaultTargetError {
    /// `lstat` failed.
    #[error("cannot look at {}", path.display())]
    Inspect {
        /// The default target.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// A symlink is there.
    #[error("the default target {} is a symlink, which numio will not write through; {DEFAULT_TARGET_FIX}", path.display())]
    Symlink {
        /// The default target.
        path: PathBuf,
    },
    /// Something other than a regular file is there.
    #[error("the default target {} is not a regular file; {DEFAULT_TARGET_FIX}", path.display())]
    NotRegular {
        /// The default target.
        path: PathBuf,
    },
    /// Another user's file is there.
    #[error("the default target {} belongs to user {uid}, not to you; {DEFAULT_TARGET_FIX}", path.display())]
    Foreign {
        /// The default target.
        path: PathBuf,
        /// Its owner.
        uid: u32,
    },
    /// It could not be made.
    #[error("cannot create the default target in {} (set TMPDIR to a writable directory with 1 GiB free)", dir.display())]
    Create {
        /// The directory.
        dir: PathBuf,
        /// Why.
        #[source]
        source: LayoutError,
    },
}

/// `$TMPDIR/numio-default-target-1GiB.bin`, created the first time (`say`
/// hears that it is being made, before the 1 GiB is written).
pub fn default_target(say: &mut dyn FnMut(String)) -> Result<PathBuf, DefaultTargetError> {
    let dir = std::env::var_os("TMPDIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/tmp"));
    ensure_default_target(&dir, DEFAULT_TARGET_BYTES, say)
}

/// The default target in `dir`, of `len_bytes` (created when absent or of
/// another length); a symlink, a non-file or another user's file there is
/// refused.
pub fn ensure_default_target(
    dir: &Path,
    len_bytes: u64,
    say: &mut dyn FnMut(String),
) -> Result<PathBuf, DefaultTargetError> {
    use sysapi::file::{inspect, Existing};
    let path = dir.join(DEFAULT_TARGET_NAME);
    let found = inspect(&path).map_err(|source| DefaultTargetError::Inspect {
        path: path.clone(),
        source,
    })?;
    match found {
        Existing::Own { len_bytes: len } if len == len_bytes => return Ok(path),
        Existing::Own { .. } | Existing::Absent => {}
        Existing::Symlink => return Err(DefaultTargetError::Symlink { path }),
        Existing::NotRegular => return Err(DefaultTargetError::NotRegular { path }),
        Existing::Foreign { uid } => return Err(DefaultTargetError::Foreign { path, uid }),
    }
    say(format!(
        "creating the default target {} (1 GiB, once)",
        path.display()
    ));
    lay_out(&path, len_bytes).map_err(|source| DefaultTargetError::Create {
        dir: dir.to_path_buf(),
        source,
    })?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("numio-layout-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn a_laid_out_file_is_whole_and_never_written_through_a_symlink() {
        let d = dir("whole");
        let victim = d.join("victim");
        std::fs::write(&victim, "keep").unwrap();
        let pid = std::process::id();
        for n in 0..PART_TRIES_MAX / 2 {
            std::os::unix::fs::symlink(&victim, d.join(format!(".new.img.{pid}.{n}.part")))
                .unwrap();
        }
        let f = d.join("new.img");
        lay_out(&f, 3 << 20).unwrap();
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep");
        assert_eq!(std::fs::metadata(&f).unwrap().len(), 3 << 20);
        assert_eq!(sparse_note(&f), None, "every block written");
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn devices_and_missing_directories_are_refused_and_holes_are_named() {
        assert!(matches!(
            lay_out(Path::new("/dev/nvme99n1"), 1 << 20),
            Err(LayoutError::UnderDev(_))
        ));
        assert!(matches!(
            lay_out(Path::new("/nonexistent/dir/x.img"), 1 << 20),
            Err(LayoutError::NoDirectory(_))
        ));
        let d = dir("sparse");
        let f = d.join("sparse.img");
        std::fs::File::create(&f).unwrap().set_len(8 << 20).unwrap();
        let n = sparse_note(&f).expect("a sparse file is named");
        assert!(
            n.contains("is sparse (0 of 8388608 bytes allocated)"),
            "{n}"
        );
        let _ = std::fs::remove_dir_all(&d);
    }

    fn quiet(_: String) {}

    /// Issue #16: symlinks planted at the predictable `.part` names (and at
    /// the target itself) made root's first bench overwrite the file they
    /// pointed at.
    #[test]
    fn planted_symlinks_are_never_written_through() {
        let d = dir("planted");
        let victim = d.join("victim");
        std::fs::write(&victim, "root's 0600 file").unwrap();
        let pid = std::process::id();
        for n in 0..32 {
            let part = d.join(format!(".{DEFAULT_TARGET_NAME}.{pid}.{n}.part"));
            std::os::unix::fs::symlink(&victim, part).unwrap();
        }
        let path =
            ensure_default_target(&d, 1 << 20, &mut quiet).expect("a fresh .part name is found");
        assert_eq!(
            std::fs::read_to_string(&victim).unwrap(),
            "root's 0600 file"
        );
        let meta = std::fs::symlink_metadata(&path).unwrap();
        assert!(meta.file_type().is_file());
        assert_eq!(meta.len(), 1 << 20);
        let mode = std::os::unix::fs::PermissionsExt::mode(&meta.permissions());
        assert_eq!(mode & 0o777, 0o600, "private to its owner");
        std::fs::remove_file(&path).unwrap();
        std::os::unix::fs::symlink(&victim, &path).unwrap();
        let e = ensure_default_target(&d, 1 << 20, &mut quiet)
            .expect_err("a symlink target")
            .to_string();
        assert!(e.contains("is a symlink") && e.contains("TMPDIR"), "{e}");
        assert_eq!(
            std::fs::read_to_string(&victim).unwrap(),
            "root's 0600 file"
        );
        let _ = std::fs::remove_dir_all(&d);
    }

    /// Issue #16: a default target another user made was used (and
    /// rewritten when of another size) by root.
    #[test]
    fn another_users_default_target_is_refused() {
        if sysapi::file::effective_uid() != 0 {
            eprintln!("skipped: making another user's file needs root");
            return;
        }
        let d = dir("foreign");
        let path = d.join(DEFAULT_TARGET_NAME);
        std::fs::write(&path, "theirs").unwrap();
        std::os::unix::fs::chown(&path, Some(65534), Some(65534)).unwrap();
        let e = ensure_default_target(&d, 1 << 20, &mut quiet)
            .expect_err("foreign")
            .to_string();
        assert!(e.contains("belongs to user 65534"), "{e}");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "theirs");
        let _ = std::fs::remove_dir_all(&d);
    }
}
