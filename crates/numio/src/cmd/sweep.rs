//! `numio sweep AXIS=VALUES [AXIS=VALUES] [TARGETS] [bench workload flags]`:
//! one bench plan per point (placed by `--numa`, local unless asked, or
//! `--cpus`), run as a session schedule with one arm per point (`--repeat`
//! rounds, interleaved; Ctrl-C keeps the points measured), then handed to
//! `report::sweep` as a sweep result set (efficiency, knee, saturation,
//! CPU headroom, goal) and printed as a table, JSON, CSV, a saved file or
//! a chart. The plan of the points is `session::sweep` (a `reactors`
//! axis: `session::served`), the output `report::sweep::output`; across
//! hosts, `sweep_fleet`.

use anyhow::bail;
use session::interrupt;

use super::display::{Display, Runs};
pub use super::sweep_args::{Args, MAX_POINTS};
use session::axes::parse_words;

/// Runs `numio sweep`.
pub fn run(args: Args) -> anyhow::Result<i32> {
    interrupt::install(super::display::on_signal)?;
    check(&args)?;
    let goal = session::sweep::goal(args.target_iops.as_deref(), args.target_bw.as_deref())?;
    let (axes, given) = parse_words(&args.words)?;
    let grid_points = axes.iter().map(|a| a.values.len()).product::<usize>();
    if grid_points > MAX_POINTS && !args.force {
        bail!("{grid_points} points: more than {MAX_POINTS}; narrow the axes or add --allow-large-grid");
    }
    if args.fleet.fleet.wanted() {
        return super::sweep_fleet::run(&args, &axes, &given, goal);
    }
    if let Some(t) = &args.fleet.target_host {
        bail!("--target-host {t} without --hosts: name the initiator hosts, --hosts A,B");
    }
    if let Some(a) = axes.iter().find(|a| a.name == "initiators") {
        bail!(
            "initiators={} without --hosts: the axis counts initiator hosts; name them, --hosts A,B",
            a.values.join(",")
        );
    }
    let opts = args.engine.run_options()?;
    let placing = super::flags::placing(args.numa, args.cpus.as_deref(), &[]);
    let ask = session::sweep::SweepAsk {
        axes,
        targets: &given,
        workload: &args.workload.flags(),
        placing: &placing,
        opts: &opts,
        repeat: args.repeat,
        exe: std::env::current_exe()?,
    };
    let mut say = |line: String| eprintln!("numio: {line}");
    let mut planned = session::sweep::plan(ask, &mut say)?;
    let runs = Runs::Sweep {
        labels: planned
            .schedule
            .arms
            .iter()
            .map(|a| a.label.clone())
            .collect(),
        rounds: args.repeat,
    };
    let mut display = Display::new(args.engine.progress_mode(args.json), runs);
    let outcome =
        planned
            .schedule
            .run_with(planned.runner.as_mut(), interrupt::flag(), &mut |e| {
                display.event(e)
            })?;
    let failed_runs = outcome.failed_runs;
    let (arms, interrupted) = super::sweep_output::keep_measured(outcome);
    let (axes, cores) = (&planned.axes, planned.cores);
    let set = super::sweep_output::result_set(axes, arms, cores, args.knee, goal, interrupted);
    super::sweep_output::write(&set, &args.outputs())?;
    let code = i32::from(failed_runs > 0);
    Ok(interrupt::exit_code().unwrap_or(code))
}

fn check(args: &Args) -> anyhow::Result<()> {
    anyhow::ensure!(
        args.repeat >= 1,
        "--repeat {}: give 1 or more runs",
        args.repeat
    );
    anyhow::ensure!(
        args.knee > 0.0 && args.knee <= 1.0,
        "--knee {}: give a fraction in (0, 1], such as 0.8",
        args.knee
    );
    anyhow::ensure!(
        !(args.json && args.csv.as_deref().is_some_and(|p| p.as_os_str() == "-")),
        "--json and --csv -: both want standard output; write the CSV to a file"
    );
    Ok(())
}
