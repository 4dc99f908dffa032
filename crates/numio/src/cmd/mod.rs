//! One module per subcommand. Each has `Args` (clap) and
//! `run(Args) -> anyhow::Result<i32>` returning the process exit status.
//! Shared by several: the flag tables (`flags`, `engine_args`) and what a
//! session shows on stderr (`display`).

pub mod agent;
pub mod bench;
pub mod coalesce;
pub mod coalesce_sweep;
pub mod compare;
pub mod completions;
pub mod connect;
pub mod display;
pub mod doctor;
pub mod engine_args;
pub mod fabric;
pub mod flags;
pub mod host_args;
pub mod man;
pub mod multipath;
pub mod plan;
pub mod precondition;
pub mod report;
pub mod serve;
pub mod sweep;
pub mod sweep_args;
pub mod sweep_fleet;
pub mod sweep_output;
pub mod topo;
pub mod vfio;
