//! The machine's counters around the measured time: `topology::counters`
//! sampled when the ramp ends and when the last worker finishes (from the
//! calling thread, which watches the workers anyway), subtracted, and put
//! into the result as [`RunCounters`]: CPU time by kind for the machine and
//! each node, context switches, interrupts, each target's NVMe queue
//! interrupts and numio's own threads.
//!
//! Nothing here can fail a run: where `/proc` cannot be read the result
//! simply has no counters.

use std::path::{Path, PathBuf};

use results::{CpuSplit, NodeCpu, ProcessCounters, RunCounters, TargetCounters};
use topology::counters::{self, ticks_ns, Delta, InterruptCounts, Sample};
use topology::device::{block_stack, DevNum};
use topology::{CpuId, NodeId};

use super::checks::CheckedTarget;
use crate::sys;
use crate::targets::TargetKind;

/// The counters of one run: the root they are read under, the targets'
/// controllers, and the first sample once taken.
pub(super) struct CounterWatch {
    root: PathBuf,
    pid: u32,
    /// `(path, controllers)` of each target.
    targets: Vec<(String, Vec<String>)>,
    before: Option<(u64, Sample)>,
}

impl CounterWatch {
    /// Counters under `root` for the targets of a run (their NVMe
    /// controllers looked up now, before the run starts).
    pub fn new(root: &Path, checked: &[CheckedTarget]) -> CounterWatch {
        let targets = checked
            .iter()
            .map(|t| (t.info.path.clone(), controllers(root, &t.info.kind)))
            .collect();
        CounterWatch {
            root: root.to_path_buf(),
            pid: std::process::id(),
            targets,
            before: None,
        }
    }

    /// Whether the first sample was taken.
    pub fn started(&self) -> bool {
        self.before.is_some()
    }

    /// Takes the first sample (the measured time begins).
    pub fn begin(&mut self) {
        if let Ok(s) = counters::sample(&self.root, &[self.pid]) {
            self.before = Some((sys::now_ns(), s));
        }
    }

    /// Takes the second sample and gives what happened in between;
    /// `None` when either could not be read.
    pub fn end(self) -> Option<RunCounters> {
        let (t0, before) = self.before?;
        let after = counters::sample(&self.root, &[self.pid]).ok()?;
        let window_ns = sys::now_ns().saturating_sub(t0);
        let delta = before.delta_to(&after);
        let nodes = counters::node_cpus(&self.root).unwrap_or_default();
        let ints = after.interrupts.as_ref();
        let targets: Vec<TargetCounters> = self
            .targets
            .iter()
            .map(|(path, ctrls)| target_counters(&self.root, &delta, ints, path, ctrls))
            .collect();
        let mut all_irqs: Vec<u32> = targets.iter().flat_map(|t| t.irqs.clone()).collect();
        all_irqs.sort_unstable();
        all_irqs.dedup();
        let nvme_interrupts = targets
            .iter()
            .any(|t| t.interrupts.is_some())
            .then(|| delta.irq_interrupts(&all_irqs))
            .flatten()
            .map(|per_cpu| per_cpu.iter().map(|(_, n)| n).sum());
        Some(RunCounters {
            window_ns,
            cpu: CpuSplit::from_ticks(&delta.total),
            online_cpus: delta.cpus.len() as u32,
            nodes: node_split(&delta, &nodes),
            context_switches: delta.context_switches,
            interrupts: delta.interrupts,
            nvme_interrupts,
            targets,
            process: delta.processes.first().map(|p| ProcessCounters {
                user_ns: ticks_ns(p.user_ticks),
                system_ns: ticks_ns(p.system_ticks),
                voluntary_ctx_switches: p.voluntary_switches,
                involuntary_ctx_switches: p.involuntary_switches,
            }),
            target_process: None,
            target_machine: None,
        })
    }
}

/// The NVMe controllers I/O to a target goes through: those beneath a
/// block device (or beneath the filesystem of a file, or a generic
/// device's namespace); none for NVMe/TCP (the engine's own host: no
/// controller in this kernel) or what is not on NVMe.
fn controllers(root: &Path, kind: &TargetKind) -> Vec<String> {
    let dev: Option<DevNum> = match kind {
        TargetKind::BlockDevice { dev, .. } => Some(*dev),
        TargetKind::File { filesystem_device } => filesystem_device.as_ref().and_then(|d| d.dev),
        TargetKind::NvmeGeneric(g) => g.namespace.dev,
        TargetKind::NvmeTcp(_) | TargetKind::NvmeRdma(_) | TargetKind::Pci(_) => None,
    };
    let Some(stack) = dev.and_then(|d| block_stack(root, d).ok()) else {
        return Vec::new();
    };
    let mut names: Vec<String> = stack
        .namespaces
        .iter()
        .flat_map(|ns| ns.controllers.iter().map(|c| c.name.clone()))
        .collect();
    names.sort();
    names.dedup();
    names
}

fn target_counters(
    root: &Path,
    delta: &Delta,
    interrupts: Option<&InterruptCounts>,
    path: &str,
    controllers: &[String],
) -> TargetCounters {
    let irqs: Vec<u32> = match interrupts {
        Some(ints) => {
            let mut v: Vec<u32> = controllers
                .iter()
                .flat_map(|c| counters::controller_irqs(root, c, ints))
                .collect();
            v.sort_unstable();
            v.dedup();
            v
        }
        None => Vec::new(),
    };
    // A controller without IRQ lines (fabrics) says nothing about its
    // interrupts: not counted, rather than a false 0.
    let per_cpu = if irqs.is_empty() {
        None
    } else {
        delta.irq_interrupts(&irqs)
    };
    TargetCounters {
        path: path.to_string(),
        controllers: controllers.to_vec(),
        irqs,
        interrupts: per_cpu.as_ref().map(|v| v.iter().map(|(_, n)| n).sum()),
        interrupts_per_cpu: per_cpu.unwrap_or_default(),
    }
}

fn node_split(delta: &Delta, nodes: &[(NodeId, Vec<CpuId>)]) -> Vec<NodeCpu> {
    delta
        .nodes(nodes)
        .into_iter()
        .map(|n| NodeCpu {
            node: n.node,
            cpus: n.cpus.len() as u32,
            cpu: CpuSplit::from_ticks(&n.times),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::targets::TargetInfo;

    /// A null run on this machine: counters come back, with the machine's
    /// CPU time and this process among them.
    #[test]
    fn a_window_on_this_machine_counts_the_machine_and_numio() {
        let checked = Vec::new();
        let mut w = CounterWatch::new(Path::new("/"), &checked);
        assert!(!w.started());
        w.begin();
        assert!(w.started(), "/proc/stat is readable here");
        let spin = std::time::Instant::now();
        while spin.elapsed() < std::time::Duration::from_millis(30) {
            std::hint::black_box(0u64);
        }
        let c = w.end().expect("counters");
        assert!(c.window_ns >= 30_000_000, "{}", c.window_ns);
        assert!(c.online_cpus >= 1);
        assert!(c.process.is_some(), "this test's process");
        assert_eq!(c.nvme_interrupts, None, "no targets");
    }

    #[test]
    fn a_target_off_nvme_has_no_interrupt_count() {
        let info = TargetInfo::file("/tmp/x", 4096);
        assert!(controllers(Path::new("/"), &info.kind).is_empty());
        let t = target_counters(Path::new("/"), &Delta::default(), None, "/tmp/x", &[]);
        assert_eq!(t.interrupts, None);
    }
}
