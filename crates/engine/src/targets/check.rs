//! The pre-run checks of one target, each a function of its [`TargetInfo`]
//! (and the workload or backend asked for), each error naming the fix:
//! whether a workload fits the target ([`validate`]), whether a backend can
//! drive it ([`check_backend`]), whether a write would destroy data
//! ([`check_write_safety`]) and whether IOPOLL can work ([`check_pollable`]).

use std::os::unix::fs::FileTypeExt;
use std::path::Path;

use planner::{Distribution, Workload};

use super::{TargetInfo, TargetKind, SYS_ROOT};
use crate::backend::BackendKind;
use crate::error::{EngineError, WorkloadError};

pub use crate::limits::{MAX_BS_BYTES, MAX_IODEPTH, NVME_MAX_BLOCKS_PER_COMMAND};

/// `/dev/ng0n1` for `/dev/nvme0n1`, when that generic device exists.
fn generic_device_of(block_path: &str) -> Option<String> {
    let name = Path::new(block_path).file_name()?.to_str()?;
    let rest = name.strip_prefix("nvme")?;
    let ng = format!("/dev/ng{rest}");
    std::fs::metadata(&ng)
        .is_ok_and(|m| m.file_type().is_char_device())
        .then_some(ng)
}

/// Refuses a backend that cannot drive the target: tcp drives NVMe/TCP
/// namespaces and nothing else, passthru needs an NVMe generic device, and
/// the other data backends cannot use one. Each error names the fix.
pub fn check_backend(info: &TargetInfo, kind: BackendKind) -> Result<(), EngineError> {
    let bad = |reason: String| EngineError::Workload {
        path: info.path.clone(),
        reason,
    };
    match (&info.kind, kind) {
        (TargetKind::NvmeTcp(_), BackendKind::Tcp) => Ok(()),
        (TargetKind::NvmeRdma(_), BackendKind::Rdma) => Ok(()),
        (TargetKind::NvmeRdma(_), _) => Err(bad(format!(
            "an NVMe/RDMA target, which only the rdma backend drives; use --backend rdma (not {})",
            kind.name()
        ))),
        (_, BackendKind::Rdma) => Err(bad(
            "the rdma backend drives NVMe/RDMA namespaces; give nvme-rdma://HOST[:PORT]/SUBNQN[/NSID]".into(),
        )),
        (TargetKind::Pci(_), BackendKind::Vfio) => Ok(()),
        (TargetKind::Pci(ns), _) => Err(bad(format!(
            "a PCI NVMe controller ({}), which only numio's user-space driver drives; use --backend vfio (not {})",
            ns.addr,
            kind.name()
        ))),
        (_, BackendKind::Vfio) => Err(bad(
            "the vfio backend drives a PCI NVMe controller through numio's own driver; give pci:DDDD:BB:SS.F[/NSID] (`numio vfio status` lists them)".into(),
        )),
        (TargetKind::NvmeTcp(_), _) => Err(bad(format!(
            "an NVMe/TCP target, which only the tcp backend drives; use --backend tcp (not {})",
            kind.name()
        ))),
        (_, BackendKind::Tcp) => Err(bad(
            "the tcp backend drives NVMe/TCP namespaces; give nvme-tcp://HOST[:PORT]/SUBNQN[/NSID], or use --backend uring for this path".into(),
        )),
        (TargetKind::NvmeGeneric(_), BackendKind::Passthru) => Ok(()),
        (TargetKind::NvmeGeneric(ng), _) if kind.touches_data() => Err(bad(format!(
            "an NVMe generic character device, which only the passthru backend drives; use --backend passthru, or the block device {} with --backend {}",
            ng.block_device,
            kind.name()
        ))),
        (TargetKind::File { .. } | TargetKind::BlockDevice { .. }, BackendKind::Passthru) => {
            let what = match info.kind {
                TargetKind::BlockDevice { .. } => "a block device",
                _ => "a regular file",
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
        _ => Ok(()),
    }
}

/// Refuses a write to a target whose device holds a partition table,
/// filesystem, mount or holder (see [`crate::safety`]). An NVMe generic
/// device is judged by its namespace's block device; files always pass;
/// an NVMe/TCP namespace never does (nothing here can see its data); a PCI
/// namespace on numio's driver is read through it.
/// Reads the mount table (through `topology`), probes the device with
/// libblkid and reads its first [`crate::safety::PROBE_BYTES`].
pub fn check_write_safety(info: &TargetInfo) -> Result<(), EngineError> {
    let (device_path, dev, device, seen_on) = match &info.kind {
        TargetKind::File { .. } => return Ok(()),
        TargetKind::Pci(ns) => return check_pci_write_safety(info, ns),
        TargetKind::NvmeTcp(_) => {
            return Err(EngineError::Unsafe {
                path: info.path.clone(),
                what: "data numio cannot rule out (an NVMe/TCP namespace is not visible from here, so every write to one needs --force-write, even a scratch or mem: namespace)".into(),
            })
        }
        TargetKind::NvmeRdma(_) => {
            return Err(EngineError::Unsafe {
                path: info.path.clone(),
                what: "data numio cannot rule out (an NVMe/RDMA namespace is not visible from here, so every write to one needs --force-write, even a scratch or mem: namespace)".into(),
            })
        }
        TargetKind::BlockDevice { dev, device } => {
            (info.path.as_str(), Some(*dev), device.as_ref(), None)
        }
        TargetKind::NvmeGeneric(ng) => (
            ng.block_device.as_str(),
            ng.namespace.dev,
            Some(&ng.namespace),
            Some(&ng.block_device),
        ),
    };
    // Unreadable: no mount is seen, as before topology read it.
    let mounts = topology::host::mounts(Path::new(SYS_ROOT)).unwrap_or_default();
    let head = crate::safety::read_head(device_path).map_err(|source| EngineError::Inspect {
        path: device_path.to_string(),
        source,
    })?;
    let probed =
        sysapi::blkid::probe(Path::new(device_path)).map_err(|source| EngineError::Inspect {
            path: device_path.to_string(),
            source,
        })?;
    let verdict = crate::safety::judge(device_path, dev, device, &mounts, probed.as_ref(), &head);
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

/// [`check_write_safety`] of a namespace numio's own driver owns: no block
/// device shows it (nor mounts or holders: the kernel gave it up), so its
/// first and last [`crate::safety::PROBE_BYTES`] are read through the
/// driver and judged like a device's: libblkid on an image of them, and
/// the known signatures of the head.
fn check_pci_write_safety(
    info: &TargetInfo,
    ns: &crate::backend::vfio::target::PciNamespace,
) -> Result<(), EngineError> {
    let inspect = |e: String| EngineError::Inspect {
        path: info.path.clone(),
        source: std::io::Error::other(e),
    };
    let lba = info.logical_block_size_bytes;
    let probe = (crate::safety::PROBE_BYTES as u64).min(info.size_bytes) as usize;
    let read = |offset: u64| {
        crate::backend::vfio::read_bytes(&ns.ctrl, ns.nsid, lba, offset, probe).map_err(|e| {
            EngineError::Probe {
                path: info.path.clone(),
                source: Box::new(e),
            }
        })
    };
    let head = read(0)?;
    let tail_at = (info.size_bytes - probe as u64) / u64::from(lba) * u64::from(lba);
    let tail = read(tail_at)?;
    let probed = sysapi::blkid::probe_image(info.size_bytes, &[(0, &head), (tail_at, &tail)])
        .map_err(|e| {
            inspect(format!(
                "libblkid on the namespace's first and last bytes: {e}"
            ))
        })?;
    match crate::safety::judge(&info.path, None, None, &[], probed.as_ref(), &head) {
        None => Ok(()),
        Some(what) => Err(EngineError::Unsafe {
            path: info.path.clone(),
            what: format!("{what} (read through numio's driver)"),
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
    let (device, io_poll) = match &info.kind {
        TargetKind::BlockDevice { .. } => (info.path.clone(), info.io_poll()),
        TargetKind::File {
            filesystem_device: Some(d),
        } => (format!("its device /dev/{}", d.disk()), d.queue.io_poll),
        _ => return Ok(()),
    };
    if io_poll == Some(false) {
        return refuse(format!(
            "{device} has no poll queues (queue/io_poll is 0), so every polled I/O would fail with EOPNOTSUPP; NVMe gets poll queues from the nvme driver's poll_queues parameter (boot with nvme.poll_queues=2)"
        ));
    }
    Ok(())
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
    let bad = |source: WorkloadError| EngineError::Invalid {
        path: t.path.clone(),
        source,
    };
    check_basic(w).map_err(bad)?;
    let lbs = u64::from(t.logical_block_size_bytes);
    if let TargetKind::NvmeGeneric(ng) = &t.kind {
        let source = format!("queue/max_hw_sectors_kb of {}", ng.block_device);
        let limit = CommandLimit {
            namespace: "the namespace",
            max_transfer_bytes: ng.max_transfer_bytes,
            limit_source: &source,
        };
        check_command_size(w, lbs, &limit).map_err(bad)?;
    } else if let TargetKind::NvmeTcp(nt) = &t.kind {
        let namespace = format!("namespace {}", nt.url.nsid);
        let limit = CommandLimit {
            namespace: &namespace,
            max_transfer_bytes: nt.max_transfer_bytes,
            limit_source: "the controller's MDTS",
        };
        check_command_size(w, lbs, &limit).map_err(bad)?;
    } else if let TargetKind::Pci(ns) = &t.kind {
        let namespace = format!("namespace {} of {}", ns.nsid, ns.addr);
        let limit = CommandLimit {
            namespace: &namespace,
            max_transfer_bytes: ns.max_transfer_bytes,
            limit_source: "the controller's MDTS (and one PRP list page: 2 MiB)",
        };
        check_command_size(w, lbs, &limit).map_err(bad)?;
    } else if w.direct {
        for (name, value) in [
            ("bs", w.bs_min_bytes),
            ("bs (max)", w.bs_max_bytes),
            ("offset", w.offset_bytes),
        ] {
            if value % lbs != 0 {
                return Err(bad(WorkloadError::Direct {
                    name,
                    value,
                    lba_bytes: lbs,
                }));
            }
        }
    }
    if w.offset_bytes >= t.size_bytes {
        return Err(bad(WorkloadError::Offset {
            offset_bytes: w.offset_bytes,
            target_bytes: t.size_bytes,
        }));
    }
    let avail = t.size_bytes - w.offset_bytes;
    let len = match w.size_bytes {
        Some(s) if s > avail => {
            return Err(bad(WorkloadError::Size {
                size_bytes: s,
                offset_bytes: w.offset_bytes,
                target_bytes: t.size_bytes,
            }))
        }
        Some(s) => s,
        None => avail,
    };
    if len < w.bs_max_bytes {
        return Err(bad(WorkloadError::Region {
            len_bytes: len,
            bs_bytes: w.bs_max_bytes,
        }));
    }
    Ok(Region {
        start_bytes: w.offset_bytes,
        len_bytes: len,
        align_bytes: if w.direct || t.kind.bypasses_page_cache() {
            lbs
        } else {
            1
        },
    })
}

/// How one NVMe command's size is bounded where it is checked: the
/// namespace as an error names it, its largest transfer and where that
/// limit comes from.
struct CommandLimit<'a> {
    namespace: &'a str,
    max_transfer_bytes: u64,
    limit_source: &'a str,
}

/// NVMe commands move whole logical blocks, at most 65536 of them and no
/// more than the controller's largest transfer (a generic device's
/// `queue/max_hw_sectors_kb`, an NVMe/TCP controller's MDTS).
fn check_command_size(w: &Workload, lbs: u64, limit: &CommandLimit) -> Result<(), WorkloadError> {
    for (name, value) in [
        ("bs", w.bs_min_bytes),
        ("bs (max)", w.bs_max_bytes),
        ("offset", w.offset_bytes),
    ] {
        if value % lbs != 0 {
            return Err(WorkloadError::Blocks {
                name,
                value,
                namespace: limit.namespace.to_string(),
                lba_bytes: lbs,
            });
        }
    }
    let max = limit
        .max_transfer_bytes
        .min(lbs * NVME_MAX_BLOCKS_PER_COMMAND);
    if w.bs_max_bytes > max {
        return Err(WorkloadError::CommandSize {
            bs_bytes: w.bs_max_bytes,
            max_bytes: max,
            limit_source: limit.limit_source.to_string(),
        });
    }
    Ok(())
}

fn check_basic(w: &Workload) -> Result<(), WorkloadError> {
    if w.iodepth == 0 || w.iodepth > MAX_IODEPTH {
        return Err(WorkloadError::Iodepth { iodepth: w.iodepth });
    }
    let (min_bytes, max_bytes) = (w.bs_min_bytes, w.bs_max_bytes);
    if min_bytes == 0 || min_bytes > max_bytes || max_bytes > MAX_BS_BYTES {
        return Err(WorkloadError::BsRange {
            min_bytes,
            max_bytes,
        });
    }
    if min_bytes % 8 != 0 || max_bytes % 8 != 0 {
        return Err(WorkloadError::BsMultiple {
            min_bytes,
            max_bytes,
        });
    }
    if w.rwmixread > 100 {
        return Err(WorkloadError::Rwmixread {
            rwmixread: w.rwmixread,
        });
    }
    if w.time_based && w.runtime_ns.is_none() {
        return Err(WorkloadError::TimeBasedRuntime);
    }
    if w.runtime_ns == Some(0) {
        return Err(WorkloadError::ZeroRuntime);
    }
    if w.number_ios == Some(0) || w.rate_iops == Some(0) {
        return Err(WorkloadError::ZeroCount);
    }
    if let Distribution::Zipf(theta) = w.random_distribution {
        if !(theta > 0.0 && theta.is_finite()) || (theta - 1.0).abs() < 1e-9 {
            return Err(WorkloadError::Zipf { theta });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::NvmeNamespace;
    use crate::fixtures::fixture_device;
    use crate::targets::NvmeGeneric;

    fn file_target(size: u64) -> TargetInfo {
        TargetInfo::file("/t", size)
    }

    fn generic_target(lbs: u32, max_transfer_bytes: u64) -> TargetInfo {
        TargetInfo {
            path: "/dev/ng0n1".into(),
            logical_block_size_bytes: lbs,
            kind: TargetKind::NvmeGeneric(NvmeGeneric {
                nsid: 1,
                block_device: "/dev/nvme0n1".into(),
                max_transfer_bytes,
                namespace: fixture_device("nvme0n1"),
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
        let e = validate(&w(512, false), &t).unwrap_err();
        assert!(
            matches!(
                &e,
                EngineError::Invalid {
                    source: WorkloadError::Blocks {
                        name: "bs",
                        value: 512,
                        lba_bytes: 4096,
                        ..
                    },
                    ..
                }
            ),
            "{e:?}"
        );
        let e = e.to_string();
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
    fn iopoll_is_refused_where_the_files_device_has_no_poll_queues() {
        let on = |device: &str| TargetInfo {
            kind: TargetKind::File {
                filesystem_device: Some(fixture_device(device)),
            },
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
        // dm-0 of the fixture has no poll queues.
        let dm = fixture_device("dm-0");
        let block = TargetInfo {
            kind: TargetKind::BlockDevice {
                dev: dm.dev.expect("dev"),
                device: Some(dm),
            },
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
