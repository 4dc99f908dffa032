//! CPU and node lists as users write them (the kernel's format, parsed by
//! [`topology::CpuList`]), and the views of a [`Topology`] the planner
//! needs: physical cores of a node, nodes with CPUs or memory, nearest nodes
//! by distance.

use std::collections::BTreeMap;

use topology::{CpuId, CpuList, CpuListError, NodeId, Topology};

/// Why a CPU or node list the user wrote was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CpuSetError {
    /// The list does not parse (the error names the bad part).
    #[error(transparent)]
    List(#[from] CpuListError),
    /// A CPU list that names no CPU.
    #[error("empty CPU list `{text}`; name at least one CPU, e.g. 0-3")]
    NoCpus {
        /// The list as written.
        text: String,
    },
    /// A node list that names no node.
    #[error("empty node list `{text}`; name at least one node, e.g. 0")]
    NoNodes {
        /// The list as written.
        text: String,
    },
}

/// A CPU list the user wrote (`--cpus`, `--cpus-for`, fio's
/// `cpus_allowed`): the kernel's format ([`CpuList::parse`]: `0-3,112-115`,
/// ascending and deduplicated; `0-7:2` is not accepted), naming at least one
/// CPU. The error says which part is wrong.
pub fn parse_cpu_list(text: &str) -> Result<Vec<CpuId>, CpuSetError> {
    let list = CpuList::parse(text)?;
    if list.is_empty() {
        return Err(CpuSetError::NoCpus {
            text: text.to_string(),
        });
    }
    Ok(list.cpus())
}

/// A node list the user wrote (fio's `numa_cpu_nodes`, `numa_mem_policy=bind:`),
/// naming at least one node.
pub fn parse_node_list(text: &str) -> Result<Vec<NodeId>, CpuSetError> {
    let list = CpuList::parse_nodes(text)?;
    if list.is_empty() {
        return Err(CpuSetError::NoNodes {
            text: text.to_string(),
        });
    }
    Ok(list.nodes())
}

/// One physical core: its first online CPU (the primary) and its other
/// online SMT siblings, ascending.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Core {
    /// The lowest-numbered online CPU of the core.
    pub primary: CpuId,
    /// The other online CPUs of the core, ascending.
    pub siblings: Vec<CpuId>,
}

impl Core {
    /// Every CPU of the core, primary first.
    pub fn cpus(&self) -> impl Iterator<Item = CpuId> + '_ {
        std::iter::once(self.primary).chain(self.siblings.iter().copied())
    }
}

/// Online CPUs of the topology, ascending. A CPU listed by a node but
/// absent from `cpus` counts as online.
pub fn online_cpus(topo: &Topology) -> Vec<CpuId> {
    let mut out: Vec<CpuId> = topo
        .cpus
        .iter()
        .filter(|c| c.online)
        .map(|c| c.id)
        .collect();
    for node in &topo.nodes {
        for &c in &node.cpus {
            if topo.cpus.iter().all(|x| x.id != c) {
                out.push(c);
            }
        }
    }
    out.sort_unstable();
    out.dedup();
    out
}

/// Whether `cpu` is online in `topo`.
pub fn is_online(topo: &Topology, cpu: CpuId) -> bool {
    match topo.cpus.iter().find(|c| c.id == cpu) {
        Some(c) => c.online,
        None => topo.nodes.iter().any(|n| n.cpus.contains(&cpu)),
    }
}

/// Online CPUs of `node`, ascending: those its CPU list names, and online
/// CPUs no node lists whose own node is `node` (where the kernel's node
/// lists are missing or unreadable, `numio doctor` says so).
pub fn node_cpus(topo: &Topology, node: NodeId) -> Vec<CpuId> {
    let Some(n) = topo.nodes.iter().find(|n| n.id == node) else {
        return Vec::new();
    };
    let listed_nowhere = |c: CpuId| topo.nodes.iter().all(|x| !x.cpus.contains(&c));
    let unlisted = topo
        .cpus
        .iter()
        .filter(|c| c.online && c.node == Some(node) && listed_nowhere(c.id))
        .map(|c| c.id);
    let mut cpus: Vec<CpuId> = n
        .cpus
        .iter()
        .copied()
        .filter(|&c| is_online(topo, c))
        .chain(unlisted)
        .collect();
    cpus.sort_unstable();
    cpus.dedup();
    cpus
}

/// Physical cores among `cpus`, ordered by primary. Siblings come from the
/// topology's SMT sibling lists, restricted to `cpus`.
pub fn cores_of(topo: &Topology, cpus: &[CpuId]) -> Vec<Core> {
    let mut by_primary: BTreeMap<CpuId, Vec<CpuId>> = BTreeMap::new();
    for &cpu in cpus {
        let mut group: Vec<CpuId> = match topo.cpus.iter().find(|c| c.id == cpu) {
            Some(c) if !c.siblings.is_empty() => c
                .siblings
                .iter()
                .copied()
                .filter(|s| cpus.contains(s))
                .collect(),
            _ => vec![cpu],
        };
        if !group.contains(&cpu) {
            group.push(cpu);
        }
        group.sort_unstable();
        by_primary.entry(group[0]).or_insert(group);
    }
    by_primary
        .into_values()
        .map(|g| Core {
            primary: g[0],
            siblings: g[1..].to_vec(),
        })
        .collect()
}

/// Physical cores of `node` (online CPUs only), ordered by primary.
pub fn node_cores(topo: &Topology, node: NodeId) -> Vec<Core> {
    cores_of(topo, &node_cpus(topo, node))
}

/// NUMA node of an online CPU, from the CPU's record or the node lists.
pub fn cpu_node(topo: &Topology, cpu: CpuId) -> Option<NodeId> {
    topo.cpus
        .iter()
        .find(|c| c.id == cpu)
        .and_then(|c| c.node)
        .or_else(|| {
            topo.nodes
                .iter()
                .find(|n| n.cpus.contains(&cpu))
                .map(|n| n.id)
        })
}

/// Nodes ordered by distance from `from` (nearest first, ties by id);
/// `from` itself first when it is a node. Without a distance table, by id.
pub fn nodes_by_distance(topo: &Topology, from: NodeId) -> Vec<NodeId> {
    let row = topo
        .nodes
        .iter()
        .find(|n| n.id == from)
        .map(|n| n.distances.clone())
        .unwrap_or_default();
    let mut nodes: Vec<(u32, u32, NodeId)> = topo
        .nodes
        .iter()
        .enumerate()
        .map(|(i, n)| {
            let self_rank = u32::from(n.id != from);
            let dist = row.get(i).copied().unwrap_or(u32::MAX);
            (self_rank, dist, n.id)
        })
        .collect();
    nodes.sort_unstable_by_key(|&(s, d, id)| (s, d, id));
    nodes.into_iter().map(|(_, _, id)| id).collect()
}

/// Distance between two nodes, when the table has it.
pub fn distance(topo: &Topology, from: NodeId, to: NodeId) -> Option<u32> {
    let row = &topo.nodes.iter().find(|n| n.id == from)?.distances;
    let idx = topo.nodes.iter().position(|n| n.id == to)?;
    row.get(idx).copied()
}

/// Whether `node` reports memory.
pub fn has_memory(topo: &Topology, node: NodeId) -> bool {
    topo.nodes
        .iter()
        .any(|n| n.id == node && n.memory_bytes > 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(v: &[u32]) -> Vec<CpuId> {
        v.iter().copied().map(CpuId).collect()
    }

    #[test]
    fn parses_ranges() {
        assert_eq!(parse_cpu_list("0-3,112-115").unwrap().len(), 8);
        assert_eq!(parse_cpu_list(" 7 , 2-3").unwrap(), ids(&[2, 3, 7]));
        let err = |t: &str| parse_cpu_list(t).unwrap_err().to_string();
        assert!(err("3-1").contains("backwards"));
        assert!(err("a").contains("not a CPU number"));
        assert!(err("1,,2").contains("empty entry"));
        assert!(matches!(
            parse_cpu_list("3-1"),
            Err(CpuSetError::List(CpuListError::Backwards { .. }))
        ));
        let e = parse_cpu_list(" ").unwrap_err();
        assert_eq!(e, CpuSetError::NoCpus { text: " ".into() });
        assert_eq!(
            e.to_string(),
            "empty CPU list ` `; name at least one CPU, e.g. 0-3"
        );
        assert_eq!(parse_node_list("0-1").unwrap(), vec![NodeId(0), NodeId(1)]);
        assert!(parse_node_list("x")
            .unwrap_err()
            .to_string()
            .contains("not a node number"));
    }
}
