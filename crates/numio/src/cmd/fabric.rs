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
use fleet::target::{TargetCpu, TargetSession};
use fleet::HostRun;
use serde::{Deserialize, Serialize};
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
    #[arg(long, value_enum, default_value_t = Stack::Numio)]
    pub stack: Stack,
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Stack {
    /// numio bench's tcp backend.
    Numio,
    /// The Linux kernel's nvme-tcp, through its block device.
    Kernel,
}

/// The initiator hosts' machines over a point: their busy CPU (workers,
/// kernel threads, softirqs, whatever ran) per I/O, summed over hosts, and
/// the lowest host's unused share.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
struct InitiatorCpu {
    machine_cpu_ns_per_io: Option<f64>,
    min_headroom_pct: Option<f64>,
}

impl InitiatorCpu {
    fn of(fleet: &FleetReport) -> InitiatorCpu {
        let mut busy_per_s = None::<f64>;
        let mut iops = 0.0;
        let mut head = None::<f64>;
        for r in fleet.host_results() {
            let p = r.per_io();
            if let Some(ns) = p.machine_cpu_ns {
                *busy_per_s.get_or_insert(0.0) += ns * r.total.iops;
            }
            iops += r.total.iops;
            if let Some(h) = p.cpu_headroom_pct {
                head = Some(head.map_or(h, |x| x.min(h)));
            }
        }
        InitiatorCpu {
            machine_cpu_ns_per_io: busy_per_s.filter(|_| iops > 0.0).map(|b| b / iops),
            min_headroom_pct: head,
        }
    }
}

/// One run of one point of the study.
#[derive(Debug, Serialize, Deserialize)]
struct Point {
    /// The target's core count (`--target-core-counts`), if swept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    target_cores: Option<usize>,
    initiators: usize,
    /// Which run of this point (1 to `--repeat`).
    #[serde(default = "one")]
    run: usize,
    initiator_cpu: InitiatorCpu,
    target_cpu: Option<TargetCpu>,
    fleet: FleetReport,
}

fn one() -> usize {
    1
}

/// The schema name of a study (`--json`, `--save`).
pub const SCHEMA: &str = "numio-fabric";

/// The whole study, as `--json` prints it and `--save` keeps it.
#[derive(Debug, Serialize, Deserialize)]
struct Study {
    schema: String,
    #[serde(default)]
    command: String,
    target: String,
    url: String,
    stack: Stack,
    #[serde(default = "one")]
    repeat: usize,
    target_lines: Vec<String>,
    points: Vec<Point>,
}

impl Study {
    /// Prints the study: as JSON, or a table of each point's median run.
    fn print(&self, json: bool) -> anyhow::Result<()> {
        if json {
            println!("{}", serde_json::to_string_pretty(self)?);
        } else {
            print_study(self);
        }
        Ok(())
    }

    /// Reads a study saved by `numio fabric --save`; `None` when `text` is
    /// another kind of file.
    fn from_json(text: &str) -> Option<anyhow::Result<Study>> {
        #[derive(Deserialize)]
        struct Header {
            schema: Option<String>,
        }
        let h: Header = serde_json::from_str(text).ok()?;
        (h.schema.as_deref() == Some(SCHEMA))
            .then(|| serde_json::from_str(text).context("reading a numio fabric study"))
    }
}

/// `numio report FILE` of a study saved by `numio fabric --save`: prints
/// it as fabric does; `None` when FILE is another kind of result file.
pub fn reprint(args: &super::report::Args) -> Option<anyhow::Result<i32>> {
    let study = Study::from_json(&std::fs::read_to_string(&args.file).ok()?)?;
    Some((|| {
        let study = study.with_context(|| format!("reading {}", args.file.display()))?;
        if args.csv.is_some() || args.chart.is_some() || args.fio_json {
            bail!(
                "{} is a numio fabric study: it prints as text or --json (--csv, --chart and --fio-json are for bench and compare results)",
                args.file.display()
            );
        }
        study.print(args.json)?;
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
        schema: SCHEMA.to_string(),
        command: super::report::command_line(),
        target: target_name,
        url: url.clone(),
        stack: args.stack,
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
    study.print(args.json)?;
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
            Stack::Numio => HostRun {
                host: h.clone(),
                targets: vec![url.to_string()],
                connect: None,
            },
            Stack::Kernel => HostRun {
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

/// The runs of each point (target cores, initiators), in study order.
fn point_runs(s: &Study) -> Vec<Vec<&Point>> {
    let mut groups: Vec<Vec<&Point>> = Vec::new();
    for p in s.points.iter().filter(|p| p.fleet.merged.is_some()) {
        match groups
            .iter_mut()
            .find(|g| (g[0].target_cores, g[0].initiators) == (p.target_cores, p.initiators))
        {
            Some(g) => g.push(p),
            None => groups.push(vec![p]),
        }
    }
    groups
}

fn iops(p: &Point) -> f64 {
    p.fleet.merged.as_ref().map_or(0.0, |m| m.total.iops)
}

fn print_study(s: &Study) {
    println!(
        "target {} ({}); initiators: {}",
        s.target,
        s.url,
        match (
            s.stack,
            planner::TargetAddr::parse(&s.url).fabric() == Some(planner::Fabric::Rdma),
        ) {
            (Stack::Numio, false) => "numio's tcp backend",
            (Stack::Numio, true) => "numio's rdma backend",
            (Stack::Kernel, false) => "the Linux kernel's nvme-tcp (block device)",
            (Stack::Kernel, true) => "the Linux kernel's nvme-rdma (block device)",
        }
    );
    let cores_axis = s.points.iter().any(|p| p.target_cores.is_some());
    let repeated = s.repeat > 1;
    let mut head = String::new();
    if cores_axis {
        head.push_str(&format!("{:>9} ", "tgt CPUs"));
    }
    head.push_str(&format!(
        "{:>10} {:>10} {:>11} {:>10} {:>10} {:>15} {:>13} {:>15} {:>14} {:>10} {:>15}",
        "initiators",
        "IOPS",
        "bandwidth",
        "p50",
        "p99",
        "workers µs/IO",
        "init µs/IO",
        "init headroom %",
        "tgt µs/IO",
        "tgt cores",
        "tgt headroom %"
    ));
    if repeated {
        head.push_str(&format!(" {:>5} {:>13}", "runs", "IOPS spread %"));
    }
    println!("{head}");
    let opt = |v: Option<f64>, prec: usize| v.map_or("-".to_string(), |v| format!("{v:.prec$}"));
    for runs in point_runs(s) {
        // The median run by IOPS (the lower one of an even count).
        let mut sorted = runs.clone();
        sorted.sort_by(|a, b| iops(a).total_cmp(&iops(b)));
        let p = sorted[(sorted.len() - 1) / 2];
        let Some(m) = &p.fleet.merged else { continue };
        let ops = m.total.ops.max(1) as f64;
        let lat = &m.total.latency.clat;
        let workers = (m.cpu_usage.user_ns + m.cpu_usage.system_ns) as f64 / 1e3 / ops;
        let t = p.target_cpu;
        let mut line = String::new();
        if cores_axis {
            line.push_str(&format!(
                "{:>9} ",
                p.target_cores.map_or("-".to_string(), |k| k.to_string())
            ));
        }
        line.push_str(&format!(
            "{:>10} {:>10} {:>11} {:>10} {:>10} {:>15.2} {:>13} {:>15} {:>14} {:>10} {:>15}",
            p.initiators,
            report::format::si(m.total.iops),
            report::format::bandwidth(m.total.bandwidth_bytes_per_s),
            report::format::latency(lat.at(50.0).unwrap_or(0) as f64),
            report::format::latency(lat.at(99.0).unwrap_or(0) as f64),
            workers,
            opt(p.initiator_cpu.machine_cpu_ns_per_io.map(|n| n / 1e3), 2),
            opt(p.initiator_cpu.min_headroom_pct, 1),
            opt(t.map(|c| c.process_cpu_s * 1e6 / ops), 2),
            opt(t.map(|c| c.process_cores), 2),
            opt(t.map(|c| c.headroom_pct), 1),
        ));
        if repeated {
            let (lo, hi) = (iops(sorted[0]), iops(sorted[sorted.len() - 1]));
            let spread = (m.total.iops > 0.0).then(|| (hi - lo) * 100.0 / m.total.iops);
            line.push_str(&format!(" {:>5} {:>13}", runs.len(), opt(spread, 1)));
        }
        if runs.iter().any(|r| r.fleet.partial) {
            line.push_str("  PARTIAL");
        }
        println!("{line}");
    }
    let mut notes = vec![
        "latency: percentiles of the initiators' merged histograms",
        "workers: the initiators' bench threads' CPU",
        "init: the initiator machines' busy CPU (kernel threads and softirqs too) summed over hosts, and the lowest host's unused share",
        "tgt: the target's numio serve process, and its machine's unused share",
    ];
    if repeated {
        notes.push(
            "each row the median run by IOPS; spread: (max - min) / median IOPS over the runs",
        );
    }
    println!("({})", notes.join("; "));
}
