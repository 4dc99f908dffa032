//! NVMe controllers, subsystems, namespaces and paths
//! (`/sys/class/nvme`, `/sys/class/nvme-subsystem`, `/sys/class/nvme-generic`).

use std::collections::BTreeSet;

use super::irq::NvmeIrqs;
use crate::model::{Controller, CpuId, DeviceNode, NodeId, Subsystem, Transport};
use crate::parse::{nvme_numbers, parse_list, parse_num};
use crate::reader::Reader;
use crate::relpath::{join, parent};
use find::{sort_by_numbers, Generation, Located};

mod find;
mod namespace;

/// A controller with the namespace and path devices found in its directory.
struct Found {
    controller: Controller,
    /// Its sysfs directory.
    dir: String,
    /// Non-multipath namespaces (`nvmeXnY` children), as (name, dir).
    namespaces: Vec<(String, String)>,
    /// Multipath path devices (`nvmeXcYnZ` children), as (name, dir).
    paths: Vec<(String, String)>,
}

/// Every controller and subsystem.
pub fn discover(r: &mut Reader, irqs: &NvmeIrqs) -> (Vec<Controller>, Vec<Subsystem>) {
    let (located, generation) = find::controllers(r);
    let mut found: Vec<Found> = located
        .iter()
        .filter_map(|l| read_controller(r, l, irqs))
        .collect();
    let generics = read_generics(r);
    let kernel_subsystems = read_subsystems(r, &mut found, &generics);
    if !found.is_empty() {
        legacy_notes(r, generation, kernel_subsystems.is_none());
    }
    let mut subsystems = kernel_subsystems.unwrap_or_default();
    subsystems.extend(stand_ins(r, &found, &generics));
    let mut controllers: Vec<Controller> = found.into_iter().map(|f| f.controller).collect();
    count_queues(&mut controllers, &subsystems);
    (controllers, subsystems)
}

/// A controller's I/O queue count is the larger of its IRQs and the
/// hardware queues of its devices (poll queues have no IRQ).
fn count_queues(controllers: &mut [Controller], subsystems: &[Subsystem]) {
    for ns in subsystems.iter().flat_map(|s| &s.namespaces) {
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

/// Notes for the layouts of kernels before 4.15.
fn legacy_notes(r: &mut Reader, generation: Generation, no_subsystems: bool) {
    if generation == Generation::Misc {
        let message = "the NVMe controllers are misc devices, as on Linux 4.0 and older (no /sys/class/nvme, no NVMe subsystems): numio found them under /sys/class/misc (or through their namespaces in /sys/block), read each one's namespaces from its PCI device's block/ directory and lists each controller as a stand-in subsystem of its own; these kernels report no model, serial, firmware, state, transport or nsid, so those fields are empty, the transport is PCIe and each namespace's nsid is the Y of its name nvmeXnY".to_string();
        r.note(
            "nvme-misc-class",
            "sys/class/nvme",
            "missing".to_string(),
            message,
        );
    } else if no_subsystems {
        let message = "the kernel has no NVMe subsystems (/sys/class/nvme-subsystem came with native multipath in Linux 4.15): numio read each controller's namespaces from the controller and lists each controller as a stand-in subsystem of its own; multipath and iopolicy do not exist on this kernel".to_string();
        r.note(
            "nvme-subsystems-missing",
            "sys/class/nvme-subsystem",
            "missing".to_string(),
            message,
        );
    }
}

fn transport(text: Option<String>, on_pci: bool) -> Transport {
    match text.as_deref() {
        Some("pcie") => Transport::Pcie,
        Some("tcp") => Transport::Tcp,
        Some("rdma") => Transport::Rdma,
        Some("fc") => Transport::Fc,
        Some("loop") => Transport::Loop,
        // Kernels before 4.8 write no `transport`; a controller on a PCI
        // function is PCIe.
        None if on_pci => Transport::Pcie,
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

/// The controller's own `numa_node`, else its device's; with the file
/// read, named through the class link (`sys/class/nvme/nvme0/numa_node`).
fn read_numa_node(r: &mut Reader, l: &Located, pci: Option<&str>) -> (DeviceNode, String) {
    let own = device_node(r.parse(&join(&l.dir, "numa_node"), parse_num::<i64>));
    if let Some(node) = own {
        return (node, join(&l.class_path, "numa_node"));
    }
    let Some(pci) = pci else {
        return (DeviceNode::Unknown, String::new());
    };
    let file = join(pci, "numa_node");
    match device_node(r.parse(&file, parse_num::<i64>)) {
        // A misc controller is a child of its PCI device, not linked to it.
        Some(node) if find::is_misc_dir(&l.dir) => (node, file),
        Some(node) => (node, join(&l.class_path, "device/numa_node")),
        None => (DeviceNode::Unknown, String::new()),
    }
}

fn read_controller(r: &mut Reader, l: &Located, irqs: &NvmeIrqs) -> Option<Found> {
    let dir = l.dir.clone();
    let instance = nvme_numbers(&l.name, "nvme", "")?[0];
    let attr = |r: &mut Reader, a: &str| r.read_trimmed(&join(&dir, a));
    let transport_attr = attr(r, "transport");
    // A misc controller (4.0 and older) is a child of its PCI device.
    let pci = if find::is_misc_dir(&dir) {
        Some(parent(parent(&dir)).to_string())
    } else {
        let device = r.resolve(&join(&dir, "device"));
        device.as_deref().and_then(find::pci_function_dir)
    };
    let transport = transport(transport_attr, pci.is_some());
    let (mut pci_path, mut local_cpus) = (Vec::new(), Vec::new());
    let pci = pci.filter(|_| transport == Transport::Pcie);
    if let Some(pci) = &pci {
        pci_path = find::pci_path_of(pci);
        local_cpus = r
            .cpu_set(
                &join(pci, "local_cpulist"),
                &join(pci, "local_cpus"),
                parse_list,
            )
            .unwrap_or_default()
            .into_iter()
            .map(CpuId)
            .collect();
    }
    let (numa_node, numa_node_file) = read_numa_node(r, l, pci.as_deref());
    let (namespaces, paths) = children(r, &dir, pci.as_deref(), instance);
    let address = attr(r, "address").or_else(|| {
        pci.as_deref()
            .map(|p| p.rsplit('/').next().unwrap_or(p).to_string())
    });
    let controller = Controller {
        name: l.name.clone(),
        transport,
        address: address.unwrap_or_default(),
        model: attr(r, "model").unwrap_or_default(),
        serial: attr(r, "serial").unwrap_or_default(),
        firmware: attr(r, "firmware_rev").unwrap_or_default(),
        state: attr(r, "state").unwrap_or_default(),
        cntlid: r.parse(&join(&dir, "cntlid"), parse_num::<u32>),
        numa_node,
        numa_node_file,
        pci_path,
        local_cpus,
        subsystem: None,
        queue_count: irqs.io_queue_count(instance),
        irqs: irqs.of_controller(instance),
    };
    Some(Found {
        controller,
        dir,
        namespaces,
        paths,
    })
}

/// Namespaces and path devices of controller `instance`: children of its
/// directory, and (Linux 4.0 and older) `nvme{instance}nY` in its PCI
/// device's `block/` directory.
#[allow(clippy::type_complexity)]
fn children(
    r: &mut Reader,
    dir: &str,
    pci: Option<&str>,
    instance: u32,
) -> (Vec<(String, String)>, Vec<(String, String)>) {
    let (mut namespaces, mut paths) = (Vec::new(), Vec::new());
    for entry in r.list(dir).unwrap_or_default() {
        let ns_dir = join(dir, &entry);
        if nvme_numbers(&entry, "nvme", "n").is_some() {
            namespaces.push((entry, ns_dir));
        } else if nvme_numbers(&entry, "nvme", "cn").is_some() {
            paths.push((entry, ns_dir));
        }
    }
    if find::is_misc_dir(dir) {
        if let Some(block) = pci.map(|p| join(p, "block")) {
            for entry in r.list(&block).unwrap_or_default() {
                if nvme_numbers(&entry, "nvme", "n").is_some_and(|n| n[0] == instance) {
                    let ns_dir = join(&block, &entry);
                    namespaces.push((entry, ns_dir));
                }
            }
        }
    }
    namespaces.sort_by_key(|(n, _)| nvme_numbers(n, "nvme", "n").unwrap_or_default());
    (namespaces, paths)
}

/// The subsystems of `/sys/class/nvme-subsystem`; `None` on a kernel
/// without that class (before 4.15).
fn read_subsystems(
    r: &mut Reader,
    found: &mut [Found],
    generics: &BTreeSet<String>,
) -> Option<Vec<Subsystem>> {
    let mut names: Vec<String> = r
        .list("sys/class/nvme-subsystem")?
        .into_iter()
        .filter(|n| nvme_numbers(n, "nvme-subsys", "").is_some())
        .collect();
    sort_by_numbers(&mut names, "nvme-subsys", "");
    let subsystems = names
        .into_iter()
        .filter_map(|name| read_subsystem(r, name, found, generics))
        .collect();
    Some(subsystems)
}

/// A stand-in subsystem for each controller no subsystem claims (a kernel
/// before 4.15), named after the controller and holding its namespaces.
fn stand_ins(r: &mut Reader, found: &[Found], generics: &BTreeSet<String>) -> Vec<Subsystem> {
    let mut out = Vec::new();
    for f in found.iter().filter(|f| f.controller.subsystem.is_none()) {
        let name = f.controller.name.clone();
        let namespaces = f
            .namespaces
            .iter()
            .map(|(ns_name, ns_dir)| namespace::read_private(r, ns_dir, ns_name, &name, generics))
            .collect();
        let nqn = r
            .read_trimmed(&join(&f.dir, "subsysnqn"))
            .unwrap_or_default();
        out.push(Subsystem {
            name: name.clone(),
            nqn,
            iopolicy: None,
            controllers: vec![name],
            namespaces,
            stand_in: true,
        });
    }
    out
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
        stand_in: false,
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
