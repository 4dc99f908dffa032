//! `--verify` and `--verify-only` around a bench run: the verify state is
//! loaded before (each target's generation to write and to expect; for
//! `--verify-only`, the saved write run replayed as reads) and saved after
//! a run that wrote. The rules live in `session::verify_state`.

use std::path::PathBuf;

use planner::Placement;
use session::verify_state;

use crate::cmd::engine_args::EngineArgs;

/// The state file of a verifying run, to update once it ran.
pub struct VerifyRun {
    path: PathBuf,
}

/// Sets `opts`' verify keys from the state (and for `--verify-only` turns
/// `placement` into the replay); `None` without verifying.
pub fn prepare(
    args: &EngineArgs,
    placement: Placement,
    opts: &mut engine::RunOptions,
) -> anyhow::Result<(Placement, Option<VerifyRun>)> {
    if !args.verify && !args.verify_only {
        return Ok((placement, None));
    }
    let path = match &args.verify_state {
        Some(p) => p.clone(),
        None => verify_state::default_path()?,
    };
    let state = verify_state::load(&path)?;
    let placement = if args.verify_only {
        verify_state::replay(&placement, &state, &path)?
    } else {
        placement
    };
    opts.verify_keys = verify_state::keys(&placement, &state, args.verify_only);
    Ok((placement, Some(VerifyRun { path })))
}

/// Records what the runs wrote and saves the state when they wrote
/// (merged into the file as it is by then: runs elsewhere may have saved
/// meanwhile). A state that cannot be saved is a warning: the run and its
/// report stand, only a later `--verify-only` lacks it. True when reads
/// found the state stale (blocks newer than it), said here with the fix.
pub fn finish(run: Option<VerifyRun>, results: &[engine::RunResult]) -> bool {
    let Some(VerifyRun { path }) = run else {
        return false;
    };
    let stale = stale_warnings(&path, results);
    match verify_state::record_and_save(&path, results) {
        Ok(false) => {}
        Ok(true) => eprintln!(
            "numio: verify state saved to {} (check it later with --verify-only)",
            path.display()
        ),
        Err(e) => eprintln!(
            "numio: warning: cannot save the verify state to {}: {e}; a later --verify-only needs it: name a writable file with --verify-state FILE",
            path.display()
        ),
    }
    stale
}

/// Says, for each target whose reads found blocks newer than the state
/// expected, that the state file is stale and what to do; whether any did.
fn stale_warnings(path: &std::path::Path, results: &[engine::RunResult]) -> bool {
    let mut any = false;
    for t in results.iter().flat_map(|r| &r.targets) {
        let Some(v) = t.verify.as_ref().filter(|v| v.stale_blocks > 0) else {
            continue;
        };
        any = true;
        let expected = v.expected.map_or(0, |e| e.generation);
        eprintln!(
            "numio: the verify state {} is stale for {}: {} blocks hold generation {} (or another run's), newer than the generation {expected} it saved, so they were written after it (a state restored from a backup, or a later write saved to another state file); this is no lost write, and those blocks were not checked: name the state of the last write with --verify-state FILE, or write again with --verify",
            path.display(),
            t.path,
            v.stale_blocks,
            v.stale_generation.map_or("?".to_string(), |g| g.to_string()),
        );
    }
    any
}
