//! NVMe namespaces as devices: namespace ↔ block device ↔ generic device,
//! the multipath head of a path device, and the controllers (with their
//! NUMA nodes) I/O to a namespace goes through.

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::block::{read_block, BlockDevice};
use super::{base_name, reader, DevNum};
use crate::error::TopologyError;
use crate::model::{DeviceNode, NodeId};
use crate::parse::{nvme_numbers, parse_num};
use crate::reader::Reader;
use crate::relpath::{join, parent};

/// One NVMe controller and its node as the kernel reports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ControllerNode {
    /// Kernel name (`nvme0`).
    pub name: String,
    /// `numa_node` of the controller (or of its PCI device).
    pub numa_node: DeviceNode,
}

/// The devices of one NVMe namespace.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NvmeDevices {
    /// The block device `/dev` has: a multipath head, or a namespace
    /// without multipath (`nvme0n1`).
    pub block_device: String,
    /// Its generic character device (`ng0n1`), when the kernel made one.
    pub generic_device: Option<String>,
    /// Namespace id.
    pub nsid: Option<u32>,
    /// Whether `block_device` is a multipath head.
    pub multipath: bool,
    /// The controllers I/O to it goes through: the owner of a namespace
    /// without multipath, the controllers with a path to a head.
    pub controllers: Vec<ControllerNode>,
}

/// An NVMe generic character device and its namespace's block device.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GenericDevice {
    /// Kernel name (`ng0n1`).
    pub name: String,
    /// Namespace id (as asked for).
    pub nsid: u32,
    /// The namespace's block device (the head for multipath): size,
    /// logical block size, largest transfer and write safety come from it.
    pub block: BlockDevice,
}

/// What tells a live NVMe controller apart from a later one that reuses
/// its name: its controller id, its subsystem's NQN and its address (a
/// fabrics controller's `traddr=…,trsvcid=…`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ControllerIdentity {
    /// `cntlid`, when readable.
    pub cntlid: Option<u32>,
    /// `subsysnqn`.
    pub subsysnqn: String,
    /// `address`.
    pub address: String,
    /// The inode of its sysfs directory: kernfs numbers its nodes once
    /// per boot, so a controller deleted and made again (a target restart
    /// reconnected by nvme-cli: the same name, cntlid, subsystem and
    /// address) has another. `None` when it cannot be read.
    pub instance_id: Option<u64>,
}

/// The identity of controller `name` (`nvme3`) under `root`; `None` when
/// there is no such controller (or it has no `address`: it is going).
pub fn controller_identity(
    root: &Path,
    name: &str,
) -> Result<Option<ControllerIdentity>, TopologyError> {
    let mut r = reader(root)?;
    let dir = format!("sys/class/nvme/{name}");
    let Some(address) = r.read_trimmed(&join(&dir, "address")) else {
        return Ok(None);
    };
    Ok(Some(ControllerIdentity {
        cntlid: r.parse(&join(&dir, "cntlid"), parse_num::<u32>),
        subsysnqn: r.read_trimmed(&join(&dir, "subsysnqn")).unwrap_or_default(),
        address,
        instance_id: crate::source::in_root(root, &dir, true)
            .and_then(std::fs::metadata)
            .ok()
            .map(|m| std::os::unix::fs::MetadataExt::ino(&m)),
    }))
}

/// `nvme0n1` for a multipath path device `nvme0c1n1`; `None` for other
/// names. Pure: the kernel names a head `nvme<subsys>n<ns>` and its paths
/// `nvme<subsys>c<ctrl>n<ns>`.
pub fn head_name(path_device: &str) -> Option<String> {
    let n = nvme_numbers(path_device, "nvme", "cn")?;
    Some(format!("nvme{}n{}", n[0], n[2]))
}

/// The multipath head of path device `path_device` (`nvme0c1n1` →
/// `nvme0n1`), when that head exists under `root`.
pub fn multipath_head(root: &Path, path_device: &str) -> Result<Option<String>, TopologyError> {
    let mut r = reader(root)?;
    Ok(existing_head(&mut r, path_device).map(|(name, _)| name))
}

/// The head of path device `name` and its sysfs directory, when `name` is
/// a path device and the head is a multipath head (a child of its
/// subsystem, not a namespace of a controller that happens to share the
/// name).
fn existing_head(r: &mut Reader, name: &str) -> Option<(String, String)> {
    let head = head_name(name)?;
    let dir = r.resolve(&format!("sys/block/{head}"))?;
    // The parent is a subsystem's sysfs directory (`nvme-subsys0`).
    base_name(parent(&dir))
        .strip_prefix("nvme-subsys")
        .is_some_and(|n| n.bytes().all(|b| b.is_ascii_digit()))
        .then_some((head, dir))
}

/// The namespace of block device `name` (`nvme0n1`; a path device
/// `nvme0c1n1` answers for its head); `None` when it is not an NVMe
/// namespace of `root`.
pub fn nvme_namespace(root: &Path, name: &str) -> Result<Option<NvmeDevices>, TopologyError> {
    let mut r = reader(root)?;
    Ok(namespace_of(&mut r, name))
}

pub(crate) fn namespace_of(r: &mut Reader, name: &str) -> Option<NvmeDevices> {
    if let Some((head, _)) = existing_head(r, name) {
        return namespace_of(r, &head);
    }
    let dir = r.resolve(&format!("sys/block/{name}"))?;
    let owner = parent(&dir).to_string();
    let owner_name = base_name(&owner).to_string();
    let (multipath, controllers) = if nvme_numbers(&owner_name, "nvme", "").is_some() {
        (false, vec![owner_name.clone()])
    } else if owner_name == "block" {
        // Linux 4.0 and older: `<pci>/block/nvmeXnY`, controller nvmeX.
        let x = nvme_numbers(name, "nvme", "n")?[0];
        (false, vec![format!("nvme{x}")])
    } else if let Some(sub) = nvme_numbers(&owner_name, "nvme-subsys", "") {
        (true, head_controllers(r, &owner, sub[0], name))
    } else if let Some(n) = nvme_numbers(name, "nvme", "cn") {
        (false, vec![format!("nvme{}", n[1])])
    } else {
        return None;
    };
    let generic = name.replacen("nvme", "ng", 1);
    let generic_device = (r.exists(&join(&owner, &generic))
        || r.exists(&format!("sys/class/nvme-generic/{generic}")))
    .then_some(generic);
    Some(NvmeDevices {
        block_device: name.to_string(),
        generic_device,
        nsid: r.parse(&join(&dir, "nsid"), parse_num::<u32>),
        multipath,
        controllers: controllers
            .into_iter()
            .map(|c| ControllerNode {
                numa_node: controller_node(r, &c),
                name: c,
            })
            .collect(),
    })
}

/// The controllers of subsystem directory `sub_dir` that have a path to
/// head `head` (every controller of the subsystem where no path is seen).
fn head_controllers(r: &mut Reader, sub_dir: &str, subsys: u32, head: &str) -> Vec<String> {
    let Some(ns) = nvme_numbers(head, "nvme", "n").map(|n| n[1]) else {
        return Vec::new();
    };
    let mut all: Vec<String> = r
        .list(sub_dir)
        .unwrap_or_default()
        .into_iter()
        .filter(|e| nvme_numbers(e, "nvme", "").is_some())
        .collect();
    all.sort_by_key(|c| nvme_numbers(c, "nvme", "").unwrap_or_default());
    let with_path: Vec<String> = all
        .iter()
        .filter(|c| {
            let instance = nvme_numbers(c, "nvme", "").unwrap_or_default()[0];
            r.exists(&format!("sys/class/nvme/{c}/nvme{subsys}c{instance}n{ns}"))
        })
        .cloned()
        .collect();
    if with_path.is_empty() {
        all
    } else {
        with_path
    }
}

/// A controller's `numa_node`, else its PCI device's; `-1` or missing is
/// [`DeviceNode::Unknown`]. Linux 4.0 and older keep controllers in the
/// `misc` class, as children of their PCI device.
pub(crate) fn controller_node(r: &mut Reader, controller: &str) -> DeviceNode {
    let misc = format!("sys/class/misc/{controller}");
    let Some(dir) = r
        .resolve(&format!("sys/class/nvme/{controller}"))
        .or_else(|| r.resolve(&misc))
    else {
        return DeviceNode::Unknown;
    };
    let mut node = r.parse(&join(&dir, "numa_node"), parse_num::<i64>);
    if node.is_none() {
        let pci = if base_name(parent(&dir)) == "misc" {
            Some(parent(parent(&dir)).to_string())
        } else {
            r.resolve(&join(&dir, "device"))
        };
        if let Some(pci) = pci {
            node = r.parse(&join(&pci, "numa_node"), parse_num::<i64>);
        }
    }
    match node {
        Some(n) if n >= 0 => DeviceNode::Known(NodeId(n as u32)),
        _ => DeviceNode::Unknown,
    }
}

/// The name of NVMe generic character device `dev` (`ng0n1`), checked
/// against its class without opening anything: the question to ask before
/// opening a character device the user named (opening some, such as a tape,
/// has side effects).
///
/// Errors: no `sys/dev/char/MAJ:MIN`, or a character device of another class.
pub fn generic_name(root: &Path, dev: DevNum) -> Result<String, TopologyError> {
    let mut r = reader(root)?;
    generic_dir(&mut r, dev).map(|dir| base_name(&dir).to_string())
}

/// The sysfs directory of NVMe generic device `dev`.
fn generic_dir(r: &mut Reader, dev: DevNum) -> Result<String, TopologyError> {
    let link = format!("sys/dev/char/{dev}");
    let dir = r
        .resolve(&link)
        .filter(|d| r.exists(d))
        .ok_or_else(|| TopologyError::NoDevice {
            kind: "character",
            dev: dev.to_string(),
            path: r.abs(&link),
        })?;
    let class = r
        .resolve(&join(&dir, "subsystem"))
        .map(|c| base_name(&c).to_string())
        .unwrap_or_default();
    if class != "nvme-generic" {
        return Err(TopologyError::NotNvmeGeneric {
            dev: dev.to_string(),
            path: r.abs(&dir),
            class,
        });
    }
    Ok(dir)
}

/// The NVMe generic character device `dev` (`/dev/ngXnY`) and the block
/// device of its namespace `nsid` (as `NVME_IOCTL_ID` tells it): the
/// sibling under the same controller or subsystem whose `nsid` matches; a
/// hidden path device (`nvme0c1n1`) gives way to its head, the device with
/// a node under `/dev`.
///
/// Errors: those of [`generic_name`], or no block device of that namespace.
pub fn generic_device(root: &Path, dev: DevNum, nsid: u32) -> Result<GenericDevice, TopologyError> {
    let mut r = reader(root)?;
    let dir = generic_dir(&mut r, dev)?;
    let owner = parent(&dir).to_string();
    let mut found: Vec<String> = r
        .list(&owner)
        .unwrap_or_default()
        .into_iter()
        .filter(|e| e.starts_with("nvme"))
        .collect();
    found.retain(|e| r.parse(&join(&join(&owner, e), "nsid"), parse_num::<u32>) == Some(nsid));
    found.sort();
    let Some(name) = found.into_iter().next() else {
        return Err(TopologyError::NoNamespaceBlockDevice {
            nsid,
            dir: r.abs(&owner),
        });
    };
    let head = existing_head(&mut r, &name).map(|(_, dir)| dir);
    let block_dir = head.unwrap_or_else(|| join(&owner, &name));
    Ok(GenericDevice {
        name: base_name(&dir).to_string(),
        nsid,
        block: read_block(&mut r, &block_dir),
    })
}

#[cfg(test)]
mod tests {
    use super::head_name;

    #[test]
    fn path_names_map_to_their_head() {
        assert_eq!(head_name("nvme1c4n1").as_deref(), Some("nvme1n1"));
        assert_eq!(head_name("nvme0n1"), None);
        assert_eq!(head_name("nvme0c1"), None);
        assert_eq!(head_name("nvmexcyn1"), None);
    }
}
