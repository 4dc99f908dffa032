//! Each fixture machine: its key facts asserted one by one, the whole model
//! against a reviewed golden JSON (`tests/golden/<machine>.json`; rewrite
//! with `UPDATE_GOLDEN=1 cargo test -p topology --test fixtures` and review
//! the diff), and doctor's findings.

mod common;

use common::{fixtures_dir, machines};
use topology::doctor::{diagnose, Severity};
use topology::{DeviceNode, NodeId, Transport};

use common::golden::{check_golden, cpus, discover, findings};

#[test]
fn committed_fixtures_match_the_generator() {
    for m in machines::all() {
        let committed =
            common::gen::Tree::read(&fixtures_dir().join(&m.name)).expect("fixture readable");
        let generated = m.tree();
        assert_eq!(
            committed.links, generated.links,
            "{}: symlinks differ; run `cargo run -p topology --example gen_fixtures`",
            m.name
        );
        assert!(
            committed.files == generated.files,
            "{}: files differ; run `cargo run -p topology --example gen_fixtures`",
            m.name
        );
    }
}

#[test]
fn r740xd_two_sockets_twelve_drives_split_six_six() {
    let t = discover("r740xd-2s-12nvme");
    assert_eq!(t.nodes.len(), 2);
    assert_eq!(t.nodes[0].cpus, cpus((0..48).map(|k| 2 * k)));
    assert_eq!(t.nodes[1].cpus, cpus((0..48).map(|k| 2 * k + 1)));
    assert_eq!(t.nodes[0].distances, vec![10, 21]);
    assert_eq!(t.nodes[1].memory_bytes, 196_347_452 * 1024);
    assert_eq!(t.cpus.len(), 96);
    assert!(t.cpus.iter().all(|c| c.online));
    assert_eq!(t.cpus[0].siblings, cpus([0, 48]));
    assert_eq!(t.cpus[51].siblings, cpus([3, 51]));
    assert_eq!(
        (t.cpus[51].package, t.cpus[51].node),
        (Some(1), Some(NodeId(1)))
    );
    assert_eq!(t.controllers.len(), 12);
    for (i, c) in t.controllers.iter().enumerate() {
        assert_eq!(c.name, format!("nvme{i}"));
        assert_eq!(
            c.numa_node,
            DeviceNode::Known(NodeId(if i < 6 { 0 } else { 1 })),
            "{}",
            c.name
        );
        assert_eq!(c.transport, Transport::Pcie);
        assert_eq!(c.irqs.len(), 33, "admin + 32 I/O queue IRQs");
        assert_eq!(c.queue_count, 36, "32 IRQ queues + 4 poll queues");
        assert_eq!(
            c.subsystem.as_deref(),
            Some(format!("nvme-subsys{i}").as_str())
        );
    }
    let c0 = &t.controllers[0];
    assert_eq!(
        c0.pci_path,
        vec!["pci0000:3a", "0000:3a:00.0", "0000:3b:00.0"]
    );
    assert_eq!(c0.address, "0000:3b:00.0");
    assert_eq!(c0.local_cpus, t.nodes[0].cpus);
    assert_eq!(c0.irqs[1].name, "nvme0q1");
    assert_eq!(c0.irqs[1].effective_affinity, cpus([0]));
    assert_eq!(t.interrupt_cpus.len(), 96);
    let ns = &t.subsystems[0].namespaces[0];
    assert_eq!(
        (ns.block_device.as_str(), ns.generic_device.as_deref()),
        ("nvme0n1", Some("ng0n1"))
    );
    assert_eq!(ns.size_bytes, 3_125_627_568 * 512);
    assert_eq!(ns.queue.scheduler.as_deref(), Some("none"));
    assert_eq!(ns.queue.hw_queues, vec![], "a multipath head is bio-based");
    assert_eq!(ns.paths.len(), 1);
    assert_eq!(ns.paths[0].controller, "nvme0");
    assert_eq!(ns.paths[0].numa_nodes, Some(vec![NodeId(0)]));
    assert_eq!(ns.paths[0].hw_queues.len(), 36);
    assert_eq!(ns.paths[0].hw_queues[0].cpus, cpus([0, 2, 48]));
    assert_eq!(t.nvme_params.multipath, Some(true));
    assert!(t.unreadable.is_empty());
    assert_eq!(findings(&t), vec![], "clean machine");
    check_golden("r740xd-2s-12nvme", &t);
}

#[test]
fn big_448_cpus_siblings_n_and_n_plus_112_sixteen_drives_on_socket_0() {
    let t = discover("2s-448cpu-16nvme");
    assert_eq!(t.cpus.len(), 448);
    assert_eq!(t.nodes[0].cpus, cpus(0..224));
    assert_eq!(t.nodes[1].cpus, cpus(224..448));
    assert_eq!(t.cpus[5].siblings, cpus([5, 117]));
    assert_eq!(t.cpus[117].siblings, cpus([5, 117]));
    assert_eq!(t.cpus[230].siblings, cpus([230, 342]));
    assert_eq!((t.cpus[342].package, t.cpus[342].core), (Some(1), Some(6)));
    assert_eq!(t.controllers.len(), 16);
    assert!(t
        .controllers
        .iter()
        .all(|c| c.numa_node == DeviceNode::Known(NodeId(0))));
    assert_eq!(
        t.controllers[10].name, "nvme10",
        "numeric, not lexical, order"
    );
    assert_eq!(
        t.controllers[10].pci_path,
        vec!["pci0000:20", "0000:20:01.1", "0000:23:00.0"]
    );
    assert_eq!(t.nvme_params.multipath, Some(false));
    // Native multipath off: one namespace per controller, owned by it.
    let ns = &t.subsystems[3].namespaces[0];
    assert_eq!(ns.block_device, "nvme3n1");
    assert_eq!(ns.controller.as_deref(), Some("nvme3"));
    assert!(ns.paths.is_empty());
    assert_eq!(ns.queue.hw_queues.len(), 10);
    assert_eq!(ns.queue.io_poll, Some(true));
    assert_eq!(t.controllers[3].queue_count, 10);
    assert_eq!(t.interrupt_cpus.len(), 448);
    assert_eq!(t.controllers[0].irqs[1].per_cpu_counts.len(), 448);
    assert_eq!(findings(&t), vec![], "clean machine");
    check_golden("2s-448cpu-16nvme", &t);
}

#[test]
fn one_node_one_drive() {
    let t = discover("one-node-1nvme");
    assert_eq!(t.nodes.len(), 1);
    assert_eq!(
        t.cpus
            .iter()
            .map(|c| c.siblings.clone())
            .collect::<Vec<_>>()[1],
        cpus([1, 5])
    );
    assert_eq!(t.controllers.len(), 1);
    assert_eq!(t.controllers[0].model, "Samsung SSD 980 PRO 1TB");
    assert_eq!(t.subsystems[0].namespaces[0].logical_block_size, 512);
    assert_eq!(
        t.subsystems[0].namespaces[0].queue.write_cache.as_deref(),
        Some("write through")
    );
    assert_eq!(findings(&t), vec![], "clean machine");
    check_golden("one-node-1nvme", &t);
}

#[test]
fn block_stack_machine_discovers_its_namespaces_and_is_clean() {
    let t = discover("2node-blockstack");
    assert_eq!(t.nodes.len(), 2);
    assert_eq!(
        t.block_devices(),
        vec!["nvme0n1", "nvme1n1", "nvme1n2", "nvme2n1", "nvme2n2"]
    );
    let nodes: Vec<DeviceNode> = t.controllers.iter().map(|c| c.numa_node).collect();
    assert_eq!(
        nodes,
        vec![
            DeviceNode::Known(NodeId(0)),
            DeviceNode::Known(NodeId(1)),
            DeviceNode::Known(NodeId(1))
        ]
    );
    assert_eq!(
        t.subsystems[1].namespaces[1].generic_device.as_deref(),
        Some("ng1n2")
    );
    assert_eq!(findings(&t), vec![], "clean machine");
    check_golden("2node-blockstack", &t);
}

#[test]
fn no_nvme_is_not_an_error() {
    let t = discover("no-nvme");
    assert_eq!(t.nodes.len(), 1);
    assert_eq!(t.cpus.len(), 4);
    assert!(t.controllers.is_empty() && t.subsystems.is_empty());
    assert_eq!(t.nvme_params, Default::default());
    assert!(topology::render::tree(&t).contains("no NVMe controllers found"));
    assert_eq!(findings(&t), vec![], "clean machine");
    check_golden("no-nvme", &t);
}

#[test]
fn numa_node_minus_one_is_kept_unknown() {
    let t = discover("numa-unknown");
    assert!(t
        .controllers
        .iter()
        .all(|c| c.numa_node == DeviceNode::Unknown));
    assert_eq!(t.controllers[0].local_cpus, cpus(0..15));
    let offline = &t.cpus[15];
    assert!(!offline.online);
    assert_eq!(
        (offline.package, offline.node),
        (None, Some(NodeId(1))),
        "node from the cpu15/node1 link"
    );
    assert_eq!(
        t.subsystems[1].namespaces[0].paths[0].scheduler.as_deref(),
        Some("mq-deadline")
    );
    let expected = vec![
        (
            Severity::Error,
            "controller-node-unknown".to_string(),
            "nvme0".to_string(),
        ),
        (
            Severity::Error,
            "controller-node-unknown".to_string(),
            "nvme1".to_string(),
        ),
        (
            Severity::Warning,
            "scheduler-not-none".to_string(),
            "nvme1n1".to_string(),
        ),
        (
            Severity::Warning,
            "cpus-offline".to_string(),
            "cpus".to_string(),
        ),
        (
            Severity::Info,
            "no-poll-queues".to_string(),
            "nvme".to_string(),
        ),
    ];
    assert_eq!(findings(&t), expected);
    let first = &diagnose(&t)[0];
    assert!(
        first.message.contains("nvme0n1"),
        "says which namespaces are exposed: {}",
        first.message
    );
    assert_eq!(first.evidence[0].path, "/sys/class/nvme/nvme0/numa_node");
    assert_eq!(first.evidence[0].value, "-1");
    check_golden("numa-unknown", &t);
}

#[test]
fn power_node_without_cpus_or_memory_holding_a_drive() {
    let t = discover("power-3node");
    assert_eq!(t.nodes.len(), 3);
    assert!(t.nodes[2].cpus.is_empty());
    assert_eq!(t.nodes[2].memory_bytes, 0);
    assert_eq!(t.nodes[2].distances, vec![40, 40, 10]);
    assert_eq!(t.cpus[0].siblings, cpus(0..4));
    assert_eq!(t.controllers[0].numa_node, DeviceNode::Known(NodeId(2)));
    assert_eq!(
        t.controllers[0].pci_path,
        vec!["pci0030:00", "0030:00:00.0", "0030:01:00.0"]
    );
    assert!(t.controllers[0].local_cpus.is_empty());
    let expected = vec![
        (
            Severity::Warning,
            "node-without-cpus".to_string(),
            "node 2".to_string(),
        ),
        (
            Severity::Warning,
            "node-without-memory".to_string(),
            "node 2".to_string(),
        ),
    ];
    assert_eq!(findings(&t), expected);
    check_golden("power-3node", &t);
}

#[test]
fn multipath_across_nodes_and_a_tcp_controller() {
    let t = discover("2node-multipath-tcp");
    let dual = &t.subsystems[0];
    assert_eq!(dual.controllers, vec!["nvme0", "nvme1"]);
    assert_eq!(dual.iopolicy.as_deref(), Some("round-robin"));
    let ns = &dual.namespaces[0];
    let paths: Vec<(&str, &str)> = ns
        .paths
        .iter()
        .map(|p| (p.device.as_str(), p.controller.as_str()))
        .collect();
    assert_eq!(paths, vec![("nvme0c0n1", "nvme0"), ("nvme0c1n1", "nvme1")]);
    assert_eq!(
        ns.paths[0].numa_nodes,
        Some(vec![]),
        "empty under round-robin"
    );
    let tcp = &t.controllers[2];
    assert_eq!(tcp.transport, Transport::Tcp);
    assert_eq!(
        tcp.address,
        "traddr=192.168.100.10,trsvcid=4420,src_addr=192.168.100.1"
    );
    assert_eq!(tcp.numa_node, DeviceNode::Unknown);
    assert!(tcp.pci_path.is_empty() && tcp.irqs.is_empty());
    assert_eq!(
        tcp.queue_count, 16,
        "from the hardware queues: TCP queues have no IRQ"
    );
    assert_eq!(
        t.subsystems[1].namespaces[0].paths[0].numa_nodes,
        Some(vec![NodeId(0), NodeId(1)])
    );
    let expected = vec![
        (
            Severity::Warning,
            "iopolicy-not-numa".to_string(),
            "nvme-subsys0".to_string(),
        ),
        (
            Severity::Warning,
            "irq-remote-node".to_string(),
            "nvme1".to_string(),
        ),
        // Round-robin over nvme0 (node 0) and nvme1 (node 1): half of each
        // node's I/O takes the far path.
        (
            Severity::Warning,
            "multipath-path-not-nearest".to_string(),
            "nvme0n1 node 0".to_string(),
        ),
        (
            Severity::Warning,
            "multipath-path-not-nearest".to_string(),
            "nvme0n1 node 1".to_string(),
        ),
        (
            Severity::Info,
            "controller-node-unknown".to_string(),
            "nvme2".to_string(),
        ),
    ];
    assert_eq!(findings(&t), expected);
    let irq = &diagnose(&t)[1];
    assert!(
        irq.message
            .starts_with("8 of 16 queue IRQs of nvme1 (node 1) fire on node 0"),
        "{}",
        irq.message
    );
    check_golden("2node-multipath-tcp", &t);
}

#[test]
fn lookups_resolve_devices_to_namespaces_controllers_and_nodes() {
    let t = discover("2node-multipath-tcp");
    let head = t.find_device("/dev/nvme0n1").expect("head");
    assert_eq!(
        head.controllers
            .iter()
            .map(|c| c.name.as_str())
            .collect::<Vec<_>>(),
        vec!["nvme0", "nvme1"]
    );
    assert_eq!(head.nodes(), vec![NodeId(0), NodeId(1)]);
    assert_eq!(
        t.find_device("ng0n1")
            .expect("generic")
            .namespace
            .block_device,
        "nvme0n1"
    );
    let path = t.find_device("nvme0c1n1").expect("path");
    assert_eq!(
        (path.path.map(|p| p.controller.as_str()), path.nodes()),
        (Some("nvme1"), vec![NodeId(1)])
    );
    let tcp = t
        .find_device("/dev/nvme1n1p3")
        .expect("partition of the tcp namespace");
    assert!(tcp.has_unknown_node() && tcp.nodes().is_empty());
    assert!(t.find_device("nvme9n1").is_none());
    assert_eq!(t.block_devices(), vec!["nvme0n1", "nvme1n1"]);

    let big = discover("2s-448cpu-16nvme");
    let d = big.find_device("nvme12n1").expect("private namespace");
    assert_eq!(
        (d.controllers[0].name.as_str(), d.nodes()),
        ("nvme12", vec![NodeId(0)])
    );
    assert_eq!(big.online_cpus_of(NodeId(1)), cpus(224..448));
}

#[test]
fn irq_check_without_a_queue_map_flags_only_controllers_with_no_irq_at_home() {
    // Managed spreading over both nodes, queue map unknown: not a finding.
    let mut t = discover("r740xd-2s-12nvme");
    for ns in t.subsystems.iter_mut().flat_map(|s| &mut s.namespaces) {
        ns.paths.iter_mut().for_each(|p| p.hw_queues.clear());
    }
    assert_eq!(findings(&t), vec![]);
    // Every IRQ of nvme1 (node 1) on CPU 0, queue map unknown: all 16 flagged.
    let mut t = discover("2node-multipath-tcp");
    for ns in t.subsystems.iter_mut().flat_map(|s| &mut s.namespaces) {
        ns.paths.iter_mut().for_each(|p| p.hw_queues.clear());
    }
    let irq = diagnose(&t)
        .into_iter()
        .find(|f| f.code == "irq-remote-node")
        .expect("flagged");
    assert!(
        irq.message.starts_with("16 of 16 queue IRQs of nvme1"),
        "{}",
        irq.message
    );
}
