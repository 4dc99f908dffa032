//! `numio topo`.

/// Flags of `numio topo`.
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Runs `numio topo`.
pub fn run(_args: Args) -> anyhow::Result<i32> {
    anyhow::bail!("`numio topo` is not built yet")
}
