//! `numio sweep --hosts A,B [--target-host T]`: the sweep over a fleet,
//! numio's one NVMe-oF study. Each point runs `numio bench` on its first
//! N hosts at once (`initiators=1,2,4`), against their targets or a
//! `numio serve` that each run starts on the target host (`reactors=K`:
//! on the first K of `--target-cpus`); the workload axes and flags go to
//! every host's bench. `session::fleet` runs it; the result is a sweep set
//! like any other (`numio report` reprints it).

use std::collections::HashMap;

use anyhow::{bail, Context};
use clap::{parser::ValueSource, ArgAction, Args as _};
use fleet::HostRun;
use session::fleet::{bench_flag, FleetNote, FleetPoint, FleetRunner, ServedTarget, AXES};
use session::{interrupt, LiveArm, Schedule};

use super::bench::bench_fleet::Progress;
use super::display::{Display, Runs};
use super::engine_args::EngineArgs;
use super::flags::WorkloadArgs;
use super::sweep_args::{StackArg, SweepHostsArgs};
use session::axes::{points, Axis};

/// Runs the sweep `args` with `axes` over the hosts against `given`.
pub fn run(
    args: &super::sweep_args::Args,
    axes: &[Axis],
    given: &[String],
    goal: Option<report::SweepGoal>,
) -> anyhow::Result<i32> {
    let f = &args.fleet;
    for a in axes {
        if !AXES.iter().any(|(n, _)| *n == a.name) {
            bail!(
                "{}= with --hosts: a sweep over hosts varies {}",
                a.name,
                AXES.map(|(n, _)| n).join(", ")
            );
        }
    }
    if args.cpus.is_some() {
        bail!("--cpus with --hosts: each host places its own jobs (--numa, local by default); drop --cpus");
    }
    let hosts = f.fleet.hosts()?;
    let (target, url, runs) = targets(f, given, &hosts)?;
    let counts = axis_counts(axes, "initiators", hosts.len(), "the hosts given")?;
    let cpus = reactor_cpus(f, axes)?;
    let skip: Vec<&str> = axes.iter().filter_map(|a| bench_flag(&a.name)).collect();
    let mut base = bench_flags(&skip)?;
    if let Some(n) = args.numa {
        use clap::ValueEnum;
        let name = n.to_possible_value().expect("no skipped values");
        base.push(format!("--numa={}", name.get_name()));
    }
    let opts = engine::RunOptions {
        percentiles: match &args.engine.percentiles {
            Some(p) => super::flags::parse_percentiles(p)?,
            None => engine::DEFAULT_PERCENTILES.to_vec(),
        },
        backend: engine::BackendKind::Tcp,
        ..Default::default()
    };
    let mut arms = Vec::new();
    let mut planned = HashMap::new();
    for (label, values) in points(axes) {
        let mut argv = base.clone();
        let mut point = FleetPoint {
            initiators: hosts.len(),
            argv: Vec::new(),
            target_cpus: f.target_cpus.clone(),
        };
        for (a, (i, v)) in axes.iter().zip(&values) {
            match a.name.as_str() {
                "initiators" => point.initiators = counts[*i],
                "reactors" => point.target_cpus = Some(cpus[*i].clone()),
                name => argv.push(format!("--{}={v}", bench_flag(name).expect("checked"))),
            }
        }
        point.argv = argv;
        planned.insert(label.clone(), point);
        arms.push(LiveArm {
            label: label.clone(),
            spec: label,
            placement: Default::default(),
            opts: opts.clone(),
            settle_group: 0,
        });
    }
    let opts = f.fleet.ssh.options()?;
    let schedule = Schedule {
        arms,
        rounds: args.repeat,
    };
    let mut display = Display::new(
        args.engine.progress_mode(args.json),
        Runs::Sweep {
            labels: schedule.arms.iter().map(|a| a.label.clone()).collect(),
            rounds: args.repeat,
        },
    );
    let mut progress = Progress::new(&runs);
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
    };
    let spec = report::FleetSweepSpec {
        hosts: hosts.iter().map(|h| h.label.clone()).collect(),
        stack: match f.stack {
            StackArg::Numio => "numio",
            StackArg::Kernel => "kernel",
        }
        .to_string(),
        url: url.unwrap_or_else(|| given.join(" ")),
        target_host: target.as_ref().map(|t| t.host.label.clone()),
    };
    let mut runner = FleetRunner {
        hosts: runs,
        target,
        points: planned,
        opts,
        notes: &mut notes,
        partial_runs: 0,
    };
    let outcome = schedule.run_with(&mut runner, interrupt::flag(), &mut |e| display.event(e))?;
    let partial_runs = runner.partial_runs;
    let (arms, interrupted) = super::sweep_output::keep_measured(outcome);
    let mut set =
        super::sweep_output::result_set(axes, arms, Vec::new(), args.knee, goal, interrupted);
    if let Some(s) = set.sweep.as_mut() {
        s.fleet = Some(spec);
    }
    super::sweep_output::write(&set, &args.outputs())?;
    if partial_runs > 0 {
        eprintln!(
            "numio: partial: {partial_runs} run(s) lacked a host (named above); their figures cover the hosts that reported"
        );
    }
    Ok(interrupt::exit_code().unwrap_or(i32::from(partial_runs > 0)))
}

/// The served target (with `--target-host`), the URL the hosts reach, and
/// each host's part: the target's namespace, or the targets given (a
/// `HOST:PATH` is that host's only, others go to every host).
fn targets(
    f: &SweepHostsArgs,
    given: &[String],
    hosts: &[fleet::Host],
) -> anyhow::Result<(Option<ServedTarget>, Option<String>, Vec<HostRun>)> {
    let (served, url, per_host) = match &f.target_host {
        Some(t) => {
            if let Some(g) = given.first() {
                bail!("{g} with --target-host: the hosts reach the namespace numio serve serves there; drop {g}, or --target-host to bench {g}");
            }
            let (served, url) = ServedTarget::numio_serve(
                fleet::parse_host(t)?,
                f.target_listen.as_deref(),
                f.target_transport.as_deref().unwrap_or("tcp"),
                nvmf::config::DEFAULT_NQN,
                &f.target_ns,
                f.target_poll,
            );
            let per_host = vec![vec![url.clone()]; hosts.len()];
            (Some(served), Some(url), per_host)
        }
        None => (None, None, fleet::targets_per_host(given, hosts)),
    };
    let runs = session::fleet::host_runs(hosts, per_host, f.stack == StackArg::Kernel)?;
    Ok((served, url, runs))
}

/// The values of axis `name` as counts in `1..=max`, or `[max]` without
/// the axis.
fn axis_counts(axes: &[Axis], name: &str, max: usize, what: &str) -> anyhow::Result<Vec<usize>> {
    match axes.iter().find(|a| a.name == name) {
        Some(a) => Ok(session::fleet::counts(name, &a.values, max, what)?),
        None => Ok(vec![max]),
    }
}

/// The target's `--cpus` at each value of a `reactors` axis: the first K
/// of `--target-cpus`.
fn reactor_cpus(f: &SweepHostsArgs, axes: &[Axis]) -> anyhow::Result<Vec<String>> {
    let Some(a) = axes.iter().find(|a| a.name == "reactors") else {
        return Ok(Vec::new());
    };
    let list = a.values.join(",");
    if f.target_host.is_none() {
        bail!("reactors={list} with --hosts: name the host that serves, --target-host HOST (with --target-cpus LIST)");
    }
    let Some(text) = f.target_cpus.as_deref() else {
        bail!("reactors={list} with --target-host: name its CPUs, --target-cpus LIST (e.g. 0-7); a point of K reactors serves on the first K");
    };
    let cpus = planner::cpuset::parse_cpu_list(text)
        .map_err(|e| anyhow::anyhow!("--target-cpus {text}: {e}"))?;
    let counts = axis_counts(axes, "reactors", cpus.len(), "the CPUs of --target-cpus")?;
    Ok(counts
        .iter()
        .map(|&k| {
            cpus[..k]
                .iter()
                .map(|c| c.to_string())
                .collect::<Vec<_>>()
                .join(",")
        })
        .collect())
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
