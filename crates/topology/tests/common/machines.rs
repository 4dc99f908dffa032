//! The machines of `tests/fixtures/sysfs/`, as specs for `gen.rs`.
//!
//! Clean machines (no doctor finding): `r740xd-2s-12nvme`, `2s-448cpu-16nvme`,
//! `one-node-1nvme`, `no-nvme`. Machines with planted problems:
//! `numa-unknown`, `power-3node`, `2node-multipath-tcp` (see each function).
//! The layouts of older kernels and odd firmware are in `machines_odd.rs`.
#![allow(dead_code)]

use super::gen::{Attach, CpuSpec, CtrlSpec, Machine, NodeSpec, NsSpec, SubsysSpec};
use super::gen_block::{BlockLayer, VirtualDisk, VirtualKind};

/// Every machine, by fixture directory name.
pub fn all() -> Vec<Machine> {
    let mut all = vec![
        r740xd(),
        big_448(),
        one_node(),
        no_nvme(),
        numa_unknown(),
        power_3node(),
        multipath_tcp(),
        blockstack(),
    ];
    all.extend(super::machines_odd::all());
    all
}

/// CPUs of a machine: `layout` gives, per node, the packages' CPUs as
/// sibling groups (`[[0, 48], [2, 50], ...]`); `core` numbers each group.
pub(super) fn cpus_from(groups_per_node: &[(u32, u32, Vec<Vec<u32>>)]) -> Vec<CpuSpec> {
    let mut cpus = Vec::new();
    for (node, package, groups) in groups_per_node {
        for (core, group) in groups.iter().enumerate() {
            for &id in group {
                cpus.push(CpuSpec {
                    id,
                    online: true,
                    package: *package as i32,
                    core: core as u32,
                    siblings: group.clone(),
                    node: *node,
                });
            }
        }
    }
    cpus.sort_by_key(|c| c.id);
    cpus
}

/// Managed IRQ spreading like the kernel's `group_cpus_evenly`: queues are
/// shared among nodes by their CPU counts, and each node's CPUs (sibling
/// groups kept together) are cut into consecutive runs.
pub fn spread(cpus: &[CpuSpec], nodes: &[u32], queues: u32) -> Vec<Vec<u32>> {
    let per_node: Vec<Vec<u32>> = nodes
        .iter()
        .map(|n| {
            let mut order = Vec::new();
            for c in cpus.iter().filter(|c| c.node == *n && c.online) {
                for s in &c.siblings {
                    if !order.contains(s) {
                        order.push(*s);
                    }
                }
            }
            order
        })
        .filter(|v: &Vec<u32>| !v.is_empty())
        .collect();
    let total: usize = per_node.iter().map(Vec::len).sum();
    let mut out = Vec::new();
    let mut left = queues as usize;
    for (i, order) in per_node.iter().enumerate() {
        let mine = if i + 1 == per_node.len() {
            left
        } else {
            (queues as usize * order.len() / total).max(1)
        };
        left -= mine;
        for q in 0..mine {
            let (lo, hi) = (order.len() * q / mine, order.len() * (q + 1) / mine);
            let mut chunk = order[lo..hi].to_vec();
            chunk.sort_unstable();
            out.push(chunk);
        }
    }
    out
}

pub(super) struct Pci<'a> {
    pub host: &'a str,
    pub bridge: &'a str,
    pub bdf: &'a str,
}

#[allow(clippy::too_many_arguments)]
pub(super) fn pcie_ctrl(
    m: &Machine,
    instance: u32,
    pci: Pci,
    node: i32,
    model: &str,
    queues: u32,
    poll: u32,
    first_irq: u32,
) -> CtrlSpec {
    let node_ids: Vec<u32> = m.nodes.iter().map(|n| n.id).collect();
    let queue_cpus = spread(&m.cpus, &node_ids, queues);
    let irq_cpus = queue_cpus.iter().map(|c| c[0]).collect();
    let local: Vec<u32> = if node < 0 {
        m.cpus.iter().filter(|c| c.online).map(|c| c.id).collect()
    } else {
        m.cpus
            .iter()
            .filter(|c| c.online && c.node == node as u32)
            .map(|c| c.id)
            .collect()
    };
    CtrlSpec {
        instance,
        attach: Attach::Pci {
            host: pci.host.to_string(),
            bridges: vec![pci.bridge.to_string()],
            bdf: pci.bdf.to_string(),
            local_cpus: local,
            numa_node: node,
        },
        model: model.to_string(),
        serial: format!("S{:0>3}NUM{instance:0>4}", 100 + instance),
        firmware: "2.1.8".to_string(),
        cntlid: 1,
        numa_node: node,
        subsystem: instance,
        queue_cpus,
        irq_cpus,
        poll_queues: poll,
        first_irq,
    }
}

pub(super) fn one_ns_subsys(
    instance: u32,
    ctrls: &[u32],
    size_sectors: u64,
    ana: &[&str],
    numa_nodes: &[Option<&str>],
) -> SubsysSpec {
    SubsysSpec {
        instance,
        nqn: format!("nqn.1994-11.com.example:nvme:numio{instance:03}"),
        iopolicy: "numa".to_string(),
        namespaces: vec![NsSpec {
            head_instance: 1,
            nsid: 1,
            size_sectors,
            lba_bytes: 512,
            scheduler: "none".to_string(),
            paths: ctrls
                .iter()
                .zip(ana)
                .zip(numa_nodes)
                .map(|((c, a), n)| (*c, a.to_string(), n.map(str::to_string)))
                .collect(),
        }],
    }
}

pub(super) fn two_nodes(memory_kib: u64) -> Vec<NodeSpec> {
    vec![
        NodeSpec {
            id: 0,
            memory_kib,
            distances: vec![10, 21],
        },
        NodeSpec {
            id: 1,
            memory_kib,
            distances: vec![21, 10],
        },
    ]
}

pub(super) fn machine(
    name: &str,
    nodes: Vec<NodeSpec>,
    cpus: Vec<CpuSpec>,
    multipath: Option<bool>,
    poll_queues: u32,
) -> Machine {
    Machine {
        name: name.to_string(),
        nodes,
        cpus,
        controllers: Vec::new(),
        subsystems: Vec::new(),
        multipath,
        poll_queues,
        iopolicy: "numa".to_string(),
        block: None,
        quirks: Default::default(),
    }
}

/// Dell R740xd class: 2 sockets × 24 cores × SMT 2 (even CPUs on socket 0,
/// odd on socket 1, siblings N and N+48), 12 NVMe split 6/6, native
/// multipath on, 32 I/O + 4 poll queues per drive. Clean.
pub fn r740xd() -> Machine {
    let groups = |pkg: u32| {
        (0..24)
            .map(|k| vec![2 * k + pkg, 2 * k + pkg + 48])
            .collect()
    };
    let cpus = cpus_from(&[(0, 0, groups(0)), (1, 1, groups(1))]);
    let mut m = machine(
        "r740xd-2s-12nvme",
        two_nodes(196_347_452),
        cpus,
        Some(true),
        4,
    );
    let hosts = [
        ("pci0000:3a", "0000:3a:00.0"),
        ("pci0000:5d", "0000:5d:00.0"),
        ("pci0000:ae", "0000:ae:00.0"),
        ("pci0000:d7", "0000:d7:00.0"),
    ];
    for i in 0..12u32 {
        let (host, bridge) = hosts[(i / 3) as usize];
        let bus = u32::from_str_radix(&host[8..], 16).expect("hex bus") + 1 + i % 3;
        let bdf = format!("0000:{bus:02x}:00.0");
        let pci = Pci {
            host,
            bridge,
            bdf: &bdf,
        };
        let ctrl = pcie_ctrl(
            &m,
            i,
            pci,
            (i / 6) as i32,
            "Dell Ent NVMe P5600 MU U.2 1.6TB",
            32,
            4,
            100 + 33 * i,
        );
        m.controllers.push(ctrl);
        m.subsystems.push(one_ns_subsys(
            i,
            &[i],
            3_125_627_568,
            &["optimized"],
            &[Some(if i < 6 { "0" } else { "1" })],
        ));
    }
    m
}

/// 2 sockets × 112 cores × SMT 2: node 0 is CPUs 0-223 (siblings N and
/// N+112), node 1 is 224-447; 16 NVMe all on socket 0; native multipath
/// off (namespaces are children of their controllers). Clean.
pub fn big_448() -> Machine {
    let groups = |base: u32| (0..112).map(|k| vec![base + k, base + k + 112]).collect();
    let cpus = cpus_from(&[(0, 0, groups(0)), (1, 1, groups(224))]);
    let mut m = machine(
        "2s-448cpu-16nvme",
        two_nodes(528_122_880),
        cpus,
        Some(false),
        2,
    );
    for i in 0..16u32 {
        let (host, bridge) = if i < 8 {
            ("pci0000:00", "0000:00:01.1")
        } else {
            ("pci0000:20", "0000:20:01.1")
        };
        let bdf = format!(
            "0000:{:02x}:00.0",
            if i < 8 { 0x01 + i } else { 0x21 + i - 8 }
        );
        let pci = Pci {
            host,
            bridge,
            bdf: &bdf,
        };
        let ctrl = pcie_ctrl(
            &m,
            i,
            pci,
            0,
            "SAMSUNG MZWLO3T8HCLS-00A07",
            8,
            2,
            200 + 9 * i,
        );
        m.controllers.push(ctrl);
        m.subsystems.push(one_ns_subsys(
            i,
            &[i],
            7_501_476_528,
            &["optimized"],
            &[None],
        ));
    }
    m
}

/// One node, 4 cores × SMT 2 (siblings N and N+4), one NVMe. Clean.
pub fn one_node() -> Machine {
    let groups = (0..4).map(|k| vec![k, k + 4]).collect();
    let cpus = cpus_from(&[(0, 0, groups)]);
    let nodes = vec![NodeSpec {
        id: 0,
        memory_kib: 32_658_212,
        distances: vec![10],
    }];
    let mut m = machine("one-node-1nvme", nodes, cpus, Some(true), 2);
    let pci = Pci {
        host: "pci0000:00",
        bridge: "0000:00:1d.0",
        bdf: "0000:3d:00.0",
    };
    let ctrl = pcie_ctrl(&m, 0, pci, 0, "Samsung SSD 980 PRO 1TB", 8, 2, 120);
    m.controllers.push(ctrl);
    m.subsystems.push(one_ns_subsys(
        0,
        &[0],
        1_953_525_168,
        &["optimized"],
        &[Some("0")],
    ));
    m
}

/// One node, 4 CPUs without SMT, no NVMe driver loaded. Clean.
pub fn no_nvme() -> Machine {
    let groups = (0..4).map(|k| vec![k]).collect();
    let cpus = cpus_from(&[(0, 0, groups)]);
    let nodes = vec![NodeSpec {
        id: 0,
        memory_kib: 8_145_920,
        distances: vec![10],
    }];
    machine("no-nvme", nodes, cpus, None, 0)
}

/// Planted: both controllers report `numa_node = -1` on a 2-node machine
/// (error), `nvme1`'s path uses mq-deadline (warning), CPU 15 is offline
/// (warning), `nvme.poll_queues = 0` (info).
pub fn numa_unknown() -> Machine {
    let cpus = cpus_from(&[
        (0, 0, (0..8).map(|k| vec![k]).collect()),
        (1, 1, (8..16).map(|k| vec![k]).collect()),
    ]);
    let mut m = machine("numa-unknown", two_nodes(65_839_104), cpus, Some(true), 0);
    m.cpus[15].online = false;
    for i in 0..2u32 {
        let bdf = format!("0000:{:02x}:00.0", 0x41 + i);
        let pci = Pci {
            host: "pci0000:40",
            bridge: "0000:40:03.1",
            bdf: &bdf,
        };
        let ctrl = pcie_ctrl(&m, i, pci, -1, "INTEL SSDPE2KX020T8", 15, 0, 60 + 16 * i);
        m.controllers.push(ctrl);
        m.subsystems.push(one_ns_subsys(
            i,
            &[i],
            3_907_029_168,
            &["optimized"],
            &[Some("0-1")],
        ));
    }
    m.subsystems[1].namespaces[0].scheduler = "mq-deadline".to_string();
    m
}

/// The powerpc case. Planted: node 2 has no CPUs and no memory but holds
/// `nvme0` (two warnings). Host bridges in PCI domain 0020/0030.
pub fn power_3node() -> Machine {
    let smt4 = |base: u32| {
        (0..2)
            .map(|k| (0..4).map(|t| base + 4 * k + t).collect())
            .collect()
    };
    let cpus = cpus_from(&[(0, 0, smt4(0)), (1, 1, smt4(8))]);
    let nodes = vec![
        NodeSpec {
            id: 0,
            memory_kib: 133_693_440,
            distances: vec![10, 20, 40],
        },
        NodeSpec {
            id: 1,
            memory_kib: 133_693_440,
            distances: vec![20, 10, 40],
        },
        NodeSpec {
            id: 2,
            memory_kib: 0,
            distances: vec![40, 40, 10],
        },
    ];
    let mut m = machine("power-3node", nodes, cpus, Some(true), 2);
    let pci0 = Pci {
        host: "pci0030:00",
        bridge: "0030:00:00.0",
        bdf: "0030:01:00.0",
    };
    let ctrl0 = pcie_ctrl(&m, 0, pci0, 2, "IBM NVMe 3.2TB Flash Adapter", 8, 2, 300);
    m.controllers.push(ctrl0);
    let pci1 = Pci {
        host: "pci0020:00",
        bridge: "0020:00:00.0",
        bdf: "0020:01:00.0",
    };
    let ctrl1 = pcie_ctrl(&m, 1, pci1, 0, "IBM NVMe 1.6TB Flash Adapter", 8, 2, 320);
    m.controllers.push(ctrl1);
    m.subsystems.push(one_ns_subsys(
        0,
        &[0],
        6_251_233_968,
        &["optimized"],
        &[Some("0-2")],
    ));
    m.subsystems.push(one_ns_subsys(
        1,
        &[1],
        3_125_627_568,
        &["optimized"],
        &[Some("0-2")],
    ));
    m
}

/// 2 nodes; a dual-port drive as one multipath subsystem with a controller
/// on each node (shared namespace nvme0n1), plus an NVMe/TCP controller
/// (`numa_node = -1`, single path: info). Planted: the dual-port subsystem
/// uses round-robin across nodes (warning) and every IRQ of `nvme1` (node 1)
/// was pinned to CPU 0 on node 0 (warning).
pub fn multipath_tcp() -> Machine {
    let groups = |base: u32| (0..4).map(|k| vec![base + k, base + k + 4]).collect();
    let cpus = cpus_from(&[(0, 0, groups(0)), (1, 1, groups(8))]);
    let mut m = machine(
        "2node-multipath-tcp",
        two_nodes(32_658_212),
        cpus,
        Some(true),
        2,
    );
    let pci0 = Pci {
        host: "pci0000:16",
        bridge: "0000:16:02.0",
        bdf: "0000:17:00.0",
    };
    let mut c0 = pcie_ctrl(&m, 0, pci0, 0, "KIOXIA KCMYXVUG3T20 dual-port", 16, 2, 90);
    c0.serial = "X2K0A0DUAL".to_string();
    let pci1 = Pci {
        host: "pci0000:b2",
        bridge: "0000:b2:02.0",
        bdf: "0000:b3:00.0",
    };
    let mut c1 = pcie_ctrl(&m, 1, pci1, 1, "KIOXIA KCMYXVUG3T20 dual-port", 16, 2, 110);
    c1.serial = c0.serial.clone();
    c1.cntlid = 2;
    c1.subsystem = 0;
    c1.irq_cpus = vec![0; 16];
    let tcp_cpus = spread(&m.cpus, &[0, 1], 16);
    let c2 = CtrlSpec {
        instance: 2,
        attach: Attach::Fabric {
            transport: "tcp".to_string(),
            address: "traddr=192.168.100.10,trsvcid=4420,src_addr=192.168.100.1".to_string(),
        },
        model: "Linux".to_string(),
        serial: "5a1e0c3f9b2d4e11".to_string(),
        firmware: "6.18.0".to_string(),
        cntlid: 1,
        numa_node: -1,
        subsystem: 1,
        queue_cpus: tcp_cpus,
        irq_cpus: Vec::new(),
        poll_queues: 0,
        first_irq: 0,
    };
    m.controllers = vec![c0, c1, c2];
    let mut dual = one_ns_subsys(
        0,
        &[0, 1],
        6_251_233_968,
        &["optimized", "optimized"],
        &[Some(""), Some("")],
    );
    dual.iopolicy = "round-robin".to_string();
    let mut tcp = one_ns_subsys(1, &[2], 2_097_152, &["optimized"], &[Some("0-1")]);
    tcp.nqn = "nqn.2026-01.io.numio:target1".to_string();
    m.subsystems = vec![dual, tcp];
    m
}

/// Block devices stacked on NVMe over 2 nodes, for the device queries
/// (multipath off, so each namespace is its controller's child; 2 poll
/// queues per controller, so the namespaces have `io_poll` 1 and the
/// bio-based dm and md devices 0). Clean.
/// - nvme0 (node 0): nvme0n1 with partitions nvme0n1p1 (mounted at `/`)
///   and nvme0n1p2.
/// - nvme1 (node 1): nvme1n1, nvme1n2; nvme2 (node 1): nvme2n1, nvme2n2.
/// - dm-0 `data-lin`: linear over nvme1n1 (node 1), mounted at `/data`.
/// - dm-1 `span`: striped over nvme0n1p2 (node 0) and nvme2n1 (node 1),
///   mounted at `/span`: a stack over two nodes.
/// - md0 raid1 over nvme1n2 and nvme2n2 (both node 1), mounted at `/md`.
/// - loop0 over a file, mounted at `/mnt/loop`: not NVMe.
pub fn blockstack() -> Machine {
    let cpus = cpus_from(&[
        (0, 0, (0..4).map(|k| vec![k]).collect()),
        (1, 1, (4..8).map(|k| vec![k]).collect()),
    ]);
    let mut m = machine(
        "2node-blockstack",
        two_nodes(16_329_104),
        cpus,
        Some(false),
        2,
    );
    let slots = [
        ("pci0000:00", "0000:00:01.0", "0000:01:00.0", 0),
        ("pci0000:80", "0000:80:01.0", "0000:81:00.0", 1),
        ("pci0000:80", "0000:80:02.0", "0000:82:00.0", 1),
    ];
    for (i, (host, bridge, bdf, node)) in slots.into_iter().enumerate() {
        let pci = Pci { host, bridge, bdf };
        let i = i as u32;
        let ctrl = pcie_ctrl(
            &m,
            i,
            pci,
            node,
            "Micron 7450 MTFDKCC1T9TFR",
            4,
            2,
            40 + 10 * i,
        );
        m.controllers.push(ctrl);
        let mut sub = one_ns_subsys(i, &[i], 3_750_748_848, &["optimized"], &[None]);
        if i > 0 {
            let mut second = sub.namespaces[0].clone();
            second.head_instance = 2;
            second.nsid = 2;
            second.size_sectors = 209_715_200;
            sub.namespaces.push(second);
        }
        m.subsystems.push(sub);
    }
    m.block = Some(blockstack_layer());
    m
}

/// The partitions, dm, md and loop devices, mounts and host files of
/// [`blockstack`].
fn blockstack_layer() -> BlockLayer {
    let virt = |name: &str, kind: VirtualKind, slaves: &[&str], size_sectors: u64| VirtualDisk {
        name: name.to_string(),
        kind,
        slaves: slaves.iter().map(|s| s.to_string()).collect(),
        size_sectors,
    };
    let mount = |dev: &str, mp: &str, fs: &str| (dev.to_string(), mp.to_string(), fs.to_string());
    BlockLayer {
        partitions: vec![("nvme0n1".to_string(), vec![2_097_152, 1_048_576_000])],
        virtual_disks: vec![
            virt(
                "dm-0",
                VirtualKind::Dm("data-lin".into()),
                &["nvme1n1"],
                3_750_748_848,
            ),
            virt(
                "dm-1",
                VirtualKind::Dm("span".into()),
                &["nvme0n1p2", "nvme2n1"],
                2_097_152_000,
            ),
            virt(
                "md0",
                VirtualKind::Md("raid1".into()),
                &["nvme1n2", "nvme2n2"],
                209_584_128,
            ),
            virt(
                "loop0",
                VirtualKind::Loop("/var/lib/images/disk.img".into()),
                &[],
                2_097_152,
            ),
        ],
        mounts: vec![
            mount("nvme0n1p1", "/", "ext4"),
            mount("dm-0", "/data", "xfs"),
            mount("dm-1", "/span", "ext4"),
            mount("md0", "/md", "ext4"),
            mount("loop0", "/mnt/loop", "ext4"),
        ],
        hostname: "blockstack".to_string(),
        kernel: "6.12.12-numio-fixture".to_string(),
        cpu_model: "Intel(R) Xeon(R) Gold 6430".to_string(),
    }
}
