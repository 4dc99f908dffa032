//! `numio compare`: two arms (placement policies, saved plans, fio job
//! files) run interleaved A B A B … by a session schedule, or taken from
//! saved result files, and whether they differ (the statistics live in
//! the `report` crate). Two saved sweeps compare point by point.

use std::path::Path;

use anyhow::Context;
use engine::RunOptions;
use report::arm::ArmSpec;
use report::{ResultSet, SetKind};
use session::arms::{self, Compared, Prepared};
use session::backend_arms::{BackendRunner, GiveBack};
use session::fleet_bench::{self, FleetBench, HostsArm};
use session::interrupt;
use session::schedule::BoxError;
use topology::Topology;

use super::bench::{bench_vfio, choose_targets};
use super::display::{Display, Runs};
use super::engine_args::EngineArgs;
use super::flags::WorkloadArgs;
use super::report::{command_line, now_unix_s};

/// Flags of `numio compare`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Arm A: numa=local|spread|remote|none (or policy=), backend=uring|passthru|vfio|sync
    /// (one drive, pci:ADDR or /dev/nvmeXnY, through each backend's own
    /// path), plan=FILE (numio plan --save),
    /// fio=FILE (job file), result=FILE[,arm=LABEL] or hosts=H1,H2 (a fleet
    /// over ssh, as numio bench --hosts; then --b names hosts too); append
    /// ,label=NAME to rename.
    #[arg(long = "a", value_name = "ARM")]
    pub a: String,
    /// Arm B, as --a.
    #[arg(long = "b", value_name = "ARM")]
    pub b: String,
    /// A third arm, as --a (live arms interleave A B C A B C …; B and C are
    /// each compared with A), e.g. --a backend=vfio --b backend=passthru
    /// --c backend=uring on one drive.
    #[arg(long = "c", value_name = "ARM")]
    pub c: Option<String>,
    /// Runs of each live arm, interleaved A B A B … (5 or more for Welch's t-test).
    #[arg(long, default_value_t = 5, value_name = "N")]
    pub repeat: usize,
    /// Targets of policy= arms. None: every NVMe namespace, or else the default
    /// 1 GiB file under $TMPDIR (as `numio bench`).
    pub targets: Vec<String>,
    /// fio=FILE arms: `--numa auto` places jobs without
    /// cpus_allowed/numa_cpu_nodes by the local policy (as bench and plan
    /// take it; `--fio-numa-auto` is the older spelling).
    #[arg(long = "numa", value_name = "auto", value_parser = ["auto"], hide_possible_values = true)]
    pub numa: Option<String>,
    /// The older spelling of `--numa auto`.
    #[arg(long, hide = true)]
    pub fio_numa_auto: bool,
    /// `--save` (every run of both arms), `--csv`, `--chart`.
    #[command(flatten)]
    pub export: super::report::ExportArgs,
    /// Print the result set and its analysis as JSON instead of text.
    #[arg(long)]
    pub json: bool,
    /// How hosts= arms reach their hosts.
    #[command(flatten)]
    pub ssh: super::bench::bench_fleet::SshArgs,
    #[command(flatten)]
    pub workload: WorkloadArgs,
    #[command(flatten)]
    pub engine: EngineArgs,
}

/// Runs `numio compare`.
pub fn run(args: Args) -> anyhow::Result<i32> {
    anyhow::ensure!(
        (1..=1000).contains(&args.repeat),
        "--repeat {}: give 1 to 1000 runs per arm",
        args.repeat
    );
    interrupt::install(super::display::on_signal)?;
    if HostsArm::is_hosts(&args.a) || HostsArm::is_hosts(&args.b) {
        return run_fleet(&args);
    }
    let mut specs = vec![parse_arm("--a", &args.a)?, parse_arm("--b", &args.b)?];
    if let Some(c) = &args.c {
        specs.push(parse_arm("--c", c)?);
    } else if let Some((la, lb, points)) = arms::saved_sweeps(&specs)? {
        match args.json {
            true => println!("{}", serde_json::to_string_pretty(&points)?),
            false => print!("{}", report::sweep::compare::render(&points, &la, &lb)),
        }
        return Ok(0);
    }
    // result= arms are read first, so a bad file fails before anything is
    // planned (or the default target is created).
    let workload = args.workload.workload()?;
    let saved = arms::load_saved(&specs, &workload)?;
    let mut opts = args.engine.run_options()?;
    let topology = Topology::discover(Path::new("/")).ok();
    let mut targets = args.targets.clone();
    if arms::needs_targets(&specs) {
        (targets, opts.labels) = choose_targets(&args.targets, topology.as_ref(), &workload)?;
    }
    let inputs = arms::Inputs {
        workload: &workload,
        targets: &targets,
        topology: topology.as_ref(),
        fio_numa_auto: args.fio_numa_auto || args.numa.is_some(),
        given_flags: &args.workload.given(),
    };
    let hooks = arms::Hooks {
        over: &mut |p, from| Ok(args.workload.apply_over(p, from)?),
        warn: &mut |w| eprintln!("numio: {w}"),
    };
    let prepared = arms::prepare_all(&mut specs, saved, &inputs, hooks)?;
    let done = run_live(&args, &specs, prepared, &opts)?;
    // Arms read from saved results ran whenever they ran.
    finish(&args, done, Some(specs.iter().all(|s| s.is_live())))
}

/// Runs the live arms, their events on stderr, a `vfio` arm's
/// controllers bound for its runs only.
fn run_live(
    args: &Args,
    specs: &[ArmSpec],
    prepared: Vec<Prepared>,
    opts: &RunOptions,
) -> anyhow::Result<Compared> {
    let labels = specs.iter().filter(|s| s.is_live());
    let runs = Runs::Compare {
        labels: labels.map(|s| s.label.clone()).collect(),
        rounds: args.repeat,
    };
    let mut display = Display::new(args.engine.progress_mode(args.json), runs);
    let (force, noiommu) = (args.engine.force_unbind, args.engine.allow_noiommu);
    let flat = |e: anyhow::Error| BoxError::from(format!("{e:#}"));
    let mut take = |t: &[String]| -> Result<GiveBack, BoxError> {
        let bound = bench_vfio::take(t, force, noiommu, "numio compare").map_err(flat)?;
        Ok(Box::new(move || bound.give_back().map_err(flat)))
    };
    let runner = &mut BackendRunner { take: &mut take };
    let (flag, rounds) = (interrupt::flag(), args.repeat);
    let observer = &mut |e: &session::Event<'_>| display.event(e);
    let done = arms::run_live(specs, prepared, opts, rounds, runner, flag, observer)?;
    Ok(done)
}

/// `--a hosts=A,B --b hosts=C,D`: two fleets run interleaved A B A B …,
/// each run a fleet run at one instant on every host of its arm
/// (`session::fleet_bench`), compared as any two arms; the
/// per-host-and-drive rows (`HOST:PATH`) show which host moved.
fn run_fleet(args: &Args) -> anyhow::Result<i32> {
    anyhow::ensure!(
        args.c.is_none(),
        "--c: a fleet comparison (hosts=) has two arms; drop --c"
    );
    let all: Vec<String> = std::env::args().collect();
    let fleet = FleetBench {
        arms: vec![
            HostsArm::parse("--a", &args.a)?,
            HostsArm::parse("--b", &args.b)?,
        ],
        targets: args.targets.clone(),
        argv: fleet_bench::bench_argv(&all, "compare").unwrap_or_default(),
        rounds: args.repeat,
        opts: args.ssh.options()?,
    };
    let mut view = fleet.view();
    let done = fleet.compare(interrupt::flag(), &mut |n| {
        view.line(&n).into_iter().for_each(|l| eprintln!("{l}"))
    })?;
    finish(args, done, None)
}

/// Prints `done`'s notes, then its arms' comparison, and exports them.
fn finish(args: &Args, done: Compared, interleaved: Option<bool>) -> anyhow::Result<i32> {
    done.notes.iter().for_each(|n| eprintln!("numio: {n}"));
    let Some(arms) = done.arms else {
        return Ok(interrupt::exit_code().unwrap_or(1));
    };
    let mut set = ResultSet::new(SetKind::Compare, command_line(), now_unix_s(), arms);
    set.interleaved = interleaved;
    args.export.finish(&set, args.json)?;
    Ok(interrupt::exit_code().unwrap_or(0))
}

fn parse_arm(flag: &str, text: &str) -> anyhow::Result<ArmSpec> {
    ArmSpec::parse(text).with_context(|| format!("{flag} {text}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Debug, Parser)]
    struct Cli {
        #[command(flatten)]
        args: Args,
    }

    fn parse(argv: &[&str]) -> Args {
        Cli::try_parse_from(std::iter::once("compare").chain(argv.iter().copied()))
            .expect("flags parse")
            .args
    }

    #[test]
    fn bad_arms_and_repeat_are_refused_with_the_fix() {
        let err = run(parse(&["--a", "policy=numa", "--b", "policy=spread"])).unwrap_err();
        assert!(
            format!("{err:#}").contains("local, spread, remote or none"),
            "{err:#}"
        );
        let err = run(parse(&[
            "--a",
            "policy=local",
            "--b",
            "policy=spread",
            "--repeat",
            "0",
        ]))
        .unwrap_err();
        assert!(err.to_string().contains("--repeat 0"), "{err}");
        let err = run(parse(&[
            "--a",
            "result=/nonexistent.json",
            "--b",
            "policy=spread",
        ]))
        .unwrap_err();
        assert!(format!("{err:#}").contains("/nonexistent.json"), "{err:#}");
    }

    /// End to end on this machine: live policy arms on the default target
    /// (every NVMe namespace, else bench's 1 GiB file under $TMPDIR),
    /// interleaved, saved, charted and exported. Checks the mechanics, not
    /// the sign of the difference.
    #[test]
    fn compare_local_vs_spread_end_to_end() {
        let dir = std::env::temp_dir().join(format!("numio-compare-e2e-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (save, chart, csv) = (dir.join("c.json"), dir.join("c.svg"), dir.join("c.csv"));
        let argv = [
            "--a",
            "policy=local",
            "--b",
            "policy=spread",
            "--repeat",
            "3",
            "--runtime",
            "300ms",
            "--iodepth",
            "8",
            "--save",
            save.to_str().unwrap(),
            "--chart",
            chart.to_str().unwrap(),
            "--csv",
            csv.to_str().unwrap(),
        ];
        assert_eq!(run(parse(&argv)).expect("compare runs"), 0);
        let set = report::file::load(&save).expect("saved result loads");
        assert_eq!(set.kind, SetKind::Compare);
        let labels: Vec<&str> = set.arms.iter().map(|a| a.label.as_str()).collect();
        assert_eq!(labels, ["local", "spread"]);
        let order: Vec<(&str, usize)> = set
            .runs_in_order()
            .iter()
            .map(|(a, r)| (a.label.as_str(), r.seq))
            .collect();
        assert_eq!(
            order,
            [
                ("local", 1),
                ("spread", 2),
                ("local", 3),
                ("spread", 4),
                ("local", 5),
                ("spread", 6)
            ]
        );
        for (_, run) in set.runs_in_order() {
            assert!(run.total.iops > 0.0, "every run did I/O: {run:?}");
            assert!(run.raw.is_some(), "the engine's result is kept");
        }
        // Run 1's task-run trial (the default target is an O_DIRECT file)
        // settles the io_uring set-up for every later run of both arms.
        let runs = set.runs_in_order();
        let raw = |i: usize| runs[i].1.raw.as_ref().unwrap();
        let trial = |i: usize| &raw(i)["targets"][0]["workers"][0]["taskrun_trial"];
        if let Some(chosen) = trial(0)["chosen"].as_str() {
            let flag = chosen.to_ascii_uppercase();
            for i in 1..runs.len() {
                assert!(trial(i).is_null(), "run {} had a trial", i + 1);
                let features = raw(i)["environment"]["uring_features"].to_string();
                assert!(
                    features.contains(&flag),
                    "run {}: {features} / {flag}",
                    i + 1
                );
            }
        }
        let comparison = report::analyze(&set).comparison.expect("two arms compare");
        let verdict = &comparison.metrics[0].verdict;
        assert!(
            verdict.starts_with("local: ")
                || verdict.starts_with("spread: ")
                || verdict.starts_with("no "),
            "{verdict}"
        );
        assert!(std::fs::read_to_string(&chart).unwrap().starts_with("<svg"));
        assert_eq!(
            std::fs::read_to_string(&csv).unwrap().lines().count(),
            1 + 6 * 2
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
