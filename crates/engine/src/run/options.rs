//! How to run a placement: the caller's choices ([`RunOptions`], [`IoPoll`]).

use std::collections::BTreeMap;

use results::VerifyStamp;

use crate::backend::{BackendKind, TcpOptions, UringOptions};

/// Percentiles reported when none are asked for.
pub const DEFAULT_PERCENTILES: [f64; 7] = [1.0, 10.0, 50.0, 90.0, 99.0, 99.9, 99.99];

/// When to use IOPOLL.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum IoPoll {
    /// Where the block device has poll queues (`queue/io_poll` = 1).
    #[default]
    Auto,
    /// Always (fails on devices without poll queues).
    On,
    /// Never.
    Off,
}

/// The generations one target's verify blocks are written with and
/// checked against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TargetVerify {
    /// What writes carry.
    pub write: VerifyStamp,
    /// What reads expect (`None`: any generation; lost writes go unseen).
    pub expect: Option<VerifyStamp>,
    /// A second stamp reads accept (a mixed run: blocks not yet rewritten).
    pub also: Option<VerifyStamp>,
    /// `--verify-only`: the saved run's reorder window; reads then check
    /// sequence numbers too (see [`crate::worker::VerifyKey::replay_window`]).
    pub replay_window: Option<u64>,
}

impl Default for TargetVerify {
    fn default() -> Self {
        TargetVerify {
            write: VerifyStamp {
                generation: 0,
                seed: crate::run::VERIFY_SEED,
            },
            expect: None,
            also: None,
            replay_window: None,
        }
    }
}

/// How to run a placement.
#[derive(Debug, Clone, PartialEq)]
pub struct RunOptions {
    /// Backend of every worker (a job file may name another per target).
    pub backend: BackendKind,
    /// io_uring set-up (uring, nop and passthru backends).
    pub uring: UringOptions,
    /// IOPOLL choice (overrides `uring.iopoll`).
    pub iopoll: IoPoll,
    /// Percentiles to report, each in (0, 100].
    pub percentiles: Vec<f64>,
    /// Write verify blocks and check them on every read.
    pub verify: bool,
    /// Per target path, the generation and seed to write and to expect
    /// (a target not listed writes generation 0 and accepts any on reads).
    pub verify_keys: BTreeMap<String, TargetVerify>,
    /// Allow writes to block devices holding data.
    pub force_write: bool,
    /// Completions to wait for per reap (`None`: depth/4, 1..=32).
    pub batch_complete_min: Option<usize>,
    /// Labels shown for some targets, by path (e.g. the default target).
    pub labels: BTreeMap<String, String>,
    /// NVMe/TCP connection options (tcp backend).
    pub tcp: TcpOptions,
    /// numio's own NVMe driver's options (vfio backend).
    pub vfio: crate::backend::vfio::VfioOptions,
    /// Length of the result's intervals (`--interval`), at least
    /// [`planner::flags::MIN_INTERVAL_NS`].
    pub interval_ns: u64,
    /// Serve the run in progress as metrics at this address (`--metrics`).
    pub metrics: Option<std::net::SocketAddr>,
}

impl Default for RunOptions {
    fn default() -> Self {
        RunOptions {
            backend: BackendKind::Uring,
            uring: UringOptions::default(),
            iopoll: IoPoll::Auto,
            percentiles: DEFAULT_PERCENTILES.to_vec(),
            verify: false,
            verify_keys: BTreeMap::new(),
            force_write: false,
            batch_complete_min: None,
            labels: BTreeMap::new(),
            tcp: TcpOptions::default(),
            vfio: crate::backend::vfio::VfioOptions::default(),
            interval_ns: results::DEFAULT_INTERVAL_NS,
            metrics: None,
        }
    }
}
