//! `numio fabric`: an NVMe/TCP study across hosts from one terminal.
//! `numio serve` starts on the target host over ssh (or a running target
//! is named), numio's tcp initiator runs on N initiator hosts at the same
//! instant (`numio bench --hosts` underneath), optionally for several N
//! (the scaling axis), and each point reports the aggregate IOPS and
//! bandwidth, merged latency percentiles, each side's CPU per I/O and the
//! target's CPU headroom. The target is stopped on exit, error and Ctrl-C
//! (and by its agent when the ssh session ends).

use std::sync::atomic::Ordering;

use anyhow::bail;
use fleet::target::{TargetCpu, TargetSession};
use fleet::HostRun;
use serde::Serialize;
use session::interrupt;

use super::bench::bench_fleet::{failures, print_hosts, run_fleet, FleetReport, SshArgs};
use super::human;

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
    /// CPUs of the target's reactors (`numio serve --cpus`).
    #[arg(long, value_name = "LIST")]
    pub target_cpus: Option<String>,
    /// Busy-poll the target (`numio serve --poll`).
    #[arg(long)]
    pub target_poll: bool,
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize)]
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
#[derive(Debug, Clone, Copy, Serialize)]
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

/// One point of the study.
#[derive(Debug, Serialize)]
struct Point {
    initiators: usize,
    initiator_cpu: InitiatorCpu,
    target_cpu: Option<TargetCpu>,
    fleet: FleetReport,
}

/// The whole study, as `--json` prints it.
#[derive(Debug, Serialize)]
struct Study {
    schema: &'static str,
    target: String,
    url: String,
    stack: Stack,
    target_lines: Vec<String>,
    points: Vec<Point>,
}

/// Runs `numio fabric`.
pub fn run(args: Args) -> anyhow::Result<i32> {
    interrupt::install(super::display::on_signal)?;
    let opts = args.ssh.options()?;
    let initiators = fleet::parse_host_list(&args.initiators).map_err(anyhow::Error::msg)?;
    let counts = match &args.initiator_counts {
        None => vec![initiators.len()],
        Some(list) => list
            .split(',')
            .map(|n| match n.trim().parse::<usize>() {
                Ok(k) if (1..=initiators.len()).contains(&k) => Ok(k),
                _ => bail!(
                    "--initiator-counts {list}: {n:?} is not a count from 1 to {} (the initiators given)",
                    initiators.len()
                ),
            })
            .collect::<anyhow::Result<Vec<_>>>()?,
    };
    for a in &args.bench_args {
        if ["--hosts", "--hosts-file", "--push", "--repeat", "--save"].contains(&a.as_str()) {
            bail!("{a} after `--` is a numio fabric matter, not the initiators': drop it there");
        }
    }
    let (url, mut target, target_name) = match (&args.use_target, &args.target) {
        (Some(url), _) => (url.clone(), None, url.clone()),
        (None, Some(t)) => {
            let host = fleet::parse_host(t).map_err(anyhow::Error::msg)?;
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
            if let Some(c) = &args.target_cpus {
                argv.extend(["--cpus".to_string(), c.clone()]);
            }
            if args.target_poll {
                argv.push("--poll".into());
            }
            eprintln!(
                "numio fabric: starting numio serve on {host} ({})",
                argv.join(" ")
            );
            let s = TargetSession::start(&host, &argv, &opts)
                .map_err(|e| anyhow::anyhow!("target {host}: {e}"))?;
            for l in &s.lines {
                eprintln!("numio fabric: {}: {l}", s.host);
            }
            (format!("nvme-tcp://{listen}/{nqn}/1"), Some(s), host.label)
        }
        (None, None) => {
            bail!("name the target: --target HOST (numio serve runs there) or --use-target URL")
        }
    };
    let mut study = Study {
        schema: "numio-fabric",
        target: target_name,
        url: url.clone(),
        stack: args.stack,
        target_lines: target.as_ref().map(|t| t.lines.clone()).unwrap_or_default(),
        points: Vec::new(),
    };
    let result = (|| -> anyhow::Result<()> {
        for &n in &counts {
            if interrupt::flag().load(Ordering::Relaxed) {
                break;
            }
            let runs: Vec<HostRun> = initiators[..n]
                .iter()
                .map(|h| match args.stack {
                    Stack::Numio => HostRun {
                        host: h.clone(),
                        targets: vec![url.clone()],
                        connect: None,
                    },
                    Stack::Kernel => HostRun {
                        host: h.clone(),
                        targets: Vec::new(),
                        connect: Some(url.clone()),
                    },
                })
                .collect();
            eprintln!("numio fabric: {n} initiator(s) against {url}");
            // The target's CPU from the common start instant (the barrier)
            // to the last result.
            let mut before = None;
            let fleet = run_fleet(&runs, &args.bench_args, &opts, &mut |e| {
                if let (fleet::FleetEvent::Starting { .. }, Some(t)) = (e, target.as_mut()) {
                    before = Some(t.cpu());
                }
            })?;
            let before = before.transpose().map_err(anyhow::Error::msg)?;
            let after = target
                .as_mut()
                .map(TargetSession::cpu)
                .transpose()
                .map_err(anyhow::Error::msg)?;
            if fleet.merged.is_none() {
                print_hosts(&fleet);
                bail!("no initiator ran: {}", failures(&fleet));
            }
            study.points.push(Point {
                initiators: n,
                initiator_cpu: InitiatorCpu::of(&fleet),
                target_cpu: before.zip(after).map(|(a, b)| a.until(&b)),
                fleet,
            });
        }
        Ok(())
    })();
    if let Some(t) = target.take() {
        t.stop();
    }
    result?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&study)?);
    } else {
        print_study(&study);
    }
    let partial = study.points.iter().any(|p| p.fleet.partial);
    if partial {
        eprintln!("numio fabric: partial: an initiator did not report (named above)");
    }
    Ok(interrupt::exit_code().unwrap_or(i32::from(partial)))
}

fn print_study(s: &Study) {
    println!(
        "target {} ({}); initiators: {}",
        s.target,
        s.url,
        match s.stack {
            Stack::Numio => "numio's tcp backend",
            Stack::Kernel => "the Linux kernel's nvme-tcp (block device)",
        }
    );
    println!(
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
    );
    let opt = |v: Option<f64>, prec: usize| v.map_or("-".to_string(), |v| format!("{v:.prec$}"));
    for p in &s.points {
        let Some(m) = &p.fleet.merged else { continue };
        let ops = m.total.ops.max(1) as f64;
        let lat = &m.total.latency.clat;
        let workers = (m.cpu_usage.user_ns + m.cpu_usage.system_ns) as f64 / 1e3 / ops;
        let t = p.target_cpu;
        println!(
            "{:>10} {:>10} {:>11} {:>10} {:>10} {:>15.2} {:>13} {:>15} {:>14} {:>10} {:>15}{}",
            p.initiators,
            human::si(m.total.iops),
            human::bandwidth(m.total.bandwidth_bytes_per_s),
            human::latency(lat.at(50.0).unwrap_or(0) as f64),
            human::latency(lat.at(99.0).unwrap_or(0) as f64),
            workers,
            opt(p.initiator_cpu.machine_cpu_ns_per_io.map(|n| n / 1e3), 2),
            opt(p.initiator_cpu.min_headroom_pct, 1),
            opt(t.map(|c| c.process_cpu_s * 1e6 / ops), 2),
            opt(t.map(|c| c.process_cores), 2),
            opt(t.map(|c| c.headroom_pct), 1),
            if p.fleet.partial { "  PARTIAL" } else { "" }
        );
    }
    println!("(latency: percentiles of the initiators' merged histograms; workers: the initiators' bench threads' CPU; init: the initiator machines' busy CPU (kernel threads and softirqs too) summed over hosts, and the lowest host's unused share; tgt: the target's numio serve process, and its machine's unused share)");
}
