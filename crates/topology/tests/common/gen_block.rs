//! The block layer above the NVMe namespaces, as the kernel lays it out in
//! sysfs: partitions (children of their disk with a `partition` file),
//! device-mapper, md and loop devices under `devices/virtual/block` with
//! `slaves/` links down and `holders/` links up, plus the mount table and
//! the host files of the environment record (and `/dev/null`, a character
//! device that is not NVMe).
#![allow(dead_code)]

use super::gen::Tree;

/// What a virtual block device is.
#[derive(Debug, Clone)]
pub enum VirtualKind {
    /// Device-mapper with its `dm/name` (major 253).
    Dm(String),
    /// md RAID with its `md/level` (major 9).
    Md(String),
    /// A loop device over a file (major 7).
    Loop(String),
}

/// A virtual block device over `slaves` (kernel names written before it).
#[derive(Debug, Clone)]
pub struct VirtualDisk {
    pub name: String,
    pub kind: VirtualKind,
    pub slaves: Vec<String>,
    pub size_sectors: u64,
}

/// Partitions, virtual devices, mounts and host files of a machine.
#[derive(Debug, Clone, Default)]
pub struct BlockLayer {
    /// (disk kernel name, partition sizes in sectors): `nvme0n1p1`, ...
    pub partitions: Vec<(String, Vec<u64>)>,
    pub virtual_disks: Vec<VirtualDisk>,
    /// (device kernel name, mount point, filesystem type).
    pub mounts: Vec<(String, String, String)>,
    pub hostname: String,
    pub kernel: String,
    pub cpu_model: String,
}

/// Sectors a partition table leaves before the first partition.
const FIRST_SECTOR: u64 = 2048;

impl BlockLayer {
    pub fn write(&self, t: &mut Tree) {
        for (disk, sizes) in &self.partitions {
            let (dir, _) = t.block[disk].clone();
            let mut start = FIRST_SECTOR;
            for (i, size) in sizes.iter().enumerate() {
                let number = i + 1;
                let sep = if disk.ends_with(|c: char| c.is_ascii_digit()) {
                    "p"
                } else {
                    ""
                };
                let pdir = format!("{dir}/{disk}{sep}{number}");
                t.block_device(&pdir, 259, true, false);
                t.file(&format!("{pdir}/partition"), format!("{number}\n"));
                t.file(&format!("{pdir}/start"), format!("{start}\n"));
                t.file(&format!("{pdir}/size"), format!("{size}\n"));
                start += size;
            }
        }
        for v in &self.virtual_disks {
            write_virtual(t, v);
        }
        self.write_mounts(t);
        // A character device of another class (`/dev/null`).
        let null = "sys/devices/virtual/mem/null";
        t.file(&format!("{null}/dev"), "1:3\n");
        t.link(&format!("{null}/subsystem"), "sys/class/mem");
        t.link("sys/class/mem/null", null);
        t.link("sys/dev/char/1:3", null);
        t.file("proc/sys/kernel/hostname", format!("{}\n", self.hostname));
        t.file("proc/sys/kernel/osrelease", format!("{}\n", self.kernel));
        let mut cpuinfo = String::new();
        for cpu in 0..2 {
            cpuinfo.push_str(&format!(
                "processor\t: {cpu}\nvendor_id\t: GenuineIntel\nmodel name\t: {}\nflags\t\t: fpu sse2\n\n",
                self.cpu_model
            ));
        }
        t.file("proc/cpuinfo", cpuinfo);
    }

    fn write_mounts(&self, t: &mut Tree) {
        let mut text = String::new();
        let mut line = |id: u32, dev: &str, mp: &str, fs: &str, source: &str| {
            text.push_str(&format!(
                "{id} 1 {dev} / {mp} rw,relatime shared:{id} - {fs} {source} rw\n"
            ));
        };
        let mut id = 21;
        for (name, mp, fs) in &self.mounts {
            let dev = t.block[name].1.clone();
            line(id, &dev, mp, fs, &format!("/dev/{name}"));
            id += 1;
        }
        line(id, "0:22", "/proc", "proc", "proc");
        line(id + 1, "0:23", "/sys", "sysfs", "sysfs");
        line(id + 2, "0:24", "/tmp", "tmpfs", "tmpfs");
        t.file("proc/self/mountinfo", text);
    }
}

fn write_virtual(t: &mut Tree, v: &VirtualDisk) {
    let dir = format!("sys/devices/virtual/block/{}", v.name);
    let major = match v.kind {
        VirtualKind::Dm(_) => 253,
        VirtualKind::Md(_) => 9,
        VirtualKind::Loop(_) => 7,
    };
    t.block_device(&dir, major, false, false);
    t.file(&format!("{dir}/size"), format!("{}\n", v.size_sectors));
    match &v.kind {
        VirtualKind::Dm(name) => {
            t.file(&format!("{dir}/dm/name"), format!("{name}\n"));
            t.file(
                &format!("{dir}/dm/uuid"),
                format!("LVM-numiofixture{}\n", v.name),
            );
        }
        VirtualKind::Md(level) => t.file(&format!("{dir}/md/level"), format!("{level}\n")),
        VirtualKind::Loop(file) => t.file(&format!("{dir}/loop/backing_file"), format!("{file}\n")),
    }
    // Bio-based: no scheduler, no poll queues.
    for (attr, value) in [
        ("logical_block_size", "512"),
        ("scheduler", "none"),
        ("io_poll", "0"),
        ("max_hw_sectors_kb", "2048"),
        ("rotational", "0"),
    ] {
        t.file(&format!("{dir}/queue/{attr}"), format!("{value}\n"));
    }
    for slave in &v.slaves {
        let (sdir, _) = t.block[slave].clone();
        t.link(&format!("{dir}/slaves/{slave}"), &sdir);
        t.link(&format!("{sdir}/holders/{}", v.name), &dir);
    }
}
