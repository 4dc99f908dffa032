//! `numio sweep --hosts A,B [--target-host T]`: the sweep over a fleet,
//! numio's one NVMe-oF study. Each point runs `numio bench` on its first
//! N hosts at once (`initiators=1,2,4`), against their targets or a
//! `numio serve` that each run starts on the target host (`reactors=K`:
//! on the first K of `--target-cpus`); the workload axes and flags go to
//! every host's bench. `session::fleet` runs it; the result is a sweep set
//! like any other (`numio report` reprints it).

use anyhow::Context;
use clap::{parser::ValueSource, ArgAction, Args as _};
use session::fleet::{bench_flag, FleetNote, FleetRunner};
use session::fleet_points::{FleetSweepAsk, TargetAsk};
use session::{interrupt, Schedule};

use super::bench::bench_fleet::Progress;
use super::display::{Display, Runs};
use super::engine_args::EngineArgs;
use super::flags::WorkloadArgs;
use super::sweep_args::StackArg;
use session::axes::Axis;

/// Runs the sweep `args` with `axes` over the hosts against `given`.
pub fn run(
    args: &super::sweep_args::Args,
    axes: &[Axis],
    given: &[String],
    goal: Option<report::SweepGoal>,
) -> anyhow::Result<i32> {
    let f = &args.fleet;
    let hosts = f.fleet.hosts()?;
    let skip: Vec<&str> = axes.iter().filter_map(|a| bench_flag(&a.name)).collect();
    let mut bench_argv = bench_flags(&skip)?;
    let numa = args.numa.map(planner::flags::Numa::from);
    bench_argv.extend(numa.map(|n| format!("--numa={}", n.name())));
    let opts = engine::RunOptions {
        percentiles: match &args.engine.percentiles {
            Some(p) => super::flags::parse_percentiles(p)?,
            None => engine::DEFAULT_PERCENTILES.to_vec(),
        },
        backend: engine::BackendKind::Tcp,
        ..Default::default()
    };
    let target = f.target_host.as_deref().map(|host| TargetAsk {
        host,
        listen: f.target_listen.as_deref(),
        transport: f.target_transport.as_deref().unwrap_or("tcp"),
        ns: &f.target_ns,
        poll: f.target_poll,
        cpus: f.target_cpus.as_deref(),
        nqn: nvmf::config::DEFAULT_NQN,
    });
    let plan = session::fleet_points::plan(FleetSweepAsk {
        axes,
        given,
        hosts: &hosts,
        bench_argv,
        target,
        kernel: f.stack == StackArg::Kernel,
        cpus_given: args.cpus.is_some(),
        opts,
    })?;
    let schedule = Schedule {
        arms: plan.arms,
        rounds: args.repeat,
    };
    let mut display = Display::new(
        args.engine.progress_mode(args.json),
        Runs::Sweep {
            labels: schedule.arms.iter().map(|a| a.label.clone()).collect(),
            rounds: args.repeat,
        },
    );
    let mut progress = Progress::new(&plan.runs);
    let mut notes = |n: FleetNote<'_>| match n {
        FleetNote::TargetStarting { host, argv } => {
            eprintln!("numio: starting numio serve on {host} ({})", argv.join(" "));
        }
        FleetNote::TargetReady { host, lines } => {
            for l in lines {
                eprintln!("numio: {host}: {l}");
            }
        }
        FleetNote::Fleet(e) => progress.event(e),
        _ => {}
    };
    let mut runner = FleetRunner {
        hosts: plan.runs,
        target: plan.target,
        points: plan.points,
        opts: f.fleet.ssh.options()?,
        notes: &mut notes,
        partial_runs: 0,
    };
    let outcome = schedule.run_with(&mut runner, interrupt::flag(), &mut |e| display.event(e))?;
    let partial_runs = runner.partial_runs;
    let (arms, interrupted) = super::sweep_output::keep_measured(outcome);
    let mut set =
        super::sweep_output::result_set(axes, arms, Vec::new(), args.knee, goal, interrupted);
    if let Some(s) = set.sweep.as_mut() {
        s.fleet = Some(plan.spec);
    }
    super::sweep_output::write(&set, &args.outputs())?;
    if partial_runs > 0 {
        eprintln!(
            "numio: partial: {partial_runs} run(s) lacked a host (named above); their figures cover the hosts that reported"
        );
    }
    Ok(interrupt::exit_code().unwrap_or(i32::from(partial_runs > 0)))
}

/// The workload and engine flags given on the command line, as `numio
/// bench` takes them on every host, less the flags `skip` (set by axes).
fn bench_flags(skip: &[&str]) -> anyhow::Result<Vec<String>> {
    let all: Vec<String> = std::env::args().collect();
    let at = all
        .iter()
        .position(|a| a == "sweep")
        .context("numio sweep --hosts: cannot find `sweep` among the arguments")?;
    let cmd =
        super::sweep_args::Args::augment_args(clap::Command::new("sweep").no_binary_name(true));
    let m = cmd
        .try_get_matches_from(&all[at + 1..])
        .map_err(|e| anyhow::anyhow!("{}", e.render().to_string().trim()))?;
    Ok(given_flags(&m, skip))
}

/// The flags of the workload and engine groups that `m` got from the
/// command line, each as `--name` or `--name=value`, less `skip` (by id).
fn given_flags(m: &clap::ArgMatches, skip: &[&str]) -> Vec<String> {
    let mut out = Vec::new();
    for group in [
        WorkloadArgs::augment_args(clap::Command::new("w")),
        EngineArgs::augment_args(clap::Command::new("e")),
    ] {
        for arg in group.get_arguments() {
            let id = arg.get_id().as_str();
            let Some(long) = arg.get_long() else { continue };
            if skip.contains(&id) || m.value_source(id) != Some(ValueSource::CommandLine) {
                continue;
            }
            match arg.get_action() {
                ArgAction::SetTrue | ArgAction::SetFalse => out.push(format!("--{long}")),
                ArgAction::Count => {
                    out.extend((0..m.get_count(id)).map(|_| format!("--{long}")));
                }
                _ => out.extend(
                    m.get_raw(id)
                        .into_iter()
                        .flatten()
                        .map(|v| format!("--{long}={}", v.to_string_lossy())),
                ),
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matches(words: &[&str]) -> clap::ArgMatches {
        super::super::sweep_args::Args::augment_args(
            clap::Command::new("sweep").no_binary_name(true),
        )
        .try_get_matches_from(words)
        .unwrap()
    }

    #[test]
    fn given_flags_go_to_the_hosts_as_bench_takes_them_less_the_axes() {
        let m = matches(&[
            "iodepth=1,4",
            "--iodepth",
            "8",
            "--rw",
            "randwrite",
            "--runtime=2s",
            "--poll",
            "--json",
            "--hosts",
            "a,b",
        ]);
        // --iodepth is the axis's; --json and --hosts are the sweep's;
        // defaults (--iopolicy numa) are not given.
        assert_eq!(
            given_flags(&m, &["iodepth"]),
            ["--rw=randwrite", "--runtime=2s", "--poll"]
        );
    }
}
