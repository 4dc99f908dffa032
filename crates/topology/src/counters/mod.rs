//! Counters of the running machine, sampled twice around a measured
//! interval and subtracted: CPU time per CPU and in total (`/proc/stat`:
//! user, nice, system, idle, iowait, irq, softirq, steal), context
//! switches and interrupts of the machine, each IRQ line's count per CPU
//! (`/proc/interrupts`, so an NVMe controller's queue interrupts can be
//! told apart), and the CPU time and context switches of chosen processes
//! (`/proc/PID/stat`, `/proc/PID/task/*/status`), and a block device's
//! I/O counters (`/sys/block/DEV/stat`: which multipath path carried I/O).
//!
//! Like the rest of topology it reads under a root ([`sample`]) and hands
//! back plain values ([`Sample`], [`Delta`]), so the engine and the session
//! never open `/proc` themselves and every layout is tested on fixtures.
//! The values are the kernel's own units: CPU time in clock ticks of
//! [`USER_HZ`] per second, counts as counts.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::device::reader;
use crate::error::TopologyError;
use crate::model::{CpuId, NodeId};

mod block_io;
mod delta;
mod interrupts;
mod process;
mod stat;

pub use block_io::{block_io, parse_block_stat, BlockIo};
pub use delta::{Delta, IrqDelta, NodeTimes, ProcessDelta};
pub use interrupts::{parse_interrupt_counts, queue_controller, InterruptCounts, IrqCounts};
pub use process::{parse_pid_stat, parse_status_switches, process_start_ticks, ProcessSample};
pub use stat::{parse_stat, StatSample};

/// Clock ticks per second of the CPU times in `/proc/stat` and
/// `/proc/PID/stat`: the kernel's `USER_HZ`, which its ABI fixes at 100 on
/// every architecture numio runs on (x86, arm64, ppc64, s390, riscv),
/// whatever the kernel's own `HZ`.
pub const USER_HZ: u64 = 100;

/// CPU time of one CPU (or a sum of CPUs) by what it was spent on, in
/// clock ticks ([`USER_HZ`]), as `/proc/stat` splits it. Guest time is
/// already inside `user` and `nice` and is not counted again.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct CpuTimes {
    /// User mode.
    pub user: u64,
    /// User mode at low priority (nice > 0).
    pub nice: u64,
    /// Kernel mode (system calls, kernel threads).
    pub system: u64,
    /// Idle.
    pub idle: u64,
    /// Idle while the CPU had I/O outstanding.
    pub iowait: u64,
    /// Hard interrupt handlers.
    pub irq: u64,
    /// Soft interrupts (block completions, network receive).
    pub softirq: u64,
    /// Time a hypervisor ran something else while this CPU wanted to run.
    pub steal: u64,
}

impl CpuTimes {
    /// Every tick counted: busy, idle and stolen.
    pub fn total(&self) -> u64 {
        self.busy() + self.idle + self.iowait + self.steal
    }

    /// Ticks spent running something: user, nice, system, irq, softirq.
    pub fn busy(&self) -> u64 {
        self.user + self.nice + self.system + self.irq + self.softirq
    }

    /// Ticks left unused: idle and iowait (a CPU waiting for I/O is free
    /// to run anything else).
    pub fn unused(&self) -> u64 {
        self.idle + self.iowait
    }

    /// The share of all ticks left unused, in percent; `None` with no ticks.
    pub fn headroom_pct(&self) -> Option<f64> {
        let total = self.total();
        (total > 0).then(|| self.unused() as f64 * 100.0 / total as f64)
    }

    /// `self − earlier`, field by field; a counter that went back (per-CPU
    /// iowait does on some kernels) counts 0.
    pub fn since(&self, earlier: &CpuTimes) -> CpuTimes {
        CpuTimes {
            user: self.user.saturating_sub(earlier.user),
            nice: self.nice.saturating_sub(earlier.nice),
            system: self.system.saturating_sub(earlier.system),
            idle: self.idle.saturating_sub(earlier.idle),
            iowait: self.iowait.saturating_sub(earlier.iowait),
            irq: self.irq.saturating_sub(earlier.irq),
            softirq: self.softirq.saturating_sub(earlier.softirq),
            steal: self.steal.saturating_sub(earlier.steal),
        }
    }

    /// Adds `other`.
    pub fn add(&mut self, other: &CpuTimes) {
        self.user += other.user;
        self.nice += other.nice;
        self.system += other.system;
        self.idle += other.idle;
        self.iowait += other.iowait;
        self.irq += other.irq;
        self.softirq += other.softirq;
        self.steal += other.steal;
    }
}

/// Ticks of [`USER_HZ`] in nanoseconds.
pub fn ticks_ns(ticks: u64) -> u64 {
    ticks.saturating_mul(1_000_000_000 / USER_HZ)
}

/// One reading of the machine's counters.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Sample {
    /// `/proc/stat`.
    pub stat: StatSample,
    /// `/proc/interrupts`; `None` where it could not be read or parsed
    /// (then no interrupt is counted per controller, rather than a wrong 0).
    pub interrupts: Option<InterruptCounts>,
    /// The processes asked for, those still running.
    pub processes: Vec<ProcessSample>,
}

impl Sample {
    /// What happened between `self` and the `later` sample.
    pub fn delta_to(&self, later: &Sample) -> Delta {
        delta::between(self, later)
    }
}

/// Reads the counters under `root` (`/` for this machine), and those of
/// the processes `pids` (one that has ended is left out).
///
/// Errors: `root` missing, or `proc/stat` missing or unparsable (without
/// it nothing is measured).
pub fn sample(root: &Path, pids: &[u32]) -> Result<Sample, TopologyError> {
    let mut r = reader(root)?;
    const STAT: &str = "proc/stat";
    let text = r.read(STAT).ok_or_else(|| TopologyError::MissingRequired {
        path: r.abs(STAT),
        root: r.abs(""),
        what: "the CPU time counters",
    })?;
    let stat = parse_stat(&text).map_err(|source| TopologyError::Unparsable {
        path: r.abs(STAT),
        source,
    })?;
    let interrupts = r
        .read("proc/interrupts")
        .and_then(|t| parse_interrupt_counts(&t).ok());
    let processes = pids
        .iter()
        .filter_map(|&pid| process::read(&mut r, pid))
        .collect();
    Ok(Sample {
        stat,
        interrupts,
        processes,
    })
}

/// The IRQ lines of `controller`'s queues (admin and I/O), ascending:
/// the numbers in its PCI device's `msi_irqs` directory
/// (`sys/class/nvme/nvme0/device/msi_irqs/N`) that `interrupts` counts,
/// else (no such directory: an older kernel, legacy INTx) the lines named
/// for it (`nvme0q3`). Empty for a controller without interrupts: NVMe
/// over fabrics, whose completions arrive through the network card.
pub fn controller_irqs(root: &Path, controller: &str, interrupts: &InterruptCounts) -> Vec<u32> {
    let from_sysfs: Option<Vec<u32>> = reader(root).ok().and_then(|mut r| {
        let listed = r.list(&format!("sys/class/nvme/{controller}/device/msi_irqs"))?;
        Some(listed.iter().filter_map(|n| n.parse().ok()).collect())
    });
    match from_sysfs {
        Some(numbers) => {
            let mut irqs: Vec<u32> = interrupts
                .lines
                .iter()
                .map(|l| l.irq)
                .filter(|irq| numbers.contains(irq))
                .collect();
            irqs.sort_unstable();
            irqs.dedup();
            irqs
        }
        None => interrupts.controller_irqs(controller),
    }
}

/// The CPUs of every NUMA node under `root`, by node (from
/// `sys/devices/system/node/nodeN/cpulist`, or the `cpumap` mask of older
/// kernels); empty on a kernel without NUMA. Nodes without CPUs are kept
/// (with none).
pub fn node_cpus(root: &Path) -> Result<Vec<(NodeId, Vec<CpuId>)>, TopologyError> {
    let mut r = reader(root)?;
    let mut nodes: Vec<NodeId> = r
        .list("sys/devices/system/node")
        .unwrap_or_default()
        .iter()
        .filter_map(|e| e.strip_prefix("node")?.parse().ok().map(NodeId))
        .collect();
    nodes.sort();
    let mut out = Vec::with_capacity(nodes.len());
    for node in nodes {
        let cpus = crate::host::node_cpus(root, node)?;
        out.push((node, cpus.ids().iter().map(|&c| CpuId(c)).collect()));
    }
    Ok(out)
}

#[cfg(test)]
mod tests;
