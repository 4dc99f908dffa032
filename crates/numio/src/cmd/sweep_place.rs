//! Where the points of a sweep run, kept here for the callers that name
//! it: `session::sweep` owns the rules.

use planner::Policy;
use session::axes::Axis;
use topology::Topology;

use super::flags::{NumaArg, WorkloadArgs};

/// [`session::sweep::policy`] of `--numa` and `--cpus`.
pub fn policy(
    numa: Option<NumaArg>,
    cpus: Option<&str>,
    axes: &[Axis],
    targets: &[String],
) -> anyhow::Result<Policy> {
    let placing = super::flags::placing(numa, cpus, &[]);
    Ok(session::sweep::policy(&placing, axes, targets)?)
}

/// [`session::sweep::point_placement`] of the workload flags.
pub fn point_placement(
    flags: &WorkloadArgs,
    axes: &[Axis],
    values: &[(usize, String)],
    targets: &[String],
    topo: &Topology,
    policy: &Policy,
) -> anyhow::Result<planner::Placement> {
    let w = flags.flags();
    Ok(session::sweep::point_placement(
        &w, axes, values, targets, topo, policy,
    )?)
}
