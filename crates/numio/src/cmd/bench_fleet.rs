//! `numio bench --hosts A,B` / `--hosts-file FILE`: the same bench on
//! several hosts at the same instant, over ssh (`fleet`), merged into one
//! report: each host's lines, then the fleet's total with percentiles from
//! the hosts' merged histograms. `--repeat N` runs the barrier N times and
//! reports the run-to-run deviation per host and drive (`HOST:PATH`);
//! `--save` keeps every host's whole result in one file.

use std::path::PathBuf;

use anyhow::bail;
use fleet::report::FleetReport;
use fleet::{FleetEvent, FleetOptions, Host, HostRun};
use session::fleet::FleetNote;
use session::fleet_bench::{self, FleetBench, HostsArm};
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
        let (opts, numio, v) = (&self.ssh_opts, &self.remote_numio, env!("NUMIO_VERSION"));
        Ok(fleet_bench::fleet_options(opts, numio, self.push, v)?)
    }
}

impl FleetArgs {
    /// Whether the run goes to other hosts.
    pub fn wanted(&self) -> bool {
        self.hosts.is_some() || self.hosts_file.is_some()
    }

    pub(crate) fn hosts(&self) -> anyhow::Result<Vec<Host>> {
        let file = self.hosts_file.as_deref();
        Ok(fleet_bench::hosts(self.hosts.as_deref(), file)?)
    }
}

/// Runs the bench on every host (`session::fleet_bench`); `targets` are
/// the bench's targets.
pub fn run(
    fleet_args: &FleetArgs,
    targets: &[String],
    repeat: &RepeatArgs,
    json: bool,
) -> anyhow::Result<i32> {
    let all: Vec<String> = std::env::args().collect();
    let Some(argv) = fleet_bench::bench_argv(&all, "bench") else {
        bail!("numio bench --hosts: cannot find `bench` among the arguments");
    };
    let fleet = FleetBench {
        arms: vec![HostsArm {
            label: "fleet".into(),
            hosts: fleet_args.hosts()?,
        }],
        targets: targets.to_vec(),
        argv,
        rounds: repeat.repeat,
        opts: fleet_args.ssh.options()?,
    };
    let (mut view, mut shown) = (fleet.view(), None);
    let mut notes = |n: FleetNote<'_>| {
        if let Some(line) = view.line(&n) {
            eprintln!("{line}");
        }
        match n {
            FleetNote::Ran { report, .. } if report.merged.is_none() && !json => {
                print!("{}", report::fleet::hosts(report));
            }
            FleetNote::Ran { report, .. } if !repeat.wanted() => shown = Some(report.clone()),
            _ => {}
        }
    };
    let out = fleet.bench(interrupt::flag(), &mut notes)?;
    match shown {
        Some(run) if json => println!("{}", serde_json::to_string_pretty(&run)?),
        Some(run) => print!("{}", report::fleet::render(&run)),
        None => {}
    }
    if repeat.wanted() && !out.arm.runs.is_empty() {
        repeat.export.finish(&one_arm_set(out.arm), json)?;
    }
    if out.partial_runs > 0 {
        eprintln!(
            "numio: partial: {} fleet run(s) lacked a host (named above); the merged figures cover the hosts that reported",
            out.partial_runs
        );
    }
    let code = i32::from(out.partial_runs > 0 || out.failed_runs > 0);
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
