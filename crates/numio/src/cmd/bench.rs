//! `numio bench`.

/// Flags of `numio bench`.
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Runs `numio bench`.
pub fn run(_args: Args) -> anyhow::Result<i32> {
    anyhow::bail!("`numio bench` is not built yet")
}
