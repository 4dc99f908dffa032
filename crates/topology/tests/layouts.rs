//! The layouts of older kernels, other architectures and buggy firmware
//! (issue #15), one fixture each (`tests/common/machines_odd.rs`): key facts
//! asserted one by one, the whole model against its golden JSON, the
//! discovery notes and doctor's findings.

mod common;

use common::golden::{check_golden, cpus, discover, findings};
use topology::doctor::{diagnose, Severity};
use topology::{DeviceNode, NodeId, Topology, Transport};

fn notes(t: &Topology) -> Vec<&str> {
    t.notes.iter().map(|n| n.code.as_str()).collect()
}

fn finding(severity: Severity, code: &str, subject: &str) -> (Severity, String, String) {
    (severity, code.to_string(), subject.to_string())
}

/// Regression: `node/online` ending `0⏎\0` stopped discovery ("expected a
/// number"), and an ARM server's NUL-terminated node lists read as empty.
#[test]
fn files_ending_in_newline_and_nul_read_like_any_other() {
    let t = discover("nul-terminated-arm");
    assert_eq!(t.nodes.len(), 2);
    assert_eq!(t.nodes[0].cpus, cpus(0..16));
    assert_eq!(t.nodes[1].cpus, cpus(16..32));
    assert_eq!(t.cpus.len(), 32);
    assert!(t.cpus.iter().all(|c| c.online && c.package == Some(0)));
    assert_eq!(t.cpus[20].node, Some(NodeId(1)));
    assert_eq!(t.cpus[20].siblings, cpus([20]));
    let c = &t.controllers[0];
    assert_eq!(c.numa_node, DeviceNode::Known(NodeId(1)));
    assert_eq!(c.local_cpus, cpus(16..32));
    assert_eq!(
        c.pci_path,
        vec!["pci000d:00", "000d:00:01.0", "000d:01:00.0"]
    );
    assert!(t.unreadable.is_empty(), "{:?}", t.unreadable);
    assert!(t.notes.is_empty());
    assert_eq!(findings(&t), vec![], "clean machine");
    check_golden("nul-terminated-arm", &t);
}

/// Regression: without `cpu/online` discovery stopped ("is missing, so ...
/// is not a complete sysfs/procfs root").
#[test]
fn missing_online_lists_are_derived_from_the_cpu_and_node_directories() {
    let t = discover("no-online-lists");
    assert_eq!(t.nodes.iter().map(|n| n.id.0).collect::<Vec<_>>(), [0, 1]);
    assert_eq!(t.nodes[0].cpus, cpus([0, 1, 2, 3, 8, 9, 10, 11]));
    assert_eq!(t.nodes[1].cpus, cpus([4, 5, 7, 12, 13, 15]));
    assert_eq!(t.cpus.len(), 16);
    let offline: Vec<u32> = t
        .cpus
        .iter()
        .filter(|c| !c.online)
        .map(|c| c.id.0)
        .collect();
    assert_eq!(offline, [6, 14]);
    assert_eq!(
        (t.cpus[6].node, t.cpus[6].package),
        (Some(NodeId(1)), None),
        "an offline CPU's node from its cpu6/node1 link"
    );
    assert!(t.cpus[0].online, "CPU 0 has no online file: online");
    assert_eq!(t.cpus[12].siblings, cpus([4, 12]));
    assert_eq!(notes(&t), ["cpu-online-missing", "node-online-missing"]);
    assert!(t.notes[0].message.contains("online 0-5,7-13,15"));
    assert_eq!(
        findings(&t),
        vec![
            finding(Severity::Warning, "cpus-offline", "cpus"),
            finding(Severity::Info, "cpu-online-missing", "cpus"),
            finding(Severity::Info, "node-online-missing", "nodes"),
        ]
    );
    let offline = diagnose(&t)
        .into_iter()
        .find(|f| f.code == "cpus-offline")
        .expect("finding");
    assert_eq!(
        offline.evidence[0].path, "/sys/devices/system/cpu/cpu6/online",
        "cites the file read, not the missing list"
    );
    check_golden("no-online-lists", &t);
}

/// Regression: with only `nodeN/cpumap` (no `cpulist`) nodes read as
/// having no CPUs, with nothing reported.
#[test]
fn masks_of_any_width_stand_in_for_missing_lists() {
    let t = discover("masks-only");
    assert_eq!(t.nodes.len(), 4);
    assert_eq!(t.nodes[0].cpus, cpus((0..9).chain(36..45)));
    assert_eq!(t.nodes[3].cpus, cpus((27..36).chain(63..72)));
    assert_eq!(t.nodes[2].distances, vec![21, 21, 10, 11]);
    assert_eq!(t.cpus.len(), 72);
    assert_eq!(t.cpus[40].siblings, cpus([4, 40]));
    assert_eq!(
        (t.cpus[70].package, t.cpus[70].core, t.cpus[70].node),
        (Some(1), Some(7), Some(NodeId(3)))
    );
    let c1 = &t.controllers[1];
    assert_eq!(c1.numa_node, DeviceNode::Known(NodeId(3)));
    assert_eq!(c1.local_cpus, t.nodes[3].cpus, "local_cpus mask");
    assert_eq!(c1.irqs[3].name, "nvme1q3");
    assert_eq!(
        c1.irqs[3].effective_affinity,
        cpus([9]),
        "from the smp_affinity mask"
    );
    assert!(c1.irqs.iter().all(|i| i.effective_affinity.len() == 1));
    assert!(t.unreadable.is_empty(), "{:?}", t.unreadable);
    assert_eq!(notes(&t), ["cpu-lists-missing"]);
    assert_eq!(
        t.notes[0].value,
        "missing (cpulist, local_cpulist, smp_affinity_list, thread_siblings_list)"
    );
    assert_eq!(
        findings(&t),
        vec![finding(Severity::Info, "cpu-lists-missing", "cpus")]
    );
    check_golden("masks-only", &t);
}

/// Regression: `physical_package_id` = -1 was a corrupt file (every CPU
/// unreadable, and doctor said "run numio as root").
#[test]
fn package_minus_one_is_unknown_not_unreadable() {
    let t = discover("package-unknown");
    assert_eq!(t.nodes.len(), 1, "no NUMA: one node");
    assert_eq!(t.nodes[0].cpus, cpus(0..8));
    assert_eq!(t.nodes[0].memory_bytes, 16_318_464 * 1024);
    assert!(t.cpus.iter().all(|c| c.package.is_none()));
    assert_eq!(
        t.cpus.iter().map(|c| c.core).collect::<Vec<_>>(),
        (0..8).map(|i| Some(i / 2)).collect::<Vec<_>>()
    );
    assert_eq!(t.cpus[5].siblings, cpus([4, 5]));
    assert!(t.unreadable.is_empty(), "{:?}", t.unreadable);
    assert_eq!(findings(&t), vec![], "clean machine");
    check_golden("package-unknown", &t);
}

/// Regression: a CPU took the core id of its first SMT sibling, so the
/// second thread of each AMD compute unit was misnumbered.
#[test]
fn each_cpu_keeps_its_own_core_id() {
    let t = discover("amd-compute-units");
    let cores: Vec<Option<u32>> = t.cpus.iter().map(|c| c.core).collect();
    assert_eq!(cores, (0..16).map(|i| Some(i % 8)).collect::<Vec<_>>());
    assert_eq!(t.cpus[1].siblings, cpus([0, 1]));
    assert_eq!(t.cpus[9].siblings, cpus([8, 9]));
    assert_eq!(
        (t.cpus[9].package, t.cpus[9].node),
        (Some(0), Some(NodeId(1)))
    );
    assert_eq!(t.nodes[1].cpus, cpus(8..16));
    assert_eq!(t.controllers[0].numa_node, DeviceNode::Known(NodeId(1)));
    assert_eq!(findings(&t), vec![], "clean machine");
    check_golden("amd-compute-units", &t);
}

/// Regression: without `/sys/class/nvme-subsystem` (kernels before 4.15)
/// namespaces were dropped, so `numio plan /dev/nvme1n1` fell back to
/// node 0.
#[test]
fn kernels_without_subsystems_keep_their_namespaces() {
    let t = discover("nvme-no-subsystems");
    assert_eq!(t.controllers.len(), 2);
    let c1 = &t.controllers[1];
    assert_eq!(c1.numa_node, DeviceNode::Known(NodeId(1)));
    assert_eq!(
        c1.numa_node_file, "sys/class/nvme/nvme1/device/numa_node",
        "the controller has no numa_node of its own on these kernels"
    );
    assert_eq!(c1.subsystem, None);
    assert_eq!(c1.model, "INTEL SSDPE2MD800G4");
    assert_eq!(c1.queue_count, 4);
    assert_eq!(t.subsystems.len(), 2);
    let s1 = &t.subsystems[1];
    assert!(s1.stand_in);
    assert_eq!(
        (s1.name.as_str(), s1.controllers.clone()),
        ("nvme1", vec!["nvme1".to_string()])
    );
    assert_eq!(s1.nqn, "nqn.1994-11.com.example:nvme:numio001");
    let ns = &s1.namespaces[0];
    assert_eq!(
        (ns.block_device.as_str(), ns.nsid, ns.controller.as_deref()),
        ("nvme1n1", 1, Some("nvme1"))
    );
    assert_eq!(ns.generic_device, None);
    assert_eq!(ns.queue.hw_queues.len(), 4);
    let d = t
        .find_device("/dev/nvme1n1")
        .expect("a namespace of this topology");
    assert_eq!(d.nodes(), vec![NodeId(1)]);
    assert_eq!(t.nvme_params, Default::default());
    assert_eq!(notes(&t), ["nvme-subsystems-missing"]);
    assert_eq!(
        findings(&t),
        vec![finding(Severity::Info, "nvme-subsystems-missing", "nvme")]
    );
    check_golden("nvme-no-subsystems", &t);
}

/// Regression: controllers in the `misc` class (Linux 4.0 and older) were
/// not found at all.
#[test]
fn misc_class_controllers_and_their_pci_block_namespaces_are_found() {
    let t = discover("nvme-misc-class");
    assert_eq!(t.controllers.len(), 2);
    let c0 = &t.controllers[0];
    assert_eq!(c0.transport, Transport::Pcie, "taken from the PCI device");
    assert_eq!(c0.address, "0000:04:00.0");
    assert_eq!((c0.model.as_str(), c0.state.as_str()), ("", ""));
    assert_eq!(c0.numa_node, DeviceNode::Known(NodeId(0)));
    assert_eq!(
        c0.numa_node_file,
        "sys/devices/pci0000:00/0000:00:03.0/0000:04:00.0/numa_node"
    );
    assert_eq!(
        c0.pci_path,
        vec!["pci0000:00", "0000:00:03.0", "0000:04:00.0"]
    );
    assert_eq!(c0.local_cpus, cpus(0..4));
    assert_eq!(c0.irqs.len(), 5);
    let names: Vec<&str> = t.block_devices();
    assert_eq!(names, ["nvme0n1", "nvme1n1", "nvme1n2"]);
    let ns = &t.subsystems[1].namespaces[1];
    assert_eq!(ns.nsid, 2, "from the name nvme1n2");
    assert_eq!(ns.size_bytes, 209_715_200 * 512);
    assert!(ns.queue.hw_queues.is_empty(), "bio-based");
    assert_eq!(
        t.find_device("nvme1n2").expect("found").nodes(),
        vec![NodeId(1)]
    );
    assert_eq!(notes(&t), ["nvme-misc-class"]);
    assert_eq!(
        findings(&t),
        vec![finding(Severity::Info, "nvme-misc-class", "nvme")]
    );
    check_golden("nvme-misc-class", &t);
}

/// Regression: behind Intel VMD (PCI domain 10000) the PCI path stopped at
/// the host bridge, as addresses were taken to be 12 characters long.
#[test]
fn vmd_domains_wider_than_four_digits_keep_their_pci_path() {
    let t = discover("nvme-vmd-10000");
    let c0 = &t.controllers[0];
    assert_eq!(c0.address, "10000:e1:00.0");
    assert_eq!(
        c0.pci_path,
        vec![
            "pci0000:00",
            "0000:00:0e.0",
            "pci10000:e0",
            "10000:e0:06.0",
            "10000:e1:00.0"
        ]
    );
    assert_eq!(c0.numa_node, DeviceNode::Known(NodeId(0)));
    assert_eq!(c0.local_cpus, t.nodes[0].cpus);
    assert_eq!(t.controllers[1].pci_path[3], "10000:e0:07.0");
    assert_eq!(
        t.controllers[2].pci_path,
        vec!["pci0000:80", "0000:80:02.0", "0000:81:00.0"]
    );
    assert_eq!(findings(&t), vec![], "clean machine");
    check_golden("nvme-vmd-10000", &t);
}

/// Regression: when every node listed every CPU, each CPU went to the last
/// node, silently.
#[test]
fn overlapping_node_lists_are_settled_by_the_cpu_links_and_reported() {
    let t = discover("overlapping-node-lists");
    let lists: Vec<String> = t
        .nodes
        .iter()
        .map(|n| topology::CpuList::of(&n.cpus).to_string())
        .collect();
    assert_eq!(lists, ["0-1", "2-3", "4-5", "6-7"]);
    let nodes: Vec<Option<u32>> = t.cpus.iter().map(|c| c.node.map(|n| n.0)).collect();
    assert_eq!(nodes, (0..8).map(|i| Some(i / 2)).collect::<Vec<_>>());
    assert_eq!(notes(&t), ["node-lists-overlap"]);
    assert_eq!(t.notes[0].value, "0-7");
    assert_eq!(
        findings(&t),
        vec![finding(Severity::Warning, "node-lists-overlap", "nodes")]
    );
    check_golden("overlapping-node-lists", &t);
}

/// Distance rows that do not match the node count, CPUs on a node that is
/// not online, and a drive there: each reported, none silently used.
#[test]
fn a_sysfs_that_contradicts_itself_is_reported() {
    let t = discover("inconsistent-nodes");
    assert_eq!(t.nodes.iter().map(|n| n.id.0).collect::<Vec<_>>(), [0, 1]);
    assert_eq!(t.nodes[0].distances, vec![10, 21, 21]);
    assert_eq!(
        (t.cpus[6].node, t.cpus[7].node),
        (Some(NodeId(2)), Some(NodeId(2))),
        "their own links"
    );
    assert!(t
        .nodes
        .iter()
        .all(|n| !n.cpus.contains(&topology::CpuId(6))));
    assert_eq!(t.controllers[0].numa_node, DeviceNode::Known(NodeId(2)));
    assert_eq!(
        findings(&t),
        vec![
            finding(Severity::Warning, "distance-table-mismatch", "node 0"),
            finding(Severity::Warning, "cpu-node-not-listed", "node 2"),
            finding(Severity::Warning, "cpus-not-in-node-lists", "cpus"),
            finding(Severity::Warning, "controller-node-not-online", "nvme0"),
        ]
    );
    let text = topology::render::tree(&t);
    assert!(
        text.contains("cpus in no node's list: 6-7 (their own node: 2)"),
        "{text}"
    );
    check_golden("inconsistent-nodes", &t);
}

/// Regression (doctor point 10): evidence named
/// `/sys/class/nvme/nvmeX/numa_node` where discovery had read
/// `device/numa_node`.
#[test]
fn doctor_cites_the_numa_node_file_it_read() {
    let mut t = discover("nvme-no-subsystems");
    t.controllers[0].numa_node = DeviceNode::Unknown;
    let f = diagnose(&t)
        .into_iter()
        .find(|f| f.code == "controller-node-unknown")
        .expect("unknown node on a 2-node machine");
    assert_eq!(f.evidence[0].path, "/sys/class/nvme/nvme0/device/numa_node");
    let t = discover("numa-unknown");
    let f = &diagnose(&t)[0];
    assert_eq!(f.evidence[0].path, "/sys/class/nvme/nvme0/numa_node");
}

#[test]
fn a_machine_without_distances_is_told_so_once() {
    let mut t = discover("no-online-lists");
    t.nodes.iter_mut().for_each(|n| n.distances.clear());
    let codes: Vec<(Severity, String, String)> = findings(&t)
        .into_iter()
        .filter(|f| f.1.starts_with("distance"))
        .collect();
    assert_eq!(
        codes,
        vec![finding(Severity::Info, "distance-table-missing", "nodes")]
    );
    t.nodes[1].distances = vec![21, 10];
    let codes: Vec<String> = findings(&t).into_iter().map(|f| f.1).collect();
    assert!(
        codes.contains(&"distance-table-mismatch".to_string()),
        "{codes:?}"
    );
}
