//! A PCI NVMe namespace as a target: `pci:0000:41:00.0[/NSID]` (also
//! `0000:41:00.0[/NSID]` and the short `pci:41:00.0`), what the vfio
//! backend drives. Inspecting one opens its controller (shared with the
//! run's workers while any holds it).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::ctrl::{self, Controller};

/// A namespace behind an open controller.
#[derive(Clone)]
pub struct PciNamespace {
    /// PCI address in the kernel's form.
    pub addr: String,
    /// Namespace id.
    pub nsid: u32,
    /// The node the controller sits on (its `numa_node`).
    pub node: Option<u32>,
    /// Largest transfer of one command (MDTS, bounded by a PRP list page).
    pub max_transfer_bytes: u64,
    /// The controller, opened and enabled.
    pub ctrl: Arc<Controller>,
}

impl std::fmt::Debug for PciNamespace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PciNamespace")
            .field("addr", &self.addr)
            .field("nsid", &self.nsid)
            .field("node", &self.node)
            .finish_non_exhaustive()
    }
}

impl PartialEq for PciNamespace {
    fn eq(&self, o: &Self) -> bool {
        self.addr == o.addr && self.nsid == o.nsid
    }
}

impl Eq for PciNamespace {}

/// The PCI address and namespace id a target names, when it names one:
/// `pci:ADDR[/NSID]`, or a full `DDDD:BB:SS.F[/NSID]` that is not a path.
pub fn parse(path: &str) -> Option<Result<(String, Option<u32>), String>> {
    let explicit = matches!(
        planner::TargetAddr::parse(path),
        planner::TargetAddr::Pci(_)
    );
    let (a, ns) = match path.split_once('/') {
        Some((a, ns)) => (a, Some(ns)),
        None => (path, None),
    };
    let addr = topology::pci::parse_address(a);
    let full_form = a.matches(':').count() == 2 && !Path::new(path).exists();
    if !(explicit || full_form && addr.is_some()) {
        return None;
    }
    let Some(addr) = addr else {
        return Some(Err(format!(
            "'{a}' is not a PCI address; write pci:DDDD:BB:SS.F[/NSID], e.g. pci:0000:41:00.0/1 (see `numio vfio status`)"
        )));
    };
    let nsid = match ns.map(str::parse::<u32>) {
        None => None,
        Some(Ok(n)) if n > 0 => Some(n),
        Some(_) => {
            return Some(Err(format!(
                "'{}' is not a namespace id; write pci:{addr}/NSID with NSID ≥ 1",
                ns.unwrap_or_default()
            )))
        }
    };
    Some(Ok((addr, nsid)))
}

/// Whether `path` names a PCI namespace.
pub fn is_pci_target(path: &str) -> bool {
    parse(path).is_some()
}

/// Opens the controller `path` names (it must be bound to vfio-pci) and
/// reads its namespace: (namespace, size in bytes, LBA size). Facts about
/// the function come from the sysfs root `root`.
pub fn inspect(path: &str, root: &Path) -> Result<(PciNamespace, u64, u32), String> {
    let (addr, nsid) = parse(path).ok_or_else(|| format!("'{path}' is not a PCI address"))??;
    let f = topology::pci::pci_function(root, &addr)
        .map_err(|e| e.to_string())?
        .ok_or_else(|| {
            format!("no PCI function {addr} on this machine; `numio vfio status` lists the NVMe controllers")
        })?;
    if f.class != Some(topology::pci::CLASS_NVME) {
        return Err(format!(
            "{addr} is not an NVMe controller (PCI class {}); `numio vfio status` lists the NVMe controllers",
            f.class.map_or("unknown".into(), |c| format!("{c:#08x}"))
        ));
    }
    if f.driver.as_deref() != Some(topology::pci::VFIO_PCI) {
        return Err(format!(
            "{addr} is driven by {}, not vfio-pci: `numio bench --backend vfio` binds it for the run, or bind it with `numio vfio bind {addr}`",
            f.driver.as_deref().unwrap_or("no driver")
        ));
    }
    let (group, noiommu) = group_device(&f)?;
    let ctrl = ctrl::open(&addr, &group, f.numa_node, noiommu)?;
    let nsid = match nsid {
        Some(n) => n,
        None => *ctrl
            .namespaces()?
            .first()
            .ok_or_else(|| format!("{addr}: the controller has no active namespace"))?,
    };
    let (blocks, lba) = ctrl.namespace(nsid)?;
    Ok((
        PciNamespace {
            addr,
            nsid,
            node: f.numa_node,
            max_transfer_bytes: ctrl.max_transfer_bytes(),
            ctrl,
        },
        blocks * u64::from(lba),
        lba,
    ))
}

/// `/dev/vfio/N` of the function's IOMMU group, or `/dev/vfio/noiommu-N`
/// (then `true`: VFIO's no-IOMMU mode, which only `numio vfio bind
/// --allow-noiommu` or a run with `--allow-noiommu` sets up).
fn group_device(f: &topology::pci::PciFunction) -> Result<(PathBuf, bool), String> {
    let Some(g) = f.iommu_group else {
        return Err(format!(
            "{} has no IOMMU group: numio's vfio backend needs the IOMMU on (boot with intel_iommu=on or amd_iommu=on; `numio doctor` checks)",
            f.address
        ));
    };
    let plain = PathBuf::from(format!("/dev/vfio/{g}"));
    if plain.exists() {
        return Ok((plain, false));
    }
    let noiommu = PathBuf::from(format!("/dev/vfio/noiommu-{g}"));
    if noiommu.exists() {
        return Ok((noiommu, true));
    }
    Err(format!(
        "{} is bound to vfio-pci but /dev/vfio/{g} does not exist",
        f.address
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pci_targets_and_what_is_not_one() {
        assert_eq!(
            parse("pci:0000:41:00.0/2"),
            Some(Ok(("0000:41:00.0".into(), Some(2))))
        );
        assert_eq!(
            parse("pci:41:00.0"),
            Some(Ok(("0000:41:00.0".into(), None)))
        );
        assert_eq!(
            parse("0000:41:00.0"),
            Some(Ok(("0000:41:00.0".into(), None)))
        );
        assert!(parse("/dev/nvme0n1").is_none());
        assert!(parse("41:00.0").is_none(), "short form needs pci:");
        assert!(parse("nvme-tcp://h/nqn").is_none());
        let e = parse("pci:0000:41:00.9").unwrap().unwrap_err();
        assert!(e.contains("not a PCI address"), "{e}");
        let e = parse("pci:0000:41:00.0/0").unwrap().unwrap_err();
        assert!(e.contains("namespace id"), "{e}");
    }
}
