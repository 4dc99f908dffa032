//! `numio bench`: flags → workload and targets → placement (planner) →
//! engine run (with live progress on a terminal) → human report or JSON.
//!
//! [`run_placement`] is the reusable step for `numio compare` and repeats.

use std::collections::BTreeMap;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use engine::{BackendKind, IoPoll, RunResult, UringOptions, UringSetup};
use planner::{JobPlacement, MemPolicy, Placement, PlanRequest, Policy, TargetPlacement, Workload};
use topology::Topology;

#[path = "bench_args.rs"]
pub mod bench_args;
#[path = "bench_interrupt.rs"]
pub mod bench_interrupt;
#[path = "bench_jobs.rs"]
pub mod bench_jobs;
#[path = "bench_report.rs"]
pub mod bench_report;

use bench_args::{parse_percentiles, WorkloadArgs};

/// Size of the embedded default target.
pub const DEFAULT_TARGET_BYTES: u64 = 1 << 30;
/// File name of the embedded default target under `$TMPDIR`.
pub const DEFAULT_TARGET_NAME: &str = "numio-default-target-1GiB.bin";

/// Flags of `numio bench`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Block devices or files, NVMe/TCP namespaces
    /// (nvme-tcp://HOST[:PORT]/SUBNQN[/NSID] with --backend tcp), or one fio
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
    #[command(flatten)]
    pub workload: WorkloadArgs,
    /// Engine backend: uring, sync, null (no I/O), nop (io_uring NOPs),
    /// passthru (NVMe commands via io_uring on /dev/ngXnY) or tcp (NVMe/TCP
    /// from user space to nvme-tcp://HOST[:PORT]/SUBNQN[/NSID]).
    #[arg(long, default_value = "uring")]
    pub backend: String,
    /// tcp backend: host NQN sent in Connect (default: the initiator's).
    #[arg(long, value_name = "NQN")]
    pub tcp_hostnqn: Option<String>,
    /// tcp backend: ask for header digests (CRC32C of every PDU header).
    #[arg(long)]
    pub tcp_hdgst: bool,
    /// tcp backend: ask for data digests (CRC32C of every PDU's data).
    #[arg(long)]
    pub tcp_ddgst: bool,
    /// Pin the jobs of every target to these CPUs, one job per CPU in order
    /// (e.g. 0-3,8).
    #[arg(long)]
    pub cpus: Option<String>,
    /// Explicit CPUs of one target, e.g. `nvme0n1=0-3,112-115` (repeatable;
    /// every target then needs one).
    #[arg(long, value_name = "TARGET=LIST")]
    pub cpus_for: Vec<String>,
    /// Placement policy: local (CPUs of each target's node; the default),
    /// spread or none. With a fio job file: auto gives numio's local
    /// placement to jobs without cpus_allowed / numa_cpu_nodes.
    #[arg(long)]
    pub numa: Option<String>,
    /// Latency percentiles to report (default 1,10,50,90,99,99.9,99.99).
    #[arg(long)]
    pub percentiles: Option<String>,
    /// Print the result as JSON (schema in the README) instead of a report.
    #[arg(long)]
    pub json: bool,
    /// Allow writes to block devices holding partitions, filesystems or
    /// mounts, and to NVMe/TCP namespaces (which numio cannot look into).
    #[arg(long)]
    pub force_write: bool,
    /// Write a checkable pattern and verify it on every read.
    #[arg(long)]
    pub verify: bool,
    /// io_uring: kernel submission polling thread, with this idle time in ms.
    #[arg(long, num_args = 0..=1, default_missing_value = "1000")]
    pub sqpoll: Option<u32>,
    /// io_uring IOPOLL (completion polling): auto (where the device has poll
    /// queues and O_DIRECT; the default), on (an error where it has none),
    /// off. fio job files: a job's hipri decides for its target; jobs
    /// without it follow --iopoll, off when not given (as in fio).
    #[arg(long, value_name = "auto|on|off")]
    pub iopoll: Option<String>,
    /// io_uring task-run set-up: auto (in a time-based uring run, a 400 ms
    /// trial of DEFER_TASKRUN against COOP_TASKRUN on each job's own
    /// workload keeps the faster; otherwise DEFER_TASKRUN, else
    /// COOP_TASKRUN, else plain), defer, coop or plain.
    #[arg(long, default_value = "auto")]
    pub uring_setup: String,
    /// io_uring: do not register the I/O buffers.
    #[arg(long)]
    pub no_fixed_buffers: bool,
    /// io_uring: do not register the target files.
    #[arg(long)]
    pub no_registered_files: bool,
    /// Completions to wait for per reap (default: iodepth/4, 1..=32).
    #[arg(long)]
    pub batch_complete: Option<usize>,
    /// No live progress line even on a terminal.
    #[arg(long)]
    pub no_progress: bool,
    /// `--repeat N`, `--save`, `--csv`, `--chart` (owned by cmd/report.rs).
    #[command(flatten)]
    pub repeat: super::report::RepeatArgs,
}

/// How [`run_placement`] runs: the engine's options and the progress display.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RunOptions {
    /// Engine options (backend, percentiles, io_uring set-up, safety).
    pub engine: engine::RunOptions,
    /// Show a live progress line on stderr.
    pub progress: bool,
}

/// Runs `numio bench`.
pub fn run(args: Args) -> anyhow::Result<i32> {
    bench_interrupt::install()?;
    let src = bench_jobs::source(&args.targets, args.plan.as_deref(), &args.fio_args)?;
    let mut opts = run_options(&args)?;
    let topo = Topology::discover(Path::new("/"));
    let placement = if src == bench_jobs::JobSource::Targets {
        let workload = args.workload.workload()?;
        let (targets, labels) = choose_targets(&args.targets, topo.as_ref().ok(), &workload)?;
        opts.engine.labels = labels;
        place(topo.as_ref(), &targets, &workload, &args)?
    } else {
        let topo = topo
            .as_ref()
            .map_err(|e| anyhow::anyhow!("{e}"))
            .context("job files and plans are placed on this machine's topology")?;
        let jf = bench_jobs::JobFileOptions {
            ignore_unknown: args.ignore_unknown,
            sections: args.sections.clone(),
            numa_auto: match args.numa.as_deref() {
                None | Some("none") => false,
                Some("auto" | "local") => true,
                Some(other) => bail!("--numa={other} with a job file: use auto or none"),
            },
        };
        // A job file means what it means to fio: no IOPOLL without hipri.
        // Each job's fixedbufs / registerfiles / sqthread_poll / hipri
        // applies to its own target (the engine sets up one ring per job).
        if args.iopoll.is_none() {
            opts.engine.iopoll = IoPoll::Off;
        }
        bench_jobs::load(&src, topo, &jf)?
    };
    let groups = bench_jobs::groups(&placement);
    if args.repeat.wanted() {
        if groups.len() > 1 {
            bail!("--repeat runs one group: the job file has {} stonewall groups (run them as separate job files)", groups.len());
        }
        let policy = placement.policy.clone();
        let (mut opts, mut seq, runs) = (opts.clone(), 0, args.repeat.repeat);
        let code = super::report::bench_repeat(&args.repeat, args.json, &policy, || {
            seq += 1;
            let result = run_placement(&placement, &opts)?;
            if seq < runs {
                if let Some(mode) = settle_taskrun(&mut opts, &result) {
                    eprintln!(
                        "numio: run {seq}'s task-run trial kept {mode}; runs {}-{runs} use it \
                         without a trial (--uring-setup defer or coop fixes the mode)",
                        seq + 1
                    );
                }
            }
            Ok(result)
        })?;
        return Ok(bench_interrupt::exit_code().unwrap_or(code));
    }
    let mut results = Vec::with_capacity(groups.len());
    for (i, group) in groups.iter().enumerate() {
        if groups.len() > 1 && !args.json {
            println!("group {} of {} (stonewall)", i + 1, groups.len());
        }
        let result = run_placement(group, &opts)?;
        if !args.json {
            print!("{}", bench_report::render(&result, group));
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
    if args.json {
        match results.as_slice() {
            [one] => println!("{}", serde_json::to_string_pretty(one)?),
            many => println!("{}", serde_json::to_string_pretty(many)?),
        }
    }
    let code = i32::from(results.iter().any(|r| !r.errors.is_empty()));
    Ok(bench_interrupt::exit_code().unwrap_or(code))
}

/// Settles an `auto` io_uring set-up for the runs after `result`: where
/// every job's task-run trial kept the same mode, later runs of the same
/// plan use it without a trial, so repeats and A/B arms neither flip modes
/// from run to run nor pay the trial again. Returns the mode's flag name
/// when it settled (nothing changes where a job had no trial or the jobs
/// disagree).
pub fn settle_taskrun(opts: &mut RunOptions, result: &RunResult) -> Option<&'static str> {
    if opts.engine.uring.setup != UringSetup::Auto {
        return None;
    }
    let mut kept = result
        .targets
        .iter()
        .flat_map(|t| &t.workers)
        .map(|w| w.taskrun_trial.as_ref().map(|t| t.chosen));
    let first = kept.next()??;
    if !kept.all(|c| c == Some(first)) {
        return None;
    }
    opts.engine.uring.setup = first;
    first.taskrun_flag()
}

/// Runs a placement on the engine, with a live progress line on stderr when
/// asked. Reusable by `numio compare` and repeats. A first SIGINT / SIGTERM
/// (after [`bench_interrupt::install`]) stops it early: the result covers the
/// time measured and has `interrupted` set.
pub fn run_placement(placement: &Placement, opts: &RunOptions) -> anyhow::Result<RunResult> {
    let mut on_progress = |s: &engine::ProgressSnapshot| {
        if opts.progress {
            let text = bench_report::progress_line(s);
            let mut err = std::io::stderr().lock();
            let _ = write!(err, "\r\x1b[2K{text}");
            let _ = err.flush();
        }
    };
    let result = engine::run_until(
        placement,
        &opts.engine,
        bench_interrupt::flag(),
        &mut on_progress,
    );
    if opts.progress {
        eprint!("\r\x1b[2K");
    }
    Ok(result?)
}

fn run_options(args: &Args) -> anyhow::Result<RunOptions> {
    let backend: BackendKind = args.backend.parse()?;
    let iopoll = match args.iopoll.as_deref().unwrap_or("auto") {
        "auto" => IoPoll::Auto,
        "on" => IoPoll::On,
        "off" => IoPoll::Off,
        other => bail!("--iopoll={other}: use auto, on or off"),
    };
    let setup = match args.uring_setup.as_str() {
        "auto" => UringSetup::Auto,
        "defer" => UringSetup::DeferTaskrun,
        "coop" => UringSetup::CoopTaskrun,
        "plain" => UringSetup::Plain,
        other => bail!("--uring-setup={other}: use auto, defer, coop or plain"),
    };
    let percentiles = match &args.percentiles {
        Some(p) => parse_percentiles(p)?,
        None => engine::DEFAULT_PERCENTILES.to_vec(),
    };
    Ok(RunOptions {
        engine: engine::RunOptions {
            backend,
            uring: UringOptions {
                sqpoll_idle_ms: args.sqpoll,
                iopoll: false,
                fixed_buffers: !args.no_fixed_buffers,
                registered_files: !args.no_registered_files,
                setup,
            },
            iopoll,
            percentiles,
            verify: args.verify,
            force_write: args.force_write,
            batch_complete_min: args.batch_complete,
            labels: BTreeMap::new(),
            tcp: engine::backend::TcpOptions {
                hostnqn: args.tcp_hostnqn.clone(),
                header_digest: args.tcp_hdgst,
                data_digest: args.tcp_ddgst,
            },
        },
        progress: !args.json && !args.no_progress && std::io::stderr().is_terminal(),
    })
}

/// The targets given, or the defaults: every NVMe namespace topology found
/// (read-only), else the embedded default file.
pub fn choose_targets(
    given: &[String],
    topo: Option<&Topology>,
    w: &Workload,
) -> anyhow::Result<(Vec<String>, BTreeMap<String, String>)> {
    if !given.is_empty() {
        return Ok((given.to_vec(), BTreeMap::new()));
    }
    if w.rw.writes() {
        bail!(
            "--rw={}: write workloads need explicit targets (numio bench TARGET --rw ...)",
            w.rw.fio_name()
        );
    }
    let nvme: Vec<String> = topo
        .map(|t| {
            t.block_devices()
                .iter()
                .map(|d| format!("/dev/{d}"))
                .collect()
        })
        .unwrap_or_default();
    if !nvme.is_empty() {
        return Ok((nvme, BTreeMap::new()));
    }
    let path = default_target()?;
    let label = format!(
        "default target: 1 GiB file under {} (no NVMe namespace found; name a device or file to bench it)",
        path.parent().map(|p| p.display().to_string()).unwrap_or_default()
    );
    let path = path.to_string_lossy().into_owned();
    Ok((vec![path.clone()], BTreeMap::from([(path, label)])))
}

/// `$TMPDIR/numio-default-target-1GiB.bin`, created and filled with
/// incompressible data the first time.
fn default_target() -> anyhow::Result<PathBuf> {
    let dir = std::env::var_os("TMPDIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/tmp"));
    let path = dir.join(DEFAULT_TARGET_NAME);
    if std::fs::metadata(&path).map(|m| m.len()).ok() == Some(DEFAULT_TARGET_BYTES) {
        return Ok(path);
    }
    eprintln!(
        "numio: creating the default target {} (1 GiB, once)",
        path.display()
    );
    let tmp = dir.join(format!("{DEFAULT_TARGET_NAME}.{}.part", std::process::id()));
    let fill = || -> std::io::Result<()> {
        let mut f = std::fs::File::create(&tmp)?;
        let mut rng = engine::gen::Rng::new(0x006e_756d_696f);
        let mut chunk = vec![0u8; 1 << 20];
        for _ in 0..DEFAULT_TARGET_BYTES >> 20 {
            for w in chunk.chunks_exact_mut(8) {
                w.copy_from_slice(&rng.next_u64().to_le_bytes());
            }
            f.write_all(&chunk)?;
        }
        f.sync_all()?;
        std::fs::rename(&tmp, &path)
    };
    if let Err(e) = fill() {
        let _ = std::fs::remove_file(&tmp);
        return Err(e).with_context(|| {
            format!("cannot create the default target in {} (set TMPDIR to a writable directory with 1 GiB free)", dir.display())
        });
    }
    Ok(path)
}

/// Places the jobs with the planner (local by default; `--cpus` and `--numa`
/// override). Without a topology, jobs run unpinned and say so.
fn place(
    topo: Result<&Topology, &topology::TopologyError>,
    targets: &[String],
    w: &Workload,
    args: &Args,
) -> anyhow::Result<Placement> {
    if !args.cpus_for.is_empty() && (args.cpus.is_some() || args.numa.is_some()) {
        bail!("--cpus-for places targets explicitly: drop --cpus and --numa");
    }
    let policy = match (&args.cpus, args.numa.as_deref().unwrap_or("local")) {
        _ if !args.cpus_for.is_empty() => {
            Policy::Explicit(super::plan::parse_cpus_for(&args.cpus_for)?)
        }
        (Some(list), _) => {
            let cpus = planner::cpuset::parse_cpu_list(list)
                .map_err(|e| anyhow::anyhow!("--cpus={list}: {e}"))?;
            Policy::Explicit(targets.iter().map(|t| (t.clone(), cpus.clone())).collect())
        }
        (None, "local" | "auto") => Policy::Local,
        (None, "spread") => Policy::Spread,
        (None, "none") => Policy::None,
        (None, other) => bail!("--numa={other}: use local, spread or none (auto: job files)"),
    };
    let topo = match topo {
        Ok(t) => t,
        Err(e) => {
            if !matches!(policy, Policy::None) {
                eprintln!("numio: warning: topology discovery failed ({e}); jobs run unpinned");
            }
            return Ok(unpinned(targets, w));
        }
    };
    let request = PlanRequest {
        targets: super::plan::target_specs(Path::new("/"), targets),
        workload: w.clone(),
        policy,
    };
    planner::plan(topo, &request).context("placing the jobs")
}

fn unpinned(targets: &[String], w: &Workload) -> Placement {
    Placement {
        policy: "none".into(),
        targets: targets
            .iter()
            .map(|p| TargetPlacement {
                path: p.clone(),
                workload: w.clone(),
                jobs: vec![
                    JobPlacement {
                        cpus: vec![],
                        mem: MemPolicy::Default
                    };
                    w.numjobs as usize
                ],
                ..TargetPlacement::default()
            })
            .collect(),
        warnings: vec!["topology unknown: jobs are not pinned".into()],
    }
}
