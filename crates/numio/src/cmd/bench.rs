//! `numio bench`: flags → workload and targets → placement (planner) →
//! a session run (`session::run_once`, or a repeat schedule) with its
//! events shown on stderr → human report or JSON.

use std::collections::BTreeMap;
use std::path::PathBuf;

use anyhow::bail;
use planner::{Placement, Workload};
use session::interrupt;
use topology::Topology;

#[path = "bench_fleet.rs"]
pub mod bench_fleet;
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
    let groups = session::bench::groups(&placement);
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
/// host by `numio agent`): [`session::bench::plan`].
pub(crate) fn plan(args: &Args) -> anyhow::Result<(Placement, engine::RunOptions)> {
    let mut opts = args.engine.run_options()?;
    opts.backend = args.engine.backend_for(&args.targets).into();
    let placing = super::flags::placing(args.numa, args.cpus.as_deref(), &args.cpus_for);
    let ask = session::bench::BenchAsk {
        targets: &args.targets,
        plan: args.plan.as_deref(),
        fio_args: &args.fio_args,
        ignore_unknown: args.ignore_unknown,
        sections: &args.sections,
        placing: &placing,
        workload: &args.workload.flags(),
        name: args.name.as_deref(),
    };
    let iopoll_given = args.engine.iopoll.is_some();
    let placement = session::bench::plan(&ask, &mut opts, iopoll_given, &mut |line| {
        eprintln!("numio: {line}")
    })?;
    Ok((placement, opts))
}

/// `numio report FILE` of a `numio bench --json` file (or a
/// `numio precondition` file): the report bench (precondition) printed.
/// `None` for other files, or when an export is asked for: `report`
/// handles those.
pub fn reprint(args: &super::report::Args) -> Option<anyhow::Result<i32>> {
    if args.exports() {
        return None;
    }
    let text = std::fs::read_to_string(&args.file).ok()?;
    print!(
        "{}",
        report::bench::reprint(&text).or_else(|| report::precondition::reprint(&text))?
    );
    Some(Ok(0))
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

/// [`session::bench::choose_targets`], saying on stderr what it does.
pub fn choose_targets(
    given: &[String],
    topo: Option<&Topology>,
    w: &Workload,
) -> anyhow::Result<(Vec<String>, BTreeMap<String, String>)> {
    let mut say = |line: String| eprintln!("numio: {line}");
    Ok(session::bench::choose_targets(given, topo, w, &mut say)?)
}
