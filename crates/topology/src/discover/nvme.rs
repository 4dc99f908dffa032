//! NVMe controllers, subsystems, namespaces and paths
//! (`/sys/class/nvme`, `/sys/class/nvme-subsystem`, `/sys/class/nvme-generic`).

use std::collections::BTreeSet;

use super::irq::NvmeIrqs;
use crate::model::{Controller, CpuId, DeviceNode, NodeId, Subsystem, Transport};
use crate::parse::{nvme_numbers, parse_list, parse_num};
use crate::reader::Reader;
use crate::relpath::join;

mod namespace;

/// A controller with the namespace and path devices found in its directory.
struct Found {
    controller: Controller,
    /// Non-multipath namespaces (`nvmeXnY` children), as (name, dir).
    namespaces: Vec<(String, String)>,
    /// Multipath path devices (`nvmeXcYnZ` children), as (name, dir).
    paths: Vec<(String, String)>,
}

/// Sorts kernel names by their numbers (`nvme2` before `nvme10`).
fn sort_by_numbers(names: &mut [String], prefix: &str, shape: &str) {
    names.sort_by_key(|n| nvme_numbers(n, prefix, shape).unwrap_or_default());
}

/// Every controller and subsystem.
pub fn discover(r: &mut Reader, irqs: &NvmeIrqs) -> (Vec<Controller>, Vec<Subsystem>) {
    let mut names: Vec<String> = r
        .list("sys/class/nvme")
        .unwrap_or_default()
        .into_iter()
        .filter(|n| nvme_numbers(n, "nvme", "").is_some())
        .collect();
    sort_by_numbers(&mut names, "nvme", "");
    let mut found: Vec<Found> = names
        .iter()
        .filter_map(|name| read_controller(r, name, irqs))
        .collect();
    let generics = read_generics(r);
    let mut subsystems = read_subsystems(r, &mut found, &generics);
    let mut controllers: Vec<Controller> = found.into_iter().map(|f| f.controller).collect();
    // A controller's I/O queue count is the larger of its IRQs and the
    // hardware queues of its devices (poll queues have no IRQ).
    for sub in &mut subsystems {
        for ns in &sub.namespaces {
            let owners = ns
                .controller
                .iter()
                .map(|c| (c.as_str(), ns.queue.hw_queues.len()));
            let paths = ns
                .paths
                .iter()
                .map(|p| (p.controller.as_str(), p.hw_queues.len()));
            for (ctrl, hw) in owners.chain(paths) {
                if let Some(c) = controllers.iter_mut().find(|c| c.name == ctrl) {
                    c.queue_count = c.queue_count.max(hw as u32);
                }
            }
        }
    }
    (controllers, subsystems)
}

fn transport(text: Option<String>) -> Transport {
    match text.as_deref() {
        Some("pcie") => Transport::Pcie,
        Some("tcp") => Transport::Tcp,
        Some("rdma") => Transport::Rdma,
        Some("fc") => Transport::Fc,
        Some("loop") => Transport::Loop,
        _ => Transport::Other,
    }
}

fn device_node(value: Option<i64>) -> Option<DeviceNode> {
    value.map(|v| {
        if v < 0 {
            DeviceNode::Unknown
        } else {
            DeviceNode::Known(NodeId(v as u32))
        }
    })
}

fn read_controller(r: &mut Reader, name: &str, irqs: &NvmeIrqs) -> Option<Found> {
    let dir = r.resolve(&format!("sys/class/nvme/{name}"))?;
    let instance = nvme_numbers(name, "nvme", "")?[0];
    let attr = |r: &mut Reader, a: &str| r.read_trimmed(&join(&dir, a));
    let transport = transport(attr(r, "transport"));
    let mut numa_node = device_node(r.parse(&join(&dir, "numa_node"), parse_num::<i64>));
    let (mut pci_path, mut local_cpus) = (Vec::new(), Vec::new());
    if transport == Transport::Pcie {
        if let Some(pci) = r.resolve(&join(&dir, "device")) {
            pci_path = pci_path_of(&pci);
            local_cpus = r
                .parse(&join(&pci, "local_cpulist"), parse_list)
                .unwrap_or_default()
                .into_iter()
                .map(CpuId)
                .collect();
            if numa_node.is_none() {
                numa_node = device_node(r.parse(&join(&pci, "numa_node"), parse_num::<i64>));
            }
        }
    }
    let (mut namespaces, mut paths) = (Vec::new(), Vec::new());
    for entry in r.list(&dir).unwrap_or_default() {
        let ns_dir = join(&dir, &entry);
        if nvme_numbers(&entry, "nvme", "n").is_some() {
            namespaces.push((entry, ns_dir));
        } else if nvme_numbers(&entry, "nvme", "cn").is_some() {
            paths.push((entry, ns_dir));
        }
    }
    namespaces.sort_by_key(|(n, _)| nvme_numbers(n, "nvme", "n").unwrap_or_default());
    let controller = Controller {
        name: name.to_string(),
        transport,
        address: attr(r, "address").unwrap_or_default(),
        model: attr(r, "model").unwrap_or_default(),
        serial: attr(r, "serial").unwrap_or_default(),
        firmware: attr(r, "firmware_rev").unwrap_or_default(),
        state: attr(r, "state").unwrap_or_default(),
        cntlid: r.parse(&join(&dir, "cntlid"), parse_num::<u32>),
        numa_node: numa_node.unwrap_or(DeviceNode::Unknown),
        pci_path,
        local_cpus,
        subsystem: None,
        queue_count: irqs.io_queue_count(instance),
        irqs: irqs.of_controller(instance),
    };
    Some(Found {
        controller,
        namespaces,
        paths,
    })
}

/// The PCI path of a device directory: the host bridge (`pci0000:00`) and
/// every bridge and function below it (`0000:00:01.0`, `0000:01:00.0`).
fn pci_path_of(dir: &str) -> Vec<String> {
    let parts = dir.split('/');
    let mut path = Vec::new();
    for part in parts {
        let bridge = part.starts_with("pci") && part.contains(':');
        let function = part.len() == 12
            && part.as_bytes()[4] == b':'
            && part.as_bytes()[7] == b':'
            && part.as_bytes()[10] == b'.';
        if bridge || (function && !path.is_empty()) {
            path.push(part.to_string());
        } else if !path.is_empty() {
            break;
        }
    }
    path
}

fn read_subsystems(
    r: &mut Reader,
    found: &mut [Found],
    generics: &BTreeSet<String>,
) -> Vec<Subsystem> {
    let mut names: Vec<String> = r
        .list("sys/class/nvme-subsystem")
        .unwrap_or_default()
        .into_iter()
        .filter(|n| nvme_numbers(n, "nvme-subsys", "").is_some())
        .collect();
    sort_by_numbers(&mut names, "nvme-subsys", "");
    names
        .into_iter()
        .filter_map(|name| read_subsystem(r, name, found, generics))
        .collect()
}

/// One subsystem: its controllers (links), multipath heads (children) and
/// the private namespaces of its controllers.
fn read_subsystem(
    r: &mut Reader,
    name: String,
    found: &mut [Found],
    generics: &BTreeSet<String>,
) -> Option<Subsystem> {
    let dir = r.resolve(&format!("sys/class/nvme-subsystem/{name}"))?;
    let entries = r.list(&dir).unwrap_or_default();
    let mut controllers: Vec<String> = entries
        .iter()
        .filter(|e| nvme_numbers(e, "nvme", "").is_some())
        .cloned()
        .collect();
    sort_by_numbers(&mut controllers, "nvme", "");
    for ctrl in &controllers {
        // Resolved so that a snapshot keeps the link the name came from.
        r.resolve(&join(&dir, ctrl));
    }
    let mut heads: Vec<&String> = entries
        .iter()
        .filter(|e| nvme_numbers(e, "nvme", "n").is_some())
        .collect();
    heads.sort_by_key(|n| nvme_numbers(n, "nvme", "n").unwrap_or_default());
    let mine = |f: &&mut Found| controllers.contains(&f.controller.name);
    let paths: Vec<(String, String)> = found
        .iter_mut()
        .filter(mine)
        .flat_map(|f| f.paths.iter().cloned())
        .collect();
    let mut namespaces = Vec::new();
    for head in heads {
        let head_dir = join(&dir, head);
        namespaces.push(namespace::read_head(r, &head_dir, head, generics, &paths));
    }
    for f in found.iter_mut().filter(mine) {
        f.controller.subsystem = Some(name.clone());
        for (ns_name, ns_dir) in &f.namespaces {
            let owner = &f.controller.name;
            namespaces.push(namespace::read_private(r, ns_dir, ns_name, owner, generics));
        }
    }
    let iopolicy = r.read_trimmed(&join(&dir, "iopolicy"));
    let nqn = r.read_trimmed(&join(&dir, "subsysnqn")).unwrap_or_default();
    Some(Subsystem {
        name,
        nqn,
        iopolicy,
        controllers,
        namespaces,
    })
}

/// Names in `/sys/class/nvme-generic` (`ng0n1`), each link resolved so that
/// a snapshot keeps it.
fn read_generics(r: &mut Reader) -> BTreeSet<String> {
    const DIR: &str = "sys/class/nvme-generic";
    let names = r.list(DIR).unwrap_or_default();
    for name in &names {
        r.resolve(&join(DIR, name));
    }
    names.into_iter().collect()
}
