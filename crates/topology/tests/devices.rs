//! Device-level queries on fixture roots: a block device's facts, NVMe
//! namespace ↔ block ↔ generic device, multipath heads, what a device
//! stack sits on and its node, and the host record, mounts and CPU ↔ node
//! queries. `2node-blockstack` holds partitions, dm, md and loop devices
//! over NVMe on two nodes (see `common/machines.rs`).

mod common;

use std::path::{Path, PathBuf};

use common::fixtures_dir;
use topology::device::{
    block_device, block_stack, generic_device, generic_name, multipath_head, node_of_path,
    nvme_namespace, BlockKind, ControllerNode, DevNum, PartitionOf, StackNode,
};
use topology::host::{cpu_node, host_record, mount_of, mounts, node_cpus};
use topology::{CpuId, DeviceNode, NodeId, TopologyError};

fn root(name: &str) -> PathBuf {
    fixtures_dir().join(name)
}

fn stack() -> PathBuf {
    root("2node-blockstack")
}

/// The device number in a fixture's `dev` file.
fn dev_of(root: &Path, rel: &str) -> DevNum {
    let text = std::fs::read_to_string(root.join(rel).join("dev")).expect("dev file");
    DevNum::parse(&text).expect("MAJ:MIN")
}

fn block_dev(name: &str) -> DevNum {
    dev_of(&stack(), &format!("sys/class/block/{name}"))
}

#[test]
fn a_disk_lists_its_partitions_and_queue() {
    let d = block_device(&stack(), block_dev("nvme0n1")).expect("nvme0n1");
    assert_eq!(d.name, "nvme0n1");
    assert_eq!(d.kind, BlockKind::Nvme);
    assert_eq!(d.partition, None);
    let parts: Vec<(&str, Option<u32>)> = d
        .partitions
        .iter()
        .map(|p| (p.name.as_str(), p.number))
        .collect();
    assert_eq!(parts, vec![("nvme0n1p1", Some(1)), ("nvme0n1p2", Some(2))]);
    assert_eq!(d.partitions[1].dev, Some(block_dev("nvme0n1p2")));
    assert!(d.holders.is_empty() && d.slaves.is_empty());
    assert_eq!(d.size_bytes, Some(3_750_748_848 * 512));
    assert_eq!(d.queue.scheduler.as_deref(), Some("none"));
    assert_eq!(d.queue.io_poll, Some(true));
    assert_eq!(d.queue.logical_block_size, Some(512));
    assert_eq!(d.queue.max_hw_sectors_kb, Some(2048));
    assert_eq!(d.queue.rotational, Some(false));
    assert!(
        d.sysfs_dir.ends_with("nvme/nvme0/nvme0n1"),
        "{}",
        d.sysfs_dir
    );
}

#[test]
fn a_partition_reports_its_disk_and_the_disks_queue() {
    let p = block_device(&stack(), block_dev("nvme0n1p2")).expect("partition");
    assert_eq!(
        p.partition,
        Some(PartitionOf {
            disk: "nvme0n1".into(),
            number: 2
        })
    );
    assert_eq!(p.disk(), "nvme0n1");
    assert_eq!(p.queue.logical_block_size, Some(512), "the disk's queue");
    assert_eq!(p.holders, vec!["dm-1".to_string()]);
    assert!(p.partitions.is_empty());
    assert_eq!(p.size_bytes, Some(1_048_576_000 * 512));
    assert_eq!(p.describe(), "nvme0n1p2 (partition 2 of nvme0n1)");
}

#[test]
fn virtual_devices_name_their_kind_and_slaves() {
    let dm = block_device(&stack(), DevNum::new(253, 1)).expect("dm-1");
    assert_eq!(
        dm.kind,
        BlockKind::DeviceMapper {
            name: Some("span".into())
        }
    );
    assert_eq!(
        dm.slaves,
        vec!["nvme0n1p2".to_string(), "nvme2n1".to_string()]
    );
    assert_eq!(dm.describe(), "dm-1 (device-mapper span)");
    assert_eq!(dm.queue.io_poll, Some(false));
    let md = block_device(&stack(), DevNum::new(9, 0)).expect("md0");
    assert_eq!(md.describe(), "md0 (md raid1)");
    let lo = block_device(&stack(), DevNum::new(7, 0)).expect("loop0");
    assert_eq!(lo.describe(), "loop0 (loop over /var/lib/images/disk.img)");
    let holder = block_device(&stack(), block_dev("nvme1n1")).expect("nvme1n1");
    assert_eq!(holder.holders, vec!["dm-0".to_string()]);
}

#[test]
fn an_unknown_device_number_names_the_missing_link() {
    let e = block_device(&stack(), DevNum::new(8, 0)).expect_err("no sda");
    assert!(
        matches!(e, TopologyError::NoDevice { kind: "block", .. }),
        "{e:?}"
    );
    let text = e.to_string();
    assert!(text.contains("sys/dev/block/8:0 does not exist"), "{text}");
    let e = block_device(Path::new("/nonexistent-root"), DevNum::new(8, 0)).expect_err("root");
    assert!(matches!(e, TopologyError::RootMissing { .. }), "{e:?}");
}

#[test]
fn stacks_go_down_to_the_nvme_controllers_and_their_node() {
    let s = block_stack(&stack(), DevNum::new(253, 0)).expect("dm-0");
    assert_eq!(s.node(), StackNode::Node(NodeId(1)));
    assert_eq!(s.describe(), "dm-0 (device-mapper data-lin) over nvme1n1");
    assert_eq!(s.namespaces[0].controllers[0].name, "nvme1");

    let s = block_stack(&stack(), block_dev("nvme0n1p1")).expect("partition");
    assert_eq!(s.node(), StackNode::Node(NodeId(0)));
    assert_eq!(
        s.layers,
        vec!["nvme0n1p1 (partition 1 of nvme0n1)", "nvme0n1"]
    );

    let s = block_stack(&stack(), DevNum::new(9, 0)).expect("md0");
    assert_eq!(
        s.node(),
        StackNode::Node(NodeId(1)),
        "both members on node 1"
    );
    let names: Vec<&str> = s
        .namespaces
        .iter()
        .map(|n| n.block_device.as_str())
        .collect();
    assert_eq!(names, vec!["nvme1n2", "nvme2n2"]);

    let s = block_stack(&stack(), block_dev("nvme2n2")).expect("bare namespace");
    assert_eq!(s.describe(), "nvme2n2");
    assert!(s.is_plain_nvme());
}

#[test]
fn a_stack_over_two_nodes_says_so() {
    let s = block_stack(&stack(), DevNum::new(253, 1)).expect("dm-1");
    assert_eq!(s.node(), StackNode::Several(vec![NodeId(0), NodeId(1)]));
    assert_eq!(s.node().node(), None);
    assert_eq!(
        s.layers,
        vec![
            "dm-1 (device-mapper span)",
            "nvme0n1p2 (partition 2 of nvme0n1)",
            "nvme0n1",
            "nvme2n1"
        ]
    );
    assert_eq!(
        s.describe(),
        "dm-1 (device-mapper span) over nvme0n1, nvme2n1"
    );
}

#[test]
fn non_nvme_and_unknown_nodes_are_not_guessed() {
    let s = block_stack(&stack(), DevNum::new(7, 0)).expect("loop0");
    assert_eq!(
        s.node(),
        StackNode::NotNvme {
            devices: vec!["loop0".into()]
        }
    );
    // numa-unknown: both controllers report -1.
    let unknown = root("numa-unknown");
    let s = block_stack(&unknown, dev_of(&unknown, "sys/class/block/nvme0n1")).expect("head");
    assert!(
        matches!(&s.node(), StackNode::Unknown { controllers } if !controllers.is_empty()),
        "{:?}",
        s.node()
    );
}

#[test]
fn a_multipath_head_reaches_the_controllers_of_its_paths() {
    let mp = root("2node-multipath-tcp");
    let head = dev_of(&mp, "sys/class/block/nvme0n1");
    let s = block_stack(&mp, head).expect("head");
    let ns = &s.namespaces[0];
    assert!(ns.multipath);
    let ctrls: Vec<(&str, DeviceNode)> = ns
        .controllers
        .iter()
        .map(|c| (c.name.as_str(), c.numa_node))
        .collect();
    assert_eq!(
        ctrls,
        vec![
            ("nvme0", DeviceNode::Known(NodeId(0))),
            ("nvme1", DeviceNode::Known(NodeId(1)))
        ]
    );
    assert_eq!(s.node(), StackNode::Several(vec![NodeId(0), NodeId(1)]));
    let tcp = block_stack(&mp, dev_of(&mp, "sys/class/block/nvme1n1")).expect("tcp head");
    assert_eq!(
        tcp.node(),
        StackNode::Unknown {
            controllers: vec!["nvme2".into()]
        }
    );
}

#[test]
fn namespaces_map_to_block_generic_and_head() {
    let ns = nvme_namespace(&stack(), "nvme1n2")
        .expect("root")
        .expect("a namespace");
    assert_eq!(ns.nsid, Some(2));
    assert_eq!(ns.generic_device.as_deref(), Some("ng1n2"));
    assert!(!ns.multipath);
    assert_eq!(ns.controllers[0].numa_node, DeviceNode::Known(NodeId(1)));
    assert_eq!(nvme_namespace(&stack(), "dm-0").expect("root"), None);
    let mp = root("2node-multipath-tcp");
    let path = nvme_namespace(&mp, "nvme0c1n1")
        .expect("root")
        .expect("a path answers for its head");
    assert_eq!(path.block_device, "nvme0n1");
    assert_eq!(path.generic_device.as_deref(), Some("ng0n1"));
    assert_eq!(
        multipath_head(&mp, "nvme0c1n1").expect("root").as_deref(),
        Some("nvme0n1")
    );
    assert_eq!(multipath_head(&stack(), "nvme0c1n1").expect("root"), None);
    assert_eq!(multipath_head(&mp, "nvme0n1").expect("root"), None);
}

#[test]
fn generic_devices_find_their_namespace_block_device() {
    let st = stack();
    let ng = dev_of(&st, "sys/class/nvme-generic/ng1n2");
    let g = generic_device(&st, ng, 2).expect("ng1n2");
    assert_eq!(g.name, "ng1n2");
    assert_eq!(g.block.name, "nvme1n2");
    assert_eq!(g.block.queue.max_hw_sectors_kb, Some(2048));
    assert_eq!(g.block.size_bytes, Some(209_715_200 * 512));
    let e = generic_device(&st, ng, 3).expect_err("no namespace 3");
    assert!(
        e.to_string()
            .starts_with("no block device of namespace 3 under"),
        "{e}"
    );
    assert_eq!(generic_name(&st, ng).expect("ng1n2"), "ng1n2");
    let e = generic_device(&st, DevNum::new(1, 3), 1).expect_err("/dev/null");
    assert!(e.to_string().contains("of class `mem`"), "{e}");
    let e = generic_name(&st, DevNum::new(1, 3)).expect_err("/dev/null");
    assert!(matches!(e, TopologyError::NotNvmeGeneric { .. }), "{e:?}");
    let e = generic_device(&st, DevNum::new(259, 0), 1).expect_err("a block number");
    assert!(e.to_string().contains("sys/dev/char/259:0"), "{e}");
    // Multipath: the head's generic device sits in the subsystem.
    let mp = root("2node-multipath-tcp");
    let g = generic_device(&mp, dev_of(&mp, "sys/class/nvme-generic/ng0n1"), 1).expect("ng0n1");
    assert_eq!(g.block.name, "nvme0n1");
}

#[test]
fn host_record_mounts_and_cpu_nodes() {
    let st = stack();
    let h = host_record(&st).expect("record");
    assert_eq!(h.hostname, "blockstack");
    assert_eq!(h.kernel, "6.12.12-numio-fixture");
    assert_eq!(h.cpu_model, "Intel(R) Xeon(R) Gold 6430");
    assert_eq!(h.online_cpus.to_string(), "0-7");
    assert_eq!(h.nvme_poll_queues, Some(2));
    let m = mounts(&st).expect("mountinfo");
    assert_eq!(m.len(), 8);
    let root_fs = mount_of(&m, block_dev("nvme0n1p1")).expect("/ is mounted");
    assert_eq!(
        (root_fs.mount_point.as_str(), root_fs.fs_type.as_str()),
        ("/", "ext4")
    );
    assert_eq!(
        mount_of(&m, DevNum::new(253, 0)).map(|m| m.mount_point.as_str()),
        Some("/data")
    );
    assert_eq!(mount_of(&m, block_dev("nvme0n1p2")), None);
    assert_eq!(cpu_node(&st, CpuId(5)).expect("root"), Some(NodeId(1)));
    assert_eq!(cpu_node(&st, CpuId(99)).expect("root"), None);
    assert_eq!(
        node_cpus(&st, NodeId(1)).expect("node 1").to_string(),
        "4-7"
    );
    let e = node_cpus(&st, NodeId(7)).expect_err("no node 7");
    assert!(e.to_string().contains("node7/cpulist is missing"), "{e}");
    let e = mounts(&root("one-node-1nvme")).expect_err("no mountinfo");
    assert!(
        e.to_string().contains("proc/self/mountinfo is missing"),
        "{e}"
    );
    // A fixture without the host files gives an empty record, not an error.
    let bare = host_record(&root("one-node-1nvme")).expect("record");
    assert_eq!((bare.hostname.as_str(), bare.online_cpus.len()), ("", 8));
}

#[test]
fn paths_on_this_machine_are_stat_ed() {
    let live = Path::new("/");
    let (_, node) = node_of_path(live, Path::new("/proc/self")).expect("procfs");
    assert_eq!(
        node,
        StackNode::NotNvme { devices: vec![] },
        "an anonymous device"
    );
    let e = node_of_path(live, Path::new("/dev/null")).expect_err("a character device");
    assert!(e.to_string().contains("/dev/null"), "{e}");
    let e = node_of_path(live, Path::new("/nonexistent/file")).expect_err("missing");
    assert!(e.to_string().contains("/nonexistent/file"), "{e}");
}

/// Regression (issue #15): the namespaces of kernels before 4.15 (no
/// subsystems) and 4.0 and older (misc-class controllers, namespaces in
/// `<pci>/block/`) resolve to their controller and its node.
#[test]
fn older_kernels_namespaces_resolve_to_their_controllers_node() {
    for (fixture, name, controller) in [
        ("nvme-no-subsystems", "nvme1n1", "nvme1"),
        ("nvme-misc-class", "nvme1n2", "nvme1"),
    ] {
        let ns = nvme_namespace(&root(fixture), name)
            .expect("root")
            .unwrap_or_else(|| panic!("{fixture}: {name} is a namespace"));
        assert!(!ns.multipath);
        assert_eq!(
            ns.controllers,
            vec![ControllerNode {
                name: controller.to_string(),
                numa_node: DeviceNode::Known(NodeId(1)),
            }],
            "{fixture}"
        );
        let dev = dev_of(&root(fixture), &format!("sys/class/block/{name}"));
        let stack = block_stack(&root(fixture), dev).expect("stack");
        assert_eq!(stack.node(), StackNode::Node(NodeId(1)), "{fixture}");
    }
}

#[test]
fn a_nodes_cpus_come_from_its_mask_where_the_kernel_wrote_no_list() {
    let cpus = node_cpus(&root("masks-only"), NodeId(3)).expect("node 3");
    assert_eq!(cpus.to_string(), "27-35,63-71");
}

#[test]
fn the_host_records_online_cpus_where_the_kernel_wrote_no_list() {
    let h = host_record(&root("no-online-lists")).expect("root");
    assert_eq!(h.online_cpus.to_string(), "0-5,7-13,15");
}
