//! `numio plan`.

/// Flags of `numio plan`.
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Runs `numio plan`.
pub fn run(_args: Args) -> anyhow::Result<i32> {
    anyhow::bail!("`numio plan` is not built yet")
}
