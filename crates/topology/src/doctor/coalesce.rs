//! `irq-coalescing-off`: several NVMe drives on one node raise an interrupt
//! per completion while their queue IRQs land on few CPUs.
//!
//! The coalescing value lives in each controller (Get Features 0x08), not
//! in sysfs, so discovery never sees it and a snapshot never holds it: the
//! caller reads it (`numio doctor` on a live root, as root, through the
//! `tune` crate) and hands it in as [`LiveFacts`]. Without the value the
//! check says nothing: an unread controller is never taken for an
//! uncoalesced one. The IRQ side comes from the model (`/proc/interrupts`
//! and each IRQ's effective affinity).

use std::collections::{BTreeMap, BTreeSet};

use super::checks::{evidence, finding, ids};
use super::{Finding, LiveFacts, Severity};
use crate::model::{Controller, CpuId, NodeId, Topology, Transport};
use crate::parse::nvme_numbers;

/// Fewest uncoalesced drives on a node that make a finding ("several").
const MIN_DRIVES: usize = 2;

/// Whether a Feature 0x08 value coalesces nothing: THR 0 (an interrupt per
/// completion) or TIME 0 ("no delay").
fn uncoalesced(raw: u32) -> bool {
    raw & 0xFF == 0 || (raw >> 8) & 0xFF == 0
}

/// CPUs each I/O queue IRQ (queue ≥ 1) of `c` lands on, and how many.
fn io_irq_cpus(c: &Controller) -> (BTreeSet<CpuId>, usize) {
    let mut cpus = BTreeSet::new();
    let mut count = 0;
    for irq in &c.irqs {
        if nvme_numbers(&irq.name, "nvme", "q").is_some_and(|n| n[1] > 0) {
            count += 1;
            cpus.extend(irq.effective_affinity.iter().copied());
        }
    }
    (cpus, count)
}

/// The block devices of the namespaces `name` reaches.
fn namespaces_of(t: &Topology, name: &str) -> Vec<String> {
    t.subsystems
        .iter()
        .flat_map(|s| &s.namespaces)
        .filter(|ns| {
            ns.controller.as_deref() == Some(name) || ns.paths.iter().any(|p| p.controller == name)
        })
        .map(|ns| format!("/dev/{}", ns.block_device))
        .collect()
}

/// `1,2,4,…,n`: powers of two below `n`, then `n`.
fn device_counts(n: usize) -> String {
    let mut counts = Vec::new();
    let mut k = 1;
    while k < n {
        counts.push(k.to_string());
        k *= 2;
    }
    counts.push(n.to_string());
    counts.join(",")
}

/// The check; see the module doc.
pub fn irq_coalescing_off(t: &Topology, live: &LiveFacts, out: &mut Vec<Finding>) {
    let mut by_node: BTreeMap<NodeId, Vec<&Controller>> = BTreeMap::new();
    for c in &t.controllers {
        let off = live
            .coalescing_raw
            .get(&c.name)
            .is_some_and(|&raw| uncoalesced(raw));
        if let (true, Transport::Pcie, Some(node)) = (off, c.transport, c.numa_node.node()) {
            by_node.entry(node).or_default().push(c);
        }
    }
    for (node, drives) in by_node {
        let irqs: Vec<(BTreeSet<CpuId>, usize)> = drives.iter().map(|c| io_irq_cpus(c)).collect();
        let cpus: BTreeSet<CpuId> = irqs
            .iter()
            .flat_map(|(cpus, _)| cpus.iter().copied())
            .collect();
        let irq_count: usize = irqs.iter().map(|(_, n)| n).sum();
        // "Few CPUs": on average every CPU takes the IRQs of two queues or
        // more (managed affinity gives each drive a queue per CPU, so this
        // is every CPU serving several drives).
        if drives.len() < MIN_DRIVES || cpus.is_empty() || irq_count < 2 * cpus.len() {
            continue;
        }
        let busiest = cpus
            .iter()
            .map(|cpu| irqs.iter().filter(|(on, _)| on.contains(cpu)).count())
            .max()
            .unwrap_or(0);
        out.push(build(t, live, node, &drives, &cpus, irq_count, busiest));
    }
}

fn build(
    t: &Topology,
    live: &LiveFacts,
    node: NodeId,
    drives: &[&Controller],
    cpus: &BTreeSet<CpuId>,
    irq_count: usize,
    busiest: usize,
) -> Finding {
    let names: Vec<&str> = drives.iter().map(|c| c.name.as_str()).collect();
    let cpu_list: Vec<CpuId> = cpus.iter().copied().collect();
    let mut ev: Vec<_> = drives
        .iter()
        .map(|c| {
            let raw = live.coalescing_raw[&c.name];
            evidence(
                format!("Get Features 0x08 on /dev/{}", c.name),
                format!(
                    "{raw:#06x} (THR {}, TIME {})",
                    raw & 0xFF,
                    (raw >> 8) & 0xFF
                ),
            )
        })
        .collect();
    ev.push(evidence(
        "/proc/interrupts and /proc/irq/*/effective_affinity_list",
        format!(
            "{irq_count} I/O queue IRQs of {} drives on {} CPUs ({}); the busiest CPU takes IRQs of {busiest} drives",
            drives.len(),
            cpus.len(),
            ids(&cpu_list)
        ),
    ));
    let message = format!(
        "{} NVMe drives on node {node} ({}) raise an interrupt per completion (no interrupt coalescing), and their {irq_count} I/O queue IRQs land on {} CPUs: with several drives busy at once those CPUs can drown in interrupts and context switches",
        drives.len(),
        names.join(", "),
        cpus.len()
    );
    let namespaces: Vec<String> = drives
        .iter()
        .flat_map(|c| namespaces_of(t, &c.name))
        .collect();
    let targets = if namespaces.is_empty() {
        names
            .iter()
            .map(|n| format!("/dev/{n}"))
            .collect::<Vec<_>>()
            .join(" ")
    } else {
        namespaces.join(" ")
    };
    let fix = format!(
        "measure whether coalescing helps under your load: `numio coalesce sweep {targets} --devices {} --threshold 0,3,9` (every value is put back afterwards), then apply the threshold it recommends (`--apply`, or `numio coalesce set`)",
        device_counts(drives.len())
    );
    finding(
        Severity::Info,
        "irq-coalescing-off",
        &format!("node {node}"),
        message,
        ev,
        fix,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(name: &str) -> Topology {
        let root = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/fixtures/sysfs")
            .join(name);
        Topology::discover(&root).expect("fixture")
    }

    fn live(values: &[(&str, u32)]) -> LiveFacts {
        LiveFacts {
            coalescing_raw: values.iter().map(|(n, v)| (n.to_string(), *v)).collect(),
            ..LiveFacts::default()
        }
    }

    fn run(t: &Topology, l: &LiveFacts) -> Vec<Finding> {
        let mut out = Vec::new();
        irq_coalescing_off(t, l, &mut out);
        out
    }

    #[test]
    fn several_uncoalesced_drives_sharing_cpus_are_a_finding() {
        // Node 1 of the two-socket guest: nvme0, nvme1, nvme2, each with 4
        // interrupt-driven I/O queues (2 more are poll queues) spread over
        // all 4 CPUs.
        let t = fixture("vm-two-socket");
        let f = run(
            &t,
            &live(&[
                ("nvme0", 0),
                ("nvme1", 0x0109),
                ("nvme2", 0x0009),
                ("nvme3", 0),
            ]),
        );
        assert_eq!(f.len(), 1, "{f:#?}");
        let f = &f[0];
        assert_eq!(
            (f.severity, f.code.as_str(), f.subject.as_str()),
            (Severity::Info, "irq-coalescing-off", "node 1")
        );
        assert!(
            f.message
                .starts_with("2 NVMe drives on node 1 (nvme0, nvme2)"),
            "{}",
            f.message
        );
        assert_eq!(f.evidence[0].path, "Get Features 0x08 on /dev/nvme0");
        assert_eq!(
            f.evidence[1].value, "0x0009 (THR 9, TIME 0)",
            "TIME 0 coalesces nothing"
        );
        assert!(
            f.evidence[2]
                .value
                .starts_with("8 I/O queue IRQs of 2 drives on 4 CPUs (0-3)"),
            "{}",
            f.evidence[2].value
        );
        assert!(
            f.fix.contains("numio coalesce sweep /dev/nvme0n1 /dev/nvme2n1 /dev/nvme2n2 --devices 1,2 --threshold 0,3,9"),
            "{}",
            f.fix
        );
    }

    #[test]
    fn no_finding_without_live_values_for_one_drive_or_for_coalesced_drives() {
        let t = fixture("vm-two-socket");
        assert!(
            run(&t, &LiveFacts::default()).is_empty(),
            "a snapshot holds no values"
        );
        assert!(run(&t, &live(&[("nvme0", 0)])).is_empty(), "one drive");
        assert!(run(
            &t,
            &live(&[("nvme0", 0x0109), ("nvme1", 0x0109), ("nvme2", 0x0305)])
        )
        .is_empty());
    }

    #[test]
    fn fabrics_controllers_do_not_count() {
        let t = fixture("2node-multipath-tcp");
        assert!(run(&t, &live(&[("nvme2", 0), ("nvme0", 0)])).is_empty());
    }

    #[test]
    fn device_count_axis() {
        assert_eq!(device_counts(2), "1,2");
        assert_eq!(device_counts(3), "1,2,3");
        assert_eq!(device_counts(4), "1,2,4");
        assert_eq!(device_counts(6), "1,2,4,6");
    }
}
