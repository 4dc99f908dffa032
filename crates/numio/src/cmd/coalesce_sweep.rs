//! `numio coalesce sweep TARGET… [--threshold 0,1,3,5,9] [--time 100us]
//! [--devices 1,2,4] [bench workload flags] [--repeat N] [--max-latency
//! p99.99=2ms] [--save F] [--chart F.svg] [--json] [--apply]`.
//!
//! Flags → `session::coalesce_plan` (checked before anything changes) →
//! controllers (`tune`) → a plan per point, placed as `numio sweep` places
//! them → `session::coalesce_sweep` runs, writes out and applies it.

use std::path::{Path, PathBuf};

use session::coalesce_plan::{PlanInput, SweepPlan};
use session::coalesce_sweep::{CoalesceSweep, Emit, Outputs};
use session::interrupt::{self, Undoing};
use session::Schedule;
use topology::Topology;

use super::display::{Display, Runs};
use super::engine_args::EngineArgs;
use super::flags::{NumaArg, WorkloadArgs};

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
    /// Placement policy of every point: local (default), spread, remote or none.
    #[arg(long, value_enum, value_name = "POLICY")]
    pub numa: Option<NumaArg>,
    #[command(flatten)]
    pub workload: WorkloadArgs,
    #[command(flatten)]
    pub engine: EngineArgs,
}

/// A note on stderr.
fn note(n: String) {
    eprintln!("numio: {n}");
}

/// Runs `numio coalesce sweep`.
pub fn run(args: SweepArgs) -> anyhow::Result<i32> {
    interrupt::install(|n| eprint!("{}", n.line(Undoing::CoalesceSweep)))?;
    let input = PlanInput {
        targets: &args.targets,
        threshold: &args.threshold,
        time: &args.time,
        devices: args.devices.as_deref(),
        repeat: args.repeat,
        max_latency: &args.max_latency,
        backend: args.engine.backend_for(&args.targets).into(),
        chart: args.chart.as_deref(),
    };
    let plan = session::coalesce_plan::plan(&input, &mut note)?;
    args.workload.workload()?;
    let topo = Topology::discover(Path::new("/"))?;
    let controllers = tune::target::namespace_controllers(&topo, &args.targets, &mut note)?;
    let (schedule, cores) = schedule(&args, &plan, &topo)?;
    let access = tune::DevAccess::default();
    let sweep = CoalesceSweep {
        access: &access,
        journal: tune::Journal::default_location()?,
        command: super::report::command_line(),
        plan,
        targets: args.targets.clone(),
        controllers,
    };
    sweep.preflight()?;
    let runs = Runs::Sweep {
        labels: schedule.arms.iter().map(|a| a.label.clone()).collect(),
        rounds: args.repeat,
    };
    let mut display = Display::new(args.engine.progress_mode(args.json), runs);
    let mut observer = |e: &session::Event<'_>| display.event(e);
    let done = sweep.run(&schedule, cores, interrupt::flag(), &mut observer)?;
    done.notes.iter().cloned().for_each(note);
    let out = Outputs {
        json: args.json,
        save: args.save,
        chart: args.chart,
        apply: args.apply,
    };
    sweep.finish(&done, &out, &mut |e| match e {
        Emit::Stdout(text) => print!("{text}"),
        Emit::Note(n) => note(n),
    })?;
    Ok(interrupt::exit_code().unwrap_or(i32::from(done.failed_runs > 0)))
}

/// The schedule of the plan's points, an arm each
/// (`SweepPlan::placements`, `SweepPlan::schedule`), and each one's cores.
fn schedule(
    args: &SweepArgs,
    plan: &SweepPlan,
    topo: &Topology,
) -> anyhow::Result<(Schedule, Vec<usize>)> {
    let opts = args.engine.run_options()?;
    let placing = super::flags::placing(args.numa, args.cpus.as_deref(), &[]);
    let mut say = |line: String| eprintln!("numio: {line}");
    let w = args.workload.flags();
    let placements = plan.placements(&w, &placing, &args.targets, topo, &mut say)?;
    Ok(plan.schedule(placements, opts, args.repeat))
}
