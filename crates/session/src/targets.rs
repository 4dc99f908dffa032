//! Targets as the planner takes them, resolved on the live machine: what
//! topology finds under a `/dev` link, a file or a stacked device (the NVMe
//! namespaces and other disks beneath it), so a file on an NVMe filesystem
//! is placed on that namespace's node. Shared by `bench`, `plan` and the
//! `policy=` arms of `compare`.

use std::path::Path;

use std::net::{IpAddr, SocketAddr, ToSocketAddrs, UdpSocket};

use planner::{DeviceBacking, NetworkRoute, TargetDevice, TargetSpec};

/// The targets as the planner takes them: on the live machine (`root` is
/// `/`), each with what topology finds under it ([`target_device`]);
/// elsewhere (a snapshot or fixture) by name alone. Shared by `numio bench`, `plan` and `compare`.
pub fn target_specs(root: &Path, targets: &[String]) -> Vec<TargetSpec> {
    targets
        .iter()
        .map(|t| TargetSpec {
            device: target_device(root, t),
            ..TargetSpec::new(t.clone())
        })
        .collect()
}

/// What is under `target` on the live machine, for the planner: the kernel
/// name behind a `/dev` link such as `/dev/disk/by-id/nvme-…` (`nvme0n1`);
/// for a file, or a device-mapper / md / loop device, the NVMe namespaces
/// (and other disks) beneath it, from topology's device stack. `None` where
/// the name says it all (`/dev/nvme0n1`, `/dev/ng0n1`, partitions), for a
/// snapshot or fixture root, or a path that cannot be stat'ed. For an
/// `nvme-tcp://` target, the local interface (and its node) of the route to
/// each portal ([`network_routes`]).
pub fn target_device(root: &Path, target: &str) -> Option<TargetDevice> {
    use topology::device::{stat_path, PathDevice};
    if root != Path::new("/") {
        return None;
    }
    if planner::TargetAddr::parse(target).fabric().is_some() {
        return network_routes(root, target, local_ip_towards).map(TargetDevice::Network);
    }
    if let Some(Ok((address, _))) = engine::backend::vfio::target::parse(target) {
        let f = topology::pci::pci_function(root, &address).ok()??;
        return Some(TargetDevice::Pci {
            address,
            node: f.numa_node.map(topology::NodeId),
        });
    }
    let path = Path::new(target);
    match stat_path(path).ok()? {
        PathDevice::Block(dev) => {
            let stack = topology::device::block_stack(root, dev).ok()?;
            if stack.is_plain_nvme() {
                return link_name(path).map(TargetDevice::Name);
            }
            Some(TargetDevice::Stack(backing(&stack, stack.describe())))
        }
        PathDevice::File { on } if on.is_anonymous() => Some(TargetDevice::Stack(DeviceBacking {
            via: format!("a file on a filesystem without a block device (device {on}: tmpfs, btrfs, overlay, NFS, ...)"),
            namespaces: Vec::new(),
            others: Vec::new(),
        })),
        PathDevice::File { on } => {
            let stack = topology::device::block_stack(root, on).ok()?;
            let via = format!("a file on {}", stack.describe());
            Some(TargetDevice::Stack(backing(&stack, via)))
        }
        PathDevice::Char(_) | PathDevice::Other => link_name(path).map(TargetDevice::Name),
    }
}

fn backing(stack: &topology::device::DeviceStack, via: String) -> DeviceBacking {
    DeviceBacking {
        via,
        namespaces: stack
            .namespaces
            .iter()
            .map(|n| n.block_device.clone())
            .collect(),
        others: stack.others.clone(),
    }
}

/// The kernel name behind a `/dev` link (`/dev/disk/by-id/nvme-…` →
/// `nvme0n1`); `None` for a path that is not such a link.
fn link_name(path: &Path) -> Option<String> {
    if !path.starts_with("/dev/") || !path.symlink_metadata().ok()?.file_type().is_symlink() {
        return None;
    }
    let real = std::fs::canonicalize(path).ok()?;
    real.strip_prefix("/dev")
        .ok()
        .filter(|rest| rest.components().count() == 1)
        .map(|rest| rest.to_string_lossy().into_owned())
}

/// The route to each portal of NVMe/TCP or NVMe/RDMA target `target`: the local
/// interface its packets leave through (the local address `local_ip`
/// finds for the portal, and the interface holding it) and that
/// interface's NUMA node. `None` when the target does not parse (the
/// backend says why later).
pub fn network_routes(
    root: &Path,
    target: &str,
    local_ip: impl Fn(SocketAddr) -> Option<IpAddr>,
) -> Option<Vec<NetworkRoute>> {
    let portals = match planner::TargetAddr::parse(target).fabric()? {
        planner::Fabric::Tcp => engine::backend::tcp::parse_portals(target).ok()?,
        planner::Fabric::Rdma => vec![engine::backend::rdma::parse_rdma_url(target).ok()?],
    };
    Some(
        portals
            .iter()
            .map(|u| {
                let portal = engine::backend::tcp::portal_name(u);
                let remote = (u.host.as_str(), u.port)
                    .to_socket_addrs()
                    .ok()
                    .and_then(|mut a| a.next());
                let interface = remote
                    .and_then(&local_ip)
                    .and_then(|ip| sysapi::net::interface_of(ip).ok().flatten());
                let node = interface
                    .as_deref()
                    .and_then(|i| topology::host::interface_node(root, i).ok().flatten());
                NetworkRoute {
                    portal,
                    interface,
                    node,
                }
            })
            .collect(),
    )
}

/// The local address the kernel's routing picks to reach `remote`: a UDP
/// socket connected to it (no packet is sent) and its local address.
pub fn local_ip_towards(remote: SocketAddr) -> Option<IpAddr> {
    let any: SocketAddr = if remote.is_ipv4() {
        "0.0.0.0:0".parse().ok()?
    } else {
        "[::]:0".parse().ok()?
    };
    let s = UdpSocket::bind(any).ok()?;
    s.connect(remote).ok()?;
    s.local_addr().ok().map(|a| a.ip())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_loopback_portal_is_reached_through_lo_which_has_no_node() {
        let t = "nvme-tcp://127.0.0.1:4420/nqn.2026-01.io.numio:a,nvme-tcp://127.0.0.1:4421/nqn.2026-01.io.numio:a";
        let routes = network_routes(Path::new("/"), t, local_ip_towards).unwrap();
        assert_eq!(routes.len(), 2);
        assert_eq!(routes[1].portal, "127.0.0.1:4421");
        assert_eq!(routes[0].interface.as_deref(), Some("lo"));
        assert_eq!(routes[0].node, None, "loopback has no device");
        assert!(network_routes(Path::new("/"), "nvme-tcp://", local_ip_towards).is_none());
        assert!(matches!(
            target_device(Path::new("/"), t),
            Some(TargetDevice::Network(r)) if r.len() == 2
        ));
    }
}
