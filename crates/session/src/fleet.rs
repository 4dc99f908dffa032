//! A sweep over a fleet of initiator hosts (`numio sweep --hosts`): each
//! run of a point is one fleet run (`fleet::run`) of `numio bench` on the
//! point's first N hosts at once, against their targets: each host's own,
//! an NVMe-oF namespace given by URL, or one that `numio serve` serves for
//! the run on a target host over ssh (on the point's CPUs) and stops after
//! it. The hosts' results
//! merge into one (`fleet::merge`: histograms merged, counters added), and
//! the served target's process and machine CPU over the run go into its
//! counters; so a point of a fleet sweep is a run like any other, and
//! `report::sweep` analyses, prints and reprints it as it does the others.

use std::collections::HashMap;
use std::sync::atomic::AtomicBool;

use engine::result::RunResult;
use engine::RunOptions;
use fleet::report::FleetReport;
use fleet::target::{CpuSample, TargetSession};
use fleet::{FleetEvent, FleetOptions, Host, HostRun};

use crate::schedule::BoxError;
use crate::{Event, LiveArm, RunInfo, Runner};

/// Why a run of a fleet sweep failed.
#[derive(Debug, thiserror::Error)]
pub enum FleetSweepError {
    /// The schedule ran an arm the runner was not given.
    #[error("point {0}: not planned for the fleet")]
    UnknownPoint(String),
    /// The point asks for more initiators than there are hosts.
    #[error("point {label}: {wanted} initiators of the {hosts} hosts given")]
    TooFewHosts {
        /// The point.
        label: String,
        /// Initiators it asks for.
        wanted: usize,
        /// Hosts given.
        hosts: usize,
    },
    /// The target host could not serve.
    #[error("target {host}: {source}")]
    Target {
        /// The target host.
        host: String,
        /// What went wrong there.
        #[source]
        source: fleet::TargetError,
    },
    /// The hosts' results do not merge.
    #[error(transparent)]
    Merge(#[from] fleet::MergeError),
    /// Not one initiator reported.
    #[error("no initiator ran: {0}")]
    NoInitiator(String),
    /// A host did not report, in a run that needs every host (a
    /// comparison's).
    #[error("{label}: {failures} (a comparison needs every host in every run)")]
    Incomplete {
        /// The arm.
        label: String,
        /// The hosts that did not report, and why.
        failures: String,
    },
    /// A host of the kernel's stack without exactly one NVMe-oF target.
    #[error("--stack kernel on {host}: its kernel connects to one NVMe-oF namespace; give one nvme-tcp:// or nvme-rdma:// target, or --target-host (it has {targets})")]
    KernelTarget {
        /// The host.
        host: String,
        /// Its targets (`none`).
        targets: String,
    },
    /// An axis of counts with a value out of range.
    #[error("{axis}={list}: {value} is not a count from 1 to {max} ({what})")]
    BadCount {
        /// The axis.
        axis: String,
        /// Its values as written.
        list: String,
        /// The bad one.
        value: String,
        /// The most it may be.
        max: usize,
        /// What bounds it.
        what: String,
    },
}

/// The axes a sweep over hosts varies, each with the `numio bench` flag it
/// sets on every host (`None`: the initiators taken, the served target's
/// CPUs).
pub const AXES: [(&str, Option<&str>); 8] = [
    ("initiators", None),
    ("reactors", None),
    ("iodepth", Some("iodepth")),
    ("bs", Some("bs")),
    ("rw", Some("rw")),
    ("rwmixread", Some("rwmixread")),
    ("jobs", Some("numjobs")),
    ("initiator-cores", Some("numjobs")),
];

/// The `numio bench` flag axis `name` sets on every host, if it sets one.
pub fn bench_flag(name: &str) -> Option<&'static str> {
    AXES.iter().find(|(n, _)| *n == name).and_then(|a| a.1)
}

/// The counts `values` of `axis`, each from 1 to `max` (`what` bounds it).
pub fn counts(
    axis: &str,
    values: &[String],
    max: usize,
    what: &str,
) -> Result<Vec<usize>, FleetSweepError> {
    values
        .iter()
        .map(|v| match v.parse::<usize>() {
            Ok(n) if (1..=max).contains(&n) => Ok(n),
            _ => Err(FleetSweepError::BadCount {
                axis: axis.to_string(),
                list: values.join(","),
                value: v.clone(),
                max,
                what: what.to_string(),
            }),
        })
        .collect()
}

/// Each host with its part: its `targets` (in host order) for numio's own
/// NVMe-oF host, or with `kernel` the one NVMe-oF namespace its kernel
/// connects to (an error names a host without exactly one).
pub fn host_runs(
    hosts: &[Host],
    targets: Vec<Vec<String>>,
    kernel: bool,
) -> Result<Vec<HostRun>, FleetSweepError> {
    hosts
        .iter()
        .zip(targets)
        .map(|(h, targets)| match (kernel, targets.as_slice()) {
            (false, _) => Ok(HostRun {
                host: h.clone(),
                targets,
                connect: None,
            }),
            (true, [one]) if planner::TargetAddr::parse(one).fabric().is_some() => Ok(HostRun {
                host: h.clone(),
                targets: Vec::new(),
                connect: Some(one.clone()),
            }),
            (true, _) => Err(FleetSweepError::KernelTarget {
                host: h.label.clone(),
                targets: match targets.is_empty() {
                    true => "none".into(),
                    false => targets.join(" "),
                },
            }),
        })
        .collect()
}

/// A `numio serve` the sweep starts on a host for each run.
#[derive(Debug, Clone)]
pub struct ServedTarget {
    /// The host, reached over ssh as the initiators are.
    pub host: Host,
    /// `numio serve`'s arguments but `--cpus`.
    pub argv: Vec<String>,
}

impl ServedTarget {
    /// `numio serve` on `host`, listening on `listen` (default: the host's
    /// address, port 4420) over `transport` (`tcp`, `rdma`), subsystem
    /// `nqn`, any host allowed, with the namespaces `ns` (default: `mem:1G`), busy-polling
    /// with `poll`; and the URL of its first namespace.
    pub fn numio_serve(
        host: Host,
        listen: Option<&str>,
        transport: &str,
        nqn: &str,
        ns: &[String],
        poll: bool,
    ) -> (ServedTarget, String) {
        let listen = match (listen, host.addr.contains(':')) {
            (Some(l), _) => l.to_string(),
            (None, true) => format!("[{}]:4420", host.addr),
            (None, false) => format!("{}:4420", host.addr),
        };
        let mut argv: Vec<String> = [
            "--listen",
            &listen,
            "--nqn",
            nqn,
            "--allow-any-host",
            "--transport",
            transport,
            "--discovery-port",
            "0",
        ]
        .map(String::from)
        .to_vec();
        let default = ["mem:1G".to_string()];
        for n in if ns.is_empty() { &default[..] } else { ns } {
            argv.extend(["--ns".to_string(), n.clone()]);
        }
        if poll {
            argv.push("--poll".into());
        }
        let url = format!("nvme-{transport}://{listen}/{nqn}/1");
        (ServedTarget { host, argv }, url)
    }
}

/// One point of the sweep (or arm of a bench across hosts) as the fleet
/// runs it.
#[derive(Debug, Clone, Default)]
pub struct FleetPoint {
    /// How many of the initiator hosts run it (the first N from
    /// `first_host`).
    pub initiators: usize,
    /// The first of them among the runner's hosts (0 in a sweep; the arms
    /// of a comparison take the hosts one after the other).
    pub first_host: usize,
    /// Whether a run in which a host did not report fails (a comparison's
    /// arms compare whole fleets); otherwise it is partial.
    pub every_host: bool,
    /// `numio bench`'s arguments on each of them (without the namespace).
    pub argv: Vec<String>,
    /// `numio serve --cpus` of the served target, when chosen.
    pub target_cpus: Option<String>,
}

/// What a fleet sweep tells as it goes, besides the schedule's events.
#[derive(Debug)]
pub enum FleetNote<'a> {
    /// `numio serve` starts on the target host with `argv`.
    TargetStarting {
        /// The target host.
        host: &'a Host,
        /// Its arguments, `--cpus` included.
        argv: &'a [String],
    },
    /// It is ready; what it said while starting.
    TargetReady {
        /// The target host.
        host: &'a Host,
        /// Its lines.
        lines: &'a [String],
    },
    /// The hosts of run `run` start their fleet run.
    Hosts {
        /// The run.
        run: RunInfo,
        /// Its hosts.
        hosts: &'a [HostRun],
    },
    /// An event of the hosts' run.
    Fleet(FleetEvent<'a>),
    /// Run `run` ended: each host's part and their merged result, before
    /// the runner decides whether it stands.
    Ran {
        /// The run.
        run: RunInfo,
        /// Its outcome.
        report: &'a FleetReport,
    },
}

/// Runs each point of a sweep on a fleet (see the module's words).
pub struct FleetRunner<'a> {
    /// The initiator hosts in the order given, each with its targets or
    /// the namespace its kernel connects to.
    pub hosts: Vec<HostRun>,
    /// The target served for each run, if the sweep serves one.
    pub target: Option<ServedTarget>,
    /// Each point by its label.
    pub points: HashMap<String, FleetPoint>,
    /// How the hosts are reached.
    pub opts: FleetOptions,
    /// Told of the target and of the hosts' progress.
    pub notes: &'a mut dyn FnMut(FleetNote<'_>),
    /// Runs in which a host did not report: their merged figures cover
    /// the hosts that did (each such run's notes name them).
    pub partial_runs: usize,
}

impl Runner for FleetRunner<'_> {
    fn run(
        &mut self,
        arm: &LiveArm,
        opts: &RunOptions,
        run: RunInfo,
        interrupt: &AtomicBool,
        observer: &mut dyn FnMut(&Event<'_>),
    ) -> Result<RunResult, BoxError> {
        let point = self
            .points
            .get(&arm.label)
            .cloned()
            .ok_or_else(|| FleetSweepError::UnknownPoint(arm.label.clone()))?;
        if point.first_host + point.initiators > self.hosts.len() || point.initiators == 0 {
            return Err(FleetSweepError::TooFewHosts {
                label: arm.label.clone(),
                wanted: point.initiators,
                hosts: self.hosts.len(),
            }
            .into());
        }
        observer(&Event::Starting(run));
        let result = self.measure(&arm.label, &point, run, &opts.percentiles, interrupt);
        observer(&Event::Ended(run));
        Ok(result?)
    }
}

impl FleetRunner<'_> {
    /// The target served for a run of `point`, if the sweep serves one.
    fn start_target(
        &mut self,
        point: &FleetPoint,
    ) -> Result<Option<TargetSession>, FleetSweepError> {
        let Some(t) = &self.target else {
            return Ok(None);
        };
        let mut argv = t.argv.clone();
        if let Some(cpus) = &point.target_cpus {
            argv.extend(["--cpus".to_string(), cpus.clone()]);
        }
        (self.notes)(FleetNote::TargetStarting {
            host: &t.host,
            argv: &argv,
        });
        let s = TargetSession::start(&t.host, &argv, &self.opts).map_err(|source| {
            FleetSweepError::Target {
                host: t.host.label.clone(),
                source,
            }
        })?;
        (self.notes)(FleetNote::TargetReady {
            host: &t.host,
            lines: &s.lines,
        });
        Ok(Some(s))
    }

    /// One run of `point`: the target served (if the sweep serves one),
    /// the hosts at once, the target stopped, the results merged.
    fn measure(
        &mut self,
        label: &str,
        point: &FleetPoint,
        run: RunInfo,
        percentiles: &[f64],
        interrupt: &AtomicBool,
    ) -> Result<RunResult, FleetSweepError> {
        let mut target = self.start_target(point)?;
        let runs = &self.hosts[point.first_host..point.first_host + point.initiators];
        (self.notes)(FleetNote::Hosts { run, hosts: runs });
        // The target's CPU from the hosts' common start to their results.
        let mut before: Option<Result<CpuSample, fleet::TargetError>> = None;
        let notes = &mut self.notes;
        let outcomes = fleet::run::run(runs, &point.argv, &self.opts, interrupt, &mut |e| {
            if let (FleetEvent::Starting { .. }, Some(t)) = (&e, target.as_mut()) {
                before = Some(t.cpu());
            }
            notes(FleetNote::Fleet(e));
        });
        let after = target.as_mut().map(TargetSession::cpu);
        if let Some(t) = target.take() {
            t.stop();
        }
        let report = FleetReport::new(runs, outcomes, percentiles)?;
        (self.notes)(FleetNote::Ran {
            run,
            report: &report,
        });
        let Some(mut merged) = report.merged.clone() else {
            return Err(FleetSweepError::NoInitiator(report.failures()));
        };
        if report.partial && point.every_host {
            return Err(FleetSweepError::Incomplete {
                label: label.to_string(),
                failures: report.failures(),
            });
        }
        if report.partial {
            self.partial_runs += 1;
            merged
                .environment
                .notes
                .push(format!("partial: {}", report.failures()));
        }
        match (before, after) {
            (Some(Ok(a)), Some(Ok(b))) => add_target_cpu(&mut merged, &a, &b),
            (Some(Err(e)), _) | (_, Some(Err(e))) => merged
                .environment
                .notes
                .push(format!("the target's CPU could not be sampled: {e}")),
            _ => {}
        }
        Ok(merged)
    }
}

/// The served target's CPU between `a` and `b` in `merged`'s counters:
/// its process and its machine, at the rate sampled over the counters'
/// window (the samples bracket the hosts' run, set-up and ramp included,
/// so their counts are scaled to the measured window). Nothing where the
/// hosts' counters are missing: a per-I/O cost needs their window.
fn add_target_cpu(merged: &mut RunResult, a: &CpuSample, b: &CpuSample) {
    let spend = a.until(b);
    let Some(c) = merged.counters.as_mut() else {
        return;
    };
    if spend.wall_ns == 0 {
        return;
    }
    c.target_process = Some(spend.process.scaled(c.window_ns, spend.wall_ns));
    c.target_machine = Some(spend.machine);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_targets_cpu_is_scaled_to_the_measured_window() {
        let mut r = RunResult {
            counters: Some(results::RunCounters {
                window_ns: 1_000_000_000,
                ..Default::default()
            }),
            ..RunResult::default()
        };
        r.total.iops = 1000.0;
        let a = CpuSample {
            at_unix_ns: 10_000_000_000,
            ..CpuSample::default()
        };
        let mut b = CpuSample {
            at_unix_ns: 12_000_000_000,
            ..CpuSample::default()
        };
        b.process.user_ns = 1_000_000_000;
        b.process.system_ns = 500_000_000;
        b.machine.system_ns = 4_000_000_000;
        b.machine.idle_ns = 12_000_000_000;
        add_target_cpu(&mut r, &a, &b);
        let c = r.counters.as_ref().unwrap();
        // 1.5 s of CPU over 2 s sampled: 0.75 s over the 1 s window.
        assert_eq!(c.target_process.unwrap().cpu_ns(), 750_000_000);
        let per_io = r.per_io();
        assert_eq!(per_io.target_headroom_pct, Some(75.0));
        assert_eq!(per_io.target_cpu_ns.map(f64::round), Some(750_000.0));
        // No counters from the hosts: nothing made up.
        r.counters = None;
        add_target_cpu(&mut r, &a, &b);
        assert!(r.counters.is_none());
    }
}
