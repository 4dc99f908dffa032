//! `numio multipath`: per multipath namespace, the paths × CPU nodes table
//! and the path the kernel's iopolicy takes from each node (topology's
//! model of `multipath.c`, or the kernel's own `numa_nodes` where it
//! writes them; `report::multipath` draws it); `--probe` proves it with a
//! short read from each node (`session::multipath_probe`).

use std::path::PathBuf;

use session::multipath_probe;
use topology::multipath::{audit, select};
use topology::Topology;

/// Flags of `numio multipath`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Multipath namespaces to audit (`/dev/nvme0n1` or `nvme0n1`); default: all.
    #[arg(value_name = "NS")]
    pub namespaces: Vec<String>,
    /// Print the audit as JSON.
    #[arg(long)]
    pub json: bool,
    /// Read this sysfs/procfs root instead of `/`: a directory or a
    /// `.tar.gz` snapshot made by `numio topo --save` (not with --probe).
    #[arg(long, value_name = "DIR|FILE.tar.gz", default_value = "/")]
    pub root: PathBuf,
    /// Prove the path of each node: from each node's CPUs, a short
    /// read-only O_DIRECT read of the head device, with every path's I/O
    /// counters (`/sys/block/PATH/stat`) read before and after.
    #[arg(long)]
    pub probe: bool,
    /// Bytes each node reads in --probe (a multiple of 4 KiB, at most 64 MiB).
    #[arg(long, value_name = "MIB", default_value_t = 4)]
    pub probe_mib: u32,
}

/// Runs `numio multipath`.
pub fn run(args: Args) -> anyhow::Result<i32> {
    if args.probe && args.root != std::path::Path::new("/") {
        eprintln!(
            "numio multipath: --probe reads the live machine's devices; it cannot run on --root {}: drop one of the two",
            args.root.display()
        );
        return Ok(2);
    }
    if args.probe_mib == 0 || args.probe_mib > 64 {
        eprintln!(
            "numio multipath: --probe-mib {} is out of range: give 1 to 64",
            args.probe_mib
        );
        return Ok(2);
    }
    let topo = Topology::load(&args.root)?;
    let heads = match select(audit(&topo), &args.namespaces) {
        Ok(h) => h,
        Err(msg) => {
            eprintln!("numio multipath: {msg}");
            return Ok(2);
        }
    };
    let mut probes = Vec::new();
    for h in &heads {
        probes.push(if args.probe {
            multipath_probe::probe(&args.root, &topo, h, u64::from(args.probe_mib) << 20)?
        } else {
            Vec::new()
        });
    }
    let text = report::multipath::output(&heads, &probes, args.probe, args.json);
    super::topo::print_stdout(&text)?;
    let disagree = probes.iter().flatten().any(|p| p.agrees == Some(false));
    Ok(i32::from(disagree))
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
    fn unknown_namespace_is_exit_2_and_root_with_probe_too() {
        let args = |ns: &[&str], probe: bool| Args {
            namespaces: ns.iter().map(|s| s.to_string()).collect(),
            json: true,
            root: fixture("vm-mp-memoryless"),
            probe,
            probe_mib: 4,
        };
        assert_eq!(run(args(&["/dev/nvme7n1"], false)).unwrap(), 2);
        assert_eq!(run(args(&[], true)).unwrap(), 2);
        assert_eq!(run(args(&["/dev/nvme0n1"], false)).unwrap(), 0);
        let topo = Topology::load(&fixture("vm-mp-memoryless")).unwrap();
        let err = select(audit(&topo), &["nvme2n1".to_string()])
            .unwrap_err()
            .to_string();
        assert!(err.contains("give one of: nvme0n1"), "{err}");
    }
}
