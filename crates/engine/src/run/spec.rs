//! What each worker is given, decided before any starts ([`JobSpec`], with
//! its [`BackendSpec`]), and what it hands back ([`JobOutput`]).

use planner::{MemPolicy, Placement, TargetPlacement};
use results::TaskrunTrial;

use super::checks::CheckedTarget;
use super::options::{IoPoll, RunOptions};
use crate::backend::rdma::NvmeRdma;
use crate::backend::tcp::NvmeTcp;
use crate::backend::vfio::target::PciNamespace;
use crate::backend::{BackendKind, NvmeNamespace, TcpOptions, UringOptions};
use crate::error::EngineError;
use crate::targets::{self, Region, TargetInfo, TargetKind};
use crate::worker::{LoopLimits, LoopOutput, VerifyKey};

/// SQPOLL idle time when a job file asks for `sqthread_poll` without one.
const DEFAULT_SQPOLL_IDLE_MS: u32 = 1000;

/// A backend and everything it needs, decided once per target from the
/// target's facts and the run's options: a worker cannot be handed a
/// passthru backend without a namespace, or tcp without a connection.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum BackendSpec {
    /// io_uring reads and writes.
    Uring(UringOptions),
    /// io_uring NOPs.
    Nop(UringOptions),
    /// pread/pwrite.
    Sync,
    /// No I/O.
    Null,
    /// NVMe commands to namespace `ns` through io_uring passthrough.
    Passthru {
        /// The namespace (id and LBA size).
        ns: NvmeNamespace,
        /// The ring's set-up.
        uring: UringOptions,
    },
    /// NVMe/TCP to `target`, one connection per worker.
    Tcp {
        /// The namespace and its controller's limits.
        target: NvmeTcp,
        /// The namespace's LBA size.
        lba_bytes: u32,
        /// Connection options.
        opts: TcpOptions,
    },
    /// NVMe/RDMA to `target`, one connection per worker.
    Rdma {
        /// The namespace and its controller's limits.
        target: NvmeRdma,
        /// The namespace's LBA size.
        lba_bytes: u32,
        /// Connection options (the host NQN).
        opts: TcpOptions,
    },
    /// numio's user-space NVMe driver: one queue pair per worker.
    Vfio {
        /// The namespace, its controller open.
        ns: PciNamespace,
        /// The namespace's LBA size.
        lba_bytes: u32,
        /// Driver options (data pointers).
        opts: crate::backend::vfio::VfioOptions,
    },
}

impl BackendSpec {
    /// The spec of backend `kind` for target `t` (checked: `info`), with
    /// the io_uring set-up of [`target_uring`].
    fn new(
        kind: BackendKind,
        t: &TargetPlacement,
        info: &TargetInfo,
        opts: &RunOptions,
    ) -> Result<BackendSpec, EngineError> {
        let wrong_target = |reason: &str| EngineError::Workload {
            path: info.path.clone(),
            reason: reason.into(),
        };
        Ok(match kind {
            BackendKind::Uring => BackendSpec::Uring(target_uring(t, info, opts, true)?),
            BackendKind::Nop => BackendSpec::Nop(target_uring(t, info, opts, false)?),
            BackendKind::Sync => BackendSpec::Sync,
            BackendKind::Null => BackendSpec::Null,
            BackendKind::Passthru => BackendSpec::Passthru {
                ns: info
                    .nvme_namespace()
                    .ok_or_else(|| wrong_target("not an NVMe generic device; use /dev/ngXnY"))?,
                uring: target_uring(t, info, opts, false)?,
            },
            BackendKind::Tcp => match &info.kind {
                TargetKind::NvmeTcp(target) => BackendSpec::Tcp {
                    target: target.clone(),
                    lba_bytes: info.logical_block_size_bytes,
                    opts: opts.tcp.clone(),
                },
                _ => {
                    return Err(wrong_target(
                        "not an NVMe/TCP target; give nvme-tcp://HOST[:PORT]/SUBNQN[/NSID]",
                    ))
                }
            },
            BackendKind::Rdma => match &info.kind {
                TargetKind::NvmeRdma(target) => BackendSpec::Rdma {
                    target: target.clone(),
                    lba_bytes: info.logical_block_size_bytes,
                    opts: opts.tcp.clone(),
                },
                _ => {
                    return Err(wrong_target(
                        "not an NVMe/RDMA target; give nvme-rdma://HOST[:PORT]/SUBNQN[/NSID]",
                    ))
                }
            },
            BackendKind::Vfio => match &info.kind {
                TargetKind::Pci(ns) => BackendSpec::Vfio {
                    ns: ns.clone(),
                    lba_bytes: info.logical_block_size_bytes,
                    opts: opts.vfio,
                },
                _ => {
                    return Err(wrong_target(
                        "not a PCI NVMe controller; give pci:DDDD:BB:SS.F[/NSID]",
                    ))
                }
            },
        })
    }

    /// Which backend this is.
    pub(super) fn kind(&self) -> BackendKind {
        match self {
            BackendSpec::Uring(_) => BackendKind::Uring,
            BackendSpec::Nop(_) => BackendKind::Nop,
            BackendSpec::Sync => BackendKind::Sync,
            BackendSpec::Null => BackendKind::Null,
            BackendSpec::Passthru { .. } => BackendKind::Passthru,
            BackendSpec::Tcp { .. } => BackendKind::Tcp,
            BackendSpec::Vfio { .. } => BackendKind::Vfio,
            BackendSpec::Rdma { .. } => BackendKind::Rdma,
        }
    }

    /// Whether the worker's buffers go on hugepages where there are (the
    /// vfio backend maps them into the IOMMU).
    pub(super) fn wants_hugepages(&self) -> bool {
        matches!(self, BackendSpec::Vfio { .. })
    }

    /// Whether the worker opens the target as a file (not a connection or
    /// a PCI function).
    pub(super) fn opens_file(&self) -> bool {
        !matches!(
            self,
            BackendSpec::Tcp { .. } | BackendSpec::Vfio { .. } | BackendSpec::Rdma { .. }
        )
    }
}

/// Everything one worker needs, decided before it starts.
#[derive(Debug, Clone)]
pub(super) struct JobSpec {
    /// Index of its target in the placement.
    pub target: usize,
    /// Index of the job within its target.
    pub job: u32,
    /// The target's path.
    pub path: String,
    /// CPUs to pin to (empty: not pinned).
    pub cpus: Vec<u32>,
    /// Node to bind its buffers to (`None`: the default policy).
    pub node: Option<u32>,
    /// The workload.
    pub workload: planner::Workload,
    /// The byte range it covers.
    pub region: Region,
    /// Its backend.
    pub backend: BackendSpec,
    /// Write verify blocks with this key and check them on reads.
    pub verify: Option<VerifyKey>,
    /// Limits and timing of its loop.
    pub limits: LoopLimits,
}

/// What a worker hands back.
#[derive(Debug)]
pub(super) struct JobOutput {
    /// The loop's statistics.
    pub out: LoopOutput,
    /// Node its buffers landed on.
    pub buffer_node: Option<u32>,
    /// Set-up features its backend was granted.
    pub features: Vec<String>,
    /// Fallbacks and other notes.
    pub notes: Vec<String>,
    /// The task-run trial of this job, when one ran.
    pub trial: Option<TaskrunTrial>,
    /// A multipath backend's per-path counts.
    pub multipath: Option<results::MultipathResult>,
}

/// One spec per job of every target, each target's backend spec and loop
/// limits decided once.
pub(super) fn job_specs(
    placement: &Placement,
    checked: &[CheckedTarget],
    opts: &RunOptions,
) -> Result<Vec<JobSpec>, EngineError> {
    let mut specs = Vec::new();
    for (ti, (t, c)) in placement.targets.iter().zip(checked).enumerate() {
        let backend = BackendSpec::new(c.kind, t, &c.info, opts)?;
        let limits = loop_limits(&t.workload, &c.region, opts);
        for (j, job) in t.jobs.iter().enumerate() {
            specs.push(JobSpec {
                target: ti,
                job: j as u32,
                path: t.path.clone(),
                cpus: job.cpus.iter().map(|c| c.0).collect(),
                node: job_node(job, t),
                workload: t.workload.clone(),
                region: c.region,
                backend: backend.clone(),
                verify: opts.verify.then(|| {
                    let tv = opts.verify_keys.get(&t.path).copied().unwrap_or_default();
                    VerifyKey {
                        write: tv.write,
                        expect: tv.expect,
                        also: tv.also,
                        job: j as u32,
                        replay_window: tv.replay_window,
                    }
                }),
                limits,
            });
        }
    }
    Ok(specs)
}

/// The loop limits of workload `w` over `region`.
fn loop_limits(w: &planner::Workload, region: &Region, opts: &RunOptions) -> LoopLimits {
    let depth = w.iodepth as usize;
    LoopLimits {
        ramp_ns: w.ramp_time_ns,
        runtime_ns: w.runtime_ns,
        max_ios: w.number_ios.unwrap_or(u64::MAX),
        max_bytes: if w.time_based {
            u64::MAX
        } else {
            region.len_bytes
        },
        rate_iops: w.rate_iops,
        batch_complete_min: opts
            .batch_complete_min
            .unwrap_or((depth / 4).clamp(1, 32))
            .clamp(1, depth),
        interval_ns: Some(opts.interval_ns),
    }
}

/// The io_uring set-up of target `t`: the run's options, where its job file
/// sets them overridden by `fixedbufs`, `registerfiles`, `sqthread_poll` and
/// `hipri` (so jobs of one run may differ), and IOPOLL decided against the
/// device: `auto` where it has poll queues and the target is O_DIRECT;
/// `on` refused where it cannot work when `check_poll` (reads and writes:
/// NOPs never poll, passthrough polls its own queues).
fn target_uring(
    t: &TargetPlacement,
    info: &TargetInfo,
    opts: &RunOptions,
    check_poll: bool,
) -> Result<UringOptions, EngineError> {
    let o = &t.options;
    let mut uring = opts.uring.clone();
    if let Some(v) = o.fixedbufs {
        uring.fixed_buffers = v;
    }
    if let Some(v) = o.registerfiles {
        uring.registered_files = v;
    }
    match o.sqthread_poll {
        Some(true) if uring.sqpoll_idle_ms.is_none() => {
            uring.sqpoll_idle_ms = Some(DEFAULT_SQPOLL_IDLE_MS)
        }
        Some(false) => uring.sqpoll_idle_ms = None,
        _ => {}
    }
    let iopoll = match o.hipri {
        Some(true) => IoPoll::On,
        Some(false) => IoPoll::Off,
        None => opts.iopoll,
    };
    uring.iopoll = match iopoll {
        IoPoll::Off => false,
        IoPoll::Auto => info.io_poll() == Some(true) && t.workload.direct,
        IoPoll::On => {
            if check_poll {
                targets::check_pollable(info, t.workload.direct)?;
            }
            true
        }
    };
    Ok(uring)
}

/// The node a job's buffers are bound to: its memory policy's, for
/// `local` the node of its first CPU (else the target's).
fn job_node(job: &planner::JobPlacement, t: &TargetPlacement) -> Option<u32> {
    match &job.mem {
        MemPolicy::Default => None,
        MemPolicy::Bind(nodes) => nodes.first().map(|n| n.0),
        MemPolicy::Local => job
            .cpus
            .first()
            .and_then(|&c| {
                let root = std::path::Path::new(targets::SYS_ROOT);
                topology::host::cpu_node(root, c).ok().flatten()
            })
            .map(|n| n.0)
            .or(t.node.map(|n| n.0)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::fixture_device;
    use crate::targets::NvmeGeneric;
    use planner::Workload;

    fn placed(direct: bool) -> TargetPlacement {
        TargetPlacement {
            path: "/t".into(),
            workload: Workload {
                direct,
                ..Workload::default()
            },
            ..TargetPlacement::default()
        }
    }

    fn generic() -> TargetInfo {
        TargetInfo {
            path: "/dev/ng0n1".into(),
            kind: TargetKind::NvmeGeneric(NvmeGeneric {
                nsid: 3,
                block_device: "/dev/nvme0n1".into(),
                max_transfer_bytes: 1 << 20,
                namespace: fixture_device("nvme0n1"),
            }),
            size_bytes: 1 << 30,
            logical_block_size_bytes: 4096,
        }
    }

    #[test]
    fn passthru_and_tcp_specs_exist_only_with_their_targets() {
        let (t, opts) = (placed(true), RunOptions::default());
        let file = TargetInfo::file("/t", 1 << 20);
        for kind in [BackendKind::Passthru, BackendKind::Tcp] {
            let e = BackendSpec::new(kind, &t, &file, &opts).unwrap_err();
            assert!(e.to_string().starts_with("/t: not an NVMe"), "{e}");
        }
        let spec = BackendSpec::new(BackendKind::Passthru, &t, &generic(), &opts).unwrap();
        let BackendSpec::Passthru { ns, .. } = &spec else {
            panic!("{spec:?}")
        };
        assert_eq!(
            *ns,
            NvmeNamespace {
                nsid: 3,
                lba_bytes: 4096
            }
        );
        assert_eq!(spec.kind(), BackendKind::Passthru);
        assert!(spec.opens_file());
    }

    #[test]
    fn every_file_backend_names_its_kind() {
        let (t, opts) = (placed(true), RunOptions::default());
        let file = TargetInfo::file("/t", 1 << 20);
        for kind in [
            BackendKind::Uring,
            BackendKind::Nop,
            BackendKind::Sync,
            BackendKind::Null,
        ] {
            let spec = BackendSpec::new(kind, &t, &file, &opts).unwrap();
            assert_eq!(spec.kind(), kind);
            assert!(spec.opens_file());
        }
    }

    #[test]
    fn iopoll_follows_the_device_and_on_is_refused_where_it_cannot_work() {
        let opts = RunOptions::default();
        // nvme0n1 of the fixture has poll queues: auto polls when direct.
        let block = |name: &str| {
            let d = fixture_device(name);
            TargetInfo {
                kind: TargetKind::BlockDevice {
                    dev: d.dev.expect("dev"),
                    device: Some(d),
                },
                ..TargetInfo::file("/dev/x", 1 << 30)
            }
        };
        let uring =
            |t: &TargetPlacement, info: &TargetInfo, opts: &RunOptions| match BackendSpec::new(
                BackendKind::Uring,
                t,
                info,
                opts,
            ) {
                Ok(BackendSpec::Uring(u)) => Ok(u.iopoll),
                Ok(other) => panic!("{other:?}"),
                Err(e) => Err(e.to_string()),
            };
        assert_eq!(uring(&placed(true), &block("nvme0n1"), &opts), Ok(true));
        assert_eq!(uring(&placed(false), &block("nvme0n1"), &opts), Ok(false));
        assert_eq!(uring(&placed(true), &block("dm-0"), &opts), Ok(false));
        let on = RunOptions {
            iopoll: IoPoll::On,
            ..RunOptions::default()
        };
        let e = uring(&placed(true), &block("dm-0"), &on).unwrap_err();
        assert!(e.contains("has no poll queues"), "{e}");
        // NOPs never poll: nothing to refuse.
        let nop = BackendSpec::new(BackendKind::Nop, &placed(false), &block("dm-0"), &on);
        assert!(matches!(nop, Ok(BackendSpec::Nop(u)) if u.iopoll));
    }
}
