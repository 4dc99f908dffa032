//! Targets: what a path is ([`TargetKind`]: a block device, a file, an NVMe
//! generic character device `/dev/ngXnY`, or an NVMe/TCP namespace), its
//! size and logical block size, whether a workload fits it, and whether a
//! backend can drive it ([`check`]).
//!
//! The facts come from two places: the path itself (`stat`, and for a
//! device its ioctls through `sysapi`) and `topology`'s device queries over
//! the sysfs root [`SYS_ROOT`] (queue settings, partitions, holders; the
//! device a file's filesystem sits on). A generic device is described by
//! its namespace's block device (the sibling under the same controller or
//! subsystem whose `nsid` is the one `NVME_IOCTL_ID` returns): size, LBA
//! size and largest transfer come from there, and so does write safety. The
//! checks are functions of a [`TargetInfo`], tested on fixture values.

use std::fs::File;
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::Path;

use results::TargetEnvironment;
use topology::device::{BlockDevice, DevNum, QueueSettings};
use topology::TopologyError;

use crate::backend::rdma::{self, NvmeRdma};
use crate::backend::tcp::{self, NvmeTcp, TcpOptions};
use crate::backend::vfio::target::{self as pci, PciNamespace};
use crate::backend::NvmeNamespace;
use crate::error::EngineError;

pub mod check;

pub use crate::error::WorkloadError;
pub use check::{
    check_backend, check_pollable, check_write_safety, validate, Region, MAX_BS_BYTES, MAX_IODEPTH,
    NVME_MAX_BLOCKS_PER_COMMAND,
};

/// The sysfs/procfs root the engine asks `topology` about: this machine's.
pub const SYS_ROOT: &str = "/";

/// What the engine knows about one target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TargetInfo {
    /// Path as given.
    pub path: String,
    /// What the target is, with the facts of that kind.
    pub kind: TargetKind,
    /// Size in bytes.
    pub size_bytes: u64,
    /// Logical block size (512 for files; a namespace's LBA size for NVMe).
    pub logical_block_size_bytes: u32,
}

/// What a target is, each kind with the facts only it has: a worker can
/// not be handed a namespace id for a file, or a block device's number for
/// an NVMe/TCP connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TargetKind {
    /// A regular file.
    File {
        /// The block device its filesystem sits on (its queue settings
        /// decide whether IOPOLL can work); `None` for a filesystem without
        /// one (tmpfs, btrfs) or where sysfs does not say.
        filesystem_device: Option<BlockDevice>,
    },
    /// A block device.
    BlockDevice {
        /// Its device number (`st_rdev`).
        dev: DevNum,
        /// What `topology` knows about it (partitions, holders, queue
        /// settings); `None` where sysfs does not say.
        device: Option<BlockDevice>,
    },
    /// An NVMe generic character device (`/dev/ngXnY`, the passthru backend).
    NvmeGeneric(NvmeGeneric),
    /// An NVMe/TCP namespace (`nvme-tcp://...`, the tcp backend).
    NvmeTcp(NvmeTcp),
    /// An NVMe/RDMA namespace (`nvme-rdma://...`, the rdma backend).
    NvmeRdma(NvmeRdma),
    /// A namespace of a PCI NVMe controller bound to vfio-pci
    /// (`pci:DDDD:BB:SS.F[/NSID]`, the vfio backend), its controller open.
    Pci(PciNamespace),
}

/// What the engine knows about an NVMe generic character device.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NvmeGeneric {
    /// Namespace id (`NVME_IOCTL_ID`).
    pub nsid: u32,
    /// The namespace's block device, e.g. `/dev/nvme0n1` (writes through the
    /// generic device change its data, so write safety looks there).
    pub block_device: String,
    /// Largest transfer of one command (`queue/max_hw_sectors_kb`).
    pub max_transfer_bytes: u64,
    /// What `topology` knows about that block device: its partitions,
    /// holders and queue settings.
    pub namespace: BlockDevice,
}

impl TargetKind {
    /// The name the environment record gives this kind.
    pub fn name(&self) -> &'static str {
        match self {
            TargetKind::File { .. } => "file",
            TargetKind::BlockDevice { .. } => "block_device",
            TargetKind::NvmeGeneric(_) => "nvme_generic",
            TargetKind::NvmeTcp(_) => "nvme_tcp",
            TargetKind::Pci(_) => "nvme_pci",
            TargetKind::NvmeRdma(_) => "nvme_rdma",
        }
    }

    /// Whether I/O to it bypasses the page cache whatever O_DIRECT says:
    /// passthrough and NVMe/TCP commands never touch it.
    pub fn bypasses_page_cache(&self) -> bool {
        matches!(
            self,
            TargetKind::NvmeGeneric(_)
                | TargetKind::NvmeTcp(_)
                | TargetKind::NvmeRdma(_)
                | TargetKind::Pci(_)
        )
    }
}

impl TargetInfo {
    /// A regular file of `size_bytes` (512-byte blocks, no device facts).
    pub fn file(path: &str, size_bytes: u64) -> TargetInfo {
        TargetInfo {
            path: path.to_string(),
            kind: TargetKind::File {
                filesystem_device: None,
            },
            size_bytes,
            logical_block_size_bytes: 512,
        }
    }

    /// Queue settings of the device the target's I/O goes to: a block
    /// device's own, a generic device's namespace's; `None` for files
    /// (see [`check_pollable`] for their filesystem's device), NVMe/TCP,
    /// and where sysfs does not say.
    pub fn queue(&self) -> Option<&QueueSettings> {
        match &self.kind {
            TargetKind::BlockDevice { device, .. } => device.as_ref().map(|d| &d.queue),
            TargetKind::NvmeGeneric(g) => Some(&g.namespace.queue),
            TargetKind::File { .. }
            | TargetKind::NvmeTcp(_)
            | TargetKind::NvmeRdma(_)
            | TargetKind::Pci(_) => None,
        }
    }

    /// Active scheduler of the device, when known.
    pub fn scheduler(&self) -> Option<&str> {
        self.queue().and_then(|q| q.scheduler.as_deref())
    }

    /// `queue/io_poll` of the device, when known.
    pub fn io_poll(&self) -> Option<bool> {
        self.queue().and_then(|q| q.io_poll)
    }

    /// The environment record of this target.
    pub fn environment(&self, node: Option<topology::NodeId>, direct: bool) -> TargetEnvironment {
        TargetEnvironment {
            path: self.path.clone(),
            kind: self.kind.name().into(),
            size_bytes: self.size_bytes,
            logical_block_size_bytes: self.logical_block_size_bytes,
            node,
            scheduler: self.scheduler().map(str::to_string),
            io_poll: self.io_poll(),
            direct: direct || self.kind.bypasses_page_cache(),
        }
    }

    /// The namespace a passthru backend sends its commands to.
    pub fn nvme_namespace(&self) -> Option<NvmeNamespace> {
        match &self.kind {
            TargetKind::NvmeGeneric(g) => Some(NvmeNamespace {
                nsid: g.nsid,
                lba_bytes: self.logical_block_size_bytes,
            }),
            _ => None,
        }
    }

    /// The NVMe/TCP namespace a tcp backend connects to.
    pub fn nvme_tcp(&self) -> Option<&NvmeTcp> {
        match &self.kind {
            TargetKind::NvmeTcp(t) => Some(t),
            _ => None,
        }
    }
}

/// Stats and measures a target (opens it read-only for block devices;
/// connects to an `nvme-tcp://` one with the default host NQN), with device
/// facts from this machine's sysfs.
pub fn inspect(path: &str) -> Result<TargetInfo, EngineError> {
    inspect_at(path, Path::new(SYS_ROOT))
}

/// [`inspect`] with device facts from the sysfs root `root`.
pub fn inspect_at(path: &str, root: &Path) -> Result<TargetInfo, EngineError> {
    if tcp::is_tcp_target(path) {
        return inspect_tcp(path, &TcpOptions::default());
    }
    if rdma::is_rdma_target(path) {
        return inspect_rdma(path, &TcpOptions::default());
    }
    if pci::is_pci_target(path) {
        let (ns, size_bytes, lba) =
            pci::inspect(path, root).map_err(|source| EngineError::Pci {
                path: path.to_string(),
                source: Box::new(source),
            })?;
        return Ok(TargetInfo {
            path: path.to_string(),
            kind: TargetKind::Pci(ns),
            size_bytes,
            logical_block_size_bytes: lba,
        });
    }
    let meta = std::fs::metadata(path).map_err(|source| EngineError::Open {
        path: path.to_string(),
        source,
    })?;
    if meta.file_type().is_block_device() {
        inspect_block(path, meta.rdev(), root)
    } else if meta.file_type().is_file() {
        let on = DevNum::from_dev_t(meta.dev());
        let filesystem_device = (!on.is_anonymous())
            .then(|| topology::device::block_device(root, on).ok())
            .flatten();
        Ok(TargetInfo {
            kind: TargetKind::File { filesystem_device },
            ..TargetInfo::file(path, meta.len())
        })
    } else if meta.file_type().is_char_device() {
        inspect_nvme_generic(path, meta.rdev(), root)
    } else {
        Err(EngineError::Workload {
            path: path.to_string(),
            reason:
                "not a block device or regular file; give a device such as /dev/nvme0n1 or a file"
                    .into(),
        })
    }
}

/// Connects to an NVMe/TCP target (`nvme-tcp://HOST[:PORT]/SUBNQN[/NSID]`)
/// and reads its namespace's size and LBA size and the controller's limits.
pub fn inspect_tcp(path: &str, opts: &TcpOptions) -> Result<TargetInfo, EngineError> {
    let (t, size_bytes, lba_bytes) =
        tcp::inspect(path, opts).map_err(|source| EngineError::Tcp {
            path: path.to_string(),
            source: Box::new(source),
        })?;
    Ok(TargetInfo {
        path: path.to_string(),
        kind: TargetKind::NvmeTcp(t),
        size_bytes,
        logical_block_size_bytes: lba_bytes,
    })
}

/// Connects to an NVMe/RDMA target (`nvme-rdma://HOST[:PORT]/SUBNQN[/NSID]`)
/// and reads its namespace's size and LBA size and the controller's limits.
pub fn inspect_rdma(path: &str, opts: &TcpOptions) -> Result<TargetInfo, EngineError> {
    let (t, size_bytes, lba_bytes) =
        rdma::inspect(path, opts).map_err(|source| EngineError::Rdma {
            path: path.to_string(),
            source: Box::new(source),
        })?;
    Ok(TargetInfo {
        path: path.to_string(),
        kind: TargetKind::NvmeRdma(t),
        size_bytes,
        logical_block_size_bytes: lba_bytes,
    })
}

/// Namespace id, block device and geometry of an NVMe generic device. The
/// device's class is checked in sysfs before it is opened.
fn inspect_nvme_generic(path: &str, rdev: u64, root: &Path) -> Result<TargetInfo, EngineError> {
    let dev = DevNum::from_dev_t(rdev);
    let workload = |reason: String| EngineError::Workload {
        path: path.to_string(),
        reason,
    };
    let inspect_err = |source| EngineError::Inspect {
        path: path.to_string(),
        source,
    };
    let not_generic = || {
        workload("a character device that is not an NVMe generic device; give a block device, a file, or /dev/ngXnY with --backend passthru".into())
    };
    match topology::device::generic_name(root, dev) {
        Ok(_) => {}
        Err(TopologyError::NoDevice { .. } | TopologyError::NotNvmeGeneric { .. }) => {
            return Err(not_generic())
        }
        Err(e) => return Err(inspect_err(std::io::Error::other(e.to_string()))),
    }
    let f = File::open(path).map_err(|source| EngineError::Open {
        path: path.to_string(),
        source,
    })?;
    let nsid = sysapi::block::nvme_namespace_id(&f).map_err(inspect_err)?;
    let g = match topology::device::generic_device(root, dev, nsid) {
        Ok(g) => g,
        Err(TopologyError::NoNamespaceBlockDevice { nsid, dir }) => {
            return Err(workload(format!(
                "no block device of namespace {nsid} under {}; numio reads the namespace's size and LBA size there",
                dir.display()
            )))
        }
        Err(e) => return Err(inspect_err(std::io::Error::other(e.to_string()))),
    };
    let b = g.block;
    let (Some(size_bytes), Some(lbs)) = (b.size_bytes, b.queue.logical_block_size) else {
        return Err(inspect_err(std::io::Error::other(format!(
            "cannot read size and queue/logical_block_size of {}",
            root.join(&b.sysfs_dir).display()
        ))));
    };
    Ok(TargetInfo {
        path: path.to_string(),
        kind: TargetKind::NvmeGeneric(NvmeGeneric {
            nsid,
            block_device: format!("/dev/{}", b.name),
            max_transfer_bytes: b.queue.max_hw_sectors_kb.map_or(u64::MAX, |kb| kb << 10),
            namespace: b,
        }),
        size_bytes,
        logical_block_size_bytes: lbs.max(512),
    })
}

/// Size, block size and queue settings of a block device.
fn inspect_block(path: &str, rdev: u64, root: &Path) -> Result<TargetInfo, EngineError> {
    let f = File::open(path).map_err(|source| EngineError::Open {
        path: path.to_string(),
        source,
    })?;
    let inspect_err = |source| EngineError::Inspect {
        path: path.to_string(),
        source,
    };
    let size_bytes = sysapi::block::size_bytes(&f).map_err(inspect_err)?;
    let lbs = sysapi::block::logical_block_size(&f).map_err(inspect_err)?;
    let dev = DevNum::from_dev_t(rdev);
    Ok(TargetInfo {
        path: path.to_string(),
        kind: TargetKind::BlockDevice {
            dev,
            device: topology::device::block_device(root, dev).ok(),
        },
        size_bytes,
        logical_block_size_bytes: lbs.max(512),
    })
}

/// Opens a target for one worker. O_DIRECT applies to block devices and
/// files only: a character device refuses it (EINVAL), and passthrough
/// commands bypass the page cache anyway. O_NOATIME too, as fio does, so no
/// read pays for an access-time check; where it is not allowed (EPERM: the
/// caller neither owns the file nor has CAP_FOWNER) the target is opened
/// without it.
pub fn open(path: &str, write: bool, direct: bool) -> Result<File, EngineError> {
    let char_device = std::fs::metadata(path).is_ok_and(|m| m.file_type().is_char_device());
    let attempt = |noatime: bool| {
        let mut o = std::fs::OpenOptions::new();
        o.read(true).write(write);
        let mut flags = if noatime { libc::O_NOATIME } else { 0 };
        if direct && !char_device {
            flags |= libc::O_DIRECT;
        }
        o.custom_flags(flags);
        o.open(path)
    };
    attempt(true)
        .or_else(|e| match e.raw_os_error() {
            Some(libc::EPERM) => attempt(false),
            _ => Err(e),
        })
        .map_err(|source| EngineError::Open {
            path: path.to_string(),
            source,
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pci_error_does_not_repeat_the_address() {
        use crate::backend::vfio::{CtrlError, CtrlFailure};
        let e = EngineError::Pci {
            path: "pci:41:00.0".into(),
            source: Box::new(pci::PciError::Ctrl(CtrlError {
                addr: "0000:41:00.0".into(),
                failure: CtrlFailure::AdminTimeout {
                    opcode: 6,
                    timeout_s: 10,
                },
            })),
        };
        assert_eq!(
            e.to_string(),
            "pci:41:00.0: admin command 0x06 got no completion in 10 s"
        );
        let e = EngineError::Pci {
            path: "pci:0000:41:00.0".into(),
            source: Box::new(pci::PciError::NoFunction {
                addr: "0000:41:00.0".into(),
            }),
        };
        assert_eq!(
            e.to_string()
                .find("pci:0000:41:00.0: no PCI function 0000:41:00.0"),
            Some(0),
            "{e}"
        );
    }

    #[test]
    fn each_kind_records_its_name_and_its_devices_queue() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/fixtures/sysfs/2node-blockstack");
        let text = std::fs::read_to_string(root.join("sys/class/block/nvme0n1/dev")).unwrap();
        let d = topology::device::block_device(&root, DevNum::parse(&text).unwrap()).unwrap();
        let block = TargetInfo {
            kind: TargetKind::BlockDevice {
                dev: d.dev.unwrap(),
                device: Some(d.clone()),
            },
            ..TargetInfo::file("/dev/nvme0n1", 1 << 30)
        };
        let e = block.environment(None, false);
        assert_eq!(
            (e.kind.as_str(), e.io_poll, e.direct),
            ("block_device", Some(true), false)
        );
        assert_eq!(e.scheduler, d.queue.scheduler);
        // A file's environment names no queue, even with its device known.
        let file = TargetInfo {
            kind: TargetKind::File {
                filesystem_device: Some(d),
            },
            ..TargetInfo::file("/f", 1 << 20)
        };
        let e = file.environment(None, true);
        assert_eq!(
            (e.kind.as_str(), e.io_poll, e.scheduler),
            ("file", None, None)
        );
        assert!(file.nvme_namespace().is_none() && file.nvme_tcp().is_none());
    }
}
