//! `numio vfio`: hand NVMe controllers to vfio-pci for numio's user-space
//! driver (`bind`), give them back (`unbind`), show who has what
//! (`status`), and give back what a dead numio left (`restore`). Glue over
//! `tune::vfio` (which keeps the restore promise) and `topology::pci`.

use std::path::Path;

use anyhow::Context;
use clap::Subcommand;
use session::interrupt::{self, Notice};
use tune::vfio::{Binding, TakeOptions, VfioJournal};

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
        Action::Unbind(a) => unbind(root, &a.devices),
        Action::Status(a) => status(root, a.json),
        Action::Restore(a) => restore(root, a.all),
    }
}

/// The kernel form of a user's address, or an error naming the input.
pub fn address(input: &str) -> anyhow::Result<String> {
    topology::pci::parse_address(input).ok_or_else(|| {
        anyhow::anyhow!(
            "`{input}` is not a PCI address: give DOMAIN:BUS:SLOT.FUNCTION as `lspci -D` prints it (0000:02:00.0), the short 02:00.0 or pci:0000:02:00.0; `numio vfio status` lists the NVMe controllers"
        )
    })
}

fn on_signal(notice: Notice) {
    match notice {
        Notice::Stopping { .. } => {
            eprintln!("numio: stopping; the controllers moved so far are given back")
        }
        Notice::Exiting { .. } => eprintln!("numio: interrupted again: giving back, then exiting"),
    }
}

/// `bind`: every controller or none; the taken ones are kept on record.
fn bind(root: &Path, a: &BindArgs) -> anyhow::Result<i32> {
    let addrs: Vec<String> = a
        .devices
        .iter()
        .map(|d| address(d))
        .collect::<Result<_, _>>()?;
    interrupt::install(on_signal)?;
    let opts = TakeOptions {
        force: a.force,
        allow_noiommu: a.allow_noiommu,
        hugepages_per_node: a.hugepages,
        state_dir: None,
        stop: Some(interrupt::flag()),
        command: "numio vfio bind".into(),
    };
    let mut taken: Vec<Binding> = Vec::new();
    let mut hooks = Vec::new();
    for addr in &addrs {
        // An error drops the ones taken: they go back.
        let b = match Binding::take(root, addr, &opts) {
            Ok(b) => b,
            Err(e) => match interrupt::exit_code() {
                Some(code) => {
                    drop(taken);
                    eprintln!("numio: {e}");
                    return Ok(code);
                }
                None => return Err(e.into()),
            },
        };
        let restorer = b.restorer();
        hooks.push(interrupt::on_second_signal(move || {
            if let Err(e) = restorer.restore() {
                eprintln!("numio: {e}");
            }
        }));
        taken.push(b);
        if let Some(code) = interrupt::exit_code() {
            return Ok(code);
        }
    }
    let mut out = String::new();
    for b in taken {
        let line = format!(
            "{}: {} ({}){}\n",
            b.addr(),
            if b.owned() {
                "bound to vfio-pci"
            } else {
                "on vfio-pci already"
            },
            b.group_dev().display(),
            if b.noiommu() { "; no-IOMMU mode" } else { "" }
        );
        b.keep()?;
        out.push_str(&line);
    }
    drop(hooks);
    super::topo::print_stdout(&out)?;
    Ok(0)
}

fn unbind(root: &Path, devices: &[String]) -> anyhow::Result<i32> {
    let addrs: Vec<String> = devices
        .iter()
        .map(|d| address(d))
        .collect::<Result<_, _>>()?;
    let journal = VfioJournal::default_location()?;
    for addr in &addrs {
        let driver = tune::vfio::unbind_address(root, &journal, addr)?;
        let f = topology::pci::pci_function(root, addr)?;
        let ctrls = f.map(|f| f.controllers.join(", ")).unwrap_or_default();
        let ctrls = if ctrls.is_empty() {
            String::new()
        } else {
            format!(" ({ctrls})")
        };
        super::topo::print_stdout(&format!("{addr}: back on {driver}{ctrls}\n"))?;
    }
    Ok(0)
}

fn restore(root: &Path, all: bool) -> anyhow::Result<i32> {
    let journal = VfioJournal::default_location()?;
    let report = tune::vfio::restore_recorded(root, &journal, all)?;
    let mut out = String::new();
    for r in &report.restored {
        out.push_str(&format!(
            "{}: back on {} (left by `{}`)\n",
            r.address,
            r.driver.as_deref().unwrap_or("no driver"),
            r.command
        ));
    }
    for (r, why) in &report.skipped {
        out.push_str(&format!("{}: left alone: {why}\n", r.address));
    }
    if out.is_empty() {
        out = format!(
            "nothing to restore: no record in {}\n",
            journal.path().display()
        );
    }
    super::topo::print_stdout(&out)?;
    for (r, why) in &report.failed {
        eprintln!("numio: {}: not given back: {why}", r.address);
    }
    Ok(if report.failed.is_empty() { 0 } else { 2 })
}

fn status(root: &Path, json: bool) -> anyhow::Result<i32> {
    let s = tune::vfio::status::gather(root)?;
    let text = if json {
        serde_json::to_string_pretty(&s).context("serializing the status")? + "\n"
    } else {
        report::vfio::render(&s)
    };
    super::topo::print_stdout(&text)?;
    Ok(0)
}
