//! The pre-run checks: every target inspected, its workload validated, its
//! backend matched to it, its data guarded, before any worker starts. The
//! checks themselves are [`crate::targets`]'s functions of plain values;
//! this module applies them to a placement in order and stops at the
//! first failure.

use planner::workload::{JOBS_PER_TARGET_MAX, JOBS_TOTAL_MAX};
use planner::{Placement, TargetPlacement};

use super::options::RunOptions;
use crate::backend::tcp::is_tcp_target;
use crate::backend::BackendKind;
use crate::error::EngineError;
use crate::targets::{self, Region, TargetInfo};

/// One target that passed every check.
#[derive(Debug, Clone)]
pub(super) struct CheckedTarget {
    /// What the target is.
    pub info: TargetInfo,
    /// The byte range its jobs cover.
    pub region: Region,
    /// The backend its workers run (its job file's, else the run's).
    pub kind: BackendKind,
}

/// Inspects and checks every target of `placement`, in order.
pub(super) fn check_targets(
    placement: &Placement,
    opts: &RunOptions,
) -> Result<Vec<CheckedTarget>, EngineError> {
    if placement.targets.is_empty() {
        return Err(EngineError::Workload {
            path: "(none)".into(),
            reason: "the placement has no targets; name a file or block device".into(),
        });
    }
    check_job_counts(placement)?;
    placement
        .targets
        .iter()
        .map(|t| check_target(t, opts))
        .collect()
}

/// Refuses more jobs than a target or a run may have (a thread, a ring and
/// buffers each), whatever made the placement: flags, a saved plan or a
/// fio job file of many sections (issue #16).
fn check_job_counts(placement: &Placement) -> Result<(), EngineError> {
    let mut jobs_total = 0usize;
    for t in &placement.targets {
        if t.jobs.len() > JOBS_PER_TARGET_MAX as usize {
            return Err(EngineError::Workload {
                path: t.path.clone(),
                reason: format!(
                    "{} jobs; give 1 to {JOBS_PER_TARGET_MAX} jobs per target (fio's limit too)",
                    t.jobs.len()
                ),
            });
        }
        jobs_total += t.jobs.len();
    }
    if jobs_total > JOBS_TOTAL_MAX as usize {
        return Err(EngineError::Workload {
            path: format!("{} targets", placement.targets.len()),
            reason: format!(
                "{jobs_total} jobs in all; one run takes at most {JOBS_TOTAL_MAX}: fewer jobs or fewer targets"
            ),
        });
    }
    Ok(())
}

fn check_target(t: &TargetPlacement, opts: &RunOptions) -> Result<CheckedTarget, EngineError> {
    let info = if is_tcp_target(&t.path) {
        targets::inspect_tcp(&t.path, &opts.tcp)?
    } else if crate::backend::rdma::is_rdma_target(&t.path) {
        targets::inspect_rdma(&t.path, &opts.tcp)?
    } else {
        targets::inspect(&t.path)?
    };
    let region = targets::validate(&t.workload, &info)?;
    let block = u64::from(results::VERIFY_BLOCK_BYTES);
    let w = &t.workload;
    if opts.verify
        && (w.bs_min_bytes % block != 0
            || w.bs_max_bytes % block != 0
            || w.offset_bytes % block != 0)
    {
        return Err(EngineError::Workload {
            path: t.path.clone(),
            reason: format!(
                "--verify checks {block}-byte blocks: the block sizes and the offset must be multiples of {block} (use --bs 4k, for one)"
            ),
        });
    }
    if t.jobs.is_empty() {
        return Err(EngineError::Workload {
            path: t.path.clone(),
            reason: "no jobs were placed on this target; use --jobs 1 or more".into(),
        });
    }
    let kind = match &t.backend {
        Some(name) => name.parse::<BackendKind>()?,
        None => opts.backend,
    };
    targets::check_backend(&info, kind)?;
    if t.workload.rw.writes() && kind.touches_data() && !opts.force_write {
        targets::check_write_safety(&info)?;
    }
    Ok(CheckedTarget { info, region, kind })
}
