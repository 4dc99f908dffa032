//! Targets: what a path is (block device or file), its size and logical
//! block size, and whether a workload fits it.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::PathBuf;

use planner::{Distribution, Workload};

use crate::error::EngineError;
use crate::result::TargetEnvironment;

const BLKGETSIZE64: libc::c_ulong = 0x8008_1272;
const BLKSSZGET: libc::c_ulong = 0x1268;
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
}

impl TargetInfo {
    /// The environment record of this target.
    pub fn environment(&self, node: Option<topology::NodeId>, direct: bool) -> TargetEnvironment {
        TargetEnvironment {
            path: self.path.clone(),
            kind: if self.block_device {
                "block_device"
            } else {
                "file"
            }
            .into(),
            size_bytes: self.size_bytes,
            logical_block_size_bytes: self.logical_block_size_bytes,
            node,
            scheduler: self.scheduler.clone(),
            io_poll: self.io_poll,
            direct,
        }
    }
}

/// Stats and measures a target (opens it read-only for block devices).
pub fn inspect(path: &str) -> Result<TargetInfo, EngineError> {
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
        })
    } else {
        Err(EngineError::Workload {
            path: path.to_string(),
            reason:
                "not a block device or regular file; give a device such as /dev/nvme0n1 or a file"
                    .into(),
        })
    }
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
    let mut size: u64 = 0;
    let mut lbs: libc::c_int = 0;
    // SAFETY: both ioctls write one integer of the given type into the
    // pointed-to local, which outlives the call.
    let rc = unsafe { libc::ioctl(f.as_raw_fd(), BLKGETSIZE64 as _, &mut size as *mut u64) };
    if rc != 0 {
        return Err(inspect_err(std::io::Error::last_os_error()));
    }
    // SAFETY: as above.
    let rc = unsafe { libc::ioctl(f.as_raw_fd(), BLKSSZGET as _, &mut lbs as *mut libc::c_int) };
    if rc != 0 {
        return Err(inspect_err(std::io::Error::last_os_error()));
    }
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
        logical_block_size_bytes: lbs.max(512) as u32,
        rdev,
        sysfs_dir,
        scheduler: read("scheduler").map(|s| parse_scheduler(&s)),
        io_poll: read("io_poll").map(|s| s.trim() == "1"),
    })
}

/// The bracketed entry of a `queue/scheduler` file.
pub fn parse_scheduler(s: &str) -> String {
    s.split_whitespace()
        .find_map(|w| w.strip_prefix('[').and_then(|w| w.strip_suffix(']')))
        .unwrap_or_else(|| s.trim())
        .to_string()
}

/// Opens a target for one worker.
pub fn open(path: &str, write: bool, direct: bool) -> Result<File, EngineError> {
    let mut o = std::fs::OpenOptions::new();
    o.read(true).write(write);
    if direct {
        o.custom_flags(libc::O_DIRECT);
    }
    o.open(path).map_err(|source| EngineError::Open {
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
    if w.direct {
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
        align_bytes: if w.direct { lbs } else { 1 },
    })
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
        }
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
