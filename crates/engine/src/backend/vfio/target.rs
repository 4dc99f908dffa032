//! A PCI NVMe namespace as a target: `pci:0000:41:00.0[/NSID]` (also
//! `0000:41:00.0[/NSID]` and the short `pci:41:00.0`), what the vfio
//! backend drives. Inspecting one opens its controller (shared with the
//! run's workers while any holds it).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::ctrl::{self, Controller, CtrlError};

/// A target that is not a PCI namespace's address.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PciAddressError {
    /// Not a PCI address.
    #[error(
        "'{text}' is not a PCI address; write pci:DDDD:BB:SS.F[/NSID], e.g. pci:0000:41:00.0/1 (see `numio vfio status`)"
    )]
    Address {
        /// The address part as given.
        text: String,
    },
    /// A namespace id that is none.
    #[error("'{nsid}' is not a namespace id; write pci:{addr}/NSID with NSID ≥ 1")]
    Nsid {
        /// The PCI address.
        addr: String,
        /// The NSID part as given.
        nsid: String,
    },
}

/// Why a PCI namespace cannot be inspected.
#[derive(Debug, thiserror::Error)]
pub enum PciError {
    /// The target names no PCI namespace.
    #[error("'{path}' is not a PCI address")]
    NotPci {
        /// The target.
        path: String,
    },
    /// Its address or NSID does not parse.
    #[error(transparent)]
    Address(#[from] PciAddressError),
    /// sysfs could not be read.
    #[error(transparent)]
    Topology(#[from] topology::TopologyError),
    /// No such function.
    #[error(
        "no PCI function {addr} on this machine; `numio vfio status` lists the NVMe controllers"
    )]
    NoFunction {
        /// The PCI address.
        addr: String,
    },
    /// Not an NVMe controller.
    #[error(
        "{addr} is not an NVMe controller (PCI class {}); `numio vfio status` lists the NVMe controllers",
        .class.map_or("unknown".into(), |c| format!("{c:#08x}"))
    )]
    NotNvme {
        /// The PCI address.
        addr: String,
        /// Its class code.
        class: Option<u32>,
    },
    /// Not bound to vfio-pci.
    #[error(
        "{addr} is driven by {}, not vfio-pci: `numio bench --backend vfio` binds it for the run, or bind it with `numio vfio bind {addr}`",
        .driver.as_deref().unwrap_or("no driver")
    )]
    Driver {
        /// The PCI address.
        addr: String,
        /// Its driver.
        driver: Option<String>,
    },
    /// No IOMMU group.
    #[error(
        "{addr} has no IOMMU group: numio's vfio backend needs the IOMMU on (boot with intel_iommu=on or amd_iommu=on; `numio doctor` checks)"
    )]
    NoIommuGroup {
        /// The PCI address.
        addr: String,
    },
    /// The group's device file is missing.
    #[error("{addr} is bound to vfio-pci but /dev/vfio/{group} does not exist")]
    NoGroupDevice {
        /// The PCI address.
        addr: String,
        /// The IOMMU group.
        group: u32,
    },
    /// The controller failed.
    #[error(transparent)]
    Ctrl(#[from] CtrlError),
    /// The controller has no active namespace.
    #[error("{addr}: the controller has no active namespace")]
    NoNamespace {
        /// The PCI address.
        addr: String,
    },
}

impl PciError {
    /// The message for a target that names the controller already: without
    /// the `ADDR: ` the controller's failures start with.
    pub fn without_address(&self) -> String {
        match self {
            PciError::Ctrl(e) => e.failure.to_string(),
            PciError::NoNamespace { .. } => "the controller has no active namespace".into(),
            e => e.to_string(),
        }
    }
}

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
pub fn parse(path: &str) -> Option<Result<(String, Option<u32>), PciAddressError>> {
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
        return Some(Err(PciAddressError::Address {
            text: a.to_string(),
        }));
    };
    let nsid = match ns.map(str::parse::<u32>) {
        None => None,
        Some(Ok(n)) if n > 0 => Some(n),
        Some(_) => {
            return Some(Err(PciAddressError::Nsid {
                addr,
                nsid: ns.unwrap_or_default().to_string(),
            }))
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
pub fn inspect(path: &str, root: &Path) -> Result<(PciNamespace, u64, u32), PciError> {
    let (addr, nsid) = parse(path).ok_or_else(|| PciError::NotPci {
        path: path.to_string(),
    })??;
    let Some(f) = topology::pci::pci_function(root, &addr)? else {
        return Err(PciError::NoFunction { addr });
    };
    if f.class != Some(topology::pci::CLASS_NVME) {
        return Err(PciError::NotNvme {
            addr,
            class: f.class,
        });
    }
    if f.driver.as_deref() != Some(topology::pci::VFIO_PCI) {
        return Err(PciError::Driver {
            addr,
            driver: f.driver,
        });
    }
    let (group, noiommu) = group_device(&f)?;
    let ctrl = ctrl::open(&addr, &group, f.numa_node, noiommu)?;
    let nsid = match nsid {
        Some(n) => n,
        None => *ctrl
            .namespaces()?
            .first()
            .ok_or_else(|| PciError::NoNamespace { addr: addr.clone() })?,
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
fn group_device(f: &topology::pci::PciFunction) -> Result<(PathBuf, bool), PciError> {
    let Some(g) = f.iommu_group else {
        return Err(PciError::NoIommuGroup {
            addr: f.address.clone(),
        });
    };
    let plain = PathBuf::from(format!("/dev/vfio/{g}"));
    if plain.exists() {
        return Ok((plain, false));
    }
    let noiommu = PathBuf::from(format!("/dev/vfio/noiommu-{g}"));
    if noiommu.exists() {
        return Ok((noiommu, true));
    }
    Err(PciError::NoGroupDevice {
        addr: f.address.clone(),
        group: g,
    })
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
        assert_eq!(
            e,
            PciAddressError::Address {
                text: "pci:0000:41:00.9".into()
            }
        );
        assert!(e.to_string().contains("not a PCI address"), "{e}");
        let e = parse("pci:0000:41:00.0/0").unwrap().unwrap_err();
        assert_eq!(
            e,
            PciAddressError::Nsid {
                addr: "0000:41:00.0".into(),
                nsid: "0".into()
            }
        );
        assert!(e.to_string().contains("namespace id"), "{e}");
    }
}
