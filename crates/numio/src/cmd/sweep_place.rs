//! Where the points of `numio sweep` run: the placement policy from
//! `--numa` / `--cpus` (local unless asked), the cap on the jobs axis (no
//! more cores than the placement gives a target: warned and capped, so a
//! cores curve never measures time-sharing), and one point's plan.

use std::path::Path;

use anyhow::{bail, Context};
use planner::{PlanRequest, Policy};
use topology::Topology;

use super::flags::NumaArg;
use super::flags::WorkloadArgs;
use session::axes::{is_cores_axis, over_transport, Axis};

use super::sweep_axes::apply;

/// The placement policy of every point, from `--numa` and `--cpus`.
pub fn policy(
    numa: Option<NumaArg>,
    cpus: Option<&str>,
    axes: &[Axis],
    targets: &[String],
) -> anyhow::Result<Policy> {
    if let Some(list) = cpus {
        if let Some(a) = axes.iter().find(|a| is_cores_axis(&a.name)) {
            bail!(
                "{}={} with --cpus {list}: the {} axis takes its cores from the planner \
                 (physical cores first); drop --cpus, or sweep another axis with --cpus",
                a.name,
                a.values.join(","),
                a.name
            );
        }
    }
    Ok(super::flags::placing(numa, cpus, &[]).policy(targets)?)
}

/// The most jobs per target the policy gives distinct CPUs on `targets`
/// (the fewest over the targets); `None` when jobs are not pinned.
pub fn jobs_cap(
    topo: &Topology,
    targets: &[String],
    flags: &WorkloadArgs,
    policy: &Policy,
) -> anyhow::Result<Option<usize>> {
    if matches!(policy, Policy::None | Policy::Explicit(_)) {
        return Ok(None);
    }
    let mut w = flags.clone();
    w.numjobs = Some(topo.cpus.len().max(1) as i64);
    let request = PlanRequest {
        targets: session::targets::target_specs(Path::new("/"), targets),
        workload: w.workload()?,
        policy: policy.clone(),
    };
    let placement = planner::plan(topo, &request).context("placing the widest point")?;
    Ok(placement
        .targets
        .iter()
        .map(|t| {
            let mut cpus: Vec<_> = t.jobs.iter().flat_map(|j| j.cpus.clone()).collect();
            cpus.sort_unstable();
            cpus.dedup();
            cpus.len()
        })
        .min())
}

/// The plan of one point: the workload flags with the point's values, on
/// its targets (the first `devices`), placed by `policy`.
pub fn point_placement(
    flags: &WorkloadArgs,
    axes: &[Axis],
    values: &[(usize, String)],
    targets: &[String],
    topo: &Topology,
    policy: &Policy,
) -> anyhow::Result<planner::Placement> {
    let mut w = flags.clone();
    let mut use_targets = targets.to_vec();
    let mut policy = policy.clone();
    for (axis, (_, v)) in axes.iter().zip(values) {
        if axis.name == "devices" {
            let n: usize = v
                .parse()
                .ok()
                .filter(|n| *n >= 1)
                .with_context(|| format!("devices={v}: give a count of 1 or more"))?;
            anyhow::ensure!(
                n <= targets.len(),
                "devices={n}: only {} targets given ({}); name more targets",
                targets.len(),
                targets.join(", ")
            );
            use_targets.truncate(n);
        } else if axis.name == "transport" {
            // --cpus-for names the targets as given: keep each placement.
            if let Policy::Explicit(map) = &policy {
                let moved = map
                    .iter()
                    .map(|(t, cpus)| {
                        Ok((
                            over_transport(std::slice::from_ref(t), v)?.remove(0),
                            cpus.clone(),
                        ))
                    })
                    .collect::<anyhow::Result<Vec<_>>>()?;
                policy = Policy::Explicit(moved);
            }
            use_targets = over_transport(&use_targets, v)?;
        } else {
            apply(&mut w, &axis.name, v)?;
        }
    }
    let policy = match &policy {
        Policy::Explicit(map) => Policy::Explicit(
            map.iter()
                .filter(|(t, _)| use_targets.contains(t))
                .cloned()
                .collect(),
        ),
        other => other.clone(),
    };
    let request = PlanRequest {
        targets: session::targets::target_specs(Path::new("/"), &use_targets),
        workload: w.workload()?,
        policy,
    };
    Ok(planner::plan(topo, &request)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn cpus_conflicts_with_the_jobs_axis_and_numa() {
        let axis = |name: &str| Axis {
            name: name.into(),
            values: s(&["1", "2"]),
        };
        let t = s(&["/dev/x"]);
        let err = policy(None, Some("0-1"), &[axis("jobs")], &t).unwrap_err();
        assert!(
            err.to_string().contains("jobs=1,2 with --cpus 0-1"),
            "{err}"
        );
        let err = policy(Some(NumaArg::Local), Some("0"), &[axis("iodepth")], &t).unwrap_err();
        assert!(err.to_string().contains("drop --numa"), "{err}");
        assert!(matches!(
            policy(None, Some("0"), &[axis("iodepth")], &t).unwrap(),
            Policy::Explicit(_)
        ));
        assert!(matches!(
            policy(Some(NumaArg::Spread), None, &[axis("jobs")], &t).unwrap(),
            Policy::Spread
        ));
    }
}
