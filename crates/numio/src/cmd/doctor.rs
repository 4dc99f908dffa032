//! `numio doctor`: NUMA, multipath, IRQ and queue findings with evidence and
//! fixes. Exit status 1 when any finding is an error. On the live machine
//! it also reads each PCIe controller's interrupt coalescing (through
//! `tune`, as root) for the `irq-coalescing-off` check; from a snapshot
//! that check says nothing. On the live machine it also reads the VFIO
//! facts (IOMMU, modules, hugepages, vfio-pci devices nobody holds).

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
    let report = Report::with_live(&topo, &tune::live::doctor_facts(&topo, &args.root));
    let text = if args.json {
        serde_json::to_string_pretty(&report).context("serializing the findings")? + "\n"
    } else {
        topology::doctor::render(&report)
    };
    super::topo::print_stdout(&text)?;
    Ok(report.exit_code())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(name: &str) -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/fixtures/sysfs")
            .join(name)
    }

    #[test]
    fn exit_status_is_1_only_when_a_finding_is_an_error() {
        let run_on = |name: &str| {
            run(Args {
                json: true,
                root: fixture(name),
            })
            .expect("doctor runs")
        };
        assert_eq!(run_on("numa-unknown"), 1, "numa_node = -1 is an error");
        assert_eq!(run_on("power-3node"), 0, "warnings only");
        assert_eq!(run_on("r740xd-2s-12nvme"), 0, "clean");
    }

    #[test]
    fn a_missing_root_is_an_error_naming_it() {
        let err = run(Args {
            json: false,
            root: PathBuf::from("/nonexistent/root"),
        })
        .expect_err("missing");
        assert!(
            err.to_string().contains("/nonexistent/root does not exist"),
            "{err}"
        );
    }
}
