//! The verify state: what each write run with `--verify` left on a target
//! (its generation and seed, its workload, the writes of each job), saved
//! in a JSON file so a later run, after a reboot or a failover, can check
//! it: reads expect that generation (an older one found is a lost write),
//! and `--verify-only` replays the write run's offsets as reads, as fio's
//! `verify_state_save` / `verify_only` do. The replay's read `i` of a job
//! reads where its write `i` went, so it knows the sequence each block
//! must hold without a table per block: at least `i` less the run's
//! reorder window (one number per target), which at the last write to a
//! block is that write's own (an older one: the overwrite was lost).
//!
//! Targets are keyed by this host's name and their canonical path
//! (`db1:/dev/nvme0n1`), an NVMe generic device (`/dev/ngXnY`) by its
//! block device (`/dev/nvmeXnY`): both reach the same blocks. The host
//! keeps apart the same device path on machines that share one home (and
//! so one state file), as a fleet often does; a state saved before keys
//! had the host (the bare path) is still read, and replaced by the next
//! write. Saving merges into the file under an exclusive lock, so runs on
//! several hosts or devices at once each keep their own record. Where the
//! file lives and how it is opened (no shared temporary directory, links
//! never followed, reads bounded): [`crate::verify_state_file`].

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use engine::result::verify::{TargetVerifyState, VerifyState, VERIFY_STATE_SCHEMA_VERSION};
use engine::result::{RunResult, VerifyStamp};
use engine::TargetVerify;
use planner::{Placement, RwMode};

use crate::error::VerifyStateError as E;
use crate::verify_state_file as file;

/// The state file when none is named: `$XDG_STATE_HOME/numio/verify-state.json`,
/// else `$HOME/.local/state/numio/verify-state.json` (the directory made
/// 0700 and checked); with neither set, an error naming `--verify-state`
/// (see [`crate::verify_state_file`]).
pub fn default_path() -> Result<PathBuf, E> {
    file::default_path_from(std::env::var_os("XDG_STATE_HOME"), std::env::var_os("HOME"))
}

/// The state in `path`; empty when there is no file yet.
pub fn load(path: &Path) -> Result<VerifyState, E> {
    let Some(text) = file::read(path)? else {
        return Ok(VerifyState {
            schema_version: VERIFY_STATE_SCHEMA_VERSION,
            ..VerifyState::default()
        });
    };
    let state: VerifyState = serde_json::from_str(&text).map_err(|source| E::NotAState {
        path: path.to_path_buf(),
        source,
    })?;
    if state.schema_version != VERIFY_STATE_SCHEMA_VERSION {
        return Err(E::Version {
            path: path.to_path_buf(),
            found: state.schema_version,
            expected: VERIFY_STATE_SCHEMA_VERSION,
        });
    }
    Ok(state)
}

/// Records what `results` wrote into the state file at `path`: under an
/// exclusive lock on `PATH.lock`, the file as it is now (another run may
/// have saved since this one loaded it) gets these targets' records and
/// is written back. False when nothing was written with `--verify`.
pub fn record_and_save(path: &Path, results: &[RunResult]) -> Result<bool, E> {
    make_parent(path).map_err(|source| E::MakeParent {
        dir: path.parent().unwrap_or(Path::new("")).to_path_buf(),
        source,
    })?;
    let lock_path = path.with_extension("lock");
    let lock = file::open_lock(&lock_path)?;
    // SAFETY: flock(2) on a descriptor this function owns; the lock goes
    // with the descriptor when `lock` drops (or the process dies).
    if unsafe { libc::flock(std::os::fd::AsRawFd::as_raw_fd(&lock), libc::LOCK_EX) } != 0 {
        let e = std::io::Error::last_os_error();
        // A filesystem without flock (some network ones): the file is still
        // read again just before it is written, which narrows the race.
        if !matches!(
            e.raw_os_error(),
            Some(libc::ENOLCK | libc::EOPNOTSUPP | libc::EINVAL)
        ) {
            return Err(E::Lock {
                path: lock_path,
                source: e,
            });
        }
    }
    let mut state = load(path)?;
    let before = state.clone();
    for r in results {
        record(&mut state, r, r.environment.started_unix_s);
    }
    if state == before {
        return Ok(false);
    }
    save(path, &state).map_err(|source| E::Save {
        path: path.to_path_buf(),
        source,
    })?;
    drop(lock);
    Ok(true)
}

/// Writes `state` to `path` (a new file, made with `O_EXCL | O_NOFOLLOW`,
/// renamed into place; its directory made 0700 when missing).
pub fn save(path: &Path, state: &VerifyState) -> std::io::Result<()> {
    make_parent(path)?;
    let text = serde_json::to_string_pretty(state).map_err(std::io::Error::other)?;
    file::write_replacing(path, &(text + "\n"))
}

/// Makes `path`'s directory (0700) when missing.
fn make_parent(path: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    match path.parent().filter(|d| !d.as_os_str().is_empty()) {
        Some(dir) => std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir),
        None => Ok(()),
    }
}

/// The key of target `path` in the state: this host's name, `:`, and
/// [`path_key`].
pub fn target_key(path: &str) -> String {
    let host = topology::host::hostname(Path::new("/"));
    format!("{host}:{}", path_key(path))
}

/// The saved state of target `path`: under [`target_key`], else under
/// the bare path of a state saved before keys had the host.
fn saved<'a>(state: &'a VerifyState, path: &str) -> Option<&'a TargetVerifyState> {
    state
        .targets
        .get(&target_key(path))
        .or_else(|| state.targets.get(&path_key(path)))
}

/// Target `path`'s canonical path, a generic device's block device.
pub fn path_key(path: &str) -> String {
    let canonical = std::fs::canonicalize(path)
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_else(|_| path.to_string());
    match canonical.strip_prefix("/dev/ng") {
        Some(rest)
            if rest
                .split_once('n')
                .is_some_and(|(c, n)| is_num(c) && is_num(n)) =>
        {
            format!("/dev/nvme{rest}")
        }
        _ => canonical,
    }
}

fn is_num(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())
}

/// A seed no earlier run used (the clock and the process id, mixed).
fn fresh_seed() -> u64 {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    engine::gen::mix64(now ^ u64::from(std::process::id()).rotate_left(40))
}

/// What each target of `placement` writes and expects, given `state`: a
/// write takes the next generation and a fresh seed. The reads of a
/// `replay` (`--verify-only`) expect the saved generation, since they read
/// exactly the blocks the saved run wrote; other reads take any generation
/// (a later write run may have rewritten only part of the target, so an
/// older generation elsewhere is no lost write) and still catch corrupt,
/// misdirected and zeroed blocks.
pub fn keys(
    placement: &Placement,
    state: &VerifyState,
    replay: bool,
) -> BTreeMap<String, TargetVerify> {
    let mut keys = BTreeMap::new();
    for t in &placement.targets {
        let saved = saved(state, &t.path);
        let window = saved.and_then(|s| s.sequence_window).filter(|_| replay);
        let saved = saved.map(|s| s.stamp);
        let write = VerifyStamp {
            generation: saved.map_or(1, |s| s.generation + 1),
            seed: fresh_seed(),
        };
        keys.insert(
            t.path.clone(),
            TargetVerify {
                write,
                expect: if replay { saved } else { None },
                also: None,
                replay_window: window,
            },
        );
    }
    keys
}

/// Records in `state` what the targets of `result` that wrote with
/// `--verify` left there.
pub fn record(state: &mut VerifyState, result: &RunResult, saved_unix_s: u64) {
    for t in &result.targets {
        let Some(v) = t.verify.as_ref() else {
            continue;
        };
        let Some(stamp) = v.written else {
            continue;
        };
        // A record under the bare path (an older numio's) is replaced.
        state.targets.remove(&path_key(&t.path));
        state.targets.insert(
            target_key(&t.path),
            TargetVerifyState {
                stamp,
                workload: t.workload.clone(),
                writes_per_job: t.workers.iter().map(|w| w.write_ops).collect(),
                sequence_window: v.sequence_window,
                saved_unix_s,
            },
        );
    }
}

/// The least time a time-based replay may take (a day).
const REPLAY_RUNTIME_MIN_NS: u64 = 86_400 * 1_000_000_000;

/// `--verify-only`: `placement` turned into reads of what the saved write
/// run of each target wrote, in the order it wrote it (its workload with
/// reads for writes, each job stopping after as many I/Os as the fewest
/// any of its jobs completed), expecting its generation.
pub fn replay(placement: &Placement, state: &VerifyState, file: &Path) -> Result<Placement, E> {
    let mut p = placement.clone();
    for t in &mut p.targets {
        let Some(saved) = saved(state, &t.path) else {
            return Err(E::NotSaved {
                target: t.path.clone(),
                file: file.to_path_buf(),
            });
        };
        let mut w = saved.workload.clone();
        w.rw = match w.rw {
            RwMode::Write => RwMode::Read,
            RwMode::RandWrite => RwMode::RandRead,
            rw => {
                return Err(E::NotAWriteRun {
                    target: t.path.clone(),
                    rw,
                })
            }
        };
        if t.jobs.len() != saved.writes_per_job.len() {
            return Err(E::JobCount {
                target: t.path.clone(),
                saved_jobs: saved.writes_per_job.len(),
                jobs: t.jobs.len(),
            });
        }
        w.number_ios = Some(
            saved
                .writes_per_job
                .iter()
                .copied()
                .min()
                .unwrap_or(0)
                .max(1),
        );
        // A time-based write run went over its region again and again:
        // the replay does too, bounded by the I/O count (the time only
        // bounds a replay that cannot finish: a day, or 100 times the
        // write run's time, the longer).
        w.runtime_ns = w.time_based.then(|| {
            let ran = w.runtime_ns.unwrap_or(0).saturating_add(w.ramp_time_ns);
            ran.saturating_mul(100).max(REPLAY_RUNTIME_MIN_NS)
        });
        w.ramp_time_ns = 0;
        t.workload = w;
    }
    Ok(p)
}

#[cfg(test)]
mod tests {
    use super::*;
    use engine::result::verify::VerifyResult;

    /// The fixture run (one target) as if it wrote `path` with `--verify`,
    /// stamp generation `generation`.
    fn wrote(path: &str, generation: u64) -> RunResult {
        let text = include_str!("../../../tests/fixtures/results/engine_run.json");
        let mut r: RunResult = serde_json::from_str(text).unwrap();
        r.targets.truncate(1);
        r.targets[0].path = path.to_string();
        r.targets[0].verify = Some(VerifyResult {
            written: Some(VerifyStamp {
                generation,
                seed: 7,
            }),
            expected: None,
            checked_blocks: 0,
            mismatched_blocks: BTreeMap::new(),
            ranges: Vec::new(),
            ranges_dropped: 0,
            sequence_window: Some(3),
            stale_blocks: 0,
            stale_generation: None,
        });
        r
    }

    fn temp_state(tag: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("verify-state-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        dir.join("state.json")
    }

    /// Two runs that loaded the state before either saved (two hosts of a
    /// fleet sharing one home, or two devices benched at once): both
    /// records survive, keyed by host and path.
    #[test]
    fn saves_merge_into_the_file_as_it_is_then() {
        let path = temp_state("merge");
        assert!(record_and_save(&path, &[wrote("/x/a", 1)]).unwrap());
        assert!(record_and_save(&path, &[wrote("/x/b", 4)]).unwrap());
        let s = load(&path).unwrap();
        assert_eq!(s.targets.len(), 2, "{:?}", s.targets.keys());
        assert_eq!(s.targets[&target_key("/x/a")].stamp.generation, 1);
        assert_eq!(s.targets[&target_key("/x/b")].stamp.generation, 4);
        assert!(target_key("/x/a").ends_with(":/x/a"));
        assert!(
            !record_and_save(&path, &[]).unwrap(),
            "nothing written: no save"
        );
        std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
    }

    /// A replay that cannot run says which target, and the error carries
    /// the target, the state file and what does not match.
    #[test]
    fn a_replay_that_cannot_run_names_the_target() {
        use crate::testutil::{counted, placement};
        let file = Path::new("/s/state.json");
        let mut state = VerifyState::default();
        let p = |path: &str, jobs| placement(&[path.to_string()], &counted(1), jobs);
        match replay(&p("/x/none", 1), &state, file) {
            Err(E::NotSaved { target, file: f }) => {
                assert_eq!((target.as_str(), f.as_path()), ("/x/none", file));
            }
            other => panic!("{other:?}"),
        }
        let mut w = wrote("/x/a", 1);
        w.targets[0].workload.rw = RwMode::RandWrite;
        record(&mut state, &w, 1);
        let saved_jobs = w.targets[0].workers.len();
        let e = replay(&p("/x/a", saved_jobs + 1), &state, file).unwrap_err();
        assert!(
            matches!(&e, E::JobCount { target, saved_jobs: s, jobs }
                if target == "/x/a" && *s == saved_jobs && *jobs == saved_jobs + 1),
            "{e:?}"
        );
        assert_eq!(
            e.to_string(),
            format!("--verify-only: the saved run on /x/a had {saved_jobs} jobs; run with --jobs {saved_jobs}")
        );
        assert!(replay(&p("/x/a", saved_jobs), &state, file).is_ok());
        w.targets[0].workload.rw = RwMode::RandRw;
        record(&mut state, &w, 1);
        let e = replay(&p("/x/a", saved_jobs), &state, file).unwrap_err();
        assert!(
            matches!(
                e,
                E::NotAWriteRun {
                    rw: RwMode::RandRw,
                    ..
                }
            ),
            "{e:?}"
        );
        assert!(
            e.to_string()
                .contains("was --rw=randrw, which mixes reads in"),
            "{e}"
        );
    }

    /// A state saved before keys had the host is read, and its record is
    /// replaced (not kept beside) by the next write.
    #[test]
    fn a_bare_path_record_is_read_then_replaced() {
        let path = temp_state("legacy");
        let mut old = VerifyState {
            schema_version: VERIFY_STATE_SCHEMA_VERSION,
            ..VerifyState::default()
        };
        record(&mut old, &wrote("/x/a", 2), 1);
        let rec = old.targets.remove(&target_key("/x/a")).unwrap();
        old.targets.insert(path_key("/x/a"), rec);
        save(&path, &old).unwrap();
        let s = load(&path).unwrap();
        assert_eq!(saved(&s, "/x/a").unwrap().stamp.generation, 2);
        record_and_save(&path, &[wrote("/x/a", 3)]).unwrap();
        let s = load(&path).unwrap();
        assert_eq!(s.targets.len(), 1, "{:?}", s.targets.keys());
        assert_eq!(saved(&s, "/x/a").unwrap().stamp.generation, 3);
        std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
    }
}
