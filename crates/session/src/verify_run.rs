//! `--verify` and `--verify-only` around a bench run: the verify state is
//! loaded before (each target's generation to write and to expect; for
//! `--verify-only`, the saved write run replayed as reads) and saved after
//! a run that wrote. The rules are [`crate::verify_state`]'s.

use std::path::{Path, PathBuf};

use engine::result::RunResult;
use planner::Placement;

use crate::error::VerifyStateError;
use crate::verify_state;

/// The state file of a verifying run, to update once it ran.
#[derive(Debug)]
pub struct VerifyRun {
    path: PathBuf,
}

/// Sets `opts`' verify keys from the state in `state_path` (default:
/// [`verify_state::default_path`]) and, for `verify_only`, turns
/// `placement` into the replay; `None` when neither is asked.
pub fn prepare(
    (verify, verify_only): (bool, bool),
    state_path: Option<&Path>,
    placement: Placement,
    opts: &mut engine::RunOptions,
) -> Result<(Placement, Option<VerifyRun>), VerifyStateError> {
    if !verify && !verify_only {
        return Ok((placement, None));
    }
    let path = match state_path {
        Some(p) => p.to_path_buf(),
        None => verify_state::default_path()?,
    };
    let state = verify_state::load(&path)?;
    let placement = if verify_only {
        verify_state::replay(&placement, &state, &path)?
    } else {
        placement
    };
    opts.verify_keys = verify_state::keys(&placement, &state, verify_only);
    Ok((placement, Some(VerifyRun { path })))
}

/// Records what the runs wrote and saves the state when they wrote
/// (merged into the file as it is by then: runs elsewhere may have saved
/// meanwhile). A state that cannot be saved is a warning: the run and its
/// report stand, only a later `--verify-only` lacks it. True when reads
/// found the state stale (blocks newer than it), said (to `say`) with the
/// fix.
pub fn finish(run: Option<VerifyRun>, results: &[RunResult], say: &mut dyn FnMut(String)) -> bool {
    let Some(VerifyRun { path }) = run else {
        return false;
    };
    let stale = stale_warnings(&path, results, say);
    match verify_state::record_and_save(&path, results) {
        Ok(false) => {}
        Ok(true) => say(format!(
            "verify state saved to {} (check it later with --verify-only)",
            path.display()
        )),
        Err(e) => say(format!(
            "warning: cannot save the verify state to {}: {e}; a later --verify-only needs it: name a writable file with --verify-state FILE",
            path.display()
        )),
    }
    stale
}

/// Says, for each target whose reads found blocks newer than the state
/// expected, that the state file is stale and what to do; whether any did.
fn stale_warnings(path: &Path, results: &[RunResult], say: &mut dyn FnMut(String)) -> bool {
    let mut any = false;
    for t in results.iter().flat_map(|r| &r.targets) {
        let Some(v) = t.verify.as_ref().filter(|v| v.stale_blocks > 0) else {
            continue;
        };
        any = true;
        let expected = v.expected.map_or(0, |e| e.generation);
        say(format!(
            "the verify state {} is stale for {}: {} blocks hold generation {} (or another run's), newer than the generation {expected} it saved, so they were written after it (a state restored from a backup, or a later write saved to another state file); this is no lost write, and those blocks were not checked: name the state of the last write with --verify-state FILE, or write again with --verify",
            path.display(),
            t.path,
            v.stale_blocks,
            v.stale_generation.map_or("?".to_string(), |g| g.to_string()),
        ));
    }
    any
}
