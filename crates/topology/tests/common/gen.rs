//! Writes synthetic sysfs/procfs trees shaped like the kernel's: the same
//! directories, attribute formats and relative symlinks (`/sys/class/nvme/nvme0
//! → ../../devices/pci0000:00/…/nvme/nvme0`), trimmed to what discovery reads.
//!
//! Used by `examples/gen_fixtures.rs` to (re)write `tests/fixtures/sysfs/*`
//! and by the tests to check that the committed fixtures match.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::Path;

pub use super::gen_cpus::{NvmeLayout, Quirks};

/// One CPU.
#[derive(Debug, Clone)]
pub struct CpuSpec {
    pub id: u32,
    pub online: bool,
    /// `physical_package_id`; -1 where the kernel does not know (s390).
    pub package: i32,
    pub core: u32,
    pub siblings: Vec<u32>,
    pub node: u32,
}

/// One NUMA node.
#[derive(Debug, Clone)]
pub struct NodeSpec {
    pub id: u32,
    pub memory_kib: u64,
    pub distances: Vec<u32>,
}

/// Where a controller sits.
#[derive(Debug, Clone)]
pub enum Attach {
    /// PCIe: host bridge (`pci0000:3a`), bridges, function BDF.
    Pci {
        host: String,
        bridges: Vec<String>,
        bdf: String,
        local_cpus: Vec<u32>,
        numa_node: i32,
    },
    /// A fabrics transport (`tcp`, `rdma`, `fc`, `loop`) with its address.
    Fabric { transport: String, address: String },
}

/// One controller.
#[derive(Debug, Clone)]
pub struct CtrlSpec {
    pub instance: u32,
    pub attach: Attach,
    pub model: String,
    pub serial: String,
    pub firmware: String,
    pub cntlid: u32,
    pub numa_node: i32,
    pub subsystem: u32,
    /// Default (IRQ-driven) I/O queues: queue q serves `queue_cpus[q-1]`.
    pub queue_cpus: Vec<Vec<u32>>,
    /// Effective affinity of each I/O queue IRQ (empty: no IRQs, e.g. TCP).
    pub irq_cpus: Vec<u32>,
    /// Poll queues (hardware queues without IRQ), served by no CPU list of their own.
    pub poll_queues: u32,
    pub first_irq: u32,
}

/// One namespace.
#[derive(Debug, Clone)]
pub struct NsSpec {
    pub head_instance: u32,
    pub nsid: u32,
    pub size_sectors: u64,
    pub lba_bytes: u32,
    pub scheduler: String,
    /// Controllers (instances) exposing it, with ANA state and `numa_nodes`.
    pub paths: Vec<(u32, String, Option<String>)>,
}

/// One subsystem.
#[derive(Debug, Clone)]
pub struct SubsysSpec {
    pub instance: u32,
    pub nqn: String,
    pub iopolicy: String,
    pub namespaces: Vec<NsSpec>,
}

/// A whole machine.
#[derive(Debug, Clone)]
pub struct Machine {
    pub name: String,
    pub nodes: Vec<NodeSpec>,
    pub cpus: Vec<CpuSpec>,
    pub controllers: Vec<CtrlSpec>,
    pub subsystems: Vec<SubsysSpec>,
    /// `nvme_core.multipath`; `None`: no NVMe driver loaded.
    pub multipath: Option<bool>,
    pub poll_queues: u32,
    pub iopolicy: String,
    /// Partitions, dm/md/loop devices, mounts and host files, for the
    /// machines that test the device queries.
    pub block: Option<super::gen_block::BlockLayer>,
    /// How its sysfs departs from today's kernels (none by default).
    pub quirks: Quirks,
}

/// A tree being built: path → file contents or symlink target.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Tree {
    pub files: BTreeMap<String, String>,
    pub links: BTreeMap<String, String>,
    /// Block devices written so far: kernel name → (sysfs dir, `MAJ:MIN`).
    pub block: BTreeMap<String, (String, String)>,
    /// Next free minor number per major.
    minors: BTreeMap<u32, u32>,
}

impl Tree {
    pub(crate) fn file(&mut self, path: &str, text: impl Into<String>) {
        self.files.insert(path.to_string(), text.into());
    }
    /// A kernel-style relative symlink at `path` to the root-relative `target`.
    pub(crate) fn link(&mut self, path: &str, target: &str) {
        self.links.insert(path.to_string(), relative(path, target));
    }

    /// The next device number of `major` (`259:0`, `259:1`, ...).
    pub(crate) fn devnum(&mut self, major: u32) -> String {
        let minor = self.minors.entry(major).or_insert(0);
        *minor += 1;
        format!("{major}:{}", *minor - 1)
    }

    /// Registers the block device whose directory is `dir` the way the
    /// kernel does: its `dev` file and the `sys/block`, `sys/class/block`
    /// and `sys/dev/block` links (a partition has no `sys/block` link; a
    /// hidden multipath path device has no device number of its own).
    pub(crate) fn block_device(&mut self, dir: &str, major: u32, partition: bool, hidden: bool) {
        let name = dir.rsplit('/').next().expect("a name").to_string();
        let dev = if hidden {
            String::new()
        } else {
            let dev = self.devnum(major);
            self.file(&format!("{dir}/dev"), format!("{dev}\n"));
            self.link(&format!("sys/dev/block/{dev}"), dir);
            dev
        };
        if !partition {
            self.link(&format!("sys/block/{name}"), dir);
        }
        self.link(&format!("sys/class/block/{name}"), dir);
        self.block.insert(name, (dir.to_string(), dev));
    }

    /// Registers the NVMe generic character device whose directory is
    /// `dir`: its `dev` file, `subsystem` link and `sys/dev/char` link.
    pub(crate) fn generic_device(&mut self, dir: &str) {
        let name = dir.rsplit('/').next().expect("a name").to_string();
        let dev = self.devnum(242);
        self.file(&format!("{dir}/dev"), format!("{dev}\n"));
        self.link(&format!("{dir}/subsystem"), "sys/class/nvme-generic");
        self.link(&format!("sys/dev/char/{dev}"), dir);
        self.link(&format!("sys/class/nvme-generic/{name}"), dir);
    }

    /// Writes the tree under `dir` (which must not exist yet or be empty).
    pub fn write(&self, dir: &Path) -> std::io::Result<()> {
        for (path, text) in &self.files {
            let p = dir.join(path);
            std::fs::create_dir_all(p.parent().expect("has parent"))?;
            std::fs::write(p, text)?;
        }
        for (path, target) in &self.links {
            let p = dir.join(path);
            std::fs::create_dir_all(p.parent().expect("has parent"))?;
            std::os::unix::fs::symlink(target, p)?;
        }
        Ok(())
    }

    /// Reads a tree written by [`Tree::write`] (or committed).
    pub fn read(dir: &Path) -> std::io::Result<Tree> {
        let mut tree = Tree::default();
        read_into(dir, "", &mut tree)?;
        Ok(tree)
    }
}

fn read_into(dir: &Path, rel: &str, tree: &mut Tree) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir.join(rel))? {
        let entry = entry?;
        let name = entry.file_name().into_string().expect("UTF-8 names");
        let path = if rel.is_empty() {
            name
        } else {
            format!("{rel}/{name}")
        };
        let kind = entry.file_type()?;
        if kind.is_symlink() {
            let target = std::fs::read_link(dir.join(&path))?;
            tree.links
                .insert(path, target.to_string_lossy().into_owned());
        } else if kind.is_dir() {
            read_into(dir, &path, tree)?;
        } else {
            tree.files
                .insert(path.clone(), std::fs::read_to_string(dir.join(&path))?);
        }
    }
    Ok(())
}

/// The relative target from the directory of `link` to `target`.
fn relative(link: &str, target: &str) -> String {
    let from: Vec<&str> = link.split('/').collect();
    let from = &from[..from.len() - 1];
    let to: Vec<&str> = target.split('/').collect();
    let common = from.iter().zip(&to).take_while(|(a, b)| a == b).count();
    let mut parts: Vec<&str> = vec![".."; from.len() - common];
    parts.extend(&to[common..]);
    parts.join("/")
}

/// Compact kernel list (`0-3,8`).
pub fn list(items: &[u32]) -> String {
    let mut v = items.to_vec();
    v.sort_unstable();
    v.dedup();
    let mut out = Vec::new();
    let mut i = 0;
    while i < v.len() {
        let start = v[i];
        while i + 1 < v.len() && v[i + 1] == v[i] + 1 {
            i += 1;
        }
        out.push(if v[i] == start {
            start.to_string()
        } else {
            format!("{start}-{}", v[i])
        });
        i += 1;
    }
    out.join(",")
}

/// `mq/N/cpu_list` style: `0, 1, 48`.
fn mq_list(items: &[u32]) -> String {
    items
        .iter()
        .map(u32::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

impl Machine {
    /// The whole tree.
    pub fn tree(&self) -> Tree {
        let mut t = Tree::default();
        if !self.nodes.is_empty() {
            self.write_nodes(&mut t);
        }
        if let Some(kib) = self.quirks.meminfo_kib {
            t.file(
                "proc/meminfo",
                format!(
                    "MemTotal:       {kib:>10} kB\nMemFree:        {:>10} kB\n",
                    kib / 2
                ),
            );
        }
        self.write_cpus(&mut t);
        self.write_interrupts(&mut t);
        let current = self.quirks.nvme == NvmeLayout::Subsystems;
        if let Some(mp) = self.multipath.filter(|_| current) {
            t.file(
                "sys/module/nvme/parameters/poll_queues",
                format!("{}\n", self.poll_queues),
            );
            t.file(
                "sys/module/nvme_core/parameters/multipath",
                if mp { "Y\n" } else { "N\n" },
            );
            t.file(
                "sys/module/nvme_core/parameters/iopolicy",
                format!("{}\n", self.iopolicy),
            );
        }
        if current {
            let ctrl_dirs: BTreeMap<u32, String> = self
                .controllers
                .iter()
                .map(|c| (c.instance, self.write_controller(&mut t, c)))
                .collect();
            for s in &self.subsystems {
                self.write_subsystem(&mut t, s, &ctrl_dirs);
            }
        } else {
            self.write_legacy_nvme(&mut t);
        }
        if let Some(layer) = &self.block {
            layer.write(&mut t);
        }
        t
    }

    pub(crate) fn ctrl(&self, instance: u32) -> &CtrlSpec {
        self.controllers
            .iter()
            .find(|c| c.instance == instance)
            .expect("controller in spec")
    }
}

pub(crate) fn scheduler_line(active: &str) -> String {
    ["none", "mq-deadline", "kyber", "bfq"]
        .iter()
        .map(|s| {
            if *s == active {
                format!("[{s}]")
            } else {
                s.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

impl Machine {
    fn write_controller(&self, t: &mut Tree, c: &CtrlSpec) -> String {
        let nqn = &self
            .subsystems
            .iter()
            .find(|s| s.instance == c.subsystem)
            .expect("subsystem")
            .nqn;
        let (dir, transport, address) = match &c.attach {
            Attach::Pci { bdf, .. } => {
                let pci = self.pci_function(t, &c.attach);
                let dir = format!("{pci}/nvme/nvme{}", c.instance);
                t.link(&format!("{dir}/device"), &pci);
                (dir, "pcie".to_string(), bdf.clone())
            }
            Attach::Fabric { transport, address } => {
                let dir = format!("sys/devices/virtual/nvme-fabrics/ctl/nvme{}", c.instance);
                t.link(
                    &format!("{dir}/device"),
                    "sys/devices/virtual/nvme-fabrics/ctl",
                );
                (dir, transport.clone(), address.clone())
            }
        };
        for (attr, value) in [
            ("transport", transport),
            ("address", address),
            ("model", c.model.clone()),
            ("serial", c.serial.clone()),
            ("firmware_rev", c.firmware.clone()),
            ("state", "live".to_string()),
            ("cntlid", c.cntlid.to_string()),
            ("numa_node", c.numa_node.to_string()),
            ("subsysnqn", nqn.clone()),
        ] {
            t.file(&format!("{dir}/{attr}"), format!("{value}\n"));
        }
        t.link(&format!("sys/class/nvme/nvme{}", c.instance), &dir);
        dir
    }

    /// The PCI function directory of a PCIe controller, with its
    /// `numa_node` and local CPUs (list, or mask on old kernels).
    pub(crate) fn pci_function(&self, t: &mut Tree, attach: &Attach) -> String {
        let Attach::Pci {
            host,
            bridges,
            bdf,
            local_cpus,
            numa_node,
        } = attach
        else {
            panic!("not a PCIe controller: {attach:?}");
        };
        let mut pci = format!("sys/devices/{host}");
        for b in bridges {
            pci = format!("{pci}/{b}");
        }
        pci = format!("{pci}/{bdf}");
        t.file(&format!("{pci}/numa_node"), format!("{numa_node}\n"));
        self.cpu_set(
            t,
            &format!("{pci}/local_cpulist"),
            &format!("{pci}/local_cpus"),
            local_cpus,
        );
        pci
    }

    fn write_subsystem(&self, t: &mut Tree, s: &SubsysSpec, ctrl_dirs: &BTreeMap<u32, String>) {
        let dir = format!(
            "sys/devices/virtual/nvme-subsystem/nvme-subsys{}",
            s.instance
        );
        t.file(&format!("{dir}/subsysnqn"), format!("{}\n", s.nqn));
        t.file(&format!("{dir}/iopolicy"), format!("{}\n", s.iopolicy));
        t.link(
            &format!("sys/class/nvme-subsystem/nvme-subsys{}", s.instance),
            &dir,
        );
        for c in self
            .controllers
            .iter()
            .filter(|c| c.subsystem == s.instance)
        {
            t.link(
                &format!("{dir}/nvme{}", c.instance),
                &ctrl_dirs[&c.instance],
            );
        }
        for ns in &s.namespaces {
            if self.multipath == Some(true) {
                self.write_head(t, &dir, s.instance, ns, ctrl_dirs);
            } else {
                for (x, _, _) in &ns.paths {
                    let ctrl_dir = &ctrl_dirs[x];
                    let name = format!("nvme{x}n{}", ns.head_instance);
                    self.write_disk(t, &format!("{ctrl_dir}/{name}"), ns, Some(self.ctrl(*x)));
                    t.generic_device(&format!("{ctrl_dir}/ng{x}n{}", ns.head_instance));
                }
            }
        }
    }

    fn write_head(
        &self,
        t: &mut Tree,
        dir: &str,
        sub: u32,
        ns: &NsSpec,
        ctrl_dirs: &BTreeMap<u32, String>,
    ) {
        let head = format!("{dir}/nvme{sub}n{}", ns.head_instance);
        self.write_disk(t, &head, ns, None);
        t.generic_device(&format!("{dir}/ng{sub}n{}", ns.head_instance));
        for (x, ana, numa_nodes) in &ns.paths {
            let name = format!("nvme{sub}c{x}n{}", ns.head_instance);
            let path_dir = format!("{}/{name}", ctrl_dirs[x]);
            self.write_disk(t, &path_dir, ns, Some(self.ctrl(*x)));
            t.file(&format!("{path_dir}/ana_state"), format!("{ana}\n"));
            if let Some(nodes) = numa_nodes {
                t.file(&format!("{path_dir}/numa_nodes"), format!("{nodes}\n"));
            }
        }
    }

    /// A gendisk: a request-based one (with `mq/`) when `ctrl` is given,
    /// else a bio-based multipath head.
    pub(crate) fn write_disk(&self, t: &mut Tree, dir: &str, ns: &NsSpec, ctrl: Option<&CtrlSpec>) {
        let hidden = self.multipath == Some(true) && ctrl.is_some();
        t.block_device(dir, 259, false, hidden);
        t.file(&format!("{dir}/size"), format!("{}\n", ns.size_sectors));
        t.file(&format!("{dir}/nsid"), format!("{}\n", ns.nsid));
        let q = format!("{dir}/queue");
        let polled = self.poll_queues > 0 && self.controllers.iter().any(|c| c.poll_queues > 0);
        let (scheduler, nr_requests) = match ctrl {
            Some(_) => (scheduler_line(&ns.scheduler), "1023"),
            None => ("none".to_string(), "128"),
        };
        for (attr, value) in [
            ("logical_block_size", ns.lba_bytes.to_string()),
            ("scheduler", scheduler),
            ("nr_requests", nr_requests.to_string()),
            ("io_poll", if polled { "1" } else { "0" }.to_string()),
            ("rq_affinity", "1".to_string()),
            ("nomerges", "0".to_string()),
            ("iostats", "1".to_string()),
            ("write_cache", "write through".to_string()),
            ("max_hw_sectors_kb", "2048".to_string()),
            ("rotational", "0".to_string()),
        ] {
            t.file(&format!("{q}/{attr}"), format!("{value}\n"));
        }
        let Some(c) = ctrl else {
            return;
        };
        for (k, cpus) in c.queue_cpus.iter().enumerate() {
            t.file(
                &format!("{dir}/mq/{k}/cpu_list"),
                format!("{}\n", mq_list(cpus)),
            );
        }
        let online: Vec<u32> = self
            .cpus
            .iter()
            .filter(|c| c.online)
            .map(|c| c.id)
            .collect();
        for p in 0..c.poll_queues {
            let cpus: Vec<u32> = online
                .iter()
                .copied()
                .enumerate()
                .filter(|(i, _)| *i as u32 % c.poll_queues == p)
                .map(|(_, c)| c)
                .collect();
            let k = c.queue_cpus.len() as u32 + p;
            t.file(
                &format!("{dir}/mq/{k}/cpu_list"),
                format!("{}\n", mq_list(&cpus)),
            );
        }
    }
}
