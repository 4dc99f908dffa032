//! `numio sweep AXIS=VALUES [AXIS=VALUES] [TARGETS] [bench workload flags]`:
//! one bench plan per point (placed by `--numa`, local unless asked, or
//! `--cpus`), run as a session schedule with one arm per point (`--repeat`
//! rounds, interleaved; Ctrl-C keeps the points measured), then handed to
//! `report::sweep` as a sweep result set (efficiency, knee, saturation,
//! CPU headroom, goal) and printed as a table, JSON, CSV, a saved file or
//! a chart. The axes live in `sweep_axes`, placement in `sweep_place`,
//! output in `sweep_output`, the `numio serve` of the `reactors` axis in
//! `sweep_serve`.

use std::collections::HashMap;
use std::path::Path;

use anyhow::{bail, Context};
use session::{interrupt, LiveArm, LocalRunner, Runner, Schedule};
use topology::Topology;

use super::display::{Display, Runs};
use super::flags::WorkloadArgs;
pub use super::sweep_args::{Args, MAX_POINTS};
use super::sweep_output::keep_measured;
use super::sweep_place::{jobs_cap, point_placement, policy};
use super::sweep_serve;
use session::axes::{cap_jobs, check_initiator_cores, is_cores_axis, parse_words, points, Axis};

/// Runs `numio sweep`.
pub fn run(args: Args) -> anyhow::Result<i32> {
    interrupt::install(super::display::on_signal)?;
    check(&args)?;
    let goal = goal(&args)?;
    let (mut axes, given) = parse_words(&args.words)?;
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
    let topo = Topology::discover(Path::new("/"))?;
    let base = args.workload.workload()?;
    check_initiator_cores(&axes, &given)?;
    let serve = served_points(&axes, &given, &topo)?;
    let (targets, labels) = match &serve {
        Some(_) => (vec![sweep_serve::TARGET.to_string()], Default::default()),
        None => super::bench::choose_targets(&given, Some(&topo), &base)?,
    };
    let policy = policy(args.numa, args.cpus.as_deref(), &axes, &targets)?;
    cap_jobs_axis(&mut axes, &targets, &args.workload, &topo, &policy)?;
    let mut arms = Vec::new();
    let mut cores = Vec::new();
    // Each warning once, naming its points unless it holds at every one.
    let mut warned: Vec<(String, Vec<String>)> = Vec::new();
    let all_points = points(&axes);
    for (label, values) in &all_points {
        let mut o = opts.clone();
        o.labels = labels.clone();
        if serve.is_some() {
            o.backend = engine::BackendKind::Tcp;
        }
        if let Some(i) = axes.iter().position(|a| a.name == "transport") {
            o.backend = session::axes::transport_backend(&values[i].1);
        }
        let placement = point_placement(&args.workload, &axes, values, &targets, &topo, &policy)
            .with_context(|| format!("point {label}"))?;
        for warn in &placement.warnings {
            match warned.iter_mut().find(|(w, _)| w == warn) {
                Some((_, at)) => at.push(label.clone()),
                None => warned.push((warn.clone(), vec![label.clone()])),
            }
        }
        cores.push(placement.targets.iter().map(|t| t.jobs.len()).sum());
        arms.push(LiveArm {
            label: label.clone(),
            spec: label.clone(),
            placement,
            opts: o,
            settle_group: 0,
        });
    }
    for (warn, at) in &warned {
        if at.len() == all_points.len() {
            eprintln!("numio: warning: {warn}");
        } else {
            eprintln!("numio: warning ({}): {warn}", at.join(", "));
        }
    }
    let mut schedule = Schedule {
        arms,
        rounds: args.repeat,
    };
    schedule.group_by_targets();
    let runs = Runs::Sweep {
        labels: schedule.arms.iter().map(|a| a.label.clone()).collect(),
        rounds: args.repeat,
    };
    let mut display = Display::new(args.engine.progress_mode(args.json), runs);
    let mut runner = runner(serve);
    let outcome = schedule.run_with(runner.as_mut(), interrupt::flag(), &mut |e| {
        display.event(e)
    })?;
    let failed_runs = outcome.failed_runs;
    let (arms, interrupted) = keep_measured(outcome);
    let set = super::sweep_output::result_set(&axes, arms, cores, args.knee, goal, interrupted);
    super::sweep_output::write(&set, &args.outputs())?;
    let code = i32::from(failed_runs > 0);
    Ok(interrupt::exit_code().unwrap_or(code))
}

/// For a `reactors` axis, the reactor CPUs of each point by its label;
/// errors for targets given with it (the sweep serves its own) and for a
/// `devices` axis beside it.
fn served_points(
    axes: &[Axis],
    given: &[String],
    topo: &Topology,
) -> anyhow::Result<Option<HashMap<String, Vec<u32>>>> {
    let Some(i) = axes.iter().position(|a| a.name == "reactors") else {
        return Ok(None);
    };
    if let Some(t) = given.first() {
        bail!(
            "reactors={} with target {t}: the sweep serves its own RAM namespace on loopback; drop the targets",
            axes[i].values.join(",")
        );
    }
    if axes.iter().any(|a| a.name == "devices") {
        bail!("reactors with devices: the served target has one namespace; sweep one of them");
    }
    if axes.iter().any(|a| a.name == "transport") {
        bail!(
            "reactors with transport: the served target is on loopback, where RDMA does not run; \
             serve one yourself (numio serve --transport tcp,rdma --listen ADDR:4420 on an RDMA-capable interface) and give it as a target"
        );
    }
    let mut cpus = HashMap::new();
    for (label, values) in points(axes) {
        let value = &values[i].1;
        cpus.insert(label, sweep_serve::reactor_cpus(topo, value)?);
    }
    Ok(Some(cpus))
}

/// Each run on this machine's engine, or, for a `reactors` axis, against
/// a `numio serve` of its own.
fn runner(serve: Option<HashMap<String, Vec<u32>>>) -> Box<dyn Runner> {
    match serve {
        Some(cpus) => Box::new(sweep_serve::ServeRunner { cpus }),
        None => Box::new(LocalRunner),
    }
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

/// The goal of `--target-iops` / `--target-bw`.
fn goal(args: &Args) -> anyhow::Result<Option<report::SweepGoal>> {
    match (&args.target_iops, &args.target_bw) {
        (Some(_), Some(_)) => bail!("--target-iops and --target-bw: give one goal"),
        (Some(text), None) => {
            let n = parse_count(text).with_context(|| {
                format!("--target-iops {text}: give a count such as 500000, 800k or 1.5M")
            })?;
            Ok(Some(report::SweepGoal::Iops(n)))
        }
        (None, Some(text)) => {
            let bytes = super::flags::parse_size("target-bw", text)?;
            anyhow::ensure!(
                bytes > 0,
                "--target-bw {text}: give a bandwidth above 0, such as 3G"
            );
            Ok(Some(report::SweepGoal::BandwidthBytesPerS(bytes as f64)))
        }
        (None, None) => Ok(None),
    }
}

/// `800k`, `1.5M`, `2G` or a plain number (decimal units).
fn parse_count(text: &str) -> Option<f64> {
    let t = text.trim();
    let (num, mult) = match t.chars().last()? {
        'k' | 'K' => (&t[..t.len() - 1], 1e3),
        'm' | 'M' => (&t[..t.len() - 1], 1e6),
        'g' | 'G' => (&t[..t.len() - 1], 1e9),
        _ => (t, 1.0),
    };
    num.parse::<f64>()
        .ok()
        .filter(|v| v.is_finite() && *v > 0.0)
        .map(|v| v * mult)
}

/// Caps the jobs axis at the CPUs the placement gives a target (the
/// fewest devices of a devices axis), with a warning.
fn cap_jobs_axis(
    axes: &mut [Axis],
    targets: &[String],
    flags: &WorkloadArgs,
    topo: &Topology,
    policy: &planner::Policy,
) -> anyhow::Result<()> {
    let Some(jobs) = axes.iter().position(|a| is_cores_axis(&a.name)) else {
        return Ok(());
    };
    let fewest = axes
        .iter()
        .find(|a| a.name == "devices")
        .and_then(|a| {
            a.values
                .iter()
                .filter_map(|v| v.parse::<usize>().ok())
                .min()
        })
        .unwrap_or(targets.len())
        .clamp(1, targets.len().max(1));
    let Some(cap) = jobs_cap(topo, &targets[..fewest.min(targets.len())], flags, policy)? else {
        return Ok(());
    };
    if let Some((kept, warning)) = cap_jobs(&axes[jobs].values, cap, targets) {
        eprintln!("numio: warning: {warning}");
        axes[jobs].values = kept;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn goals_parse_with_units_and_bad_ones_are_named() {
        assert_eq!(parse_count("1.5M"), Some(1.5e6));
        assert_eq!(parse_count("800k"), Some(800e3));
        assert_eq!(parse_count("42"), Some(42.0));
        assert_eq!(parse_count("x"), None);
        assert_eq!(parse_count("-1"), None);
    }
}
