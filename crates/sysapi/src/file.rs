//! Files numio keeps where other users may write (`$TMPDIR`): an existing
//! one is looked at without following a symlink, and a new one is created
//! new (`O_CREAT|O_EXCL|O_NOFOLLOW`, mode 0600), never opened through a
//! name someone else planted (issue #16: a predictable `.part` name opened
//! through a symlink let a local user aim root's 1 GiB fill at any file).

use std::fs::File;
use std::io;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::Path;

/// What is at a path numio means to reuse, looked at without following a
/// symlink.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Existing {
    /// Nothing.
    Absent,
    /// A regular file owned by this process's effective user.
    Own {
        /// Its length in bytes.
        len_bytes: u64,
    },
    /// A symlink (whatever it points at).
    Symlink,
    /// A directory, FIFO, socket or device.
    NotRegular,
    /// A regular file another user owns.
    Foreign {
        /// Its owner.
        uid: u32,
    },
}

/// This process's effective user id.
pub fn effective_uid() -> u32 {
    rustix::process::geteuid().as_raw()
}

/// What is at `path` (`lstat`: a symlink is reported, not followed).
pub fn inspect(path: &Path) -> io::Result<Existing> {
    let meta = match std::fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Existing::Absent),
        Err(e) => return Err(e),
    };
    let kind = meta.file_type();
    Ok(if kind.is_symlink() {
        Existing::Symlink
    } else if !kind.is_file() {
        Existing::NotRegular
    } else if meta.uid() != effective_uid() {
        Existing::Foreign { uid: meta.uid() }
    } else {
        Existing::Own {
            len_bytes: meta.len(),
        }
    })
}

/// Creates a new file at `path`, mode 0600, open for writing. Fails with
/// `AlreadyExists` when anything is at the name, a symlink (dangling or
/// not) included: `O_EXCL` never follows the last component, and
/// `O_NOFOLLOW` says so twice.
pub fn create_new_private(path: &Path) -> io::Result<File> {
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32)
        .open(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir(tag: &str) -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!("sysapi-file-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    /// Issue #16: the default target's `.part` file was opened through a
    /// planted symlink and the file it pointed at overwritten.
    #[test]
    fn a_new_file_is_never_opened_through_a_symlink() {
        let d = dir("new");
        let victim = d.join("victim");
        std::fs::write(&victim, "keep").unwrap();
        let planted = d.join("planted");
        std::os::unix::fs::symlink(&victim, &planted).unwrap();
        let dangling = d.join("dangling");
        std::os::unix::fs::symlink(d.join("absent"), &dangling).unwrap();
        for name in [&planted, &dangling, &victim] {
            let e = create_new_private(name).expect_err("something is there");
            assert_eq!(e.kind(), io::ErrorKind::AlreadyExists, "{}", name.display());
        }
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep");
        assert!(
            !d.join("absent").exists(),
            "a dangling link is not followed"
        );
        let fresh = d.join("fresh");
        create_new_private(&fresh).unwrap();
        let meta = std::fs::metadata(&fresh).unwrap();
        assert_eq!(meta.mode() & 0o777, 0o600);
        assert_eq!(meta.uid(), effective_uid());
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn inspect_reports_links_and_owners_without_following() {
        let d = dir("inspect");
        let own = d.join("own");
        std::fs::write(&own, "12345").unwrap();
        let link = d.join("link");
        std::os::unix::fs::symlink(&own, &link).unwrap();
        assert_eq!(inspect(&own).unwrap(), Existing::Own { len_bytes: 5 });
        assert_eq!(inspect(&link).unwrap(), Existing::Symlink);
        assert_eq!(inspect(&d).unwrap(), Existing::NotRegular);
        assert_eq!(inspect(&d.join("none")).unwrap(), Existing::Absent);
        if effective_uid() == 0 {
            std::os::unix::fs::chown(&own, Some(65534), None).unwrap();
            assert_eq!(inspect(&own).unwrap(), Existing::Foreign { uid: 65534 });
        } else {
            eprintln!("skipped: the foreign-owner case needs root to chown");
        }
        let _ = std::fs::remove_dir_all(&d);
    }
}
