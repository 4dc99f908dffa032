//! The `local` policy: each target's jobs run on the physical cores of the
//! target's NUMA node.
//!
//! - Targets on one node share its cores evenly and in target order; no two
//!   targets share a core until every core has one.
//! - A target gets one core per job while the node has cores for every job
//!   (16 drives × 4 jobs on a 112-core socket: `0-3,112-115`, `4-7,116-119`,
//!   …); the core's SMT siblings are set aside with it.
//! - Jobs take the primaries of their target's cores first, then the
//!   siblings, then wrap around (oversubscription, warned). Remote nodes are
//!   never used while the local node has CPUs.
//! - A node without CPUs or memory borrows them from the nearest node by
//!   distance; a target whose node is unknown goes to the node with the most
//!   free cores (ties: lowest id), with a warning.
//! - Where no node has an online CPU (node lists that do not match the
//!   CPUs), jobs go to every online CPU without NUMA locality, with a
//!   warning: a job is never left without a CPU.

use std::collections::BTreeMap;

use topology::{CpuId, CpuList, NodeId, Topology};

use crate::cpuset::{
    cores_of, distance, has_memory, node_cores, node_cpus, nodes_by_distance, online_cpus, Core,
};
use crate::placement::{JobPlacement, MemPolicy, TargetPlacement};

/// Where a target's jobs run and where their memory lives.
pub(crate) struct Home {
    /// The node whose cores the jobs take; `None`: every online CPU (no
    /// node has one, so there is no NUMA locality to keep).
    pub(crate) cpu_node: Option<NodeId>,
    pub(crate) mem: MemPolicy,
}

/// Some of a target's jobs, all placed on one node. A target is one piece,
/// or one per node for a multipath head whose paths are local to several.
pub(crate) struct Piece {
    pub(crate) target: usize,
    pub(crate) jobs: u32,
    pub(crate) home: Home,
}

/// Places every target with the `local` policy. `local_nodes[i]` lists the
/// nodes target `i` is local to (several for a multipath head under
/// iopolicy numa; see [`crate::Resolution::local_nodes`]).
pub(crate) fn place(
    topo: &Topology,
    targets: &mut [TargetPlacement],
    local_nodes: &[Vec<NodeId>],
    warnings: &mut Vec<String>,
) {
    let pieces = home_pieces(topo, targets, local_nodes, warnings);
    place_pieces(topo, targets, pieces, " rather than run remote", warnings);
}

/// Gives every piece cores of its home node: pieces on one node share its
/// physical cores evenly and in target order (see the module's rules).
/// `instead` ends the warning of a node asked for more jobs than it has
/// cores (` rather than run remote` for `local`).
pub(crate) fn place_pieces(
    topo: &Topology,
    targets: &mut [TargetPlacement],
    mut pieces: Vec<Piece>,
    instead: &str,
    warnings: &mut Vec<String>,
) {
    pieces.sort_by_key(|p| p.target);
    let mut by_node: BTreeMap<Option<NodeId>, Vec<usize>> = BTreeMap::new();
    for (k, p) in pieces.iter().enumerate() {
        by_node.entry(p.home.cpu_node).or_default().push(k);
    }
    // Per piece: the CPUs its jobs take in order, and how many cores those are.
    let mut placed: Vec<(Vec<CpuId>, usize)> = vec![(Vec::new(), 0); pieces.len()];
    for (node, members) in by_node {
        let cores = match node {
            Some(node) => node_cores(topo, node),
            None => cores_of(topo, &online_cpus(topo)),
        };
        let demands: Vec<u32> = members.iter().map(|&k| pieces[k].jobs).collect();
        let total: u64 = demands.iter().map(|&d| u64::from(d)).sum();
        if total > cores.len() as u64 {
            warnings.push(format!(
                "{}: {total} jobs on {} physical cores; jobs share cores (SMT siblings first, then time-sharing){instead}; lower --jobs or add targets on other nodes",
                node.map_or("every online CPU".to_string(), node_label),
                cores.len()
            ));
        }
        for (m, cores_idx) in allot(cores.len(), &demands).into_iter().enumerate() {
            let mine: Vec<&Core> = cores_idx.iter().map(|&c| &cores[c]).collect();
            placed[members[m]] = (job_order(&mine), mine.len());
        }
    }
    for (piece, (order, cores)) in pieces.iter().zip(placed) {
        assign(&mut targets[piece.target], piece, &order, cores);
    }
}

/// The pieces of every target: on its own node (or split over the local
/// nodes of a multipath head), or, when its node is unknown, on the node with
/// the most free cores once the others are placed.
fn home_pieces(
    topo: &Topology,
    targets: &mut [TargetPlacement],
    local_nodes: &[Vec<NodeId>],
    warnings: &mut Vec<String>,
) -> Vec<Piece> {
    let mut pieces = Vec::new();
    let mut unknown = Vec::new();
    for (i, t) in targets.iter_mut().enumerate() {
        let before = pieces.len();
        match local_nodes.get(i).filter(|n| n.len() > 1) {
            Some(nodes) => pieces.extend(split_pieces(topo, i, t, nodes)),
            None => pieces.extend(known_home(topo, t).map(|home| Piece {
                target: i,
                jobs: t.workload.numjobs,
                home,
            })),
        }
        if pieces.len() == before {
            unknown.push(i);
        }
    }
    // Jobs per node so far, to put targets of unknown node where cores are free.
    let mut load: BTreeMap<NodeId, i64> = BTreeMap::new();
    for p in &pieces {
        if let Some(node) = p.home.cpu_node {
            *load.entry(node).or_default() += i64::from(p.jobs);
        }
    }
    for i in unknown {
        let home = match fallback_node(topo, &load) {
            Some(node) => {
                let one_node = topo.nodes.len() == 1;
                fallback_notes(&mut targets[i], node, one_node, warnings);
                *load.entry(node).or_default() += i64::from(targets[i].workload.numjobs);
                Home {
                    cpu_node: Some(node),
                    mem: MemPolicy::Local,
                }
            }
            None => {
                no_node_notes(topo, &mut targets[i], warnings);
                Home {
                    cpu_node: None,
                    mem: MemPolicy::Default,
                }
            }
        };
        pieces.push(Piece {
            target: i,
            jobs: targets[i].workload.numjobs,
            home,
        });
    }
    pieces
}

/// Notes for a target planned on every online CPU because no node has one.
fn no_node_notes(topo: &Topology, t: &mut TargetPlacement, warnings: &mut Vec<String>) {
    let all = CpuList::of(&online_cpus(topo));
    warnings.push(format!(
        "{}: no NUMA node lists an online CPU (the node CPU lists do not match the online CPUs; run `numio doctor`), so its jobs run on every online CPU ({all}) without NUMA locality (pass --cpus-for {}=LIST to choose)",
        t.path, t.path
    ));
    t.notes.push(format!(
        "no node has an online CPU: planned on all online CPUs ({all}), memory not bound"
    ));
}

/// One piece per local node of a multipath head, its jobs dealt evenly
/// (earlier nodes take the remainder; nodes without a job are left out).
fn split_pieces(
    topo: &Topology,
    i: usize,
    t: &mut TargetPlacement,
    nodes: &[NodeId],
) -> Vec<Piece> {
    let n = t.workload.numjobs;
    let k = nodes.len() as u32;
    let mut out = Vec::new();
    for (idx, &node) in nodes.iter().enumerate() {
        let jobs = n / k + u32::from((idx as u32) < n % k);
        if jobs == 0 {
            continue;
        }
        let saved = t.node;
        t.node = Some(node);
        let home = known_home(topo, t);
        t.node = saved;
        if let Some(home) = home {
            out.push(Piece {
                target: i,
                jobs,
                home,
            });
        }
    }
    out
}

/// The node a target of unknown node is planned on: among nodes with CPUs
/// (those with memory first), the one with the most physical cores not yet
/// asked for by other targets; ties go to the lowest-numbered node. `None`
/// when no node has an online CPU.
fn fallback_node(topo: &Topology, load: &BTreeMap<NodeId, i64>) -> Option<NodeId> {
    let free = |n: NodeId| node_cores(topo, n).len() as i64 - load.get(&n).copied().unwrap_or(0);
    let with_cpus: Vec<NodeId> = topo
        .nodes
        .iter()
        .map(|n| n.id)
        .filter(|&n| !node_cpus(topo, n).is_empty())
        .collect();
    let with_memory: Vec<NodeId> = with_cpus
        .iter()
        .copied()
        .filter(|&n| has_memory(topo, n))
        .collect();
    let pool = if with_memory.is_empty() {
        &with_cpus
    } else {
        &with_memory
    };
    pool.iter()
        .copied()
        .max_by_key(|&n| (free(n), std::cmp::Reverse(n)))
}

/// Says that target `t` of unknown node was placed on `node`: a warning
/// (naming the target once) when the machine has several nodes, so the
/// choice matters; on a one-node machine it does not, and the target's
/// note says why its node is unknown, nothing more.
fn fallback_notes(
    t: &mut TargetPlacement,
    node: NodeId,
    one_node: bool,
    warnings: &mut Vec<String>,
) {
    if one_node && t.node.is_none() {
        return;
    }
    let why = match t.node {
        Some(n) => format!("{} is not an online node", node_label(n)),
        None => t
            .notes
            .last()
            .cloned()
            .unwrap_or_else(|| "NUMA node unknown".into()),
    };
    let named = if why.starts_with(t.path.as_str()) {
        why
    } else {
        format!("{}: {why}", t.path)
    };
    warnings.push(format!(
        "{named}; planned on {} (the node with the most free cores) as a fallback (pass --cpus-for {}=LIST to choose)",
        node_label(node),
        t.path
    ));
    t.notes.push(format!(
        "NUMA node unknown: fallback to {}, the node with the most free cores",
        node_label(node)
    ));
}

/// Where a target of known node runs (`None` when its node is unknown or
/// not online). Borrows CPUs or memory from the nearest node when its own
/// has none, and says so in the target's notes.
fn known_home(topo: &Topology, t: &mut TargetPlacement) -> Option<Home> {
    let node = t.node.filter(|n| topo.nodes.iter().any(|x| x.id == *n))?;
    let order = nodes_by_distance(topo, node);
    let cpu_node = order
        .iter()
        .copied()
        .find(|&n| !node_cpus(topo, n).is_empty())?;
    let mem_node = order
        .iter()
        .copied()
        .find(|&n| has_memory(topo, n))
        .unwrap_or(cpu_node);
    if cpu_node != node {
        t.notes.push(format!(
            "{} has no online CPUs: using the CPUs of the nearest {}{}",
            node_label(node),
            node_label(cpu_node),
            distance_text(topo, node, cpu_node)
        ));
    }
    if mem_node != node {
        t.notes.push(format!(
            "{} has no memory: buffers bound to the nearest {}{}",
            node_label(node),
            node_label(mem_node),
            distance_text(topo, node, mem_node)
        ));
    }
    let mem = if mem_node == cpu_node {
        MemPolicy::Local
    } else {
        MemPolicy::Bind(vec![mem_node])
    };
    Some(Home {
        cpu_node: Some(cpu_node),
        mem,
    })
}

/// ` (distance D)` between two nodes, or nothing without a distance table.
pub(crate) fn distance_text(topo: &Topology, a: NodeId, b: NodeId) -> String {
    distance(topo, a, b)
        .map(|d| format!(" (distance {d})"))
        .unwrap_or_default()
}

/// Splits `cores` cores among targets asking for `demands` jobs each:
/// one core per job while every job has one; otherwise an even share in
/// target order (water-filling); with more targets than cores, target `i`
/// gets core `i mod cores`. Returns core indices per target.
pub(crate) fn allot(cores: usize, demands: &[u32]) -> Vec<Vec<usize>> {
    if cores == 0 {
        return vec![Vec::new(); demands.len()];
    }
    if demands.len() > cores {
        return (0..demands.len()).map(|i| vec![i % cores]).collect();
    }
    let total: u64 = demands.iter().map(|&d| u64::from(d)).sum();
    let counts: Vec<usize> = if total <= cores as u64 {
        demands.iter().map(|&d| d as usize).collect()
    } else {
        let mut counts = vec![0usize; demands.len()];
        let mut left = cores;
        while left > 0 {
            for (i, &d) in demands.iter().enumerate() {
                if left > 0 && counts[i] < d as usize {
                    counts[i] += 1;
                    left -= 1;
                }
            }
        }
        counts
    };
    let mut next = 0;
    counts
        .iter()
        .map(|&n| {
            let range = (next..next + n).collect();
            next += n;
            range
        })
        .collect()
}

/// Order in which a target's jobs take its CPUs: every primary, then every
/// first sibling, then every second sibling, …
pub(crate) fn job_order(cores: &[&Core]) -> Vec<CpuId> {
    let mut order: Vec<CpuId> = cores.iter().map(|c| c.primary).collect();
    let depth = cores.iter().map(|c| c.siblings.len()).max().unwrap_or(0);
    for rank in 0..depth {
        order.extend(cores.iter().filter_map(|c| c.siblings.get(rank).copied()));
    }
    order
}

/// Adds a piece's jobs to its target: job `j` of the piece takes
/// `order[j mod len]` (primaries, then siblings, then wrap).
fn assign(t: &mut TargetPlacement, piece: &Piece, order: &[CpuId], cores: usize) {
    let n = piece.jobs as usize;
    t.jobs.extend((0..n).map(|j| {
        JobPlacement {
            cpus: order
                .get(j % order.len().max(1))
                .copied()
                .into_iter()
                .collect(),
            mem: piece.home.mem.clone(),
        }
    }));
    let mut all = order.to_vec();
    all.sort_unstable();
    if n > cores && n <= order.len() {
        t.notes.push(format!(
            "{n} jobs on {cores} core(s) ({}): jobs beyond the cores run on SMT siblings",
            CpuList::of(&all)
        ));
    } else if n > order.len() {
        t.notes.push(format!(
            "{n} jobs on {} CPU(s) ({}): oversubscribed, jobs share CPUs",
            order.len(),
            CpuList::of(&all)
        ));
    }
    t.cpus.extend(all);
    t.cpus.sort_unstable();
    t.cpus.dedup();
}

/// A node's display form for notes: `node 1`.
pub(crate) fn node_label(n: NodeId) -> String {
    format!("node {}", n.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allots_one_core_per_job_while_they_fit() {
        let a = allot(112, &[4; 16]);
        assert_eq!(a[0], vec![0, 1, 2, 3]);
        assert_eq!(a[15], vec![60, 61, 62, 63]);
    }

    #[test]
    fn allots_evenly_when_oversubscribed() {
        let a = allot(10, &[8, 8, 2]);
        let sizes: Vec<usize> = a.iter().map(Vec::len).collect();
        assert_eq!(sizes, vec![4, 4, 2]);
        let flat: Vec<usize> = a.concat();
        assert_eq!(flat, (0..10).collect::<Vec<_>>(), "no core given twice");
    }

    /// Two nodes of 4 CPUs each whose node lists say `lists` while every
    /// CPU names its node (`cpus N/node`), and `/dev/nvme0n1` on node 1.
    fn two_nodes(lists: [&[u32]; 2]) -> Topology {
        let cpus: Vec<serde_json::Value> = (0..8u32)
            .map(|i| serde_json::json!({"id": i, "online": true, "package": i / 4, "core": i % 4, "siblings": [i], "node": i / 4}))
            .collect();
        let ns = serde_json::json!({"block_device": "nvme0n1", "generic_device": null, "nsid": 1, "size_bytes": 1u64 << 30, "logical_block_size": 512, "queue": {"hw_queues": []}, "paths": [], "controller": "nvme0"});
        serde_json::from_value(serde_json::json!({
            "schema_version": topology::SCHEMA_VERSION,
            "nodes": [
                {"id": 0, "cpus": lists[0], "memory_bytes": 1u64 << 30, "distances": [10, 21]},
                {"id": 1, "cpus": lists[1], "memory_bytes": 1u64 << 30, "distances": [21, 10]}
            ],
            "cpus": cpus,
            "controllers": [{"name": "nvme0", "transport": "pcie", "address": "0000:81:00.0", "model": "m", "serial": "s", "firmware": "1", "state": "live", "cntlid": 1, "numa_node": {"known": 1}, "pci_path": [], "local_cpus": [], "subsystem": "nvme-subsys0", "queue_count": 0, "irqs": []}],
            "subsystems": [{"name": "nvme-subsys0", "nqn": "nqn.x", "iopolicy": null, "controllers": ["nvme0"], "namespaces": [ns]}],
            "nvme_params": {}, "unreadable": []
        }))
        .expect("topology JSON")
    }

    fn local(topo: &Topology, numjobs: u32) -> crate::Placement {
        let request = crate::PlanRequest {
            targets: vec![crate::TargetSpec::new("/dev/nvme0n1")],
            workload: crate::Workload {
                numjobs,
                ..crate::Workload::default()
            },
            policy: crate::Policy::Local,
        };
        crate::plan(topo, &request).expect("a plan")
    }

    /// Regression: node lists naming no CPU (an ARM server's lists ending
    /// in NUL were read as empty) planned "4 jobs, each on -".
    #[test]
    fn empty_node_lists_plan_on_the_cpus_that_name_the_node() {
        let p = local(&two_nodes([&[], &[]]), 4);
        let t = &p.targets[0];
        assert_eq!(CpuList::of(&t.cpus).to_string(), "4-7");
        assert!(t.jobs.iter().all(|j| j.cpus.len() == 1), "{:?}", t.jobs);
    }

    #[test]
    fn no_node_with_cpus_plans_on_every_online_cpu_with_a_warning() {
        let mut topo = two_nodes([&[], &[]]);
        topo.cpus.iter_mut().for_each(|c| c.node = None);
        let p = local(&topo, 4);
        let t = &p.targets[0];
        assert_eq!(CpuList::of(&t.cpus).to_string(), "0-3");
        assert!(t
            .jobs
            .iter()
            .all(|j| !j.cpus.is_empty() && j.mem == MemPolicy::Default));
        assert!(
            p.warnings
                .iter()
                .any(|w| w.contains("no NUMA node lists an online CPU")
                    && w.contains("every online CPU (0-7)")),
            "{:?}",
            p.warnings
        );
    }

    #[test]
    fn nothing_online_is_an_error_not_an_empty_plan() {
        let mut topo = two_nodes([&[], &[]]);
        topo.cpus.iter_mut().for_each(|c| c.online = false);
        let request = crate::PlanRequest {
            targets: vec![crate::TargetSpec::new("/dev/nvme0n1")],
            workload: crate::Workload::default(),
            policy: crate::Policy::Local,
        };
        assert!(matches!(
            crate::plan(&topo, &request),
            Err(crate::PlanError::NoCpus)
        ));
    }

    #[test]
    fn shares_cores_only_after_every_core_is_used() {
        let a = allot(2, &[1, 1, 1]);
        assert_eq!(a, vec![vec![0], vec![1], vec![0]]);
    }
}
