//! One block device's facts (`/sys/dev/block/MAJ:MIN` resolved).

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::{base_name, reader, DevNum};
use crate::error::TopologyError;
use crate::parse::{nvme_numbers, parse_bool, parse_num, parse_scheduler};
use crate::reader::Reader;
use crate::relpath::{join, parent};

/// Sector size of the block layer's `size` attributes.
const SECTOR_BYTES: u64 = 512;

/// What the kernel says about one block device.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BlockDevice {
    /// Kernel name (`nvme0n1`, `nvme0n1p2`, `dm-0`, `md0`, `loop0`).
    pub name: String,
    /// Device number, from its `dev` file.
    pub dev: Option<DevNum>,
    /// Its sysfs directory, relative to the root
    /// (`sys/devices/pci0000:00/…/nvme/nvme0/nvme0n1`).
    pub sysfs_dir: String,
    /// Size in bytes.
    pub size_bytes: Option<u64>,
    /// Set for a partition: its number and disk.
    pub partition: Option<PartitionOf>,
    /// Queue settings (a partition reports its disk's: it has none of its own).
    pub queue: QueueSettings,
    /// Partitions of a disk, by number.
    pub partitions: Vec<Partition>,
    /// Devices stacked on this one (`holders/`: dm, md, bcache), sorted.
    pub holders: Vec<String>,
    /// Devices this one is stacked on (`slaves/` of a dm or md device), sorted.
    pub slaves: Vec<String>,
    /// What kind of device it (or, for a partition, its disk) is.
    pub kind: BlockKind,
}

/// The disk a partition belongs to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PartitionOf {
    /// The disk's kernel name (`nvme0n1`).
    pub disk: String,
    /// The partition number (`partition`).
    pub number: u32,
}

/// One partition of a disk.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Partition {
    /// Kernel name (`nvme0n1p1`).
    pub name: String,
    /// Device number.
    pub dev: Option<DevNum>,
    /// Partition number.
    pub number: Option<u32>,
}

/// Block queue settings (`queue/`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct QueueSettings {
    /// Active I/O scheduler (the bracketed one).
    pub scheduler: Option<String>,
    /// `io_poll`: whether the device has poll queues.
    pub io_poll: Option<bool>,
    /// `logical_block_size`, bytes.
    pub logical_block_size: Option<u32>,
    /// `max_hw_sectors_kb`: the largest transfer of one request, KiB.
    pub max_hw_sectors_kb: Option<u64>,
    /// `nr_requests`.
    pub nr_requests: Option<u32>,
    /// `rotational`.
    pub rotational: Option<bool>,
}

/// The kind of a block device, from its name and sysfs directory.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BlockKind {
    /// An NVMe namespace as `/dev` has it (`nvme0n1`: a multipath head or a
    /// namespace without multipath).
    Nvme,
    /// A hidden NVMe multipath path device (`nvme0c1n1`).
    NvmePath,
    /// A device-mapper device (`dm-0`), with its `dm/name`.
    DeviceMapper {
        /// The dm name (`vg0-data`), when readable.
        name: Option<String>,
    },
    /// An md RAID device (`md0`), with its `md/level`.
    Md {
        /// The RAID level (`raid1`), when readable.
        level: Option<String>,
    },
    /// A loop device, with its `loop/backing_file`.
    Loop {
        /// The file behind it, when attached.
        backing_file: Option<String>,
    },
    /// Anything else (SCSI, virtio, zram, ...).
    Other,
}

impl BlockDevice {
    /// The disk: the device itself, or a partition's disk.
    pub fn disk(&self) -> &str {
        self.partition.as_ref().map_or(&self.name, |p| &p.disk)
    }

    /// How the device is named in messages: `nvme0n1p2 (partition 2 of
    /// nvme0n1)`, `dm-0 (device-mapper vg0-data)`, `md0 (md raid1)`,
    /// `loop0 (loop over /srv/disk.img)`, or the bare name.
    pub fn describe(&self) -> String {
        let what = match (&self.partition, &self.kind) {
            (Some(p), _) => format!("partition {} of {}", p.number, p.disk),
            (None, BlockKind::DeviceMapper { name }) => {
                format!("device-mapper {}", name.as_deref().unwrap_or("?"))
            }
            (None, BlockKind::Md { level }) => format!("md {}", level.as_deref().unwrap_or("?")),
            (None, BlockKind::Loop { backing_file }) => match backing_file {
                Some(f) => format!("loop over {f}"),
                None => "loop, detached".to_string(),
            },
            (None, BlockKind::NvmePath) => "NVMe multipath path device".to_string(),
            (None, BlockKind::Nvme | BlockKind::Other) => return self.name.clone(),
        };
        format!("{} ({what})", self.name)
    }
}

/// The block device `dev` under `root`.
///
/// Errors: `root` missing, or no `sys/dev/block/MAJ:MIN` there (not a block
/// device of that machine).
pub fn block_device(root: &Path, dev: DevNum) -> Result<BlockDevice, TopologyError> {
    let mut r = reader(root)?;
    let dir = resolve_block(&mut r, dev)?;
    Ok(read_block(&mut r, &dir))
}

/// The block device named `name` (`nvme0n1`, `nvme0n1p2`) under `root`
/// (`sys/class/block/NAME`); `None` when there is none.
pub fn block_by_name(root: &Path, name: &str) -> Result<Option<BlockDevice>, TopologyError> {
    if name.is_empty() || name.contains('/') || name.starts_with('.') {
        return Ok(None);
    }
    let mut r = reader(root)?;
    let link = format!("sys/class/block/{name}");
    Ok(r.resolve(&link)
        .filter(|dir| r.exists(dir))
        .map(|dir| read_block(&mut r, &dir)))
}

/// The sysfs directory of block device `dev`.
pub(crate) fn resolve_block(r: &mut Reader, dev: DevNum) -> Result<String, TopologyError> {
    let link = format!("sys/dev/block/{dev}");
    r.resolve(&link)
        .filter(|dir| r.exists(dir))
        .ok_or_else(|| TopologyError::NoDevice {
            kind: "block",
            dev: dev.to_string(),
            path: r.abs(&link),
        })
}

/// The facts of the block device whose sysfs directory is `dir`.
pub(crate) fn read_block(r: &mut Reader, dir: &str) -> BlockDevice {
    let name = base_name(dir).to_string();
    let number = r.parse(&join(dir, "partition"), parse_num::<u32>);
    let partition = number.map(|number| PartitionOf {
        disk: base_name(parent(dir)).to_string(),
        number,
    });
    let disk_dir = if partition.is_some() {
        parent(dir)
    } else {
        dir
    };
    let partitions = if partition.is_some() {
        Vec::new()
    } else {
        read_partitions(r, dir, &name)
    };
    let mut names = |sub: &str| {
        let mut v = r.list(&join(dir, sub)).unwrap_or_default();
        v.sort();
        v
    };
    let (holders, slaves) = (names("holders"), names("slaves"));
    BlockDevice {
        dev: r.parse(&join(dir, "dev"), DevNum::parse),
        sysfs_dir: dir.to_string(),
        size_bytes: r
            .parse(&join(dir, "size"), parse_num::<u64>)
            .map(|s| s.saturating_mul(SECTOR_BYTES)),
        queue: read_queue(r, &join(disk_dir, "queue")),
        kind: kind_of(r, disk_dir),
        name,
        partition,
        partitions,
        holders,
        slaves,
    }
}

fn read_partitions(r: &mut Reader, dir: &str, disk: &str) -> Vec<Partition> {
    let names: Vec<String> = r
        .list(dir)
        .unwrap_or_default()
        .into_iter()
        .filter(|e| e.starts_with(disk) && r.exists(&join(&join(dir, e), "partition")))
        .collect();
    let mut parts: Vec<Partition> = names
        .into_iter()
        .map(|name| {
            let pdir = join(dir, &name);
            Partition {
                dev: r.parse(&join(&pdir, "dev"), DevNum::parse),
                number: r.parse(&join(&pdir, "partition"), parse_num::<u32>),
                name,
            }
        })
        .collect();
    parts.sort_by_key(|p| (p.number, p.name.clone()));
    parts
}

fn read_queue(r: &mut Reader, q: &str) -> QueueSettings {
    QueueSettings {
        scheduler: r.parse(&join(q, "scheduler"), parse_scheduler),
        io_poll: r.parse(&join(q, "io_poll"), parse_bool),
        logical_block_size: r.parse(&join(q, "logical_block_size"), parse_num::<u32>),
        max_hw_sectors_kb: r.parse(&join(q, "max_hw_sectors_kb"), parse_num::<u64>),
        nr_requests: r.parse(&join(q, "nr_requests"), parse_num::<u32>),
        rotational: r.parse(&join(q, "rotational"), parse_bool),
    }
}

fn kind_of(r: &mut Reader, disk_dir: &str) -> BlockKind {
    let name = base_name(disk_dir);
    if nvme_numbers(name, "nvme", "n").is_some() {
        BlockKind::Nvme
    } else if nvme_numbers(name, "nvme", "cn").is_some() {
        BlockKind::NvmePath
    } else if r.exists(&join(disk_dir, "dm")) {
        BlockKind::DeviceMapper {
            name: r.read_trimmed(&join(disk_dir, "dm/name")),
        }
    } else if r.exists(&join(disk_dir, "md")) {
        BlockKind::Md {
            level: r.read_trimmed(&join(disk_dir, "md/level")),
        }
    } else if r.exists(&join(disk_dir, "loop")) {
        BlockKind::Loop {
            backing_file: r.read_trimmed(&join(disk_dir, "loop/backing_file")),
        }
    } else {
        BlockKind::Other
    }
}
