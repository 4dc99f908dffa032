//! What must hold before numio takes a controller from the kernel: it is
//! an NVMe controller, its IOMMU group can go to VFIO (or no-IOMMU mode is
//! allowed and possible), and nothing uses its namespaces ([`in_use`]
//! names what it sees; [`claim`] holds them exclusively until the unbind).

use std::path::Path;

use topology::device::{block_by_name, signature};
use topology::pci::{GroupMember, PciFunction};

use super::sysfs::vfio_err;
use crate::error::TuneError;

/// The function at `addr`, which must be an NVMe controller.
pub(crate) fn nvme_function(root: &Path, addr: &str) -> Result<PciFunction, TuneError> {
    let Some(f) = topology::pci::pci_function(root, addr)? else {
        return Err(vfio_err(
            addr,
            "no such PCI function on this machine; `numio vfio status`, `numio topo` or `lspci -D` list the NVMe controllers",
        ));
    };
    if !f.is_nvme() {
        let class = f
            .class
            .map_or("unknown".to_string(), |c| format!("{c:#08x}"));
        return Err(vfio_err(
            addr,
            format!("is no NVMe controller (PCI class {class}, not 0x010802); `numio vfio status`, `numio topo` or `lspci -D` list the NVMe controllers"),
        ));
    }
    Ok(f)
}

fn describe(m: &GroupMember) -> String {
    format!(
        "{} (on {})",
        m.address,
        m.driver.as_deref().unwrap_or("no driver")
    )
}

/// Refuses a group with another device bound to a driver other than
/// vfio-pci (bridges and unbound devices are fine).
pub(crate) fn group_viable(f: &PciFunction) -> Result<(), TuneError> {
    let blocking: Vec<String> = f
        .group_peers
        .iter()
        .filter(|m| m.blocks_vfio())
        .map(describe)
        .collect();
    if blocking.is_empty() {
        return Ok(());
    }
    Err(vfio_err(
        &f.address,
        format!(
            "IOMMU group {} also holds {}: VFIO takes a whole group, so these must be unbound or on vfio-pci first (or the slot's ACS must split the group: move the drive to another slot, or check the BIOS's ACS/IOMMU settings)",
            f.iommu_group.map_or("?".to_string(), |g| g.to_string()),
            blocking.join(", ")
        ),
    ))
}

/// What no-IOMMU mode risks, for the messages that mention it.
pub const NOIOMMU_RISK: &str = "in no-IOMMU mode the device can DMA anywhere in memory (a wrong address from numio or the drive overwrites the kernel), and the kernel taints itself";

/// Without an IOMMU: refused unless `allowed`, and then only where the
/// kernel has no-IOMMU support switched on.
pub(crate) fn noiommu_possible(root: &Path, addr: &str, allowed: bool) -> Result<(), TuneError> {
    if !allowed {
        return Err(vfio_err(
            addr,
            "no IOMMU is on (/sys/class/iommu and /sys/kernel/iommu_groups are empty): turn it on (intel_iommu=on or amd_iommu=on on the kernel command line, VT-d/AMD-Vi in the firmware), or pass --allow-noiommu to use VFIO's no-IOMMU mode, where the device can DMA anywhere in memory",
        ));
    }
    let m = topology::pci::vfio_modules(root)?;
    if !m.noiommu_supported {
        return Err(vfio_err(
            addr,
            format!("--allow-noiommu: this kernel's vfio has no no-IOMMU mode (it was built without CONFIG_VFIO_NOIOMMU: /sys/module/vfio/parameters/enable_unsafe_noiommu_mode is missing{}); use a kernel with CONFIG_VFIO_NOIOMMU=y, or turn an IOMMU on", if m.vfio { "" } else { ", and vfio is not loaded: modprobe vfio" }),
        ));
    }
    if !m.noiommu_enabled {
        return Err(vfio_err(
            addr,
            format!("--allow-noiommu: no-IOMMU mode is off: `modprobe vfio enable_unsafe_noiommu_mode=1` (or write Y to /sys/module/vfio/parameters/enable_unsafe_noiommu_mode); {NOIOMMU_RISK}"),
        ));
    }
    Ok(())
}

/// What uses the namespaces of `f`, in words: a mounted filesystem, a
/// holder (md, dm, LVM), a swap area, a loop device backed by one, an
/// nvmet or LIO export of one, a process holding a namespace, its generic
/// device or the controller's character device (`/dev/nvme0`) open, or a
/// partition table, filesystem, volume or RAID signature. Empty when
/// nothing does. What this misses (a mount in another mount namespace, a
/// user that starts after it looked) [`claim`] catches.
pub(crate) fn in_use(root: &Path, f: &PciFunction) -> Result<Vec<String>, TuneError> {
    let mounts = topology::host::mounts(root).unwrap_or_default();
    let swaps = topology::pci::swaps(root)?;
    let mut found = Vec::new();
    let names = namespace_names(root, f)?;
    for name in &names {
        let Some(d) = block_by_name(root, name)? else {
            continue;
        };
        if let Some(m) = d.dev.and_then(|dev| topology::host::mount_of(&mounts, dev)) {
            found.push(format!("/dev/{name} is mounted on {}", m.mount_point));
        }
        if !d.holders.is_empty() {
            found.push(format!(
                "/dev/{name} is held by {} (md, dm or LVM)",
                d.holders.join(", ")
            ));
        }
    }
    for disk in &f.block_devices {
        if let Some(sig) = signature_of(root, disk) {
            found.push(format!("/dev/{disk} holds {sig}"));
        }
    }
    for name in &names {
        if swaps.iter().any(|s| s == &format!("/dev/{name}")) {
            found.push(format!("/dev/{name} is a swap area in use"));
        }
    }
    for u in topology::pci::loop_backings(root)? {
        if let Some(name) = names.iter().find(|n| names_device(root, &u.path, n)) {
            found.push(format!(
                "/dev/{name} backs the loop device /dev/{} (losetup -d /dev/{} ends that)",
                u.user, u.user
            ));
        }
    }
    for u in topology::pci::configfs_exports(root)? {
        if let Some(name) = names.iter().find(|n| names_device(root, &u.path, n)) {
            found.push(format!("/dev/{name} is exported by {}", u.user));
        }
    }
    let devs: Vec<String> = names
        .iter()
        .map(|n| format!("/dev/{n}"))
        .chain(names.iter().filter_map(|n| generic_of(n)))
        .chain(f.controllers.iter().map(|c| format!("/dev/{c}")))
        .collect();
    for h in topology::pci::open_by(root, |p| devs.iter().any(|d| d == p))? {
        found.push(format!(
            "{} is open in {} (pid {})",
            h.path, h.command, h.pid
        ));
    }
    Ok(found)
}

/// The block devices of `f`'s namespaces: each namespace, then its
/// partitions.
fn namespace_names(root: &Path, f: &PciFunction) -> Result<Vec<String>, TuneError> {
    let mut names = Vec::new();
    for disk in &f.block_devices {
        names.push(disk.clone());
        if let Some(d) = block_by_name(root, disk)? {
            names.extend(d.partitions.iter().map(|p| p.name.clone()));
        }
    }
    Ok(names)
}

/// Whether `path` (as a loop device or configfs names it) is `/dev/NAME`
/// under `root`: the same text, or the same file once links are resolved
/// (`/dev/disk/by-id/...`).
fn names_device(root: &Path, path: &str, name: &str) -> bool {
    let dev = format!("/dev/{name}");
    if path == dev {
        return true;
    }
    let under = |p: &str| std::fs::canonicalize(root.join(p.trim_start_matches('/'))).ok();
    under(path).is_some_and(|a| under(&dev) == Some(a))
}

/// Claims every block device of `f`'s namespaces (each namespace and its
/// partitions) with an exclusive open, just before the unbind: the kernel
/// answers `EBUSY` for a mount in any mount namespace, md, dm, swap or
/// another exclusive opener, which [`in_use`] may not see, and nothing can
/// claim them while the returned files stay open (keep them until the
/// unbind is done). A device node that is missing is passed over.
pub(crate) fn claim(root: &Path, f: &PciFunction) -> Result<Vec<std::fs::File>, TuneError> {
    let mut held = Vec::new();
    let mut busy = Vec::new();
    for name in namespace_names(root, f)? {
        let path = root.join("dev").join(&name);
        match sysapi::block::open_exclusive(&path) {
            Ok(file) => held.push(file),
            Err(e) if e.kind() == std::io::ErrorKind::ResourceBusy => busy.push(format!(
                "/dev/{name} is in use: the kernel refused an exclusive open (EBUSY: mounted, maybe in another mount namespace or container, or held by md, dm, swap or an exclusive opener)"
            )),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => busy.push(format!(
                "/dev/{name} cannot be claimed ({e}), so its users cannot be ruled out"
            )),
        }
    }
    if busy.is_empty() {
        return Ok(held);
    }
    Err(TuneError::InUse {
        device: f.address.clone(),
        found: busy.join("; "),
    })
}

/// The generic device path of namespace `nvmeXnY` (`/dev/ngXnY`).
fn generic_of(name: &str) -> Option<String> {
    let rest = name.strip_prefix("nvme")?;
    (!rest.contains('p')).then(|| format!("/dev/ng{rest}"))
}

/// A signature at the start of `/dev/NAME` under `root`, in words:
/// libblkid's probe, else numio's own; an unreadable device counts (what
/// it holds cannot be ruled out).
fn signature_of(root: &Path, name: &str) -> Option<String> {
    let path = root.join("dev").join(name);
    match sysapi::blkid::probe(&path) {
        Ok(Some(sig)) => return Some(format!("a {sig} signature")),
        Ok(None) => {}
        Err(e) => {
            return Some(format!(
                "data numio cannot rule out ({} cannot be probed: {e})",
                path.display()
            ))
        }
    }
    match signature::read_head(&path.to_string_lossy()) {
        Ok(head) => signature::probe_signature(&head).map(|s| format!("a {s} signature")),
        Err(e) => Some(format!(
            "data numio cannot rule out ({} cannot be read: {e})",
            path.display()
        )),
    }
}
