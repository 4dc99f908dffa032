//! Lookups the planner and the benchmark need: from a device name to its
//! namespace, controllers and NUMA nodes; from a node to its CPUs.

use crate::model::{
    Controller, CpuId, DeviceNode, Namespace, NamespacePath, Node, NodeId, Subsystem, Topology,
};
use crate::parse::nvme_numbers;

/// A block or generic device resolved against the topology.
#[derive(Debug, Clone, PartialEq)]
pub struct DeviceInfo<'a> {
    /// The subsystem of the namespace.
    pub subsystem: &'a Subsystem,
    /// The namespace (its head device for multipath).
    pub namespace: &'a Namespace,
    /// The path, when the name was a path device (`nvme0c1n1`).
    pub path: Option<&'a NamespacePath>,
    /// The controllers I/O to this device can go through.
    pub controllers: Vec<&'a Controller>,
}

impl DeviceInfo<'_> {
    /// Known NUMA nodes of the controllers, ascending, without repeats.
    pub fn nodes(&self) -> Vec<NodeId> {
        let mut nodes: Vec<NodeId> = self
            .controllers
            .iter()
            .filter_map(|c| c.numa_node.node())
            .collect();
        nodes.sort_unstable();
        nodes.dedup();
        nodes
    }

    /// Whether any controller reports `numa_node = -1`.
    pub fn has_unknown_node(&self) -> bool {
        self.controllers
            .iter()
            .any(|c| c.numa_node == DeviceNode::Unknown)
    }
}

/// `/dev/nvme0n1p2` → `nvme0n1`; `/dev/ng0n1` → `ng0n1`.
fn base_name(name: &str) -> &str {
    let name = name.strip_prefix("/dev/").unwrap_or(name);
    if let Some(pos) = name.rfind('p') {
        let (head, tail) = (&name[..pos], &name[pos + 1..]);
        let partition = !tail.is_empty() && tail.bytes().all(|b| b.is_ascii_digit());
        if partition && nvme_numbers(head, "nvme", "n").is_some() {
            return head;
        }
    }
    name
}

impl Topology {
    /// The controller named `name` (`nvme0`).
    pub fn controller(&self, name: &str) -> Option<&Controller> {
        self.controllers.iter().find(|c| c.name == name)
    }

    /// The node `id`.
    pub fn node(&self, id: NodeId) -> Option<&Node> {
        self.nodes.iter().find(|n| n.id == id)
    }

    /// The online CPUs of node `id`, ascending.
    pub fn online_cpus_of(&self, id: NodeId) -> Vec<CpuId> {
        self.cpus
            .iter()
            .filter(|c| c.online && c.node == Some(id))
            .map(|c| c.id)
            .collect()
    }

    /// Resolves a device name: `nvme0n1`, `/dev/nvme0n1`, a partition
    /// `nvme0n1p1`, a generic device `ng0n1`, or a path device `nvme0c1n1`.
    pub fn find_device(&self, name: &str) -> Option<DeviceInfo<'_>> {
        let name = base_name(name);
        for sub in &self.subsystems {
            for ns in &sub.namespaces {
                let path = ns.paths.iter().find(|p| p.device == name);
                let hit = ns.block_device == name
                    || ns.generic_device.as_deref() == Some(name)
                    || path.is_some();
                if !hit {
                    continue;
                }
                let names: Vec<&str> = match path {
                    Some(p) => vec![p.controller.as_str()],
                    None if ns.controller.is_some() => {
                        ns.controller.iter().map(String::as_str).collect()
                    }
                    // A head whose paths were not seen: every controller of
                    // the subsystem can reach a shared namespace.
                    None if ns.paths.is_empty() => {
                        sub.controllers.iter().map(String::as_str).collect()
                    }
                    None => ns.paths.iter().map(|p| p.controller.as_str()).collect(),
                };
                let controllers = names.iter().filter_map(|n| self.controller(n)).collect();
                return Some(DeviceInfo {
                    subsystem: sub,
                    namespace: ns,
                    path,
                    controllers,
                });
            }
        }
        None
    }

    /// Every block device name of every namespace, in subsystem order.
    pub fn block_devices(&self) -> Vec<&str> {
        self.subsystems
            .iter()
            .flat_map(|s| s.namespaces.iter().map(|n| n.block_device.as_str()))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::base_name;

    #[test]
    fn device_names_lose_dev_and_partition() {
        assert_eq!(base_name("/dev/nvme0n1p2"), "nvme0n1");
        assert_eq!(base_name("nvme10n1"), "nvme10n1");
        assert_eq!(base_name("/dev/ng0n1"), "ng0n1");
        assert_eq!(base_name("nvme0c1n1"), "nvme0c1n1");
    }
}
