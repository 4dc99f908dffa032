//! Errors of planning and of plan files.

use std::path::PathBuf;

use topology::CpuId;

/// Why a plan could not be made.
#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    /// The request names no target.
    #[error("no targets: name at least one device or file to plan for")]
    NoTargets,
    /// The topology has no online CPU to place jobs on.
    #[error("the topology has no online CPU; check the sysfs root it was read from")]
    NoCpus,
    /// A target asks for zero jobs.
    #[error("target {target}: numjobs is 0; ask for at least one job")]
    ZeroJobs {
        /// The target.
        target: String,
    },
    /// A target asks for more jobs than one target may have.
    #[error("target {target}: numjobs is {jobs}; give 1 to {max} jobs per target (fio's limit too)", max = crate::workload::JOBS_PER_TARGET_MAX)]
    TooManyJobs {
        /// The target.
        target: String,
        /// The jobs asked for.
        jobs: u32,
    },
    /// The targets together ask for more jobs than one run may have.
    #[error("{jobs} jobs in all ({targets} targets); one run takes at most {max}: fewer --jobs or fewer targets", max = crate::workload::JOBS_TOTAL_MAX)]
    TooManyJobsInAll {
        /// The jobs of every target together.
        jobs: u64,
        /// The targets.
        targets: usize,
    },
    /// The explicit policy has no CPU list for a target.
    #[error("target {target} has no explicit CPU list; add `--cpus-for {target}=LIST`")]
    MissingCpus {
        /// The target.
        target: String,
    },
    /// An explicit CPU list names a CPU the topology lacks or has offline.
    #[error("target {target}: CPU {cpu} is not an online CPU of this machine; pick CPUs from `numio topo`")]
    UnknownCpu {
        /// The target.
        target: String,
        /// The CPU.
        cpu: CpuId,
    },
    /// An explicit CPU list is empty.
    #[error("target {target}: the explicit CPU list is empty; give at least one CPU")]
    EmptyCpus {
        /// The target.
        target: String,
    },
    /// `remote` placement for a target whose NUMA node is unknown.
    #[error("target {target}: its NUMA node is unknown, so no node is remote to it; --numa remote needs a target on a known node (an NVMe namespace, or a file or device stacked on one): drop it from the remote run, or place it with --cpus-for {target}=LIST")]
    RemoteNodeUnknown {
        /// The target.
        target: String,
    },
    /// `remote` placement where no node but the target's has online CPUs.
    #[error("target {target}: --numa remote needs a NUMA node with online CPUs other than the target's, and this machine has {} ({}); run the remote arm on a machine with two or more NUMA nodes, or use --numa local or spread here", node_count(with_cpus.len()), topology::CpuList::of_nodes(with_cpus))]
    NoRemoteNode {
        /// The target.
        target: String,
        /// The nodes with online CPUs.
        with_cpus: Vec<topology::NodeId>,
    },
    /// `remote` placement for a target local to every node with CPUs (a
    /// multipath head with a path on each, under iopolicy numa).
    #[error("target {target}: it is local to every node with online CPUs ({}: a multipath head with a path on each), so no node is remote to it; drop it from the remote run, or place it with --cpus-for {target}=LIST", topology::CpuList::of_nodes(nodes))]
    LocalEverywhere {
        /// The target.
        target: String,
        /// The nodes it is local to.
        nodes: Vec<topology::NodeId>,
    },
    /// An explicit CPU list names a target that is not planned.
    #[error("`--cpus-for {target}=…` names no target of this plan; add {target} as a target or fix the name")]
    StrayCpus {
        /// The name given.
        target: String,
    },
}

/// `1 node with CPUs`, `2 nodes with CPUs`.
fn node_count(n: usize) -> String {
    match n {
        0 => "no node with CPUs".into(),
        1 => "1 node with CPUs".into(),
        _ => format!("{n} nodes with CPUs"),
    }
}

/// Why a placement cannot run on a machine ([`crate::Placement::check_on`]).
#[derive(Debug, thiserror::Error)]
#[error("target {target}: {message}")]
pub struct PlacementMismatch {
    /// The target.
    pub target: String,
    /// What does not fit and how to fix it.
    pub message: String,
}

/// Why a plan file could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum PlanFileError {
    /// The file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// The file is not a valid plan.
    #[error("{path}: {message}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// What is wrong, with the line where known.
        message: String,
    },
    /// The file parses, but its plan does not hold together.
    #[error("{path}: {source}")]
    Structure {
        /// The file.
        path: PathBuf,
        /// What does not agree.
        #[source]
        source: StructureError,
    },
    /// The plan was written by a newer numio.
    #[error("{path}: plan format version {found} is newer than this numio understands ({supported}); upgrade numio or re-run `numio plan`")]
    Version {
        /// The file.
        path: PathBuf,
        /// Version in the file.
        found: u32,
        /// Newest version this build reads.
        supported: u32,
    },
}

/// What a hand-edited plan got wrong, found without a machine
/// ([`crate::Placement::check_structure`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StructureError {
    /// No target at all.
    #[error("the plan has no targets")]
    NoTargets,
    /// `numjobs` and the jobs listed disagree (or no job is listed).
    #[error("target {target}: workload.numjobs is {numjobs} but {listed} jobs are listed; make them agree")]
    JobCount {
        /// The target.
        target: String,
        /// Its `workload.numjobs`.
        numjobs: u32,
        /// The jobs it lists.
        listed: usize,
    },
    /// A block size range that is empty or starts at 0.
    #[error("target {target}: bs_min_bytes must be at least 1 and at most bs_max_bytes")]
    BlockSizes {
        /// The target.
        target: String,
        /// Its `bs_min_bytes`.
        bs_min_bytes: u64,
        /// Its `bs_max_bytes`.
        bs_max_bytes: u64,
    },
    /// A queue depth of 0 or a read share over 100.
    #[error("target {target}: iodepth must be at least 1 and rwmixread at most 100")]
    DepthOrMix {
        /// The target.
        target: String,
        /// Its `iodepth`.
        iodepth: u32,
        /// Its `rwmixread`.
        rwmixread: u8,
    },
    /// A job pinned to a CPU its target does not list.
    #[error("target {target}: job CPU {cpu} is not in the target's cpus; add it there or drop it")]
    StrayCpu {
        /// The target.
        target: String,
        /// The CPU.
        cpu: CpuId,
    },
}
