//! NVMe as kernels before 4.15 lay it out in sysfs ([`NvmeLayout`]):
//! - 4.5 to 4.14: controllers in the `nvme` class with their namespaces as
//!   children, no `nvme-subsystem` class, no generic devices, and no
//!   `numa_node` of the controller's own (only its PCI device's);
//! - 4.0 and older: controllers are `misc` devices (`<pci>/misc/nvmeN`, a
//!   `dev` file and nothing else), namespaces are children of the PCI
//!   device (`<pci>/block/nvmeNnM`), bio-based (no `mq/`), without `nsid`.
#![allow(dead_code)]

use super::gen::{Machine, NsSpec, Tree};
use super::gen_cpus::NvmeLayout;

impl Machine {
    /// Every controller and its namespaces in the layout of
    /// `self.quirks.nvme` (not [`NvmeLayout::Subsystems`]).
    pub(crate) fn write_legacy_nvme(&self, t: &mut Tree) {
        for c in &self.controllers {
            let pci = self.pci_function(t, &c.attach);
            let namespaces: Vec<&NsSpec> = self
                .subsystems
                .iter()
                .flat_map(|s| &s.namespaces)
                .filter(|ns| ns.paths.iter().any(|(x, _, _)| *x == c.instance))
                .collect();
            let nqn = &self
                .subsystems
                .iter()
                .find(|s| s.instance == c.subsystem)
                .expect("subsystem")
                .nqn;
            let x = c.instance;
            match self.quirks.nvme {
                NvmeLayout::NoSubsystems => {
                    let dir = format!("{pci}/nvme/nvme{x}");
                    t.link(&format!("{dir}/device"), &pci);
                    for (attr, value) in [
                        ("transport", "pcie".to_string()),
                        ("address", pci.rsplit('/').next().unwrap_or("").to_string()),
                        ("model", c.model.clone()),
                        ("serial", c.serial.clone()),
                        ("firmware_rev", c.firmware.clone()),
                        ("state", "live".to_string()),
                        ("cntlid", c.cntlid.to_string()),
                        ("subsysnqn", nqn.clone()),
                    ] {
                        t.file(&format!("{dir}/{attr}"), format!("{value}\n"));
                    }
                    t.link(&format!("sys/class/nvme/nvme{x}"), &dir);
                    for ns in namespaces {
                        let disk = format!("{dir}/nvme{x}n{}", ns.head_instance);
                        self.write_disk(t, &disk, ns, Some(c));
                    }
                }
                NvmeLayout::Misc => {
                    let dir = format!("{pci}/misc/nvme{x}");
                    t.file(&format!("{dir}/dev"), format!("10:{}\n", 58 + x));
                    t.link(&format!("{dir}/device"), &pci);
                    t.link(&format!("sys/class/misc/nvme{x}"), &dir);
                    for ns in namespaces {
                        let disk = format!("{pci}/block/nvme{x}n{}", ns.head_instance);
                        write_bio_disk(t, &disk, ns);
                    }
                }
                NvmeLayout::Subsystems => unreachable!("written by write_controller"),
            }
        }
    }
}

/// A bio-based gendisk of an old kernel: size and a few queue attributes.
fn write_bio_disk(t: &mut Tree, dir: &str, ns: &NsSpec) {
    t.block_device(dir, 259, false, false);
    t.file(&format!("{dir}/size"), format!("{}\n", ns.size_sectors));
    let q = format!("{dir}/queue");
    for (attr, value) in [
        ("logical_block_size", ns.lba_bytes.to_string()),
        ("scheduler", "none".to_string()),
        ("nr_requests", "128".to_string()),
        ("rq_affinity", "1".to_string()),
        ("nomerges", "0".to_string()),
        ("iostats", "1".to_string()),
        ("max_hw_sectors_kb", "128".to_string()),
        ("rotational", "0".to_string()),
    ] {
        t.file(&format!("{q}/{attr}"), format!("{value}\n"));
    }
}
