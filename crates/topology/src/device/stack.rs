//! What a block device or a file sits on: down through partitions and
//! device-mapper / md slaves to the disks, and the NUMA node that gives.

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::block::{read_block, resolve_block, BlockDevice, BlockKind};
use super::nvme::{namespace_of, NvmeDevices};
use super::{reader, stat_path, DevNum, PathDevice};
use crate::error::TopologyError;
use crate::model::{DeviceNode, NodeId};
use crate::reader::Reader;
use crate::relpath::{join, parent};

/// Deepest stack followed (dm over md over partitions is 3), against loops.
const STACK_DEPTH_MAX: usize = 16;

/// A block device and everything beneath it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeviceStack {
    /// The device asked about.
    pub device: BlockDevice,
    /// Every device met on the way down, top first, depth first, each
    /// described (`nvme0n1p2 (partition 2 of nvme0n1)`, `nvme0n1`).
    pub layers: Vec<String>,
    /// The NVMe namespaces at the bottom, in the order met, each once.
    pub namespaces: Vec<NvmeDevices>,
    /// The disks at the bottom that are not NVMe (`sda`, `loop0`, `zram0`).
    pub others: Vec<String>,
}

/// The NUMA node of a device stack (or a file on one).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StackNode {
    /// Every NVMe controller beneath it sits on this node.
    Node(NodeId),
    /// Its NVMe controllers sit on these nodes (ascending): a stack over
    /// several nodes has no one node.
    Several(Vec<NodeId>),
    /// These NVMe controllers beneath it report `numa_node = -1`.
    Unknown {
        /// The controllers that do not know their node.
        controllers: Vec<String>,
    },
    /// Not (only) NVMe: these disks beneath it are something else, so no
    /// NVMe controller decides its node (empty: a file on a filesystem
    /// without a block device, such as tmpfs).
    NotNvme {
        /// The non-NVMe disks.
        devices: Vec<String>,
    },
}

impl StackNode {
    /// The one node, when there is one.
    pub fn node(&self) -> Option<NodeId> {
        match self {
            StackNode::Node(n) => Some(*n),
            _ => None,
        }
    }
}

impl DeviceStack {
    /// The node its NVMe controllers give: one node, several, unknown (a
    /// controller reports -1), or not NVMe (a disk beneath it is something
    /// else, or there is no NVMe namespace at all).
    pub fn node(&self) -> StackNode {
        if !self.others.is_empty() || self.namespaces.is_empty() {
            return StackNode::NotNvme {
                devices: self.others.clone(),
            };
        }
        let controllers = self.namespaces.iter().flat_map(|n| &n.controllers);
        let mut unknown: Vec<String> = controllers
            .clone()
            .filter(|c| c.numa_node == DeviceNode::Unknown)
            .map(|c| c.name.clone())
            .collect();
        if !unknown.is_empty() {
            unknown.sort();
            unknown.dedup();
            return StackNode::Unknown {
                controllers: unknown,
            };
        }
        let mut nodes: Vec<NodeId> = controllers.filter_map(|c| c.numa_node.node()).collect();
        nodes.sort_unstable();
        nodes.dedup();
        match nodes.as_slice() {
            [one] => StackNode::Node(*one),
            [] => StackNode::Unknown {
                controllers: Vec::new(),
            },
            _ => StackNode::Several(nodes),
        }
    }

    /// The stack in a few words: the top alone for a bare namespace, else
    /// `dm-0 (device-mapper vg0-data) over nvme0n1, nvme1n1`.
    pub fn describe(&self) -> String {
        let top = self.device.describe();
        let bottoms: Vec<&str> = self
            .namespaces
            .iter()
            .map(|n| n.block_device.as_str())
            .chain(self.others.iter().map(String::as_str))
            .collect();
        // A bare disk, or a partition whose description names its disk.
        if self.layers.len() <= 1 || (self.device.partition.is_some() && bottoms.len() == 1) {
            return top;
        }
        format!("{top} over {}", bottoms.join(", "))
    }

    /// Whether the device is an NVMe namespace, a path device or a
    /// partition of one: resolvable by its name alone, with nothing
    /// stacked in between.
    pub fn is_plain_nvme(&self) -> bool {
        matches!(self.device.kind, BlockKind::Nvme | BlockKind::NvmePath)
    }
}

/// Block device `dev` and everything beneath it, under `root`.
///
/// Errors: `root` missing, or no `sys/dev/block/MAJ:MIN` there.
pub fn block_stack(root: &Path, dev: DevNum) -> Result<DeviceStack, TopologyError> {
    let mut r = reader(root)?;
    let dir = resolve_block(&mut r, dev)?;
    let mut stack = DeviceStack {
        device: read_block(&mut r, &dir),
        layers: Vec::new(),
        namespaces: Vec::new(),
        others: Vec::new(),
    };
    walk(&mut r, &dir, 0, &mut stack);
    Ok(stack)
}

fn walk(r: &mut Reader, dir: &str, depth: usize, out: &mut DeviceStack) {
    let b = read_block(r, dir);
    out.layers.push(b.describe());
    if depth >= STACK_DEPTH_MAX {
        out.others
            .push(format!("{} (deeper than {STACK_DEPTH_MAX} layers)", b.name));
        return;
    }
    if b.partition.is_some() {
        return walk(r, parent(dir), depth + 1, out);
    }
    if !b.slaves.is_empty() {
        for slave in &b.slaves {
            match r.resolve(&join(&join(dir, "slaves"), slave)) {
                Some(sdir) => walk(r, &sdir, depth + 1, out),
                None => out.others.push(slave.clone()),
            }
        }
        return;
    }
    let nvme = matches!(b.kind, BlockKind::Nvme | BlockKind::NvmePath);
    match nvme.then(|| namespace_of(r, &b.name)).flatten() {
        Some(ns) => {
            if !out
                .namespaces
                .iter()
                .any(|n| n.block_device == ns.block_device)
            {
                out.namespaces.push(ns);
            }
        }
        None => {
            if !out.others.contains(&b.name) {
                out.others.push(b.name);
            }
        }
    }
}

/// The node of `path` under `root`: a block device's own stack, or the
/// stack of the device the filesystem of a file or directory sits on. A
/// filesystem without a block device (tmpfs, btrfs, overlay, NFS: an
/// anonymous `st_dev`) is [`StackNode::NotNvme`] with no devices.
///
/// The stack is `None` for such a filesystem.
///
/// Errors: `path` cannot be stat'ed, is a character device or something
/// else that is not on a block device, or its device is not under `root`.
pub fn node_of_path(
    root: &Path,
    path: &Path,
) -> Result<(Option<DeviceStack>, StackNode), TopologyError> {
    let dev = match stat_path(path).map_err(|source| TopologyError::Stat {
        path: path.to_path_buf(),
        source,
    })? {
        PathDevice::Block(dev) => dev,
        PathDevice::File { on } if !on.is_anonymous() => on,
        PathDevice::File { .. } => {
            let node = StackNode::NotNvme {
                devices: Vec::new(),
            };
            return Ok((None, node));
        }
        PathDevice::Char(_) | PathDevice::Other => {
            return Err(TopologyError::NotOnBlockDevice {
                path: path.to_path_buf(),
            })
        }
    };
    let stack = block_stack(root, dev)?;
    let node = stack.node();
    Ok((Some(stack), node))
}
