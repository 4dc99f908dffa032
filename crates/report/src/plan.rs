//! The human view of a plan (`numio plan`, text format).

use planner::Placement;
use topology::CpuList;

/// The plan as `numio plan` prints it: the policy, then a row per target
/// (its node, CPUs, memory policy and its jobs' CPUs) with its notes.
pub fn text(p: &Placement) -> String {
    let mut out = format!("policy {}\n", p.policy);
    out.push_str(&format!(
        "{:<20} {:>5} {:<24} {:<8} JOB CPUS\n",
        "TARGET", "NODE", "CPUS", "MEMORY"
    ));
    for t in &p.targets {
        let node = t.node.map_or("?".to_string(), |n| n.0.to_string());
        let same = t.jobs.len() > 1 && t.jobs.iter().all(|j| j.cpus == t.jobs[0].cpus);
        let jobs: Vec<String> = t
            .jobs
            .iter()
            .map(|j| {
                if j.cpus.is_empty() {
                    // Only policy none leaves a job unpinned (the planner
                    // gives every job of the others a CPU).
                    "unpinned".to_string()
                } else {
                    CpuList::of(&j.cpus).to_string()
                }
            })
            .collect();
        let first_mem = t.jobs.first().map(|j| &j.mem);
        let mem = match first_mem {
            // Jobs bound apart (spread over nodes without memory): the fio
            // and JSON formats give each job's.
            Some(m) if t.jobs.iter().any(|j| &j.mem != m) => "per job".to_string(),
            Some(planner::MemPolicy::Local) => "local".to_string(),
            Some(planner::MemPolicy::Bind(n)) => format!(
                "bind:{}",
                n.iter()
                    .map(|x| x.0.to_string())
                    .collect::<Vec<_>>()
                    .join(",")
            ),
            _ => "default".to_string(),
        };
        let cpus = if t.cpus.is_empty() {
            "any".to_string()
        } else {
            CpuList::of(&t.cpus).to_string()
        };
        out.push_str(&format!(
            "{:<20} {:>5} {:<24} {:<8} {}\n",
            t.path,
            node,
            cpus,
            mem,
            if same && t.jobs[0].cpus.is_empty() {
                format!("{} jobs, unpinned", t.jobs.len())
            } else if same {
                format!("{} jobs, each on {}", t.jobs.len(), jobs[0])
            } else {
                jobs.join(" ")
            }
        ));
        for n in &t.notes {
            out.push_str(&format!("  note: {n}\n"));
        }
    }
    out
}
