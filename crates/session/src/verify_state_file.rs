//! Where the verify state lives and how its file is touched, so that no
//! other local user can steer numio's writes (often root's) or feed it a
//! file that never ends:
//! - the default place is `$XDG_STATE_HOME/numio/` or
//!   `$HOME/.local/state/numio/`, never a shared temporary directory: with
//!   neither variable set, numio refuses and names `--verify-state`;
//! - that directory is made 0700 and must be a directory (not a link)
//!   owned by this user and writable by no one else;
//! - the temporary a save renames into place and the lock beside it are
//!   created with `O_EXCL | O_NOFOLLOW` (a lock that exists is opened with
//!   `O_NOFOLLOW` and must be this user's regular file);
//! - a read takes a regular file of at most [`MAX_STATE_BYTES`], opened
//!   without blocking (a FIFO is refused, not waited on).

use std::ffi::OsString;
use std::fs::File;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use crate::error::VerifyStateError as E;

/// The largest verify state read (a record per target is a few KiB).
pub const MAX_STATE_BYTES: u64 = 16 << 20;

/// The default state file, given `$XDG_STATE_HOME` and `$HOME` (empty or
/// relative values count as unset, as the XDG spec says); its directory
/// made 0700 and checked ([`private_dir`]).
pub fn default_path_from(xdg: Option<OsString>, home: Option<OsString>) -> Result<PathBuf, E> {
    let absolute = |v: Option<OsString>| v.map(PathBuf::from).filter(|p| p.is_absolute());
    let base = absolute(xdg)
        .or_else(|| absolute(home).map(|h| h.join(".local/state")))
        .ok_or(E::NoStateDir)?;
    let dir = base.join("numio");
    private_dir(&dir)?;
    Ok(dir.join("verify-state.json"))
}

/// Makes `dir` (mode 0700; missing parents too) unless it exists, then
/// refuses it unless it is a directory, not a symbolic link, owned by this
/// user and writable by no group or other user.
pub fn private_dir(dir: &Path) -> Result<(), E> {
    if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(parent)
            .map_err(|source| E::MakeDir {
                dir: parent.to_path_buf(),
                source,
            })?;
    }
    match std::fs::DirBuilder::new().mode(0o700).create(dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(source) => {
            return Err(E::MakeDir {
                dir: dir.to_path_buf(),
                source,
            })
        }
    }
    let meta = std::fs::symlink_metadata(dir).map_err(|source| E::StatDir {
        dir: dir.to_path_buf(),
        source,
    })?;
    if !meta.file_type().is_dir() {
        return Err(E::DirNotADirectory {
            dir: dir.to_path_buf(),
        });
    }
    let me = euid();
    if meta.uid() != me {
        return Err(E::DirNotOwned {
            dir: dir.to_path_buf(),
            owner: meta.uid(),
            euid: me,
        });
    }
    if meta.mode() & 0o022 != 0 {
        return Err(E::DirWritableByOthers {
            dir: dir.to_path_buf(),
            mode: meta.mode() & 0o7777,
        });
    }
    Ok(())
}

fn euid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

/// The text of the state file `path`, `None` when there is none: a regular
/// file of at most [`MAX_STATE_BYTES`].
pub fn read(path: &Path) -> Result<Option<String>, E> {
    use sysapi::file::CappedReadError as C;
    let path_buf = || path.to_path_buf();
    let bytes = match sysapi::file::read_regular_capped(path, MAX_STATE_BYTES) {
        Ok(b) => b,
        Err(C::Io(e)) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(C::Io(source)) => {
            return Err(E::Read {
                path: path_buf(),
                source,
            })
        }
        Err(C::NotRegular(kind)) => {
            return Err(E::NotRegular {
                path: path_buf(),
                kind,
            })
        }
        Err(C::TooBig { len_bytes, .. }) => {
            return Err(E::TooBig {
                path: path_buf(),
                len_bytes,
                max_bytes: MAX_STATE_BYTES,
            })
        }
    };
    String::from_utf8(bytes)
        .map(Some)
        .map_err(|_| E::NotUtf8 { path: path_buf() })
}

/// Opens (making it when missing) the lock file `path`: created with
/// `O_EXCL | O_NOFOLLOW`; one that exists is opened with `O_NOFOLLOW` and
/// must be a regular file of this user's.
pub fn open_lock(path: &Path) -> Result<File, E> {
    let create = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path);
    match create {
        Ok(f) => return Ok(f),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(source) => {
            return Err(E::CreateLock {
                path: path.to_path_buf(),
                source,
            })
        }
    }
    let f = std::fs::OpenOptions::new()
        .write(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .map_err(|source| E::OpenLock {
            path: path.to_path_buf(),
            source,
        })?;
    let meta = f.metadata().map_err(|source| E::StatLock {
        path: path.to_path_buf(),
        source,
    })?;
    if !meta.file_type().is_file() || meta.uid() != euid() {
        return Err(E::LockNotOwned {
            path: path.to_path_buf(),
            owner: meta.uid(),
        });
    }
    Ok(f)
}

/// Writes `text` to a new file beside `path` (created with `O_EXCL |
/// O_NOFOLLOW`, mode 0600) and renames it onto `path` (a rename replaces
/// a link there, never writes through it).
pub fn write_replacing(path: &Path, text: &str) -> std::io::Result<()> {
    use std::io::Write;
    let mut last = None;
    for attempt in 0..8u32 {
        let tmp = path.with_extension(format!(
            "json.{}.{}.tmp",
            std::process::id(),
            nonce(attempt)
        ));
        let opened = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&tmp);
        let mut f = match opened {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                last = Some(e);
                continue;
            }
            Err(e) => return Err(e),
        };
        let written = f.write_all(text.as_bytes()).and_then(|()| f.sync_all());
        if let Err(e) = written.and_then(|()| std::fs::rename(&tmp, path)) {
            let _ = std::fs::remove_file(&tmp);
            return Err(e);
        }
        return Ok(());
    }
    Err(last.unwrap_or_else(|| std::io::Error::other("no temporary name free")))
}

/// A number that differs between attempts and between runs.
fn nonce(attempt: u32) -> u64 {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    now ^ (u64::from(attempt) << 56)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn temp_dir(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("numio-vsf-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    // The VM lab's guest has a read-only home: the error says how out.
    #[test]
    fn a_home_where_nothing_can_be_made_names_the_way_out() {
        let e = default_path_from(None, Some("/proc/numio-no-home".into()))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("cannot make /proc/numio-no-home/.local/state"),
            "{e}"
        );
        assert!(
            e.contains("XDG_STATE_HOME") && e.contains("--verify-state FILE"),
            "{e}"
        );
    }

    // Regression (issue 38): with HOME and XDG_STATE_HOME unset the state
    // went to $TMPDIR/numio/, where another user could plant links.
    #[test]
    fn without_home_or_xdg_the_default_is_refused_naming_the_flag() {
        assert!(matches!(default_path_from(None, None), Err(E::NoStateDir)));
        let e = default_path_from(None, None).unwrap_err().to_string();
        assert!(e.contains("--verify-state FILE"), "{e}");
        let e = default_path_from(Some("rel".into()), Some("".into()))
            .unwrap_err()
            .to_string();
        assert!(e.contains("neither XDG_STATE_HOME nor HOME"), "{e}");
    }

    #[test]
    fn the_default_directory_is_made_0700_and_checked() {
        let d = temp_dir("default");
        let p = default_path_from(Some(d.clone().into()), None).unwrap();
        assert_eq!(p, d.join("numio/verify-state.json"));
        let mode = std::fs::metadata(d.join("numio")).unwrap().mode() & 0o777;
        assert_eq!(mode, 0o700);
        // Under HOME: ~/.local/state/numio.
        let p = default_path_from(None, Some(d.clone().into())).unwrap();
        assert_eq!(p, d.join(".local/state/numio/verify-state.json"));

        std::fs::set_permissions(d.join("numio"), std::fs::Permissions::from_mode(0o777)).unwrap();
        match default_path_from(Some(d.clone().into()), None) {
            Err(E::DirWritableByOthers { dir, mode }) => {
                assert_eq!((dir, mode), (d.join("numio"), 0o777));
            }
            other => panic!("{other:?}"),
        }
        let e = default_path_from(Some(d.clone().into()), None)
            .unwrap_err()
            .to_string();
        assert!(e.contains("writable by others (mode 777)"), "{e}");

        std::fs::remove_dir(d.join("numio")).unwrap();
        std::os::unix::fs::symlink(temp_dir("elsewhere"), d.join("numio")).unwrap();
        let e = default_path_from(Some(d.clone().into()), None)
            .unwrap_err()
            .to_string();
        assert!(e.contains("is not a directory (a link?)"), "{e}");
        std::fs::remove_dir_all(&d).unwrap();
        std::fs::remove_dir_all(temp_dir("elsewhere")).unwrap();
    }

    #[test]
    fn a_directory_of_another_user_is_refused() {
        if euid() != 0 {
            eprintln!("skipping: needs root (chown)");
            return;
        }
        let d = temp_dir("owner");
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(d.join("numio"))
            .unwrap();
        std::os::unix::fs::chown(d.join("numio"), Some(65534), None).unwrap();
        let e = default_path_from(Some(d.clone().into()), None)
            .unwrap_err()
            .to_string();
        assert!(e.contains("is owned by uid 65534"), "{e}");
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn reads_take_regular_files_of_bounded_size_only() {
        let d = temp_dir("read");
        assert_eq!(read(&d.join("none.json")).unwrap(), None);
        std::fs::write(d.join("ok.json"), "{}").unwrap();
        assert_eq!(read(&d.join("ok.json")).unwrap().as_deref(), Some("{}"));
        let e = read(Path::new("/dev/zero")).unwrap_err().to_string();
        assert!(e.contains("not a regular file"), "{e}");
        let fifo = d.join("fifo");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: mkfifo on a NUL-terminated path this test owns.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let e = read(&fifo).unwrap_err().to_string();
        assert!(e.contains("not a regular file"), "{e}");
        File::create(d.join("big.json"))
            .unwrap()
            .set_len(MAX_STATE_BYTES + 1)
            .unwrap();
        match read(&d.join("big.json")) {
            Err(E::TooBig {
                path,
                len_bytes,
                max_bytes,
            }) => assert_eq!(
                (path, len_bytes, max_bytes),
                (d.join("big.json"), MAX_STATE_BYTES + 1, MAX_STATE_BYTES)
            ),
            other => panic!("{other:?}"),
        }
        let e = read(&d.join("big.json")).unwrap_err().to_string();
        assert!(e.contains("more than the 16 MiB"), "{e}");
        std::fs::remove_dir_all(&d).unwrap();
    }

    // Regression (issue 38): the temporary was written through a link a
    // local user planted, overwriting the file it pointed to.
    #[test]
    fn writes_and_locks_never_follow_a_link() {
        let d = temp_dir("links");
        let victim = d.join("victim");
        std::fs::write(&victim, "precious").unwrap();
        let state = d.join("state.json");
        std::os::unix::fs::symlink(&victim, d.join("state.lock")).unwrap();
        let e = open_lock(&d.join("state.lock")).unwrap_err().to_string();
        assert!(e.contains("state.lock"), "{e}");
        // A link where the state is: replaced, not written through.
        std::os::unix::fs::symlink(&victim, &state).unwrap();
        write_replacing(&state, "{}\n").unwrap();
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
        assert!(std::fs::symlink_metadata(&state).unwrap().is_file());
        assert_eq!(std::fs::read_to_string(&state).unwrap(), "{}\n");
        let mode = std::fs::metadata(&state).unwrap().mode() & 0o777;
        assert_eq!(mode, 0o600);
        // A lock this user made before is opened again.
        std::fs::remove_file(d.join("state.lock")).unwrap();
        drop(open_lock(&d.join("state.lock")).unwrap());
        drop(open_lock(&d.join("state.lock")).unwrap());
        std::fs::remove_dir_all(&d).unwrap();
    }
}
