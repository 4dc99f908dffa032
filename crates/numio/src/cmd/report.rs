//! `numio report`.

/// Flags of `numio report`.
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Runs `numio report`.
pub fn run(_args: Args) -> anyhow::Result<i32> {
    anyhow::bail!("`numio report` is not built yet")
}
