//! `numio bench` inputs other than plain targets: a fio job file
//! (`numio bench JOB.fio`), fio's command-line form after `--`
//! (`numio bench -- --name=a --filename=/dev/nvme0n1 --rw=randread`), and a
//! saved numio plan (`numio bench --plan FILE`). Each becomes a [`Placement`]
//! that the engine runs unchanged; stonewall / wait_for split it into groups
//! that run one after another, as fio runs them.

use std::path::Path;

use anyhow::{bail, Context};
use planner::fio::{JobFile, ParseOptions};
use planner::Placement;
use topology::Topology;

/// Where the jobs of a bench run come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JobSource<'a> {
    /// Targets and workload flags (the planner places them).
    Targets,
    /// A fio job file.
    FioFile(&'a Path),
    /// fio's command-line form (the words after `--`).
    FioArgs(&'a [String]),
    /// A saved numio plan file.
    Plan(&'a Path),
}

/// Decides the source from the positional targets, `--plan` and the words
/// after `--`; mixing them is an error that says which to keep.
pub fn source<'a>(
    targets: &'a [String],
    plan: Option<&'a Path>,
    fio_args: &'a [String],
) -> anyhow::Result<JobSource<'a>> {
    let job_files: Vec<&String> = targets.iter().filter(|t| is_job_file(t)).collect();
    let given = [!job_files.is_empty(), plan.is_some(), !fio_args.is_empty()];
    if given.iter().filter(|&&g| g).count() > 1 {
        bail!("give one of: a fio job file, --plan FILE, or fio options after `--` (not several)");
    }
    if let Some(p) = plan {
        if !targets.is_empty() {
            bail!(
                "--plan {} names its own targets: drop the targets {targets:?}",
                p.display()
            );
        }
        return Ok(JobSource::Plan(p));
    }
    if !fio_args.is_empty() {
        if !targets.is_empty() {
            bail!("fio options after `--` name their own --filename: drop the targets {targets:?}");
        }
        return Ok(JobSource::FioArgs(fio_args));
    }
    match (job_files.as_slice(), targets.len()) {
        ([], _) => Ok(JobSource::Targets),
        ([file], 1) => Ok(JobSource::FioFile(Path::new(file.as_str()))),
        _ => bail!(
            "a fio job file ({}) names its own targets: run it alone (numio bench JOB.fio)",
            job_files[0]
        ),
    }
}

/// Whether a positional argument names a fio job file (by its extension).
fn is_job_file(target: &str) -> bool {
    let p = Path::new(target);
    matches!(p.extension().and_then(|e| e.to_str()), Some("fio" | "job"))
        && !target.starts_with("/dev/")
}

/// How job files are read and placed.
#[derive(Debug, Clone, Default)]
pub struct JobFileOptions {
    /// Skip options numio does not implement, with a warning.
    pub ignore_unknown: bool,
    /// Run only these sections.
    pub sections: Vec<String>,
    /// Give jobs without cpus_allowed / numa_cpu_nodes numio's local placement.
    pub numa_auto: bool,
}

/// The placement of a non-target source, checked against this machine.
pub fn load(
    src: &JobSource<'_>,
    topo: &Topology,
    opts: &JobFileOptions,
) -> anyhow::Result<Placement> {
    let parse = ParseOptions {
        ignore_unknown: opts.ignore_unknown,
        sections: opts.sections.clone(),
    };
    let placement = match src {
        JobSource::Targets => bail!("internal: targets are placed by the planner"),
        JobSource::Plan(path) => {
            let p = Placement::load(path)
                .with_context(|| format!("reading the plan {}", path.display()))?;
            p.check_on(topo).with_context(|| {
                format!("the plan {} does not fit this machine", path.display())
            })?;
            return Ok(p);
        }
        JobSource::FioFile(path) => from_job_file(
            planner::fio::load_job_file(path, &parse)
                .with_context(|| format!("reading the job file {}", path.display()))?,
            topo,
            opts,
        )?,
        JobSource::FioArgs(args) => from_job_file(
            planner::fio::parse_command_line(args, &parse)
                .context("reading the fio options after `--`")?,
            topo,
            opts,
        )?,
    };
    Ok(placement)
}

fn from_job_file(
    jobs: JobFile,
    topo: &Topology,
    opts: &JobFileOptions,
) -> anyhow::Result<Placement> {
    for w in &jobs.warnings {
        eprintln!("numio: {}: {w}", jobs.origin);
    }
    jobs.to_placement(topo, opts.numa_auto)
        .with_context(|| format!("placing the jobs of {}", jobs.origin))
}

/// Splits a placement into groups that run one after another: a target whose
/// section has `stonewall` (or `wait_for`) starts a new group, as in fio.
pub fn groups(placement: &Placement) -> Vec<Placement> {
    let mut out: Vec<Placement> = Vec::new();
    for t in &placement.targets {
        let barrier = t.options.stonewall || t.options.wait_for.is_some();
        if out.is_empty() || barrier {
            out.push(Placement {
                policy: placement.policy.clone(),
                targets: Vec::new(),
                warnings: if out.is_empty() {
                    placement.warnings.clone()
                } else {
                    Vec::new()
                },
            });
        }
        out.last_mut()
            .expect("a group was just pushed")
            .targets
            .push(t.clone());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sources_are_told_apart_and_mixtures_refused() {
        let t = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let none: Vec<String> = Vec::new();
        assert_eq!(
            source(&t(&["/dev/nvme0n1"]), None, &none).unwrap(),
            JobSource::Targets
        );
        let jf = t(&["jobs/a.fio"]);
        assert_eq!(
            source(&jf, None, &none).unwrap(),
            JobSource::FioFile(Path::new("jobs/a.fio"))
        );
        let plan = Path::new("p.json");
        assert_eq!(
            source(&none, Some(plan), &none).unwrap(),
            JobSource::Plan(plan)
        );
        let args = t(&["--name=a", "--filename=/tmp/x"]);
        assert_eq!(
            source(&none, None, &args).unwrap(),
            JobSource::FioArgs(&args)
        );
        assert!(source(&jf, Some(plan), &none).is_err());
        assert!(source(&t(&["a.fio", "/dev/nvme0n1"]), None, &none).is_err());
        assert!(source(&t(&["/dev/nvme0n1"]), Some(plan), &none).is_err());
        assert!(source(&t(&["/dev/nvme0n1"]), None, &args).is_err());
    }

    #[test]
    fn stonewall_and_wait_for_start_groups() {
        let mut p = Placement::default();
        for (i, (stone, wait)) in [
            (false, None),
            (false, None),
            (true, None),
            (false, Some("c")),
        ]
        .into_iter()
        .enumerate()
        {
            let mut t = planner::TargetPlacement {
                path: format!("t{i}"),
                ..Default::default()
            };
            t.options.stonewall = stone;
            t.options.wait_for = wait.map(String::from);
            p.targets.push(t);
        }
        let g = groups(&p);
        let paths: Vec<Vec<&str>> = g
            .iter()
            .map(|g| g.targets.iter().map(|t| t.path.as_str()).collect())
            .collect();
        assert_eq!(paths, vec![vec!["t0", "t1"], vec!["t2"], vec!["t3"]]);
    }
}
