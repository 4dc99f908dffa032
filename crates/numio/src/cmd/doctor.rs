//! `numio doctor`.

/// Flags of `numio doctor`.
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Runs `numio doctor`.
pub fn run(_args: Args) -> anyhow::Result<i32> {
    anyhow::bail!("`numio doctor` is not built yet")
}
