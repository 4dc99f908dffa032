//! Checks that the model agrees with itself (distance rows against the
//! node count, every CPU's node against the node lists), and the notes
//! discovery left where it read an older kernel's layout or had to choose
//! between contradicting files.

use std::collections::{BTreeMap, BTreeSet};

use super::checks::{evidence, finding, ids, node_cpus_evidence};
use super::{Finding, Severity};
use crate::cpulist::CpuList;
use crate::model::{CpuId, DiscoveryNote, NodeId, Topology};

/// One finding per discovery note, with the note's code.
pub fn discovery_notes(t: &Topology, out: &mut Vec<Finding>) {
    for note in &t.notes {
        let (severity, subject, fix) = note_kind(note);
        out.push(finding(
            severity,
            &note.code,
            subject,
            note.message.clone(),
            vec![evidence(format!("/{}", note.path), note.value.clone())],
            fix.to_string(),
        ));
    }
}

fn note_kind(note: &DiscoveryNote) -> (Severity, &'static str, &'static str) {
    match note.code.as_str() {
        "node-lists-overlap" => (
            Severity::Warning,
            "nodes",
            "update the platform firmware (BIOS) and check its NUMA settings; until then check each node's CPUs with `numactl --hardware` and pin jobs with --cpus-for where they matter",
        ),
        "nvme-misc-class" | "nvme-subsystems-missing" => (
            Severity::Info,
            "nvme",
            "nothing to fix: numio reads this kernel's layout; a kernel of 4.15 or later adds subsystems, native multipath and the controller attributes",
        ),
        code if code.starts_with("node-") => (
            Severity::Info,
            "nodes",
            "nothing to fix: numio derived what the missing file would hold",
        ),
        _ => (
            Severity::Info,
            "cpus",
            "nothing to fix: numio derived what the missing file would hold",
        ),
    }
}

/// Distance rows whose length is not the number of nodes (or no distance
/// table at all on a multi-node machine).
pub fn distance_rows(t: &Topology, out: &mut Vec<Finding>) {
    let count = t.nodes.len();
    if count > 1 && t.nodes.iter().all(|n| n.distances.is_empty()) {
        let path = format!("/sys/devices/system/node/node{}/distance", t.nodes[0].id);
        let message = format!(
            "the kernel wrote no node distances (nodeN/distance is missing on all {count} nodes): numio cannot tell which node is nearest, so a node without CPUs or memory borrows from the lowest-numbered one"
        );
        let fix = "nothing to fix on a kernel that does not report distances; pass --cpus-for to place jobs of drives on nodes without CPUs or memory".to_string();
        out.push(finding(
            Severity::Info,
            "distance-table-missing",
            "nodes",
            message,
            vec![evidence(path, "missing")],
            fix,
        ));
        return;
    }
    let bad: Vec<_> = t
        .nodes
        .iter()
        .filter(|n| n.distances.len() != count)
        .collect();
    let Some(first) = bad.first() else {
        return;
    };
    let ev = bad
        .iter()
        .take(4)
        .map(|n| {
            let row: Vec<String> = n.distances.iter().map(u32::to_string).collect();
            let value = if row.is_empty() {
                "missing".to_string()
            } else {
                row.join(" ")
            };
            evidence(
                format!("/sys/devices/system/node/node{}/distance", n.id),
                value,
            )
        })
        .collect();
    let nodes: Vec<String> = bad.iter().map(|n| n.id.to_string()).collect();
    let message = format!(
        "the distance row of node(s) {} has {} entries, but there are {count} online nodes (node {} first): a row cannot be matched to the nodes, so nearest-node choices (for a node without CPUs or memory) may pick the wrong node",
        nodes.join(","),
        first.distances.len(),
        first.id
    );
    let fix = "check `numactl --hardware`: the firmware's distance table (ACPI SLIT) or the node list is wrong; pass --cpus-for to place jobs of drives on nodes without CPUs or memory".to_string();
    out.push(finding(
        Severity::Warning,
        "distance-table-mismatch",
        &format!("node {}", first.id),
        message,
        ev,
        fix,
    ));
}

/// CPUs whose node is not an online node, online CPUs no node lists, and
/// CPUs listed by several nodes.
pub fn cpu_nodes(t: &Topology, out: &mut Vec<Finding>) {
    let nodes: BTreeSet<NodeId> = t.nodes.iter().map(|n| n.id).collect();
    let mut unlisted_node: BTreeMap<NodeId, Vec<CpuId>> = BTreeMap::new();
    for c in &t.cpus {
        if let Some(n) = c.node.filter(|n| !nodes.contains(n)) {
            unlisted_node.entry(n).or_default().push(c.id);
        }
    }
    let node_list = CpuList::of_nodes(&nodes.iter().copied().collect::<Vec<_>>()).to_string();
    for (node, cpus) in &unlisted_node {
        let message = format!(
            "CPU(s) {} belong to node {node} (their cpuN/node{node} links), which is not among the online nodes ({node_list}): numio cannot place jobs on them by node, and a drive on node {node} has no node to plan on",
            ids(cpus)
        );
        let ev = vec![
            evidence(
                format!("/sys/devices/system/cpu/cpu{}/node{node}", cpus[0]),
                format!("link to node {node}"),
            ),
            evidence("/sys/devices/system/node/online", node_list.clone()),
        ];
        let fix = "check `numactl --hardware` and the kernel log for NUMA setup errors (`dmesg | grep -i numa`); pin jobs with --cpus-for until the kernel lists the node".to_string();
        out.push(finding(
            Severity::Warning,
            "cpu-node-not-listed",
            &format!("node {node}"),
            message,
            ev,
            fix,
        ));
    }
    unlisted_cpus(t, out);
    overlapping_lists(t, out);
    controllers_off_nodes(t, out, &node_list);
}

/// Controllers whose `numa_node` names a node that is not online.
fn controllers_off_nodes(t: &Topology, out: &mut Vec<Finding>, node_list: &str) {
    for c in &t.controllers {
        let Some(node) = c.numa_node.node().filter(|n| t.node(*n).is_none()) else {
            continue;
        };
        let file = if c.numa_node_file.is_empty() {
            format!("/sys/class/nvme/{}/numa_node", c.name)
        } else {
            format!("/{}", c.numa_node_file)
        };
        let message = format!(
            "{} reports node {node}, which is not among the online nodes ({node_list}): its jobs cannot be planned on their node, so numio plans them as if the node were unknown",
            c.name
        );
        let fix = format!("check `dmesg | grep -i numa` and the firmware's NUMA settings; meanwhile pin the jobs of {}'s namespaces with --cpus-for", c.name);
        out.push(finding(
            Severity::Warning,
            "controller-node-not-online",
            &c.name,
            message,
            vec![
                evidence(file, node.to_string()),
                evidence("/sys/devices/system/node/online", node_list.to_string()),
            ],
            fix,
        ));
    }
}

/// Online CPUs that no node lists, on a machine with node lists.
fn unlisted_cpus(t: &Topology, out: &mut Vec<Finding>) {
    let listed: BTreeSet<CpuId> = t
        .nodes
        .iter()
        .flat_map(|n| n.cpus.iter().copied())
        .collect();
    let missing: Vec<CpuId> = t
        .cpus
        .iter()
        .filter(|c| c.online && !listed.contains(&c.id))
        .map(|c| c.id)
        .collect();
    if missing.is_empty() {
        return;
    }
    let ev = t
        .nodes
        .iter()
        .take(4)
        .map(|n| node_cpus_evidence(t, n))
        .collect();
    let message = format!(
        "online CPU(s) {} are in no node's CPU list: NUMA placement cannot use them by their node list (numio falls back to each CPU's cpuN/nodeM link where it has one)",
        ids(&missing)
    );
    let fix = "compare `numactl --hardware` with /sys/devices/system/cpu/online; a kernel or firmware bug, or a sysfs copied in part".to_string();
    out.push(finding(
        Severity::Warning,
        "cpus-not-in-node-lists",
        "cpus",
        message,
        ev,
        fix,
    ));
}

/// CPUs that several nodes of the model list (discovery settles these and
/// notes `node-lists-overlap`; a model built otherwise may still hold them).
fn overlapping_lists(t: &Topology, out: &mut Vec<Finding>) {
    let mut owners: BTreeMap<CpuId, Vec<NodeId>> = BTreeMap::new();
    for n in &t.nodes {
        for &c in &n.cpus {
            owners.entry(c).or_default().push(n.id);
        }
    }
    let shared: Vec<CpuId> = owners
        .iter()
        .filter(|(_, o)| o.len() > 1)
        .map(|(c, _)| *c)
        .collect();
    if shared.is_empty() {
        return;
    }
    let listing: BTreeSet<NodeId> = shared.iter().flat_map(|c| owners[c].clone()).collect();
    let ev = listing
        .iter()
        .take(4)
        .filter_map(|id| t.node(*id))
        .map(|n| node_cpus_evidence(t, n))
        .collect();
    let message = format!(
        "CPU(s) {} are listed by more than one node ({}): jobs planned on one of those nodes may run on another's CPUs",
        ids(&shared),
        CpuList::of_nodes(&listing.into_iter().collect::<Vec<_>>())
    );
    let fix = "rediscover the topology with this numio (`numio topo --save`), which settles each CPU on the node its cpuN/nodeM link names".to_string();
    out.push(finding(
        Severity::Warning,
        "node-lists-overlap",
        "nodes",
        message,
        ev,
        fix,
    ));
}
