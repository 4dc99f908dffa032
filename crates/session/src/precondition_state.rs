//! What numio remembers of preconditioning: a small record per drive under
//! `$XDG_STATE_HOME/numio/precondition/` (or `$HOME/.local/state/…`),
//! keyed by a stable identity of the drive ([`identity`]: an NVMe
//! namespace by its subsystem NQN and namespace id, anything else by its
//! path and size). `numio precondition` writes it; every later local run
//! ([`after_run`], called by [`crate::run_once`]) adds one note to its
//! result's environment notes (not preconditioned; preconditioned at T;
//! written since by numio at T2) and, when it wrote to a recorded drive,
//! records when.
//!
//! Nothing here is created by a run that only reads: the directory is made
//! by the first record saved, and a drive without a record gets a note
//! only when it is a block device (a file or a fabrics namespace says
//! nothing).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The largest record read (a record is a few hundred bytes).
const MAX_RECORD_BYTES: u64 = 64 << 10;

/// One drive's preconditioning, as last recorded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Record {
    /// The identity it is kept under ([`identity`]).
    pub identity: String,
    /// The path it was preconditioned through.
    pub path: String,
    /// Its capacity then.
    pub size_bytes: u64,
    /// When the preconditioning ended, seconds since the Unix epoch.
    pub preconditioned_unix_s: u64,
    /// The fill, in capacities.
    pub fill_multiple: f64,
    /// Whether its rounds reached steady state.
    pub steady: bool,
    /// The last time a numio run wrote to it since, when one did.
    #[serde(default)]
    pub written_since_unix_s: Option<u64>,
}

/// Why a record could not be saved.
#[derive(Debug, thiserror::Error)]
pub enum StateError {
    /// Neither `$XDG_STATE_HOME` nor `$HOME` is set.
    #[error("no place for the preconditioning state: neither XDG_STATE_HOME nor HOME is set; set one to a directory of yours")]
    NoStateDir,
    /// The directory or file could not be written.
    #[error("writing the preconditioning state {}: {source}; make it writable by you (or set XDG_STATE_HOME)", path.display())]
    Write {
        /// The directory or file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
}

/// `$XDG_STATE_HOME/numio/precondition`, else
/// `$HOME/.local/state/numio/precondition` (relative values count as
/// unset); `None` without either.
pub fn default_dir() -> Option<PathBuf> {
    let absolute = |v: Option<std::ffi::OsString>| v.map(PathBuf::from).filter(|p| p.is_absolute());
    absolute(std::env::var_os("XDG_STATE_HOME"))
        .or_else(|| absolute(std::env::var_os("HOME")).map(|h| h.join(".local/state")))
        .map(|base| base.join("numio/precondition"))
}

/// The stable identity of the drive at `path` of `size_bytes`: an NVMe
/// namespace (its block device, or a path device) as
/// `nvme:SUBSYSNQN:nsNSID`, which survives renumbering across boots;
/// anything else as `path:CANONICAL_PATH:SIZE`.
pub fn identity(path: &str, size_bytes: u64) -> String {
    let real = std::fs::canonicalize(path)
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_else(|_| path.to_string());
    nvme_identity(&real).unwrap_or_else(|| format!("path:{real}:{size_bytes}"))
}

fn nvme_identity(real: &str) -> Option<String> {
    let root = Path::new("/");
    let name = real.strip_prefix("/dev/")?;
    let ns = topology::device::nvme_namespace(root, name).ok()??;
    let nsid = ns.nsid?;
    let ctrl = ns.controllers.first()?;
    let id = topology::device::controller_identity(root, &ctrl.name).ok()??;
    (!id.subsysnqn.is_empty()).then(|| format!("nvme:{}:ns{nsid}", id.subsysnqn))
}

/// The file of `identity` under `dir` (the identity with every character
/// but letters, digits, `.`, `-` and `_` made `_`).
pub fn record_path(dir: &Path, identity: &str) -> PathBuf {
    let name: String = identity
        .chars()
        .map(|c| match c {
            'a'..='z' | 'A'..='Z' | '0'..='9' | '.' | '-' | '_' => c,
            _ => '_',
        })
        .collect();
    dir.join(format!("{name}.json"))
}

/// The record of `identity` under `dir`, when there is a readable one for
/// exactly that identity.
pub fn load(dir: &Path, identity: &str) -> Option<Record> {
    let path = record_path(dir, identity);
    let meta = std::fs::symlink_metadata(&path).ok()?;
    if !meta.is_file() || meta.len() > MAX_RECORD_BYTES {
        return None;
    }
    let rec: Record = serde_json::from_str(&std::fs::read_to_string(path).ok()?).ok()?;
    (rec.identity == identity).then_some(rec)
}

/// Saves `rec` under `dir` (made 0700 if missing), replacing the drive's
/// earlier record through a rename.
pub fn save(dir: &Path, rec: &Record) -> Result<(), StateError> {
    use std::os::unix::fs::DirBuilderExt;
    let write = |path: &Path| {
        let path = path.to_path_buf();
        move |source| StateError::Write { path, source }
    };
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(write(dir))?;
    let path = record_path(dir, &rec.identity);
    let tmp = path.with_extension(format!("tmp.{}", std::process::id()));
    let text = serde_json::to_string_pretty(rec).expect("a record serializes");
    std::fs::write(&tmp, text).map_err(write(&tmp))?;
    std::fs::rename(&tmp, &path).map_err(write(&path))
}

/// The one note a run of `path` (`block_device`: whether it is one) gets
/// from its record.
pub fn note(path: &str, block_device: bool, rec: Option<&Record>) -> Option<String> {
    let Some(r) = rec else {
        return block_device.then(|| {
            format!("{path} is not preconditioned (no numio precondition recorded for it; results of a fresh or idle drive can be far from its steady state)")
        });
    };
    let state = if r.steady {
        "to steady state"
    } else {
        "without reaching steady state"
    };
    let when = utc(r.preconditioned_unix_s);
    Some(match r.written_since_unix_s {
        None => format!("{path}: preconditioned at {when} ({state}), not written by numio since"),
        Some(t) => format!(
            "{path}: preconditioned at {when} ({state}), written since by numio at {}",
            utc(t)
        ),
    })
}

/// One target of a run, as [`after_run`] needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunTarget {
    /// Its path.
    pub path: String,
    /// Whether it is a block device.
    pub block_device: bool,
    /// Its size.
    pub size_bytes: u64,
    /// Whether the run wrote to it.
    pub wrote: bool,
}

/// After a local run: each target's note into `result`'s environment
/// notes, and, for a recorded drive the run wrote to, the time of that
/// write saved (`now_unix_s`). A record that cannot be saved costs a note,
/// never the run.
pub fn after_run(dir: Option<&Path>, result: &mut results::RunResult, now_unix_s: u64) {
    let Some(dir) = dir else { return };
    let targets: Vec<RunTarget> = result
        .environment
        .targets
        .iter()
        .filter(|e| e.kind == "block_device" || e.kind == "file")
        .map(|e| RunTarget {
            path: e.path.clone(),
            block_device: e.kind == "block_device",
            size_bytes: e.size_bytes,
            wrote: result
                .targets
                .iter()
                .any(|t| t.path == e.path && t.write.ops > 0),
        })
        .collect();
    let notes = notes_and_writes(dir, &targets, now_unix_s);
    result.environment.notes.extend(notes);
}

/// [`after_run`] over plain values: the notes, with each write recorded.
pub fn notes_and_writes(dir: &Path, targets: &[RunTarget], now_unix_s: u64) -> Vec<String> {
    let mut notes = Vec::new();
    for t in targets {
        let id = identity(&t.path, t.size_bytes);
        let rec = load(dir, &id);
        notes.extend(note(&t.path, t.block_device, rec.as_ref()));
        if let (Some(mut rec), true) = (rec, t.wrote) {
            rec.written_since_unix_s = Some(now_unix_s);
            if let Err(e) = save(dir, &rec) {
                notes.push(e.to_string());
            }
        }
    }
    notes
}

/// `2025-03-01 14:05:09 UTC` of `unix_s` (proleptic Gregorian, as `date -u`).
pub fn utc(unix_s: u64) -> String {
    let days = (unix_s / 86_400) as i64;
    let secs = unix_s % 86_400;
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02} UTC",
        secs / 3600,
        secs / 60 % 60,
        secs % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_dir(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("numio-pstate-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        d
    }

    fn record(identity: &str) -> Record {
        Record {
            identity: identity.into(),
            path: "/dev/loop3".into(),
            size_bytes: 1 << 30,
            preconditioned_unix_s: 1_700_000_000,
            fill_multiple: 2.0,
            steady: true,
            written_since_unix_s: None,
        }
    }

    #[test]
    fn utc_matches_date_u() {
        assert_eq!(utc(0), "1970-01-01 00:00:00 UTC");
        assert_eq!(utc(1_700_000_000), "2023-11-14 22:13:20 UTC");
        assert_eq!(utc(951_782_400), "2000-02-29 00:00:00 UTC");
    }

    #[test]
    fn records_round_trip_under_their_identity_only() {
        let dir = temp_dir("rt");
        let id = "nvme:nqn.2019-08.org.qemu:serial/1:ns1";
        save(&dir, &record(id)).unwrap();
        assert_eq!(load(&dir, id), Some(record(id)));
        // Another identity that sanitizes to the same name is not it.
        assert_eq!(load(&dir, "nvme:nqn.2019-08.org.qemu:serial_1:ns1"), None);
        assert!(record_path(&dir, id).ends_with("nvme_nqn.2019-08.org.qemu_serial_1_ns1.json"));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn notes_say_not_preconditioned_preconditioned_and_written_since() {
        let n = note("/dev/loop3", true, None).unwrap();
        assert!(n.starts_with("/dev/loop3 is not preconditioned"), "{n}");
        assert_eq!(note("/tmp/f", false, None), None);
        let mut r = record("x");
        assert_eq!(
            note("/dev/loop3", true, Some(&r)).unwrap(),
            "/dev/loop3: preconditioned at 2023-11-14 22:13:20 UTC (to steady state), not written by numio since"
        );
        r.written_since_unix_s = Some(1_700_000_060);
        r.steady = false;
        assert_eq!(
            note("/dev/loop3", true, Some(&r)).unwrap(),
            "/dev/loop3: preconditioned at 2023-11-14 22:13:20 UTC (without reaching steady state), written since by numio at 2023-11-14 22:14:20 UTC"
        );
    }

    #[test]
    fn a_write_run_marks_a_recorded_file_written_and_a_read_run_does_not() {
        let dir = temp_dir("after");
        let file = dir.with_extension("target");
        std::fs::write(&file, vec![0u8; 4096]).unwrap();
        let path = file.to_string_lossy().into_owned();
        let id = identity(&path, 4096);
        assert!(id.starts_with("path:/") && id.ends_with(":4096"), "{id}");
        save(&dir, &record(&id)).unwrap();
        let mut t = RunTarget {
            path: path.clone(),
            block_device: false,
            size_bytes: 4096,
            wrote: false,
        };
        let notes = notes_and_writes(&dir, &[t.clone()], 1_700_000_100);
        assert_eq!(load(&dir, &id).unwrap().written_since_unix_s, None);
        assert!(notes[0].contains("not written by numio since"), "{notes:?}");
        t.wrote = true;
        notes_and_writes(&dir, &[t.clone()], 1_700_000_100);
        assert_eq!(
            load(&dir, &id).unwrap().written_since_unix_s,
            Some(1_700_000_100)
        );
        let notes = notes_and_writes(&dir, &[t], 1_700_000_200);
        assert!(
            notes[0].contains("written since by numio at 2023-11-14 22:15:00 UTC"),
            "{notes:?}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
        std::fs::remove_file(&file).unwrap();
    }
}
