//! `numio fabric`: an NVMe/TCP or NVMe/RDMA (`--transport rdma`) study
//! across hosts from one terminal.
//! `numio serve` starts on the target host over ssh (or a running target
//! is named), numio's tcp initiator runs on N initiator hosts at the same
//! instant (`numio bench --hosts` underneath), optionally for several N
//! (the scaling axis), and each point reports the aggregate IOPS and
//! bandwidth, merged latency percentiles, each side's CPU per I/O and the
//! target's CPU headroom. The target is stopped on exit, error and Ctrl-C
//! (and by its agent when the ssh session ends).

use std::sync::atomic::Ordering;

use anyhow::{bail, Context};
use fleet::study::{InitiatorCpu, Point, Stack, Study, FABRIC_SCHEMA};
use fleet::target::{TargetCpu, TargetSession};
use fleet::HostRun;
use session::interrupt;

use super::bench::bench_fleet::{run_fleet, SshArgs};
use fleet::report::FleetReport;

/// Flags of `numio fabric`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Example: numio fabric --target root@tgt --initiators root@ini1,root@ini2 --ns mem:4G --initiator-counts 1,2 -- --rw randread --bs 4k --iodepth 32 --runtime 30"
)]
pub struct Args {
    /// The target host, `[user@]host[:port]`: numio serve runs there.
    #[arg(long, value_name = "HOST", required_unless_present = "use_target")]
    pub target: Option<String>,
    /// A running NVMe/TCP target instead (numio serve, Linux nvmet, SPDK):
    /// `nvme-tcp://ADDR[:PORT]/SUBNQN[/NSID]`.
    #[arg(long, value_name = "URL", conflicts_with = "target")]
    pub use_target: Option<String>,
    /// The initiator hosts, `[user@]host[:port],...`.
    #[arg(long, value_name = "HOSTS")]
    pub initiators: String,
    /// The target's namespaces, as `numio serve --ns` (repeat) [default:
    /// mem:1G].
    #[arg(long = "ns", value_name = "NS")]
    pub namespaces: Vec<String>,
    /// Where the target listens and the initiators connect [default: the
    /// target host's address, port 4420].
    #[arg(long, value_name = "ADDR:PORT")]
    pub listen: Option<String>,
    /// CPUs of the target's reactors (`numio serve --cpus`), e.g. 0-7.
    #[arg(long, value_name = "LIST")]
    pub target_cpus: Option<String>,
    /// Busy-poll the target (`numio serve --poll`).
    #[arg(long)]
    pub target_poll: bool,
    /// The transport: tcp, or rdma (numio serve --transport rdma, and the
    /// initiators' numio rdma backend or the kernel's nvme-rdma).
    #[arg(long, value_name = "tcp|rdma", default_value = "tcp", value_parser = ["tcp", "rdma"])]
    pub transport: String,
    /// Sweep the target's cores: for each K (e.g. 1,2,4) numio serve
    /// restarts on the first K CPUs of --target-cpus.
    #[arg(
        long,
        value_name = "K,...",
        requires = "target_cpus",
        conflicts_with = "use_target"
    )]
    pub target_core_counts: Option<String>,
    /// Run every point N times, interleaved (every initiator count, then
    /// again), and report the median run and the spread of IOPS.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = super::report::parse_repeat)]
    pub repeat: usize,
    /// Keep the whole study (every run of every point with every host's
    /// result) in FILE as JSON; `numio report FILE` reprints it.
    #[arg(long, value_name = "FILE")]
    pub save: Option<std::path::PathBuf>,
    /// The initiators' NVMe/TCP host: numio's tcp backend (`numio`), or
    /// the Linux kernel's (`kernel`: each initiator host connects with
    /// `numio connect`, as `nvme connect` does, benches the block device
    /// the kernel makes and disconnects at the end, also if numio dies).
    #[arg(long, value_enum, default_value_t = StackArg::Numio)]
    pub stack: StackArg,
    /// Run with the first N initiators, for each N (e.g. 1,2,4): the
    /// scaling axis [default: all of them].
    #[arg(long, value_name = "N,...")]
    pub initiator_counts: Option<String>,
    #[command(flatten)]
    pub ssh: SshArgs,
    /// Print the study as JSON.
    #[arg(long)]
    pub json: bool,
    /// `numio bench` flags for the initiators (workload, runtime, --poll),
    /// after `--`.
    #[arg(last = true, value_name = "BENCH_FLAGS")]
    pub bench_args: Vec<String>,
}

/// Whose NVMe/TCP host the initiators run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum StackArg {
    /// numio bench's tcp backend.
    Numio,
    /// The Linux kernel's nvme-tcp, through its block device.
    Kernel,
}

/// Prints `study`: as JSON, or the table of each point's median run.
fn print_study(study: &Study, json: bool) -> anyhow::Result<()> {
    if json {
        println!("{}", serde_json::to_string_pretty(study)?);
    } else {
        print!("{}", report::fabric::render(study));
    }
    Ok(())
}

/// `numio report FILE` of a study saved by `numio fabric --save`: prints
/// it as fabric does; `None` when FILE is another kind of result file.
pub fn reprint(args: &super::report::Args) -> Option<anyhow::Result<i32>> {
    let study = Study::from_json(&std::fs::read_to_string(&args.file).ok()?)?;
    Some((|| {
        let study = study
            .with_context(|| format!("reading the numio fabric study {}", args.file.display()))?;
        if args.csv.is_some() || args.chart.is_some() || args.fio_json {
            bail!(
                "{} is a numio fabric study: it prints as text or --json (--csv, --chart and --fio-json are for bench and compare results)",
                args.file.display()
            );
        }
        print_study(&study, args.json)?;
        Ok(0)
    })())
}

/// A comma-separated list of counts, each in `1..=max`.
fn counts(flag: &str, list: &str, max: usize, what: &str) -> anyhow::Result<Vec<usize>> {
    list.split(',')
        .map(|n| match n.trim().parse::<usize>() {
            Ok(k) if (1..=max).contains(&k) => Ok(k),
            _ => bail!("{flag} {list}: {n:?} is not a count from 1 to {max} ({what})"),
        })
        .collect()
}

/// Where the target runs: the host and its `numio serve` arguments but
/// `--cpus`.
struct TargetSpec {
    host: fleet::Host,
    argv: Vec<String>,
}

impl TargetSpec {
    /// Starts numio serve there on `cpus` (all of the host's without).
    fn start(
        &self,
        cpus: Option<&str>,
        opts: &fleet::FleetOptions,
    ) -> anyhow::Result<TargetSession> {
        let mut argv = self.argv.clone();
        if let Some(c) = cpus {
            argv.extend(["--cpus".to_string(), c.to_string()]);
        }
        eprintln!(
            "numio fabric: starting numio serve on {} ({})",
            self.host,
            argv.join(" ")
        );
        let s = TargetSession::start(&self.host, &argv, opts)
            .map_err(|e| anyhow::anyhow!("target {}: {e}", self.host))?;
        for l in &s.lines {
            eprintln!("numio fabric: {}: {l}", s.host);
        }
        Ok(s)
    }
}

/// Runs `numio fabric`.
pub fn run(args: Args) -> anyhow::Result<i32> {
    interrupt::install(super::display::on_signal)?;
    let opts = args.ssh.options()?;
    let initiators = fleet::parse_host_list(&args.initiators)?;
    let counts_list = match &args.initiator_counts {
        None => vec![initiators.len()],
        Some(list) => counts(
            "--initiator-counts",
            list,
            initiators.len(),
            "the initiators given",
        )?,
    };
    for a in &args.bench_args {
        if ["--hosts", "--hosts-file", "--push", "--repeat", "--save"].contains(&a.as_str()) {
            bail!("{a} after `--` is a numio fabric matter, not the initiators': drop it there");
        }
    }
    // The target's core axis: the first K CPUs of --target-cpus.
    let core_steps: Vec<Option<(usize, String)>> = match &args.target_core_counts {
        None => vec![None],
        Some(list) => {
            let text = args.target_cpus.as_deref().unwrap_or_default();
            let cpus = planner::cpuset::parse_cpu_list(text)
                .map_err(|e| anyhow::anyhow!("--target-cpus {text}: {e}"))?;
            counts(
                "--target-core-counts",
                list,
                cpus.len(),
                "the CPUs of --target-cpus",
            )?
            .into_iter()
            .map(|k| {
                let first: Vec<String> = cpus[..k].iter().map(|c| c.to_string()).collect();
                Some((k, first.join(",")))
            })
            .collect()
        }
    };
    let (url, spec, target_name) = match (&args.use_target, &args.target) {
        (Some(url), _) => (url.clone(), None, url.clone()),
        (None, Some(t)) => {
            let host = fleet::parse_host(t)?;
            let listen = args.listen.clone().unwrap_or_else(|| {
                if host.addr.contains(':') {
                    format!("[{}]:4420", host.addr)
                } else {
                    format!("{}:4420", host.addr)
                }
            });
            let nqn = nvmf::config::DEFAULT_NQN;
            let mut argv = vec![
                "--listen".to_string(),
                listen.clone(),
                "--allow-any-host".into(),
                "--transport".into(),
                args.transport.clone(),
            ];
            argv.extend(["--discovery-port".into(), "0".into()]);
            let ns = if args.namespaces.is_empty() {
                vec!["mem:1G".to_string()]
            } else {
                args.namespaces.clone()
            };
            for n in ns {
                argv.extend(["--ns".to_string(), n]);
            }
            if args.target_poll {
                argv.push("--poll".into());
            }
            let label = host.label.clone();
            (
                format!("nvme-{}://{listen}/{nqn}/1", args.transport),
                Some(TargetSpec { host, argv }),
                label,
            )
        }
        (None, None) => {
            bail!("name the target: --target HOST (numio serve runs there) or --use-target URL")
        }
    };
    let mut study = Study {
        schema: FABRIC_SCHEMA.to_string(),
        command: super::report::command_line(),
        target: target_name,
        url: url.clone(),
        stack: match args.stack {
            StackArg::Numio => Stack::Numio,
            StackArg::Kernel => Stack::Kernel,
        },
        repeat: args.repeat,
        target_lines: Vec::new(),
        points: Vec::new(),
    };
    let mut target: Option<TargetSession> = None;
    let result = (|| -> anyhow::Result<()> {
        for step in &core_steps {
            if let Some(spec) = &spec {
                let cpus = match step {
                    Some((_, list)) => Some(list.as_str()),
                    None => args.target_cpus.as_deref(),
                };
                let s = spec.start(cpus, &opts)?;
                if study.target_lines.is_empty() {
                    study.target_lines = s.lines.clone();
                }
                target = Some(s);
            }
            for run in 1..=args.repeat {
                for &n in &counts_list {
                    if interrupt::flag().load(Ordering::Relaxed) {
                        return Ok(());
                    }
                    let point =
                        measure_point(&args, &url, &initiators[..n], target.as_mut(), &opts)?;
                    study.points.push(Point {
                        target_cores: step.as_ref().map(|(k, _)| *k),
                        initiators: n,
                        run,
                        initiator_cpu: InitiatorCpu::of(&point.0),
                        target_cpu: point.1,
                        fleet: point.0,
                    });
                }
            }
            if let Some(t) = target.take() {
                t.stop();
            }
        }
        Ok(())
    })();
    if let Some(t) = target.take() {
        t.stop();
    }
    result?;
    if let Some(path) = &args.save {
        let text = serde_json::to_string_pretty(&study)?;
        std::fs::write(path, text + "\n")
            .with_context(|| format!("writing the study to {}", path.display()))?;
        eprintln!(
            "numio fabric: saved the study to {} (numio report {0} reprints it)",
            path.display()
        );
    }
    print_study(&study, args.json)?;
    let partial = study.points.iter().any(|p| p.fleet.partial);
    if partial {
        eprintln!("numio fabric: partial: an initiator did not report (named above)");
    }
    Ok(interrupt::exit_code().unwrap_or(i32::from(partial)))
}

/// Runs one point: the initiators at once against `url`, with the
/// target's CPU from the common start instant (the barrier) to the last
/// result.
fn measure_point(
    args: &Args,
    url: &str,
    initiators: &[fleet::Host],
    mut target: Option<&mut TargetSession>,
    opts: &fleet::FleetOptions,
) -> anyhow::Result<(FleetReport, Option<TargetCpu>)> {
    let runs: Vec<HostRun> = initiators
        .iter()
        .map(|h| match args.stack {
            StackArg::Numio => HostRun {
                host: h.clone(),
                targets: vec![url.to_string()],
                connect: None,
            },
            StackArg::Kernel => HostRun {
                host: h.clone(),
                targets: Vec::new(),
                connect: Some(url.to_string()),
            },
        })
        .collect();
    eprintln!(
        "numio fabric: {} initiator(s) against {url}",
        initiators.len()
    );
    let mut before = None;
    let fleet = run_fleet(&runs, &args.bench_args, opts, &mut |e| {
        if let (fleet::FleetEvent::Starting { .. }, Some(t)) = (e, target.as_deref_mut()) {
            before = Some(t.cpu());
        }
    })?;
    let before = before.transpose()?;
    let after = target.map(|t| t.cpu()).transpose()?;
    if fleet.merged.is_none() {
        print!("{}", report::fleet::hosts(&fleet));
        bail!("no initiator ran: {}", fleet.failures());
    }
    Ok((fleet, before.zip(after).map(|(a, b)| a.until(&b))))
}
