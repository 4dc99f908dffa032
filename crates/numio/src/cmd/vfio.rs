//! `numio vfio`: hand NVMe controllers to vfio-pci for numio's user-space
//! driver (`bind`), give them back (`unbind`), show who has what
//! (`status`), and give back what a dead numio left (`restore`). Glue over
//! `tune::vfio` (which keeps the restore promise); `report::vfio` prints.

use std::path::Path;

use anyhow::Context;
use clap::Subcommand;
use session::interrupt::{self, Undoing};
use tune::vfio::{BindingRestorer, Bound, TakeOptions, VfioJournal};

const ROOT: &str = "/";

/// Flags of `numio vfio`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// What to do.
    #[command(subcommand)]
    pub action: Action,
}

/// The actions of `numio vfio`.
#[derive(Debug, Subcommand)]
pub enum Action {
    /// Move controllers from their driver to vfio-pci and leave them there
    /// until `numio vfio unbind` (the original driver is recorded).
    Bind(BindArgs),
    /// Give controllers back to their recorded driver (nvme when none was
    /// recorded).
    Unbind(UnbindArgs),
    /// Each NVMe controller's driver, node, IOMMU group, who holds its VFIO
    /// group and what numio recorded; the IOMMU, VFIO modules, hugepages.
    Status(StatusArgs),
    /// Give back every controller a numio that died (kill -9, a crash)
    /// left on vfio-pci.
    Restore(RestoreArgs),
}

/// Flags of `numio vfio bind`.
#[derive(Debug, clap::Args)]
pub struct BindArgs {
    /// PCI addresses: 0000:02:00.0 (as `lspci -D` prints), 02:00.0 or
    /// pci:0000:02:00.0.
    #[arg(value_name = "ADDR", required = true)]
    pub devices: Vec<String>,
    /// Take a controller even when its namespaces are mounted, held,
    /// swapped on, backing a loop device, exported (nvmet, LIO), open or
    /// carry a filesystem, partition or RAID signature (as bench's
    /// --force-unbind).
    #[arg(long = "force-unbind", alias = "force")]
    pub force: bool,
    /// Without an IOMMU, use VFIO's no-IOMMU mode: the device can DMA
    /// anywhere in memory (needs CONFIG_VFIO_NOIOMMU and
    /// `vfio enable_unsafe_noiommu_mode=1`).
    #[arg(long)]
    pub allow_noiommu: bool,
    /// Reserve at least N 2 MiB hugepages on every node (put back by
    /// unbind).
    #[arg(long, value_name = "N")]
    pub hugepages: Option<u64>,
}

/// Flags of `numio vfio unbind`.
#[derive(Debug, clap::Args)]
pub struct UnbindArgs {
    /// PCI addresses (as for bind).
    #[arg(value_name = "ADDR", required = true)]
    pub devices: Vec<String>,
}

/// Flags of `numio vfio status`.
#[derive(Debug, clap::Args)]
pub struct StatusArgs {
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

/// Flags of `numio vfio restore`.
#[derive(Debug, clap::Args)]
pub struct RestoreArgs {
    /// Also give back what `numio vfio bind` keeps until unbind.
    #[arg(long)]
    pub all: bool,
}

/// Runs `numio vfio`.
pub fn run(args: Args) -> anyhow::Result<i32> {
    let root = Path::new(ROOT);
    match args.action {
        Action::Bind(a) => bind(root, &a),
        Action::Unbind(a) => {
            let addrs = tune::vfio::parse_addresses(&a.devices)?;
            let journal = VfioJournal::default_location()?;
            for addr in &addrs {
                let u = tune::vfio::unbind(root, &journal, addr)?;
                super::topo::print_stdout(&report::vfio::unbound(&u))?;
            }
            Ok(0)
        }
        Action::Status(a) => {
            let s = tune::vfio::status::gather(root)?;
            super::topo::print_stdout(&if a.json {
                serde_json::to_string_pretty(&s).context("serializing the status")? + "\n"
            } else {
                report::vfio::render(&s)
            })?;
            Ok(0)
        }
        Action::Restore(a) => {
            let journal = VfioJournal::default_location()?;
            let report = tune::vfio::restore_recorded(root, &journal, a.all)?;
            super::topo::print_stdout(&report::vfio::restored(&report, &journal.path()))?;
            let failed = report::vfio::not_restored(&report);
            failed.iter().for_each(|n| eprintln!("numio: {n}"));
            Ok(if failed.is_empty() { 0 } else { 2 })
        }
    }
}

/// `bind`: every controller or none; the taken ones are kept on record.
fn bind(root: &Path, a: &BindArgs) -> anyhow::Result<i32> {
    let addrs = tune::vfio::parse_addresses(&a.devices)?;
    interrupt::install(|n| eprint!("{}", n.line(Undoing::VfioBind)))?;
    let opts = TakeOptions {
        force: a.force,
        allow_noiommu: a.allow_noiommu,
        hugepages_per_node: a.hugepages,
        stop: Some(interrupt::flag()),
        command: "numio vfio bind".into(),
        ..TakeOptions::default()
    };
    let hook = |r: BindingRestorer| interrupt::undo_on_second_signal(move || r.restore());
    match tune::vfio::bind(root, &addrs, &opts, hook)? {
        Bound::Kept(devices) => super::topo::print_stdout(&report::vfio::bound(&devices))?,
        Bound::Interrupted(e) => {
            e.iter().for_each(|e| eprintln!("numio: {e}"));
            return Ok(interrupt::exit_code().unwrap_or(2));
        }
    }
    Ok(0)
}
