//! Backend construction: one constructor per backend, each returning the
//! backend with what its set-up left to report ([`Built`]: the features it
//! was granted, the fallbacks it took).

use std::os::fd::RawFd;

use crate::backend::tcp::{MultipathBackend, NvmeTcp, PathsReport};
use crate::backend::vfio::target::PciNamespace;
use crate::backend::{
    BackendKind, NullBackend, NvmeNamespace, PassthruBackend, SyncBackend, TcpBackend, TcpOptions,
    UringBackend, UringOptions, VfioBackend,
};
use crate::error::EngineError;

/// What every constructor builds on: one worker's target and buffers.
#[derive(Debug, Clone, Copy)]
pub(super) struct Setup<'a> {
    /// The target's path (for errors).
    pub path: &'a str,
    /// The open target (-1 for tcp, which opens none).
    pub fd: RawFd,
    /// I/Os in flight at most.
    pub depth: usize,
    /// The worker's buffer region: `depth` slots.
    pub region: (*mut u8, usize),
    /// Bytes of one slot (the largest I/O).
    pub slot_bytes: usize,
}

/// A backend as its constructor left it.
#[derive(Debug)]
pub(super) struct Built<B> {
    /// The backend, ready for I/O.
    pub backend: B,
    /// Set-up features granted (e.g. `DEFER_TASKRUN`, `fixed buffers`).
    pub features: Vec<String>,
    /// Fallbacks taken and other notes, in words.
    pub notes: Vec<String>,
    /// Where a multipath backend leaves its per-path counts when dropped.
    pub paths: Option<PathsReport>,
    /// Where a backend leaves notes when dropped (the vfio backend: the
    /// controller's error log after failed I/Os).
    pub end_notes: Option<std::sync::Arc<std::sync::Mutex<Vec<String>>>>,
}

impl<B> Built<B> {
    fn plain(backend: B) -> Built<B> {
        Built {
            backend,
            features: Vec::new(),
            notes: Vec::new(),
            paths: None,
            end_notes: None,
        }
    }
}

impl Setup<'_> {
    fn backend_error(&self, kind: BackendKind, what: &str, source: std::io::Error) -> EngineError {
        EngineError::Backend {
            backend: kind.name(),
            path: self.path.to_string(),
            what: what.into(),
            source,
        }
    }
}

/// The null backend: nothing to set up.
pub(super) fn null(s: &Setup<'_>) -> Built<NullBackend> {
    Built::plain(NullBackend::new(s.depth))
}

/// The sync backend on the open target.
pub(super) fn sync(s: &Setup<'_>) -> Built<SyncBackend> {
    Built::plain(SyncBackend::new(s.fd, s.depth))
}

/// The uring backend (NOPs when `nop`): one ring on the open target.
pub(super) fn uring(
    s: &Setup<'_>,
    opts: &UringOptions,
    nop: bool,
) -> Result<Built<UringBackend>, EngineError> {
    let kind = if nop {
        BackendKind::Nop
    } else {
        BackendKind::Uring
    };
    uring_ring(s, opts, nop).map_err(|e| s.backend_error(kind, "io_uring set-up", e))
}

/// A uring ring for one slice of the task-run trial.
pub(super) fn trial_uring(
    s: &Setup<'_>,
    opts: &UringOptions,
) -> Result<Built<UringBackend>, EngineError> {
    uring_ring(s, opts, false)
        .map_err(|e| s.backend_error(BackendKind::Uring, "io_uring set-up (task-run trial)", e))
}

fn uring_ring(
    s: &Setup<'_>,
    opts: &UringOptions,
    nop: bool,
) -> std::io::Result<Built<UringBackend>> {
    let b = UringBackend::new(s.fd, s.depth as u32, s.region, opts, nop)?;
    Ok(Built {
        features: b.features.clone(),
        notes: b.notes.clone(),
        paths: None,
        end_notes: None,
        backend: b,
    })
}

/// The passthru backend: a ring of 128-byte SQEs sending NVMe commands to
/// namespace `ns` of the open generic device, proven by one read of LBA 0.
pub(super) fn passthru(
    s: &Setup<'_>,
    ns: NvmeNamespace,
    opts: &UringOptions,
) -> Result<Built<PassthruBackend>, EngineError> {
    let b = PassthruBackend::start(s.fd, ns, s.depth as u32, s.region, opts).map_err(|e| {
        s.backend_error(
            BackendKind::Passthru,
            "NVMe passthrough set-up (io_uring SQE128+CQE32, one read of LBA 0)",
            e,
        )
    })?;
    Ok(Built {
        features: b.features.clone(),
        notes: b.notes.clone(),
        paths: None,
        end_notes: None,
        backend: b,
    })
}

/// The tcp backend: one NVMe/TCP I/O queue (a connection) to `target`.
pub(super) fn tcp(
    s: &Setup<'_>,
    target: &NvmeTcp,
    lba_bytes: u32,
    opts: &TcpOptions,
) -> Result<Built<TcpBackend>, EngineError> {
    let b =
        TcpBackend::connect(target, lba_bytes, s.depth, s.slot_bytes, opts).map_err(|source| {
            EngineError::TcpSetup {
                path: s.path.to_string(),
                multipath: false,
                source: Box::new(source),
            }
        })?;
    Ok(Built {
        features: Vec::new(),
        notes: vec![b.note.clone()],
        paths: None,
        end_notes: None,
        backend: b,
    })
}

/// The rdma backend: one NVMe/RDMA I/O queue (an RDMA connection) to
/// `target`, its buffers on `node`.
pub(super) fn rdma(
    s: &Setup<'_>,
    target: &crate::backend::rdma::NvmeRdma,
    lba_bytes: u32,
    opts: &TcpOptions,
    node: Option<u32>,
) -> Result<Built<crate::backend::RdmaBackend>, EngineError> {
    let b =
        crate::backend::RdmaBackend::connect(target, lba_bytes, s.depth, s.slot_bytes, opts, node)
            .map_err(|source| EngineError::RdmaSetup {
                path: s.path.to_string(),
                source: Box::new(source),
            })?;
    Ok(Built {
        features: Vec::new(),
        notes: vec![b.note.clone()],
        paths: None,
        end_notes: None,
        backend: b,
    })
}

/// The multipath tcp backend: an NVMe/TCP I/O queue on every portal of
/// `target`, for a worker on `node`.
pub(super) fn tcp_multipath(
    s: &Setup<'_>,
    target: &NvmeTcp,
    lba_bytes: u32,
    opts: &TcpOptions,
    node: Option<u32>,
) -> Result<Built<MultipathBackend>, EngineError> {
    let b = MultipathBackend::connect(target, lba_bytes, s.depth, s.slot_bytes, opts, node)
        .map_err(|source| EngineError::TcpSetup {
            path: s.path.to_string(),
            multipath: true,
            source: Box::new(source),
        })?;
    Ok(Built {
        features: Vec::new(),
        notes: vec![b.note.clone()],
        paths: Some(b.report()),
        end_notes: None,
        backend: b,
    })
}

/// The vfio backend: one I/O queue pair on the namespace's controller, its
/// memory on `node`.
pub(super) fn vfio(
    s: &Setup<'_>,
    ns: &PciNamespace,
    lba_bytes: u32,
    opts: &crate::backend::vfio::VfioOptions,
    node: Option<u32>,
) -> Result<Built<VfioBackend>, EngineError> {
    let b = VfioBackend::new(
        ns.ctrl.clone(),
        ns.nsid,
        lba_bytes,
        s.depth,
        s.region,
        s.slot_bytes,
        node,
        opts.data_pointer,
    )
    .map_err(|source| EngineError::VfioSetup {
        path: s.path.to_string(),
        source: Box::new(source),
    })?;
    Ok(Built {
        features: b.features.clone(),
        notes: Vec::new(),
        paths: None,
        end_notes: Some(b.end_notes.clone()),
        backend: b,
    })
}
