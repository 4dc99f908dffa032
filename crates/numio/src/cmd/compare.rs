//! `numio compare`: two arms (placement policies, saved plans, fio job
//! files) run interleaved A B A B … by a session schedule, or taken from
//! saved result files, and whether they differ (the statistics live in
//! the `report` crate). Two saved sweeps compare point by point.

use std::path::Path;

use anyhow::Context;
use planner::Workload;
use report::arm::{distinct_labels, ArmSource, ArmSpec};
use report::{ResultSet, SetKind};
use session::arms::{ArmContext, Prepared};
use session::fleet_bench::HostsArm;
use session::interrupt;
use topology::Topology;

use super::bench::choose_targets;
use super::compare_backend;
use super::display::{Display, Runs};
use super::engine_args::EngineArgs;
use super::flags::WorkloadArgs;
use super::report::{command_line, now_unix_s};

/// Flags of `numio compare`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Arm A: numa=local|spread|none (or policy=), backend=uring|passthru|vfio|sync
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
        return super::compare_fleet::run(&args);
    }
    let mut specs = vec![parse_arm("--a", &args.a)?, parse_arm("--b", &args.b)?];
    if let Some(c) = &args.c {
        specs.push(parse_arm("--c", c)?);
    } else if let Some(code) = compare_sweeps(&specs, &args)? {
        return Ok(code);
    }
    let (prepared, opts) = prepare_arms(&args, &specs)?;
    for (spec, p) in specs.iter_mut().zip(&prepared) {
        if let (Prepared::Loaded(arm), false) = (p, spec.label_given) {
            spec.label = arm.label.clone();
        }
    }
    for i in 0..specs.len() {
        for j in i + 1..specs.len() {
            let (head, tail) = specs.split_at_mut(j);
            distinct_labels(&mut head[i].label, &mut tail[0].label);
        }
    }
    let mut schedule = session::arms::schedule(&specs, &prepared, &opts, args.repeat);
    for arm in &mut schedule.arms {
        if let Ok(ArmSpec {
            source: ArmSource::Backend(name),
            ..
        }) = ArmSpec::parse(&arm.spec)
        {
            arm.opts.backend = compare_backend::kind(&name)?;
        }
    }
    let live_runs = if schedule.arms.is_empty() {
        Vec::new()
    } else {
        let labels = schedule.arms.iter().map(|a| a.label.clone()).collect();
        let runs = Runs::Compare {
            labels,
            rounds: args.repeat,
        };
        let mut display = Display::new(args.engine.progress_mode(args.json), runs);
        let mut runner = compare_backend::BackendRunner {
            force_unbind: args.engine.force_unbind,
            allow_noiommu: args.engine.allow_noiommu,
        };
        let outcome =
            schedule.run_with(&mut runner, interrupt::flag(), &mut |e| display.event(e))?;
        if let Some(cut) = &outcome.interrupted {
            let (seq, total, done) = (cut.run.seq, cut.run.total, outcome.completed());
            match cut.partial {
                Some(_) => eprintln!("numio: interrupted during run {seq} of {total}: it is left out; comparing the {done} completed runs"),
                None => eprintln!("numio: interrupted before run {seq} of {total}: comparing the {done} completed runs"),
            }
        }
        outcome.arms
    };
    let arms = session::arms::assemble(&specs, prepared, live_runs);
    if let Some(code) = interrupt::exit_code() {
        if arms.iter().any(|a| a.runs.is_empty()) {
            eprintln!(
                "numio: interrupted before both arms had a completed run: nothing to compare"
            );
            return Ok(code);
        }
    }
    let mut set = ResultSet::new(SetKind::Compare, command_line(), now_unix_s(), arms);
    // Arms read from saved results ran whenever they ran.
    set.interleaved = Some(specs.iter().all(|s| s.is_live()));
    args.export.finish(&set, args.json)?;
    Ok(interrupt::exit_code().unwrap_or(0))
}

/// Two saved sweeps (`result=A.json`, `result=B.json`, no `arm=`):
/// compared point by point and printed; `None` when the arms are not two
/// sweep files.
fn compare_sweeps(specs: &[ArmSpec], args: &Args) -> anyhow::Result<Option<i32>> {
    let mut sets = Vec::new();
    for spec in specs {
        let ArmSource::Result { path, arm: None } = &spec.source else {
            return Ok(None);
        };
        let set = report::file::load(path)?;
        if set.kind != SetKind::Sweep {
            return Ok(None);
        }
        sets.push((spec.label.clone(), set));
    }
    let [(la, a), (lb, b)] = <[_; 2]>::try_from(sets).expect("two arms");
    let points = report::sweep::compare::compare_points(&a, &b);
    anyhow::ensure!(
        !points.is_empty(),
        "{} and {}: the sweeps share no measured point (labels such as jobs=2 must match)",
        args.a,
        args.b
    );
    if args.json {
        println!("{}", serde_json::to_string_pretty(&points)?);
    } else {
        print!("{}", report::sweep::compare::render(&points, &la, &lb));
    }
    Ok(Some(0))
}

fn parse_arm(flag: &str, text: &str) -> anyhow::Result<ArmSpec> {
    ArmSpec::parse(text).with_context(|| format!("{flag} {text}"))
}

/// Both arms ready, and the engine options of the live ones. `result=`
/// arms are read first, so a bad file fails before anything is planned
/// (or the default target is created).
fn prepare_arms(
    args: &Args,
    specs: &[ArmSpec],
) -> anyhow::Result<(Vec<Prepared>, engine::RunOptions)> {
    let workload = args.workload.workload()?;
    let nothing = ArmContext {
        workload: &workload,
        targets: &[],
        topology: None,
        fio_numa_auto: false,
    };
    let mut loaded = Vec::new();
    for spec in specs.iter().filter(|s| !s.is_live()) {
        loaded.push(session::arms::prepare(spec, &nothing)?);
    }
    let mut opts = args.engine.run_options()?;
    let topology = Topology::discover(Path::new("/")).ok();
    let (targets, labels) = live_targets(args, specs, topology.as_ref(), &workload)?;
    opts.labels = labels;
    let ctx = ArmContext {
        workload: &workload,
        targets: &session::targets::target_specs(Path::new("/"), &targets),
        topology: topology.as_ref(),
        fio_numa_auto: args.fio_numa_auto || args.numa.is_some(),
    };
    let mut loaded = loaded.into_iter();
    let mut prepared = Vec::with_capacity(specs.len());
    for spec in specs {
        let p = if let ArmSource::Backend(name) = &spec.source {
            // The drive as this backend reaches it.
            let topo = topology
                .as_ref()
                .context("backend= arms need this machine's topology")?;
            let mapped = targets
                .iter()
                .map(|t| compare_backend::arm_target(t, name, topo))
                .collect::<anyhow::Result<Vec<_>>>()
                .with_context(|| format!("arm {}", spec.text))?;
            let arm_ctx = ArmContext {
                targets: &session::targets::target_specs(Path::new("/"), &mapped),
                ..ctx
            };
            session::arms::prepare(spec, &arm_ctx)?
        } else if spec.is_live() {
            session::arms::prepare(spec, &ctx)?
        } else {
            loaded.next().context("a loaded arm per result= arm")?
        };
        let mut p = p;
        over_arm(&args.workload, spec, &mut p)?;
        if let Prepared::Live { warnings, .. } = &p {
            for w in warnings {
                eprintln!("numio: {w}");
            }
        }
        prepared.push(p);
    }
    Ok((prepared, opts))
}

/// Applies the workload flags over a `plan=` or `fio=` arm, as bench applies
/// them over a plan or job file (fio's rule: the command line wins), with a
/// line saying which values changed; a `result=` arm's runs are measured
/// already, so flags given with one are named as not applying to it, never
/// silently dropped. `policy=` and `backend=` arms are planned from the
/// flags.
fn over_arm(flags: &WorkloadArgs, spec: &ArmSpec, p: &mut Prepared) -> anyhow::Result<()> {
    let from = match &spec.source {
        ArmSource::Plan(path) => format!("the plan {}", path.display()),
        ArmSource::Fio(path) => format!("the job file {}", path.display()),
        ArmSource::Result { path, .. } => {
            let given = flags.given();
            if !given.is_empty() {
                eprintln!(
                    "numio: arm {}: its runs were measured already ({}); the command line's --{} does not change them",
                    spec.label,
                    path.display(),
                    given.join(", --")
                );
            }
            return Ok(());
        }
        _ => return Ok(()),
    };
    let Prepared::Live {
        placement,
        warnings,
    } = p
    else {
        return Ok(());
    };
    let added = flags
        .apply_over(placement, &from)
        .with_context(|| format!("arm {}", spec.text))?;
    for (path, note) in added {
        warnings.push(format!("arm {}: {path}: {note}", spec.label));
    }
    Ok(())
}

/// The targets of `policy=` arms (as `numio bench` chooses them) and their
/// labels; none when no arm is a `policy=` arm.
fn live_targets(
    args: &Args,
    specs: &[ArmSpec],
    topology: Option<&Topology>,
    workload: &Workload,
) -> anyhow::Result<(Vec<String>, std::collections::BTreeMap<String, String>)> {
    if specs
        .iter()
        .any(|s| matches!(s.source, ArmSource::Policy(_) | ArmSource::Backend(_)))
    {
        choose_targets(&args.targets, topology, workload)
    } else {
        Ok((args.targets.clone(), Default::default()))
    }
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
            format!("{err:#}").contains("local, spread or none"),
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
