//! Machines whose sysfs is laid out as older kernels, other architectures
//! or buggy firmware write it (one per layout numio must read), as specs
//! for `gen.rs`. Each function says what is odd about it.
#![allow(dead_code)]

use super::gen::{Attach, CpuSpec, Machine, NodeSpec};
use super::gen_cpus::NvmeLayout;
use super::machines::{cpus_from, machine, one_ns_subsys, pcie_ctrl, two_nodes, Pci};

/// Every odd machine, by fixture directory name.
pub fn all() -> Vec<Machine> {
    vec![
        nul_terminated_arm(),
        no_online_lists(),
        masks_only(),
        package_unknown(),
        amd_compute_units(),
        nvme_no_subsystems(),
        nvme_misc_class(),
        nvme_vmd(),
        overlapping_node_lists(),
        inconsistent_nodes(),
    ]
}

/// A distance table: `near` between the nodes of one pair (0-1, 2-3),
/// `far` across pairs.
fn four_nodes(memory_kib: u64, near: u32, far: u32) -> Vec<NodeSpec> {
    (0..4u32)
        .map(|id| NodeSpec {
            id,
            memory_kib,
            distances: (0..4u32)
                .map(|o| match (o == id, o / 2 == id / 2) {
                    (true, _) => 10,
                    (false, true) => near,
                    (false, false) => far,
                })
                .collect(),
        })
        .collect()
}

fn singles(ids: std::ops::Range<u32>) -> Vec<Vec<u32>> {
    ids.map(|k| vec![k]).collect()
}

/// An ARM server (one socket, two NUMA nodes of 16 cores, no SMT) whose
/// kernel ends list and mask files and `node/{online,possible}` with
/// `\n\0`. One NVMe on node 1 in PCI domain 000d. Clean.
pub fn nul_terminated_arm() -> Machine {
    let cpus = cpus_from(&[(0, 0, singles(0..16)), (1, 0, singles(16..32))]);
    let mut m = machine(
        "nul-terminated-arm",
        two_nodes(66_691_072),
        cpus,
        Some(true),
        2,
    );
    m.quirks.nul_terminated = true;
    let pci = Pci {
        host: "pci000d:00",
        bridge: "000d:00:01.0",
        bdf: "000d:01:00.0",
    };
    let ctrl = pcie_ctrl(&m, 0, pci, 1, "SAMSUNG MZQL23T8HCLS-00A07", 8, 2, 90);
    m.controllers.push(ctrl);
    m.subsystems.push(one_ns_subsys(
        0,
        &[0],
        7_501_476_528,
        &["optimized"],
        &[Some("1")],
    ));
    m
}

/// An old kernel without `cpu/{online,possible,present}` and
/// `node/{online,possible}`: 2 sockets × 4 cores × SMT 2 (siblings N and
/// N+8), core 6+14 offline (`cpuN/online` = 0; CPU 0 has no `online`
/// file). No NVMe. Planted: the offline CPUs (warning).
pub fn no_online_lists() -> Machine {
    let groups = |base: u32| (0..4).map(|k| vec![base + k, base + k + 8]).collect();
    let mut cpus = cpus_from(&[(0, 0, groups(0)), (1, 1, groups(4))]);
    for c in cpus.iter_mut().filter(|c| c.id == 6 || c.id == 14) {
        c.online = false;
    }
    let mut m = machine("no-online-lists", two_nodes(8_125_440), cpus, None, 0);
    m.quirks.no_online_lists = true;
    m
}

/// Every CPU set only as a hex mask (`nodeN/cpumap`, `thread_siblings`,
/// the PCI `local_cpus`, `smp_affinity`), 72 bits wide (three words): 4
/// nodes (two per package, sub-NUMA clustering) × 9 cores × SMT 2
/// (siblings N and N+36). NVMe on nodes 0 and 3. Clean.
pub fn masks_only() -> Machine {
    let node = |n: u32| -> Vec<Vec<u32>> { (9 * n..9 * n + 9).map(|k| vec![k, k + 36]).collect() };
    let cpus = cpus_from(&[
        (0, 0, node(0)),
        (1, 0, node(1)),
        (2, 1, node(2)),
        (3, 1, node(3)),
    ]);
    let mut m = machine(
        "masks-only",
        four_nodes(32_768_000, 11, 21),
        cpus,
        Some(true),
        2,
    );
    m.quirks.masks_only = true;
    let slots = [
        ("pci0000:00", "0000:00:02.0", "0000:01:00.0", 0),
        ("pci0000:d7", "0000:d7:02.0", "0000:d8:00.0", 3),
    ];
    for (i, (host, bridge, bdf, node)) in slots.into_iter().enumerate() {
        let i = i as u32;
        let pci = Pci { host, bridge, bdf };
        let ctrl = pcie_ctrl(&m, i, pci, node, "INTEL SSDPF2KX038TZ", 8, 2, 100 + 20 * i);
        m.controllers.push(ctrl);
        let nodes = node.to_string();
        m.subsystems.push(one_ns_subsys(
            i,
            &[i],
            7_501_476_528,
            &["optimized"],
            &[Some(nodes.as_str())],
        ));
    }
    m
}

/// An s390 guest: no NUMA (no `devices/system/node`), 8 CPUs in SMT pairs
/// (2k, 2k+1), `physical_package_id` = -1 on every CPU (the kernel does
/// not know the package). No NVMe. Clean.
pub fn package_unknown() -> Machine {
    let cpus: Vec<CpuSpec> = (0..8u32)
        .map(|id| CpuSpec {
            id,
            online: true,
            package: -1,
            core: id / 2,
            siblings: vec![id & !1, id | 1],
            node: 0,
        })
        .collect();
    let mut m = machine("package-unknown", Vec::new(), cpus, None, 0);
    m.quirks.meminfo_kib = Some(16_318_464);
    m
}

/// An AMD Bulldozer-family package (Opteron 6200): two nodes of 8 CPUs in
/// one package; the two threads of a compute unit are siblings
/// (`thread_siblings` 2k, 2k+1) but have core ids of their own (0-7 in
/// each node). NVMe on node 1. Clean.
pub fn amd_compute_units() -> Machine {
    let cpus: Vec<CpuSpec> = (0..16u32)
        .map(|id| CpuSpec {
            id,
            online: true,
            package: 0,
            core: id % 8,
            siblings: vec![id & !1, id | 1],
            node: id / 8,
        })
        .collect();
    let mut m = machine(
        "amd-compute-units",
        two_nodes(16_434_112),
        cpus,
        Some(true),
        2,
    );
    let pci = Pci {
        host: "pci0000:40",
        bridge: "0000:40:02.0",
        bdf: "0000:41:00.0",
    };
    let ctrl = pcie_ctrl(&m, 0, pci, 1, "INTEL SSDPEDMD400G4", 8, 2, 70);
    m.controllers.push(ctrl);
    m.subsystems.push(one_ns_subsys(
        0,
        &[0],
        781_422_768,
        &["optimized"],
        &[Some("1")],
    ));
    m
}

/// Two NVMe drives, one per node, on two 4-CPU nodes, with the PCIe
/// controllers the helpers build for the other machines.
fn two_drives(name: &str, models: [&str; 2]) -> Machine {
    let cpus = cpus_from(&[(0, 0, singles(0..4)), (1, 1, singles(4..8))]);
    let mut m = machine(name, two_nodes(16_318_464), cpus, Some(false), 0);
    let slots = [
        ("pci0000:00", "0000:00:03.0", "0000:04:00.0", 0),
        ("pci0000:80", "0000:80:03.0", "0000:84:00.0", 1),
    ];
    for (i, (host, bridge, bdf, node)) in slots.into_iter().enumerate() {
        let i = i as u32;
        let pci = Pci { host, bridge, bdf };
        let ctrl = pcie_ctrl(&m, i, pci, node, models[i as usize], 4, 0, 60 + 10 * i);
        m.controllers.push(ctrl);
        m.subsystems.push(one_ns_subsys(
            i,
            &[i],
            1_953_525_168,
            &["optimized"],
            &[None],
        ));
    }
    m
}

/// Linux 4.5 to 4.14: `/sys/class/nvme` but no `nvme-subsystem` class (no
/// native multipath), namespaces as children of their controller, no
/// `numa_node` of the controller's own (only `device/numa_node`), no
/// generic devices, no poll queues. Two drives, one per node. Clean.
pub fn nvme_no_subsystems() -> Machine {
    let mut m = two_drives(
        "nvme-no-subsystems",
        ["INTEL SSDPE2MD800G4", "INTEL SSDPE2MD800G4"],
    );
    m.quirks.nvme = NvmeLayout::NoSubsystems;
    m
}

/// Linux 4.0 and older (RHEL 7.0 to 7.2 era): controllers are `misc`
/// devices (`<pci>/misc/nvmeN`, no attributes), namespaces are children
/// of the PCI device (`<pci>/block/nvmeNnM`), bio-based, without `nsid`.
/// Two drives, one per node; the second has two namespaces. Clean.
pub fn nvme_misc_class() -> Machine {
    let mut m = two_drives(
        "nvme-misc-class",
        ["INTEL SSDPEDMD400G4", "INTEL SSDPEDMD400G4"],
    );
    m.quirks.nvme = NvmeLayout::Misc;
    let mut second = m.subsystems[1].namespaces[0].clone();
    second.head_instance = 2;
    second.nsid = 2;
    second.size_sectors = 209_715_200;
    m.subsystems[1].namespaces.push(second);
    m
}

/// Two NVMe drives behind an Intel VMD (Volume Management Device) on node
/// 0: VMD remaps them into PCI domain `10000` (`pci10000:e0`,
/// `10000:e1:00.0`), below the VMD endpoint `0000:00:0e.0`; a third drive
/// on node 1 in domain 0000. 2 nodes × 4 cores × SMT 2. Clean.
pub fn nvme_vmd() -> Machine {
    let groups = |base: u32| (0..4).map(|k| vec![base + k, base + k + 8]).collect();
    let cpus = cpus_from(&[(0, 0, groups(0)), (1, 1, groups(4))]);
    let mut m = machine("nvme-vmd-10000", two_nodes(65_839_104), cpus, Some(true), 2);
    let slots = [
        ("pci0000:00", "0000:00:0e.0", "10000:e1:00.0", 0),
        ("pci0000:00", "0000:00:0e.0", "10000:e2:00.0", 0),
        ("pci0000:80", "0000:80:02.0", "0000:81:00.0", 1),
    ];
    for (i, (host, bridge, bdf, node)) in slots.into_iter().enumerate() {
        let i = i as u32;
        let pci = Pci { host, bridge, bdf };
        let mut ctrl = pcie_ctrl(&m, i, pci, node, "INTEL SSDPF2KX038TZ", 8, 2, 150 + 10 * i);
        if let Attach::Pci { bridges, bdf, .. } = &mut ctrl.attach {
            if bdf.starts_with("10000:") {
                let port = format!("10000:e0:0{}.0", 6 + i);
                *bridges = vec![bridge.to_string(), "pci10000:e0".to_string(), port];
            }
        }
        m.controllers.push(ctrl);
        m.subsystems.push(one_ns_subsys(
            i,
            &[i],
            7_501_476_528,
            &["optimized"],
            &[Some(if node == 0 { "0" } else { "1" })],
        ));
    }
    m
}

/// Buggy firmware: 4 nodes of 2 CPUs each (CPU N on node N/2, as its
/// `cpuN/nodeM` link says), but every `nodeN/cpulist` lists every CPU.
/// NVMe on node 2. Planted: the overlap (warning).
pub fn overlapping_node_lists() -> Machine {
    let cpus = cpus_from(&[
        (0, 0, singles(0..2)),
        (1, 0, singles(2..4)),
        (2, 1, singles(4..6)),
        (3, 1, singles(6..8)),
    ]);
    let mut m = machine(
        "overlapping-node-lists",
        four_nodes(4_194_304, 16, 22),
        cpus,
        Some(true),
        2,
    );
    m.quirks.overlapping_node_lists = true;
    let pci = Pci {
        host: "pci0000:80",
        bridge: "0000:80:01.0",
        bdf: "0000:81:00.0",
    };
    let ctrl = pcie_ctrl(&m, 0, pci, 2, "Micron 7450 MTFDKCC1T9TFR", 4, 2, 50);
    m.controllers.push(ctrl);
    m.subsystems.push(one_ns_subsys(
        0,
        &[0],
        3_750_748_848,
        &["optimized"],
        &[Some("2")],
    ));
    m
}

/// A sysfs that contradicts itself: three node directories, but
/// `node/online` says 0-1; the distance rows of nodes 0 and 1 have three
/// entries; CPUs 6-7 link to node 2, which no online node's list holds;
/// the NVMe drive reports node 2. Planted: distance rows (warning), CPUs
/// on a node not online (warning), online CPUs in no node list (warning).
pub fn inconsistent_nodes() -> Machine {
    let cpus = cpus_from(&[
        (0, 0, singles(0..3)),
        (1, 1, singles(3..6)),
        (2, 1, singles(6..8)),
    ]);
    let nodes = (0..3u32)
        .map(|id| NodeSpec {
            id,
            memory_kib: 8_388_608,
            distances: (0..3u32).map(|o| if o == id { 10 } else { 21 }).collect(),
        })
        .collect();
    let mut m = machine("inconsistent-nodes", nodes, cpus, Some(true), 2);
    m.quirks.online_nodes = Some(vec![0, 1]);
    let pci = Pci {
        host: "pci0000:c0",
        bridge: "0000:c0:01.0",
        bdf: "0000:c1:00.0",
    };
    let ctrl = pcie_ctrl(&m, 0, pci, 2, "KIOXIA KCD8XRUG1T92", 4, 2, 40);
    m.controllers.push(ctrl);
    m.subsystems.push(one_ns_subsys(
        0,
        &[0],
        3_750_748_848,
        &["optimized"],
        &[Some("2")],
    ));
    m
}
