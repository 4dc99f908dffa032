//! `--verify` and `--verify-only` around a bench run:
//! `session::verify_run`, with the engine flags that ask for it.

pub use session::verify_run::VerifyRun;

use crate::cmd::engine_args::EngineArgs;

/// [`session::verify_run::prepare`] as the engine flags ask.
pub fn prepare(
    args: &EngineArgs,
    placement: planner::Placement,
    opts: &mut engine::RunOptions,
) -> anyhow::Result<(planner::Placement, Option<VerifyRun>)> {
    let asked = (args.verify, args.verify_only);
    let state = args.verify_state.as_deref();
    Ok(session::verify_run::prepare(asked, state, placement, opts)?)
}

/// [`session::verify_run::finish`], said on stderr.
pub fn finish(run: Option<VerifyRun>, results: &[engine::RunResult]) -> bool {
    session::verify_run::finish(run, results, &mut |line| eprintln!("numio: {line}"))
}
