//! Errors of the engine.

use crate::limits::{MAX_BS_BYTES, MAX_IODEPTH};
use std::io;

use crate::backend::{rdma, tcp, vfio, BackendKind};

/// Everything that can stop a run before or while it starts.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// A target could not be opened.
    #[error("cannot open {path}: {source} (check the path and permissions)")]
    Open {
        /// The target.
        path: String,
        /// The OS error.
        source: io::Error,
    },
    /// A target's size or block size could not be read.
    #[error("cannot inspect {path}: {source}")]
    Inspect {
        /// The target.
        path: String,
        /// The OS error.
        source: io::Error,
    },
    /// The workload does not fit the target or makes no sense.
    #[error("{path}: {source}")]
    Invalid {
        /// The target.
        path: String,
        /// The check that failed, with its values.
        source: WorkloadError,
    },
    /// An NVMe/TCP target could not be reached or read.
    #[error("{path}: {source}")]
    Tcp {
        /// The target.
        path: String,
        /// The step that failed.
        source: Box<tcp::SetupError>,
    },
    /// An NVMe/RDMA target could not be reached or read.
    #[error("{path}: {source}")]
    Rdma {
        /// The target.
        path: String,
        /// The step that failed.
        source: Box<rdma::SetupError>,
    },
    /// A PCI namespace could not be opened or read (the message leaves out
    /// the controller's address, which the target names).
    #[error("{path}: {}", .source.without_address())]
    Pci {
        /// The target.
        path: String,
        /// The step that failed.
        source: Box<vfio::target::PciError>,
    },
    /// The tcp backend could not set up a worker's queue.
    #[error("{path}: tcp backend{} set-up: {source}", if *.multipath { " (multipath)" } else { "" })]
    TcpSetup {
        /// The target.
        path: String,
        /// Several portals.
        multipath: bool,
        /// The step that failed.
        source: Box<tcp::SetupError>,
    },
    /// The rdma backend could not set up a worker's queue.
    #[error("{path}: rdma backend set-up: {source}")]
    RdmaSetup {
        /// The target.
        path: String,
        /// The step that failed.
        source: Box<rdma::SetupError>,
    },
    /// The vfio backend could not set up a worker's queue pair.
    #[error("{path}: vfio backend set-up: {source}")]
    VfioSetup {
        /// The target.
        path: String,
        /// The step that failed.
        source: Box<vfio::VfioError>,
    },
    /// A PCI namespace's first or last bytes could not be read for the
    /// write-safety check.
    #[error("cannot inspect {path}: {source}")]
    Probe {
        /// The target.
        path: String,
        /// The step that failed.
        source: Box<vfio::VfioError>,
    },
    /// Anything else about the workload and the target, in words.
    #[error("{path}: {reason}")]
    Workload {
        /// The target.
        path: String,
        /// What is wrong and how to fix it.
        reason: String,
    },
    /// Writing would destroy data.
    #[error(
        "refusing to write to {path}: it holds {what}; pass --force-write to overwrite it anyway"
    )]
    Unsafe {
        /// The device.
        path: String,
        /// What was found (partition table, filesystem signature, mount).
        what: String,
    },
    /// A backend could not be set up.
    #[error("{backend} backend on {path}: {what}: {source}")]
    Backend {
        /// Backend name.
        backend: &'static str,
        /// The target.
        path: String,
        /// The step that failed.
        what: String,
        /// The OS error.
        source: io::Error,
    },
    /// Worker buffers could not be allocated.
    #[error("cannot allocate {bytes} bytes of I/O buffers: {source}")]
    Buffers {
        /// Requested size.
        bytes: usize,
        /// The OS error.
        source: io::Error,
    },
    /// A worker thread failed to start or panicked.
    #[error("worker {job} of {path}: {reason}")]
    Worker {
        /// The target.
        path: String,
        /// Job index.
        job: u32,
        /// Why.
        reason: String,
    },
    /// An unknown backend name; the message lists [`BackendKind::ALL`].
    #[error(
        "unknown backend `{name}` (this engine runs: {})",
        BackendKind::ALL.map(BackendKind::name).join(", ")
    )]
    UnknownBackend {
        /// The name given.
        name: String,
    },
    /// Another worker failed to start, so this one did not run.
    #[error("the run was aborted because a worker failed to start")]
    Aborted,
    /// `--metrics ADDR`: the endpoint could not be served.
    #[error("--metrics {addr}: {source}")]
    Metrics {
        /// The address asked for.
        addr: std::net::SocketAddr,
        /// Why.
        #[source]
        source: nvmf::metrics_http::HttpError,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The position of `k` in [`BackendKind::ALL`], by a match that stops
    /// compiling when a backend is added without a place here.
    fn position(k: BackendKind) -> usize {
        match k {
            BackendKind::Uring => 0,
            BackendKind::Sync => 1,
            BackendKind::Null => 2,
            BackendKind::Nop => 3,
            BackendKind::Passthru => 4,
            BackendKind::Tcp => 5,
            BackendKind::Vfio => 6,
            BackendKind::Rdma => 7,
        }
    }

    // Regression (issue 39): the unknown-backend message listed 5 of the 8
    // backends.
    #[test]
    fn an_unknown_backend_names_every_backend() {
        for (i, k) in BackendKind::ALL.into_iter().enumerate() {
            assert_eq!(position(k), i, "{} is in ALL once, in place", k.name());
        }
        assert_eq!(BackendKind::ALL.len(), 8, "ALL holds every backend");
        let e = "zfs".parse::<BackendKind>().unwrap_err();
        assert!(
            matches!(&e, EngineError::UnknownBackend { name } if name == "zfs"),
            "{e:?}"
        );
        let text = e.to_string();
        for k in BackendKind::ALL {
            assert!(text.contains(k.name()), "{} missing: {text}", k.name());
        }
        assert_eq!(
            text,
            "unknown backend `zfs` (this engine runs: uring, sync, null, nop, passthru, tcp, vfio, rdma)"
        );
    }

    /// A set-up error keeps the step's inputs as fields and says them.
    #[test]
    fn a_setup_error_carries_its_inputs() {
        let url = tcp::parse_url("nvme-tcp://10.0.0.1:4420/nqn.x:y/3").unwrap();
        let e = EngineError::TcpSetup {
            path: "nvme-tcp://10.0.0.1:4420/nqn.x:y/3".into(),
            multipath: true,
            source: Box::new(tcp::SetupError::QueueEntries {
                depth: 128,
                entries: 129,
                granted: 64,
                paths: true,
            }),
        };
        assert!(
            e.to_string().starts_with(
                "nvme-tcp://10.0.0.1:4420/nqn.x:y/3: tcp backend (multipath) set-up: iodepth=128 needs a 129-entry queue"
            ),
            "{e}"
        );
        assert!(
            e.to_string()
                .contains("the controllers grant at most 64 (CAP.MQES); use --iodepth 63 or less"),
            "{e}"
        );
        let e = tcp::SetupError::NamespaceRefused {
            url: Box::new(url),
            nn: 2,
            status: nvme_spec::Status::from_field(0x0b),
        };
        match &e {
            tcp::SetupError::NamespaceRefused { url, nn, .. } => {
                assert_eq!((url.nsid, *nn), (3, 2));
            }
            other => panic!("{other:?}"),
        }
        assert!(
            e.to_string()
                .starts_with("namespace 3 is not in subsystem nqn.x:y (Identify Namespace: "),
            "{e}"
        );
        assert!(
            e.to_string()
                .ends_with("give an existing NSID as nvme-tcp://10.0.0.1:4420/nqn.x:y/NSID"),
            "{e}"
        );
    }
}

/// A workload that does not fit its target or makes no sense: one variant
/// per check, with the values checked; each message names the value and
/// what would work.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum WorkloadError {
    /// iodepth outside 1..=[`MAX_IODEPTH`].
    #[error("iodepth={iodepth} is out of range; use 1..={MAX_IODEPTH}")]
    Iodepth {
        /// The iodepth.
        iodepth: u32,
    },
    /// A block size range that is empty or too large.
    #[error(
        "bs={min_bytes}-{max_bytes} is not a valid block size range; use 1 ≤ min ≤ max ≤ {MAX_BS_BYTES}"
    )]
    BsRange {
        /// Smallest block size.
        min_bytes: u64,
        /// Largest block size.
        max_bytes: u64,
    },
    /// Block sizes that are not multiples of 8 bytes.
    #[error("bs={min_bytes}-{max_bytes} must be a multiple of 8 bytes")]
    BsMultiple {
        /// Smallest block size.
        min_bytes: u64,
        /// Largest block size.
        max_bytes: u64,
    },
    /// rwmixread over 100.
    #[error("rwmixread={rwmixread} is over 100")]
    Rwmixread {
        /// The percentage.
        rwmixread: u8,
    },
    /// time_based without a runtime.
    #[error("time_based needs a runtime; add --runtime")]
    TimeBasedRuntime,
    /// runtime=0.
    #[error("runtime=0 measures nothing; use a positive --runtime")]
    ZeroRuntime,
    /// number_ios or rate_iops of 0.
    #[error("number_ios and rate_iops must be positive when given")]
    ZeroCount,
    /// A zipf θ that is not > 0 and ≠ 1.
    #[error("random_distribution=zipf:{theta}: θ must be > 0 and ≠ 1 (e.g. zipf:1.2)")]
    Zipf {
        /// θ.
        theta: f64,
    },
    /// A size or offset that is not whole logical blocks of an NVMe
    /// namespace.
    #[error(
        "{name}={value} is not a multiple of {namespace}'s LBA size {lba_bytes} (NVMe commands move whole logical blocks); use a multiple of {lba_bytes}"
    )]
    Blocks {
        /// The parameter (`bs`, `bs (max)`, `offset`).
        name: &'static str,
        /// Its value in bytes.
        value: u64,
        /// The namespace as the message names it.
        namespace: String,
        /// Its LBA size.
        lba_bytes: u64,
    },
    /// A block size one NVMe command cannot move.
    #[error(
        "bs={bs_bytes} is larger than one NVMe command can move here ({max_bytes} bytes: {limit_source} and the 16-bit block count); use --bs {max_bytes} or less"
    )]
    CommandSize {
        /// The largest block size.
        bs_bytes: u64,
        /// The most one command moves.
        max_bytes: u64,
        /// Where the limit comes from.
        limit_source: String,
    },
    /// A size or offset that O_DIRECT cannot take.
    #[error(
        "{name}={value} is not a multiple of the logical block size {lba_bytes} required by O_DIRECT; use a multiple of {lba_bytes} or --buffered"
    )]
    Direct {
        /// The parameter (`bs`, `bs (max)`, `offset`).
        name: &'static str,
        /// Its value in bytes.
        value: u64,
        /// The target's logical block size.
        lba_bytes: u64,
    },
    /// An offset past the end.
    #[error("offset={offset_bytes} is beyond the end of the target ({target_bytes} bytes)")]
    Offset {
        /// The offset.
        offset_bytes: u64,
        /// The target's size.
        target_bytes: u64,
    },
    /// A size that runs past the end.
    #[error(
        "size={size_bytes} from offset={offset_bytes} goes beyond the end of the target ({target_bytes} bytes); use --size {} or less",
        .target_bytes - .offset_bytes
    )]
    Size {
        /// The size.
        size_bytes: u64,
        /// The offset.
        offset_bytes: u64,
        /// The target's size.
        target_bytes: u64,
    },
    /// A region smaller than one block.
    #[error(
        "the region ({len_bytes} bytes) is smaller than one block of bs={bs_bytes}; use a larger --size or a smaller --bs"
    )]
    Region {
        /// The region's length.
        len_bytes: u64,
        /// The largest block size.
        bs_bytes: u64,
    },
}
