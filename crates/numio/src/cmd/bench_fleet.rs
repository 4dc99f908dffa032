//! `numio bench --hosts A,B` / `--hosts-file FILE`: the same bench on
//! several hosts at the same instant, over ssh (`fleet`), merged into one
//! report: each host's lines, then the fleet's total with percentiles from
//! the hosts' merged histograms. `--repeat N` runs the barrier N times and
//! reports the run-to-run deviation per host and drive (`HOST:PATH`);
//! `--save` keeps every host's whole result in one file.

use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::time::Instant;

use anyhow::{bail, Context};
use fleet::{FleetEvent, FleetOptions, Host, HostOutcome, HostRun};
use serde::Serialize;
use session::interrupt;

use super::super::report::{one_arm_set, RepeatArgs};

/// Fleet flags of `numio bench`.
#[derive(Debug, Default, clap::Args)]
pub struct FleetArgs {
    /// Run on these hosts at once, over ssh: `[user@]host[:port],...`.
    /// A target `HOST:PATH` is that host's only; other targets go to every
    /// host; none: each host's NVMe namespaces (read-only).
    #[arg(long, value_name = "HOSTS", conflicts_with = "hosts_file")]
    pub hosts: Option<String>,
    /// Hosts from a file: one `[user@]host[:port]` per line, then ssh
    /// arguments for that host (`-i KEY`); `#` comments.
    #[arg(long, value_name = "FILE")]
    pub hosts_file: Option<PathBuf>,
    #[command(flatten)]
    pub ssh: SshArgs,
}

/// How numio reaches other hosts (`numio bench --hosts`, `numio fabric`).
#[derive(Debug, Default, clap::Args)]
pub struct SshArgs {
    /// An ssh option for every host, as `ssh -o OPTION` (repeatable).
    #[arg(long = "ssh-opt", value_name = "OPTION")]
    pub ssh_opts: Vec<String>,
    /// numio on the hosts: a command on their PATH or a path.
    #[arg(long, value_name = "PATH", default_value = "numio")]
    pub remote_numio: String,
    /// Copy this numio to every host first (to ~/.cache/numio/ there) and
    /// run that copy: no install needed, and the versions match.
    #[arg(long)]
    pub push: bool,
}

impl SshArgs {
    /// The fleet options these flags make (`NUMIO_SSH` names another ssh
    /// program).
    pub fn options(&self) -> anyhow::Result<FleetOptions> {
        let mut ssh_args = Vec::new();
        for o in &self.ssh_opts {
            ssh_args.extend(["-o".to_string(), o.clone()]);
        }
        Ok(FleetOptions {
            ssh: std::env::var("NUMIO_SSH").unwrap_or_else(|_| "ssh".into()),
            ssh_args,
            remote_numio: self.remote_numio.clone(),
            push: if self.push {
                Some(std::env::current_exe().context("finding this numio's file for --push")?)
            } else {
                None
            },
            version: env!("NUMIO_VERSION").to_string(),
            ..FleetOptions::default()
        })
    }
}

impl FleetArgs {
    /// Whether the run goes to other hosts.
    pub fn wanted(&self) -> bool {
        self.hosts.is_some() || self.hosts_file.is_some()
    }

    fn hosts(&self) -> anyhow::Result<Vec<Host>> {
        if let Some(list) = &self.hosts {
            return Ok(fleet::parse_host_list(list)?);
        }
        let path = self.hosts_file.as_ref().expect("wanted");
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("reading the hosts file {}", path.display()))?;
        Ok(fleet::parse_hosts_file(&text, &path.display().to_string())?)
    }
}

/// One host's part of a fleet run, as saved and printed with `--json`.
#[derive(Debug, Serialize, serde::Deserialize)]
pub(crate) struct HostReport {
    host: String,
    ok: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    clock_offset_ns: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    clock_rtt_ns: Option<u64>,
    /// When it began measuring after the host that began first, ns.
    #[serde(skip_serializing_if = "Option::is_none")]
    start_skew_ns: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    result: Option<results::RunResult>,
}

/// A fleet run's whole outcome.
#[derive(Debug, Serialize, serde::Deserialize)]
pub(crate) struct FleetReport {
    #[serde(skip_deserializing)]
    schema: &'static str,
    pub(crate) partial: bool,
    pub(crate) hosts: Vec<HostReport>,
    pub(crate) merged: Option<results::RunResult>,
}

impl FleetReport {
    /// The result of each host that sent one.
    pub(crate) fn host_results(&self) -> impl Iterator<Item = &results::RunResult> {
        self.hosts.iter().filter_map(|h| h.result.as_ref())
    }
}

/// Runs the bench on every host; `targets` are the bench's targets.
pub fn run(
    fleet_args: &FleetArgs,
    targets: &[String],
    repeat: &RepeatArgs,
    json: bool,
) -> anyhow::Result<i32> {
    let hosts = fleet_args.hosts()?;
    let per_host = fleet::targets_per_host(targets, &hosts);
    let runs: Vec<HostRun> = hosts
        .into_iter()
        .zip(per_host)
        .map(|(host, targets)| HostRun {
            host,
            targets,
            connect: None,
        })
        .collect();
    let all: Vec<String> = std::env::args().collect();
    let Some(at) = all.iter().position(|a| a == "bench") else {
        bail!("numio bench --hosts: cannot find `bench` among the arguments");
    };
    let argv = all[at + 1..].to_vec();
    let opts = fleet_args.ssh.options()?;
    let mut records = Vec::new();
    let mut partial_runs = 0;
    let mut io_errors = false;
    for seq in 1..=repeat.repeat {
        if interrupt::flag().load(Ordering::Relaxed) {
            break;
        }
        if repeat.repeat > 1 {
            eprintln!("numio: fleet run {seq} of {}", repeat.repeat);
        }
        let report = run_fleet(&runs, &argv, &opts, &mut |_| {})?;
        partial_runs += usize::from(report.partial);
        let Some(merged) = &report.merged else {
            if !json {
                print_hosts(&report);
            }
            bail!("no host of the fleet ran: {}", failures(&report));
        };
        io_errors |= !merged.errors.is_empty();
        if !json && !repeat.wanted() {
            print_hosts(&report);
            print_total(merged, &report);
        } else if json && !repeat.wanted() {
            println!("{}", serde_json::to_string_pretty(&report)?);
        }
        records.extend(report.record(seq)?);
    }
    if repeat.wanted() && !records.is_empty() {
        let set = one_arm_set(report::Arm {
            label: "fleet".into(),
            spec: hosts_spec(runs.iter().map(|r| &r.host)),
            runs: records,
        });
        repeat.export.finish(&set, json)?;
    }
    if partial_runs > 0 {
        eprintln!(
            "numio: partial: {partial_runs} fleet run(s) lacked a host (named above); the merged figures cover the hosts that reported"
        );
    }
    let code = i32::from(partial_runs > 0 || io_errors);
    Ok(interrupt::exit_code().unwrap_or(code))
}

/// `hosts=A,B`: an arm's spec in a result set.
pub(crate) fn hosts_spec<'a>(hosts: impl Iterator<Item = &'a fleet::Host>) -> String {
    let labels: Vec<&str> = hosts.map(|h| h.label.as_str()).collect();
    format!("hosts={}", labels.join(","))
}

/// One fleet run of `runs` with the hosts' progress on stderr; `also`
/// sees each event first (fabric samples its target's CPU at the start).
pub(crate) fn run_fleet(
    runs: &[HostRun],
    argv: &[String],
    opts: &FleetOptions,
    also: &mut dyn FnMut(&FleetEvent<'_>),
) -> anyhow::Result<FleetReport> {
    let mut progress = Progress::new(runs);
    let outcomes = fleet::run::run(runs, argv, opts, interrupt::flag(), &mut |e| {
        also(&e);
        progress.event(e)
    });
    fleet_report(runs, outcomes)
}

impl FleetReport {
    /// This run as run `seq` of a result set, every host's whole result in
    /// its `raw`; `None` when no host ran.
    pub(crate) fn record(&self, seq: usize) -> anyhow::Result<Option<report::RunRecord>> {
        let Some(merged) = &self.merged else {
            return Ok(None);
        };
        let mut record = report::from_engine::record(seq, merged);
        record.raw = Some(serde_json::to_value(self)?);
        Ok(Some(record))
    }
}

fn fleet_report(runs: &[HostRun], outcomes: Vec<HostOutcome>) -> anyhow::Result<FleetReport> {
    let mut hosts = Vec::new();
    for (r, o) in runs.iter().zip(outcomes) {
        hosts.push(match o {
            HostOutcome::Done {
                result,
                offset,
                start_skew_ns,
            } => HostReport {
                host: r.host.label.clone(),
                ok: true,
                reason: None,
                clock_offset_ns: Some(offset.offset_ns),
                clock_rtt_ns: Some(offset.rtt_ns),
                start_skew_ns,
                result: Some(*result),
            },
            HostOutcome::Failed { reason } => HostReport {
                host: r.host.label.clone(),
                ok: false,
                reason: Some(reason),
                clock_offset_ns: None,
                clock_rtt_ns: None,
                start_skew_ns: None,
                result: None,
            },
        });
    }
    // Each host began measuring after its own set-up; what matters is how
    // far apart: the skew is from the host that began first (set-up
    // included, in the controller's clock).
    if let Some(first) = hosts.iter().filter_map(|h| h.start_skew_ns).min() {
        for h in &mut hosts {
            h.start_skew_ns = h.start_skew_ns.map(|s| s - first);
        }
    }
    let parts: Vec<(&str, &results::RunResult)> = hosts
        .iter()
        .filter_map(|h| Some((h.host.as_str(), h.result.as_ref()?)))
        .collect();
    let merged = if parts.is_empty() {
        None
    } else {
        Some(fleet::merge::merge(&parts, &engine::DEFAULT_PERCENTILES)?)
    };
    Ok(FleetReport {
        schema: "numio-fleet",
        partial: hosts.iter().any(|h| !h.ok),
        hosts,
        merged,
    })
}

pub(crate) fn failures(r: &FleetReport) -> String {
    r.hosts
        .iter()
        .filter_map(|h| Some(format!("{}: {}", h.host, h.reason.as_ref()?)))
        .collect::<Vec<_>>()
        .join("; ")
}

pub(crate) fn print_hosts(r: &FleetReport) {
    println!(
        "{:<24} {:>10} {:>11} {:>10} {:>10} {:>12} {:>11}",
        "host", "IOPS", "bandwidth", "mean", "p99", "clock offset", "start skew"
    );
    for h in &r.hosts {
        let Some(res) = &h.result else {
            println!(
                "{:<24} FAILED: {}",
                h.host,
                h.reason.as_deref().unwrap_or("")
            );
            continue;
        };
        let lat = &res.total.latency.clat;
        println!(
            "{:<24} {:>10} {:>11} {:>10} {:>10} {:>12} {:>11}",
            h.host,
            report::format::si(res.total.iops),
            report::format::bandwidth(res.total.bandwidth_bytes_per_s),
            report::format::latency(lat.mean_ns),
            report::format::latency(lat.at(99.0).unwrap_or(0) as f64),
            format!(
                "{}±{}",
                signed_latency(h.clock_offset_ns.unwrap_or(0)),
                report::format::latency(h.clock_rtt_ns.unwrap_or(0) as f64 / 2.0)
            ),
            h.start_skew_ns.map_or("-".into(), signed_latency),
        );
        for t in &res.targets {
            println!(
                "  {:<22} {:>10} {:>11} {:>10} {:>10}",
                t.path,
                report::format::si(t.total.iops),
                report::format::bandwidth(t.total.bandwidth_bytes_per_s),
                report::format::latency(t.total.latency.clat.mean_ns),
                report::format::latency(t.total.latency.clat.at(99.0).unwrap_or(0) as f64),
            );
            if let Some(v) = &t.verify {
                let mut lines = String::new();
                report::bench::verify_lines(&mut lines, v);
                for l in lines.lines() {
                    println!("  {l}");
                }
            }
        }
    }
}

fn print_total(m: &results::RunResult, r: &FleetReport) {
    let ok = r.hosts.iter().filter(|h| h.ok).count();
    let lat = &m.total.latency.clat;
    let pct = |p: f64| report::format::latency(lat.at(p).unwrap_or(0) as f64);
    println!(
        "fleet ({ok} of {} hosts{}): {} IOPS, {}, clat mean {} p50 {} p99 {} p99.9 {} (percentiles of the merged histograms, {} I/Os)",
        r.hosts.len(),
        if r.partial { ", PARTIAL" } else { "" },
        report::format::si(m.total.iops),
        report::format::bandwidth(m.total.bandwidth_bytes_per_s),
        report::format::latency(lat.mean_ns),
        pct(50.0),
        pct(99.0),
        pct(99.9),
        m.total.ops
    );
}

pub(crate) fn signed_latency(ns: i64) -> String {
    let s = report::format::latency(ns.unsigned_abs() as f64);
    if ns < 0 {
        format!("-{s}")
    } else {
        format!("+{s}")
    }
}

/// The hosts' live IOPS on stderr, one line a second.
struct Progress {
    labels: Vec<String>,
    iops: Vec<f64>,
    last: Instant,
}

impl Progress {
    fn new(runs: &[HostRun]) -> Self {
        Progress {
            labels: runs.iter().map(|r| r.host.label.clone()).collect(),
            iops: vec![0.0; runs.len()],
            last: Instant::now(),
        }
    }

    fn event(&mut self, e: FleetEvent<'_>) {
        match e {
            FleetEvent::Connected {
                host,
                hostname,
                offset,
            } => eprintln!(
                "numio: {host}: {hostname}, clock {} ± {}",
                signed_latency(offset.offset_ns),
                report::format::latency(offset.rtt_ns as f64 / 2.0)
            ),
            FleetEvent::Ready {
                host,
                targets,
                jobs,
            } => eprintln!("numio: {host}: ready: {} ({jobs} jobs)", targets.join(", ")),
            FleetEvent::Starting { hosts, .. } => {
                eprintln!("numio: {hosts} host(s) start together");
            }
            FleetEvent::Failed { host, reason } => eprintln!("numio: {host}: {reason}"),
            FleetEvent::Progress {
                host,
                elapsed_s,
                iops,
                ..
            } => {
                if let Some(i) = self.labels.iter().position(|l| *l == host.label) {
                    self.iops[i] = iops;
                }
                if self.last.elapsed().as_secs_f64() >= 1.0 {
                    self.last = Instant::now();
                    let parts: Vec<String> = self
                        .labels
                        .iter()
                        .zip(&self.iops)
                        .map(|(l, x)| format!("{l} {}", report::format::si(*x)))
                        .collect();
                    eprintln!(
                        "numio: {elapsed_s:>5.1}s  {}  total {} IOPS",
                        parts.join("  "),
                        report::format::si(self.iops.iter().sum())
                    );
                }
            }
        }
    }
}
