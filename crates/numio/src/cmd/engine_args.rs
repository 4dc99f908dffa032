//! The engine flags of `numio bench` and `numio compare` (one table, one
//! help section): backend, io_uring set-up, safety, percentiles, progress.

use std::collections::BTreeMap;
use std::io::IsTerminal;

use super::display::ProgressMode;
use super::flags::{
    parse_percentiles, BackendArg, IoPolicyArg, IoPollArg, ProgressArg, UringSetupArg, VfioDptrArg,
};

/// Flags that say how the engine runs a plan.
#[derive(Debug, Clone, clap::Args)]
#[command(next_help_heading = "Engine")]
pub struct EngineArgs {
    /// Engine backend [default: tcp when every target is an NVMe/TCP
    /// namespace (nvme-tcp://…), else uring].
    #[arg(long, value_enum, value_name = "NAME")]
    pub backend: Option<BackendArg>,
    /// tcp backend (one portal): busy-poll each worker's socket instead of
    /// sleeping until a reply arrives. Saves a wake-up per I/O at low queue
    /// depth and burns the worker's whole CPU (the result's CPU lines show
    /// it): for latency studies; sleeping stays the default.
    #[arg(long)]
    pub poll: bool,
    /// tcp backend, a target of several portals
    /// (nvme-tcp://A/NQN,nvme-tcp://B/NQN): how each I/O picks a usable
    /// path (ANA optimized before non-optimized, never inaccessible).
    #[arg(long, value_enum, value_name = "POLICY", default_value = "numa")]
    pub iopolicy: IoPolicyArg,
    /// Latency percentiles to report (default 1,10,50,90,99,99.9,99.99).
    #[arg(long, value_name = "LIST")]
    pub percentiles: Option<String>,
    /// Allow writes to block devices holding partitions, filesystems or
    /// mounts, and to NVMe/TCP namespaces (which numio cannot look into).
    #[arg(long)]
    pub force_write: bool,
    /// --backend vfio: take a controller from the kernel even when one of
    /// its namespaces is mounted, held (md, dm, LVM), swap, backing a loop
    /// device, exported (nvmet, LIO), open or carries a signature (it comes
    /// back at the end).
    #[arg(long)]
    pub force_unbind: bool,
    /// --backend vfio without an IOMMU: use VFIO's no-IOMMU mode (the
    /// device can then DMA anywhere in memory).
    #[arg(long)]
    pub allow_noiommu: bool,
    /// --backend vfio: how I/O commands name their data: PRPs (PRP lists
    /// for I/Os over two pages), one SGL data block descriptor, or auto
    /// (SGL where the controller takes SGLs and an I/O spans more than two
    /// pages, else PRPs).
    #[arg(long, value_enum, value_name = "KIND", default_value = "auto")]
    pub vfio_dptr: VfioDptrArg,
    /// Write verify blocks (offset, generation, seed, sequence, CRC32C) and
    /// check every read: mismatches are reported by offset and kind, exit 1.
    /// A write run saves its generation in the verify state.
    #[arg(long)]
    pub verify: bool,
    /// Read back what the last write run with --verify wrote on each target
    /// (its offsets, in its order) and check it against its generation.
    #[arg(long)]
    pub verify_only: bool,
    /// The verify state file [default: $XDG_STATE_HOME/numio/verify-state.json].
    #[arg(long, value_name = "FILE")]
    pub verify_state: Option<std::path::PathBuf>,
    /// io_uring: kernel submission polling thread, with this idle time in ms.
    #[arg(long, value_name = "IDLE_MS", num_args = 0..=1, default_missing_value = "1000")]
    pub sqpoll: Option<u32>,
    /// io_uring IOPOLL (completion polling) [default: auto]. fio job files:
    /// a job's hipri decides for its target; jobs without it follow
    /// --iopoll, off when not given (as in fio).
    #[arg(long, value_enum, value_name = "MODE")]
    pub iopoll: Option<IoPollArg>,
    /// io_uring task-run set-up. auto: in a time-based uring run, a 400 ms
    /// trial of defer against coop on each job's own workload keeps the
    /// faster (and with --repeat or compare, the first run's trial settles
    /// the later runs).
    #[arg(long, value_enum, value_name = "MODE", default_value = "auto")]
    pub uring_setup: UringSetupArg,
    /// io_uring: do not register the I/O buffers.
    #[arg(long)]
    pub no_fixed_buffers: bool,
    /// io_uring: do not register the target files.
    #[arg(long)]
    pub no_registered_files: bool,
    /// Completions to wait for per reap (default: iodepth/4, 1..=32).
    #[arg(long, value_name = "N", value_parser = planner::flags::parse_batch_complete)]
    pub batch_complete: Option<usize>,
    /// Serve the run in progress as Prometheus / OpenMetrics text (per target and job).
    #[arg(long, value_name = "ADDR")]
    pub metrics: Option<std::net::SocketAddr>,
    /// Length of the result's intervals (its time axis): 100ms or longer, or off.
    #[arg(long, value_name = "TIME", default_value = "1s", value_parser = planner::flags::parse_interval_ns)]
    pub interval: u64,
    /// The live progress line on stderr.
    #[arg(long, value_enum, value_name = "WHEN", default_value = "auto")]
    pub progress: ProgressArg,
    /// No live progress line even on a terminal (--progress never).
    #[arg(long, conflicts_with = "progress")]
    pub no_progress: bool,
    /// Connect over TLS 1.3 with this host's configured PSK (an
    /// `NVMeTLSkey-1:` line in FILE, mode 600, as `nvme gen-tls-key`
    /// prints), for NVMe/TCP targets that require TLS.
    #[arg(
        long,
        value_name = "FILE",
        alias = "tcp-tls-key",
        help_heading = super::host_args::HEADING
    )]
    pub tls_key_file: Option<std::path::PathBuf>,
    // Last: its heading would otherwise carry over to the flags after it.
    #[command(flatten)]
    pub host: super::host_args::HostArgs,
}

impl EngineArgs {
    /// The engine's options these flags describe (labels empty).
    pub fn run_options(&self) -> anyhow::Result<engine::RunOptions> {
        let percentiles = match &self.percentiles {
            Some(p) => parse_percentiles(p)?,
            None => engine::DEFAULT_PERCENTILES.to_vec(),
        };
        let host = self.host.resolve()?;
        Ok(engine::RunOptions {
            backend: self.backend.unwrap_or(BackendArg::Uring).into(),
            uring: engine::UringOptions {
                sqpoll_idle_ms: self.sqpoll,
                iopoll: false,
                fixed_buffers: !self.no_fixed_buffers,
                registered_files: !self.no_registered_files,
                setup: self.uring_setup.into(),
            },
            iopoll: self.iopoll.unwrap_or(IoPollArg::Auto).into(),
            percentiles,
            verify: self.verify || self.verify_only,
            verify_keys: BTreeMap::new(),
            force_write: self.force_write,
            batch_complete_min: self.batch_complete,
            interval_ns: self.interval,
            metrics: self.metrics,
            labels: BTreeMap::new(),
            tcp: engine::backend::TcpOptions {
                hostnqn: Some(host.hostnqn.clone()),
                hostid: Some(host.identity().hostid),
                header_digest: self.host.hdr_digest,
                data_digest: self.host.data_digest,
                iopolicy: self.iopolicy.into(),
                dhchap: self.host.dhchap_secrets()?,
                tls: self
                    .tls_key_file
                    .as_deref()
                    .map(|p| {
                        nvmf::tls::ConfiguredPsk::from_file(p)
                            .map(std::sync::Arc::new)
                            .map_err(|e| anyhow::anyhow!("--tls-key-file: {e}"))
                    })
                    .transpose()?,
                poll: self.poll,
            },
            vfio: engine::backend::vfio::VfioOptions {
                data_pointer: self.vfio_dptr.into(),
            },
        })
    }

    /// The backend for `targets`: the one `--backend` names, else tcp when
    /// every target is an NVMe/TCP namespace, rdma when every one is an
    /// NVMe/RDMA namespace, vfio when every one is a PCI
    /// address (the form says what drives it), else uring.
    pub fn backend_for(&self, targets: &[String]) -> BackendArg {
        match self.backend {
            Some(b) => b,
            None if !targets.is_empty()
                && targets
                    .iter()
                    .all(|t| engine::backend::tcp::is_tcp_target(t)) =>
            {
                BackendArg::Tcp
            }
            None if !targets.is_empty()
                && targets
                    .iter()
                    .all(|t| engine::backend::rdma::is_rdma_target(t)) =>
            {
                BackendArg::Rdma
            }
            None if !targets.is_empty()
                && targets
                    .iter()
                    .all(|t| engine::backend::vfio::target::is_pci_target(t)) =>
            {
                BackendArg::Vfio
            }
            None => BackendArg::Uring,
        }
    }

    /// How progress shows: `auto` draws the live line on a terminal unless
    /// the result goes out as JSON; `always` draws it on a terminal and
    /// prints a line per second elsewhere (a log, a pipe).
    pub fn progress_mode(&self, json: bool) -> ProgressMode {
        let tty = std::io::stderr().is_terminal();
        match (self.progress, self.no_progress) {
            (_, true) | (ProgressArg::Never, _) => ProgressMode::Off,
            (ProgressArg::Always, _) if tty => ProgressMode::Redraw,
            (ProgressArg::Always, _) => ProgressMode::Lines,
            (ProgressArg::Auto, _) if tty && !json => ProgressMode::Redraw,
            (ProgressArg::Auto, _) => ProgressMode::Off,
        }
    }
}
