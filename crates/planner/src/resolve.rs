//! Target → NUMA node, as a function of the topology model only.
//!
//! Accepted spellings: `/dev/nvme0n1`, `nvme0n1`, the generic character
//! device `/dev/ng0n1`, a multipath path `nvme0c1n1`, a partition
//! `nvme0n1p2`. A file or a stacked device (device-mapper, md) resolves
//! through the NVMe namespaces the caller found beneath it on the machine
//! ([`resolve_backing`]). A regular file nobody looked under, a non-NVMe
//! device, a stack over several nodes or a controller whose node the kernel
//! reports as -1 has no known node; the caller applies a stated fallback.

use topology::multipath::{audit, NodeRoute, RouteSource};
use topology::{DeviceNode, Namespace, NodeId, Topology};

/// The device under a target path, as the caller found it on the machine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TargetDevice {
    /// The kernel name a link such as `/dev/disk/by-id/nvme-…` stands for
    /// (`nvme0n1`), resolved by name like a path under `/dev`.
    Name(String),
    /// A file, or a block device stacked on others (device-mapper, md,
    /// loop): the disks beneath it. The planner maps the NVMe namespaces
    /// to their node; over several nodes, or over a disk that is not NVMe,
    /// the target gets a note and no node.
    Stack(DeviceBacking),
    /// An NVMe/TCP namespace: the local network interface each of its
    /// portals is reached through, as the caller found it (its route).
    Network(Vec<NetworkRoute>),
    /// A PCI NVMe controller numio drives itself (`pci:ADDR[/NSID]`, the
    /// vfio backend): its address and the node the kernel reports for it
    /// (`None` for -1).
    Pci {
        /// `0000:41:00.0`.
        address: String,
        /// Its `numa_node`.
        node: Option<NodeId>,
    },
}

/// How one NVMe/TCP portal is reached from this machine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NetworkRoute {
    /// The portal (`HOST:PORT`).
    pub portal: String,
    /// The local interface the route to it leaves through (`lo`, `ens1f0`);
    /// `None` when no route or interface was found.
    pub interface: Option<String>,
    /// That interface's NUMA node (`None`: a virtual interface, loopback,
    /// a device of node -1).
    pub node: Option<NodeId>,
}

/// What a file or stacked device sits on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceBacking {
    /// How the path reaches its disks, in words, completing "PATH is …"
    /// (`a file on dm-0 (device-mapper data) over nvme1n1`).
    pub via: String,
    /// The NVMe namespaces beneath it, as block device names (`nvme1n1`).
    pub namespaces: Vec<String>,
    /// The disks beneath it that are not NVMe (`sda`, `loop0`).
    pub others: Vec<String>,
}

/// What the planner learned about one target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolution {
    /// The NVMe device the target resolved to (`nvme0n1`, `nvme0c1n1`).
    pub device: Option<String>,
    /// NUMA node of the target, when known.
    pub node: Option<NodeId>,
    /// Why the node is unknown, or how it was chosen when that is not obvious.
    pub notes: Vec<String>,
    /// Nodes whose CPUs reach the target through a path of their own: for a
    /// multipath head under iopolicy `numa` with optimized paths on several
    /// nodes, all of those nodes; otherwise `node` alone (empty: unknown).
    pub local_nodes: Vec<NodeId>,
}

impl Resolution {
    fn unknown(why: String) -> Self {
        Resolution {
            device: None,
            node: None,
            notes: vec![why.to_string()],
            local_nodes: Vec::new(),
        }
    }
}

/// Resolves `path` to its NVMe device and NUMA node in `topo`.
pub fn resolve_target(topo: &Topology, path: &str) -> Resolution {
    if let Some(f) = crate::TargetAddr::parse(path).fabric() {
        return Resolution::unknown(format!(
            "{path} is a remote {} namespace: its NUMA node is that of the \
             network interface, which numio does not look up",
            f.prose()
        ));
    }
    if let crate::TargetAddr::Pci(addr) = crate::TargetAddr::parse(path) {
        return Resolution::unknown(format!(
            "{path} names the PCI function {addr}, which this topology does not hold"
        ));
    }
    let name = match path.strip_prefix("/dev/") {
        Some(rest) if !rest.contains('/') => rest,
        Some(_) => return Resolution::unknown(format!("{path} is not an NVMe device name")),
        None if !path.contains('/') && !path.is_empty() => path,
        None => {
            return Resolution::unknown(format!(
                "{path} is a regular file (or not under /dev): its NUMA node is not known"
            ))
        }
    };
    let mut notes = Vec::new();
    let name = match strip_partition(name) {
        Some(base) => {
            notes.push(format!("{name} is a partition of {base}"));
            base
        }
        None => name,
    };
    let mut res = match classify(name) {
        Some(NvmeName::Generic { ctrl, ns }) => resolve_generic(topo, name, ctrl, ns),
        Some(NvmeName::Path { ctrl, .. }) => resolve_path(topo, name, ctrl),
        Some(NvmeName::Head) => resolve_head(topo, name),
        None => Resolution::unknown(format!("{name} is not an NVMe namespace")),
    };
    notes.append(&mut res.notes);
    res.notes = notes;
    res
}

/// Resolves a PCI controller target `path` (address `address`, on `node`
/// as the kernel reports it).
pub fn resolve_pci(topo: &Topology, path: &str, address: &str, node: Option<NodeId>) -> Resolution {
    match node.filter(|n| topo.nodes.iter().any(|x| x.id == *n)) {
        Some(n) => Resolution {
            device: Some(address.to_string()),
            node: Some(n),
            notes: vec![format!("{path} is the PCI controller {address}")],
            local_nodes: vec![n],
        },
        // Warnings and the target's notes name `path` already.
        None => Resolution::unknown(format!(
            "the kernel reports no NUMA node for the PCI controller {address} (numa_node -1)"
        )),
    }
}

/// Resolves an NVMe/TCP namespace `path` through the local interfaces of
/// its portals' routes: the node of those interfaces when they have one;
/// portals through NICs of several nodes make each of those nodes local (as
/// a multipath head with paths on several nodes); no node, with a note
/// naming the interfaces, when none has one (loopback, virtual interfaces).
pub fn resolve_network(topo: &Topology, path: &str, routes: &[NetworkRoute]) -> Resolution {
    // A node the topology does not list (offline) places nothing.
    let mut nodes: Vec<NodeId> = routes
        .iter()
        .filter_map(|r| r.node)
        .filter(|n| topo.nodes.iter().any(|x| x.id == *n))
        .collect();
    nodes.sort();
    nodes.dedup();
    let via = |r: &NetworkRoute| match (&r.interface, r.node) {
        (Some(i), Some(n)) => format!("{} through {i} (NUMA node {n})", r.portal),
        (Some(i), None) => format!("{} through {i}", r.portal),
        (None, _) => format!("{} (no route found)", r.portal),
    };
    let all: Vec<String> = routes.iter().map(via).collect();
    let proto = crate::TargetAddr::parse(path)
        .fabric()
        .map_or("NVMe-oF", |f| f.prose());
    let Some(&first) = nodes.first() else {
        return Resolution::unknown(format!(
            "{path} is a remote {proto} namespace reached as {}: no interface with a NUMA node \
             (loopback and virtual interfaces have none)",
            all.join(", ")
        ));
    };
    Resolution {
        device: None,
        node: Some(first),
        notes: vec![format!(
            "{path} is a remote {proto} namespace reached as {}",
            all.join(", ")
        )],
        local_nodes: nodes,
    }
}

/// Resolves `path`, a file or a stacked block device, through the NVMe
/// namespaces beneath it (`backing`, from the live machine): the node of
/// those namespaces when they share one, with a note saying where it came
/// from; no node, and a note saying why, when they span several nodes,
/// when a disk beneath it is not NVMe, or when there is none.
pub fn resolve_backing(topo: &Topology, path: &str, backing: &DeviceBacking) -> Resolution {
    let via = &backing.via;
    if !backing.others.is_empty() || backing.namespaces.is_empty() {
        let why = match backing.others.as_slice() {
            [] => format!("{path} is {via}, not on NVMe: its NUMA node is not known"),
            others => format!(
                "{path} is {via}: {} {} not NVMe, so no NVMe controller tells its NUMA node",
                others.join(", "),
                if others.len() == 1 { "is" } else { "are" }
            ),
        };
        return Resolution::unknown(why);
    }
    let found: Vec<(&String, Resolution)> = backing
        .namespaces
        .iter()
        .map(|ns| (ns, resolve_target(topo, ns)))
        .collect();
    if let [(ns, res)] = found.as_slice() {
        let mut res = res.clone();
        let source = match res.node {
            Some(n) => format!("{path} is {via}: node {n}, {ns}'s"),
            None => format!("{path} is {via}"),
        };
        res.notes.insert(0, source);
        return res;
    }
    if let Some((ns, res)) = found.iter().find(|(_, r)| r.node.is_none()) {
        let mut notes = vec![format!("{path} is {via}; {ns}'s NUMA node is not known")];
        notes.extend(res.notes.iter().cloned());
        return Resolution {
            device: None,
            node: None,
            notes,
            local_nodes: Vec::new(),
        };
    }
    let mut nodes: Vec<NodeId> = found.iter().filter_map(|(_, r)| r.node).collect();
    nodes.sort_unstable();
    nodes.dedup();
    let each: Vec<String> = found
        .iter()
        .map(|(ns, r)| format!("{ns} on node {}", r.node.map_or(0, |n| n.0)))
        .collect();
    match nodes.as_slice() {
        [n] => Resolution {
            device: None,
            node: Some(*n),
            notes: vec![format!(
                "{path} is {via}: node {n}, that of all its NVMe namespaces ({})",
                backing.namespaces.join(", ")
            )],
            local_nodes: vec![*n],
        },
        _ => {
            let list: Vec<String> = nodes.iter().map(|n| n.0.to_string()).collect();
            Resolution::unknown(format!(
                "{path} is {via}: its NVMe namespaces sit on nodes {} ({}), so it has no single NUMA node",
                list.join(","),
                each.join(", ")
            ))
        }
    }
}

/// Whether `name` is an NVMe device name (`nvme0n1`, `nvme0c1n1`, `ng0n1`,
/// `nvme0n1p2`).
pub fn is_nvme_name(name: &str) -> bool {
    classify(strip_partition(name).unwrap_or(name)).is_some()
}

enum NvmeName {
    Head,
    Path { ctrl: u32 },
    Generic { ctrl: u32, ns: u32 },
}

/// Splits a leading decimal number off `s`.
fn number(s: &str) -> Option<(u32, &str)> {
    let end = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    if end == 0 {
        return None;
    }
    Some((s[..end].parse().ok()?, &s[end..]))
}

fn classify(name: &str) -> Option<NvmeName> {
    if let Some(rest) = name.strip_prefix("ng") {
        let (ctrl, rest) = number(rest)?;
        let (ns, rest) = number(rest.strip_prefix('n')?)?;
        return rest.is_empty().then_some(NvmeName::Generic { ctrl, ns });
    }
    let rest = name.strip_prefix("nvme")?;
    let (ctrl, rest) = number(rest)?;
    if let Some(r) = rest.strip_prefix('c') {
        let (_, r) = number(r)?;
        let (_, r) = number(r.strip_prefix('n')?)?;
        return r.is_empty().then_some(NvmeName::Path { ctrl });
    }
    let (_, r) = number(rest.strip_prefix('n')?)?;
    r.is_empty().then_some(NvmeName::Head)
}

/// `nvme0n1p2` → `nvme0n1`; `None` when `name` is not an NVMe partition.
fn strip_partition(name: &str) -> Option<&str> {
    let idx = name.rfind('p')?;
    let (base, part) = name.split_at(idx);
    let digits = &part[1..];
    let is_part = !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit());
    (is_part && classify(base).is_some() && base.starts_with("nvme")).then_some(base)
}

fn namespaces(topo: &Topology) -> impl Iterator<Item = &Namespace> {
    topo.subsystems.iter().flat_map(|s| s.namespaces.iter())
}

/// Why a controller's node is not known (a note of the resolution).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
enum NoNode {
    /// Its `numa_node` is -1.
    #[error(
        "controller {ctrl} reports numa_node -1 (the firmware does not say which node it sits on)"
    )]
    Unknown {
        /// The controller.
        ctrl: String,
    },
    /// No controller of that name was discovered.
    #[error("controller {ctrl} is not in the topology")]
    NotInTopology {
        /// The controller.
        ctrl: String,
    },
}

fn controller_node(topo: &Topology, ctrl: &str) -> Result<NodeId, NoNode> {
    match topo.controllers.iter().find(|c| c.name == ctrl) {
        Some(c) => match c.numa_node {
            DeviceNode::Known(n) => Ok(n),
            DeviceNode::Unknown => Err(NoNode::Unknown {
                ctrl: ctrl.to_string(),
            }),
        },
        None => Err(NoNode::NotInTopology {
            ctrl: ctrl.to_string(),
        }),
    }
}

fn with_controller(device: &str, ctrl: &str, topo: &Topology) -> Resolution {
    match controller_node(topo, ctrl) {
        Ok(n) => Resolution {
            device: Some(device.to_string()),
            node: Some(n),
            notes: Vec::new(),
            local_nodes: vec![n],
        },
        Err(why) => Resolution {
            device: Some(device.to_string()),
            node: None,
            notes: vec![why.to_string()],
            local_nodes: Vec::new(),
        },
    }
}

fn resolve_generic(topo: &Topology, name: &str, ctrl: u32, ns: u32) -> Resolution {
    if let Some(n) = namespaces(topo).find(|n| n.generic_device.as_deref() == Some(name)) {
        let head = n.block_device.clone();
        return resolve_head(topo, &head);
    }
    // The generic device of a namespace without a block device listed:
    // ngXnY sits on controller X.
    let head = format!("nvme{ctrl}n{ns}");
    if namespaces(topo).any(|n| n.block_device == head) {
        return resolve_head(topo, &head);
    }
    with_controller(name, &format!("nvme{ctrl}"), topo)
}

fn resolve_path(topo: &Topology, name: &str, ctrl: u32) -> Resolution {
    let listed = namespaces(topo)
        .flat_map(|n| n.paths.iter())
        .find(|p| p.device == name)
        .map(|p| p.controller.clone());
    let ctrl = listed.unwrap_or_else(|| format!("nvme{ctrl}"));
    with_controller(name, &ctrl, topo)
}

fn resolve_head(topo: &Topology, name: &str) -> Resolution {
    // Discovery knows which controller owns a namespace (`Namespace.controller`)
    // or, for a shared head whose paths were not seen, which controllers of
    // its subsystem can reach it; the name alone does not say (with native
    // multipath `nvme0n1` may live on controller `nvme2`).
    let Some(info) = topo.find_device(name) else {
        return Resolution::unknown(format!("{name} is not a namespace of this topology"));
    };
    if !info.namespace.paths.is_empty() {
        return resolve_multipath(topo, info.namespace);
    }
    match info.controllers.as_slice() {
        [] => Resolution::unknown(format!(
            "{name}: none of its controllers is in the topology"
        )),
        [ctrl] => with_controller(name, &ctrl.name, topo),
        ctrls => {
            let nodes = info.nodes();
            let Some(&first) = nodes.first() else {
                let names: Vec<&str> = ctrls.iter().map(|c| c.name.as_str()).collect();
                return Resolution {
                    device: Some(name.to_string()),
                    node: None,
                    notes: vec![format!(
                        "{name}: its controllers {} all report numa_node -1",
                        names.join(",")
                    )],
                    local_nodes: Vec::new(),
                };
            };
            let mut notes = Vec::new();
            if nodes.len() > 1 {
                let list: Vec<String> = nodes.iter().map(|n| n.0.to_string()).collect();
                notes.push(format!(
                    "{name} is shared by controllers on nodes {} and its paths were not seen: planned on node {first}",
                    list.join(",")
                ));
            }
            Resolution {
                device: Some(name.to_string()),
                node: Some(first),
                notes,
                local_nodes: vec![first],
            }
        }
    }
}

fn resolve_multipath(topo: &Topology, ns: &Namespace) -> Resolution {
    let optimized: Vec<_> = ns
        .paths
        .iter()
        .filter(|p| p.ana_state.as_deref() == Some("optimized"))
        .collect();
    let paths: Vec<_> = if optimized.is_empty() {
        ns.paths.iter().collect()
    } else {
        optimized
    };
    let found: Vec<Result<NodeId, NoNode>> = paths
        .iter()
        .map(|p| controller_node(topo, &p.controller))
        .collect();
    let mut nodes: Vec<NodeId> = found.iter().filter_map(|r| r.clone().ok()).collect();
    nodes.sort_unstable();
    nodes.dedup();
    let name = &ns.block_device;
    let iopolicy = topo
        .subsystems
        .iter()
        .find(|s| s.namespaces.iter().any(|n| n.block_device == *name))
        .and_then(|s| s.iopolicy.clone())
        .or_else(|| topo.nvme_params.iopolicy.clone());
    // The kernel's default multipath policy is numa.
    let by_cpu = iopolicy.as_deref().is_none_or(|p| p == "numa");
    let mut res = Resolution {
        device: Some(name.clone()),
        node: nodes.first().copied(),
        notes: Vec::new(),
        local_nodes: nodes.first().copied().into_iter().collect(),
    };
    let list: Vec<String> = nodes.iter().map(|n| n.0.to_string()).collect();
    match nodes.len() {
        0 => {
            let why = found
                .iter()
                .find_map(|r| r.clone().err())
                .map(|e| e.to_string())
                .unwrap_or_default();
            res.notes.push(format!("{name}: {why}"));
        }
        1 => {}
        _ if by_cpu => {
            res.local_nodes = nodes.clone();
            res.notes.push(format!(
                "multipath head {name} has optimized paths on nodes {} and iopolicy numa: its jobs are split over these nodes, each job's I/O going down the path of its own node",
                list.join(",")
            ));
        }
        _ => res.notes.push(format!(
            "multipath head {name} has paths on nodes {} but iopolicy {} does not pick paths by CPU: planned on node {}",
            list.join(","),
            iopolicy.unwrap_or_default(),
            nodes[0].0
        )),
    }
    if by_cpu {
        kernel_paths(topo, name, &mut res);
    }
    res
}

/// Under iopolicy `numa`: keeps the jobs on the nodes whose kernel path
/// (topology's model of `multipath.c`, or the kernel's `numa_nodes`) is on
/// their own node, and says which path each planned node's I/O takes.
fn kernel_paths(topo: &Topology, name: &str, res: &mut Resolution) {
    let Some(a) = audit(topo)
        .into_iter()
        .find(|a| a.block_device == name && a.paths.len() > 1)
    else {
        return;
    };
    let path_of = |r: &NodeRoute| r.taken.first().map(|&i| &a.paths[i]);
    let local: Vec<NodeId> = a
        .routes
        .iter()
        .filter(|r| {
            r.taken.len() == 1 && path_of(r).is_some_and(|p| p.node == DeviceNode::Known(r.node))
        })
        .map(|r| r.node)
        .collect();
    if !local.is_empty() {
        res.node = local.first().copied();
        res.local_nodes = local;
    }
    for r in a
        .routes
        .iter()
        .filter(|r| res.local_nodes.contains(&r.node))
    {
        let Some(p) = path_of(r) else { continue };
        if r.source != RouteSource::Kernel && !r.ties.is_empty() {
            // The kernel's list order decides a tie, and sysfs does not
            // show it: name no path as taken (issue 39).
            let mut tied: Vec<&str> = r
                .taken
                .iter()
                .chain(&r.ties)
                .map(|&i| a.paths[i].device.as_str())
                .collect();
            tied.dedup();
            res.notes.push(format!(
                "{name}: node {}'s I/O takes one of {}: a tie decided by the kernel's list order, which sysfs does not show (`numio multipath --probe /dev/{name}` shows which)",
                r.node,
                tied.join(" and "),
            ));
            continue;
        }
        let local = p.node == DeviceNode::Known(r.node);
        res.notes.push(format!(
            "{name}: node {}'s I/O takes path {} (controller {}, node {}){}",
            r.node,
            p.device,
            p.controller,
            p.node,
            if local {
                ": local".to_string()
            } else {
                format!(
                    ": not a path known to be local (`numio multipath /dev/{name}`, `numio doctor`)"
                )
            }
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn backing(via: &str, namespaces: &[&str], others: &[&str]) -> DeviceBacking {
        DeviceBacking {
            via: via.into(),
            namespaces: namespaces.iter().map(|s| s.to_string()).collect(),
            others: others.iter().map(|s| s.to_string()).collect(),
        }
    }

    fn blockstack() -> Topology {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/fixtures/sysfs/2node-blockstack");
        Topology::discover(&root).expect("fixture")
    }

    #[test]
    fn a_file_takes_the_node_of_the_namespaces_beneath_it() {
        let t = blockstack();
        let r = resolve_backing(
            &t,
            "/data/f.bin",
            &backing(
                "a file on dm-0 (device-mapper data-lin) over nvme1n1",
                &["nvme1n1"],
                &[],
            ),
        );
        assert_eq!(r.node, Some(NodeId(1)));
        assert_eq!(r.local_nodes, vec![NodeId(1)]);
        assert_eq!(
            r.notes,
            vec!["/data/f.bin is a file on dm-0 (device-mapper data-lin) over nvme1n1: node 1, nvme1n1's"]
        );
        let r = resolve_backing(
            &t,
            "/md/f",
            &backing(
                "a file on md0 (md raid1) over nvme1n2, nvme2n2",
                &["nvme1n2", "nvme2n2"],
                &[],
            ),
        );
        assert_eq!(r.node, Some(NodeId(1)));
        assert!(
            r.notes[0].ends_with("node 1, that of all its NVMe namespaces (nvme1n2, nvme2n2)"),
            "{:?}",
            r.notes
        );
    }

    #[test]
    fn a_stack_over_two_nodes_or_not_nvme_has_no_node() {
        let t = blockstack();
        let span = backing(
            "a file on dm-1 (device-mapper span) over nvme0n1, nvme2n1",
            &["nvme0n1", "nvme2n1"],
            &[],
        );
        let r = resolve_backing(&t, "/span/f", &span);
        assert_eq!((r.node, r.local_nodes.len()), (None, 0));
        assert_eq!(
            r.notes,
            vec!["/span/f is a file on dm-1 (device-mapper span) over nvme0n1, nvme2n1: its NVMe namespaces sit on nodes 0,1 (nvme0n1 on node 0, nvme2n1 on node 1), so it has no single NUMA node"]
        );
        let r = resolve_backing(
            &t,
            "/mnt/loop/f",
            &backing("a file on loop0 (loop over /x)", &[], &["loop0"]),
        );
        assert_eq!(r.node, None);
        assert_eq!(
            r.notes,
            vec!["/mnt/loop/f is a file on loop0 (loop over /x): loop0 is not NVMe, so no NVMe controller tells its NUMA node"]
        );
        let r = resolve_backing(&t, "/tmp/f", &backing("a file on tmpfs", &[], &[]));
        assert_eq!(
            r.notes,
            vec!["/tmp/f is a file on tmpfs, not on NVMe: its NUMA node is not known"]
        );
        let r = resolve_backing(&t, "/x", &backing("a file on nvme9n1", &["nvme9n1"], &[]));
        assert_eq!(r.node, None);
        assert_eq!(r.notes[0], "/x is a file on nvme9n1");
        assert!(
            r.notes[1].contains("not a namespace of this topology"),
            "{:?}",
            r.notes
        );
    }

    #[test]
    fn classifies_names() {
        assert!(matches!(classify("nvme0n1"), Some(NvmeName::Head)));
        assert!(matches!(
            classify("nvme0c1n1"),
            Some(NvmeName::Path { ctrl: 0 })
        ));
        assert!(matches!(
            classify("ng3n2"),
            Some(NvmeName::Generic { ctrl: 3, ns: 2 })
        ));
        assert!(classify("sda").is_none());
        assert!(classify("nvme0").is_none());
        assert!(classify("nvme0n1x").is_none());
        assert_eq!(strip_partition("nvme0n1p2"), Some("nvme0n1"));
        assert_eq!(strip_partition("nvme0n1"), None);
        assert_eq!(strip_partition("sdap1"), None);
    }

    fn dual_numa() -> Topology {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/fixtures/sysfs/2node-multipath-tcp");
        let mut t = Topology::discover(&root).expect("fixture");
        t.subsystems[0].iopolicy = Some("numa".to_string());
        for p in &mut t.subsystems[0].namespaces[0].paths {
            p.numa_nodes = None;
        }
        t
    }

    #[test]
    fn a_multipath_head_says_which_path_each_node_takes() {
        let r = resolve_target(&dual_numa(), "/dev/nvme0n1");
        assert_eq!(r.local_nodes, vec![NodeId(0), NodeId(1)]);
        assert!(
            r.notes.contains(
                &"nvme0n1: node 1's I/O takes path nvme0c1n1 (controller nvme1, node 1): local"
                    .to_string()
            ),
            "{:?}",
            r.notes
        );
    }

    // The kernel's numa_nodes (6.15+) says node 1's I/O goes down node 0's
    // path: node 1 is then no place for the head's jobs.
    #[test]
    fn a_node_whose_kernel_path_is_remote_gets_no_jobs() {
        let mut t = dual_numa();
        let paths = &mut t.subsystems[0].namespaces[0].paths;
        paths[0].numa_nodes = Some(vec![NodeId(0), NodeId(1)]);
        paths[1].numa_nodes = Some(vec![]);
        let r = resolve_target(&t, "nvme0n1");
        assert_eq!(r.local_nodes, vec![NodeId(0)]);
        assert_eq!(r.node, Some(NodeId(0)));
    }

    // The published case (lab topology mp-memoryless): node 0's two paths
    // tie, and the kernel's list order, which sysfs does not show, decides;
    // the jobs stay on node 0 (the one known path's node) and the plan names
    // both paths of the tie, never one as taken (issue 39).
    #[test]
    fn the_published_case_names_the_tie_not_a_taken_path() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/fixtures/sysfs/vm-mp-memoryless");
        let t = Topology::discover(&root).expect("fixture");
        let head = audit(&t).into_iter().find(|a| a.paths.len() > 1).unwrap();
        let r = resolve_target(&t, &format!("/dev/{}", head.block_device));
        assert_eq!(r.local_nodes, vec![NodeId(0)]);
        assert!(
            !r.notes.iter().any(|n| n.contains("takes path")),
            "{:?}",
            r.notes
        );
        let note = r
            .notes
            .iter()
            .find(|n| n.contains("node 0's I/O takes one of"))
            .unwrap_or_else(|| panic!("{:?}", r.notes));
        for p in &head.paths {
            assert!(note.contains(&p.device), "{note}");
        }
        assert!(
            note.contains("kernel's list order") && note.contains("--probe"),
            "{note}"
        );
    }
}
