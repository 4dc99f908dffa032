//! What `numio vfio status` shows: the IOMMU, the VFIO modules, every
//! NVMe controller on the PCI bus (its driver, IOMMU group and peers, the
//! group or cdev device and who holds it, numio's record of it) and the
//! hugepage pools. `report::vfio` prints it.

use std::path::Path;

use serde::Serialize;
use topology::pci::{Holder, NodeHugepages, PciFunction, VfioModules};

use super::{VfioJournal, VfioRecord};
use crate::TuneError;

/// One controller in `numio vfio status`.
#[derive(Debug, Serialize)]
pub struct DeviceStatus {
    /// The PCI function: address, node, driver, IOMMU group and peers,
    /// its controllers and block devices.
    #[serde(flatten)]
    pub function: PciFunction,
    /// The VFIO group device, while vfio-pci has it.
    pub group_dev: Option<String>,
    /// Processes holding the group (or cdev) device.
    pub held_by: Vec<Holder>,
    /// What numio recorded for it.
    pub record: Option<VfioRecord>,
}

/// `numio vfio status --json`.
#[derive(Debug, Serialize)]
pub struct Status {
    /// Whether an IOMMU translates DMA.
    pub iommu: bool,
    /// The VFIO modules loaded, and whether no-IOMMU mode is enabled.
    pub modules: VfioModules,
    /// Every NVMe controller on the PCI bus.
    pub devices: Vec<DeviceStatus>,
    /// Hugepage pools per node.
    pub hugepages: Vec<NodeHugepages>,
    /// numio's record of the devices it handed to vfio-pci.
    pub state_file: String,
}

/// The status under sysfs/procfs `root` and in numio's records.
pub fn gather(root: &Path) -> Result<Status, TuneError> {
    let journal = VfioJournal::default_location()?;
    let records = journal.records()?;
    let mut devices = Vec::new();
    for addr in topology::pci::nvme_functions(root)? {
        let Some(f) = topology::pci::pci_function(root, &addr)? else {
            continue;
        };
        let group_dev = f.iommu_group.filter(|_| f.on_vfio()).map(|g| {
            let noiommu = format!("/dev/vfio/noiommu-{g}");
            if root.join(noiommu.trim_start_matches('/')).exists() {
                noiommu
            } else {
                format!("/dev/vfio/{g}")
            }
        });
        let cdev = f
            .vfio_cdev
            .as_ref()
            .map(|c| format!("/dev/vfio/devices/{c}"));
        let wanted: Vec<String> = group_dev.iter().chain(cdev.iter()).cloned().collect();
        let held_by = if wanted.is_empty() {
            Vec::new()
        } else {
            topology::pci::open_by(root, |p| wanted.iter().any(|w| w == p))?
        };
        devices.push(DeviceStatus {
            record: records.iter().find(|r| r.address == addr).cloned(),
            function: f,
            group_dev,
            held_by,
        });
    }
    Ok(Status {
        iommu: topology::pci::iommu_enabled(root)?,
        modules: topology::pci::vfio_modules(root)?,
        devices,
        hugepages: topology::pci::hugepages(root)?,
        state_file: journal.path().display().to_string(),
    })
}
