//! In-memory topologies for the planner's tests, built through the JSON
//! schema so that fields added to the model with defaults do not break them.
#![allow(dead_code)]

use serde_json::{json, Value};
use topology::Topology;

/// One NUMA node: id, CPUs, memory, distance row.
pub struct NodeSpec {
    pub id: u32,
    pub cpus: Vec<u32>,
    pub memory_bytes: u64,
    pub distances: Vec<u32>,
}

/// One CPU: id, node, package, core, siblings.
pub struct CpuSpec {
    pub id: u32,
    pub node: u32,
    pub package: u32,
    pub core: u32,
    pub siblings: Vec<u32>,
}

/// A controller `nvmeN` on a node (`None`: the kernel says -1).
pub struct CtrlSpec {
    pub name: String,
    pub node: Option<u32>,
}

/// Builds a topology with one subsystem per controller and one namespace
/// `nvmeNn1` (generic `ngNn1`) each, plus any extra subsystems given as JSON.
pub fn build(
    nodes: &[NodeSpec],
    cpus: &[CpuSpec],
    ctrls: &[CtrlSpec],
    extra: Vec<Value>,
) -> Topology {
    let nodes: Vec<Value> = nodes
        .iter()
        .map(|n| json!({"id": n.id, "cpus": n.cpus, "memory_bytes": n.memory_bytes, "distances": n.distances}))
        .collect();
    let cpus: Vec<Value> = cpus
        .iter()
        .map(|c| json!({"id": c.id, "online": true, "package": c.package, "core": c.core, "siblings": c.siblings, "node": c.node}))
        .collect();
    let controllers: Vec<Value> = ctrls
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let node = match c.node {
                Some(n) => json!({"known": n}),
                None => json!("unknown"),
            };
            json!({
                "name": c.name, "transport": "pcie", "address": format!("0000:{:02x}:00.0", i + 1),
                "model": "fixture", "serial": format!("S{i}"), "firmware": "1", "state": "live",
                "cntlid": 1, "numa_node": node, "pci_path": [], "local_cpus": [],
                "subsystem": format!("nvme-subsys{i}"), "queue_count": 0, "irqs": []
            })
        })
        .collect();
    let mut subsystems: Vec<Value> = ctrls
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let n = c.name.trim_start_matches("nvme");
            json!({
                "name": format!("nvme-subsys{i}"), "nqn": format!("nqn.fixture:{i}"), "iopolicy": null,
                "controllers": [c.name],
                "namespaces": [namespace(&format!("nvme{n}n1"), Some(&format!("ng{n}n1")), vec![])]
            })
        })
        .collect();
    subsystems.extend(extra);
    let topo = json!({
        "schema_version": topology::SCHEMA_VERSION,
        "nodes": nodes, "cpus": cpus, "controllers": controllers, "subsystems": subsystems,
        "nvme_params": {}, "unreadable": []
    });
    serde_json::from_value(topo).expect("fixture topology matches the schema")
}

/// A namespace as JSON.
pub fn namespace(block: &str, generic: Option<&str>, paths: Vec<Value>) -> Value {
    json!({
        "block_device": block, "generic_device": generic, "nsid": 1,
        "size_bytes": 1u64 << 40, "logical_block_size": 4096, "queue": {"hw_queues": []}, "paths": paths
    })
}

/// A multipath path as JSON.
pub fn path(device: &str, controller: &str, ana: &str) -> Value {
    json!({"device": device, "controller": controller, "ana_state": ana, "numa_nodes": null})
}

/// `sockets` sockets with `cores` cores each and 2-way SMT; socket `s`
/// holds primaries `s*2*cores .. s*2*cores+cores` and their siblings
/// `+cores` (so with 112 cores CPU 0's sibling is 112). One node per socket.
pub fn smt_sockets(sockets: u32, cores: u32) -> (Vec<NodeSpec>, Vec<CpuSpec>) {
    let mut nodes = Vec::new();
    let mut cpus = Vec::new();
    for s in 0..sockets {
        let base = s * 2 * cores;
        let mut ids = Vec::new();
        for c in 0..cores {
            let (p, t) = (base + c, base + c + cores);
            ids.extend([p, t]);
            for id in [p, t] {
                cpus.push(CpuSpec {
                    id,
                    node: s,
                    package: s,
                    core: c,
                    siblings: vec![p, t],
                });
            }
        }
        ids.sort_unstable();
        let distances = (0..sockets).map(|o| if o == s { 10 } else { 21 }).collect();
        nodes.push(NodeSpec {
            id: s,
            cpus: ids,
            memory_bytes: 256 << 30,
            distances,
        });
    }
    cpus.sort_by_key(|c| c.id);
    (nodes, cpus)
}

/// Controllers `nvme{first}..` on `node`.
pub fn ctrls_on(first: u32, count: u32, node: Option<u32>) -> Vec<CtrlSpec> {
    (first..first + count)
        .map(|i| CtrlSpec {
            name: format!("nvme{i}"),
            node,
        })
        .collect()
}

/// The 2-socket, 112-cores-per-socket machine with 16 NVMe on socket 0.
pub fn sixteen_drives() -> Topology {
    let (nodes, cpus) = smt_sockets(2, 112);
    build(&nodes, &cpus, &ctrls_on(0, 16, Some(0)), vec![])
}

/// A machine shaped like this CI host: one node, `n` CPUs, no SMT.
pub fn flat(n: u32) -> Topology {
    let cpus: Vec<CpuSpec> = (0..n)
        .map(|id| CpuSpec {
            id,
            node: 0,
            package: 0,
            core: id,
            siblings: vec![id],
        })
        .collect();
    let nodes = vec![NodeSpec {
        id: 0,
        cpus: (0..n).collect(),
        memory_bytes: 24 << 30,
        distances: vec![10],
    }];
    build(&nodes, &cpus, &ctrls_on(0, 2, Some(0)), vec![])
}

/// A machine with exactly these CPUs (one node, no SMT), for runs of the
/// real fio, which can only pin to CPUs that exist.
pub fn flat_cpus(ids: &[u32]) -> Topology {
    let cpus: Vec<CpuSpec> = ids
        .iter()
        .map(|&id| CpuSpec {
            id,
            node: 0,
            package: 0,
            core: id,
            siblings: vec![id],
        })
        .collect();
    let nodes = vec![NodeSpec {
        id: 0,
        cpus: ids.to_vec(),
        memory_bytes: 24 << 30,
        distances: vec![10],
    }];
    build(&nodes, &cpus, &ctrls_on(0, 2, Some(0)), vec![])
}

/// Four nodes: 0 and 1 are 4-core SMT sockets; node 2 has memory but no
/// CPUs (CXL-like, nearer to node 1); node 3 has CPUs 16-17 but no memory.
/// nvme0 on node 0, nvme1 on node 1, nvme2 on node 2, nvme3 on node 3,
/// nvme4 with numa_node -1; nvme5/nvme6 are the two paths (nodes 0 and 1)
/// of the multipath head nvme5n1.
pub fn mixed() -> Topology {
    let (mut nodes, mut cpus) = smt_sockets(2, 4);
    let dist = [
        [10, 21, 31, 17],
        [21, 10, 14, 28],
        [31, 14, 10, 30],
        [17, 28, 30, 10],
    ];
    for (i, n) in nodes.iter_mut().enumerate() {
        n.distances = dist[i].to_vec();
    }
    nodes.push(NodeSpec {
        id: 2,
        cpus: vec![],
        memory_bytes: 64 << 30,
        distances: dist[2].to_vec(),
    });
    nodes.push(NodeSpec {
        id: 3,
        cpus: vec![16, 17],
        memory_bytes: 0,
        distances: dist[3].to_vec(),
    });
    for id in [16, 17] {
        cpus.push(CpuSpec {
            id,
            node: 3,
            package: 2,
            core: id,
            siblings: vec![id],
        });
    }
    let mut ctrls = vec![
        CtrlSpec {
            name: "nvme0".into(),
            node: Some(0),
        },
        CtrlSpec {
            name: "nvme1".into(),
            node: Some(1),
        },
        CtrlSpec {
            name: "nvme2".into(),
            node: Some(2),
        },
        CtrlSpec {
            name: "nvme3".into(),
            node: Some(3),
        },
        CtrlSpec {
            name: "nvme4".into(),
            node: None,
        },
    ];
    let mut topo_json_extra = Vec::new();
    ctrls.push(CtrlSpec {
        name: "nvme5".into(),
        node: Some(0),
    });
    ctrls.push(CtrlSpec {
        name: "nvme6".into(),
        node: Some(1),
    });
    topo_json_extra.push(serde_json::json!({
        "name": "nvme-subsys9", "nqn": "nqn.fixture:mp", "iopolicy": "numa",
        "controllers": ["nvme5", "nvme6"],
        "namespaces": [namespace("nvme9n1", Some("ng9n1"), vec![
            path("nvme9c5n1", "nvme5", "optimized"),
            path("nvme9c6n1", "nvme6", "optimized"),
        ])]
    }));
    let mut topo = build(&nodes, &cpus, &ctrls, topo_json_extra);
    // build() gave nvme5 and nvme6 a namespace each; the multipath head is nvme9n1.
    topo.subsystems.retain(|s| {
        !s.controllers.iter().any(|c| c == "nvme5" || c == "nvme6") || s.name == "nvme-subsys9"
    });
    topo
}

/// One core whose two SMT siblings are `a` and `b` (this machine's two
/// CPUs seen as one core): the vendor layout in miniature.
pub fn smt_pair(a: u32, b: u32) -> Topology {
    let cpus: Vec<CpuSpec> = [a, b]
        .iter()
        .map(|&id| CpuSpec {
            id,
            node: 0,
            package: 0,
            core: 0,
            siblings: vec![a, b],
        })
        .collect();
    let nodes = vec![NodeSpec {
        id: 0,
        cpus: vec![a, b],
        memory_bytes: 24 << 30,
        distances: vec![10],
    }];
    build(&nodes, &cpus, &ctrls_on(0, 2, Some(0)), vec![])
}
