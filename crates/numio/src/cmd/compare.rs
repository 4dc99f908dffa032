//! `numio compare`.

/// Flags of `numio compare`.
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Runs `numio compare`.
pub fn run(_args: Args) -> anyhow::Result<i32> {
    anyhow::bail!("`numio compare` is not built yet")
}
