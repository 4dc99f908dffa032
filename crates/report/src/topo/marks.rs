//! Where each doctor finding is marked: on the controller, node or
//! multipath head it concerns (by its subject), else on the machine.

use topology::doctor::Finding;
use topology::{NodeId, Topology};

/// A part of the picture a finding can be marked on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Part {
    /// A controller box, by name.
    Controller(String),
    /// A NUMA node box.
    Node(NodeId),
    /// A multipath head box, by block device.
    Head(String),
    /// The machine as a whole (CPUs, driver settings, files).
    Machine,
}

/// Multipath heads drawn as their own box: namespaces with two paths or
/// more.
pub fn drawn_heads(t: &Topology) -> Vec<(&topology::Subsystem, &topology::Namespace)> {
    t.subsystems
        .iter()
        .flat_map(|s| s.namespaces.iter().map(move |ns| (s, ns)))
        .filter(|(_, ns)| ns.paths.len() >= 2)
        .collect()
}

/// The parts finding `f` is marked on (its subject names a controller, a
/// node, a namespace, a subsystem or a head and node).
pub fn parts_of(t: &Topology, f: &Finding) -> Vec<Part> {
    let heads = drawn_heads(t);
    let subject = f.subject.as_str();
    let head_named = |name: &str| heads.iter().any(|(_, ns)| ns.block_device == name);
    if t.controller(subject).is_some() {
        return vec![Part::Controller(subject.to_string())];
    }
    if let Some(id) = subject.strip_prefix("node ").and_then(|n| n.parse().ok()) {
        // A node that is not online has no box: the machine carries it.
        return match t.node(NodeId(id)) {
            Some(_) => vec![Part::Node(NodeId(id))],
            None => vec![Part::Machine],
        };
    }
    // `nvme0n1 node 1`: a node's route to a multipath head.
    let first = subject.split(' ').next().unwrap_or(subject);
    if head_named(first) {
        return vec![Part::Head(first.to_string())];
    }
    for s in &t.subsystems {
        if s.name == subject {
            let drawn: Vec<Part> = heads
                .iter()
                .filter(|(hs, _)| hs.name == s.name)
                .map(|(_, ns)| Part::Head(ns.block_device.clone()))
                .collect();
            if !drawn.is_empty() {
                return drawn;
            }
            return s
                .controllers
                .iter()
                .map(|c| Part::Controller(c.clone()))
                .collect();
        }
        if let Some(ns) = s.namespaces.iter().find(|ns| ns.block_device == first) {
            let owners = ns
                .controller
                .iter()
                .chain(ns.paths.iter().map(|p| &p.controller));
            return owners.map(|c| Part::Controller(c.clone())).collect();
        }
    }
    vec![Part::Machine]
}

/// The numbers (1-based, in the report's order) of the findings marked on
/// `part`.
pub fn marks_on(t: &Topology, findings: &[Finding], part: &Part) -> Vec<usize> {
    findings
        .iter()
        .enumerate()
        .filter(|(_, f)| parts_of(t, f).contains(part))
        .map(|(i, _)| i + 1)
        .collect()
}
