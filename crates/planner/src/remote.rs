//! The `remote` policy: each target's jobs and buffers on the node farthest
//! from it, the other arm of a NUMA A/B test (`numio compare --a
//! policy=local --b policy=remote`).
//!
//! - The node: among the nodes with online CPUs other than the target's own
//!   (every local node of a multipath head), the farthest by the firmware's
//!   distance table (SLIT; for a multipath head, from the nearest of its
//!   local nodes) that still has a physical core no earlier target was
//!   given; ties go to the lowest node id. When every such node is taken,
//!   the farthest of them all, shared (warned).
//! - On that node, jobs take physical cores as under `local` (targets on one
//!   node share its cores evenly, SMT siblings after the primaries); buffers
//!   are bound to it (`bind:N`), or, for a node without memory, to the
//!   nearest node with memory (noted).
//! - No fallback: a target of unknown node, or a machine where no other node
//!   has CPUs, is an error naming the target and the fix. A remote arm that
//!   quietly ran local would report a contrast that is not one.

use std::cmp::Reverse;
use std::collections::BTreeMap;

use topology::{NodeId, Topology};

use crate::cpuset::{distance, has_memory, node_cores, node_cpus, nodes_by_distance};
use crate::error::PlanError;
use crate::local::{distance_text, node_label, place_pieces, Home, Piece};
use crate::placement::{MemPolicy, TargetPlacement};

/// Places every target with the `remote` policy. `local_nodes[i]` lists the
/// nodes target `i` is local to (see [`crate::Resolution::local_nodes`]).
pub(crate) fn place(
    topo: &Topology,
    targets: &mut [TargetPlacement],
    local_nodes: &[Vec<NodeId>],
    warnings: &mut Vec<String>,
) -> Result<(), PlanError> {
    let with_cpus: Vec<NodeId> = topo
        .nodes
        .iter()
        .map(|n| n.id)
        .filter(|&n| !node_cpus(topo, n).is_empty())
        .collect();
    if let Some(t) = targets.first().filter(|_| with_cpus.len() < 2) {
        return Err(PlanError::NoRemoteNode {
            target: t.path.clone(),
            with_cpus,
        });
    }
    // Jobs given to each node so far, to tell which still has free cores.
    let mut load: BTreeMap<NodeId, u64> = BTreeMap::new();
    let mut pieces = Vec::with_capacity(targets.len());
    for (i, t) in targets.iter_mut().enumerate() {
        let own = own_nodes(topo, t, local_nodes.get(i))?;
        let node =
            farthest(topo, &own, &with_cpus, &load).ok_or_else(|| PlanError::LocalEverywhere {
                target: t.path.clone(),
                nodes: own.clone(),
            })?;
        *load.entry(node).or_default() += u64::from(t.workload.numjobs);
        let mem_node = nodes_by_distance(topo, node)
            .into_iter()
            .find(|&n| has_memory(topo, n))
            .unwrap_or(node);
        let how_far =
            distance(topo, own[0], node).map_or(String::new(), |d| format!("distance {d} "));
        t.notes.push(format!(
            "remote: jobs on {} ({how_far}from the target's {}), buffers bound to {}",
            node_label(node),
            node_label(own[0]),
            node_label(mem_node),
        ));
        if mem_node != node {
            t.notes.push(format!(
                "{} has no memory: buffers bound to the nearest {}{}",
                node_label(node),
                node_label(mem_node),
                distance_text(topo, node, mem_node)
            ));
        }
        pieces.push(Piece {
            target: i,
            jobs: t.workload.numjobs,
            home: Home {
                cpu_node: Some(node),
                mem: MemPolicy::Bind(vec![mem_node]),
            },
        });
    }
    place_pieces(topo, targets, pieces, "", warnings);
    Ok(())
}

/// The nodes a target is local to: a multipath head's local nodes, else its
/// own node; an error when it has none the topology knows.
fn own_nodes(
    topo: &Topology,
    t: &TargetPlacement,
    local: Option<&Vec<NodeId>>,
) -> Result<Vec<NodeId>, PlanError> {
    let mut own: Vec<NodeId> = local.cloned().unwrap_or_default();
    if own.is_empty() {
        own.extend(t.node);
    }
    own.retain(|n| topo.nodes.iter().any(|x| x.id == *n));
    if own.is_empty() {
        return Err(PlanError::RemoteNodeUnknown {
            target: t.path.clone(),
        });
    }
    Ok(own)
}

/// The farthest node from `own` among `with_cpus` (not in `own`) that has a
/// physical core left after `load`; else the farthest of them all; ties by
/// the lowest id. `None` when `own` holds every node with CPUs.
fn farthest(
    topo: &Topology,
    own: &[NodeId],
    with_cpus: &[NodeId],
    load: &BTreeMap<NodeId, u64>,
) -> Option<NodeId> {
    let free = |n: NodeId| node_cores(topo, n).len() as u64 > load.get(&n).copied().unwrap_or(0);
    let dist = |n: NodeId| {
        own.iter()
            .filter_map(|&o| distance(topo, o, n))
            .min()
            .unwrap_or(0)
    };
    let others = || with_cpus.iter().copied().filter(|n| !own.contains(n));
    let pick = |pool: Vec<NodeId>| pool.into_iter().max_by_key(|&n| (dist(n), Reverse(n)));
    pick(others().filter(|&n| free(n)).collect()).or_else(|| pick(others().collect()))
}
