//! One module per subcommand. Each has `Args` (clap) and
//! `run(Args) -> anyhow::Result<i32>` returning the process exit status.

pub mod bench;
pub mod compare;
pub mod doctor;
pub mod plan;
pub mod report;
pub mod serve;
pub mod topo;
