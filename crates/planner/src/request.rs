//! What the caller asks the planner for: targets, a workload and a policy.

use topology::CpuId;

use crate::resolve::TargetDevice;
use crate::workload::Workload;

/// One target to drive: an NVMe namespace (`/dev/nvme0n1`, `nvme0n1`,
/// `/dev/ng0n1`, a multipath path `nvme0c1n1`, a partition `nvme0n1p2`), any
/// other block device, or a regular file.
#[derive(Debug, Clone, PartialEq)]
pub struct TargetSpec {
    /// The path as the user wrote it; carried into the plan unchanged.
    pub path: String,
    /// Workload of this target's jobs; `None`: the request's workload.
    pub workload: Option<Workload>,
    /// numio backend of this target (`uring`, `passthru`, `sync`, `null`,
    /// `nvme-tcp`); `None`: the engine's default.
    pub backend: Option<String>,
    /// What the caller learned about the device under `path` on the live
    /// machine (`topology`'s device queries); `None`: resolve `path` by
    /// name.
    pub device: Option<TargetDevice>,
}

impl TargetSpec {
    /// A target with the request's workload and the default backend.
    pub fn new(path: impl Into<String>) -> Self {
        TargetSpec {
            path: path.into(),
            workload: None,
            backend: None,
            device: None,
        }
    }
}

/// How jobs are placed on CPUs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Policy {
    /// CPUs of each target's NUMA node; targets on one node share its
    /// physical cores evenly; SMT siblings are used after the primaries.
    Local,
    /// Job after job of the run on the next NUMA node in turn, each on that
    /// node's next free CPU, buffers on that node: locality ignored (the
    /// uncontrolled baseline of an A/B test; see [`crate::spread`]).
    Spread,
    /// Each target's jobs and buffers on the farthest node from it that has
    /// free cores (the remote arm of a NUMA A/B test; see
    /// [`crate::remote`]). A target of unknown node, or a machine with one
    /// node, is an error.
    Remote,
    /// No pinning and no memory policy at all.
    None,
    /// The caller's CPU list for every target: `(target, cpus)`. A target
    /// matches when it equals the path given, with or without `/dev/`. Jobs of
    /// a target take the CPUs of its list in order (fio's `split`).
    Explicit(Vec<(String, Vec<CpuId>)>),
}

impl Policy {
    /// The named policies (`--numa`, a compare arm's `policy=`), by name.
    pub const NAMED: [Policy; 4] = [Policy::Local, Policy::Spread, Policy::Remote, Policy::None];

    /// The named policy called `name` (`local`, `spread`, `remote`,
    /// `none`); `None` for any other name.
    pub fn named(name: &str) -> Option<Policy> {
        Policy::NAMED.into_iter().find(|p| p.name() == name)
    }

    /// The policy's name as plans and the CLI spell it.
    pub fn name(&self) -> &'static str {
        match self {
            Policy::Local => "local",
            Policy::Spread => "spread",
            Policy::Remote => "remote",
            Policy::None => "none",
            Policy::Explicit(_) => "explicit",
        }
    }
}

/// Everything `planner::plan` needs besides the topology.
#[derive(Debug, Clone, PartialEq)]
pub struct PlanRequest {
    /// Targets, in the order the plan lists them.
    pub targets: Vec<TargetSpec>,
    /// Workload of every target without its own.
    pub workload: Workload,
    /// Placement policy.
    pub policy: Policy,
}
