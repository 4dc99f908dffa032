//! The plan of a sweep over hosts (`numio sweep --hosts A,B
//! [--target-host T]`): which axes it may vary, the served target and the
//! URL the hosts reach (or each host's share of the targets given), and
//! each point as the fleet runs it ([`FleetPoint`]: the first N hosts,
//! `numio bench`'s flags on each, the target's reactor CPUs). The runs
//! themselves are [`crate::fleet::FleetRunner`]'s.

use std::collections::HashMap;

use fleet::{Host, HostRun};
use planner::cpuset::CpuSetError;

use crate::axes::{points, Axis};
use crate::fleet::{
    bench_flag, counts, host_runs, FleetPoint, FleetSweepError, ServedTarget, AXES,
};
use crate::LiveArm;

/// Why a sweep over hosts cannot be planned; each names the flag or axis
/// and the fix.
#[derive(Debug, thiserror::Error)]
pub enum FleetPlanError {
    /// An axis a sweep over hosts does not vary.
    #[error("{axis}= with --hosts: a sweep over hosts varies {}", AXES.map(|(n, _)| n).join(", "))]
    Axis {
        /// The axis.
        axis: String,
    },
    /// `--cpus` with hosts, which place their own jobs.
    #[error("--cpus with --hosts: each host places its own jobs (--numa, local by default); drop --cpus")]
    Cpus,
    /// Targets with `--target-host`.
    #[error("{given} with --target-host: the hosts reach the namespace numio serve serves there; drop {given}, or --target-host to bench {given}")]
    TargetWithGiven {
        /// The first target given.
        given: String,
    },
    /// `reactors` without a target host.
    #[error("reactors={list} with --hosts: name the host that serves, --target-host HOST (with --target-cpus LIST)")]
    ReactorsWithoutTargetHost {
        /// The axis's values.
        list: String,
    },
    /// `reactors` without `--target-cpus`.
    #[error("reactors={list} with --target-host: name its CPUs, --target-cpus LIST (e.g. 0-7); a point of K reactors serves on the first K")]
    ReactorsWithoutTargetCpus {
        /// The axis's values.
        list: String,
    },
    /// `--target-cpus` that is no CPU list.
    #[error("--target-cpus {text}: {source}")]
    TargetCpus {
        /// The list as given.
        text: String,
        /// Why.
        #[source]
        source: CpuSetError,
    },
    /// `--target-host` that is no host.
    #[error(transparent)]
    Host(#[from] fleet::HostsError),
    /// Counts out of range, or hosts without their targets.
    #[error(transparent)]
    Fleet(#[from] FleetSweepError),
}

/// The target host's `numio serve`, as asked.
#[derive(Debug, Clone, Copy)]
pub struct TargetAsk<'a> {
    /// `--target-host`.
    pub host: &'a str,
    /// `--target-listen`.
    pub listen: Option<&'a str>,
    /// `--target-transport` (`tcp`, `rdma`).
    pub transport: &'a str,
    /// `--target-ns`.
    pub ns: &'a [String],
    /// `--target-poll`.
    pub poll: bool,
    /// `--target-cpus`.
    pub cpus: Option<&'a str>,
    /// The subsystem NQN it serves.
    pub nqn: &'a str,
}

/// What a sweep over hosts was asked.
#[derive(Debug, Clone)]
pub struct FleetSweepAsk<'a> {
    /// The axes.
    pub axes: &'a [Axis],
    /// The targets given (`HOST:PATH` is that host's only).
    pub given: &'a [String],
    /// The initiator hosts.
    pub hosts: &'a [Host],
    /// `numio bench`'s flags on every host (the axes' flags left out).
    pub bench_argv: Vec<String>,
    /// The served target, with `--target-host`.
    pub target: Option<TargetAsk<'a>>,
    /// `--stack kernel`: the hosts' kernels initiate.
    pub kernel: bool,
    /// `--cpus` was given (refused).
    pub cpus_given: bool,
    /// The engine options every arm carries (the percentiles reported).
    pub opts: engine::RunOptions,
}

/// A sweep over hosts ready to run.
pub struct FleetSweepPlan {
    /// One arm per point.
    pub arms: Vec<LiveArm>,
    /// Each point as the fleet runs it, by label.
    pub points: HashMap<String, FleetPoint>,
    /// Each initiator host with its part.
    pub runs: Vec<HostRun>,
    /// The served target.
    pub target: Option<ServedTarget>,
    /// What the result records of where it ran.
    pub spec: report::FleetSweepSpec,
}

/// Plans a sweep over hosts.
pub fn plan(ask: FleetSweepAsk<'_>) -> Result<FleetSweepPlan, FleetPlanError> {
    for a in ask.axes {
        if !AXES.iter().any(|(n, _)| *n == a.name) {
            return Err(FleetPlanError::Axis {
                axis: a.name.clone(),
            });
        }
    }
    if ask.cpus_given {
        return Err(FleetPlanError::Cpus);
    }
    let (target, url, per_host) = match &ask.target {
        Some(t) => {
            if let Some(g) = ask.given.first() {
                return Err(FleetPlanError::TargetWithGiven { given: g.clone() });
            }
            let host = fleet::parse_host(t.host)?;
            let (served, url) =
                ServedTarget::numio_serve(host, t.listen, t.transport, t.nqn, t.ns, t.poll);
            let per_host = vec![vec![url.clone()]; ask.hosts.len()];
            (Some(served), Some(url), per_host)
        }
        None => (None, None, fleet::targets_per_host(ask.given, ask.hosts)),
    };
    let runs = host_runs(ask.hosts, per_host, ask.kernel)?;
    let axes = ask.axes;
    let initiators = axis_counts(axes, "initiators", ask.hosts.len(), "the hosts given")?;
    let cpus = reactor_cpus(ask.target.as_ref(), axes)?;
    let target_cpus = ask.target.and_then(|t| t.cpus).map(String::from);
    let mut arms = Vec::new();
    let mut planned = HashMap::new();
    for (label, values) in points(axes) {
        let mut point = FleetPoint {
            initiators: ask.hosts.len(),
            argv: ask.bench_argv.clone(),
            target_cpus: target_cpus.clone(),
            ..Default::default()
        };
        for (a, (i, v)) in axes.iter().zip(&values) {
            match a.name.as_str() {
                "initiators" => point.initiators = initiators[*i],
                "reactors" => point.target_cpus = Some(cpus[*i].clone()),
                name => point.argv.push(format!(
                    "--{}={v}",
                    bench_flag(name).expect("checked above")
                )),
            }
        }
        planned.insert(label.clone(), point);
        arms.push(LiveArm {
            label: label.clone(),
            spec: label,
            placement: Default::default(),
            opts: ask.opts.clone(),
            settle_group: 0,
        });
    }
    let spec = report::FleetSweepSpec {
        hosts: ask.hosts.iter().map(|h| h.label.clone()).collect(),
        stack: if ask.kernel { "kernel" } else { "numio" }.to_string(),
        url: url.unwrap_or_else(|| ask.given.join(" ")),
        target_host: target.as_ref().map(|t| t.host.label.clone()),
    };
    Ok(FleetSweepPlan {
        arms,
        points: planned,
        runs,
        target,
        spec,
    })
}

/// The values of axis `name` as counts in `1..=max`, or `[max]` without
/// the axis.
fn axis_counts(
    axes: &[Axis],
    name: &str,
    max: usize,
    what: &str,
) -> Result<Vec<usize>, FleetSweepError> {
    match axes.iter().find(|a| a.name == name) {
        Some(a) => counts(name, &a.values, max, what),
        None => Ok(vec![max]),
    }
}

/// The target's `--cpus` at each value of a `reactors` axis: the first K
/// of `--target-cpus`.
fn reactor_cpus(
    target: Option<&TargetAsk<'_>>,
    axes: &[Axis],
) -> Result<Vec<String>, FleetPlanError> {
    let Some(a) = axes.iter().find(|a| a.name == "reactors") else {
        return Ok(Vec::new());
    };
    let list = a.values.join(",");
    let Some(target) = target else {
        return Err(FleetPlanError::ReactorsWithoutTargetHost { list });
    };
    let Some(text) = target.cpus else {
        return Err(FleetPlanError::ReactorsWithoutTargetCpus { list });
    };
    let cpus =
        planner::cpuset::parse_cpu_list(text).map_err(|source| FleetPlanError::TargetCpus {
            text: text.to_string(),
            source,
        })?;
    let counts = axis_counts(axes, "reactors", cpus.len(), "the CPUs of --target-cpus")?;
    Ok(counts
        .iter()
        .map(|&k| {
            cpus[..k]
                .iter()
                .map(|c| c.to_string())
                .collect::<Vec<_>>()
                .join(",")
        })
        .collect())
}
