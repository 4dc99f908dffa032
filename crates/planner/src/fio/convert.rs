//! [`JobFile::to_placement`]: fio jobs → numio placement.

use topology::{CpuId, CpuList, Topology};

use super::error::{FioError, OptionError};
use super::options::FioJob;
use super::values::CpusPolicy;
use super::{fio_split, JobFile};
use crate::cpuset::{is_online, node_cpus};
use crate::placement::{JobPlacement, Placement, TargetPlacement};
use crate::request::{PlanRequest, Policy, TargetSpec};
use crate::resolve::resolve_target;

impl JobFile {
    /// The placement that runs these jobs on `topo`: CPUs exactly as fio
    /// pins them (`split` uses fio's global job number), memory as
    /// `numa_mem_policy` says. With `numa_auto`, jobs without
    /// `cpus_allowed`/`numa_cpu_nodes` are placed by the `local` policy;
    /// without it they stay unpinned. CPUs or nodes the machine lacks are
    /// errors naming the line.
    pub fn to_placement(&self, topo: &Topology, numa_auto: bool) -> Result<Placement, FioError> {
        let mut targets = Vec::with_capacity(self.jobs.len());
        let mut unpinned = Vec::new();
        let mut first_job = 0usize;
        for job in &self.jobs {
            let t = target_of(job, topo, first_job)?;
            if t.jobs.iter().all(|j| j.cpus.is_empty()) {
                unpinned.push(targets.len());
            }
            first_job += job.workload.numjobs as usize;
            targets.push(t);
        }
        let mut warnings = self.warnings.clone();
        let mut policy = "fio".to_string();
        if numa_auto && !unpinned.is_empty() {
            policy = "fio+local".into();
            auto_place(topo, &mut targets, &unpinned, &mut warnings);
        }
        warnings.extend(crate::workload::jobs_memory_warning(first_job));
        Ok(Placement {
            policy,
            targets,
            warnings,
        })
    }
}

fn target_of(job: &FioJob, topo: &Topology, first_job: usize) -> Result<TargetPlacement, FioError> {
    let path = job
        .filename
        .clone()
        .expect("jobs without filename are rejected");
    let res = resolve_target(topo, &path);
    let n = job.workload.numjobs as usize;
    let (set, per_job) = job_cpus(job, topo, first_job)?;
    let jobs = (0..n)
        .map(|j| JobPlacement {
            cpus: per_job.get(j).cloned().unwrap_or_default(),
            mem: job.mem.clone(),
        })
        .collect();
    Ok(TargetPlacement {
        path,
        node: res.node,
        workload: job.workload.clone(),
        jobs,
        notes: res.notes,
        cpus: set,
        backend: Some(job.backend.clone()),
        name: Some(job.name.clone()),
        options: job.options.clone(),
    })
}

/// The section's CPU set and each job's CPUs.
fn job_cpus(
    job: &FioJob,
    topo: &Topology,
    first_job: usize,
) -> Result<(Vec<CpuId>, Vec<Vec<CpuId>>), FioError> {
    let n = job.workload.numjobs as usize;
    if let (Some(c), Some(nodes)) = (&job.cpus_allowed, &job.numa_cpu_nodes) {
        return Err(FioError::BadValue {
            at: nodes.at.clone(),
            key: "numa_cpu_nodes".into(),
            value: nodes.text.clone(),
            reason: Box::new(OptionError::NodesWithCpusAllowed {
                cpus_allowed_line: c.at.line,
            }),
        });
    }
    let set: Vec<CpuId> = if let Some(c) = &job.cpus_allowed {
        if let Some(&bad) = c.value.iter().find(|&&cpu| !is_online(topo, cpu)) {
            return Err(FioError::NotOnThisMachine {
                at: c.at.clone(),
                key: "cpus_allowed".into(),
                value: c.text.clone(),
                message: format!("CPU {bad} is not an online CPU of this machine; pick CPUs from `numio topo` or use --numa auto without cpus_allowed"),
            });
        }
        c.value.clone()
    } else if let Some(nodes) = &job.numa_cpu_nodes {
        let mut all = Vec::new();
        for &node in &nodes.value {
            let cpus = node_cpus(topo, node);
            if cpus.is_empty() {
                return Err(FioError::NotOnThisMachine {
                    at: nodes.at.clone(),
                    key: "numa_cpu_nodes".into(),
                    value: nodes.text.clone(),
                    message: format!("node {} has no online CPUs on this machine", node.0),
                });
            }
            all.extend(cpus);
        }
        all.sort_unstable();
        all.dedup();
        all
    } else {
        return Ok((Vec::new(), vec![Vec::new(); n]));
    };
    // fio splits only `cpus_allowed`; `numa_cpu_nodes` always gives every
    // job all CPUs of the nodes.
    let policy = if job.cpus_allowed.is_some() {
        job.cpus_policy
    } else {
        CpusPolicy::Shared
    };
    let per_job = match policy {
        CpusPolicy::Shared => vec![set.clone(); n],
        CpusPolicy::Split => (0..n)
            .map(|j| fio_split(&set, first_job + j).into_iter().collect())
            .collect(),
    };
    Ok((set, per_job))
}

/// `--numa auto`: the `local` policy for the jobs without CPUs.
fn auto_place(
    topo: &Topology,
    targets: &mut [TargetPlacement],
    unpinned: &[usize],
    warnings: &mut Vec<String>,
) {
    let request = PlanRequest {
        targets: unpinned
            .iter()
            .map(|&i| TargetSpec {
                path: targets[i].path.clone(),
                workload: Some(targets[i].workload.clone()),
                backend: targets[i].backend.clone(),
                device: None,
            })
            .collect(),
        workload: crate::Workload::default(),
        policy: Policy::Local,
    };
    // `plan` fails only on an empty request, no CPUs or zero jobs, which the
    // job file rules out (numjobs >= 1) or leaves nothing to place.
    let Ok(planned) = crate::plan(topo, &request) else {
        warnings.push("--numa auto: the topology has no online CPU; jobs left unpinned".into());
        return;
    };
    for (&i, p) in unpinned.iter().zip(planned.targets) {
        let t = &mut targets[i];
        let explicit_mem = t.jobs.first().map(|j| j.mem.clone());
        t.jobs = p
            .jobs
            .into_iter()
            .map(|mut j| {
                if let Some(m) = explicit_mem
                    .clone()
                    .filter(|m| *m != crate::MemPolicy::Default)
                {
                    j.mem = m;
                }
                j
            })
            .collect();
        t.notes = p.notes;
        t.notes.push(format!(
            "--numa auto: placed on CPUs {}",
            CpuList::of(&p.cpus)
        ));
        t.cpus = p.cpus;
    }
    warnings.extend(planned.warnings);
}
