//! Findings for numio's VFIO backend: the IOMMU, the VFIO modules,
//! hugepages, and NVMe controllers left on vfio-pci that no process holds.
//! Only with [`LiveFacts::vfio`] (read from a live or directory root).

use super::checks::{evidence, finding};
use super::{Finding, LiveFacts, Severity};

pub(super) fn findings(live: &LiveFacts, out: &mut Vec<Finding>) {
    let Some(v) = &live.vfio else { return };
    if !v.iommu {
        out.push(finding(
            Severity::Info,
            "iommu-off",
            "iommu",
            "no IOMMU is on; this matters only for numio's vfio backend (`numio bench --backend vfio`, `numio vfio bind`), which then needs --allow-noiommu (the device can DMA anywhere in memory)".into(),
            vec![evidence("/sys/class/iommu", ""), evidence("/sys/kernel/iommu_groups", "")],
            "turn the IOMMU on: VT-d / AMD-Vi in the firmware and intel_iommu=on (Intel) on the kernel command line".into(),
        ));
    }
    let missing = v.modules.missing();
    if !missing.is_empty() {
        out.push(finding(
            Severity::Info,
            "vfio-modules-missing",
            "vfio",
            format!("VFIO modules not loaded: {}; numio's vfio backend needs them (`numio vfio bind` loads vfio-pci)", missing.join(", ")),
            missing.iter().map(|m| evidence(format!("/sys/module/{m}"), "missing")).collect(),
            "modprobe vfio-pci (it loads vfio and vfio_iommu_type1 too)".into(),
        ));
    }
    if !v
        .hugepages
        .iter()
        .any(|h| h.size_kib == 2048 && h.total > 0)
    {
        out.push(finding(
            Severity::Info,
            "no-hugepages",
            "hugepages",
            "no node has 2 MiB hugepages reserved; numio's vfio backend then maps its queues and buffers from ordinary pages".into(),
            v.hugepages
                .iter()
                .filter(|h| h.size_kib == 2048)
                .map(|h| evidence(format!("/sys/devices/system/node/node{}/hugepages/hugepages-2048kB/nr_hugepages", h.node), h.total.to_string()))
                .collect(),
            "numio vfio bind ADDR --hugepages N (reserves N per node, put back by unbind), or hugepages=N on the kernel command line".into(),
        ));
    }
    for (addr, dev) in &v.unheld {
        out.push(finding(
            Severity::Warning,
            "vfio-device-unheld",
            addr,
            format!("{addr} is on vfio-pci and no process holds {dev}: the kernel cannot use the drive and nothing else does"),
            vec![evidence(format!("/sys/bus/pci/devices/{addr}/driver"), "vfio-pci")],
            format!("numio vfio unbind {addr} (or `numio vfio restore` after a crashed numio)"),
        ));
    }
}
