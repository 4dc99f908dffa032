//! Targets: what a path is (block device, file, or NVMe generic character
//! device `/dev/ngXnY`), its size and logical block size, whether a
//! workload fits it, and whether a backend can drive it.
//!
//! A generic device is described by its namespace's block device in sysfs
//! (the sibling under the same controller or subsystem whose `nsid` is the
//! one `NVME_IOCTL_ID` returns): size, LBA size and largest transfer come
//! from there, and so does write safety.

use std::fs::File;
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use planner::{Distribution, Workload};

use crate::backend::tcp::{self, NvmeTcp, TcpOptions};
use crate::backend::{BackendKind, NvmeNamespace};
use crate::error::EngineError;
use crate::result::TargetEnvironment;

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
    /// Device number of a block device.
    pub rdev: u64,
    /// sysfs directory of the block device (`/sys/dev/block/M:m` resolved).
    pub sysfs_dir: Option<PathBuf>,
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
/// connects to an `nvme-tcp://` one with the default host NQN).
pub fn inspect(path: &str) -> Result<TargetInfo, EngineError> {
    if tcp::is_tcp_target(path) {
        return inspect_tcp(path, &TcpOptions::default());
    }
    let meta = std::fs::metadata(path).map_err(|source| EngineError::Open {
        path: path.to_string(),
        source,
    })?;
    if meta.file_type().is_block_device() {
        inspect_block(path, meta.rdev())
    } else if meta.file_type().is_file() {
        Ok(TargetInfo {
            path: path.to_string(),
            block_device: false,
            size_bytes: meta.len(),
            logical_block_size_bytes: 512,
            rdev: 0,
            sysfs_dir: None,
            scheduler: None,
            io_poll: None,
            nvme_generic: None,
            nvme_tcp: None,
        })
    } else if meta.file_type().is_char_device() {
        inspect_nvme_generic(path, meta.rdev())
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
        tcp::inspect(path, opts).map_err(|reason| EngineError::Workload {
            path: path.to_string(),
            reason,
        })?;
    Ok(TargetInfo {
        path: path.to_string(),
        block_device: false,
        size_bytes,
        logical_block_size_bytes: lba_bytes,
        rdev: 0,
        sysfs_dir: None,
        scheduler: None,
        io_poll: None,
        nvme_generic: None,
        nvme_tcp: Some(t),
    })
}

/// Namespace id, block device and geometry of an NVMe generic device.
fn inspect_nvme_generic(path: &str, rdev: u64) -> Result<TargetInfo, EngineError> {
    let (major, minor) = (libc::major(rdev), libc::minor(rdev));
    let sys = std::fs::canonicalize(format!("/sys/dev/char/{major}:{minor}")).ok();
    let class = sys
        .as_ref()
        .and_then(|d| std::fs::canonicalize(d.join("subsystem")).ok());
    let (Some(sys), true) = (
        sys,
        class.is_some_and(|c| c.file_name().is_some_and(|n| n == "nvme-generic")),
    ) else {
        return Err(EngineError::Workload {
            path: path.to_string(),
            reason: "a character device that is not an NVMe generic device; give a block device, a file, or /dev/ngXnY with --backend passthru".into(),
        });
    };
    let inspect_err = |source| EngineError::Inspect {
        path: path.to_string(),
        source,
    };
    let f = File::open(path).map_err(|source| EngineError::Open {
        path: path.to_string(),
        source,
    })?;
    let nsid = sysapi::block::nvme_namespace_id(&f).map_err(inspect_err)?;
    let parent = sys.parent().unwrap_or(&sys);
    let Some((block_name, bdir)) = namespace_block_device(parent, nsid) else {
        return Err(EngineError::Workload {
            path: path.to_string(),
            reason: format!(
                "no block device of namespace {nsid} under {}; numio reads the namespace's size and LBA size there",
                parent.display()
            ),
        });
    };
    let read = |rel: &str| {
        std::fs::read_to_string(bdir.join(rel))
            .ok()
            .map(|s| s.trim().to_string())
    };
    let num = |rel: &str| read(rel).and_then(|s| s.parse::<u64>().ok());
    let (Some(sectors), Some(lbs)) = (num("size"), num("queue/logical_block_size")) else {
        return Err(inspect_err(std::io::Error::other(format!(
            "cannot read size and queue/logical_block_size of {}",
            bdir.display()
        ))));
    };
    Ok(TargetInfo {
        path: path.to_string(),
        block_device: false,
        size_bytes: sectors * 512,
        logical_block_size_bytes: lbs.max(512) as u32,
        rdev,
        sysfs_dir: Some(sys),
        scheduler: read("queue/scheduler").map(|s| parse_scheduler(&s)),
        io_poll: read("queue/io_poll").map(|s| s == "1"),
        nvme_generic: Some(NvmeGeneric {
            nsid,
            block_device: format!("/dev/{block_name}"),
            max_transfer_bytes: num("queue/max_hw_sectors_kb").map_or(u64::MAX, |kb| kb << 10),
        }),
        nvme_tcp: None,
    })
}

/// The block device of namespace `nsid` among the entries of `dir` (the
/// controller or subsystem directory of a generic device): (name, sysfs dir).
/// A hidden multipath path device (`nvme0c1n1`) gives way to its head
/// (`nvme0n1`), the device that has a node under /dev.
fn namespace_block_device(dir: &Path, nsid: u32) -> Option<(String, PathBuf)> {
    let mut found: Vec<(String, PathBuf)> = std::fs::read_dir(dir)
        .ok()?
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            let p = e.path();
            let id = std::fs::read_to_string(p.join("nsid")).ok()?;
            (name.starts_with("nvme") && id.trim().parse::<u32>().ok()? == nsid)
                .then_some((name, p))
        })
        .collect();
    found.sort();
    let (name, p) = found.into_iter().next()?;
    match multipath_head_name(&name) {
        Some(head) => {
            let hp = PathBuf::from("/sys/block").join(&head);
            Some((head, if hp.is_dir() { hp } else { p }))
        }
        None => Some((name, p)),
    }
}

/// `nvme0n1` for a multipath path device `nvme0c1n1`; `None` for other names.
pub fn multipath_head_name(name: &str) -> Option<String> {
    let rest = name.strip_prefix("nvme")?;
    let (subsys, rest) = rest.split_once('c')?;
    let (ctrl, ns) = rest.split_once('n')?;
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    (digits(subsys) && digits(ctrl) && digits(ns)).then(|| format!("nvme{subsys}n{ns}"))
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
pub fn check_write_safety(info: &TargetInfo) -> Result<(), EngineError> {
    if info.nvme_tcp.is_some() {
        // Nothing tells from here whether a remote namespace holds data.
        return Err(EngineError::Unsafe {
            path: info.path.clone(),
            what: "data numio cannot rule out (an NVMe/TCP namespace is not visible from here, so every write to one needs --force-write, even a scratch or mem: namespace)".into(),
        });
    }
    if info.block_device {
        return crate::safety::check_writable(info);
    }
    let Some(ng) = &info.nvme_generic else {
        return Ok(());
    };
    let dev = std::fs::metadata(&ng.block_device)
        .map_err(|source| EngineError::Inspect {
            path: ng.block_device.clone(),
            source,
        })
        .and_then(|m| inspect_block(&ng.block_device, m.rdev()))?;
    crate::safety::check_writable(&dev).map_err(|e| match e {
        EngineError::Unsafe { what, .. } => EngineError::Unsafe {
            path: info.path.clone(),
            what: format!("{what} (seen on its block device {})", ng.block_device),
        },
        other => other,
    })
}

/// Size, block size and queue settings of a block device.
fn inspect_block(path: &str, rdev: u64) -> Result<TargetInfo, EngineError> {
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
    let sysfs_dir = std::fs::canonicalize(format!(
        "/sys/dev/block/{}:{}",
        libc::major(rdev),
        libc::minor(rdev)
    ))
    .ok();
    let queue = sysfs_dir.as_ref().and_then(|d| {
        let q = d.join("queue");
        if q.is_dir() {
            Some(q)
        } else {
            d.parent().map(|p| p.join("queue"))
        }
    });
    let read = |name: &str| {
        queue
            .as_ref()
            .and_then(|q| std::fs::read_to_string(q.join(name)).ok())
    };
    Ok(TargetInfo {
        path: path.to_string(),
        block_device: true,
        size_bytes: size,
        logical_block_size_bytes: lbs.max(512),
        rdev,
        sysfs_dir,
        scheduler: read("scheduler").map(|s| parse_scheduler(&s)),
        io_poll: read("io_poll").map(|s| s.trim() == "1"),
        nvme_generic: None,
        nvme_tcp: None,
    })
}

/// The bracketed entry of a `queue/scheduler` file.
pub fn parse_scheduler(s: &str) -> String {
    s.split_whitespace()
        .find_map(|w| w.strip_prefix('[').and_then(|w| w.strip_suffix(']')))
        .unwrap_or_else(|| s.trim())
        .to_string()
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
        TargetInfo {
            path: "/t".into(),
            block_device: false,
            size_bytes: size,
            logical_block_size_bytes: 512,
            rdev: 0,
            sysfs_dir: None,
            scheduler: None,
            io_poll: None,
            nvme_generic: None,
            nvme_tcp: None,
        }
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

    #[test]
    fn multipath_path_names_map_to_their_head() {
        assert_eq!(multipath_head_name("nvme1c4n1").as_deref(), Some("nvme1n1"));
        assert_eq!(multipath_head_name("nvme0n1"), None);
        assert_eq!(multipath_head_name("nvme0c1"), None);
        assert_eq!(multipath_head_name("nvmexcyn1"), None);
    }

    #[test]
    fn namespace_block_device_matches_the_nsid() {
        let dir = std::env::temp_dir().join(format!("numio-ng-sysfs-{}", std::process::id()));
        for (name, nsid) in [("nvme0n1", 1), ("nvme0n2", 2), ("ng0n2", 0)] {
            std::fs::create_dir_all(dir.join(name)).unwrap();
            if nsid > 0 {
                std::fs::write(dir.join(name).join("nsid"), format!("{nsid}\n")).unwrap();
            }
        }
        let got = namespace_block_device(&dir, 2).map(|(n, _)| n);
        assert_eq!(got.as_deref(), Some("nvme0n2"));
        assert_eq!(namespace_block_device(&dir, 3), None);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn scheduler_bracket() {
        assert_eq!(parse_scheduler("none [mq-deadline] kyber\n"), "mq-deadline");
        assert_eq!(parse_scheduler("none\n"), "none");
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
