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
    /// Each target's IRQ lines (found at the first sample) and, per
    /// interval end, the interrupts each target's lines and all of them
    /// had taken since the start: the intervals' interrupts.
    irqs: Vec<Vec<u32>>,
    /// The counters at the end of each interval: `(index, sample)`.
    ticks: Vec<(u64, Sample)>,
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
            irqs: Vec::new(),
            ticks: Vec::new(),
        }
    }

    /// At the end of interval `index`: the targets' interrupt counts now,
    /// kept for [`CounterWatch::interval_interrupts`] (nothing where no
    /// target is on a controller with IRQ lines).
    pub fn tick(&mut self, index: u64) {
        if self.irqs.iter().all(Vec::is_empty) {
            return;
        }
        if let Ok(s) = counters::sample(&self.root, &[]) {
            self.ticks.push((index, s));
        }
    }

    /// The interrupts of each interval (index → per target, then the
    /// run's), from the ticks: the counts at its end less those at the end
    /// before (the first from the start of the measured time). A target
    /// without IRQ lines has `None`.
    pub fn interval_interrupts(&self) -> Vec<(u64, Vec<Option<u64>>)> {
        let Some((_, first)) = self.before.as_ref() else {
            return Vec::new();
        };
        let mut prev = first;
        let mut out = Vec::new();
        for (index, now) in &self.ticks {
            // The delta counts a 32-bit counter's wrap as the kernel's.
            let delta = prev.delta_to(now);
            let per = self
                .irqs
                .iter()
                .map(|l| {
                    let per_cpu = (!l.is_empty()).then(|| delta.irq_interrupts(l)).flatten()?;
                    Some(per_cpu.iter().map(|(_, n)| n).sum())
                })
                .collect();
            out.push((*index, per));
            prev = now;
        }
        out
    }

    /// Whether the first sample was taken.
    pub fn started(&self) -> bool {
        self.before.is_some()
    }

    /// Takes the first sample (the measured time begins).
    pub fn begin(&mut self) {
        if let Ok(s) = counters::sample(&self.root, &[self.pid]) {
            if let Some(ints) = &s.interrupts {
                self.irqs = self
                    .targets
                    .iter()
                    .map(|(_, ctrls)| {
                        let mut v: Vec<u32> = ctrls
                            .iter()
                            .flat_map(|c| counters::controller_irqs(&self.root, c, ints))
                            .collect();
                        v.sort_unstable();
                        v.dedup();
                        v
                    })
                    .collect();
                // Last: every target's lines, each once (the run's).
                let mut all: Vec<u32> = self.irqs.concat();
                all.sort_unstable();
                all.dedup();
                self.irqs.push(all);
            }
            self.before = Some((sys::now_ns(), s));
        }
    }

    /// Takes the second sample and gives what happened in between;
    /// `None` when either could not be read.
    pub fn end(&self) -> Option<RunCounters> {
        let (t0, before) = self.before.as_ref()?;
        let after = counters::sample(&self.root, &[self.pid]).ok()?;
        let window_ns = sys::now_ns().saturating_sub(*t0);
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

    /// Interval ends read `/proc/interrupts` again: each interval gets its
    /// controllers' interrupts since the end before, a 32-bit counter's
    /// wrap counted as the kernel's (the fixture's nvme0q1).
    #[test]
    fn each_interval_gets_the_interrupts_taken_in_it() {
        let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/counters");
        let root = std::env::temp_dir().join(format!("numio-irq-ticks-{}", std::process::id()));
        let copy = |from: &str| {
            let st = std::process::Command::new("cp")
                .args(["-rT"])
                .arg(fixtures.join(from))
                .arg(&root)
                .status()
                .unwrap();
            assert!(st.success());
        };
        copy("before");
        let mut w = CounterWatch {
            root: root.clone(),
            pid: 4242,
            targets: vec![("/dev/nvme0n1".into(), vec!["nvme0".into()])],
            before: None,
            irqs: Vec::new(),
            ticks: Vec::new(),
        };
        w.begin();
        assert_eq!(w.irqs, vec![vec![40, 41, 42], vec![40, 41, 42]]);
        copy("after");
        w.tick(0);
        w.tick(1);
        let got = w.interval_interrupts();
        let _ = std::fs::remove_dir_all(&root);
        // +1 on nvme0q0, 4294967000 -> 704 on nvme0q1 (1000), +20000 on nvme0q2.
        assert_eq!(
            got,
            vec![
                (0, vec![Some(21_001), Some(21_001)]),
                (1, vec![Some(0), Some(0)])
            ]
        );
    }

    #[test]
    fn a_target_off_nvme_has_no_interrupt_count() {
        let info = TargetInfo::file("/tmp/x", 4096);
        assert!(controllers(Path::new("/"), &info.kind).is_empty());
        let t = target_counters(Path::new("/"), &Delta::default(), None, "/tmp/x", &[]);
        assert_eq!(t.interrupts, None);
    }
}
