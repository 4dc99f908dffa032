//! NUMA nodes and CPUs (`/sys/devices/system/{node,cpu}`).

use std::collections::BTreeMap;

use crate::error::TopologyError;
use crate::model::{Cpu, CpuId, Node, NodeId};
use crate::parse::{
    parse_list, parse_meminfo_total_bytes, parse_node_list, parse_num, parse_u32_row,
};
use crate::reader::Reader;

const CPU_DIR: &str = "sys/devices/system/cpu";
const NODE_DIR: &str = "sys/devices/system/node";

/// Reads a list every sysfs tree has, or fails naming it.
fn required_list(
    r: &mut Reader,
    rel: &str,
    what: &'static str,
    parse: fn(&str) -> Result<Vec<u32>, String>,
) -> Result<Vec<u32>, TopologyError> {
    match r.read(rel) {
        Some(text) => parse(&text).map_err(|reason| TopologyError::BadRequired {
            path: r.abs(rel),
            reason,
        }),
        None => {
            if let Some(u) = r.unreadable.iter().find(|u| u.path == rel) {
                return Err(TopologyError::BadRequired {
                    path: r.abs(rel),
                    reason: u.reason.clone(),
                });
            }
            Err(TopologyError::MissingRequired {
                path: r.abs(rel),
                root: r.abs(""),
                what,
            })
        }
    }
}

/// Nodes and CPUs.
pub fn discover(r: &mut Reader) -> Result<(Vec<Node>, Vec<Cpu>), TopologyError> {
    let online = required_list(
        r,
        &format!("{CPU_DIR}/online"),
        "the list of online CPUs",
        parse_list,
    )?;
    let mut present = r
        .parse(&format!("{CPU_DIR}/present"), parse_list)
        .or_else(|| r.parse(&format!("{CPU_DIR}/possible"), parse_list))
        .unwrap_or_default();
    present.extend(&online);
    present.sort_unstable();
    present.dedup();

    let nodes = if r.exists(NODE_DIR) {
        read_nodes(r)?
    } else {
        // A kernel built without NUMA: one node holding every CPU.
        let memory_bytes = r
            .parse("proc/meminfo", parse_meminfo_total_bytes)
            .unwrap_or(0);
        vec![Node {
            id: NodeId(0),
            cpus: present.iter().map(|&c| CpuId(c)).collect(),
            memory_bytes,
            distances: vec![10],
        }]
    };
    let mut node_of: BTreeMap<u32, NodeId> = BTreeMap::new();
    for node in &nodes {
        for cpu in &node.cpus {
            node_of.insert(cpu.0, node.id);
        }
    }
    let mut cpus: Vec<Cpu> = Vec::with_capacity(present.len());
    // CPU → index in `cpus` of an already read SMT sibling: threads of one
    // core share package, core id and sibling list, so a machine with SMT
    // reads them once per core.
    let mut read_sibling: BTreeMap<u32, usize> = BTreeMap::new();
    for &id in &present {
        let online = online.binary_search(&id).is_ok();
        let node = node_of.get(&id).copied();
        let shared = read_sibling
            .get(&id)
            .filter(|_| online)
            .map(|&i| cpus[i].clone());
        let cpu = match shared {
            Some(shared) => Cpu {
                id: CpuId(id),
                node,
                ..shared
            },
            None => read_cpu(r, id, online, node),
        };
        if cpu.online && cpu.package.is_some() && cpu.core.is_some() {
            for s in cpu.siblings.iter().filter(|s| s.0 > id) {
                read_sibling.entry(s.0).or_insert(cpus.len());
            }
        }
        cpus.push(cpu);
    }
    Ok((nodes, cpus))
}

fn read_nodes(r: &mut Reader) -> Result<Vec<Node>, TopologyError> {
    let ids = required_list(
        r,
        &format!("{NODE_DIR}/online"),
        "the list of online NUMA nodes",
        parse_node_list,
    )?;
    let mut nodes = Vec::with_capacity(ids.len());
    for id in ids {
        let dir = format!("{NODE_DIR}/node{id}");
        let cpus = r
            .parse(&format!("{dir}/cpulist"), parse_list)
            .unwrap_or_default()
            .into_iter()
            .map(CpuId)
            .collect();
        let memory_bytes = r
            .parse(&format!("{dir}/meminfo"), parse_meminfo_total_bytes)
            .unwrap_or(0);
        let distances = r
            .parse(&format!("{dir}/distance"), parse_u32_row)
            .unwrap_or_default();
        nodes.push(Node {
            id: NodeId(id),
            cpus,
            memory_bytes,
            distances,
        });
    }
    Ok(nodes)
}

fn read_cpu(r: &mut Reader, id: u32, online: bool, node: Option<NodeId>) -> Cpu {
    let dir = format!("{CPU_DIR}/cpu{id}");
    let node = node.or_else(|| node_link(r, &dir));
    if !online {
        // The kernel removes `topology/` of an offline CPU.
        return Cpu {
            id: CpuId(id),
            online,
            package: None,
            core: None,
            siblings: vec![CpuId(id)],
            node,
        };
    }
    let package = r.parse(
        &format!("{dir}/topology/physical_package_id"),
        parse_num::<u32>,
    );
    let core = r.parse(&format!("{dir}/topology/core_id"), parse_num::<u32>);
    let mut siblings: Vec<CpuId> = r
        .parse(&format!("{dir}/topology/thread_siblings_list"), parse_list)
        .unwrap_or_default()
        .into_iter()
        .map(CpuId)
        .collect();
    if !siblings.contains(&CpuId(id)) {
        siblings.push(CpuId(id));
        siblings.sort_unstable();
    }
    Cpu {
        id: CpuId(id),
        online,
        package,
        core,
        siblings,
        node,
    }
}

/// The `cpuN/nodeM` link, for CPUs missing from every node's cpulist
/// (offline CPUs on x86).
fn node_link(r: &mut Reader, cpu_dir: &str) -> Option<NodeId> {
    let (name, id) = r.list(cpu_dir)?.into_iter().find_map(|name| {
        name.strip_prefix("node")
            .and_then(|n| n.parse().ok())
            .map(|id| (name.clone(), id))
    })?;
    // Resolved so that a snapshot keeps the link the name came from.
    r.resolve(&format!("{cpu_dir}/{name}"));
    Some(NodeId(id))
}
