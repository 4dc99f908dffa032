//! Which reactors serve each `numio serve` port: `--port-cpus LIST` per
//! `--listen` (or `port_cpus` in the TOML), else, where a listener's
//! address is on a network interface whose device has a NUMA node, that
//! node's CPUs, so a port runs on its NIC's node (the reactors are then the
//! union over the ports). A listener on loopback, a virtual interface, a
//! NIC of node -1 or the unspecified address has no node: such a port is
//! served by every reactor, and when no port has a node the reactors are
//! chosen as before (the backing devices' node).

use std::net::{IpAddr, SocketAddr};
use std::path::Path;

use topology::{CpuList, NodeId};

/// Most reactors per port placed on its NIC's node.
pub const REACTORS_PER_PORT: usize = 2;

/// Parses each `--port-cpus` value (the kernel's CPU list format), one per
/// `--listen`, in order.
pub fn parse_flags(values: &[String], listeners: usize) -> anyhow::Result<Vec<Vec<usize>>> {
    anyhow::ensure!(
        values.len() <= listeners,
        "--port-cpus given {} times for {listeners} listener(s): give one per --listen, in the same order",
        values.len()
    );
    values
        .iter()
        .map(|v| {
            let list = CpuList::parse(v).map_err(|e| anyhow::anyhow!("--port-cpus {v:?}: {e}"))?;
            anyhow::ensure!(!list.is_empty(), "--port-cpus {v:?} names no CPU");
            Ok(list.ids().iter().map(|&c| c as usize).collect())
        })
        .collect()
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

/// The start-up words for port `i` served by `cpus`.
pub fn describe(cpus: &[usize], placed: Option<&PortNode>) -> String {
    match placed {
        Some(PortNode {
            interface: Some(i),
            node: Some(n),
            ..
        }) => format!("reactors on CPUs {cpus:?} (NUMA node {n} of {i})"),
        _ => format!("reactors on CPUs {cpus:?}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A sysfs root: interface ens1 on node 1 (CPUs 2-3), ens0 on node 0
    /// (CPUs 0-1), lo with no device.
    fn root() -> std::path::PathBuf {
        let root = std::env::temp_dir().join(format!("numio-serve-ports-{}", std::process::id()));
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
        assert_eq!(
            describe(&cpus[0], Some(&nodes[0])),
            "reactors on CPUs [2, 3] (NUMA node 1 of ens1)"
        );
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
    fn port_cpus_flags_are_one_list_per_listener() {
        assert_eq!(
            parse_flags(&["0-1".into(), "4,6".into()], 2).unwrap(),
            [vec![0, 1], vec![4, 6]]
        );
        let e = parse_flags(&["0".into(), "1".into()], 1)
            .unwrap_err()
            .to_string();
        assert!(e.contains("one per --listen"), "{e}");
        let e = parse_flags(&["x".into()], 1).unwrap_err().to_string();
        assert!(e.contains("--port-cpus \"x\""), "{e}");
    }
}
