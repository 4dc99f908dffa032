//! `numio coalesce`: NVMe interrupt coalescing. This branch dispatches its
//! `sweep` subcommand (`coalesce_sweep`); `show`, `set`, `off` and
//! `restore` join it from the core branch (i17-core) on merge.

/// Flags of `numio coalesce`.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    command: Sub,
}

#[derive(Debug, clap::Subcommand)]
enum Sub {
    /// Sweep thresholds × drives busy at once with a bench workload,
    /// recommend one, put every original back.
    Sweep(super::coalesce_sweep::SweepArgs),
}

/// Runs `numio coalesce`.
pub fn run(args: Args) -> anyhow::Result<i32> {
    match args.command {
        Sub::Sweep(a) => super::coalesce_sweep::run(a),
    }
}
