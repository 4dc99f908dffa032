//! `numio coalesce sweep TARGET… [--threshold 0,1,3,5,9] [--time 100us]
//! [--devices 1,2,4] [bench workload flags] [--repeat N] [--max-latency
//! p99.99=2ms] [--save F] [--chart F.svg] [--json] [--apply]`.
//!
//! The way through: flags → points (`coalesce_sweep_points`, every input
//! checked before anything changes) → each target's controllers and the
//! guard that records their originals (`tune`) → one bench plan per device
//! count (placed as `numio sweep` places them) → a session schedule of one
//! arm per point, each run through `session::coalesce` (the point's
//! value set first) → the originals put back (at the end, on error, on
//! Ctrl-C / SIGTERM; after `kill -9`, `numio coalesce restore`) → the
//! result set analysed by `report::coalesce` and written out
//! (`coalesce_sweep_output`), the recommendation applied with `--apply`.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use session::{interrupt, LiveArm, Schedule};
use topology::Topology;

use super::coalesce_sweep_ctl as ctl;
use super::coalesce_sweep_output::{self as output, Outputs};
use super::coalesce_sweep_points::{self as points, Point, Shape};
use super::display::{Display, Runs};
use super::engine_args::EngineArgs;
use super::flags::NumaArg;
use super::flags::{BackendArg, WorkloadArgs};
use super::sweep_place::{point_placement, policy};
use session::axes::Axis;
use session::coalesce::{all as all_controllers, CoalesceRunner};

/// Flags of `numio coalesce sweep`.
#[derive(Debug, clap::Args)]
pub struct SweepArgs {
    /// NVMe namespaces (/dev/nvme0n1 …, or a multipath head: all its
    /// controllers); a point of D devices runs the first D at once.
    #[arg(value_name = "TARGET")]
    pub targets: Vec<String>,
    /// Aggregation thresholds, raw (0-based: an interrupt per N+1
    /// completions), 0..=255; 0 is coalescing off, the baseline (added when
    /// missing).
    #[arg(long, value_name = "LIST", default_value = "0,1,3,5,9")]
    pub threshold: String,
    /// Aggregation time of every threshold above 0: 100us, 0.2ms or a bare
    /// number of µs; a multiple of 100 µs up to 25.5 ms.
    #[arg(long, value_name = "TIME", default_value = "100us")]
    pub time: String,
    /// Drives busy at once: each count runs the first N targets together
    /// [default: all the targets].
    #[arg(long, value_name = "LIST")]
    pub devices: Option<String>,
    /// Runs per point, interleaved over the points (the recommendation
    /// compares the repeats' 95 % intervals).
    #[arg(long, default_value_t = 1, value_name = "N")]
    pub repeat: usize,
    /// Latency budget of the recommendation, e.g. p99.99=2ms (repeatable).
    #[arg(long = "max-latency", value_name = "pXX=TIME")]
    pub max_latency: Vec<String>,
    /// Save every run to this result file (reprint: numio report FILE).
    #[arg(long, value_name = "FILE.json")]
    pub save: Option<PathBuf>,
    /// Draw IOPS and interrupts per I/O against the threshold (a line per
    /// device count) and the latency percentiles (.svg or .png).
    #[arg(long, value_name = "FILE.svg|FILE.png")]
    pub chart: Option<PathBuf>,
    /// Print the sweep as JSON.
    #[arg(long)]
    pub json: bool,
    /// Set the recommendation of the largest device count afterwards (kept
    /// on record: numio coalesce restore puts the originals back).
    #[arg(long)]
    pub apply: bool,
    /// Pin every point's jobs to these CPUs.
    #[arg(long, value_name = "LIST")]
    pub cpus: Option<String>,
    /// Placement policy of every point: local (default), spread or none.
    #[arg(long, value_enum, value_name = "POLICY")]
    pub numa: Option<NumaArg>,
    #[command(flatten)]
    pub workload: WorkloadArgs,
    #[command(flatten)]
    pub engine: EngineArgs,
}

/// The sweep as the flags describe it, checked.
struct Plan {
    thresholds: Vec<u8>,
    devices: Vec<usize>,
    time_us: u32,
    budgets: Vec<report::coalesce::LatencyBudget>,
    points: Vec<Point>,
}

/// Every flag checked, nothing touched: errors name the input and the fix.
fn plan(args: &SweepArgs) -> anyhow::Result<Plan> {
    if args.targets.is_empty() {
        bail!(
            "no targets: give the NVMe namespaces to sweep, e.g. numio coalesce sweep /dev/nvme0n1 /dev/nvme1n1 --devices 1,2"
        );
    }
    if let Some((i, t)) = args
        .targets
        .iter()
        .enumerate()
        .find(|(i, t)| args.targets[..*i].contains(t))
    {
        bail!(
            "{t} is given twice (targets {} and {}): name each namespace once",
            args.targets.iter().position(|x| x == t).unwrap_or(0) + 1,
            i + 1
        );
    }
    let (thresholds, added) = points::thresholds(&args.threshold)?;
    if added {
        eprintln!(
            "numio: --threshold {}: adding 0 (coalescing off), the baseline every recommendation is measured against",
            args.threshold
        );
    }
    let time_us = points::time_us(&args.time)?;
    let devices = points::devices(args.devices.as_deref(), &args.targets)?;
    let budgets = points::budgets(&args.max_latency)?;
    anyhow::ensure!(
        args.repeat >= 1,
        "--repeat {}: give 1 or more runs per point",
        args.repeat
    );
    let no_queues = match args.engine.backend_for(&args.targets) {
        BackendArg::Null => Some(("null", "it does no I/O through the drives' PCIe queues")),
        BackendArg::Nop => Some(("nop", "it does no I/O through the drives' PCIe queues")),
        BackendArg::Tcp => Some(("tcp", "it does no I/O through the drives' PCIe queues")),
        BackendArg::Rdma => Some(("rdma", "it does no I/O through the drives' PCIe queues")),
        BackendArg::Vfio => Some((
            "vfio",
            "numio's own driver polls its queues with interrupts off",
        )),
        BackendArg::Uring | BackendArg::Sync | BackendArg::Passthru => None,
    };
    if let Some((name, why)) = no_queues {
        bail!(
            "--backend {name}: {why}, so coalescing changes nothing; use uring (default), sync or passthru"
        );
    }
    if let Some(chart) = &args.chart {
        let ext = chart.extension().and_then(|e| e.to_str()).unwrap_or("");
        if !ext.eq_ignore_ascii_case("svg") && !ext.eq_ignore_ascii_case("png") {
            bail!(
                "--chart {}: write a chart to a .svg or .png file (the name says the format)",
                chart.display()
            );
        }
    }
    args.workload.workload()?;
    Ok(Plan {
        points: points::points(&thresholds, &devices),
        thresholds,
        devices,
        time_us,
        budgets,
    })
}

/// What the signal thread says during a sweep (a progress line may be on
/// the screen: cleared first).
fn on_signal(notice: interrupt::Notice) {
    match notice {
        interrupt::Notice::Stopping { signal } => eprint!(
            "\r\x1b[2Knumio: {}: stopping; the points measured are reported and every original coalescing value is put back (again to exit at once, still putting them back)\n",
            if signal == libc::SIGTERM { "SIGTERM" } else { "Ctrl-C" }
        ),
        interrupt::Notice::Exiting { .. } => eprint!(
            "\r\x1b[2Knumio: interrupted again: putting back the original coalescing values, then exiting without a report\n"
        ),
    }
}

/// Runs `numio coalesce sweep`.
pub fn run(args: SweepArgs) -> anyhow::Result<i32> {
    interrupt::install(on_signal)?;
    let plan = plan(&args)?;
    let topo = Topology::discover(Path::new("/"))?;
    let controllers = ctl::target_controllers(&topo, &args.targets)?;
    let (schedule, cores) = schedule(&args, &plan, &topo)?;
    let (access, journal) = (
        tune::DevAccess::default(),
        tune::Journal::default_location()?,
    );
    let command = super::report::command_line();
    ctl::preflight(&access, &journal, &all_controllers(&controllers), &command)?;
    let runs = Runs::Sweep {
        labels: schedule.arms.iter().map(|a| a.label.clone()).collect(),
        rounds: args.repeat,
    };
    let mut display = Display::new(args.engine.progress_mode(args.json), runs);
    let mut runner = CoalesceRunner {
        access: &access,
        journal: journal.clone(),
        command: command.clone(),
        points: plan.points.clone(),
        controllers: controllers.clone(),
        time_us: plan.time_us,
    };
    // Each run puts its controllers' originals back as it ends, failed,
    // interrupted or not: between runs and from here on they hold them.
    let outcome = schedule.run_with(&mut runner, interrupt::flag(), &mut |e| display.event(e))?;
    let names: Vec<String> = all_controllers(&controllers)
        .into_iter()
        .map(|c| c.name)
        .collect();
    eprintln!(
        "numio: coalesce: put back the original values on {} (each point's value was set for its runs only)",
        names.join(", ")
    );
    let interrupted = outcome.interrupted.is_some();
    if interrupted {
        eprintln!(
            "numio: coalesce sweep interrupted: reporting the {} runs completed; the result is marked interrupted",
            outcome.completed()
        );
    }
    let set = points::result_set(
        &shape(plan, &args, &controllers),
        outcome.arms,
        cores,
        interrupted,
    );
    let clean = !interrupted && outcome.failed_runs == 0;
    let everyone = all_controllers(&controllers);
    let apply_command = format!("{command} (--apply)");
    let mut apply = |on: &[String], t: u8, time: u32| {
        let on: Vec<tune::Controller> = everyone
            .iter()
            .filter(|c| on.contains(&c.name))
            .cloned()
            .collect();
        ctl::apply(&access, &journal, &on, t, time, &apply_command)
    };
    output::write(&set, &outputs(&args), &mut apply, clean)?;
    let code = i32::from(outcome.failed_runs > 0);
    Ok(interrupt::exit_code().unwrap_or(code))
}

/// What the sweep was, for its result set.
fn shape(plan: Plan, args: &SweepArgs, controllers: &[Vec<tune::Controller>]) -> Shape {
    Shape {
        thresholds: plan.thresholds,
        devices: plan.devices,
        spec: report::coalesce::CoalesceSpec {
            time_us: plan.time_us,
            targets: args.targets.clone(),
            controllers: controllers
                .iter()
                .map(|cs| cs.iter().map(|c| c.name.clone()).collect())
                .collect(),
            max_latency: plan.budgets,
        },
    }
}

fn outputs(args: &SweepArgs) -> Outputs {
    Outputs {
        json: args.json,
        save: args.save.clone(),
        chart: args.chart.clone(),
        apply: args.apply,
    }
}

/// One arm per point (the plan of its device count, placed as `numio
/// sweep` places a devices axis), and the cores of each.
fn schedule(
    args: &SweepArgs,
    plan: &Plan,
    topo: &Topology,
) -> anyhow::Result<(Schedule, Vec<usize>)> {
    let mut opts = args.engine.run_options()?;
    opts.percentiles = points::percentiles(&opts.percentiles, &plan.budgets);
    let axes = [Axis {
        name: "devices".into(),
        values: plan.devices.iter().map(usize::to_string).collect(),
    }];
    let policy = policy(args.numa, args.cpus.as_deref(), &axes, &args.targets)?;
    let mut arms = Vec::new();
    let mut cores = Vec::new();
    for p in &plan.points {
        let value = [(0, p.devices.to_string())];
        let placement =
            point_placement(&args.workload, &axes, &value, &args.targets, topo, &policy)
                .with_context(|| format!("point {}", p.label()))?;
        if p.threshold == plan.thresholds[0] {
            for warn in &placement.warnings {
                eprintln!("numio: devices={}: warning: {warn}", p.devices);
            }
        }
        cores.push(placement.targets.iter().map(|t| t.jobs.len()).sum());
        arms.push(LiveArm {
            label: p.label(),
            spec: p.label(),
            placement,
            opts: opts.clone(),
            settle_group: 0,
        });
    }
    let mut schedule = Schedule {
        arms,
        rounds: args.repeat,
    };
    schedule.group_by_targets();
    Ok((schedule, cores))
}
