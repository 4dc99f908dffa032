//! The human tree of `numio topo`: node → CPUs (with SMT sibling groups) →
//! controllers → namespaces and paths, then subsystems and driver settings.

use std::fmt::Write;

use crate::cpulist::CpuList;
use crate::model::{Controller, CpuId, DeviceNode, Node, Topology};

/// Width at which long lists wrap.
const WRAP_COLUMNS: usize = 100;

/// Binary gibibytes with one decimal (`191.9 GiB`).
pub fn gib(bytes: u64) -> String {
    format!("{:.1} GiB", bytes as f64 / (1u64 << 30) as f64)
}

/// Decimal size as drives are labelled (`1.92 TB`, `800 GB`).
pub fn decimal_size(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "kB", "MB", "GB", "TB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1000.0 && unit + 1 < UNITS.len() {
        value /= 1000.0;
        unit += 1;
    }
    let digits = if value >= 100.0 || unit == 0 {
        0
    } else if value >= 10.0 {
        1
    } else {
        2
    };
    format!("{value:.digits$} {}", UNITS[unit])
}

fn cpu_list(cpus: &[CpuId]) -> String {
    CpuList::of(cpus).to_string()
}

/// Words joined by spaces, wrapped at [`WRAP_COLUMNS`] under `indent`.
fn wrapped(out: &mut String, label: &str, indent: &str, words: &[String]) {
    let mut line = format!("{indent}{label}");
    for word in words {
        if line.len() + word.len() + 1 > WRAP_COLUMNS && line.len() > indent.len() + label.len() {
            out.push_str(line.trim_end());
            out.push('\n');
            line = format!("{indent}{}", " ".repeat(label.len()));
        }
        line.push_str(word);
        line.push(' ');
    }
    out.push_str(line.trim_end());
    out.push('\n');
}

/// The whole tree as text.
pub fn tree(t: &Topology) -> String {
    let mut out = String::new();
    let online = t.cpus.iter().filter(|c| c.online).count();
    let namespaces: usize = t.subsystems.iter().map(|s| s.namespaces.len()).sum();
    let _ = writeln!(
        out,
        "machine: {} NUMA node(s), {} CPUs ({online} online), {} NVMe controller(s), {namespaces} namespace(s)",
        t.nodes.len(),
        t.cpus.len(),
        t.controllers.len()
    );
    for node in &t.nodes {
        node_section(&mut out, t, node);
    }
    outside_nodes(&mut out, t);
    let homeless: Vec<&Controller> = t
        .controllers
        .iter()
        .filter(|c| c.numa_node.node().is_none_or(|n| t.node(n).is_none()))
        .collect();
    if !homeless.is_empty() {
        let _ = writeln!(
            out,
            "no node (numa_node = -1 or a node that is not online):"
        );
        for c in homeless {
            controller_lines(&mut out, t, c);
        }
    }
    if t.controllers.is_empty() {
        let _ = writeln!(out, "no NVMe controllers found");
    }
    trailer(&mut out, t);
    out
}

/// Online CPUs that no listed node holds: their own node is not online,
/// or the node lists leave them out (`numio doctor` explains).
fn outside_nodes(out: &mut String, t: &Topology) {
    let listed = |c: CpuId| t.nodes.iter().any(|n| n.cpus.contains(&c));
    let outside: Vec<&crate::model::Cpu> = t
        .cpus
        .iter()
        .filter(|c| c.online && !listed(c.id))
        .collect();
    if outside.is_empty() {
        return;
    }
    let ids: Vec<CpuId> = outside.iter().map(|c| c.id).collect();
    let mut nodes: Vec<String> = outside
        .iter()
        .map(|c| c.node.map_or("none".to_string(), |n| n.to_string()))
        .collect();
    nodes.sort();
    nodes.dedup();
    let _ = writeln!(
        out,
        "cpus in no node's list: {} (their own node: {})",
        cpu_list(&ids),
        nodes.join(", ")
    );
}

fn node_section(out: &mut String, t: &Topology, node: &Node) {
    let distances: Vec<String> = node.distances.iter().map(u32::to_string).collect();
    let _ = writeln!(
        out,
        "node {}: {} CPUs, {} memory, distances [{}]",
        node.id,
        node.cpus.len(),
        gib(node.memory_bytes),
        distances.join(" ")
    );
    if node.cpus.is_empty() {
        let _ = writeln!(out, "  cpus: none");
    } else {
        let _ = writeln!(out, "  cpus: {}", cpu_list(&node.cpus));
    }
    let groups: Vec<String> = t
        .cpus
        .iter()
        .filter(|c| {
            c.online && c.node == Some(node.id) && c.siblings.len() > 1 && c.siblings[0] == c.id
        })
        .map(|c| {
            c.siblings
                .iter()
                .map(CpuId::to_string)
                .collect::<Vec<_>>()
                .join("+")
        })
        .collect();
    if !groups.is_empty() {
        wrapped(out, "smt siblings: ", "  ", &groups);
    } else if !node.cpus.is_empty() {
        let _ = writeln!(out, "  smt siblings: none (one thread per core)");
    }
    let offline: Vec<CpuId> = t
        .cpus
        .iter()
        .filter(|c| !c.online && c.node == Some(node.id))
        .map(|c| c.id)
        .collect();
    if !offline.is_empty() {
        let _ = writeln!(out, "  offline cpus: {}", cpu_list(&offline));
    }
    for c in t
        .controllers
        .iter()
        .filter(|c| c.numa_node == DeviceNode::Known(node.id))
    {
        controller_lines(out, t, c);
    }
}

fn controller_lines(out: &mut String, t: &Topology, c: &Controller) {
    let transport = c.transport.name();
    // Kernels before 4.5 report no model, firmware or state.
    let mut about = String::new();
    if !c.model.is_empty() {
        let _ = write!(about, " \"{}\"", c.model);
    }
    if !c.firmware.is_empty() {
        let _ = write!(about, " fw {}", c.firmware);
    }
    if !c.state.is_empty() {
        let _ = write!(about, " {}", c.state);
    }
    let _ = writeln!(
        out,
        "  {} [node {}] {transport} {}{about}, {} I/O queues, {}",
        c.name,
        c.numa_node,
        c.address,
        c.queue_count,
        c.subsystem.as_deref().unwrap_or("no subsystem")
    );
    for sub in &t.subsystems {
        for ns in &sub.namespaces {
            let path = ns.paths.iter().find(|p| p.controller == c.name);
            if ns.controller.as_deref() != Some(c.name.as_str()) && path.is_none() {
                continue;
            }
            // A multipath head is bio-based; requests meet the scheduler of the path.
            let scheduler = path
                .and_then(|p| p.scheduler.as_deref())
                .or(ns.queue.scheduler.as_deref())
                .unwrap_or("?");
            let mut line = format!(
                "    {} {} {} B blocks, scheduler {scheduler}",
                ns.block_device,
                decimal_size(ns.size_bytes),
                ns.logical_block_size,
            );
            if let Some(g) = &ns.generic_device {
                let _ = write!(line, ", generic {g}");
            }
            if let Some(p) = path {
                let _ = write!(line, ", path {}", p.device);
                if let Some(ana) = &p.ana_state {
                    let _ = write!(line, " ana {ana}");
                }
                if ns.paths.len() > 1 {
                    let others: Vec<&str> = ns
                        .paths
                        .iter()
                        .filter(|o| o.controller != c.name)
                        .map(|o| o.controller.as_str())
                        .collect();
                    let _ = write!(line, " (shared with {})", others.join(", "));
                }
            }
            let _ = writeln!(out, "{line}");
        }
    }
}

fn trailer(out: &mut String, t: &Topology) {
    for sub in &t.subsystems {
        let ctrls: Vec<String> = sub
            .controllers
            .iter()
            .map(|name| match t.controller(name) {
                Some(c) => format!("{name} (node {})", c.numa_node),
                None => name.clone(),
            })
            .collect();
        if sub.stand_in {
            let nqn = if sub.nqn.is_empty() {
                "not reported"
            } else {
                &sub.nqn
            };
            let _ = writeln!(
                out,
                "controller {} without a subsystem (a kernel before 4.15 has none): nqn {nqn}",
                ctrls.join(", ")
            );
            continue;
        }
        let _ = writeln!(
            out,
            "subsystem {}: iopolicy {}, controllers {}, nqn {}",
            sub.name,
            sub.iopolicy.as_deref().unwrap_or("-"),
            ctrls.join(", "),
            sub.nqn
        );
    }
    let p = &t.nvme_params;
    if p.poll_queues.is_some() || p.iopolicy.is_some() || p.multipath.is_some() {
        let show = |v: Option<String>| v.unwrap_or_else(|| "?".to_string());
        let _ = writeln!(
            out,
            "driver: nvme.poll_queues {}, nvme_core.multipath {}, nvme_core.iopolicy {}",
            show(p.poll_queues.map(|v| v.to_string())),
            show(p.multipath.map(|v| if v { "Y" } else { "N" }.to_string())),
            show(p.iopolicy.clone())
        );
    }
    if !t.notes.is_empty() {
        let _ = writeln!(
            out,
            "discovery notes: {} (`numio doctor` reports each)",
            t.notes.len()
        );
        for n in &t.notes {
            let _ = writeln!(out, "  {}: {}", n.code, n.message);
        }
    }
    if !t.unreadable.is_empty() {
        let _ = writeln!(out, "unreadable files: {}", t.unreadable.len());
        for u in &t.unreadable {
            let _ = writeln!(out, "  /{}: {}", u.path, u.reason);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_print_like_labels() {
        assert_eq!(decimal_size(1_920_383_410_176), "1.92 TB");
        assert_eq!(decimal_size(800_166_076_416), "800 GB");
        assert_eq!(decimal_size(512), "512 B");
        assert_eq!(gib(5_194_866_688), "4.8 GiB");
    }
}
