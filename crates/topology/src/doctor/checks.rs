//! The checks of `doctor`, one function each.

use std::collections::{BTreeMap, BTreeSet};

use super::{Evidence, Finding, Severity};
use crate::cpulist::CpuList;
use crate::model::{Controller, CpuId, DeviceNode, HwQueue, NodeId, QueueIrq, Topology, Transport};
use crate::parse::nvme_numbers;

pub(super) fn evidence(path: impl Into<String>, value: impl Into<String>) -> Evidence {
    Evidence {
        path: path.into(),
        value: value.into(),
    }
}

pub(super) fn finding(
    severity: Severity,
    code: &str,
    subject: &str,
    message: String,
    evidence: Vec<Evidence>,
    fix: String,
) -> Finding {
    Finding {
        severity,
        code: code.to_string(),
        subject: subject.to_string(),
        message,
        evidence,
        fix,
    }
}

pub(super) fn ids(cpus: &[CpuId]) -> String {
    CpuList::of(cpus).to_string()
}

/// A CPU list for a message: `none` when empty, never a blank.
pub(super) fn ids_or_none(cpus: &[CpuId]) -> String {
    if cpus.is_empty() {
        "none".to_string()
    } else {
        ids(cpus)
    }
}

/// Whether discovery read `kind` (`cpulist`, `local_cpulist`) from its hex
/// mask because the kernel wrote no list (a `cpu-lists-missing` note).
fn read_as_mask(t: &Topology, kind: &str) -> bool {
    // The note's value lists the missing kinds: `missing (cpulist, ...)`.
    t.notes.iter().any(|n| {
        n.code == "cpu-lists-missing"
            && n.value
                .trim_start_matches("missing (")
                .trim_end_matches(')')
                .split(", ")
                .any(|k| k == kind)
    })
}

/// The file a node's CPUs were read from (`nodeN/cpulist`, or `cpumap` on
/// kernels that write only masks), with the CPUs.
pub(super) fn node_cpus_evidence(t: &Topology, node: &crate::model::Node) -> Evidence {
    let file = if read_as_mask(t, "cpulist") {
        "cpumap"
    } else {
        "cpulist"
    };
    evidence(
        format!("/sys/devices/system/node/node{}/{file}", node.id),
        ids_or_none(&node.cpus),
    )
}

/// The `numa_node` file discovery read for `c` (its own attribute, or its
/// PCI device's), with the value seen.
fn node_numa_evidence(c: &Controller) -> Evidence {
    let (path, value) = match (c.numa_node_file.as_str(), c.numa_node) {
        ("", DeviceNode::Unknown) => (
            format!("/sys/class/nvme/{}/numa_node", c.name),
            "missing (and no device/numa_node)".to_string(),
        ),
        ("", DeviceNode::Known(n)) => (
            format!("/sys/class/nvme/{}/numa_node", c.name),
            n.0.to_string(),
        ),
        (file, DeviceNode::Known(n)) => (format!("/{file}"), n.0.to_string()),
        (file, DeviceNode::Unknown) => (format!("/{file}"), "-1".to_string()),
    };
    evidence(path, value)
}

/// Namespaces reached through controller `name`, and whether any of them
/// has more than one path.
fn exposed(t: &Topology, name: &str) -> (Vec<String>, bool) {
    let mut devices = Vec::new();
    let mut multipath = false;
    for ns in t.subsystems.iter().flat_map(|s| &s.namespaces) {
        if ns.controller.as_deref() == Some(name) || ns.paths.iter().any(|p| p.controller == name) {
            devices.push(ns.block_device.clone());
            multipath |= ns.paths.len() > 1;
        }
    }
    (devices, multipath)
}

/// `numa_node = -1` on a multi-node machine.
pub fn controller_node_unknown(t: &Topology, out: &mut Vec<Finding>) {
    if t.nodes.len() < 2 {
        return;
    }
    for c in t
        .controllers
        .iter()
        .filter(|c| c.numa_node == DeviceNode::Unknown)
    {
        let (devices, multipath) = exposed(t, &c.name);
        let shown = if devices.is_empty() {
            "no namespace".to_string()
        } else {
            devices.join(", ")
        };
        let mut ev = vec![node_numa_evidence(c)];
        let (severity, message, fix) = if c.transport == Transport::Pcie {
            let file = if read_as_mask(t, "local_cpulist") {
                "local_cpus"
            } else {
                "local_cpulist"
            };
            ev.push(evidence(
                format!("/sys/class/nvme/{}/device/{file}", c.name),
                ids_or_none(&c.local_cpus),
            ));
            (
                Severity::Error,
                format!(
                    "{} ({}) reports numa_node -1 on a {}-node machine: the kernel does not know its node, so the numa iopolicy treats it as local to every node and may route I/O through a remote controller, and NUMA placement of {shown} is guesswork",
                    c.name, c.address, t.nodes.len()
                ),
                "enable NUMA/SRAT proximity reporting in the BIOS (NUMA, sub-NUMA clustering or \"ACPI SRAT\" settings) and update the platform firmware so the slot's root port has a proximity domain; until then find the slot's socket in the board manual and pin its jobs there (`numactl --cpunodebind=N --membind=N`)",
            )
        } else if multipath {
            (
                Severity::Error,
                format!(
                    "fabric controller {} has numa_node -1 and is one path of multipath namespace(s) {shown}: the numa iopolicy treats it as local to every node and may prefer it over a truly local path",
                    c.name
                ),
                "use iopolicy round-robin or queue-depth for this subsystem (`echo round-robin > /sys/class/nvme-subsystem/<subsys>/iopolicy`), or connect through a NIC whose node is known",
            )
        } else {
            (
                Severity::Info,
                format!(
                    "fabric controller {} ({}) has no NUMA node (normal for {}); the node that matters is the NIC's; it exposes {shown}",
                    c.name,
                    c.address,
                    c.transport.name()
                ),
                "place its jobs on the node of the network interface (`cat /sys/class/net/<if>/device/numa_node`), e.g. `numactl --cpunodebind=N --membind=N`",
            )
        };
        out.push(finding(
            severity,
            "controller-node-unknown",
            &c.name,
            message,
            ev,
            fix.to_string(),
        ));
    }
}

/// A subsystem with controllers on several nodes whose iopolicy is not numa.
pub fn iopolicy_not_numa(t: &Topology, out: &mut Vec<Finding>) {
    for s in &t.subsystems {
        let Some(policy) = s.iopolicy.as_deref() else {
            continue;
        };
        let ctrls: Vec<&Controller> = s
            .controllers
            .iter()
            .filter_map(|n| t.controller(n))
            .collect();
        let nodes: BTreeSet<NodeId> = ctrls.iter().filter_map(|c| c.numa_node.node()).collect();
        if policy == "numa" || nodes.len() < 2 {
            continue;
        }
        let mut ev = vec![evidence(
            format!("/sys/class/nvme-subsystem/{}/iopolicy", s.name),
            policy,
        )];
        ev.extend(ctrls.iter().map(|c| node_numa_evidence(c)));
        let nodes: Vec<String> = nodes.iter().map(|n| n.to_string()).collect();
        let message = format!(
            "multipath subsystem {} has controllers on nodes {} but iopolicy {policy}: I/O from every node is spread over remote controllers too",
            s.name,
            nodes.join(" and ")
        );
        let fix = format!(
            "echo numa > /sys/class/nvme-subsystem/{}/iopolicy (persist with nvme_core.iopolicy=numa on the kernel command line or a udev rule)",
            s.name
        );
        out.push(finding(
            Severity::Warning,
            "iopolicy-not-numa",
            &s.name,
            message,
            ev,
            fix,
        ));
    }
}

/// The hardware queues of controller `name` (from any of its devices).
fn hw_queues_of<'a>(t: &'a Topology, name: &str) -> &'a [HwQueue] {
    for ns in t.subsystems.iter().flat_map(|s| &s.namespaces) {
        if ns.controller.as_deref() == Some(name) && !ns.queue.hw_queues.is_empty() {
            return &ns.queue.hw_queues;
        }
        if let Some(p) = ns
            .paths
            .iter()
            .find(|p| p.controller == name && !p.hw_queues.is_empty())
        {
            return &p.hw_queues;
        }
    }
    &[]
}

/// Queue IRQs that fire on another node than the controller and than the
/// CPUs whose I/O they complete. Managed per-CPU spreading (queue k's IRQ on
/// the node of the CPUs mapped to queue k) is how blk-mq works and is not a
/// finding: the I/O crosses the interconnect there, not the interrupt.
pub fn irq_remote_node(t: &Topology, out: &mut Vec<Finding>) {
    if t.nodes.len() < 2 {
        return;
    }
    let node_of: BTreeMap<CpuId, NodeId> = t
        .cpus
        .iter()
        .filter_map(|c| c.node.map(|n| (c.id, n)))
        .collect();
    let nodes_of = |cpus: &[CpuId]| -> BTreeSet<NodeId> {
        cpus.iter()
            .filter_map(|c| node_of.get(c).copied())
            .collect()
    };
    for c in &t.controllers {
        let Some(home) = c.numa_node.node() else {
            continue;
        };
        let bad = remote_irqs(c, home, hw_queues_of(t, &c.name), &nodes_of);
        if bad.is_empty() {
            continue;
        }
        let io_irqs = c.irqs.iter().filter(|i| !i.name.ends_with("q0")).count();
        let fired: BTreeSet<NodeId> = bad
            .iter()
            .flat_map(|i| nodes_of(&i.effective_affinity))
            .collect();
        let fired: Vec<String> = fired.iter().map(|n| n.to_string()).collect();
        let mut ev = vec![node_numa_evidence(c)];
        ev.extend(bad.iter().take(4).map(|i| {
            evidence(
                format!("/proc/irq/{}/effective_affinity_list", i.irq),
                format!("{} ({})", ids(&i.effective_affinity), i.name),
            )
        }));
        let message = format!(
            "{} of {io_irqs} queue IRQs of {} (node {home}) fire on node {}, away from the controller and from the CPUs they complete I/O for{}",
            bad.len(),
            c.name,
            fired.join(","),
            if bad.len() > 4 { format!(" (first 4 shown of {})", bad.len()) } else { String::new() }
        );
        let fix = format!(
            "stop irqbalance from moving NVMe IRQs (IRQBALANCE_BANNED_CPULIST or `systemctl disable --now irqbalance`) and restore each queue's affinity (`echo <cpus of the queue> > /proc/irq/N/smp_affinity_list`), or reload the nvme driver so managed affinity is recomputed; online CPUs of node {home}: {}",
            ids_or_none(&t.online_cpus_of(home))
        );
        out.push(finding(
            Severity::Warning,
            "irq-remote-node",
            &c.name,
            message,
            ev,
            fix,
        ));
    }
}

/// The I/O queue IRQs of `c` that fire away from `home` and from the CPUs
/// their queue serves (queue N ↔ IRQ `nvmeXq(N+1)`). Remote IRQs whose
/// queue's CPUs are unknown (no hardware queue map was read) count only if
/// no I/O IRQ at all fires at home.
fn remote_irqs<'a>(
    c: &'a Controller,
    home: NodeId,
    queues: &[HwQueue],
    nodes_of: &dyn Fn(&[CpuId]) -> BTreeSet<NodeId>,
) -> Vec<&'a QueueIrq> {
    let (mut bad, mut unknown, mut home_irqs) = (Vec::new(), Vec::new(), 0);
    for irq in &c.irqs {
        let Some(q) = nvme_numbers(&irq.name, "nvme", "q").map(|n| n[1]) else {
            continue;
        };
        let fired = nodes_of(&irq.effective_affinity);
        if q == 0 || fired.is_empty() {
            continue;
        }
        if fired.contains(&home) {
            home_irqs += 1;
            continue;
        }
        match queues
            .iter()
            .find(|h| h.index + 1 == q)
            .map(|h| nodes_of(&h.cpus))
        {
            Some(served) if !served.is_empty() && served.is_subset(&fired) => {}
            Some(_) => bad.push(irq),
            None => unknown.push(irq),
        }
    }
    if home_irqs == 0 {
        bad.append(&mut unknown);
        bad.sort_by_key(|i| i.irq);
    }
    bad
}

/// NVMe devices with an I/O scheduler other than `none`.
pub fn scheduler_not_none(t: &Topology, out: &mut Vec<Finding>) {
    for ns in t.subsystems.iter().flat_map(|s| &s.namespaces) {
        let mut devices: Vec<(String, &str)> = Vec::new();
        if ns.paths.is_empty() {
            if let Some(s) = ns.queue.scheduler.as_deref() {
                devices.push((format!("/sys/block/{}/queue/scheduler", ns.block_device), s));
            }
        }
        for p in &ns.paths {
            if let Some(s) = p.scheduler.as_deref() {
                devices.push((
                    format!(
                        "/sys/class/nvme/{}/{}/queue/scheduler",
                        p.controller, p.device
                    ),
                    s,
                ));
            }
        }
        for (path, sched) in devices.into_iter().filter(|(_, s)| *s != "none") {
            let message = format!(
                "{} uses the {sched} I/O scheduler: on NVMe it adds per-request CPU cost and a lock, and caps IOPS",
                ns.block_device
            );
            let fix = format!(
                "echo none > {path} (persist with a udev rule: ACTION==\"add|change\", KERNEL==\"nvme*\", ATTR{{queue/scheduler}}=\"none\")"
            );
            out.push(finding(
                Severity::Warning,
                "scheduler-not-none",
                &ns.block_device,
                message,
                vec![evidence(path, sched)],
                fix,
            ));
        }
    }
}

/// `nvme.poll_queues = 0` on a machine with PCIe NVMe.
pub fn no_poll_queues(t: &Topology, out: &mut Vec<Finding>) {
    if t.nvme_params.poll_queues != Some(0)
        || !t.controllers.iter().any(|c| c.transport == Transport::Pcie)
    {
        return;
    }
    let ev = vec![evidence("/sys/module/nvme/parameters/poll_queues", "0")];
    let message = "the nvme driver has no poll queues, so polled I/O (io_uring IOPOLL, fio --hipri) is impossible".to_string();
    let fix = "boot with nvme.poll_queues=4 (or `options nvme poll_queues=4` in /etc/modprobe.d/nvme.conf and reload the driver)".to_string();
    out.push(finding(
        Severity::Info,
        "no-poll-queues",
        "nvme",
        message,
        ev,
        fix,
    ));
}

/// Nodes that hold NVMe controllers but have no online CPU or no memory.
pub fn nodes_without_cpus_or_memory(t: &Topology, out: &mut Vec<Finding>) {
    for node in &t.nodes {
        let ctrls: Vec<&Controller> = t
            .controllers
            .iter()
            .filter(|c| c.numa_node == DeviceNode::Known(node.id))
            .collect();
        if ctrls.is_empty() {
            continue;
        }
        let names: Vec<&str> = ctrls.iter().map(|c| c.name.as_str()).collect();
        let subject = format!("node {}", node.id);
        let nearest = nearest_with_cpus(t, node.id);
        let cpus_fix = match &nearest {
            Some(n) => format!("nothing to fix in software: run their jobs on the nearest node with CPUs ({n}), e.g. `numactl --cpunodebind={n}`, or move the drives to a slot of a node with CPUs"),
            None => "no node lists an online CPU, so no job can be placed near them: check `numio doctor` for node lists that do not match the CPUs, and the kernel's NUMA setup (numa=off on the command line, the firmware's SRAT)".to_string(),
        };
        let mem_fix = match &nearest {
            Some(n) => format!("allocate their buffers on the nearest node ({n}), e.g. `numactl --membind={n}`, or populate the node's DIMM slots"),
            None => "populate the node's DIMM slots; no other node with CPUs is known to allocate on".to_string(),
        };
        if t.online_cpus_of(node.id).is_empty() {
            let ev = vec![node_cpus_evidence(t, node), node_numa_evidence(ctrls[0])];
            let message = format!("node {} holds {} but has no online CPUs: every I/O to them is submitted and completed from another node", node.id, names.join(", "));
            let fix = cpus_fix;
            out.push(finding(
                Severity::Warning,
                "node-without-cpus",
                &subject,
                message,
                ev,
                fix,
            ));
        }
        if node.memory_bytes == 0 {
            let ev = vec![evidence(
                format!("/sys/devices/system/node/node{}/meminfo", node.id),
                "MemTotal: 0 kB",
            )];
            let message = format!(
                "node {} holds {} but has no memory: their I/O buffers always live on another node",
                node.id,
                names.join(", ")
            );
            let fix = mem_fix;
            out.push(finding(
                Severity::Warning,
                "node-without-memory",
                &subject,
                message,
                ev,
                fix,
            ));
        }
    }
}

/// The node with online CPUs at the smallest distance from `from` (by id
/// where the distance table has no entry); `None` when no other node has any.
fn nearest_with_cpus(t: &Topology, from: NodeId) -> Option<String> {
    let row = t.node(from).map(|n| n.distances.as_slice()).unwrap_or(&[]);
    t.nodes
        .iter()
        .enumerate()
        .filter(|(_, n)| n.id != from && !t.online_cpus_of(n.id).is_empty())
        .min_by_key(|(i, n)| (row.get(*i).copied().unwrap_or(u32::MAX), n.id))
        .map(|(_, n)| n.id.to_string())
}

/// Offline CPUs.
pub fn cpus_offline(t: &Topology, out: &mut Vec<Finding>) {
    let offline: Vec<CpuId> = t.cpus.iter().filter(|c| !c.online).map(|c| c.id).collect();
    if offline.is_empty() {
        return;
    }
    let online: Vec<CpuId> = t.cpus.iter().filter(|c| c.online).map(|c| c.id).collect();
    // Cite the file read: `cpu/online`, or each CPU's `online` where the
    // kernel wrote no list.
    let derived = t.notes.iter().any(|n| n.code == "cpu-online-missing");
    let ev = if derived {
        offline
            .iter()
            .take(4)
            .map(|c| evidence(format!("/sys/devices/system/cpu/cpu{c}/online"), "0"))
            .collect()
    } else {
        vec![evidence("/sys/devices/system/cpu/online", ids(&online))]
    };
    let message = format!(
        "CPU(s) {} offline: their queues are folded onto other CPUs and per-node capacity is lower than the hardware's",
        ids(&offline)
    );
    let fix = format!("echo 1 > /sys/devices/system/cpu/cpu{}/online (for each offline CPU), or remove maxcpus=/nosmt from the kernel command line", offline[0]);
    out.push(finding(
        Severity::Warning,
        "cpus-offline",
        "cpus",
        message,
        ev,
        fix,
    ));
}

/// Controllers whose state is not `live`.
pub fn controller_not_live(t: &Topology, out: &mut Vec<Finding>) {
    for c in t
        .controllers
        .iter()
        .filter(|c| !c.state.is_empty() && c.state != "live")
    {
        let ev = vec![evidence(
            format!("/sys/class/nvme/{}/state", c.name),
            c.state.clone(),
        )];
        let message = format!(
            "{} is {}, not live: its namespaces cannot serve I/O now",
            c.name, c.state
        );
        let fix = format!("check `dmesg | grep {}` for resets and timeouts; `nvme reset /dev/{}` or reconnect the fabric controller", c.name, c.name);
        out.push(finding(
            Severity::Warning,
            "controller-not-live",
            &c.name,
            message,
            ev,
            fix,
        ));
    }
}

/// Files discovery could not read.
pub fn unreadable_files(t: &Topology, out: &mut Vec<Finding>) {
    if t.unreadable.is_empty() {
        return;
    }
    let ev = t
        .unreadable
        .iter()
        .take(8)
        .map(|u| evidence(format!("/{}", u.path), u.reason.clone()))
        .collect();
    let message = format!(
        "{} file(s) could not be read, so some facts above may be missing",
        t.unreadable.len()
    );
    let denied = t.unreadable.iter().any(|u| {
        let reason = u.reason.to_ascii_lowercase();
        reason.contains("permission denied") || reason.contains("operation not permitted")
    });
    let fix = if denied {
        "run numio as root, or check that /sys and /proc are mounted in full (not masked by a container)"
    } else {
        "these files hold values numio does not understand (each reason is above); save a snapshot with `numio topo --save topo.tar.gz` and attach it to a numio issue"
    }
    .to_string();
    out.push(finding(
        Severity::Info,
        "unreadable-files",
        "discovery",
        message,
        ev,
        fix,
    ));
}
