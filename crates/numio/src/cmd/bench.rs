//! `numio bench`: flags → workload and targets → placement (planner) →
//! a session run (`session::run_once`, or a repeat schedule) with its
//! events shown on stderr → human report or JSON.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use planner::{JobPlacement, MemPolicy, Placement, PlanRequest, Policy, TargetPlacement, Workload};
use session::interrupt;
use topology::Topology;

#[path = "bench_fleet.rs"]
pub mod bench_fleet;
#[path = "bench_jobs.rs"]
pub mod bench_jobs;
#[path = "bench_repeat.rs"]
pub mod bench_repeat;
#[path = "bench_verify.rs"]
pub mod bench_verify;
#[path = "bench_vfio.rs"]
pub mod bench_vfio;

use super::display::{Display, Runs};
use super::engine_args::EngineArgs;
use super::flags::{BackendArg, NumaArg, WorkloadArgs};

/// `numio bench --output-format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum OutputFormat {
    /// The human report (the default).
    Normal,
    /// numio's own JSON (as --json).
    Json,
    /// fio's `--output-format=json` layout (fio 3.33's keys and types).
    #[value(name = "fio-json", alias = "fio")]
    FioJson,
}

/// Flags of `numio bench`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Block devices or files, NVMe/TCP namespaces
    /// (nvme-tcp://HOST[:PORT]/SUBNQN[/NSID], driven by the tcp backend;
    /// several portals of one namespace joined by commas), or one fio
    /// job file (JOB.fio). None: every NVMe namespace (read-only randread 4k
    /// QD 64); without NVMe, a 1 GiB file under $TMPDIR.
    pub targets: Vec<String>,
    /// Run a saved plan (`numio plan --format numio`) unchanged.
    #[arg(long, value_name = "FILE")]
    pub plan: Option<PathBuf>,
    /// fio job files: skip options numio does not implement, with a warning.
    #[arg(long)]
    pub ignore_unknown: bool,
    /// fio job files: run only this section (repeatable).
    #[arg(long = "section", value_name = "NAME")]
    pub sections: Vec<String>,
    /// fio's command-line form after `--` (`-- --name=a --filename=F
    /// --rw=randread --name=b ...`); the job options come from there.
    #[arg(last = true, value_name = "FIO_OPTIONS")]
    pub fio_args: Vec<String>,
    /// Pin the jobs of every target to these CPUs, one job per CPU in order
    /// (e.g. 0-3,8).
    #[arg(long, value_name = "LIST")]
    pub cpus: Option<String>,
    /// Explicit CPUs of one target, e.g. `nvme0n1=0-3,112-115` (repeatable;
    /// every target then needs one).
    #[arg(long, value_name = "TARGET=LIST")]
    pub cpus_for: Vec<String>,
    /// Placement policy [default: local].
    #[arg(long, value_enum, value_name = "POLICY")]
    pub numa: Option<NumaArg>,
    /// Print the result as JSON (schema in the README) instead of a report.
    #[arg(long)]
    pub json: bool,
    /// Also print how set-up choices were made (the io_uring task-run
    /// trial of each job).
    #[arg(short, long)]
    pub verbose: bool,
    /// fio's `--filename=F[:G]`: the targets (numio takes them as
    /// arguments).
    #[arg(long, value_name = "FILE", hide = true, value_delimiter = ':')]
    pub filename: Vec<String>,
    /// fio's `--ioengine`: io_uring, psync/sync/pvsync, io_uring_cmd, null
    /// (numio's --backend uring, sync, passthru, null).
    #[arg(long, value_name = "ENGINE", hide = true, conflicts_with = "backend")]
    pub ioengine: Option<String>,
    /// fio's `--name`: the job name of every target.
    #[arg(long, value_name = "NAME", hide = true)]
    pub name: Option<String>,
    /// Output format: normal, json (numio's, as --json) or fio-json (fio's
    /// --output-format=json layout, for fio-plot and fio parsers).
    #[arg(long, value_enum, value_name = "FORMAT", conflicts_with = "json")]
    pub output_format: Option<OutputFormat>,
    /// With --output-format fio-json: one job per stonewall group from its
    /// total, as fio's group_reporting prints (default: one per target).
    #[arg(long)]
    pub group_reporting: bool,
    /// `--repeat N`, `--save`, `--csv`, `--chart` (owned by cmd/report.rs).
    #[command(flatten)]
    pub repeat: super::report::RepeatArgs,
    /// `--hosts`, `--hosts-file`, `--ssh-opt`, `--remote-numio`.
    #[command(flatten)]
    pub fleet: bench_fleet::FleetArgs,
    #[command(flatten)]
    pub workload: WorkloadArgs,
    #[command(flatten)]
    pub engine: EngineArgs,
}

/// fio's engine names as numio's backends; the error names the numio
/// spelling.
fn backend_of_ioengine(engine: &str) -> anyhow::Result<BackendArg> {
    Ok(match engine {
        "io_uring" => BackendArg::Uring,
        "psync" | "sync" | "pvsync" | "pvsync2" => BackendArg::Sync,
        "io_uring_cmd" => BackendArg::Passthru,
        "null" => BackendArg::Null,
        other => bail!(
            "--ioengine={other}: numio's engines are --backend uring (fio's io_uring), sync \
             (psync), passthru (io_uring_cmd), null, nop, tcp, rdma and vfio; libaio and the \
             others are not implemented, and uring is the asynchronous one"
        ),
    })
}

/// Folds fio's spellings (`--filename`, `--ioengine`) into numio's.
pub(crate) fn fold_fio_names(args: &mut Args) -> anyhow::Result<()> {
    args.targets.append(&mut args.filename);
    if let Some(e) = &args.ioengine {
        args.engine.backend = Some(backend_of_ioengine(e)?);
    }
    Ok(())
}

/// Runs `numio bench`.
pub fn run(mut args: Args) -> anyhow::Result<i32> {
    interrupt::install(super::display::on_signal)?;
    fold_fio_names(&mut args)?;
    let fio_json = args.output_format == Some(OutputFormat::FioJson);
    if args.group_reporting && !fio_json {
        bail!("--group-reporting shapes fio's JSON: add --output-format fio-json");
    }
    if fio_json && args.repeat.wanted() {
        bail!("--output-format fio-json prints one run: with --repeat, --save FILE and convert it with `numio report FILE --fio-json`");
    }
    args.json |= args.output_format == Some(OutputFormat::Json);
    if args.fleet.wanted() {
        if fio_json {
            bail!("--output-format fio-json prints one host's run: drop --hosts, or use --json");
        }
        return bench_fleet::run(&args.fleet, &args.targets, &args.repeat, args.json);
    }
    let bound = match args.engine.backend_for(&args.targets) {
        BackendArg::Vfio => bench_vfio::take(
            &args.targets,
            args.engine.force_unbind,
            args.engine.allow_noiommu,
            "numio bench --backend vfio",
        )?,
        _ => bench_vfio::ForRun::none(),
    };
    let (placement, mut opts) = plan(&args)?;
    // Warnings once, on stderr, before the run they are about.
    for w in &placement.warnings {
        eprintln!("numio: warning: {w}");
    }
    let (placement, verify_run) = bench_verify::prepare(&args.engine, placement, &mut opts)?;
    let groups = bench_jobs::groups(&placement);
    let progress = args.engine.progress_mode(args.json || fio_json);
    if args.repeat.wanted() {
        if groups.len() > 1 {
            bail!("--repeat runs one group: the job file has {} stonewall groups (run them as separate job files)", groups.len());
        }
        let code = bench_repeat::run(&args.repeat, args.json, placement, opts, progress)?;
        bound.give_back()?;
        return Ok(interrupt::exit_code().unwrap_or(code));
    }
    let results = run_groups(
        &groups,
        &opts,
        Display::new(progress, Runs::Single),
        args.json || fio_json,
        args.verbose,
    )?;
    let stale = bench_verify::finish(verify_run, &results);
    bound.give_back()?;
    if fio_json {
        let text = report::export::fio_json::to_string(&results, args.group_reporting);
        super::topo::print_stdout(&text)?;
    } else if args.json {
        match results.as_slice() {
            [one] => println!("{}", serde_json::to_string_pretty(one)?),
            many => println!("{}", serde_json::to_string_pretty(many)?),
        }
    }
    // 1: some I/O failed (a mismatch is one); 2: the verify state is
    // stale (an input to fix, not data loss).
    let code = match (results.iter().any(|r| !r.errors.is_empty()), stale) {
        (true, _) => 1,
        (false, true) => 2,
        (false, false) => 0,
    };
    Ok(interrupt::exit_code().unwrap_or(code))
}

/// The engine options and the plan of a bench run (here, or on a fleet's
/// host by `numio agent`).
pub(crate) fn plan(args: &Args) -> anyhow::Result<(Placement, engine::RunOptions)> {
    let mut opts = args.engine.run_options()?;
    opts.backend = args.engine.backend_for(&args.targets).into();
    let placement = bench_placement(args, &mut opts)?;
    Ok((placement, opts))
}

/// The plan of a bench run: targets placed by the planner (with the
/// targets' labels in `opts`), or a fio job file, fio's command-line form
/// or a saved plan, checked against this machine.
fn bench_placement(args: &Args, opts: &mut engine::RunOptions) -> anyhow::Result<Placement> {
    let src = bench_jobs::source(&args.targets, args.plan.as_deref(), &args.fio_args)?;
    let topo = Topology::discover(Path::new("/"));
    if src == bench_jobs::JobSource::Targets {
        let workload = args.workload.workload()?;
        let (targets, labels) = choose_targets(&args.targets, topo.as_ref().ok(), &workload)?;
        opts.labels = labels;
        let made = lay_out_missing(&targets, &workload)?;
        let mut placement = place(topo.as_ref(), &targets, &workload, args)?;
        for t in &mut placement.targets {
            if args.name.is_some() {
                t.name.clone_from(&args.name);
            }
            if let Some(note) = made.iter().find(|(p, _)| *p == t.path).map(|(_, n)| n) {
                t.notes.push(note.clone());
            } else if planner::TargetAddr::parse(&t.path).is_path() && workload.rw.reads() {
                t.notes
                    .extend(session::layout::sparse_note(Path::new(&t.path)));
            }
        }
        return Ok(placement);
    }
    let topo = topo
        .as_ref()
        .map_err(|e| anyhow::anyhow!("{e}"))
        .context("job files and plans are placed on this machine's topology")?;
    let jf = bench_jobs::JobFileOptions {
        ignore_unknown: args.ignore_unknown,
        sections: args.sections.clone(),
        numa_auto: match args.numa {
            None | Some(NumaArg::None) => false,
            Some(NumaArg::Auto | NumaArg::Local) => true,
            Some(NumaArg::Spread) => bail!("--numa=spread with a job file: use auto or none"),
        },
    };
    // A job file means what it means to fio: no IOPOLL without hipri.
    // Each job's fixedbufs / registerfiles / sqthread_poll / hipri
    // applies to its own target (the engine sets up one ring per job).
    if args.engine.iopoll.is_none() {
        opts.iopoll = engine::IoPoll::Off;
    }
    let mut placement = bench_jobs::load(&src, topo, &jf)?;
    let from = match &src {
        bench_jobs::JobSource::Plan(p) => format!("the plan {}", p.display()),
        bench_jobs::JobSource::FioFile(p) => format!("the job file {}", p.display()),
        _ => "the fio options after `--`".to_string(),
    };
    args.workload.apply_over(&mut placement, &from)?;
    Ok(placement)
}

/// `numio report FILE` of a `numio bench --json` file (one run, or one per
/// stonewall group): the report bench printed, by the same renderer
/// (without the planner's notes, which the JSON does not keep). `None` for
/// other files, or when an export is asked for: `report` handles those.
pub fn reprint(args: &super::report::Args) -> Option<anyhow::Result<i32>> {
    if args.exports() {
        return None;
    }
    let text = std::fs::read_to_string(&args.file).ok()?;
    let runs: Vec<engine::RunResult> = serde_json::from_str::<engine::RunResult>(&text)
        .map(|r| vec![r])
        .or_else(|_| serde_json::from_str(&text))
        .ok()?;
    let newest = results::RESULT_SCHEMA_VERSION;
    if runs.is_empty()
        || runs
            .iter()
            .any(|r| r.schema_version == 0 || r.schema_version > newest)
    {
        return None; // report names the version it reads
    }
    for (i, r) in runs.iter().enumerate() {
        if runs.len() > 1 {
            println!("group {} of {} (stonewall)", i + 1, runs.len());
        }
        let placement = Placement {
            policy: r.policy.clone(),
            ..Placement::default()
        };
        print!("{}", report::bench::render(r, &placement, false));
    }
    Some(Ok(0))
}

/// Lays out each target that does not exist, as fio does, when `--size`
/// says how large: a file of that many bytes of data (never under /dev, nor
/// a bare name /dev has). Says so on stderr with the bytes written (set-up
/// I/O, not in the figures) and returns each target's note.
fn lay_out_missing(targets: &[String], w: &Workload) -> anyhow::Result<Vec<(String, String)>> {
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
            bail!("{t} does not exist; give --size to create it (numio lays out a new file as fio does), or name an existing file or device");
        };
        let len = size + w.offset_bytes;
        session::layout::lay_out(path, len)?;
        let note = format!(
            "{t} was laid out before the run: {len} bytes written (set-up I/O, not in these figures)"
        );
        eprintln!("numio: {note}");
        made.push((t.clone(), note));
    }
    Ok(made)
}

/// Runs the stonewall groups one after another, each reported as it ends
/// (unless `json`); an interrupt keeps the group it cut short and runs no
/// later group.
fn run_groups(
    groups: &[Placement],
    opts: &engine::RunOptions,
    mut display: Display,
    json: bool,
    verbose: bool,
) -> anyhow::Result<Vec<engine::RunResult>> {
    let mut results = Vec::with_capacity(groups.len());
    for (i, group) in groups.iter().enumerate() {
        if groups.len() > 1 && !json {
            println!("group {} of {} (stonewall)", i + 1, groups.len());
        }
        let run = session::RunInfo {
            seq: i + 1,
            total: groups.len(),
            ..session::RunInfo::SINGLE
        };
        let result = session::run_once(group, opts, run, interrupt::flag(), &mut |e| {
            display.event(e)
        })?;
        if !json {
            print!("{}", report::bench::render(&result, group, verbose));
        }
        let interrupted = result.interrupted;
        results.push(result);
        if interrupted {
            if groups.len() > 1 {
                eprintln!(
                    "numio: interrupted in group {} of {}: the later groups did not run",
                    i + 1,
                    groups.len()
                );
            }
            break;
        }
    }
    Ok(results)
}

/// The targets given, or the defaults: every NVMe namespace topology found
/// (read-only), else the embedded default file.
pub fn choose_targets(
    given: &[String],
    topo: Option<&Topology>,
    w: &Workload,
) -> anyhow::Result<(Vec<String>, BTreeMap<String, String>)> {
    if !given.is_empty() {
        return Ok((given.to_vec(), BTreeMap::new()));
    }
    if w.rw.writes() {
        bail!(
            "--rw={}: write workloads need explicit targets (numio bench TARGET --rw ...)",
            w.rw.fio_name()
        );
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
    let path = super::default_target::default_target()?;
    let label = format!(
        "default target: 1 GiB file under {} (no NVMe namespace found; name a device or file to bench it)",
        path.parent().map(|p| p.display().to_string()).unwrap_or_default()
    );
    let path = path.to_string_lossy().into_owned();
    Ok((vec![path.clone()], BTreeMap::from([(path, label)])))
}

/// Places the jobs with the planner (local by default; `--cpus` and `--numa`
/// override). Without a topology, jobs run unpinned and say so.
fn place(
    topo: Result<&Topology, &topology::TopologyError>,
    targets: &[String],
    w: &Workload,
    args: &Args,
) -> anyhow::Result<Placement> {
    if !args.cpus_for.is_empty() && (args.cpus.is_some() || args.numa.is_some()) {
        bail!("--cpus-for places targets explicitly: drop --cpus and --numa");
    }
    let policy = match (&args.cpus, args.numa.unwrap_or(NumaArg::Local)) {
        _ if !args.cpus_for.is_empty() => {
            Policy::Explicit(super::plan::parse_cpus_for(&args.cpus_for)?)
        }
        (Some(list), _) => {
            let cpus = planner::cpuset::parse_cpu_list(list)
                .map_err(|e| anyhow::anyhow!("--cpus={list}: {e}"))?;
            Policy::Explicit(targets.iter().map(|t| (t.clone(), cpus.clone())).collect())
        }
        (None, NumaArg::Local | NumaArg::Auto) => Policy::Local,
        (None, NumaArg::Spread) => Policy::Spread,
        (None, NumaArg::None) => Policy::None,
    };
    let topo = match topo {
        Ok(t) => t,
        Err(e) => {
            if !matches!(policy, Policy::None) {
                eprintln!("numio: warning: topology discovery failed ({e}); jobs run unpinned");
            }
            return Ok(unpinned(targets, w));
        }
    };
    let request = PlanRequest {
        targets: session::targets::target_specs(Path::new("/"), targets),
        workload: w.clone(),
        policy,
    };
    planner::plan(topo, &request).context("placing the jobs")
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
