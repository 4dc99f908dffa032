//! `numio coalesce show`: each controller's interrupt coalescing
//! (`tune::show` reads it, `report::coalesce::show` prints it: decoded as
//! nvme-cli decodes it, whether it can change and be saved, each I/O
//! vector's Coalescing Disable bit), and the values a state file says
//! numio has not put back.

use std::path::{Path, PathBuf};

use anyhow::Context;
use report::coalesce::show::{pending_warning, render, to_json};
use topology::Topology;
use tune::show::{pending_records, read, Reading};
use tune::{Controller, DevAccess};

/// Flags of `numio coalesce show` (also those of a bare `numio coalesce`).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct ShowArgs {
    /// Controllers (`nvme0`, `/dev/nvme0`) or namespaces (`/dev/nvme0n1`;
    /// a multipath head means all its controllers); none: every controller.
    #[arg(value_name = "CTRL|NS")]
    pub targets: Vec<String>,
    /// Print JSON (schema: docs/readme/coalesce.md).
    #[arg(long)]
    pub json: bool,
    /// Read this sysfs/procfs root instead of `/` (a directory or a
    /// `.tar.gz` snapshot made by `numio topo --save`): controllers are
    /// listed, live values are not read.
    #[arg(long, value_name = "DIR|FILE.tar.gz", default_value = "/")]
    pub root: PathBuf,
}

/// Runs `numio coalesce show`.
pub fn run(args: ShowArgs) -> anyhow::Result<i32> {
    let topo = Topology::load(&args.root)?;
    let live = args.root == Path::new("/");
    let resolved = tune::resolve(&topo, &args.targets)?;
    let access = DevAccess::default();
    let rows: Vec<(Controller, Reading)> = resolved
        .controllers
        .into_iter()
        .map(|c| {
            let reading = read(&c, live, &access);
            (c, reading)
        })
        .collect();
    let (pending, journal_errors) = if live {
        pending_records()
    } else {
        (Vec::new(), Vec::new())
    };
    let text = if args.json {
        serde_json::to_string_pretty(&to_json(&rows, &pending)).context("serializing")? + "\n"
    } else {
        render(&rows)
    };
    super::topo::print_stdout(&text)?;
    for e in &journal_errors {
        eprintln!("numio: warning: {e}");
    }
    if !pending.is_empty() {
        eprintln!("numio: warning: {}", pending_warning(&pending));
    }
    let failed: Vec<String> = rows
        .iter()
        .filter_map(|(c, r)| match r {
            Reading::Failed(e) => Some(format!("{}: {e}", c.name)),
            _ => None,
        })
        .collect();
    if failed.is_empty() {
        Ok(0)
    } else {
        for f in &failed {
            eprintln!("numio: error: {f}");
        }
        Ok(2)
    }
}
