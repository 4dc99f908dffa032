//! NUMA nodes (`/sys/devices/system/node`) and the node of each CPU.
//!
//! A node's CPUs come from `nodeN/cpulist` (or the `nodeN/cpumap` mask of
//! older kernels). When firmware makes several nodes list the same CPU, the
//! CPU's own `cpuN/nodeM` link decides, and a note says so.

use std::collections::BTreeMap;

use super::dirs::{numbered_dirs, CPU_DIR, NODE_DIR};
use crate::cpulist::CpuList;
use crate::error::TopologyError;
use crate::model::{CpuId, Node, NodeId};
use crate::parse::{parse_list, parse_meminfo_total_bytes, parse_node_list, parse_u32_row};
use crate::reader::Reader;

/// The nodes, and which node each listed CPU belongs to.
pub struct NodeMap {
    /// The nodes, ascending, each CPU in at most one of them.
    pub nodes: Vec<Node>,
    /// CPU → node, for every CPU some node lists.
    listed: BTreeMap<u32, NodeId>,
    /// Whether the kernel has NUMA nodes (a `node` directory).
    numa: bool,
}

impl NodeMap {
    /// The node of `cpu`: the node listing it, else (a CPU no node lists,
    /// such as an offline CPU on x86) its `cpuN/nodeM` link.
    pub fn node_of(&self, r: &mut Reader, cpu: u32) -> Option<NodeId> {
        match self.listed.get(&cpu) {
            Some(&n) => Some(n),
            None if self.numa => node_link(r, cpu),
            None => None,
        }
    }
}

/// The nodes of the root; every CPU of `present` on node 0 when the kernel
/// has no NUMA.
pub fn discover(r: &mut Reader, present: &[u32]) -> Result<NodeMap, TopologyError> {
    let ids = if r.exists(NODE_DIR) {
        node_ids(r)?
    } else {
        Vec::new()
    };
    if ids.is_empty() {
        // A kernel built without NUMA: one node holding every CPU.
        let memory_bytes = r
            .parse("proc/meminfo", parse_meminfo_total_bytes)
            .unwrap_or(0);
        let node = Node {
            id: NodeId(0),
            cpus: present.iter().map(|&c| CpuId(c)).collect(),
            memory_bytes,
            distances: vec![10],
        };
        let listed = present.iter().map(|&c| (c, NodeId(0))).collect();
        return Ok(NodeMap {
            nodes: vec![node],
            listed,
            numa: false,
        });
    }
    let mut nodes: Vec<Node> = ids.into_iter().map(|id| read_node(r, id)).collect();
    let listed = settle_overlaps(r, &mut nodes);
    Ok(NodeMap {
        nodes,
        listed,
        numa: true,
    })
}

/// Online node ids (`node/online`), or the `nodeN` directories where the
/// kernel wrote no such list.
fn node_ids(r: &mut Reader) -> Result<Vec<u32>, TopologyError> {
    let rel = format!("{NODE_DIR}/online");
    if let Some(text) = r.read(&rel) {
        return parse_node_list(&text).map_err(|source| TopologyError::Unparsable {
            path: r.abs(&rel),
            source,
        });
    }
    if let Some(u) = r.unreadable.iter().find(|u| u.path == rel) {
        return Err(TopologyError::BadRequired {
            path: r.abs(&rel),
            reason: u.reason.clone(),
        });
    }
    let ids = numbered_dirs(r, NODE_DIR, "node");
    if !ids.is_empty() {
        let message = format!(
            "the kernel wrote no list of online NUMA nodes (older kernels do not, and copies of sysfs often leave it out); numio took the nodeN directories as the online nodes: {}",
            CpuList::from_ids(ids.iter().copied())
        );
        r.note("node-online-missing", &rel, "missing".to_string(), message);
    }
    Ok(ids)
}

fn read_node(r: &mut Reader, id: u32) -> Node {
    let dir = format!("{NODE_DIR}/node{id}");
    let cpus = r
        .cpu_set(
            &format!("{dir}/cpulist"),
            &format!("{dir}/cpumap"),
            parse_list,
        )
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
    Node {
        id: NodeId(id),
        cpus,
        memory_bytes,
        distances,
    }
}

/// CPU → node for every listed CPU. A CPU listed by several nodes (a
/// firmware bug) goes to the node its `cpuN/nodeM` link names, else to
/// the lowest of them; the others drop it, and a note records it.
fn settle_overlaps(r: &mut Reader, nodes: &mut [Node]) -> BTreeMap<u32, NodeId> {
    let mut candidates: BTreeMap<u32, Vec<NodeId>> = BTreeMap::new();
    for node in nodes.iter() {
        for cpu in &node.cpus {
            candidates.entry(cpu.0).or_default().push(node.id);
        }
    }
    let mut listed = BTreeMap::new();
    let (mut by_link, mut by_lowest) = (Vec::new(), Vec::new());
    for (cpu, nodes_listing) in candidates {
        let chosen = match nodes_listing.as_slice() {
            [one] => *one,
            several => match node_link(r, cpu).filter(|l| several.contains(l)) {
                Some(link) => {
                    by_link.push((cpu, link));
                    link
                }
                None => {
                    by_lowest.push(cpu);
                    several[0]
                }
            },
        };
        listed.insert(cpu, chosen);
    }
    if by_link.is_empty() && by_lowest.is_empty() {
        return listed;
    }
    let before: Vec<(NodeId, String)> = nodes
        .iter()
        .map(|n| (n.id, CpuList::of(&n.cpus).to_string()))
        .collect();
    for node in nodes.iter_mut() {
        node.cpus.retain(|c| listed.get(&c.0) == Some(&node.id));
    }
    overlap_note(r, nodes, &before, &by_link, &by_lowest);
    listed
}

fn overlap_note(
    r: &mut Reader,
    nodes: &[Node],
    before: &[(NodeId, String)],
    by_link: &[(u32, NodeId)],
    by_lowest: &[u32],
) {
    let shared = CpuList::from_ids(
        by_link
            .iter()
            .map(|(c, _)| *c)
            .chain(by_lowest.iter().copied()),
    );
    let listing: Vec<String> = before
        .iter()
        .filter(|(_, list)| {
            CpuList::parse(list).is_ok_and(|l| l.ids().iter().any(|&c| shared.contains(c)))
        })
        .map(|(id, list)| format!("node {id}: {list}"))
        .collect();
    let mut decided = Vec::new();
    if !by_link.is_empty() {
        decided.push("numio put each CPU on the node its cpuN/nodeM link names".to_string());
    }
    if !by_lowest.is_empty() {
        decided.push(format!(
            "CPUs {} have no such link to one of those nodes and went to the lowest-numbered node listing them",
            CpuList::from_ids(by_lowest.iter().copied())
        ));
    }
    let now: Vec<String> = nodes
        .iter()
        .map(|n| format!("node {}: {}", n.id, CpuList::of(&n.cpus)))
        .collect();
    let first = before
        .iter()
        .find(|(_, list)| {
            CpuList::parse(list).is_ok_and(|l| l.ids().iter().any(|&c| shared.contains(c)))
        })
        .map(|(id, list)| (id.0, list.clone()))
        .unwrap_or((0, String::new()));
    let message = format!(
        "CPUs {shared} are listed by more than one NUMA node ({}), which the kernel does only when the firmware's NUMA table (ACPI SRAT) is wrong; {}; the nodes now hold {}",
        listing.join("; "),
        decided.join(", and "),
        now.join("; ")
    );
    let path = format!("{NODE_DIR}/node{}/cpulist", first.0);
    r.note("node-lists-overlap", &path, first.1, message);
}

/// The `cpuN/nodeM` link of a CPU (Linux 2.6.32 and later).
fn node_link(r: &mut Reader, cpu: u32) -> Option<NodeId> {
    let cpu_dir = format!("{CPU_DIR}/cpu{cpu}");
    let (name, id) = r.list(&cpu_dir)?.into_iter().find_map(|name| {
        name.strip_prefix("node")
            .and_then(|n| n.parse().ok())
            .map(|id| (name.clone(), id))
    })?;
    // Resolved so that a snapshot keeps the link the name came from.
    r.resolve(&format!("{cpu_dir}/{name}"));
    Some(NodeId(id))
}
