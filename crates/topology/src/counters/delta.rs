//! What happened between two samples, as plain values.

use serde::{Deserialize, Serialize};

use super::{queue_controller, CpuTimes, Sample};
use crate::model::{CpuId, NodeId};

/// One IRQ line's interrupts between two samples.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IrqDelta {
    /// IRQ number.
    pub irq: u32,
    /// Its action's name (`nvme0q3`).
    pub name: String,
    /// Interrupts per CPU (CPUs online in both samples).
    pub per_cpu: Vec<(CpuId, u64)>,
}

impl IrqDelta {
    /// Interrupts on every CPU.
    pub fn total(&self) -> u64 {
        self.per_cpu.iter().map(|(_, n)| n).sum()
    }
}

/// One process's CPU time and context switches between two samples.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProcessDelta {
    /// Process id.
    pub pid: u32,
    /// User time in clock ticks.
    pub user_ticks: u64,
    /// System time in clock ticks.
    pub system_ticks: u64,
    /// Voluntary context switches.
    pub voluntary_switches: u64,
    /// Involuntary context switches.
    pub involuntary_switches: u64,
}

/// The CPU time of one NUMA node's CPUs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeTimes {
    /// The node.
    pub node: NodeId,
    /// Its CPUs that were online in both samples.
    pub cpus: Vec<CpuId>,
    /// Their CPU time together.
    pub times: CpuTimes,
}

/// The machine's counters between two samples.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Delta {
    /// Every CPU together (the `cpu` line).
    pub total: CpuTimes,
    /// Per CPU online in both samples.
    pub cpus: Vec<(CpuId, CpuTimes)>,
    /// Context switches of the machine.
    pub context_switches: u64,
    /// Interrupts of every kind on the machine.
    pub interrupts: u64,
    /// Every numbered IRQ line in both samples; `None` when either sample
    /// has no `/proc/interrupts`.
    pub irqs: Option<Vec<IrqDelta>>,
    /// The processes running at both samples.
    pub processes: Vec<ProcessDelta>,
}

/// A per-CPU IRQ count from `/proc/interrupts` went from `a` to `b`: the
/// kernel keeps it in 32 bits, so a smaller `b` below 2³² wrapped once.
fn irq_count_since(b: u64, a: u64) -> u64 {
    if b >= a {
        b - a
    } else if a <= u64::from(u32::MAX) {
        (b + (1u64 << 32)).saturating_sub(a)
    } else {
        0
    }
}

pub(super) fn between(a: &Sample, b: &Sample) -> Delta {
    let cpus = b
        .stat
        .cpus
        .iter()
        .filter_map(|(cpu, tb)| {
            let (_, ta) = a.stat.cpus.iter().find(|(c, _)| c == cpu)?;
            Some((*cpu, tb.since(ta)))
        })
        .collect();
    let irqs = match (&a.interrupts, &b.interrupts) {
        (Some(ia), Some(ib)) => Some(
            ib.lines
                .iter()
                .filter_map(|lb| {
                    let la = ia
                        .lines
                        .iter()
                        .find(|l| l.irq == lb.irq && l.name == lb.name)?;
                    let per_cpu = ib
                        .cpus
                        .iter()
                        .zip(&lb.counts)
                        .filter_map(|(cpu, &nb)| {
                            let col = ia.cpus.iter().position(|c| c == cpu)?;
                            Some((*cpu, irq_count_since(nb, *la.counts.get(col)?)))
                        })
                        .collect();
                    Some(IrqDelta {
                        irq: lb.irq,
                        name: lb.name.clone(),
                        per_cpu,
                    })
                })
                .collect(),
        ),
        _ => None,
    };
    let processes = b
        .processes
        .iter()
        .filter_map(|pb| {
            let pa = a.processes.iter().find(|p| p.pid == pb.pid)?;
            Some(ProcessDelta {
                pid: pb.pid,
                user_ticks: pb.user_ticks.saturating_sub(pa.user_ticks),
                system_ticks: pb.system_ticks.saturating_sub(pa.system_ticks),
                voluntary_switches: pb.voluntary_switches.saturating_sub(pa.voluntary_switches),
                involuntary_switches: pb
                    .involuntary_switches
                    .saturating_sub(pa.involuntary_switches),
            })
        })
        .collect();
    Delta {
        total: b.stat.total.since(&a.stat.total),
        cpus,
        context_switches: b
            .stat
            .context_switches
            .saturating_sub(a.stat.context_switches),
        interrupts: b.stat.interrupts.saturating_sub(a.stat.interrupts),
        irqs,
        processes,
    }
}

impl Delta {
    /// The queue interrupts of `controllers` (each once), per CPU that took
    /// any, ascending by CPU; `None` when `/proc/interrupts` was not read.
    /// A controller without IRQ lines (NVMe/TCP, or polled queues only)
    /// adds nothing: its I/O raised no interrupt.
    pub fn controller_interrupts(&self, controllers: &[String]) -> Option<Vec<(CpuId, u64)>> {
        let irqs: Vec<u32> = self
            .irqs
            .as_ref()?
            .iter()
            .filter(|l| queue_controller(&l.name).is_some_and(|c| controllers.contains(&c)))
            .map(|l| l.irq)
            .collect();
        self.irq_interrupts(&irqs)
    }

    /// The interrupts of the IRQ lines `irqs` (from [`super::controller_irqs`]),
    /// per CPU that took any, ascending by CPU; `None` when
    /// `/proc/interrupts` was not read.
    pub fn irq_interrupts(&self, irqs: &[u32]) -> Option<Vec<(CpuId, u64)>> {
        let lines = self.irqs.as_ref()?;
        let mut per_cpu: Vec<(CpuId, u64)> = Vec::new();
        for line in lines.iter().filter(|l| irqs.contains(&l.irq)) {
            for &(cpu, n) in &line.per_cpu {
                match per_cpu.iter_mut().find(|(c, _)| *c == cpu) {
                    Some((_, sum)) => *sum += n,
                    None => per_cpu.push((cpu, n)),
                }
            }
        }
        per_cpu.retain(|(_, n)| *n > 0);
        per_cpu.sort();
        Some(per_cpu)
    }

    /// The CPU time of each node of `nodes` (from [`super::node_cpus`]),
    /// over its CPUs online in both samples.
    pub fn nodes(&self, nodes: &[(NodeId, Vec<CpuId>)]) -> Vec<NodeTimes> {
        nodes
            .iter()
            .map(|(node, cpus)| {
                let mut times = CpuTimes::default();
                let mut online = Vec::new();
                for (cpu, t) in self.cpus.iter().filter(|(c, _)| cpus.contains(c)) {
                    times.add(t);
                    online.push(*cpu);
                }
                NodeTimes {
                    node: *node,
                    cpus: online,
                    times,
                }
            })
            .collect()
    }
}
