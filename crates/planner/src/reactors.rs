//! Where `numio serve`'s reactors run: per port, on the NUMA node of the
//! NIC holding the listener's address ([`by_interface`]); else on the node
//! the namespaces' backing devices share ([`for_backings`]); and whether
//! CPUs the user named are ones this process may run on
//! ([`check_allowed`]). The serving itself is `nvmf`'s; this module only
//! reads topology, from the root it is given, so it is tested on fixtures.
//!
//! A listener on loopback, a virtual interface, a NIC of node -1 or the
//! unspecified address has no node: such a port is served by every
//! reactor, and when no port has a node the reactors follow the backings.

use std::collections::BTreeSet;
use std::net::{IpAddr, SocketAddr};
use std::path::Path;

use topology::device::StackNode;
use topology::{CpuList, NodeId};

/// Most reactors per port placed on its NIC's node.
pub const REACTORS_PER_PORT: usize = 2;

/// A CPU named for a reactor that this process may not run on: the
/// reactor would run unpinned.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("CPU {cpu} is not one this process may run on (allowed: {allowed}); pick CPUs from `numio topo`")]
pub struct NotAllowed {
    /// The CPU named.
    pub cpu: usize,
    /// The CPUs this process may run on.
    pub allowed: CpuList,
}

/// Refuses reactor CPUs this process may not run on, as `numio bench`
/// refuses job CPUs.
pub fn check_allowed(cpus: &[usize], allowed: &[u32]) -> Result<(), NotAllowed> {
    match cpus
        .iter()
        .find(|&&c| !allowed.iter().any(|&a| a as usize == c))
    {
        Some(&cpu) => Err(NotAllowed {
            cpu,
            allowed: CpuList::from_ids(allowed.iter().copied()),
        }),
        None => Ok(()),
    }
}

/// Reactor CPUs for namespaces backed by `backings` (files or devices; a
/// RAM namespace has none): the CPUs of the backings' shared NUMA node
/// under `root` that this process may use (at most `most`), else any it
/// may use (at most as many); and that node.
pub fn for_backings(
    root: &Path,
    backings: &[&Path],
    allowed: &[u32],
    most: usize,
) -> (Vec<usize>, Option<NodeId>) {
    let nodes: Vec<StackNode> = backings
        .iter()
        .filter_map(|b| topology::device::node_of_path(root, b).ok())
        .map(|(_, node)| node)
        .collect();
    pick(
        &nodes,
        |n| topology::host::node_cpus(root, n).ok(),
        allowed,
        most,
    )
}

/// [`for_backings`] over values: the backings' nodes (those without one are
/// left out; one spanning several nodes counts all of them), a node's CPUs,
/// the CPUs allowed, and the most reactors.
pub fn pick(
    backings: &[StackNode],
    node_cpus: impl Fn(NodeId) -> Option<CpuList>,
    allowed: &[u32],
    most: usize,
) -> (Vec<usize>, Option<NodeId>) {
    let nodes: BTreeSet<NodeId> = backings
        .iter()
        .flat_map(|b| match b {
            StackNode::Node(n) => vec![*n],
            StackNode::Several(ns) => ns.clone(),
            StackNode::Unknown { .. } | StackNode::NotNvme { .. } => Vec::new(),
        })
        .collect();
    let any = || {
        let cpus = allowed.iter().take(most);
        (cpus.map(|&c| c as usize).collect(), None)
    };
    let [node] = nodes.into_iter().collect::<Vec<_>>()[..] else {
        return any();
    };
    let Some(list) = node_cpus(node) else {
        return any();
    };
    let cpus: Vec<usize> = allowed
        .iter()
        .filter(|&&c| list.contains(c))
        .take(most)
        .map(|&c| c as usize)
        .collect();
    if cpus.is_empty() {
        return any();
    }
    (cpus, Some(node))
}

/// Where one port's reactors were placed, for the start-up lines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PortNode {
    /// The listener.
    pub addr: SocketAddr,
    /// The interface holding its address.
    pub interface: Option<String>,
    /// That interface's node.
    pub node: Option<NodeId>,
}

/// Each listener's interface and node, and the CPUs of that node this
/// process may use (at most [`REACTORS_PER_PORT`]; empty without a node):
/// the `port_cpus` that put every port on its NIC's node. `iface_of` names
/// the interface holding an address (live: [`sysapi::net::interface_of`]).
pub fn by_interface(
    root: &Path,
    listen: &[SocketAddr],
    allowed: &[u32],
    iface_of: impl Fn(IpAddr) -> Option<String>,
) -> (Vec<Vec<usize>>, Vec<PortNode>) {
    let mut cpus = Vec::new();
    let mut nodes = Vec::new();
    for addr in listen {
        let interface = iface_of(addr.ip());
        let node = interface
            .as_deref()
            .and_then(|i| topology::host::interface_node(root, i).ok().flatten());
        let on_node: Vec<usize> = node
            .and_then(|n| topology::host::node_cpus(root, n).ok())
            .map(|list| {
                allowed
                    .iter()
                    .filter(|c| list.ids().contains(c))
                    .take(REACTORS_PER_PORT)
                    .map(|&c| c as usize)
                    .collect()
            })
            .unwrap_or_default();
        // A node none of whose CPUs this process may use places nothing.
        let node = node.filter(|_| !on_node.is_empty());
        cpus.push(on_node);
        nodes.push(PortNode {
            addr: *addr,
            interface,
            node,
        });
    }
    if nodes.iter().all(|p| p.node.is_none()) {
        return (Vec::new(), nodes);
    }
    (cpus, nodes)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A sysfs root: interface ens1 on node 1 (CPUs 2-3), ens0 on node 0
    /// (CPUs 0-1), lo with no device.
    fn root() -> std::path::PathBuf {
        let root = std::env::temp_dir().join(format!("numio-reactors-{}", std::process::id()));
        for (n, cpus) in [(0, "0-1"), (1, "2-3")] {
            let d = root.join(format!("sys/devices/system/node/node{n}"));
            std::fs::create_dir_all(&d).unwrap();
            std::fs::write(d.join("cpulist"), format!("{cpus}\n")).unwrap();
        }
        for (i, n) in [("ens0", "0"), ("ens1", "1")] {
            let d = root.join(format!("sys/class/net/{i}/device"));
            std::fs::create_dir_all(&d).unwrap();
            std::fs::write(d.join("numa_node"), format!("{n}\n")).unwrap();
        }
        std::fs::create_dir_all(root.join("sys/class/net/lo")).unwrap();
        root
    }

    fn iface(ip: IpAddr) -> Option<String> {
        match ip.to_string().as_str() {
            "10.0.0.1" => Some("ens1".into()),
            "10.0.1.1" => Some("ens0".into()),
            "127.0.0.1" => Some("lo".into()),
            _ => None,
        }
    }

    #[test]
    fn each_port_goes_to_its_nics_node_and_loopback_to_none() {
        let root = root();
        let listen: Vec<SocketAddr> = ["10.0.0.1:4420", "10.0.1.1:4420", "127.0.0.1:4420"]
            .iter()
            .map(|a| a.parse().unwrap())
            .collect();
        let (cpus, nodes) = by_interface(&root, &listen, &[0, 1, 2, 3], iface);
        assert_eq!(cpus, [vec![2, 3], vec![0, 1], vec![]]);
        assert_eq!(nodes[0].node, Some(NodeId(1)));
        assert_eq!(nodes[2].interface.as_deref(), Some("lo"));
        // Only CPUs this process may use; a node with none places nothing.
        let (cpus, nodes) = by_interface(&root, &listen[..2], &[0, 1], iface);
        assert_eq!(cpus, [vec![], vec![0, 1]]);
        assert_eq!(nodes[0].node, None);
        // Loopback only: no port has a node, the caller picks as before.
        let (cpus, _) = by_interface(&root, &listen[2..], &[0, 1, 2, 3], iface);
        assert!(cpus.is_empty());
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn reactors_go_to_the_backings_shared_node() {
        let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/fixtures/sysfs/2node-blockstack");
        let node_of = |major, minor| {
            let dev = topology::device::DevNum::new(major, minor);
            topology::device::block_stack(&fixture, dev)
                .expect("fixture device")
                .node()
        };
        // dm-0 over nvme1n1 and md0 over nvme1n2 + nvme2n2: node 1 (CPUs 4-7).
        let (dm0, md0, dm1, loop0) = (
            node_of(253, 0),
            node_of(9, 0),
            node_of(253, 1),
            node_of(7, 0),
        );
        let cpus_of = |n: NodeId| topology::host::node_cpus(&fixture, n).ok();
        let allowed: Vec<u32> = (0..8).collect();
        let pick = |b: &[StackNode], allowed: &[u32]| pick(b, cpus_of, allowed, 4);
        assert_eq!(
            pick(&[dm0.clone(), md0, loop0.clone()], &allowed),
            (vec![4, 5, 6, 7], Some(NodeId(1))),
            "a backing without a node is left out"
        );
        assert_eq!(
            pick(std::slice::from_ref(&dm0), &[0, 1, 5]),
            (vec![5], Some(NodeId(1)))
        );
        assert_eq!(
            pick(std::slice::from_ref(&dm0), &[0, 1]),
            (vec![0, 1], None),
            "no allowed CPU on the node: any allowed"
        );
        assert_eq!(
            pick(&[dm1], &allowed),
            (vec![0, 1, 2, 3], None),
            "dm-1 spans nodes 0 and 1"
        );
        assert_eq!(pick(&[loop0], &allowed), (vec![0, 1, 2, 3], None));
        assert_eq!(pick(&[], &allowed), (vec![0, 1, 2, 3], None), "RAM only");
    }

    #[test]
    fn named_cpus_must_be_allowed() {
        assert!(check_allowed(&[0, 2], &[0, 1, 2, 3]).is_ok());
        let e = check_allowed(&[1, 9], &[0, 1, 2, 3]).unwrap_err();
        assert_eq!(e.cpu, 9);
        assert_eq!(
            e.to_string(),
            "CPU 9 is not one this process may run on (allowed: 0-3); pick CPUs from `numio topo`"
        );
    }
}
