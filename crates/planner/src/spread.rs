//! The `spread` policy: the uncontrolled baseline of a NUMA A/B test.
//!
//! - Job after job of the run (targets in order, each target's jobs in
//!   order) goes to the next NUMA node in turn (the nodes with online CPUs,
//!   by id), so on a two-socket machine half of every target's jobs run on
//!   the other socket whatever the drives' nodes.
//! - On its node a job takes the next CPU not yet given: every physical
//!   core's primary, then the SMT siblings, then around again
//!   (oversubscribed, warned).
//! - Buffers are allocated on the job's node (`local`), or, for a node
//!   without memory, bound to the nearest node with memory.
//! - Where no node lists an online CPU, jobs take every online CPU in turn,
//!   memory not bound, with a warning.

use topology::{CpuId, CpuList, NodeId, Topology};

use crate::cpuset::{has_memory, node_cores, nodes_by_distance, online_cpus};
use crate::local::{job_order, node_label};
use crate::placement::{JobPlacement, MemPolicy, TargetPlacement};

/// One node jobs are dealt to: its CPUs in the order jobs take them, and
/// the memory policy of jobs there.
struct Lane {
    node: Option<NodeId>,
    order: Vec<CpuId>,
    mem: MemPolicy,
    given: usize,
}

/// Places every target with the `spread` policy.
pub(crate) fn place(topo: &Topology, targets: &mut [TargetPlacement], warnings: &mut Vec<String>) {
    let mut lanes = lanes(topo, warnings);
    let count = lanes.len();
    let mut next = 0usize;
    for t in targets.iter_mut() {
        let mut nodes: Vec<NodeId> = Vec::new();
        for _ in 0..t.workload.numjobs {
            let lane = &mut lanes[next % count];
            next += 1;
            let cpu = lane.order[lane.given % lane.order.len()];
            lane.given += 1;
            t.jobs.push(JobPlacement {
                cpus: vec![cpu],
                mem: lane.mem.clone(),
            });
            if let Some(n) = lane.node.filter(|n| !nodes.contains(n)) {
                nodes.push(n);
            }
        }
        t.cpus = crate::placement::union(&t.jobs);
        if nodes.len() > 1 {
            let list: Vec<String> = nodes.iter().map(|n| n.0.to_string()).collect();
            t.notes.push(format!(
                "spread: jobs on nodes {} in turn with the run's other jobs",
                list.join(", ")
            ));
        }
    }
    for lane in lanes.iter().filter(|l| l.given > l.order.len()) {
        warnings.push(format!(
            "{}: {} spread jobs on {} CPUs; jobs share CPUs; lower --jobs",
            lane.node.map_or("every online CPU".into(), node_label),
            lane.given,
            lane.order.len()
        ));
    }
}

/// The nodes with online CPUs, by id; or one lane of every online CPU
/// (warned) when no node lists one.
fn lanes(topo: &Topology, warnings: &mut Vec<String>) -> Vec<Lane> {
    let lanes: Vec<Lane> = topo
        .nodes
        .iter()
        .filter_map(|n| {
            let cores = node_cores(topo, n.id);
            let order = job_order(&cores.iter().collect::<Vec<_>>());
            if order.is_empty() {
                return None;
            }
            let mem = if has_memory(topo, n.id) {
                MemPolicy::Local
            } else {
                let near = nodes_by_distance(topo, n.id)
                    .into_iter()
                    .find(|&m| has_memory(topo, m));
                near.map_or(MemPolicy::Default, |m| MemPolicy::Bind(vec![m]))
            };
            Some(Lane {
                node: Some(n.id),
                order,
                mem,
                given: 0,
            })
        })
        .collect();
    if !lanes.is_empty() {
        return lanes;
    }
    let all = online_cpus(topo);
    warnings.push(format!(
        "no NUMA node lists an online CPU (run `numio doctor`): spread jobs take every online CPU ({}) in turn, memory not bound",
        CpuList::of(&all)
    ));
    vec![Lane {
        node: None,
        order: all,
        mem: MemPolicy::Default,
        given: 0,
    }]
}
