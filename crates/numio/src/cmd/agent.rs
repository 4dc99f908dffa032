//! `numio agent`: the far end of a fleet run (`numio bench --hosts`),
//! started by the controlling numio over ssh; `session::agent` does the
//! work. What is numio's own here: bench's flags, from the arguments the
//! controller sent to a plan, and the verify state saved after the run.

use clap::{Args as _, FromArgMatches};
use session::agent::{BenchPlan, BenchPlanner};

use super::bench::{self, bench_verify::VerifyRun};

/// Flags of `numio agent` (none: everything arrives on stdin).
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Runs the agent until its run is reported or its stdin closes.
pub fn run(_args: Args) -> anyhow::Result<i32> {
    let log = |l: &str| eprintln!("{l}");
    Ok(session::agent::run(Bench, env!("NUMIO_VERSION"), log)?)
}

/// Bench's flags on this host.
struct Bench;

impl BenchPlanner for Bench {
    type After = Option<VerifyRun>;

    fn plan(
        &mut self,
        argv: &[String],
        targets: Vec<String>,
    ) -> Result<BenchPlan<Self::After>, fleet::agent::BoxError> {
        plan(argv, targets).map_err(|e| format!("{e:#}").into())
    }

    fn finish(&mut self, after: Self::After, result: &results::RunResult) {
        bench::bench_verify::finish(after, std::slice::from_ref(result));
    }
}

/// The bench arguments planned here: `targets` replace the ones in
/// `argv` (the controller split them by host).
fn plan(argv: &[String], targets: Vec<String>) -> anyhow::Result<BenchPlan<Option<VerifyRun>>> {
    let cmd = bench::Args::augment_args(clap::Command::new("bench").no_binary_name(true));
    let m = cmd
        .try_get_matches_from(argv)
        .map_err(|e| anyhow::anyhow!("{}", e.render().to_string().trim()))?;
    let mut args = bench::Args::from_arg_matches(&m).map_err(|e| anyhow::anyhow!("{e}"))?;
    args.targets = targets;
    bench::fold_fio_names(&mut args)?;
    let (placement, mut opts) = bench::plan(&args)?;
    // --verify and --verify-only with this host's own state file.
    let (placement, after) = bench::bench_verify::prepare(&args.engine, placement, &mut opts)?;
    let groups = session::bench::groups(&placement).len();
    anyhow::ensure!(
        groups <= 1,
        "a fleet run runs one group: the job file has {groups} stonewall groups"
    );
    Ok(BenchPlan {
        placement,
        opts,
        after,
    })
}
