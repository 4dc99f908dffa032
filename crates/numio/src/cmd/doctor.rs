//! `numio doctor`: NUMA, multipath, IRQ and queue findings with evidence and
//! fixes. Exit status 1 when any finding is an error.

use std::path::PathBuf;

use anyhow::Context;
use topology::doctor::Report;
use topology::Topology;

/// Flags of `numio doctor`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Print the findings as JSON (schema: docs/readme/topology.md).
    #[arg(long)]
    pub json: bool,
    /// Read this sysfs/procfs root instead of `/`: a directory or a
    /// `.tar.gz` snapshot made by `numio topo --save`.
    #[arg(long, value_name = "DIR|FILE.tar.gz", default_value = "/")]
    pub root: PathBuf,
}

/// Runs `numio doctor`.
pub fn run(args: Args) -> anyhow::Result<i32> {
    let topo = Topology::load(&args.root)?;
    let report = Report::new(&topo);
    let text = if args.json {
        serde_json::to_string_pretty(&report).context("serializing the findings")? + "\n"
    } else {
        topology::doctor::render(&report)
    };
    super::topo::print_stdout(&text)?;
    Ok(report.exit_code())
}
