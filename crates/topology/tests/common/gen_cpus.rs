//! The CPU and NUMA side of a generated tree (`devices/system/{cpu,node}`,
//! `/proc/interrupts`, `/proc/irq`), written the way each kernel generation
//! does ([`Quirks`]): lists or only hex masks, with or without the
//! `online` lists, files ending `\n\0`, `-1` package ids, node lists that
//! overlap.
#![allow(dead_code)]

use super::gen::{list, Attach, Machine, Tree};

/// How a machine's sysfs departs from today's kernels.
#[derive(Debug, Clone, Default)]
pub struct Quirks {
    /// List files, masks and node state files end with `\n\0`.
    pub nul_terminated: bool,
    /// No `cpu/{online,possible,present}` nor `node/{online,possible}`.
    pub no_online_lists: bool,
    /// CPU sets only as hex masks: `nodeN/cpumap`, `thread_siblings`,
    /// the PCI device's `local_cpus`, each IRQ's `smp_affinity`.
    pub masks_only: bool,
    /// Every node lists every online CPU (a broken SRAT).
    pub overlapping_node_lists: bool,
    /// `node/online` lists only these nodes (others keep their directory).
    pub online_nodes: Option<Vec<u32>>,
    /// How the NVMe driver lays out its devices.
    pub nvme: NvmeLayout,
    /// `MemTotal` of `/proc/meminfo` in KiB, written for a machine without
    /// NUMA nodes (no `devices/system/node`).
    pub meminfo_kib: Option<u64>,
}

/// The NVMe sysfs layout of a kernel generation.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum NvmeLayout {
    /// Linux 4.15 and later: `nvme` and `nvme-subsystem` classes.
    #[default]
    Subsystems,
    /// Linux 4.5 to 4.14: the `nvme` class, namespaces under their
    /// controller, no subsystems, no `numa_node` of the controller's own.
    NoSubsystems,
    /// Linux 4.0 and older: controllers in the `misc` class, namespaces in
    /// `<pci>/block/`, bio-based, no controller attributes nor `nsid`.
    Misc,
}

/// The kernel's mask format: 32-bit words of 8 hex digits, most
/// significant first, the first word as short as `width_bits` allows.
pub fn mask(items: &[u32], width_bits: u32) -> String {
    let words = width_bits.div_ceil(32).max(1);
    let mut out = Vec::new();
    for w in (0..words).rev() {
        let v = items
            .iter()
            .filter(|&&i| i / 32 == w)
            .fold(0u32, |v, &i| v | 1 << (i % 32));
        let digits = if w + 1 == words && width_bits % 32 != 0 {
            (width_bits % 32).div_ceil(4) as usize
        } else {
            8
        };
        out.push(format!("{v:0digits$x}"));
    }
    out.join(",")
}

impl Machine {
    /// Line end of list, mask and node state files.
    fn end(&self) -> &'static str {
        if self.quirks.nul_terminated {
            "\n\0"
        } else {
            "\n"
        }
    }

    /// Width of the kernel's CPU masks (`nr_cpu_ids`).
    fn mask_bits(&self) -> u32 {
        self.cpus.iter().map(|c| c.id + 1).max().unwrap_or(1)
    }

    /// A CPU set as the list file `list_path` (or, with `masks_only`, the
    /// mask file `mask_path`).
    pub(crate) fn cpu_set(&self, t: &mut Tree, list_path: &str, mask_path: &str, ids: &[u32]) {
        if self.quirks.masks_only {
            t.file(
                mask_path,
                format!("{}{}", mask(ids, self.mask_bits()), self.end()),
            );
        } else {
            t.file(list_path, format!("{}{}", list(ids), self.end()));
        }
    }

    pub(crate) fn write_nodes(&self, t: &mut Tree) {
        let base = "sys/devices/system/node";
        let ids: Vec<u32> = self.nodes.iter().map(|n| n.id).collect();
        if !self.quirks.no_online_lists {
            let online = self.quirks.online_nodes.clone().unwrap_or(ids.clone());
            t.file(
                &format!("{base}/online"),
                format!("{}{}", list(&online), self.end()),
            );
            t.file(
                &format!("{base}/possible"),
                format!("{}{}", list(&ids), self.end()),
            );
        }
        let all_online: Vec<u32> = self
            .cpus
            .iter()
            .filter(|c| c.online)
            .map(|c| c.id)
            .collect();
        for n in &self.nodes {
            let cpus: Vec<u32> = if self.quirks.overlapping_node_lists {
                all_online.clone()
            } else {
                self.cpus
                    .iter()
                    .filter(|c| c.node == n.id && c.online)
                    .map(|c| c.id)
                    .collect()
            };
            let dir = format!("{base}/node{}", n.id);
            self.cpu_set(
                t,
                &format!("{dir}/cpulist"),
                &format!("{dir}/cpumap"),
                &cpus,
            );
            let dist: Vec<String> = n.distances.iter().map(u32::to_string).collect();
            t.file(&format!("{dir}/distance"), format!("{}\n", dist.join(" ")));
            let meminfo = format!(
                "Node {id} MemTotal:       {total:>10} kB\nNode {id} MemFree:        {free:>10} kB\nNode {id} MemUsed:        {used:>10} kB\n",
                id = n.id,
                total = n.memory_kib,
                free = n.memory_kib / 10 * 9,
                used = n.memory_kib - n.memory_kib / 10 * 9
            );
            t.file(&format!("{dir}/meminfo"), meminfo);
        }
    }

    pub(crate) fn write_cpus(&self, t: &mut Tree) {
        let base = "sys/devices/system/cpu";
        let all: Vec<u32> = self.cpus.iter().map(|c| c.id).collect();
        let online: Vec<u32> = self
            .cpus
            .iter()
            .filter(|c| c.online)
            .map(|c| c.id)
            .collect();
        if !self.quirks.no_online_lists {
            t.file(
                &format!("{base}/online"),
                format!("{}{}", list(&online), self.end()),
            );
            t.file(
                &format!("{base}/possible"),
                format!("{}{}", list(&all), self.end()),
            );
            t.file(
                &format!("{base}/present"),
                format!("{}{}", list(&all), self.end()),
            );
        }
        for c in &self.cpus {
            let dir = format!("{base}/cpu{}", c.id);
            if !self.nodes.is_empty() {
                t.link(
                    &format!("{dir}/node{}", c.node),
                    &format!("sys/devices/system/node/node{}", c.node),
                );
            }
            if c.id != 0 {
                t.file(
                    &format!("{dir}/online"),
                    if c.online { "1\n" } else { "0\n" },
                );
            }
            if c.online {
                t.file(
                    &format!("{dir}/topology/physical_package_id"),
                    format!("{}\n", c.package),
                );
                t.file(&format!("{dir}/topology/core_id"), format!("{}\n", c.core));
                self.cpu_set(
                    t,
                    &format!("{dir}/topology/thread_siblings_list"),
                    &format!("{dir}/topology/thread_siblings"),
                    &c.siblings,
                );
            }
        }
    }

    pub(crate) fn write_interrupts(&self, t: &mut Tree) {
        let online: Vec<u32> = self
            .cpus
            .iter()
            .filter(|c| c.online)
            .map(|c| c.id)
            .collect();
        let mut text = String::from("     ");
        for c in &online {
            text.push_str(&format!("{:>11}", format!("CPU{c}")));
        }
        text.push('\n');
        let mut line = |irq: u32, on_cpu: u32, chip: &str, name: &str, t: &mut Tree| {
            text.push_str(&format!("{irq:>4}:"));
            for c in &online {
                let count = if *c == on_cpu {
                    1000 + u64::from(irq) * 7
                } else {
                    0
                };
                text.push_str(&format!(" {count:>10}"));
            }
            text.push_str(&format!("  {chip}  {name}\n"));
            let dir = format!("proc/irq/{irq}");
            if self.quirks.masks_only {
                t.file(
                    &format!("{dir}/smp_affinity"),
                    format!("{}\n", mask(&[on_cpu], self.mask_bits())),
                );
            } else {
                t.file(
                    &format!("{dir}/effective_affinity_list"),
                    format!("{on_cpu}\n"),
                );
            }
        };
        line(0, online[0], "IO-APIC   2-edge     ", "timer", t);
        line(9, online[0], "IO-APIC   9-fasteoi  ", "acpi", t);
        for c in &self.controllers {
            let Attach::Pci { bdf, .. } = &c.attach else {
                continue;
            };
            if c.irq_cpus.is_empty() {
                continue;
            }
            line(
                c.first_irq,
                online[0],
                &format!("PCI-MSIX-{bdf}   0-edge     "),
                &format!("nvme{}q0", c.instance),
                t,
            );
            for (q, cpu) in c.irq_cpus.iter().enumerate() {
                let q = q as u32 + 1;
                line(
                    c.first_irq + q,
                    *cpu,
                    &format!("PCI-MSIX-{bdf}  {q:>2}-edge     "),
                    &format!("nvme{}q{q}", c.instance),
                    t,
                );
            }
        }
        text.push_str(&format!("{:>4}:", "NMI"));
        for _ in &online {
            text.push_str(&format!(" {:>10}", 0));
        }
        text.push_str("   Non-maskable interrupts\n");
        t.file("proc/interrupts", text);
    }
}

#[cfg(test)]
mod tests {
    use super::mask;

    #[test]
    fn masks_are_written_like_the_kernel() {
        assert_eq!(mask(&[0, 1, 2, 3], 8), "0f");
        assert_eq!(mask(&[0, 35], 72), "00,00000008,00000001");
        assert_eq!(mask(&[4, 5, 6, 7], 64), "00000000,000000f0");
    }
}
