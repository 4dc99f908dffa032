//! [`plan`]: the policies `none` and `explicit`, and the shared steps
//! (validation, target resolution). `local`, `remote` and `spread` live in
//! [`crate::local`], [`crate::remote`] and [`crate::spread`].

use topology::{CpuId, CpuList, Topology};

use crate::cpuset::{cpu_node, is_online, online_cpus};
use crate::error::PlanError;
use crate::placement::{JobPlacement, MemPolicy, Placement, TargetPlacement};
use crate::request::{PlanRequest, Policy, TargetSpec};
use crate::resolve::{
    resolve_backing, resolve_network, resolve_pci, resolve_target, Resolution, TargetDevice,
};
use crate::workload::{JOBS_PER_TARGET_MAX, JOBS_TOTAL_MAX};

/// Refuses more than [`JOBS_PER_TARGET_MAX`] jobs on a target or more than
/// [`JOBS_TOTAL_MAX`] in all, before anything is placed.
fn check_job_counts(request: &PlanRequest) -> Result<(), PlanError> {
    let mut jobs_total: u64 = 0;
    for spec in &request.targets {
        let jobs = spec.workload.as_ref().unwrap_or(&request.workload).numjobs;
        if jobs > JOBS_PER_TARGET_MAX {
            return Err(PlanError::TooManyJobs {
                target: spec.path.clone(),
                jobs,
            });
        }
        jobs_total += u64::from(jobs);
    }
    if jobs_total > u64::from(JOBS_TOTAL_MAX) {
        return Err(PlanError::TooManyJobsInAll {
            jobs: jobs_total,
            targets: request.targets.len(),
        });
    }
    Ok(())
}

/// Plans `request` on `topology`: for every target its node, and for every
/// job its CPUs and memory policy. Pure and deterministic: the same inputs
/// always give the same plan.
pub fn plan(topology: &Topology, request: &PlanRequest) -> Result<Placement, PlanError> {
    if request.targets.is_empty() {
        return Err(PlanError::NoTargets);
    }
    if online_cpus(topology).is_empty() {
        return Err(PlanError::NoCpus);
    }
    check_job_counts(request)?;
    let mut targets = Vec::with_capacity(request.targets.len());
    let mut local_nodes = Vec::with_capacity(request.targets.len());
    for spec in &request.targets {
        let workload = spec
            .workload
            .clone()
            .unwrap_or_else(|| request.workload.clone());
        if workload.numjobs == 0 {
            return Err(PlanError::ZeroJobs {
                target: spec.path.clone(),
            });
        }
        let res = match &spec.device {
            Some(TargetDevice::Name(dev)) => {
                let mut r = resolve_target(topology, dev);
                r.notes.insert(0, format!("{} is {dev}", spec.path));
                r
            }
            Some(TargetDevice::Stack(backing)) => resolve_backing(topology, &spec.path, backing),
            Some(TargetDevice::Network(routes)) => resolve_network(topology, &spec.path, routes),
            Some(TargetDevice::Pci { address, node }) => {
                resolve_pci(topology, &spec.path, address, *node)
            }
            None => resolve_target(topology, &spec.path),
        };
        targets.push(base_target(spec, &res, workload));
        local_nodes.push(res.local_nodes);
    }
    let mut warnings = passthru_warnings(topology, &targets);
    match &request.policy {
        Policy::Local => crate::local::place(topology, &mut targets, &local_nodes, &mut warnings),
        Policy::Remote => {
            crate::remote::place(topology, &mut targets, &local_nodes, &mut warnings)?
        }
        Policy::Spread => crate::spread::place(topology, &mut targets, &mut warnings),
        Policy::None => place_none(&mut targets),
        Policy::Explicit(lists) => place_explicit(topology, &mut targets, lists)?,
    }
    if !matches!(request.policy, Policy::Local | Policy::Remote) {
        for t in &targets {
            if t.node.is_none() {
                warnings.push(format!("{}: NUMA node unknown", t.path));
            }
        }
    }
    // Postcondition: every policy but `none` gives each job a CPU.
    if !matches!(request.policy, Policy::None)
        && targets
            .iter()
            .flat_map(|t| &t.jobs)
            .any(|j| j.cpus.is_empty())
    {
        return Err(PlanError::NoCpus);
    }
    let jobs: usize = targets.iter().map(|t| t.jobs.len()).sum();
    warnings.extend(crate::workload::jobs_memory_warning(jobs));
    Ok(Placement {
        policy: request.policy.name().to_string(),
        targets,
        warnings,
    })
}

/// The passthru backend drives the generic character device (`/dev/ngXnY`);
/// a block device given for it gets a warning naming the right one.
fn passthru_warnings(topo: &Topology, targets: &[TargetPlacement]) -> Vec<String> {
    let mut out = Vec::new();
    for t in targets
        .iter()
        .filter(|t| t.backend.as_deref() == Some("passthru"))
    {
        let name = t.path.strip_prefix("/dev/").unwrap_or(&t.path);
        let ns = topo
            .subsystems
            .iter()
            .flat_map(|s| &s.namespaces)
            .find(|n| n.block_device == name);
        if let Some(ng) = ns.and_then(|n| n.generic_device.as_deref()) {
            out.push(format!(
                "{}: the passthru backend drives the generic device; use /dev/{ng}",
                t.path
            ));
        }
    }
    out
}

fn base_target(spec: &TargetSpec, res: &Resolution, workload: crate::Workload) -> TargetPlacement {
    TargetPlacement {
        path: spec.path.clone(),
        node: res.node,
        workload,
        jobs: Vec::new(),
        notes: res.notes.clone(),
        backend: spec.backend.clone(),
        options: crate::JobOptions {
            new_group: true,
            ..crate::JobOptions::default()
        },
        ..TargetPlacement::default()
    }
}

fn place_none(targets: &mut [TargetPlacement]) {
    for t in targets {
        t.jobs = (0..t.workload.numjobs)
            .map(|_| JobPlacement {
                cpus: Vec::new(),
                mem: MemPolicy::Default,
            })
            .collect();
    }
}

/// Whether an explicit-list key names this target (`nvme0n1` names
/// `/dev/nvme0n1` and the other way round).
pub(crate) fn names_target(key: &str, path: &str) -> bool {
    let strip = |s: &str| s.strip_prefix("/dev/").unwrap_or(s).to_string();
    key == path || strip(key) == strip(path)
}

fn place_explicit(
    topo: &Topology,
    targets: &mut [TargetPlacement],
    lists: &[(String, Vec<CpuId>)],
) -> Result<(), PlanError> {
    for (key, _) in lists {
        if !targets.iter().any(|t| names_target(key, &t.path)) {
            return Err(PlanError::StrayCpus {
                target: key.clone(),
            });
        }
    }
    for t in targets.iter_mut() {
        let Some((_, list)) = lists.iter().rev().find(|(k, _)| names_target(k, &t.path)) else {
            return Err(PlanError::MissingCpus {
                target: t.path.clone(),
            });
        };
        let mut list = list.clone();
        list.sort_unstable();
        list.dedup();
        if list.is_empty() {
            return Err(PlanError::EmptyCpus {
                target: t.path.clone(),
            });
        }
        if let Some(&cpu) = list.iter().find(|&&c| !is_online(topo, c)) {
            return Err(PlanError::UnknownCpu {
                target: t.path.clone(),
                cpu,
            });
        }
        remote_note(topo, t, &list);
        t.jobs = (0..t.workload.numjobs as usize)
            .map(|j| JobPlacement {
                cpus: vec![list[j % list.len()]],
                mem: MemPolicy::Local,
            })
            .collect();
        if t.workload.numjobs as usize > list.len() {
            t.notes.push(format!(
                "{} jobs on {} explicit CPUs: jobs share CPUs",
                t.workload.numjobs,
                list.len()
            ));
        }
        t.cpus = list;
    }
    Ok(())
}

fn remote_note(topo: &Topology, t: &mut TargetPlacement, list: &[CpuId]) {
    let Some(node) = t.node else { return };
    let remote: Vec<CpuId> = list
        .iter()
        .copied()
        .filter(|&c| cpu_node(topo, c).is_some_and(|n| n != node))
        .collect();
    if !remote.is_empty() {
        t.notes.push(format!(
            "explicit CPUs {} are not on the target's node {}",
            CpuList::of(&remote),
            node.0
        ));
    }
}
