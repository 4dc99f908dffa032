//! `numio serve`.

/// Flags of `numio serve`.
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Runs `numio serve`.
pub fn run(_args: Args) -> anyhow::Result<i32> {
    anyhow::bail!("`numio serve` is not built yet")
}
