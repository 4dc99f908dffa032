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
//! Targets are keyed by their canonical path, an NVMe generic device
//! (`/dev/ngXnY`) by its block device (`/dev/nvmeXnY`): both reach the
//! same blocks.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use engine::result::verify::{TargetVerifyState, VerifyState, VERIFY_STATE_SCHEMA_VERSION};
use engine::result::{RunResult, VerifyStamp};
use engine::TargetVerify;
use planner::{Placement, RwMode};

/// The state file when none is named: `$XDG_STATE_HOME/numio/verify-state.json`,
/// else `$HOME/.local/state/numio/verify-state.json`, else in `$TMPDIR`.
pub fn default_path() -> PathBuf {
    let base = std::env::var_os("XDG_STATE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local/state")))
        .unwrap_or_else(std::env::temp_dir);
    base.join("numio/verify-state.json")
}

/// The state in `path`; empty when there is no file yet.
pub fn load(path: &Path) -> Result<VerifyState, String> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Ok(VerifyState {
                schema_version: VERIFY_STATE_SCHEMA_VERSION,
                ..VerifyState::default()
            })
        }
        Err(e) => {
            return Err(format!(
                "cannot read the verify state {}: {e}",
                path.display()
            ))
        }
    };
    let state: VerifyState = serde_json::from_str(&text).map_err(|e| {
        format!(
            "{} is not a numio verify state ({e}); name another with --verify-state or remove it",
            path.display()
        )
    })?;
    if state.schema_version != VERIFY_STATE_SCHEMA_VERSION {
        return Err(format!(
            "{} has verify state version {}; this numio reads version {VERIFY_STATE_SCHEMA_VERSION}",
            path.display(),
            state.schema_version
        ));
    }
    Ok(state)
}

/// Writes `state` to `path` (a new file renamed into place; its directory
/// made when missing).
pub fn save(path: &Path, state: &VerifyState) -> std::io::Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    let tmp = path.with_extension(format!("json.{}.tmp", std::process::id()));
    let text = serde_json::to_string_pretty(state).map_err(std::io::Error::other)?;
    std::fs::write(&tmp, text + "\n")?;
    std::fs::rename(&tmp, path)
}

/// The key of target `path` in the state: its canonical path, a generic
/// device's block device.
pub fn target_key(path: &str) -> String {
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
        let saved = state.targets.get(&target_key(&t.path));
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
pub fn replay(
    placement: &Placement,
    state: &VerifyState,
    file: &Path,
) -> Result<Placement, String> {
    let mut p = placement.clone();
    for t in &mut p.targets {
        let Some(saved) = state.targets.get(&target_key(&t.path)) else {
            return Err(format!(
                "--verify-only: {} has no saved verify state in {}; write it with --verify first (or name the state with --verify-state)",
                t.path,
                file.display()
            ));
        };
        let mut w = saved.workload.clone();
        w.rw = match w.rw {
            RwMode::Write => RwMode::Read,
            RwMode::RandWrite => RwMode::RandRead,
            other => {
                return Err(format!(
                    "--verify-only: the saved run on {} was --rw={}, which mixes reads in; only a write run is replayed",
                    t.path,
                    other.fio_name()
                ))
            }
        };
        if t.jobs.len() != saved.writes_per_job.len() {
            return Err(format!(
                "--verify-only: the saved run on {} had {} jobs; run with --jobs {}",
                t.path,
                saved.writes_per_job.len(),
                saved.writes_per_job.len()
            ));
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
