//! A bench run's plan, as `numio bench` (and a fleet's agent, for its
//! host) makes it from what the user gave: where the jobs come from
//! ([`JobSource`]: targets the planner places, a fio job file, fio's
//! command-line form after `--`, a saved numio plan), the default targets
//! when none are named ([`choose_targets`]: every NVMe namespace, read
//! only, else the embedded default file), targets laid out as fio lays out
//! a missing file, the workload flags over a job file or plan (fio's rule:
//! the command line wins), and the stonewall groups that run one after
//! another ([`groups`]).
//!
//! Nothing here prints: what a user should read on stderr while the plan
//! is made (a file being laid out, a job file's warnings) goes to the
//! caller's `say`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use planner::fio::{FioError, JobFile, ParseOptions};
use planner::flags::{FlagError, Placing, WorkloadFlags};
use planner::{
    JobPlacement, MemPolicy, Placement, PlacementMismatch, PlanError, PlanFileError, PlanRequest,
    TargetPlacement, Workload,
};
use topology::{Topology, TopologyError};

use crate::layout::{self, DefaultTargetError, LayoutError};

/// Why a bench run could not be planned; each names the input and the fix.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    /// A job file, `--plan` and fio options after `--` were mixed.
    #[error("give one of: a fio job file, --plan FILE, or fio options after `--` (not several)")]
    MixedSources,
    /// `--plan` with targets.
    #[error("--plan {} names its own targets: drop the targets {targets:?}", plan.display())]
    PlanWithTargets {
        /// The plan file.
        plan: PathBuf,
        /// The targets given too.
        targets: Vec<String>,
    },
    /// fio options after `--` with targets.
    #[error("fio options after `--` name their own --filename: drop the targets {targets:?}")]
    FioArgsWithTargets {
        /// The targets given too.
        targets: Vec<String>,
    },
    /// A job file with other targets, or several job files.
    #[error("a fio job file ({file}) names its own targets: run it alone (numio bench JOB.fio)")]
    JobFileWithTargets {
        /// The first job file.
        file: String,
    },
    /// A flag's value (workload or placement).
    #[error(transparent)]
    Flag(#[from] FlagError),
    /// A write workload without targets (the defaults are read only).
    #[error("--rw={rw}: write workloads need explicit targets (numio bench TARGET --rw ...)")]
    WritesNeedTargets {
        /// fio's name of the workload.
        rw: &'static str,
    },
    /// The embedded default target could not be used.
    #[error(transparent)]
    DefaultTarget(#[from] DefaultTargetError),
    /// A missing target without `--size`.
    #[error("{target} does not exist; give --size to create it (numio lays out a new file as fio does), or name an existing file or device")]
    MissingNeedsSize {
        /// The target.
        target: String,
    },
    /// A missing target could not be laid out.
    #[error(transparent)]
    Layout(#[from] LayoutError),
    /// The planner could not place the targets' jobs.
    #[error("placing the jobs")]
    Place(#[source] PlanError),
    /// A job file or plan needs the machine's topology, which failed.
    #[error("job files and plans are placed on this machine's topology")]
    NoTopology(#[source] TopologyError),
    /// `numio plan`'s root could not be read.
    #[error(transparent)]
    Topology(TopologyError),
    /// No target named, and the topology has no NVMe namespace.
    #[error("no targets and no NVMe namespace in the topology: name devices or files, e.g. `numio plan /dev/nvme0n1`, or pass --fio JOB.fio")]
    NoTargets,
    /// A `pci:` target names no PCI function of this machine.
    #[error("{target}: no PCI function {addr} on this machine; `numio vfio status` lists its NVMe controllers (pci:DDDD:BB:SS.F/NSID)")]
    NoPciFunction {
        /// The target.
        target: String,
        /// Its PCI address.
        addr: String,
    },
    /// A bare name that is no device here.
    #[error("{target} is not a device of this machine (no /dev/{target}); `numio topo` lists its NVMe namespaces, or plan for another machine with --root SNAPSHOT")]
    NotADevice {
        /// The target.
        target: String,
    },
    /// A path that does not exist.
    #[error("{target} does not exist; name a block device, a file or an NVMe namespace (`numio topo` lists them), or plan for another machine with --root SNAPSHOT")]
    NoSuchPath {
        /// The target.
        target: String,
    },
    /// A saved plan could not be read.
    #[error("reading the plan {}", path.display())]
    ReadPlan {
        /// The plan file.
        path: PathBuf,
        /// Why.
        #[source]
        source: PlanFileError,
    },
    /// A saved plan names CPUs or nodes this machine lacks.
    #[error("the plan {} does not fit this machine", path.display())]
    PlanMisfit {
        /// The plan file.
        path: PathBuf,
        /// Where it does not fit.
        #[source]
        source: PlacementMismatch,
    },
    /// A job file (or the fio options after `--`) could not be read.
    #[error("reading {what}")]
    ReadJobs {
        /// The job file or fio options, in words.
        what: String,
        /// Why.
        #[source]
        source: Box<FioError>,
    },
    /// A job file's jobs could not be placed on this machine.
    #[error("placing the jobs of {origin}")]
    PlaceJobs {
        /// The job file, as fio names it.
        origin: String,
        /// Why.
        #[source]
        source: Box<FioError>,
    },
}

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
) -> Result<JobSource<'a>, BenchError> {
    let job_files: Vec<&String> = targets.iter().filter(|t| is_job_file(t)).collect();
    let given = [!job_files.is_empty(), plan.is_some(), !fio_args.is_empty()];
    if given.iter().filter(|&&g| g).count() > 1 {
        return Err(BenchError::MixedSources);
    }
    if let Some(p) = plan {
        if !targets.is_empty() {
            return Err(BenchError::PlanWithTargets {
                plan: p.to_path_buf(),
                targets: targets.to_vec(),
            });
        }
        return Ok(JobSource::Plan(p));
    }
    if !fio_args.is_empty() {
        if !targets.is_empty() {
            return Err(BenchError::FioArgsWithTargets {
                targets: targets.to_vec(),
            });
        }
        return Ok(JobSource::FioArgs(fio_args));
    }
    match (job_files.as_slice(), targets.len()) {
        ([], _) => Ok(JobSource::Targets),
        ([file], 1) => Ok(JobSource::FioFile(Path::new(file.as_str()))),
        _ => Err(BenchError::JobFileWithTargets {
            file: job_files[0].clone(),
        }),
    }
}

/// Whether a positional argument names a fio job file (by its extension).
fn is_job_file(target: &str) -> bool {
    let p = Path::new(target);
    matches!(p.extension().and_then(|e| e.to_str()), Some("fio" | "job"))
        && !target.starts_with("/dev/")
}

/// What the user asked of one bench run, as given.
#[derive(Debug, Clone, Copy)]
pub struct BenchAsk<'a> {
    /// Positional targets (devices, files, NVMe-oF URLs, one job file).
    pub targets: &'a [String],
    /// `--plan FILE`.
    pub plan: Option<&'a Path>,
    /// fio's command-line form after `--`.
    pub fio_args: &'a [String],
    /// Job files: skip options numio does not implement, with a warning.
    pub ignore_unknown: bool,
    /// Job files: run only these sections.
    pub sections: &'a [String],
    /// `--numa`, `--cpus`, `--cpus-for`.
    pub placing: &'a Placing,
    /// The workload flags.
    pub workload: &'a WorkloadFlags,
    /// fio's `--name`: every target's job name.
    pub name: Option<&'a str>,
}

/// The plan of a bench run: targets placed by the planner (their labels,
/// such as the default target's, go into `opts`), or a job file, fio's
/// command-line form or a saved plan, checked against this machine.
/// `say` hears each line meant for stderr.
pub fn plan(
    ask: &BenchAsk<'_>,
    opts: &mut engine::RunOptions,
    iopoll_given: bool,
    say: &mut dyn FnMut(String),
) -> Result<Placement, BenchError> {
    let src = source(ask.targets, ask.plan, ask.fio_args)?;
    let topo = Topology::discover(Path::new("/"));
    if src == JobSource::Targets {
        return plan_targets(ask, topo.as_ref(), opts, say);
    }
    let topo = topo.map_err(BenchError::NoTopology)?;
    let from = match &src {
        JobSource::Plan(p) => format!("the plan {}", p.display()),
        JobSource::FioFile(p) => format!("the job file {}", p.display()),
        _ => "the fio options after `--`".to_string(),
    };
    let numa_auto = ask.placing.job_file_auto(&from)?;
    // A job file means what it means to fio: no IOPOLL without hipri.
    // Each job's fixedbufs / registerfiles / sqthread_poll / hipri
    // applies to its own target (the engine sets up one ring per job).
    if !iopoll_given {
        opts.iopoll = engine::IoPoll::Off;
    }
    let parse = ParseOptions {
        ignore_unknown: ask.ignore_unknown,
        sections: ask.sections.to_vec(),
    };
    let mut placement = load(&src, &topo, &parse, numa_auto, say)?;
    ask.workload.apply_over(&mut placement, &from)?;
    Ok(placement)
}

fn plan_targets(
    ask: &BenchAsk<'_>,
    topo: Result<&Topology, &TopologyError>,
    opts: &mut engine::RunOptions,
    say: &mut dyn FnMut(String),
) -> Result<Placement, BenchError> {
    let workload = ask.workload.workload()?;
    let (targets, labels) = choose_targets(ask.targets, topo.ok(), &workload, say)?;
    opts.labels = labels;
    let made = lay_out_missing(&targets, &workload, say)?;
    let mut placement = place(topo, &targets, &workload, ask.placing, say)?;
    for t in &mut placement.targets {
        if let Some(name) = ask.name {
            t.name = Some(name.to_string());
        }
        if let Some(note) = made.iter().find(|(p, _)| *p == t.path).map(|(_, n)| n) {
            t.notes.push(note.clone());
        } else if planner::TargetAddr::parse(&t.path).is_path() && workload.rw.reads() {
            t.notes.extend(layout::sparse_note(Path::new(&t.path)));
        }
    }
    Ok(placement)
}

/// The placement of a job file, fio's options or a saved plan, checked
/// against this machine (`numa_auto`: numio's local placement for the
/// jobs that name no CPUs).
pub fn load(
    src: &JobSource<'_>,
    topo: &Topology,
    parse: &ParseOptions,
    numa_auto: bool,
    say: &mut dyn FnMut(String),
) -> Result<Placement, BenchError> {
    let jobs = match src {
        JobSource::Targets => unreachable!("targets are placed by the planner"),
        JobSource::Plan(path) => {
            let p = Placement::load(path).map_err(|source| BenchError::ReadPlan {
                path: path.to_path_buf(),
                source,
            })?;
            p.check_on(topo).map_err(|source| BenchError::PlanMisfit {
                path: path.to_path_buf(),
                source,
            })?;
            return Ok(p);
        }
        JobSource::FioFile(path) => {
            planner::fio::load_job_file(path, parse).map_err(|source| BenchError::ReadJobs {
                what: format!("the job file {}", path.display()),
                source: Box::new(source),
            })?
        }
        JobSource::FioArgs(args) => {
            planner::fio::parse_command_line(args, parse).map_err(|source| {
                BenchError::ReadJobs {
                    what: "the fio options after `--`".into(),
                    source: Box::new(source),
                }
            })?
        }
    };
    from_job_file(jobs, topo, numa_auto, say)
}

fn from_job_file(
    jobs: JobFile,
    topo: &Topology,
    numa_auto: bool,
    say: &mut dyn FnMut(String),
) -> Result<Placement, BenchError> {
    for w in &jobs.warnings {
        say(format!("{}: {w}", jobs.origin));
    }
    jobs.to_placement(topo, numa_auto)
        .map_err(|source| BenchError::PlaceJobs {
            origin: jobs.origin.clone(),
            source: Box::new(source),
        })
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

/// The targets given, or the defaults: every NVMe namespace topology found
/// (read only), else the embedded default file (with its label).
pub fn choose_targets(
    given: &[String],
    topo: Option<&Topology>,
    w: &Workload,
    say: &mut dyn FnMut(String),
) -> Result<(Vec<String>, BTreeMap<String, String>), BenchError> {
    if !given.is_empty() {
        return Ok((given.to_vec(), BTreeMap::new()));
    }
    if w.rw.writes() {
        return Err(BenchError::WritesNeedTargets {
            rw: w.rw.fio_name(),
        });
    }
    let nvme: Vec<String> = topo
        .map(|t| {
            t.block_devices()
                .iter()
                .map(|d| format!("/dev/{d}"))
                .collect()
        })
        .unwrap_or_default();
    if !nvme.is_empty() {
        return Ok((nvme, BTreeMap::new()));
    }
    let path = layout::default_target(say)?;
    let label = format!(
        "default target: 1 GiB file under {} (no NVMe namespace found; name a device or file to bench it)",
        path.parent().map(|p| p.display().to_string()).unwrap_or_default()
    );
    let path = path.to_string_lossy().into_owned();
    Ok((vec![path.clone()], BTreeMap::from([(path, label)])))
}

/// Lays out each target that does not exist, as fio does, when `--size`
/// says how large: a file of that many bytes of data (never under /dev, nor
/// a bare name /dev has). Says so with the bytes written (set-up I/O, not
/// in the figures) and returns each target's note.
fn lay_out_missing(
    targets: &[String],
    w: &Workload,
    say: &mut dyn FnMut(String),
) -> Result<Vec<(String, String)>, BenchError> {
    let mut made = Vec::new();
    for t in targets {
        let path = Path::new(t);
        // Devices are never made: a missing one is the engine's to name.
        if !planner::TargetAddr::parse(t).is_path()
            || path.exists()
            || path.starts_with("/dev")
            || (!t.contains('/') && Path::new("/dev").join(t).exists())
        {
            continue;
        }
        let Some(size) = w.size_bytes else {
            return Err(BenchError::MissingNeedsSize { target: t.clone() });
        };
        let len = size + w.offset_bytes;
        layout::lay_out(path, len)?;
        let note = format!(
            "{t} was laid out before the run: {len} bytes written (set-up I/O, not in these figures)"
        );
        say(note.clone());
        made.push((t.clone(), note));
    }
    Ok(made)
}

/// Places the jobs with the planner (local by default; `--cpus` and
/// `--numa` override). Without a topology, jobs run unpinned and say so.
fn place(
    topo: Result<&Topology, &TopologyError>,
    targets: &[String],
    w: &Workload,
    placing: &Placing,
    say: &mut dyn FnMut(String),
) -> Result<Placement, BenchError> {
    let policy = placing.policy(targets)?;
    let topo = match topo {
        Ok(t) => t,
        Err(e) => {
            if !matches!(policy, planner::Policy::None) {
                say(format!(
                    "warning: topology discovery failed ({e}); jobs run unpinned"
                ));
            }
            return Ok(unpinned(targets, w));
        }
    };
    let request = PlanRequest {
        targets: crate::targets::target_specs(Path::new("/"), targets),
        workload: w.clone(),
        policy,
    };
    planner::plan(topo, &request).map_err(BenchError::Place)
}

fn unpinned(targets: &[String], w: &Workload) -> Placement {
    Placement {
        policy: "none".into(),
        targets: targets
            .iter()
            .map(|p| TargetPlacement {
                path: p.clone(),
                workload: w.clone(),
                jobs: vec![
                    JobPlacement {
                        cpus: vec![],
                        mem: MemPolicy::Default
                    };
                    w.numjobs as usize
                ],
                ..TargetPlacement::default()
            })
            .collect(),
        warnings: vec!["topology unknown: jobs are not pinned".into()],
    }
}

/// What `numio plan` was asked: targets (or every NVMe namespace of the
/// topology) or a fio job file, placed on the topology under `root` (this
/// machine's `/`, a snapshot, or a `numio topo --json` file).
#[derive(Debug, Clone, Copy)]
pub struct PlanAsk<'a> {
    /// The topology's root.
    pub root: &'a Path,
    /// Targets; none: every NVMe namespace of the topology.
    pub targets: &'a [String],
    /// `--fio JOB.fio` instead of targets.
    pub fio: Option<&'a Path>,
    /// Job files: skip options numio does not implement, with a warning.
    pub ignore_unknown: bool,
    /// Job files: use only these sections.
    pub sections: &'a [String],
    /// `--numa`, `--cpus-for`.
    pub placing: &'a Placing,
    /// The workload flags.
    pub workload: &'a WorkloadFlags,
    /// The backend of every target (its engine name), if given.
    pub backend: Option<&'a str>,
}

/// The plan `numio plan` prints; `say` hears a job file's warnings.
pub fn plan_on_root(
    ask: &PlanAsk<'_>,
    say: &mut dyn FnMut(String),
) -> Result<Placement, BenchError> {
    let topo = Topology::read(ask.root).map_err(BenchError::Topology)?;
    if let Some(path) = ask.fio {
        let numa_auto = ask.placing.job_file_auto("--fio")?;
        let parse = ParseOptions {
            ignore_unknown: ask.ignore_unknown,
            sections: ask.sections.to_vec(),
        };
        return load(&JobSource::FioFile(path), &topo, &parse, numa_auto, say);
    }
    let targets = if ask.targets.is_empty() {
        let mut all: Vec<String> = Vec::new();
        for ns in topo.subsystems.iter().flat_map(|s| &s.namespaces) {
            let path = format!("/dev/{}", ns.block_device);
            if !all.contains(&path) {
                all.push(path);
            }
        }
        if all.is_empty() {
            return Err(BenchError::NoTargets);
        }
        all
    } else {
        ask.targets.to_vec()
    };
    if ask.root == Path::new("/") {
        check_paths_exist(&targets)?;
    }
    let policy = ask.placing.policy(&targets)?;
    let mut specs = crate::targets::target_specs(ask.root, &targets);
    for s in &mut specs {
        s.backend = ask.backend.map(String::from);
    }
    let request = PlanRequest {
        targets: specs,
        workload: ask.workload.workload()?,
        policy,
    };
    planner::plan(&topo, &request).map_err(BenchError::Place)
}

/// Refuses a target path (one with a `/`; bare names such as `nvme0n1` are
/// topology's to find; NVMe-oF URLs and `pci:` addresses are resolved
/// through routes and the PCI tree) that does not exist on this machine:
/// the planner would take it for a file on an unknown node.
fn check_paths_exist(targets: &[String]) -> Result<(), BenchError> {
    for t in targets {
        match planner::TargetAddr::parse(t) {
            planner::TargetAddr::Pci(rest) => {
                let addr = rest.split('/').next().unwrap_or(rest);
                let found = topology::pci::parse_address(addr).and_then(|a| {
                    topology::pci::pci_function(Path::new("/"), &a)
                        .ok()
                        .flatten()
                });
                if found.is_none() {
                    return Err(BenchError::NoPciFunction {
                        target: t.clone(),
                        addr: addr.to_string(),
                    });
                }
                continue;
            }
            planner::TargetAddr::Fabric(..) => continue,
            planner::TargetAddr::Path(_) => {}
        }
        let (here, dev) = (Path::new(t), Path::new("/dev").join(t));
        if !t.contains('/') && !t.is_empty() && !here.exists() && !dev.exists() {
            return Err(BenchError::NotADevice { target: t.clone() });
        }
        if t.contains('/') && std::fs::metadata(t).is_err() {
            return Err(BenchError::NoSuchPath { target: t.clone() });
        }
    }
    Ok(())
}

#[cfg(test)]
#[path = "bench_tests.rs"]
mod tests;
