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
