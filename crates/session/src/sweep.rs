//! A sweep on this machine (`numio sweep AXIS=VALUES [TARGETS]`): one
//! bench plan per point of the axes, placed by one policy (local unless
//! `--numa` or `--cpus` say otherwise), with the jobs axis capped at the
//! cores the placement gives a target (warned, so a cores curve never
//! measures time-sharing), run as a [`Schedule`] with one arm per point;
//! a `reactors` axis runs each point against a `numio serve` of its own
//! ([`crate::served`]). Then the outcome as a result set: the measured
//! runs kept ([`keep_measured`]) and the sweep's spec ([`result_set`]).
//!
//! Nothing here prints: warnings go to the caller's `say`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use planner::flags::{FlagError, Placing, WorkloadFlags};
use planner::{PlanError, PlanRequest, Policy, RwMode};
use report::{ResultSet, SetKind, SweepGoal, SweepSpec};
use topology::Topology;

use crate::axes::{self, cap_jobs, is_cores_axis, over_transport, points, Axis, AxisError};
use crate::served::{self, ServeRunner};
use crate::{LiveArm, LocalRunner, Runner, Schedule};

/// Why a sweep cannot be planned; each names the word or flag and the fix.
#[derive(Debug, thiserror::Error)]
pub enum SweepError {
    /// The axes and targets do not make a sweep.
    #[error(transparent)]
    Axis(#[from] AxisError),
    /// A workload or placement flag's value.
    #[error(transparent)]
    Flag(#[from] FlagError),
    /// A value of an axis that its flag does not take.
    #[error("{axis}={value}: {reason}")]
    Value {
        /// The axis.
        axis: String,
        /// The value.
        value: String,
        /// What it takes.
        reason: String,
    },
    /// A cores axis with `--cpus`.
    #[error("{axis}={values} with --cpus {cpus}: the {axis} axis takes its cores from the planner (physical cores first); drop --cpus, or sweep another axis with --cpus")]
    CoresWithCpus {
        /// The axis.
        axis: String,
        /// Its values, joined.
        values: String,
        /// The CPU list.
        cpus: String,
    },
    /// A `reactors` axis with targets (the sweep serves its own).
    #[error("reactors={values} with target {target}: the sweep serves its own RAM namespace on loopback; drop the targets")]
    ReactorsWithTargets {
        /// The axis's values, joined.
        values: String,
        /// The first target.
        target: String,
    },
    /// A `reactors` axis with a `devices` axis.
    #[error("reactors with devices: the served target has one namespace; sweep one of them")]
    ReactorsWithDevices,
    /// A `reactors` axis with a `transport` axis.
    #[error("reactors with transport: the served target is on loopback, where RDMA does not run; serve one yourself (numio serve --transport tcp,rdma --listen ADDR:4420 on an RDMA-capable interface) and give it as a target")]
    ReactorsWithTransport,
    /// `--target-iops` and `--target-bw` together.
    #[error("--target-iops and --target-bw: give one goal")]
    TwoGoals,
    /// A goal that is no count or size.
    #[error("{flag} {text}: {fix}")]
    Goal {
        /// The flag.
        flag: &'static str,
        /// Its value.
        text: String,
        /// What to give.
        fix: &'static str,
    },
    /// The default targets could not be chosen.
    #[error(transparent)]
    Targets(#[from] crate::bench::BenchError),
    /// The machine's topology could not be read.
    #[error(transparent)]
    Topology(#[from] topology::TopologyError),
    /// The widest point could not be placed (to cap the jobs axis).
    #[error("placing the widest point")]
    Widest(#[source] PlanError),
    /// A point could not be planned.
    #[error("point {label}")]
    Point {
        /// The point.
        label: String,
        /// Why.
        #[source]
        source: Box<SweepError>,
    },
    /// The planner could not place a point.
    #[error(transparent)]
    Plan(#[from] PlanError),
}

fn value_error(axis: &str, value: &str, reason: &str) -> SweepError {
    SweepError::Value {
        axis: axis.to_string(),
        value: value.to_string(),
        reason: reason.to_string(),
    }
}

/// The goal of `--target-iops` (a count: `800k`, `1.5M`) or
/// `--target-bw` (a size per second: `3G`).
pub fn goal(iops: Option<&str>, bw: Option<&str>) -> Result<Option<SweepGoal>, SweepError> {
    match (iops, bw) {
        (Some(_), Some(_)) => Err(SweepError::TwoGoals),
        (Some(text), None) => {
            let n = parse_count(text).ok_or_else(|| SweepError::Goal {
                flag: "--target-iops",
                text: text.to_string(),
                fix: "give a count such as 500000, 800k or 1.5M",
            })?;
            Ok(Some(SweepGoal::Iops(n)))
        }
        (None, Some(text)) => {
            let bytes = planner::flags::parse_size("target-bw", text)?;
            if bytes == 0 {
                return Err(SweepError::Goal {
                    flag: "--target-bw",
                    text: text.to_string(),
                    fix: "give a bandwidth above 0, such as 3G",
                });
            }
            Ok(Some(SweepGoal::BandwidthBytesPerS(bytes as f64)))
        }
        (None, None) => Ok(None),
    }
}

/// `800k`, `1.5M`, `2G` or a plain number (decimal units).
fn parse_count(text: &str) -> Option<f64> {
    let t = text.trim();
    let (num, mult) = match t.chars().last()? {
        'k' | 'K' => (&t[..t.len() - 1], 1e3),
        'm' | 'M' => (&t[..t.len() - 1], 1e6),
        'g' | 'G' => (&t[..t.len() - 1], 1e9),
        _ => (t, 1.0),
    };
    num.parse::<f64>()
        .ok()
        .filter(|v| v.is_finite() && *v > 0.0)
        .map(|v| v * mult)
}

/// What a sweep on this machine was asked.
#[derive(Debug, Clone)]
pub struct SweepAsk<'a> {
    /// The axes.
    pub axes: Vec<Axis>,
    /// The targets given (none: as `numio bench`).
    pub targets: &'a [String],
    /// The workload flags, which each point's values override.
    pub workload: &'a WorkloadFlags,
    /// `--numa` and `--cpus` (not `--cpus-for`).
    pub placing: &'a Placing,
    /// The engine options of every run.
    pub opts: &'a engine::RunOptions,
    /// Runs per point.
    pub repeat: usize,
    /// The numio binary a `reactors` axis serves with.
    pub exe: PathBuf,
}

/// A sweep ready to run.
pub struct Planned {
    /// The axes (the jobs axis capped).
    pub axes: Vec<Axis>,
    /// One arm per point, grouped by targets.
    pub schedule: Schedule,
    /// The cores (jobs) of each point, in the points' order.
    pub cores: Vec<usize>,
    /// Each run on this machine, or against a serve of its own.
    pub runner: Box<dyn Runner>,
}

/// Plans a sweep on this machine; `say` hears each warning once, naming
/// its points unless it holds at every one.
pub fn plan(ask: SweepAsk<'_>, say: &mut dyn FnMut(String)) -> Result<Planned, SweepError> {
    let mut axes = ask.axes;
    let topo = Topology::discover(Path::new("/"))?;
    let base = ask.workload.workload()?;
    axes::check_initiator_cores(&axes, ask.targets)?;
    let serve = served_points(&axes, ask.targets, &topo)?;
    let (targets, labels) = match &serve {
        Some(_) => (vec![served::TARGET.to_string()], Default::default()),
        None => crate::bench::choose_targets(ask.targets, Some(&topo), &base, say)?,
    };
    let policy = policy(ask.placing, &axes, &targets)?;
    cap_jobs_axis(&mut axes, &targets, ask.workload, &topo, &policy, say)?;
    let mut arms = Vec::new();
    let mut cores = Vec::new();
    let mut warned: Vec<(String, Vec<String>)> = Vec::new();
    let all_points = points(&axes);
    for (label, values) in &all_points {
        let mut o = ask.opts.clone();
        o.labels = labels.clone();
        if serve.is_some() {
            o.backend = engine::BackendKind::Tcp;
        }
        if let Some(i) = axes.iter().position(|a| a.name == "transport") {
            o.backend = axes::transport_backend(&values[i].1);
        }
        let placement = point_placement(ask.workload, &axes, values, &targets, &topo, &policy)
            .map_err(|e| SweepError::Point {
                label: label.clone(),
                source: Box::new(e),
            })?;
        for warn in &placement.warnings {
            match warned.iter_mut().find(|(w, _)| w == warn) {
                Some((_, at)) => at.push(label.clone()),
                None => warned.push((warn.clone(), vec![label.clone()])),
            }
        }
        cores.push(placement.targets.iter().map(|t| t.jobs.len()).sum());
        arms.push(LiveArm {
            label: label.clone(),
            spec: label.clone(),
            placement,
            opts: o,
            settle_group: 0,
        });
    }
    for (warn, at) in &warned {
        if at.len() == all_points.len() {
            say(format!("warning: {warn}"));
        } else {
            say(format!("warning ({}): {warn}", at.join(", ")));
        }
    }
    let mut schedule = Schedule {
        arms,
        rounds: ask.repeat,
    };
    schedule.group_by_targets();
    let runner: Box<dyn Runner> = match serve {
        Some(cpus) => Box::new(ServeRunner { cpus, exe: ask.exe }),
        None => Box::new(LocalRunner),
    };
    Ok(Planned {
        axes,
        schedule,
        cores,
        runner,
    })
}

/// For a `reactors` axis, the reactor CPUs of each point by its label;
/// errors for targets given with it (the sweep serves its own) and for a
/// `devices` or `transport` axis beside it.
fn served_points(
    axes: &[Axis],
    given: &[String],
    topo: &Topology,
) -> Result<Option<HashMap<String, Vec<u32>>>, SweepError> {
    let Some(i) = axes.iter().position(|a| a.name == "reactors") else {
        return Ok(None);
    };
    if let Some(t) = given.first() {
        return Err(SweepError::ReactorsWithTargets {
            values: axes[i].values.join(","),
            target: t.clone(),
        });
    }
    if axes.iter().any(|a| a.name == "devices") {
        return Err(SweepError::ReactorsWithDevices);
    }
    if axes.iter().any(|a| a.name == "transport") {
        return Err(SweepError::ReactorsWithTransport);
    }
    let mut cpus = HashMap::new();
    for (label, values) in points(axes) {
        let value = &values[i].1;
        cpus.insert(label, reactor_cpus(topo, value)?);
    }
    Ok(Some(cpus))
}

/// The CPUs of `value` reactors: the last ones online, so that the
/// initiator's jobs (placed from the first CPUs) and the target's
/// reactors share none while the machine has enough.
pub fn reactor_cpus(topo: &Topology, value: &str) -> Result<Vec<u32>, SweepError> {
    let online: Vec<u32> = topo
        .cpus
        .iter()
        .filter(|c| c.online)
        .map(|c| c.id.0)
        .collect();
    let value_error = |reason: String| SweepError::Value {
        axis: "reactors".into(),
        value: value.to_string(),
        reason,
    };
    let n: usize = value
        .parse()
        .ok()
        .filter(|n| *n >= 1)
        .ok_or_else(|| value_error("give a whole number of reactors, 1 or more".into()))?;
    if n > online.len() {
        return Err(value_error(format!(
            "the machine has {} online CPUs; give at most {} reactors",
            online.len(),
            online.len()
        )));
    }
    Ok(online[online.len() - n..].to_vec())
}

/// The placement policy of every point, from `--numa` and `--cpus` (not
/// with a cores axis, whose cores the planner picks).
pub fn policy(placing: &Placing, axes: &[Axis], targets: &[String]) -> Result<Policy, SweepError> {
    if let Some(list) = &placing.cpus {
        if let Some(a) = axes.iter().find(|a| is_cores_axis(&a.name)) {
            return Err(SweepError::CoresWithCpus {
                axis: a.name.clone(),
                values: a.values.join(","),
                cpus: list.clone(),
            });
        }
    }
    Ok(placing.policy(targets)?)
}

/// The workload flags with `axis` set to `value` (all but `devices`,
/// `transport` and `reactors`, which the placement, the backend and the
/// served target take).
pub fn apply(w: &mut WorkloadFlags, axis: &str, value: &str) -> Result<(), SweepError> {
    let num = |v: &str| -> Result<i64, SweepError> {
        v.parse()
            .map_err(|_| value_error(axis, v, "not a whole number"))
    };
    match axis {
        "jobs" | "initiator-cores" => w.numjobs = Some(num(value)?),
        "iodepth" => w.iodepth = Some(num(value)?),
        "bs" => w.bs = Some(value.to_string()),
        "rwmixread" => {
            w.rwmixread = Some(
                value
                    .parse()
                    .ok()
                    .filter(|p: &u8| *p <= 100)
                    .ok_or_else(|| value_error(axis, value, "give a percentage 0-100"))?,
            )
        }
        "rw" => {
            w.rw = Some(
                RwMode::from_fio_name(&value.to_ascii_lowercase()).ok_or_else(|| {
                    value_error(
                        axis,
                        value,
                        "give read, write, randread, randwrite, rw or randrw",
                    )
                })?,
            )
        }
        _ => {}
    }
    Ok(())
}

/// The most jobs per target the policy gives distinct CPUs on `targets`
/// (the fewest over the targets); `None` when jobs are not pinned.
pub fn jobs_cap(
    topo: &Topology,
    targets: &[String],
    flags: &WorkloadFlags,
    policy: &Policy,
) -> Result<Option<usize>, SweepError> {
    if matches!(policy, Policy::None | Policy::Explicit(_)) {
        return Ok(None);
    }
    let mut w = flags.clone();
    w.numjobs = Some(topo.cpus.len().max(1) as i64);
    let request = PlanRequest {
        targets: crate::targets::target_specs(Path::new("/"), targets),
        workload: w.workload()?,
        policy: policy.clone(),
    };
    let placement = planner::plan(topo, &request).map_err(SweepError::Widest)?;
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

/// Caps the jobs axis at the CPUs the placement gives a target (the
/// fewest devices of a devices axis), with a warning.
fn cap_jobs_axis(
    axes: &mut [Axis],
    targets: &[String],
    flags: &WorkloadFlags,
    topo: &Topology,
    policy: &Policy,
    say: &mut dyn FnMut(String),
) -> Result<(), SweepError> {
    let Some(jobs) = axes.iter().position(|a| is_cores_axis(&a.name)) else {
        return Ok(());
    };
    let fewest = axes
        .iter()
        .find(|a| a.name == "devices")
        .and_then(|a| {
            a.values
                .iter()
                .filter_map(|v| v.parse::<usize>().ok())
                .min()
        })
        .unwrap_or(targets.len())
        .clamp(1, targets.len().max(1));
    let Some(cap) = jobs_cap(topo, &targets[..fewest.min(targets.len())], flags, policy)? else {
        return Ok(());
    };
    if let Some((kept, warning)) = cap_jobs(&axes[jobs].values, cap, targets) {
        say(format!("warning: {warning}"));
        axes[jobs].values = kept;
    }
    Ok(())
}

/// The plan of one point: the workload flags with the point's values, on
/// its targets (the first `devices`), placed by `policy`.
pub fn point_placement(
    flags: &WorkloadFlags,
    axes: &[Axis],
    values: &[(usize, String)],
    targets: &[String],
    topo: &Topology,
    policy: &Policy,
) -> Result<planner::Placement, SweepError> {
    let mut w = flags.clone();
    let mut use_targets = targets.to_vec();
    let mut policy = policy.clone();
    for (axis, (_, v)) in axes.iter().zip(values) {
        if axis.name == "devices" {
            let n: usize = v
                .parse()
                .ok()
                .filter(|n| *n >= 1)
                .ok_or_else(|| value_error("devices", v, "give a count of 1 or more"))?;
            if n > targets.len() {
                let why = format!(
                    "only {} targets given ({}); name more targets",
                    targets.len(),
                    targets.join(", ")
                );
                return Err(value_error("devices", &n.to_string(), &why));
            }
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
                    .collect::<Result<Vec<_>, AxisError>>()?;
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
        targets: crate::targets::target_specs(Path::new("/"), &use_targets),
        workload: w.workload()?,
        policy,
    };
    Ok(planner::plan(topo, &request)?)
}

/// The arms of `outcome` and whether Ctrl-C cut it: the completed runs,
/// or, when it cut the first run, that run's measured part (marked
/// interrupted in its result), so a long first point still reports; `say`
/// hears which.
pub fn keep_measured(
    outcome: crate::Outcome,
    say: &mut dyn FnMut(String),
) -> (Vec<report::Arm>, bool) {
    let completed = outcome.completed();
    let mut arms = outcome.arms;
    let Some(cut) = outcome.interrupted else {
        return (arms, false);
    };
    match cut.partial {
        Some(p) if completed == 0 && p.runtime_ns > 0 => {
            say(format!(
                "sweep interrupted in its first run: reporting its measured {:.1} s of {}; the result is marked interrupted",
                p.runtime_ns as f64 / 1e9,
                arms[cut.run.arm].label
            ));
            arms[cut.run.arm].runs.push(p.record);
        }
        _ => say(format!(
            "sweep interrupted: reporting the {completed} runs completed; the result is marked interrupted"
        )),
    }
    (arms, true)
}

/// The sweep's result set (`command` and `created_unix_s` as the set
/// records them).
pub fn result_set(
    axes: &[Axis],
    arms: Vec<report::Arm>,
    cores: Vec<usize>,
    knee_efficiency: f64,
    goal: Option<SweepGoal>,
    interrupted: bool,
    (command, created_unix_s): (String, u64),
) -> ResultSet {
    let mut set = ResultSet::new(SetKind::Sweep, command, created_unix_s, arms);
    set.sweep = Some(SweepSpec {
        axes: axes::spec(axes),
        knee_efficiency,
        cores,
        goal,
        interrupted,
        fleet: None,
    });
    set
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn goals_parse_with_units_and_bad_ones_are_named() {
        assert_eq!(parse_count("1.5M"), Some(1.5e6));
        assert_eq!(parse_count("800k"), Some(800e3));
        assert_eq!(parse_count("42"), Some(42.0));
        assert_eq!(parse_count("x"), None);
        assert_eq!(parse_count("-1"), None);
        assert!(goal(Some("lots"), None)
            .unwrap_err()
            .to_string()
            .starts_with("--target-iops lots: give a count"));
    }

    #[test]
    fn cpus_conflicts_with_the_jobs_axis_and_numa() {
        let axis = |name: &str| Axis {
            name: name.into(),
            values: s(&["1", "2"]),
        };
        let t = s(&["/dev/x"]);
        let placing = |numa, cpus: Option<&str>| Placing {
            numa,
            cpus: cpus.map(String::from),
            cpus_for: Vec::new(),
        };
        let err = policy(&placing(None, Some("0-1")), &[axis("jobs")], &t).unwrap_err();
        assert!(
            err.to_string().contains("jobs=1,2 with --cpus 0-1"),
            "{err}"
        );
        let local = Some(planner::flags::Numa::Local);
        let err = policy(&placing(local, Some("0")), &[axis("iodepth")], &t).unwrap_err();
        assert!(err.to_string().contains("drop --numa"), "{err}");
        assert!(matches!(
            policy(&placing(None, Some("0")), &[axis("iodepth")], &t).unwrap(),
            Policy::Explicit(_)
        ));
        let spread = Some(planner::flags::Numa::Spread);
        assert!(matches!(
            policy(&placing(spread, None), &[axis("jobs")], &t).unwrap(),
            Policy::Spread
        ));
    }

    #[test]
    fn axis_values_are_checked_as_their_flags() {
        let mut w = WorkloadFlags::default();
        apply(&mut w, "rw", "RandWrite").unwrap();
        assert_eq!(w.rw, Some(RwMode::RandWrite));
        assert_eq!(
            apply(&mut w, "iodepth", "x").unwrap_err().to_string(),
            "iodepth=x: not a whole number"
        );
        assert!(apply(&mut w, "rwmixread", "101").is_err());
    }
}
