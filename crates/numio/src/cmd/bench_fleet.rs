//! `numio bench --hosts A,B` / `--hosts-file FILE`: the same bench on
//! several hosts at the same instant, over ssh (`fleet`), merged into one
//! report: each host's lines, then the fleet's total with percentiles from
//! the hosts' merged histograms. `--repeat N` runs the barrier N times and
//! reports the run-to-run deviation per host and drive (`HOST:PATH`);
//! `--save` keeps every host's whole result in one file.

use std::path::PathBuf;
use std::sync::atomic::Ordering;

use anyhow::{bail, Context};
use fleet::report::FleetReport;
use fleet::{FleetEvent, FleetOptions, Host, HostRun};
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

/// How numio reaches other hosts (`numio bench --hosts`, `numio sweep --hosts`).
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

    pub(crate) fn hosts(&self) -> anyhow::Result<Vec<Host>> {
        if let Some(list) = &self.hosts {
            return Ok(fleet::parse_host_list(list)?);
        }
        let path = self.hosts_file.as_ref().expect("wanted");
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("reading the hosts file {}", path.display()))?;
        Ok(fleet::parse_hosts_file(&text, &path.display().to_string())?)
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
        let run = run_fleet(&runs, &argv, &opts, &mut |_| {})?;
        partial_runs += usize::from(run.partial);
        let Some(merged) = &run.merged else {
            if !json {
                print!("{}", report::fleet::hosts(&run));
            }
            bail!("no host of the fleet ran: {}", run.failures());
        };
        io_errors |= !merged.errors.is_empty();
        if !json && !repeat.wanted() {
            print!("{}", report::fleet::render(&run));
        } else if json && !repeat.wanted() {
            println!("{}", serde_json::to_string_pretty(&run)?);
        }
        records.extend(report::fleet::record(&run, seq)?);
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

/// `numio report FILE` of a `numio bench --hosts --json` file (schema
/// `numio-fleet`): what the fleet run printed, by the same renderer. `None`
/// for other files, or when an export is asked for.
pub fn reprint(args: &super::super::report::Args) -> Option<anyhow::Result<i32>> {
    if args.exports() {
        return None;
    }
    let text = std::fs::read_to_string(&args.file).ok()?;
    let run: FleetReport = serde_json::from_str(&text).ok()?;
    if run.schema != fleet::report::FLEET_SCHEMA {
        return None;
    }
    print!("{}", report::fleet::render(&run));
    Some(Ok(0))
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
    Ok(FleetReport::new(
        runs,
        outcomes,
        &engine::DEFAULT_PERCENTILES,
    )?)
}

/// The hosts' progress on stderr (`report::fleet::Progress`'s lines).
pub(crate) struct Progress(report::fleet::Progress);

impl Progress {
    pub(crate) fn new(runs: &[HostRun]) -> Self {
        Progress(report::fleet::Progress::new(
            runs.iter().map(|r| r.host.label.clone()).collect(),
        ))
    }

    pub(crate) fn event(&mut self, e: FleetEvent<'_>) {
        if let Some(line) = self.0.line(&e) {
            eprintln!("{line}");
        }
    }
}
