//! The embedded default target: `$TMPDIR/numio-default-target-1GiB.bin`,
//! filled with incompressible data the first time. `$TMPDIR` is shared with
//! other users, so an existing target is reused only when it is a regular
//! file this user owns, and a new one is written to a `.part` file created
//! new (`O_EXCL|O_NOFOLLOW`, 0600) then renamed into place (issue #16).

use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use sysapi::file::{inspect, Existing};

/// Size of the embedded default target.
pub const DEFAULT_TARGET_BYTES: u64 = 1 << 30;
/// File name of the embedded default target under `$TMPDIR`.
pub const DEFAULT_TARGET_NAME: &str = "numio-default-target-1GiB.bin";

/// `$TMPDIR/numio-default-target-1GiB.bin`, created the first time.
pub fn default_target() -> anyhow::Result<PathBuf> {
    let dir = std::env::var_os("TMPDIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/tmp"));
    ensure(&dir, DEFAULT_TARGET_BYTES)
}

/// The default target in `dir`, of `len_bytes` (created when absent or of
/// another length); a symlink, a non-file or another user's file there is
/// refused.
pub fn ensure(dir: &Path, len_bytes: u64) -> anyhow::Result<PathBuf> {
    let path = dir.join(DEFAULT_TARGET_NAME);
    let fix = "remove it, or set TMPDIR to a directory only you can write";
    match inspect(&path).with_context(|| format!("cannot look at {}", path.display()))? {
        Existing::Own { len_bytes: len } if len == len_bytes => return Ok(path),
        Existing::Own { .. } | Existing::Absent => {}
        Existing::Symlink => bail!(
            "the default target {} is a symlink, which numio will not write through; {fix}",
            path.display()
        ),
        Existing::NotRegular => bail!(
            "the default target {} is not a regular file; {fix}",
            path.display()
        ),
        Existing::Foreign { uid } => bail!(
            "the default target {} belongs to user {uid}, not to you; {fix}",
            path.display()
        ),
    }
    eprintln!(
        "numio: creating the default target {} (1 GiB, once)",
        path.display()
    );
    session::layout::lay_out(&path, len_bytes).with_context(|| {
        format!(
            "cannot create the default target in {} (set TMPDIR to a writable directory with 1 GiB free)",
            dir.display()
        )
    })?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("numio-dt-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

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
        let path = ensure(&d, 1 << 20).expect("a fresh .part name is found");
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
        let e = format!("{:#}", ensure(&d, 1 << 20).expect_err("a symlink target"));
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
        let e = format!("{:#}", ensure(&d, 1 << 20).expect_err("foreign"));
        assert!(e.contains("belongs to user 65534"), "{e}");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "theirs");
        let _ = std::fs::remove_dir_all(&d);
    }
}
