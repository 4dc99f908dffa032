//! Placements: the plain-data result of planning, which can be printed,
//! saved, edited and run.

use serde::{Deserialize, Serialize};
use topology::{CpuId, NodeId};

use crate::workload::Workload;

/// Where memory of a job is allocated.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MemPolicy {
    /// The default policy of the process (no binding).
    Default,
    /// Allocate on the node of the CPU that touches the memory.
    Local,
    /// Bind to these nodes.
    Bind(Vec<NodeId>),
}

/// One job: one worker thread driving one target.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobPlacement {
    /// CPUs the job may run on (empty: no pinning).
    pub cpus: Vec<CpuId>,
    /// Memory policy of the job's buffers.
    pub mem: MemPolicy,
}

/// One target and its jobs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TargetPlacement {
    /// Path of the block device or file.
    pub path: String,
    /// NUMA node of the target, when known.
    pub node: Option<NodeId>,
    /// Workload of every job of this target.
    pub workload: Workload,
    /// The jobs.
    pub jobs: Vec<JobPlacement>,
    /// Why the planner chose what it chose where that is not obvious.
    pub notes: Vec<String>,
}

/// A whole plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Placement {
    /// Placement policy that produced this plan (`local`, `spread`, `none`, `explicit`).
    pub policy: String,
    /// Targets in the order given.
    pub targets: Vec<TargetPlacement>,
    /// Warnings for the user.
    pub warnings: Vec<String>,
}
