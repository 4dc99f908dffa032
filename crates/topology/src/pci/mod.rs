//! PCI functions as VFIO sees them: one function's facts by address
//! (class, ids, driver, `driver_override`, node, IOMMU group and the
//! group's other members, its NVMe controllers and their namespaces' block
//! devices), and the machine's side ([`host`]): whether an IOMMU is on,
//! the VFIO modules, hugepages per node, and which processes hold a file
//! open (`/dev/vfio/N`, a namespace's block device).
//!
//! Each query takes a sysfs/procfs root like the rest of this crate, so
//! `tune::vfio` (which binds and gives back) and `numio vfio status` are
//! tested on fixture trees.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::device::{base_name, reader};
use crate::error::{ParseError, TopologyError};
use crate::parse::nvme_numbers;
use crate::reader::Reader;
use crate::relpath::join;

pub mod fake;
pub mod host;
#[cfg(test)]
mod tests;

pub use host::{
    configfs_exports, hugepages, iommu_enabled, loop_backings, open_by, swaps, vfio_facts,
    vfio_modules, Holder, NodeHugepages, PathUser, VfioFacts, VfioModules,
};

/// `sys/bus/pci/devices`, relative to the root.
pub const DEVICES_DIR: &str = "sys/bus/pci/devices";
/// `sys/bus/pci/drivers`, relative to the root.
pub const DRIVERS_DIR: &str = "sys/bus/pci/drivers";
/// The PCI class of an NVMe controller (mass storage, NVM, NVMe).
pub const CLASS_NVME: u32 = 0x01_08_02;
/// The driver name of VFIO's PCI driver.
pub const VFIO_PCI: &str = "vfio-pci";

/// One PCI function.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PciFunction {
    /// `0000:02:00.0`.
    pub address: String,
    /// `class` (`0x010802` for NVMe).
    pub class: Option<u32>,
    /// `vendor`.
    pub vendor: Option<u16>,
    /// `device`.
    pub device: Option<u16>,
    /// The driver bound now (the `driver` link's name), `None` when unbound.
    pub driver: Option<String>,
    /// `driver_override`; `None` when unset (the kernel writes `(null)`).
    pub driver_override: Option<String>,
    /// `numa_node`; `None` for -1 or missing.
    pub numa_node: Option<u32>,
    /// The IOMMU group (the `iommu_group` link's number); `None` without
    /// an IOMMU (a no-IOMMU VFIO group has no such link either until bound).
    pub iommu_group: Option<u32>,
    /// The group's other members.
    pub group_peers: Vec<GroupMember>,
    /// Its NVMe controllers (`nvme/nvmeN`), while the nvme driver has it.
    pub controllers: Vec<String>,
    /// The block devices of those controllers' namespaces (a multipath
    /// head for a path device), sorted.
    pub block_devices: Vec<String>,
    /// VFIO's device character device (`vfio-dev/vfioN`) while vfio-pci
    /// has it, on kernels with the cdev interface.
    pub vfio_cdev: Option<String>,
}

/// Another function of an IOMMU group.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GroupMember {
    /// Its address.
    pub address: String,
    /// Its class.
    pub class: Option<u32>,
    /// Its driver, `None` when unbound.
    pub driver: Option<String>,
}

impl GroupMember {
    /// Whether it is a PCI bridge (class 0x0604xx), which may share a
    /// group with a device VFIO takes.
    pub fn is_bridge(&self) -> bool {
        self.class.is_some_and(|c| c >> 8 == 0x06_04)
    }

    /// Whether it keeps the group from VFIO: a device bound to a driver
    /// other than vfio-pci (bridges and unbound devices do not).
    pub fn blocks_vfio(&self) -> bool {
        !self.is_bridge() && self.driver.as_deref().is_some_and(|d| d != VFIO_PCI)
    }
}

impl PciFunction {
    /// Whether it is an NVMe controller.
    pub fn is_nvme(&self) -> bool {
        self.class == Some(CLASS_NVME)
    }

    /// Whether vfio-pci has it.
    pub fn on_vfio(&self) -> bool {
        self.driver.as_deref() == Some(VFIO_PCI)
    }
}

/// A PCI address in the kernel's form (`0000:02:00.0`) from what a user
/// writes: `pci:0000:02:00.0`, `0000:02:00.0` or the short `02:00.0`
/// (domain 0000). Hex digits are lower-cased. `None` when it is none of
/// these.
pub fn parse_address(input: &str) -> Option<String> {
    let text = input.trim();
    let text = text.strip_prefix("pci:").unwrap_or(text);
    let full = if text.matches(':').count() == 1 {
        format!("0000:{text}")
    } else {
        text.to_string()
    };
    let (domain, rest) = full.split_once(':')?;
    let (bus, rest) = rest.split_once(':')?;
    let (slot, func) = rest.split_once('.')?;
    let hex = |s: &str, len: usize| s.len() == len && s.bytes().all(|b| b.is_ascii_hexdigit());
    let func_ok = func.len() == 1 && func.bytes().all(|b| (b'0'..=b'7').contains(&b));
    (hex(domain, 4) && hex(bus, 2) && hex(slot, 2) && func_ok).then(|| full.to_ascii_lowercase())
}

/// The facts of function `address` (kernel form) under `root`; `None`
/// when there is no such function.
pub fn pci_function(root: &Path, address: &str) -> Result<Option<PciFunction>, TopologyError> {
    let mut r = reader(root)?;
    Ok(read_function(&mut r, address))
}

/// The addresses of every NVMe controller function under `root`, sorted.
pub fn nvme_functions(root: &Path) -> Result<Vec<String>, TopologyError> {
    let mut r = reader(root)?;
    let mut out: Vec<String> = r
        .list(DEVICES_DIR)
        .unwrap_or_default()
        .into_iter()
        .filter(|a| read_hex(&mut r, &join(&join(DEVICES_DIR, a), "class")) == Some(CLASS_NVME))
        .collect();
    out.sort();
    Ok(out)
}

fn read_hex(r: &mut Reader, rel: &str) -> Option<u32> {
    r.parse(rel, |t| {
        let t = t.trim().trim_end_matches('\0');
        u32::from_str_radix(t.trim_start_matches("0x"), 16).map_err(|source| ParseError::NotHex {
            text: t.to_string(),
            source,
        })
    })
}

/// The name a link leads to (`driver` → `nvme`), `None` when absent.
fn link_name(r: &mut Reader, rel: &str) -> Option<String> {
    r.link_target(rel).map(|t| base_name(&t).to_string())
}

pub(crate) fn read_function(r: &mut Reader, address: &str) -> Option<PciFunction> {
    if address.is_empty() || address.contains('/') || address.starts_with('.') {
        return None;
    }
    let dir = join(DEVICES_DIR, address);
    if !r.exists(&dir) {
        return None;
    }
    let at = |name: &str| join(&dir, name);
    let iommu_group = link_name(r, &at("iommu_group")).and_then(|g| g.parse().ok());
    let group_peers = iommu_group
        .map(|g| group_members(r, g, address))
        .unwrap_or_default();
    let controllers = controllers_of(r, &dir);
    let mut block_devices: Vec<String> = controllers
        .iter()
        .flat_map(|c| namespace_blocks(r, &join(&join(&dir, "nvme"), c)))
        .collect();
    block_devices.sort();
    block_devices.dedup();
    Some(PciFunction {
        address: address.to_string(),
        class: read_hex(r, &at("class")),
        vendor: read_hex(r, &at("vendor")).and_then(|v| u16::try_from(v).ok()),
        device: read_hex(r, &at("device")).and_then(|v| u16::try_from(v).ok()),
        driver: link_name(r, &at("driver")),
        driver_override: r
            .read_trimmed(&at("driver_override"))
            .filter(|o| !o.is_empty() && o != "(null)"),
        numa_node: r
            .read_trimmed(&at("numa_node"))
            .and_then(|n| n.parse::<u32>().ok()),
        iommu_group,
        group_peers,
        controllers,
        block_devices,
        vfio_cdev: r
            .list(&at("vfio-dev"))
            .and_then(|v| v.into_iter().find(|n| n.starts_with("vfio"))),
    })
}

fn group_members(r: &mut Reader, group: u32, except: &str) -> Vec<GroupMember> {
    let dir = format!("sys/kernel/iommu_groups/{group}/devices");
    r.list(&dir)
        .unwrap_or_default()
        .into_iter()
        .filter(|a| a != except)
        .map(|address| {
            let at = |name: &str| join(&join(DEVICES_DIR, &address), name);
            GroupMember {
                class: read_hex(r, &at("class")),
                driver: link_name(r, &at("driver")),
                address,
            }
        })
        .collect()
}

/// The `nvmeN` entries of a function's `nvme/` directory, by number.
fn controllers_of(r: &mut Reader, dir: &str) -> Vec<String> {
    let mut names: Vec<String> = r
        .list(&join(dir, "nvme"))
        .unwrap_or_default()
        .into_iter()
        .filter(|n| nvme_numbers(n, "nvme", "").is_some())
        .collect();
    names.sort_by_key(|n| nvme_numbers(n, "nvme", ""));
    names
}

/// The block devices of a controller's namespaces: `nvmeXnY` entries as
/// they are, `nvmeXcZnY` path devices as their multipath head.
fn namespace_blocks(r: &mut Reader, ctrl_dir: &str) -> Vec<String> {
    r.list(ctrl_dir)
        .unwrap_or_default()
        .into_iter()
        .filter_map(|n| {
            if nvme_numbers(&n, "nvme", "n").is_some() {
                Some(n)
            } else {
                crate::device::head_name(&n)
            }
        })
        .collect()
}
