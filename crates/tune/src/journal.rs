//! The state file: the original value of every controller numio changed
//! and has not put back yet.
//!
//! `coalesce.json` in the state directory ([`Journal::default_location`]).
//! A record is written (temporary file, fsync, rename, fsync of the
//! directory) before the value changes, so a crash at any point leaves
//! either no change or a record of the original. The first record of a
//! controller wins: a later change never overwrites the original. When the
//! last record goes, the file goes. Every write happens under
//! [`JournalLock`], an exclusive `flock` on `coalesce.lock` beside it,
//! which numio holds for as long as it may change values.

use std::fs::File;
use std::io::{Read, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::TuneError;

/// Version of the state file's layout.
pub const SCHEMA_VERSION: u32 = 1;
/// The state file's name in the state directory.
pub const FILE_NAME: &str = "coalesce.json";
const LOCK_NAME: &str = "coalesce.lock";
const TMP_NAME: &str = "coalesce.json.tmp";
/// Root's state directory.
pub const SYSTEM_DIR: &str = "/run/numio";

/// One controller's original value.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Record {
    /// The controller's name when numio changed it (`nvme0`).
    pub name: String,
    /// Its PCI address: with the serial, who it is under any name.
    pub address: String,
    /// Its serial number.
    pub serial: String,
    /// The feature (0x08: interrupt coalescing).
    pub feature: u8,
    /// The value before numio changed it (completion dword 0 of Get
    /// Features, as Set Features takes it back).
    pub original_raw: u32,
    /// The numio process that recorded it.
    pub pid: u32,
    /// What it was running (`numio coalesce set`).
    pub command: String,
    /// When, in seconds since the Unix epoch.
    pub since_unix_s: u64,
}

impl Record {
    /// Whether it records controller `address` + `serial`'s `feature`.
    pub fn is_of(&self, address: &str, serial: &str, feature: u8) -> bool {
        self.address == address && self.serial == serial && self.feature == feature
    }
}

#[derive(Debug, Serialize, Deserialize)]
struct StateFile {
    schema_version: u32,
    records: Vec<Record>,
}

/// The state directory and its file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Journal {
    dir: PathBuf,
    names: Names,
}

/// The file names of one state file: the file, its lock, its temporary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Names {
    /// The state file (`coalesce.json`).
    pub file: &'static str,
    /// The lock beside it.
    pub lock: &'static str,
    /// The temporary written before the rename.
    pub tmp: &'static str,
    /// What the lock's holder is changing, for [`TuneError::Busy`].
    pub what: &'static str,
}

const COALESCE: Names = Names {
    file: FILE_NAME,
    lock: LOCK_NAME,
    tmp: TMP_NAME,
    what: "coalescing settings",
};

/// The exclusive lock beside the state file; released on drop (and by the
/// kernel when the process dies, `kill -9` included).
#[derive(Debug)]
pub struct JournalLock {
    _file: File,
}

pub(crate) fn journal_err(path: &Path, why: impl std::fmt::Display) -> TuneError {
    TuneError::Journal {
        path: path.to_path_buf(),
        why: why.to_string(),
    }
}

impl Journal {
    /// `$NUMIO_STATE_DIR` when set; else `/run/numio` as root, else
    /// `$XDG_RUNTIME_DIR/numio`.
    pub fn default_location() -> Result<Journal, TuneError> {
        let env = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty());
        if let Some(dir) = env("NUMIO_STATE_DIR") {
            return Ok(Journal::at(dir));
        }
        if sysapi::file::effective_uid() == 0 {
            return Ok(Journal::system());
        }
        match env("XDG_RUNTIME_DIR") {
            Some(run) => Ok(Journal::at(PathBuf::from(run).join("numio"))),
            None => Err(journal_err(
                Path::new("$XDG_RUNTIME_DIR/numio"),
                "no state directory: XDG_RUNTIME_DIR is unset and this is not root; set NUMIO_STATE_DIR to a private directory",
            )),
        }
    }

    /// Root's state directory, `/run/numio`.
    pub fn system() -> Journal {
        Journal::at(SYSTEM_DIR)
    }

    /// Every state file a user should hear about: this user's
    /// ([`Journal::default_location`]) and root's, when they differ (a
    /// user's `show` warns about a root `set` too: the file is readable).
    pub fn visible() -> Vec<Journal> {
        let mut out: Vec<Journal> = Journal::default_location().into_iter().collect();
        if !out.contains(&Journal::system()) {
            out.push(Journal::system());
        }
        out
    }

    /// The state directory `dir`.
    pub fn at(dir: impl Into<PathBuf>) -> Journal {
        Journal {
            dir: dir.into(),
            names: COALESCE,
        }
    }

    /// This journal's directory with the file names `names` (another state
    /// file beside `coalesce.json`: `vfio.json`).
    pub(crate) fn beside(&self, names: Names) -> Journal {
        Journal {
            dir: self.dir.clone(),
            names,
        }
    }

    /// The state directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The state file.
    pub fn path(&self) -> PathBuf {
        self.dir.join(self.names.file)
    }

    /// The records; none when there is no file.
    pub fn records(&self) -> Result<Vec<Record>, TuneError> {
        let Some(text) = self.read_text()? else {
            return Ok(Vec::new());
        };
        let path = self.path();
        let file: StateFile = serde_json::from_str(&text).map_err(|e| {
            journal_err(
                &path,
                format!("cannot parse it ({e}); it holds original values numio must put back: put them back by hand (nvme set-feature) and remove it"),
            )
        })?;
        check_schema(&path, file.schema_version)?;
        Ok(file.records)
    }

    /// The state file's text; `None` when there is no file.
    pub(crate) fn read_text(&self) -> Result<Option<String>, TuneError> {
        let path = self.path();
        let mut text = String::new();
        let opened = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32)
            .open(&path);
        match opened {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(journal_err(&path, format!("cannot open it: {e}"))),
            Ok(mut f) => f
                .read_to_string(&mut text)
                .map_err(|e| journal_err(&path, format!("cannot read it: {e}")))?,
        };
        Ok(Some(text))
    }

    /// Takes the exclusive lock (creating the private state directory);
    /// [`TuneError::Busy`] at once when another process holds it.
    pub fn lock(&self) -> Result<JournalLock, TuneError> {
        self.ensure_dir()?;
        let path = self.dir.join(self.names.lock);
        let mut file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32)
            .open(&path)
            .map_err(|e| journal_err(&path, format!("cannot open the lock file: {e}")))?;
        if let Err(e) =
            rustix::fs::flock(&file, rustix::fs::FlockOperation::NonBlockingLockExclusive)
        {
            if e == rustix::io::Errno::WOULDBLOCK {
                let mut pid = String::new();
                let _ = file.read_to_string(&mut pid);
                let holder = match pid.trim() {
                    "" => "pid unknown".to_string(),
                    p => format!("pid {p}"),
                };
                return Err(TuneError::Busy {
                    path,
                    holder,
                    what: self.names.what,
                });
            }
            return Err(journal_err(&path, format!("cannot lock it: {e}")));
        }
        let _ = file.set_len(0);
        let _ = write!(file, "{}", std::process::id());
        Ok(JournalLock { _file: file })
    }

    /// Records `record` unless the same controller's feature has a record
    /// already (the first one wins). Returns whether it was new.
    pub fn record_original(&self, _lock: &JournalLock, record: Record) -> Result<bool, TuneError> {
        let mut records = self.records()?;
        if records
            .iter()
            .any(|r| r.is_of(&record.address, &record.serial, record.feature))
        {
            return Ok(false);
        }
        records.push(record);
        self.write(&records)?;
        Ok(true)
    }

    /// Drops the record of controller `address` + `serial`'s `feature`.
    pub fn remove(
        &self,
        _lock: &JournalLock,
        address: &str,
        serial: &str,
        feature: u8,
    ) -> Result<(), TuneError> {
        let mut records = self.records()?;
        let before = records.len();
        records.retain(|r| !r.is_of(address, serial, feature));
        if records.len() != before {
            self.write(&records)?;
        }
        Ok(())
    }

    /// Replaces the file with `records` (removes it when empty): a
    /// temporary file written and fsynced, renamed over, the directory
    /// fsynced.
    fn write(&self, records: &[Record]) -> Result<(), TuneError> {
        if records.is_empty() {
            return self.write_text(None);
        }
        let text = serde_json::to_string_pretty(&StateFile {
            schema_version: SCHEMA_VERSION,
            records: records.to_vec(),
        })
        .map_err(|e| journal_err(&self.path(), e))?;
        self.write_text(Some(&text))
    }

    /// Replaces the file with `text`, or removes it (`None`).
    pub(crate) fn write_text(&self, text: Option<&str>) -> Result<(), TuneError> {
        let path = self.path();
        let Some(text) = text else {
            match std::fs::remove_file(&path) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(journal_err(&path, format!("cannot remove it: {e}"))),
            }
            return self.sync_dir();
        };
        let tmp = self.dir.join(self.names.tmp);
        // Under the lock no other numio writes here: a leftover is a crashed
        // writer's.
        let _ = std::fs::remove_file(&tmp);
        let mut file = sysapi::file::create_new_private(&tmp)
            .map_err(|e| journal_err(&tmp, format!("cannot create it: {e}")))?;
        // Readable by all (names, serials and values, all in sysfs anyway),
        // so a user's `numio coalesce show` warns about root's changes.
        file.set_permissions(std::fs::Permissions::from_mode(0o644))
            .and_then(|()| file.write_all(text.as_bytes()))
            .and_then(|()| file.write_all(b"\n"))
            .and_then(|()| file.sync_all())
            .map_err(|e| journal_err(&tmp, format!("cannot write it: {e}")))?;
        std::fs::rename(&tmp, &path).map_err(|e| {
            journal_err(
                &path,
                format!("cannot rename {} over it: {e}", tmp.display()),
            )
        })?;
        self.sync_dir()
    }

    fn sync_dir(&self) -> Result<(), TuneError> {
        File::open(&self.dir)
            .and_then(|d| d.sync_all())
            .map_err(|e| journal_err(&self.dir, format!("cannot fsync the directory: {e}")))
    }

    /// Creates the directory (mode 0755) when missing; refuses a symlink,
    /// one another user owns, or one others may write.
    fn ensure_dir(&self) -> Result<(), TuneError> {
        let dir = &self.dir;
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o755)
            .create(dir)
            .map_err(|e| journal_err(dir, format!("cannot create the state directory: {e}")))?;
        let meta = std::fs::symlink_metadata(dir)
            .map_err(|e| journal_err(dir, format!("cannot stat the state directory: {e}")))?;
        if !meta.file_type().is_dir() {
            return Err(journal_err(
                dir,
                "the state directory is a symlink or no directory; remove it",
            ));
        }
        let me = sysapi::file::effective_uid();
        if meta.uid() != me {
            return Err(journal_err(
                dir,
                format!(
                    "the state directory belongs to uid {}, not to this user ({me}); point NUMIO_STATE_DIR at a directory of your own",
                    meta.uid()
                ),
            ));
        }
        if meta.mode() & 0o022 != 0 {
            return Err(journal_err(
                dir,
                format!(
                    "the state directory is writable by others (mode {:o}); use a private one (NUMIO_STATE_DIR)",
                    meta.mode() & 0o7777
                ),
            ));
        }
        Ok(())
    }
}

/// Refuses a state file of another layout version.
pub(crate) fn check_schema(path: &Path, found: u32) -> Result<(), TuneError> {
    if found == SCHEMA_VERSION {
        return Ok(());
    }
    Err(journal_err(
        path,
        format!(
            "schema_version {found} is not {SCHEMA_VERSION}: written by another numio version; restore with that version"
        ),
    ))
}

/// Seconds since the Unix epoch (0 if the clock is before it).
pub fn now_unix_s() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn temp_journal(tag: &str) -> Journal {
        let dir = std::env::temp_dir().join(format!("tune-journal-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        Journal::at(dir)
    }

    fn record(serial: &str, original_raw: u32) -> Record {
        Record {
            name: "nvme0".into(),
            address: "0000:01:00.0".into(),
            serial: serial.into(),
            feature: 8,
            original_raw,
            pid: 1,
            command: "test".into(),
            since_unix_s: 0,
        }
    }

    #[test]
    fn the_first_record_wins_and_the_last_removal_removes_the_file() {
        let j = temp_journal("first");
        assert!(j.records().unwrap().is_empty(), "no file: no records");
        let lock = j.lock().unwrap();
        assert!(j.record_original(&lock, record("A", 0)).unwrap());
        assert!(!j.record_original(&lock, record("A", 0x0109)).unwrap());
        assert!(j.record_original(&lock, record("B", 7)).unwrap());
        let recs = j.records().unwrap();
        assert_eq!(recs.len(), 2);
        assert_eq!(
            recs[0].original_raw, 0,
            "a later change never overwrites the original"
        );
        j.remove(&lock, "0000:01:00.0", "A", 8).unwrap();
        assert_eq!(j.records().unwrap(), vec![record("B", 7)]);
        j.remove(&lock, "0000:01:00.0", "B", 8).unwrap();
        assert!(!j.path().exists(), "no records: no file");
        assert!(!j.dir.join(TMP_NAME).exists());
        let mode = std::fs::metadata(&j.dir).unwrap().mode() & 0o777;
        assert_eq!(mode & 0o722, 0o700, "{mode:o}: only its owner writes");
        let _ = std::fs::remove_dir_all(&j.dir);
    }

    #[test]
    fn a_second_locker_is_told_who_holds_the_lock() {
        let j = temp_journal("busy");
        let _held = j.lock().unwrap();
        // flock locks belong to the open file description: a second open in
        // this process conflicts like another process would.
        let e = j.lock().unwrap_err().to_string();
        assert!(e.contains(&format!("pid {}", std::process::id())), "{e}");
        drop(_held);
        j.lock().expect("free again");
        let _ = std::fs::remove_dir_all(&j.dir);
    }

    #[test]
    fn the_file_is_readable_by_all_and_a_shared_directory_refused() {
        let j = temp_journal("modes");
        let lock = j.lock().unwrap();
        j.record_original(&lock, record("A", 0)).unwrap();
        let mode = std::fs::metadata(j.path()).unwrap().mode() & 0o777;
        assert_eq!(mode, 0o644);
        drop(lock);
        std::fs::set_permissions(&j.dir, std::fs::Permissions::from_mode(0o777)).unwrap();
        let e = j.lock().unwrap_err().to_string();
        assert!(e.contains("writable by others"), "{e}");
        let _ = std::fs::remove_dir_all(&j.dir);
    }

    #[test]
    fn a_damaged_file_is_an_error_naming_it() {
        let j = temp_journal("damaged");
        j.ensure_dir().unwrap();
        std::fs::write(j.path(), "{not json").unwrap();
        let e = j.records().unwrap_err().to_string();
        assert!(
            e.contains("coalesce.json") && e.contains("cannot parse"),
            "{e}"
        );
        let _ = std::fs::remove_dir_all(&j.dir);
    }

    #[test]
    fn the_default_location_follows_the_override() {
        // Only the override is checked: the process environment is shared
        // by the tests, so no test sets or unsets the others.
        if let Some(dir) = std::env::var_os("NUMIO_STATE_DIR") {
            assert_eq!(Journal::default_location().unwrap(), Journal::at(dir));
        } else if sysapi::file::effective_uid() == 0 {
            assert_eq!(
                Journal::default_location().unwrap(),
                Journal::at("/run/numio")
            );
        }
    }
}
