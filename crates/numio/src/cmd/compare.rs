//! `numio compare`: runs two arms (placement policies, saved plans, fio job
//! files) interleaved A B A B …, or takes them from saved result files, and
//! says whether they differ (the statistics live in the `report` crate).

use std::io::IsTerminal;
use std::path::Path;

use anyhow::Context;
use planner::{Placement, PlanRequest, Policy, TargetSpec, Workload};
use report::arm::{distinct_labels, interleave, ArmSource, ArmSpec};
use report::{Arm, ResultSet, SetKind};
use topology::Topology;

use super::bench::bench_args::{parse_percentiles, WorkloadArgs};
use super::bench::bench_interrupt;
use super::bench::{choose_targets, run_placement, RunOptions};
use super::report::{command_line, finish, now_unix_s};

/// Flags of `numio compare`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Arm A: policy=local|spread|none, plan=FILE (numio plan --save),
    /// fio=FILE (job file) or result=FILE[,arm=LABEL]; append ,label=NAME to rename.
    #[arg(long = "a", value_name = "ARM")]
    pub a: String,
    /// Arm B, as --a.
    #[arg(long = "b", value_name = "ARM")]
    pub b: String,
    /// Runs of each live arm, interleaved A B A B … (5 or more for Welch's t-test).
    #[arg(long, default_value_t = 5, value_name = "N")]
    pub repeat: usize,
    /// Targets of policy= arms. None: every NVMe namespace, or else the default
    /// 1 GiB file under $TMPDIR (as `numio bench`).
    pub targets: Vec<String>,
    #[command(flatten)]
    pub workload: WorkloadArgs,
    /// Engine backend: uring, sync, null (no I/O) or nop (io_uring NOPs).
    #[arg(long, default_value = "uring")]
    pub backend: String,
    /// Latency percentiles to record (default 1,10,50,90,99,99.9,99.99).
    #[arg(long)]
    pub percentiles: Option<String>,
    /// fio=FILE arms: place jobs without cpus_allowed/numa_cpu_nodes by the local policy.
    #[arg(long)]
    pub fio_numa_auto: bool,
    /// `--save` (every run of both arms), `--csv`, `--chart`.
    #[command(flatten)]
    pub export: super::report::ExportArgs,
    /// Print the result set and its analysis as JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

/// An arm ready to run or already measured.
enum Prepared {
    Live(Box<Placement>),
    Loaded(Arm),
}

/// Runs `numio compare`.
pub fn run(args: Args) -> anyhow::Result<i32> {
    anyhow::ensure!(
        (1..=1000).contains(&args.repeat),
        "--repeat {}: give 1 to 1000 runs per arm",
        args.repeat
    );
    bench_interrupt::install()?;
    let mut specs = [parse_arm("--a", &args.a)?, parse_arm("--b", &args.b)?];
    let context = LiveContext::new(&args, &specs)?;
    let prepared = [prepare(&specs[0], &context)?, prepare(&specs[1], &context)?];
    for (spec, p) in specs.iter_mut().zip(&prepared) {
        if let (Prepared::Loaded(arm), false) = (p, spec.label_given) {
            spec.label = arm.label.clone();
        }
    }
    let [sa, sb] = &mut specs;
    distinct_labels(&mut sa.label, &mut sb.label);
    let arms = run_arms(&specs, prepared, args.repeat, &context)?;
    if let Some(code) = bench_interrupt::exit_code() {
        if arms.iter().any(|a| a.runs.is_empty()) {
            eprintln!(
                "numio: interrupted before both arms had a completed run: nothing to compare"
            );
            return Ok(code);
        }
    }
    let set = ResultSet::new(SetKind::Compare, command_line(), now_unix_s(), arms);
    finish(
        &set,
        args.export.save.as_deref(),
        args.export.csv.as_deref(),
        args.export.chart.as_deref(),
        args.json,
    )?;
    Ok(bench_interrupt::exit_code().unwrap_or(0))
}

/// Ends the interleaved runs early (a first SIGINT / SIGTERM).
#[derive(Debug)]
struct Interrupted;

impl std::fmt::Display for Interrupted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("interrupted")
    }
}

impl std::error::Error for Interrupted {}

fn parse_arm(flag: &str, text: &str) -> anyhow::Result<ArmSpec> {
    ArmSpec::parse(text).with_context(|| format!("{flag} {text}"))
}

/// What live arms share: workload, engine options, topology, targets.
struct LiveContext {
    workload: Workload,
    opts: RunOptions,
    topology: Option<Topology>,
    targets: Vec<String>,
    fio_numa_auto: bool,
}

impl LiveContext {
    fn new(args: &Args, specs: &[ArmSpec; 2]) -> anyhow::Result<Self> {
        let workload = args.workload.workload()?;
        let percentiles = match &args.percentiles {
            Some(p) => parse_percentiles(p)?,
            None => engine::DEFAULT_PERCENTILES.to_vec(),
        };
        let mut opts = RunOptions {
            engine: engine::RunOptions {
                backend: args.backend.parse()?,
                percentiles,
                ..engine::RunOptions::default()
            },
            progress: !args.json && std::io::stderr().is_terminal(),
        };
        let topology = Topology::discover(Path::new("/"));
        let needs_targets = specs
            .iter()
            .any(|s| matches!(s.source, ArmSource::Policy(_)));
        let (targets, labels) = if needs_targets {
            choose_targets(&args.targets, topology.as_ref().ok(), &workload)?
        } else {
            (args.targets.clone(), Default::default())
        };
        opts.engine.labels = labels;
        Ok(LiveContext {
            workload,
            opts,
            topology: topology.ok(),
            targets,
            fio_numa_auto: args.fio_numa_auto,
        })
    }

    fn topology(&self, what: &str) -> anyhow::Result<&Topology> {
        self.topology.as_ref().with_context(|| {
            format!("{what} needs the machine's topology, and discovery under / failed; run `numio topo` to see why")
        })
    }
}

fn prepare(spec: &ArmSpec, ctx: &LiveContext) -> anyhow::Result<Prepared> {
    let placement = match &spec.source {
        ArmSource::Policy(name) => {
            let policy = match name.as_str() {
                "local" => Policy::Local,
                "spread" => Policy::Spread,
                _ => Policy::None,
            };
            let request = PlanRequest {
                targets: ctx.targets.iter().map(TargetSpec::new).collect(),
                workload: ctx.workload.clone(),
                policy,
            };
            let topo = ctx.topology(&spec.text)?;
            planner::plan(topo, &request).with_context(|| format!("planning arm {}", spec.text))?
        }
        ArmSource::Plan(path) => Placement::load(path)
            .with_context(|| format!("arm {}: reading the plan {}", spec.text, path.display()))?,
        ArmSource::Fio(path) => {
            let jobs = planner::fio::load_job_file(path, &planner::fio::ParseOptions::default())
                .with_context(|| {
                    format!("arm {}: reading the job file {}", spec.text, path.display())
                })?;
            for w in &jobs.warnings {
                eprintln!("numio: {}: {w}", path.display());
            }
            let topo = ctx.topology(&spec.text)?;
            jobs.to_placement(topo, ctx.fio_numa_auto)
                .with_context(|| format!("arm {}: placing {}", spec.text, path.display()))?
        }
        ArmSource::Result { path, arm } => {
            let loaded = report::file::load_arm(path, arm.as_deref())
                .with_context(|| format!("arm {}", spec.text))?;
            return Ok(Prepared::Loaded(loaded));
        }
    };
    for w in &placement.warnings {
        eprintln!("numio: arm {}: {w}", spec.label);
    }
    Ok(Prepared::Live(Box::new(placement)))
}

/// Runs the live arms interleaved and assembles both arms in A, B order.
fn run_arms(
    specs: &[ArmSpec; 2],
    prepared: [Prepared; 2],
    repeat: usize,
    ctx: &LiveContext,
) -> anyhow::Result<Vec<Arm>> {
    let live: Vec<usize> = (0..2)
        .filter(|&i| matches!(prepared[i], Prepared::Live(_)))
        .collect();
    let total = live.len() * repeat;
    // Completed runs, kept apart so that an interrupt can end the loop
    // (interleave's error path) without losing them.
    let mut done = Vec::with_capacity(total);
    // An arm's first run's task-run trial settles the io_uring set-up for
    // its later runs. Arms on the same targets share one settlement (the
    // first run's), so they differ only in what they name, not in a mode
    // two trials happened to pick apart.
    let targets = |p: &Prepared| match p {
        Prepared::Live(pl) => Some(
            pl.targets
                .iter()
                .map(|t| t.path.clone())
                .collect::<Vec<_>>(),
        ),
        Prepared::Loaded(_) => None,
    };
    let shared = targets(&prepared[0]) == targets(&prepared[1]);
    let mut opts = [ctx.opts.clone(), ctx.opts.clone()];
    let outcome = interleave(&live, repeat, |arm, round, seq| {
        let Prepared::Live(placement) = &prepared[arm] else {
            unreachable!("only live arms are interleaved")
        };
        if bench_interrupt::interrupted() {
            return Err(anyhow::Error::new(Interrupted));
        }
        eprintln!(
            "numio: run {seq} of {total}: {} (round {} of {repeat})",
            specs[arm].label,
            round + 1
        );
        let slot = if shared { 0 } else { arm };
        let result = run_placement(placement, &opts[slot])
            .with_context(|| format!("run {seq} ({})", specs[arm].label))?;
        if seq < total {
            if let Some(mode) = super::bench::settle_taskrun(&mut opts[slot], &result) {
                let whose = if shared {
                    "both arms".to_string()
                } else {
                    format!("arm {}", specs[arm].label)
                };
                eprintln!(
                    "numio: run {seq}'s task-run trial kept {mode}; the later runs of {whose} \
                     use it without a trial (--uring-setup defer or coop fixes the mode)"
                );
            }
        }
        if result.interrupted {
            eprintln!(
                "numio: interrupted during run {seq} of {total}: it is left out; comparing the {} completed runs",
                done.len()
            );
            return Err(anyhow::Error::new(Interrupted));
        }
        let record = report::from_engine::record(seq, &result);
        done.push((arm, record.clone()));
        Ok::<_, anyhow::Error>(record)
    });
    let runs = match outcome {
        Ok(runs) => runs,
        Err(e) if e.is::<Interrupted>() => done,
        Err(e) => return Err(e),
    };
    let mut arms: Vec<Arm> = Vec::with_capacity(2);
    for (i, p) in prepared.into_iter().enumerate() {
        let arm = match p {
            Prepared::Loaded(mut arm) => {
                arm.label = specs[i].label.clone();
                arm
            }
            Prepared::Live(_) => Arm {
                label: specs[i].label.clone(),
                spec: specs[i].text.clone(),
                runs: runs
                    .iter()
                    .filter(|(a, _)| *a == i)
                    .map(|(_, r)| r.clone())
                    .collect(),
            },
        };
        arms.push(arm);
    }
    renumber_collisions(&mut arms);
    Ok(arms)
}

/// Arms from different files may both number their runs from 1: shift the
/// second arm's `seq` past the first's so execution order stays unique.
fn renumber_collisions(arms: &mut [Arm]) {
    let [a, b] = arms else { return };
    let collide = b
        .runs
        .iter()
        .any(|rb| a.runs.iter().any(|ra| ra.seq == rb.seq));
    if collide {
        let offset = a.runs.iter().map(|r| r.seq).max().unwrap_or(0);
        for r in &mut b.runs {
            r.seq += offset;
        }
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
    fn renumbers_only_colliding_arms() {
        let arm = |seqs: &[usize]| Arm {
            label: "x".into(),
            spec: "result=x".into(),
            runs: seqs.iter().map(|&seq| record(seq)).collect(),
        };
        let mut arms = vec![arm(&[1, 3]), arm(&[2, 4])];
        renumber_collisions(&mut arms);
        assert_eq!(arms[1].runs[0].seq, 2);
        let mut arms = vec![arm(&[1, 2]), arm(&[1, 2])];
        renumber_collisions(&mut arms);
        assert_eq!(
            arms[1].runs.iter().map(|r| r.seq).collect::<Vec<_>>(),
            [3, 4]
        );
    }

    fn record(seq: usize) -> report::RunRecord {
        let total = report::TargetMetrics {
            target: "total".into(),
            iops: 1.0,
            bandwidth_bytes_per_s: 4096.0,
            lat_mean_ns: 1.0,
            lat_p99_ns: 1.0,
            percentiles: vec![],
        };
        report::RunRecord {
            seq,
            started_unix_s: 0,
            targets: vec![],
            total,
            raw: None,
        }
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
