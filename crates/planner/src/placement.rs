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
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
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
    /// CPUs set aside for this target: the physical cores it was given with
    /// their SMT siblings (`0-3,112-115`), or the explicit list. Every job's
    /// CPUs lie inside it; empty when nothing is pinned.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cpus: Vec<CpuId>,
    /// numio backend (`uring`, `passthru`, `sync`, `null`, `nvme-tcp`);
    /// `None`: the engine's default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backend: Option<String>,
    /// Job name (a fio section name); `None`: derived from the path.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Ordering, grouping and fio-compatibility options of this target.
    #[serde(default, skip_serializing_if = "JobOptions::is_default")]
    pub options: JobOptions,
}

/// Options of a target's jobs beyond the workload and the CPUs, named as fio
/// names them.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct JobOptions {
    /// fio `stonewall`: wait for every earlier target to finish first.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub stonewall: bool,
    /// fio `new_group`: start a new reporting group with this target.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub new_group: bool,
    /// fio `group_reporting`: report the jobs of the group as one.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub group_reporting: bool,
    /// fio `wait_for`: start only after every job of the named earlier
    /// target (its [`TargetPlacement::job_name`]) has finished.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wait_for: Option<String>,
    /// fio `thread`: jobs are threads, not processes (numio's workers are
    /// always threads; kept so fio files round-trip).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub thread: bool,
    /// fio `hipri`: completion polling (the engine's IOPOLL); `None`: the
    /// engine's default.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hipri: Option<bool>,
    /// fio `fixedbufs`: registered buffers; `None`: the engine's default.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fixedbufs: Option<bool>,
    /// fio `registerfiles`: registered files; `None`: the engine's default.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub registerfiles: Option<bool>,
    /// fio `sqthread_poll`: kernel submission polling (SQPOLL); `None`: the
    /// engine's default.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sqthread_poll: Option<bool>,
    /// fio `ioengine` as written in a job file, kept for the round trip.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ioengine: Option<String>,
    /// fio `numa_cpu_nodes` as written in a job file, kept for the round trip.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub numa_cpu_nodes: Option<String>,
    /// fio `description`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

impl JobOptions {
    /// Whether every option has its default value.
    pub fn is_default(&self) -> bool {
        *self == JobOptions::default()
    }
}

impl TargetPlacement {
    /// The job name: [`TargetPlacement::name`], or the path's last component.
    pub fn job_name(&self) -> String {
        match &self.name {
            Some(n) => n.clone(),
            None => self
                .path
                .rsplit('/')
                .find(|s| !s.is_empty())
                .unwrap_or("job")
                .to_string(),
        }
    }
}

/// A whole plan.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Placement {
    /// Placement policy that produced this plan (`local`, `spread`, `none`,
    /// `explicit`; `fio` for a fio job file, `fio+local` when `--numa auto`
    /// placed some of its jobs).
    pub policy: String,
    /// Targets in the order given.
    pub targets: Vec<TargetPlacement>,
    /// Warnings for the user.
    pub warnings: Vec<String>,
}

/// Every CPU any job of `jobs` may use, ascending.
pub(crate) fn union(jobs: &[JobPlacement]) -> Vec<CpuId> {
    let mut all: Vec<CpuId> = jobs.iter().flat_map(|j| j.cpus.iter().copied()).collect();
    all.sort_unstable();
    all.dedup();
    all
}
