//! The machine's counters over a run: CPU time by kind (machine and
//! node), context switches, interrupts (each target's NVMe queue lines)
//! and the numio process's own, as `topology::counters` read them from
//! `/proc` before and after the measured time; and the per-I/O costs and
//! CPU headroom derived from them.
//!
//! The counters cover a window ([`RunCounters::window_ns`]) that starts
//! when the ramp ends (within the engine's 50 ms watch tick) and ends when
//! the last worker finishes, while the I/O counts cover each target's
//! measured time. A per-I/O value is therefore a ratio of rates: counts per
//! second of the window over I/Os per second of the measured time.

use serde::{Deserialize, Serialize};

use topology::counters::{ticks_ns, CpuTimes, ProcessSample};
use topology::{CpuId, NodeId};

/// CPU time by what it was spent on, in nanoseconds (`/proc/stat`'s
/// split; guest time is inside user and nice).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct CpuSplit {
    /// User mode.
    pub user_ns: u64,
    /// User mode at low priority.
    pub nice_ns: u64,
    /// Kernel mode.
    pub system_ns: u64,
    /// Idle.
    pub idle_ns: u64,
    /// Idle with I/O outstanding.
    pub iowait_ns: u64,
    /// Hard interrupt handlers.
    pub irq_ns: u64,
    /// Soft interrupts (block completions, network receive).
    pub softirq_ns: u64,
    /// Stolen by the hypervisor.
    pub steal_ns: u64,
}

impl CpuSplit {
    /// Time spent running something: user, nice, system, irq, softirq.
    pub fn busy_ns(&self) -> u64 {
        self.user_ns + self.nice_ns + self.system_ns + self.irq_ns + self.softirq_ns
    }

    /// Every nanosecond counted: busy, idle, iowait and steal.
    pub fn total_ns(&self) -> u64 {
        self.busy_ns() + self.idle_ns + self.iowait_ns + self.steal_ns
    }

    /// The share left unused (idle and iowait), in percent: the CPU
    /// headroom; `None` when nothing was counted.
    pub fn headroom_pct(&self) -> Option<f64> {
        let total = self.total_ns();
        (total > 0).then(|| (self.idle_ns + self.iowait_ns) as f64 * 100.0 / total as f64)
    }

    /// The split of `/proc/stat` times (clock ticks).
    pub fn from_ticks(t: &CpuTimes) -> CpuSplit {
        CpuSplit {
            user_ns: ticks_ns(t.user),
            nice_ns: ticks_ns(t.nice),
            system_ns: ticks_ns(t.system),
            idle_ns: ticks_ns(t.idle),
            iowait_ns: ticks_ns(t.iowait),
            irq_ns: ticks_ns(t.irq),
            softirq_ns: ticks_ns(t.softirq),
            steal_ns: ticks_ns(t.steal),
        }
    }

    /// What was spent from the reading `earlier` to this one (0 where a
    /// count went back).
    pub fn since(&self, earlier: &CpuSplit) -> CpuSplit {
        let d = |a: u64, b: u64| a.saturating_sub(b);
        CpuSplit {
            user_ns: d(self.user_ns, earlier.user_ns),
            nice_ns: d(self.nice_ns, earlier.nice_ns),
            system_ns: d(self.system_ns, earlier.system_ns),
            idle_ns: d(self.idle_ns, earlier.idle_ns),
            iowait_ns: d(self.iowait_ns, earlier.iowait_ns),
            irq_ns: d(self.irq_ns, earlier.irq_ns),
            softirq_ns: d(self.softirq_ns, earlier.softirq_ns),
            steal_ns: d(self.steal_ns, earlier.steal_ns),
        }
    }

    /// Adds `other` (another machine's, for a fleet's CPU together).
    pub fn add(&mut self, other: &CpuSplit) {
        self.user_ns += other.user_ns;
        self.nice_ns += other.nice_ns;
        self.system_ns += other.system_ns;
        self.idle_ns += other.idle_ns;
        self.iowait_ns += other.iowait_ns;
        self.irq_ns += other.irq_ns;
        self.softirq_ns += other.softirq_ns;
        self.steal_ns += other.steal_ns;
    }
}

/// One NUMA node's CPUs over the window.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeCpu {
    /// The node.
    pub node: NodeId,
    /// Its CPUs online over the whole window.
    pub cpus: u32,
    /// Their CPU time together.
    pub cpu: CpuSplit,
}

/// One target's NVMe queue interrupts over the window.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TargetCounters {
    /// The target's path.
    pub path: String,
    /// The NVMe controllers its I/O goes through (every path of a
    /// multipath head); empty when it is not on NVMe.
    pub controllers: Vec<String>,
    /// Their queue IRQ lines.
    pub irqs: Vec<u32>,
    /// Interrupts of those lines; `None` when none can be counted (not on
    /// NVMe, NVMe over fabrics, no `/proc/interrupts`). A polled run
    /// counts its 0.
    pub interrupts: Option<u64>,
    /// The same per CPU that took any, ascending by CPU.
    pub interrupts_per_cpu: Vec<(CpuId, u64)>,
}

/// The numio process over the window (every thread: workers, the main
/// thread and io_uring's iou-wrk threads).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ProcessCounters {
    /// User time in nanoseconds.
    pub user_ns: u64,
    /// System time in nanoseconds.
    pub system_ns: u64,
    /// Voluntary context switches of its threads.
    pub voluntary_ctx_switches: u64,
    /// Involuntary context switches of its threads.
    pub involuntary_ctx_switches: u64,
}

impl ProcessCounters {
    /// A process's totals as `/proc/PID` gives them (since it started).
    pub fn from_sample(p: &ProcessSample) -> ProcessCounters {
        ProcessCounters {
            user_ns: ticks_ns(p.user_ticks),
            system_ns: ticks_ns(p.system_ticks),
            voluntary_ctx_switches: p.voluntary_switches,
            involuntary_ctx_switches: p.involuntary_switches,
        }
    }

    /// What the process spent from the reading `earlier` to this one (0
    /// where a count went back).
    pub fn since(&self, earlier: &ProcessCounters) -> ProcessCounters {
        ProcessCounters {
            user_ns: self.user_ns.saturating_sub(earlier.user_ns),
            system_ns: self.system_ns.saturating_sub(earlier.system_ns),
            voluntary_ctx_switches: self
                .voluntary_ctx_switches
                .saturating_sub(earlier.voluntary_ctx_switches),
            involuntary_ctx_switches: self
                .involuntary_ctx_switches
                .saturating_sub(earlier.involuntary_ctx_switches),
        }
    }

    /// Adds `other` (another host's numio, for a fleet's together).
    pub fn add(&mut self, other: &ProcessCounters) {
        self.user_ns += other.user_ns;
        self.system_ns += other.system_ns;
        self.voluntary_ctx_switches += other.voluntary_ctx_switches;
        self.involuntary_ctx_switches += other.involuntary_ctx_switches;
    }

    /// These counts, measured over `over_ns`, at the same rate over
    /// `to_ns` (a process sampled around a run, brought to its counter
    /// window).
    pub fn scaled(&self, to_ns: u64, over_ns: u64) -> ProcessCounters {
        let scale = |n: u64| (n as f64 * to_ns as f64 / over_ns.max(1) as f64).round() as u64;
        ProcessCounters {
            user_ns: scale(self.user_ns),
            system_ns: scale(self.system_ns),
            voluntary_ctx_switches: scale(self.voluntary_ctx_switches),
            involuntary_ctx_switches: scale(self.involuntary_ctx_switches),
        }
    }

    /// User and system time together, ns.
    pub fn cpu_ns(&self) -> u64 {
        self.user_ns + self.system_ns
    }
}

/// The machine's counters over a run.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct RunCounters {
    /// Length of the window the counters cover, in nanoseconds.
    pub window_ns: u64,
    /// Every CPU of the machine together.
    pub cpu: CpuSplit,
    /// CPUs online over the whole window.
    pub online_cpus: u32,
    /// Per NUMA node (empty without NUMA).
    pub nodes: Vec<NodeCpu>,
    /// Context switches of the whole machine.
    pub context_switches: u64,
    /// Interrupts of every kind on the whole machine.
    pub interrupts: u64,
    /// The queue interrupts of every target's controllers together, each
    /// line once; `None` when no target's could be counted.
    pub nvme_interrupts: Option<u64>,
    /// Per target, in the order of the run's targets.
    pub targets: Vec<TargetCounters>,
    /// The numio process, when `/proc` had it.
    pub process: Option<ProcessCounters>,
    /// A `numio serve` target on this machine that the run drove (a sweep
    /// over `reactors` starts one per run), over the same window: the
    /// target's CPU apart from the initiator's `process`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_process: Option<ProcessCounters>,
    /// The whole machine of that target when it runs on another host (a
    /// sweep over a fleet serves it on `--target-host`), over the same
    /// window: its CPU headroom apart from the initiators'. `None` when
    /// the target shares this machine (`cpu` covers it) or none was served.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_machine: Option<CpuSplit>,
}

impl RunCounters {
    /// `count` over the window, per I/O at `iops`: a ratio of rates.
    /// `None` without time or I/O.
    pub fn per_io(&self, count: u64, iops: f64) -> Option<f64> {
        (self.window_ns > 0 && iops > 0.0)
            .then(|| count as f64 * 1e9 / self.window_ns as f64 / iops)
    }
}

/// What one I/O cost, for a target or in total; `None` where it was not
/// measured.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct PerIo {
    /// NVMe queue interrupts per I/O (0 in a polled run).
    pub interrupts: Option<f64>,
    /// The workers' context switches (voluntary and involuntary) per I/O.
    pub worker_ctx_switches: Option<f64>,
    /// The whole machine's context switches per I/O (total only).
    pub machine_ctx_switches: Option<f64>,
    /// The workers' CPU time (user and system) per I/O, in nanoseconds.
    pub worker_cpu_ns: Option<f64>,
    /// [`PerIo::worker_cpu_ns`] less the time polling backends spent on
    /// empty completion queues ([`crate::CpuUsage::idle_poll_ns`]): the CPU
    /// the I/O itself cost. Equal to it for backends that sleep.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worker_busy_cpu_ns: Option<f64>,
    /// The whole machine's busy CPU time per I/O, in nanoseconds: the
    /// workers, interrupt handlers, softirqs, kernel threads (total only).
    pub machine_cpu_ns: Option<f64>,
    /// The share of the machine's CPU left unused, in percent (total only).
    pub cpu_headroom_pct: Option<f64>,
    /// The initiator's CPU time per I/O, in nanoseconds: the whole numio
    /// process (workers, main thread, io_uring worker threads; total only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub initiator_cpu_ns: Option<f64>,
    /// CPU time per I/O of a `numio serve` target on this machine that the
    /// run drove, in nanoseconds (total only; see
    /// [`RunCounters::target_process`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_cpu_ns: Option<f64>,
    /// The share of that target's machine left unused, percent, when it
    /// ran on another host ([`RunCounters::target_machine`]; total only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_headroom_pct: Option<f64>,
}

impl PerIo {
    /// Nothing was measured (a result saved before counters were).
    pub fn is_unmeasured(&self) -> bool {
        *self == PerIo::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn per_io_is_a_ratio_of_rates() {
        // 1.5 s window (ramp end to the last worker), 30,000 interrupts:
        // 20,000/s against 10,000 IOPS is 2 interrupts per I/O.
        let c = RunCounters {
            window_ns: 1_500_000_000,
            ..RunCounters::default()
        };
        assert_eq!(c.per_io(30_000, 10_000.0), Some(2.0));
        assert_eq!(
            c.per_io(0, 10_000.0),
            Some(0.0),
            "a polled run: 0, measured"
        );
        assert_eq!(c.per_io(30_000, 0.0), None);
        assert_eq!(RunCounters::default().per_io(1, 1.0), None);
    }

    #[test]
    fn headroom_is_idle_and_iowait_over_everything() {
        let cpu = CpuSplit {
            user_ns: 300,
            system_ns: 100,
            softirq_ns: 50,
            irq_ns: 50,
            idle_ns: 400,
            iowait_ns: 100,
            ..CpuSplit::default()
        };
        assert_eq!(cpu.busy_ns(), 500);
        assert_eq!(cpu.headroom_pct(), Some(50.0));
        assert_eq!(CpuSplit::default().headroom_pct(), None);
    }
}
