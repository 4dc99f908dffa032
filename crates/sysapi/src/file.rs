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

/// Why [`read_regular_capped`] returned no bytes.
#[derive(Debug)]
pub enum CappedReadError {
    /// The open, `fstat` or read failed (`NotFound` among them).
    Io(io::Error),
    /// Not a regular file: what it is, in words ("a FIFO").
    NotRegular(&'static str),
    /// More bytes than allowed: its length when opened (or what was read
    /// when it grew while read), and the cap.
    TooBig {
        /// Bytes found.
        len_bytes: u64,
        /// The cap.
        max_bytes: u64,
    },
}

/// The bytes of the regular file at `path`, at most `max_bytes`: opened
/// without blocking (a FIFO does not wait for a writer) and without
/// becoming a controlling terminal, refused before a byte is read when it
/// is a FIFO, device, socket or directory or longer than the cap, and
/// refused when it grows past the cap while read. For files numio is told
/// to read (configurations, state, job files) where a hostile or mistaken
/// path must not hang or exhaust it.
pub fn read_regular_capped(path: &Path, max_bytes: u64) -> Result<Vec<u8>, CappedReadError> {
    use std::io::Read;
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
        .map_err(CappedReadError::Io)?;
    let meta = f.metadata().map_err(CappedReadError::Io)?;
    if !meta.file_type().is_file() {
        return Err(CappedReadError::NotRegular(kind_of(&meta.file_type())));
    }
    if meta.len() > max_bytes {
        return Err(CappedReadError::TooBig {
            len_bytes: meta.len(),
            max_bytes,
        });
    }
    let mut bytes = Vec::new();
    f.take(max_bytes + 1)
        .read_to_end(&mut bytes)
        .map_err(CappedReadError::Io)?;
    if bytes.len() as u64 > max_bytes {
        return Err(CappedReadError::TooBig {
            len_bytes: bytes.len() as u64,
            max_bytes,
        });
    }
    Ok(bytes)
}

/// What a file that is not regular is, in words.
pub fn kind_of(t: &std::fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    if t.is_file() {
        "a regular file"
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else if t.is_socket() {
        "a socket"
    } else if t.is_dir() {
        "a directory"
    } else if t.is_symlink() {
        "a symlink"
    } else {
        "not a file"
    }
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

    #[test]
    fn capped_reads_take_regular_files_within_the_cap_only() {
        let d = dir("capped");
        let f = d.join("f");
        std::fs::write(&f, b"12345").unwrap();
        assert_eq!(read_regular_capped(&f, 5).unwrap(), b"12345");
        assert!(matches!(
            read_regular_capped(&f, 4),
            Err(CappedReadError::TooBig {
                len_bytes: 5,
                max_bytes: 4
            })
        ));
        assert!(matches!(
            read_regular_capped(&d, 5),
            Err(CappedReadError::NotRegular("a directory"))
        ));
        // A FIFO with no writer: refused at once, not waited on.
        let fifo = d.join("fifo");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: mkfifo with a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        assert!(matches!(
            read_regular_capped(&fifo, 5),
            Err(CappedReadError::NotRegular("a FIFO"))
        ));
        assert!(matches!(
            read_regular_capped(Path::new("/dev/zero"), 5),
            Err(CappedReadError::NotRegular("a character device"))
        ));
        assert!(matches!(
            read_regular_capped(&d.join("absent"), 5),
            Err(CappedReadError::Io(e)) if e.kind() == io::ErrorKind::NotFound
        ));
        std::fs::remove_dir_all(&d).unwrap();
    }
}
