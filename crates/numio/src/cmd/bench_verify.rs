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
    let path = args
        .verify_state
        .clone()
        .unwrap_or_else(verify_state::default_path);
    let state = verify_state::load(&path).map_err(anyhow::Error::msg)?;
    let placement = if args.verify_only {
        verify_state::replay(&placement, &state, &path).map_err(anyhow::Error::msg)?
    } else {
        placement
    };
    opts.verify_keys = verify_state::keys(&placement, &state, args.verify_only);
    Ok((placement, Some(VerifyRun { path })))
}

/// Records what the runs wrote and saves the state when they wrote
/// (merged into the file as it is by then: runs elsewhere may have saved
/// meanwhile). A state that cannot be saved is a warning: the run and its
/// report stand, only a later `--verify-only` lacks it.
pub fn finish(run: Option<VerifyRun>, results: &[engine::RunResult]) {
    let Some(VerifyRun { path }) = run else {
        return;
    };
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
}
