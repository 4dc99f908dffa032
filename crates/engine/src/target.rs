//! Targets: what a path is (block device, file, or NVMe generic character
//! device `/dev/ngXnY`), its size and logical block size, whether a
//! workload fits it, and whether a backend can drive it.
//!
//! The facts come from two places: the path itself (`stat`, and for a
//! device its ioctls through `sysapi`) and `topology`'s device queries over
//! the sysfs root [`SYS_ROOT`] (queue settings, partitions, holders; the
//! device a file's filesystem sits on). A generic device is described by
//! its namespace's block device (the sibling under the same controller or
//! subsystem whose `nsid` is the one `NVME_IOCTL_ID` returns): size, LBA
//! size and largest transfer come from there, and so does write safety. The
//! checks ([`check_backend`], [`check_write_safety`], [`validate`]) are
//! functions of a [`TargetInfo`], tested on fixture values.

use std::fs::File;
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::Path;

use planner::{Distribution, Workload};
use topology::device::{BlockDevice, DevNum};
use topology::TopologyError;

use crate::backend::tcp::{self, NvmeTcp, TcpOptions};
use crate::backend::{BackendKind, NvmeNamespace};
use crate::error::EngineError;
use results::TargetEnvironment;

/// The sysfs/procfs root the engine asks `topology` about: this machine's.
pub const SYS_ROOT: &str = "/";
/// Most logical blocks one NVMe read or write moves (NLB is 16 bits, 0's based).
pub const NVME_MAX_BLOCKS_PER_COMMAND: u64 = 1 << 16;
/// Most I/Os a job may have in flight.
pub const MAX_IODEPTH: u32 = 4096;
/// Largest block size.
pub const MAX_BS_BYTES: u64 = 64 << 20;

/// What the engine knows about one target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TargetInfo {
    /// Path as given.
    pub path: String,
    /// A block device (else a regular file).
    pub block_device: bool,
    /// Size in bytes.
    pub size_bytes: u64,
    /// Logical block size (512 for files).
    pub logical_block_size_bytes: u32,
    /// Device number of a block device (`st_rdev`; a generic device's own).
    pub rdev: u64,
    /// What `topology` knows about the block device behind the target: the
    /// target itself, or a generic device's namespace block device (its
    /// partitions, holders and queue settings); `None` for files, NVMe/TCP,
    /// or where sysfs does not say.
    pub device: Option<BlockDevice>,
    /// For a regular file: the block device its filesystem sits on (its
    /// queue settings decide whether IOPOLL can work); `None` for a
    /// filesystem without one (tmpfs, btrfs) and for other targets.
    pub filesystem_device: Option<BlockDevice>,
    /// Active scheduler.
    pub scheduler: Option<String>,
    /// `queue/io_poll`.
    pub io_poll: Option<bool>,
    /// Set for an NVMe generic character device (`/dev/ngXnY`).
    pub nvme_generic: Option<NvmeGeneric>,
    /// Set for an NVMe/TCP namespace (`nvme-tcp://...`, the tcp backend).
    pub nvme_tcp: Option<NvmeTcp>,
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
}

impl TargetInfo {
    /// The environment record of this target.
    pub fn environment(&self, node: Option<topology::NodeId>, direct: bool) -> TargetEnvironment {
        TargetEnvironment {
            path: self.path.clone(),
            kind: if self.block_device {
                "block_device"
            } else if self.nvme_generic.is_some() {
                "nvme_generic"
            } else if self.nvme_tcp.is_some() {
                "nvme_tcp"
            } else {
                "file"
            }
            .into(),
            size_bytes: self.size_bytes,
            logical_block_size_bytes: self.logical_block_size_bytes,
            node,
            scheduler: self.scheduler.clone(),
            io_poll: self.io_poll,
            // Passthrough and NVMe/TCP commands never touch the page cache.
            direct: direct || self.nvme_generic.is_some() || self.nvme_tcp.is_some(),
        }
    }

    /// The namespace a passthru backend sends its commands to.
    pub fn nvme_namespace(&self) -> Option<NvmeNamespace> {
        self.nvme_generic.as_ref().map(|g| NvmeNamespace {
            nsid: g.nsid,
            lba_bytes: self.logical_block_size_bytes,
        })
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
            filesystem_device,
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

impl TargetInfo {
    /// A regular file of `size_bytes` (512-byte blocks, no device facts).
    pub fn file(path: &str, size_bytes: u64) -> TargetInfo {
        TargetInfo {
            path: path.to_string(),
            block_device: false,
            size_bytes,
            logical_block_size_bytes: 512,
            rdev: 0,
            device: None,
            filesystem_device: None,
            scheduler: None,
            io_poll: None,
            nvme_generic: None,
            nvme_tcp: None,
        }
    }
}

/// Connects to an NVMe/TCP target (`nvme-tcp://HOST[:PORT]/SUBNQN[/NSID]`)
/// and reads its namespace's size and LBA size and the controller's limits.
pub fn inspect_tcp(path: &str, opts: &TcpOptions) -> Result<TargetInfo, EngineError> {
    let (t, size_bytes, lba_bytes) =
        tcp::inspect(path, opts).map_err(|reason| EngineError::Workload {
            path: path.to_string(),
            reason,
        })?;
    Ok(TargetInfo {
        logical_block_size_bytes: lba_bytes,
        nvme_tcp: Some(t),
        ..TargetInfo::file(path, size_bytes)
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
        size_bytes,
        logical_block_size_bytes: lbs.max(512),
        rdev,
        scheduler: b.queue.scheduler.clone(),
        io_poll: b.queue.io_poll,
        nvme_generic: Some(NvmeGeneric {
            nsid,
            block_device: format!("/dev/{}", b.name),
            max_transfer_bytes: b.queue.max_hw_sectors_kb.map_or(u64::MAX, |kb| kb << 10),
        }),
        device: Some(b),
        ..TargetInfo::file(path, 0)
    })
}

/// `/dev/ng0n1` for `/dev/nvme0n1`, when that generic device exists.
fn generic_device_of(block_path: &str) -> Option<String> {
    let name = Path::new(block_path).file_name()?.to_str()?;
    let rest = name.strip_prefix("nvme")?;
    let ng = format!("/dev/ng{rest}");
    std::fs::metadata(&ng)
        .is_ok_and(|m| m.file_type().is_char_device())
        .then_some(ng)
}

/// Refuses a backend that cannot drive the target: passthru needs an NVMe
/// generic device, and the other data backends cannot use one. Each error
/// names the fix.
pub fn check_backend(info: &TargetInfo, kind: BackendKind) -> Result<(), EngineError> {
    let bad = |reason: String| EngineError::Workload {
        path: info.path.clone(),
        reason,
    };
    match (info.nvme_tcp.is_some(), kind == BackendKind::Tcp) {
        (true, false) => {
            return Err(bad(format!(
                "an NVMe/TCP target, which only the tcp backend drives; use --backend tcp (not {})",
                kind.name()
            )))
        }
        (false, true) => {
            return Err(bad(
                "the tcp backend drives NVMe/TCP namespaces; give nvme-tcp://HOST[:PORT]/SUBNQN[/NSID], or use --backend uring for this path".into(),
            ))
        }
        _ => {}
    }
    match (&info.nvme_generic, kind.needs_nvme_generic()) {
        (None, true) => {
            let what = if info.block_device {
                "a block device"
            } else {
                "a regular file"
            };
            Err(bad(match generic_device_of(&info.path) {
                Some(ng) => format!(
                    "{what}: the passthru backend sends NVMe commands to the namespace's generic character device; use {ng} (or --backend uring for {})",
                    info.path
                ),
                None => format!(
                    "{what}: the passthru backend needs an NVMe generic character device /dev/ngXnY (`ls /dev/ng*`; Linux ≥ 5.13); use --backend uring for this target"
                ),
            }))
        }
        (Some(ng), false) if kind.touches_data() => Err(bad(format!(
            "an NVMe generic character device, which only the passthru backend drives; use --backend passthru, or the block device {} with --backend {}",
            ng.block_device,
            kind.name()
        ))),
        _ => Ok(()),
    }
}

/// Refuses a write to a target whose device holds a partition table,
/// filesystem, mount or holder (see [`crate::safety`]). An NVMe generic
/// device is judged by its namespace's block device; files always pass.
/// Reads the mount table (through `topology`) and the device's first
/// [`crate::safety::PROBE_BYTES`].
pub fn check_write_safety(info: &TargetInfo) -> Result<(), EngineError> {
    if info.nvme_tcp.is_some() {
        // Nothing tells from here whether a remote namespace holds data.
        return Err(EngineError::Unsafe {
            path: info.path.clone(),
            what: "data numio cannot rule out (an NVMe/TCP namespace is not visible from here, so every write to one needs --force-write, even a scratch or mem: namespace)".into(),
        });
    }
    let (device_path, dev, seen_on) = if info.block_device {
        (
            info.path.as_str(),
            Some(DevNum::from_dev_t(info.rdev)),
            None,
        )
    } else if let Some(ng) = &info.nvme_generic {
        let dev = info.device.as_ref().and_then(|d| d.dev);
        (ng.block_device.as_str(), dev, Some(&ng.block_device))
    } else {
        return Ok(());
    };
    // Unreadable: no mount is seen, as before topology read it.
    let mounts = topology::host::mounts(Path::new(SYS_ROOT)).unwrap_or_default();
    let head = crate::safety::read_head(device_path).map_err(|source| EngineError::Inspect {
        path: device_path.to_string(),
        source,
    })?;
    let verdict = crate::safety::judge(device_path, dev, info.device.as_ref(), &mounts, &head);
    match (verdict, seen_on) {
        (None, _) => Ok(()),
        (Some(what), None) => Err(EngineError::Unsafe {
            path: info.path.clone(),
            what,
        }),
        (Some(what), Some(block)) => Err(EngineError::Unsafe {
            path: info.path.clone(),
            what: format!("{what} (seen on its block device {block})"),
        }),
    }
}

/// Refuses IOPOLL before the run where it cannot work: a buffered target,
/// or a device (a file's: the disk its filesystem sits on) without poll
/// queues, where every polled read and write would fail with EOPNOTSUPP.
/// Unknown: allowed. A function of the target's facts.
pub fn check_pollable(info: &TargetInfo, direct: bool) -> Result<(), EngineError> {
    let refuse = |why: String| {
        Err(EngineError::Workload {
            path: info.path.clone(),
            reason: format!("IOPOLL was asked for (--iopoll on, or hipri=1 in a job file), but {why}; use --iopoll auto or off"),
        })
    };
    if !direct {
        return refuse("polled I/O needs O_DIRECT and the target is buffered".into());
    }
    let (device, io_poll) = if info.block_device {
        (info.path.clone(), info.io_poll)
    } else {
        match &info.filesystem_device {
            Some(d) => (format!("its device /dev/{}", d.disk()), d.queue.io_poll),
            None => return Ok(()),
        }
    };
    if io_poll == Some(false) {
        return refuse(format!(
            "{device} has no poll queues (queue/io_poll is 0), so every polled I/O would fail with EOPNOTSUPP; NVMe gets poll queues from the nvme driver's poll_queues parameter (boot with nvme.poll_queues=2)"
        ));
    }
    Ok(())
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
    let size = sysapi::block::size_bytes(&f).map_err(inspect_err)?;
    let lbs = sysapi::block::logical_block_size(&f).map_err(inspect_err)?;
    let device = topology::device::block_device(root, DevNum::from_dev_t(rdev)).ok();
    Ok(TargetInfo {
        block_device: true,
        logical_block_size_bytes: lbs.max(512),
        rdev,
        scheduler: device.as_ref().and_then(|d| d.queue.scheduler.clone()),
        io_poll: device.as_ref().and_then(|d| d.queue.io_poll),
        device,
        ..TargetInfo::file(path, size)
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

/// The byte range every job of a workload covers and the alignment of its I/Os.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Region {
    /// First byte.
    pub start_bytes: u64,
    /// Length.
    pub len_bytes: u64,
    /// Alignment of offsets and lengths.
    pub align_bytes: u64,
}

/// Checks `w` against the target and returns the region it covers. Every
/// error names the value and says what would work.
pub fn validate(w: &Workload, t: &TargetInfo) -> Result<Region, EngineError> {
    let bad = |reason: String| EngineError::Workload {
        path: t.path.clone(),
        reason,
    };
    check_basic(w).map_err(bad)?;
    let lbs = u64::from(t.logical_block_size_bytes);
    if let Some(ng) = &t.nvme_generic {
        check_nvme_command_size(w, lbs, ng).map_err(bad)?;
    } else if let Some(nt) = &t.nvme_tcp {
        check_tcp_command_size(w, lbs, nt).map_err(bad)?;
    } else if w.direct {
        for (name, v) in [
            ("bs", w.bs_min_bytes),
            ("bs (max)", w.bs_max_bytes),
            ("offset", w.offset_bytes),
        ] {
            if v % lbs != 0 {
                return Err(bad(format!(
                    "{name}={v} is not a multiple of the logical block size {lbs} required by O_DIRECT; use a multiple of {lbs} or --buffered"
                )));
            }
        }
    }
    if w.offset_bytes >= t.size_bytes {
        return Err(bad(format!(
            "offset={} is beyond the end of the target ({} bytes)",
            w.offset_bytes, t.size_bytes
        )));
    }
    let avail = t.size_bytes - w.offset_bytes;
    let len = match w.size_bytes {
        Some(s) if s > avail => {
            return Err(bad(format!(
                "size={s} from offset={} goes beyond the end of the target ({} bytes); use --size {avail} or less",
                w.offset_bytes, t.size_bytes
            )))
        }
        Some(s) => s,
        None => avail,
    };
    if len < w.bs_max_bytes {
        return Err(bad(format!(
            "the region ({len} bytes) is smaller than one block of bs={}; use a larger --size or a smaller --bs",
            w.bs_max_bytes
        )));
    }
    Ok(Region {
        start_bytes: w.offset_bytes,
        len_bytes: len,
        align_bytes: if w.direct || t.nvme_generic.is_some() || t.nvme_tcp.is_some() {
            lbs
        } else {
            1
        },
    })
}

/// NVMe commands move whole logical blocks, at most 65536 of them and no
/// more than the controller's largest transfer.
fn check_nvme_command_size(w: &Workload, lbs: u64, ng: &NvmeGeneric) -> Result<(), String> {
    for (name, v) in [
        ("bs", w.bs_min_bytes),
        ("bs (max)", w.bs_max_bytes),
        ("offset", w.offset_bytes),
    ] {
        if v % lbs != 0 {
            return Err(format!(
                "{name}={v} is not a multiple of the namespace's LBA size {lbs} (NVMe commands move whole logical blocks); use a multiple of {lbs}"
            ));
        }
    }
    let max = ng.max_transfer_bytes.min(lbs * NVME_MAX_BLOCKS_PER_COMMAND);
    if w.bs_max_bytes > max {
        return Err(format!(
            "bs={} is larger than one NVMe command can move here ({max} bytes: queue/max_hw_sectors_kb of {} and the 16-bit block count); use --bs {max} or less",
            w.bs_max_bytes, ng.block_device
        ));
    }
    Ok(())
}

/// [`check_nvme_command_size`] for an NVMe/TCP namespace: whole logical
/// blocks (from Identify Namespace), within the controller's MDTS.
fn check_tcp_command_size(w: &Workload, lbs: u64, t: &NvmeTcp) -> Result<(), String> {
    for (name, v) in [
        ("bs", w.bs_min_bytes),
        ("bs (max)", w.bs_max_bytes),
        ("offset", w.offset_bytes),
    ] {
        if v % lbs != 0 {
            return Err(format!(
                "{name}={v} is not a multiple of namespace {}'s LBA size {lbs} (Identify Namespace; NVMe commands move whole logical blocks); use a multiple of {lbs}",
                t.url.nsid
            ));
        }
    }
    let max = t.max_transfer_bytes.min(lbs * NVME_MAX_BLOCKS_PER_COMMAND);
    if w.bs_max_bytes > max {
        return Err(format!(
            "bs={} is larger than one NVMe command can move here ({max} bytes: the controller's MDTS and the 16-bit block count); use --bs {max} or less",
            w.bs_max_bytes
        ));
    }
    Ok(())
}

fn check_basic(w: &Workload) -> Result<(), String> {
    if w.iodepth == 0 || w.iodepth > MAX_IODEPTH {
        return Err(format!(
            "iodepth={} is out of range; use 1..={MAX_IODEPTH}",
            w.iodepth
        ));
    }
    if w.bs_min_bytes == 0 || w.bs_min_bytes > w.bs_max_bytes || w.bs_max_bytes > MAX_BS_BYTES {
        return Err(format!(
            "bs={}-{} is not a valid block size range; use 1 ≤ min ≤ max ≤ {MAX_BS_BYTES}",
            w.bs_min_bytes, w.bs_max_bytes
        ));
    }
    if w.bs_min_bytes % 8 != 0 || w.bs_max_bytes % 8 != 0 {
        return Err(format!(
            "bs={}-{} must be a multiple of 8 bytes",
            w.bs_min_bytes, w.bs_max_bytes
        ));
    }
    if w.rwmixread > 100 {
        return Err(format!("rwmixread={} is over 100", w.rwmixread));
    }
    if w.time_based && w.runtime_ns.is_none() {
        return Err("time_based needs a runtime; add --runtime".into());
    }
    if w.runtime_ns == Some(0) {
        return Err("runtime=0 measures nothing; use a positive --runtime".into());
    }
    if w.number_ios == Some(0) || w.rate_iops == Some(0) {
        return Err("number_ios and rate_iops must be positive when given".into());
    }
    if let Distribution::Zipf(theta) = w.random_distribution {
        if !(theta > 0.0 && theta.is_finite()) || (theta - 1.0).abs() < 1e-9 {
            return Err(format!(
                "random_distribution=zipf:{theta}: θ must be > 0 and ≠ 1 (e.g. zipf:1.2)"
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file_target(size: u64) -> TargetInfo {
        TargetInfo::file("/t", size)
    }

    fn generic_target(lbs: u32, max_transfer_bytes: u64) -> TargetInfo {
        TargetInfo {
            path: "/dev/ng0n1".into(),
            logical_block_size_bytes: lbs,
            nvme_generic: Some(NvmeGeneric {
                nsid: 1,
                block_device: "/dev/nvme0n1".into(),
                max_transfer_bytes,
            }),
            ..file_target(1 << 30)
        }
    }

    #[test]
    fn generic_device_needs_whole_blocks_even_buffered() {
        let t = generic_target(4096, 512 << 10);
        let w = |bs: u64, direct: bool| Workload {
            bs_min_bytes: bs,
            bs_max_bytes: bs,
            direct,
            ..Workload::default()
        };
        let e = validate(&w(512, false), &t).unwrap_err().to_string();
        assert!(
            e.contains("bs=512 is not a multiple of the namespace's LBA size 4096"),
            "{e}"
        );
        let e = validate(&w(1 << 20, true), &t).unwrap_err().to_string();
        assert!(e.contains("bs=1048576") && e.contains("--bs 524288"), "{e}");
        let r = validate(&w(8192, false), &t).unwrap();
        assert_eq!(
            r.align_bytes, 4096,
            "buffered passthru still aligns to LBAs"
        );
        assert_eq!(t.environment(None, false).kind, "nvme_generic");
        assert_eq!(
            t.nvme_namespace(),
            Some(NvmeNamespace {
                nsid: 1,
                lba_bytes: 4096
            })
        );
    }

    #[test]
    fn backends_are_matched_to_targets() {
        let file = file_target(1 << 20);
        let e = check_backend(&file, BackendKind::Passthru)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("a regular file") && e.contains("/dev/ngXnY"),
            "{e}"
        );
        let ng = generic_target(512, u64::MAX);
        for k in [BackendKind::Uring, BackendKind::Sync] {
            let e = check_backend(&ng, k).unwrap_err().to_string();
            assert!(
                e.contains("use --backend passthru, or the block device /dev/nvme0n1"),
                "{e}"
            );
        }
        for k in [BackendKind::Null, BackendKind::Nop, BackendKind::Passthru] {
            assert!(check_backend(&ng, k).is_ok(), "{k:?}");
        }
        for k in [BackendKind::Uring, BackendKind::Sync, BackendKind::Null] {
            assert!(check_backend(&file, k).is_ok(), "{k:?}");
        }
        assert!(check_write_safety(&file).is_ok(), "files are not checked");
    }

    /// The facts of block device `name` of the `2node-blockstack` fixture.
    fn fixture_device(name: &str) -> BlockDevice {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/fixtures/sysfs/2node-blockstack");
        let text = std::fs::read_to_string(root.join(format!("sys/class/block/{name}/dev")))
            .expect("dev file");
        let dev = DevNum::parse(&text).expect("MAJ:MIN");
        topology::device::block_device(&root, dev).expect("facts")
    }

    #[test]
    fn iopoll_is_refused_where_the_files_device_has_no_poll_queues() {
        let on = |device: &str| TargetInfo {
            filesystem_device: Some(fixture_device(device)),
            ..file_target(1 << 20)
        };
        // A partition's poll queues are its disk's (nvme0n1: io_poll 1).
        assert!(check_pollable(&on("nvme0n1p1"), true).is_ok());
        let e = check_pollable(&on("dm-0"), true).unwrap_err().to_string();
        assert!(
            e.contains("its device /dev/dm-0 has no poll queues (queue/io_poll is 0)")
                && e.contains("--iopoll auto or off"),
            "{e}"
        );
        let e = check_pollable(&on("nvme0n1p1"), false)
            .unwrap_err()
            .to_string();
        assert!(e.contains("needs O_DIRECT"), "{e}");
        assert!(
            check_pollable(&file_target(1 << 20), true).is_ok(),
            "no device facts: allowed"
        );
        let block = TargetInfo {
            block_device: true,
            io_poll: Some(false),
            ..TargetInfo::file("/dev/md0", 1 << 20)
        };
        let e = check_pollable(&block, true).unwrap_err().to_string();
        assert!(e.contains("/dev/md0 has no poll queues"), "{e}");
    }

    #[test]
    fn impossible_values_are_named() {
        let t = file_target(1 << 20);
        let cases: Vec<(Workload, &str)> = vec![
            (
                Workload {
                    iodepth: 0,
                    ..Workload::default()
                },
                "iodepth=0",
            ),
            (
                Workload {
                    bs_min_bytes: 1000,
                    bs_max_bytes: 1000,
                    ..Workload::default()
                },
                "bs=1000",
            ),
            (
                Workload {
                    size_bytes: Some(2 << 20),
                    ..Workload::default()
                },
                "size=2097152",
            ),
            (
                Workload {
                    offset_bytes: 1 << 20,
                    ..Workload::default()
                },
                "offset=1048576",
            ),
            (
                Workload {
                    runtime_ns: None,
                    ..Workload::default()
                },
                "time_based needs a runtime",
            ),
            (
                Workload {
                    random_distribution: Distribution::Zipf(1.0),
                    ..Workload::default()
                },
                "zipf:1",
            ),
        ];
        for (w, needle) in cases {
            let e = validate(&w, &t).unwrap_err().to_string();
            assert!(e.contains(needle), "{e:?} should mention {needle:?}");
        }
    }

    #[test]
    fn region_defaults_to_rest_of_target() {
        let t = file_target(1 << 20);
        let w = Workload {
            offset_bytes: 4096,
            ..Workload::default()
        };
        let r = validate(&w, &t).unwrap();
        assert_eq!(
            r,
            Region {
                start_bytes: 4096,
                len_bytes: (1 << 20) - 4096,
                align_bytes: 512
            }
        );
    }
}
