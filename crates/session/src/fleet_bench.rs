//! A bench across hosts as a schedule run by [`crate::fleet`]'s runner:
//! `numio bench --hosts` (one arm, run `--repeat` times) and `numio compare
//! --a hosts=… --b hosts=…` (two fleets interleaved A B A B …). Each run is
//! one fleet run at one instant on every host of its arm, their results
//! merged; a comparison's run fails when a host did not report, a bench's
//! is partial. Each run's record keeps the whole fleet run (each host's
//! part and result, schema `numio-fleet`) in its `raw`, so the rows of
//! each host stay with the set.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;

use fleet::{FleetOptions, Host, HostRun, HostsError};
use report::Arm;

use crate::arms::Compared;
use crate::fleet::{FleetNote, FleetPoint, FleetRunner, FleetSweepError};
use crate::{LiveArm, Schedule, SessionError};

/// Why a bench across hosts failed.
#[derive(Debug, thiserror::Error)]
pub enum FleetBenchError {
    /// No host of `numio bench --hosts` ran.
    #[error("no host of the fleet ran: {failures}")]
    NoHost {
        /// Each host and why.
        failures: String,
    },
    /// No host of a comparison's arm ran.
    #[error("{label}: no host ran: {failures}")]
    ArmNoHost {
        /// The arm.
        label: String,
        /// Each host and why.
        failures: String,
    },
    /// The two arms of a comparison have one label.
    #[error("--a and --b are both labelled {label}: add ,label=NAME to one")]
    SameLabel {
        /// The label.
        label: String,
    },
    /// An arm beside a `hosts=` arm names no hosts.
    #[error(
        "{flag} {text}: with a hosts= arm the other arm names hosts too (hosts=H1,H2[,label=NAME])"
    )]
    NotHosts {
        /// Its flag (`--b`).
        flag: String,
        /// The arm as given.
        text: String,
    },
    /// An arm's hosts do not parse.
    #[error("{flag} {text}: {source}")]
    Hosts {
        /// Its flag.
        flag: String,
        /// The arm as given.
        text: String,
        /// Why.
        #[source]
        source: HostsError,
    },
    /// An arm names no host.
    #[error("{flag} {text}: name at least one host")]
    NoHosts {
        /// Its flag.
        flag: String,
        /// The arm as given.
        text: String,
    },
    /// A fleet run failed otherwise.
    #[error(transparent)]
    Fleet(FleetSweepError),
    /// The schedule failed.
    #[error(transparent)]
    Session(SessionError),
    /// The hosts file could not be read.
    #[error("reading the hosts file {}", path.display())]
    HostsFile {
        /// The file.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// A host list or hosts file does not parse.
    #[error(transparent)]
    HostList(HostsError),
    /// This numio's file could not be found for `--push`.
    #[error("finding this numio's file for --push")]
    Exe {
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// A fleet run could not be kept as JSON.
    #[error(transparent)]
    Json(#[from] serde_json::Error),
}

/// The hosts of a host `list` (`--hosts`), or else of the hosts `file`.
pub fn hosts(list: Option<&str>, file: Option<&Path>) -> Result<Vec<Host>, FleetBenchError> {
    let parsed = match (list, file) {
        (Some(list), _) => fleet::parse_host_list(list),
        (None, Some(path)) => {
            let text =
                std::fs::read_to_string(path).map_err(|source| FleetBenchError::HostsFile {
                    path: path.to_path_buf(),
                    source,
                })?;
            fleet::parse_hosts_file(&text, &path.display().to_string())
        }
        (None, None) => Ok(Vec::new()),
    };
    parsed.map_err(FleetBenchError::HostList)
}

/// How numio reaches other hosts: `ssh -o` for each of `ssh_opts`,
/// `remote_numio` on them (or, with `push`, this numio copied there
/// first), `version` this numio's; `NUMIO_SSH` names another ssh program.
pub fn fleet_options(
    ssh_opts: &[String],
    remote_numio: &str,
    push: bool,
    version: &str,
) -> Result<FleetOptions, FleetBenchError> {
    let push = match push {
        true => Some(std::env::current_exe().map_err(|source| FleetBenchError::Exe { source })?),
        false => None,
    };
    Ok(FleetOptions {
        ssh: std::env::var("NUMIO_SSH").unwrap_or_else(|_| "ssh".into()),
        ssh_args: ssh_opts
            .iter()
            .flat_map(|o| ["-o".to_string(), o.clone()])
            .collect(),
        remote_numio: remote_numio.to_string(),
        push,
        version: version.to_string(),
        ..FleetOptions::default()
    })
}

/// What the hosts' `numio bench` takes of numio's command line `all`: the
/// arguments after `verb` (`bench`, or `compare` less its arms, `--a` and
/// `--b`, and `--fio-numa-auto`); `None` without `verb`.
pub fn bench_argv(all: &[String], verb: &str) -> Option<Vec<String>> {
    let at = all.iter().position(|a| a == verb)? + 1;
    if verb != "compare" {
        return Some(all[at..].to_vec());
    }
    let mut out = Vec::new();
    let mut skip = false;
    for a in &all[at..] {
        if skip {
            skip = false;
            continue;
        }
        match a.as_str() {
            "--a" | "--b" => skip = true,
            "--fio-numa-auto" => {}
            x if x.starts_with("--a=") || x.starts_with("--b=") => {}
            _ => out.push(a.clone()),
        }
    }
    Some(out)
}

/// One arm of a bench across hosts: its label and its hosts.
#[derive(Debug, Clone)]
pub struct HostsArm {
    /// Its label.
    pub label: String,
    /// Its hosts, in order.
    pub hosts: Vec<Host>,
}

impl HostsArm {
    /// Whether an arm's text names hosts (`hosts=…`).
    pub fn is_hosts(text: &str) -> bool {
        text.starts_with("hosts=")
    }

    /// A `hosts=H1,H2[,label=NAME]` arm given as `flag`; its label is the
    /// list as written unless named.
    pub fn parse(flag: &str, text: &str) -> Result<HostsArm, FleetBenchError> {
        let (flag_s, text_s) = (flag.to_string(), text.to_string());
        let Some(rest) = text.strip_prefix("hosts=") else {
            return Err(FleetBenchError::NotHosts {
                flag: flag_s,
                text: text_s,
            });
        };
        let mut label = None;
        let mut hosts = Vec::new();
        for part in rest.split(',') {
            match part.strip_prefix("label=") {
                Some(l) => label = Some(l.to_string()),
                None => hosts.push(part),
            }
        }
        let hosts = match fleet::parse_host_list(&hosts.join(",")) {
            Ok(h) if h.is_empty() => {
                return Err(FleetBenchError::NoHosts {
                    flag: flag_s,
                    text: text_s,
                })
            }
            Ok(h) => h,
            Err(source) => {
                return Err(FleetBenchError::Hosts {
                    flag: flag_s,
                    text: text_s,
                    source,
                })
            }
        };
        Ok(HostsArm {
            label: label.unwrap_or_else(|| rest.to_string()),
            hosts,
        })
    }

    /// `hosts=A,B`: the arm's spec in a result set.
    pub fn spec(&self) -> String {
        let labels: Vec<&str> = self.hosts.iter().map(|h| h.label.as_str()).collect();
        format!("hosts={}", labels.join(","))
    }
}

/// What a bench across hosts runs.
#[derive(Debug, Clone)]
pub struct FleetBench {
    /// Its arms (one for `bench --hosts`, two for a comparison).
    pub arms: Vec<HostsArm>,
    /// The targets: a `HOST:PATH` is that host's only (split over the
    /// hosts of every arm, so it never goes to another arm), the others go
    /// to every host; none: each host's NVMe namespaces.
    pub targets: Vec<String>,
    /// `numio bench`'s arguments on every host.
    pub argv: Vec<String>,
    /// Runs of each arm.
    pub rounds: usize,
    /// How the hosts are reached.
    pub opts: FleetOptions,
}

/// What `numio bench --hosts` ran.
#[derive(Debug, Clone)]
pub struct BenchOutcome {
    /// Its arm with its runs (a run an interrupt cut short among them:
    /// the hosts sent what they measured).
    pub arm: Arm,
    /// Runs with I/O errors.
    pub failed_runs: usize,
    /// Runs in which a host did not report (their figures cover the
    /// hosts that did).
    pub partial_runs: usize,
}

impl FleetBench {
    /// The lines it shows as it goes ([`FleetView`]).
    pub fn view(&self) -> FleetView {
        FleetView {
            labels: self.arms.iter().map(|a| a.label.clone()).collect(),
            rounds: self.rounds,
            progress: report::fleet::Progress::new(Vec::new()),
        }
    }

    /// `numio bench --hosts`: its arm `rounds` times, each run told to
    /// `notes` as it goes (the hosts, their events, the run's outcome).
    pub fn bench(
        &self,
        interrupt: &AtomicBool,
        notes: &mut dyn FnMut(FleetNote<'_>),
    ) -> Result<BenchOutcome, FleetBenchError> {
        let mut r = self.run(false, interrupt, notes)?;
        let arm = r.arms.remove(0);
        Ok(BenchOutcome {
            arm,
            failed_runs: r.failed_runs,
            partial_runs: r.partial_runs,
        })
    }

    /// `numio compare` of two fleets: the arms interleaved, `rounds` runs
    /// each, a run that lacks a host failing the comparison; a run an
    /// interrupt cut short is left out. Each arm with its completed runs.
    pub fn compare(
        &self,
        interrupt: &AtomicBool,
        notes: &mut dyn FnMut(FleetNote<'_>),
    ) -> Result<Compared, FleetBenchError> {
        if let [a, b] = self.arms.as_slice() {
            if a.label == b.label {
                return Err(FleetBenchError::SameLabel {
                    label: a.label.clone(),
                });
            }
        }
        let arms = self.run(true, interrupt, notes)?.arms;
        Ok(Compared::new(arms, Vec::new(), interrupt))
    }

    /// The schedule of the arms on one [`FleetRunner`]; with `compare`, a
    /// run needs every host and a cut run is left out, otherwise it is
    /// kept.
    fn run(
        &self,
        compare: bool,
        interrupt: &AtomicBool,
        notes: &mut dyn FnMut(FleetNote<'_>),
    ) -> Result<Ran, FleetBenchError> {
        let (hosts, points, schedule) = self.plan(compare);
        // Each run's whole outcome, for its record's `raw`.
        let mut raws = HashMap::new();
        let mut keep = |n: FleetNote<'_>| {
            if let FleetNote::Ran { run, report } = &n {
                raws.insert(run.seq, serde_json::to_value(report));
            }
            notes(n);
        };
        let mut runner = FleetRunner {
            hosts,
            target: None,
            points,
            opts: self.opts.clone(),
            notes: &mut keep,
            partial_runs: 0,
        };
        let outcome = schedule.run_with(&mut runner, interrupt, &mut |_| {});
        let partial_runs = runner.partial_runs;
        let mut outcome = outcome.map_err(|e| self.error(e))?;
        let mut failed_runs = outcome.failed_runs;
        let cut = outcome
            .interrupted
            .take()
            .and_then(|i| Some((i.run, i.partial?)));
        if let (Some((run, p)), false) = (cut, compare) {
            failed_runs += usize::from(p.had_errors);
            outcome.arms[run.arm].runs.push(p.record);
        }
        for r in outcome.arms.iter_mut().flat_map(|a| &mut a.runs) {
            if let Some(raw) = raws.remove(&r.seq) {
                r.raw = Some(raw?);
            }
        }
        Ok(Ran {
            arms: outcome.arms,
            failed_runs,
            partial_runs,
        })
    }

    /// The hosts with their targets, each arm's point on them (with
    /// `compare`, needing every host) and the schedule of the arms.
    fn plan(&self, compare: bool) -> (Vec<HostRun>, HashMap<String, FleetPoint>, Schedule) {
        let all: Vec<Host> = self
            .arms
            .iter()
            .flat_map(|a| a.hosts.iter().cloned())
            .collect();
        let per_host = fleet::targets_per_host(&self.targets, &all);
        let hosts = all
            .into_iter()
            .zip(per_host)
            .map(|(host, targets)| HostRun {
                host,
                targets,
                connect: None,
            })
            .collect();
        let (mut points, mut arms, mut first_host) = (HashMap::new(), Vec::new(), 0);
        for a in &self.arms {
            let point = FleetPoint {
                initiators: a.hosts.len(),
                first_host,
                every_host: compare,
                argv: self.argv.clone(),
                target_cpus: None,
            };
            first_host += a.hosts.len();
            points.insert(a.label.clone(), point);
            arms.push(LiveArm {
                label: a.label.clone(),
                spec: a.spec(),
                placement: Default::default(),
                opts: engine::RunOptions::default(),
                settle_group: 0,
            });
        }
        let schedule = Schedule {
            arms,
            rounds: self.rounds,
        };
        (hosts, points, schedule)
    }

    /// The error of a schedule, worded as the fleet's (no host ran, a host
    /// missing from a comparison) where a fleet run failed.
    fn error(&self, e: SessionError) -> FleetBenchError {
        let SessionError::Run { run, label, source } = e else {
            return FleetBenchError::Session(e);
        };
        match source.downcast::<FleetSweepError>().map(|f| *f) {
            Ok(FleetSweepError::NoInitiator(failures)) if self.arms.len() == 1 => {
                FleetBenchError::NoHost { failures }
            }
            Ok(FleetSweepError::NoInitiator(failures)) => {
                FleetBenchError::ArmNoHost { label, failures }
            }
            Ok(f) => FleetBenchError::Fleet(f),
            Err(source) => FleetBenchError::Session(SessionError::Run { run, label, source }),
        }
    }
}

/// The lines a bench across hosts shows on stderr as it goes: which run
/// starts (`fleet run 2 of 3`; a comparison's `round 1 of 5: LABEL`), then
/// its hosts' events and live IOPS (`report::fleet::Progress`, afresh
/// for each run's hosts).
#[derive(Debug)]
pub struct FleetView {
    labels: Vec<String>,
    rounds: usize,
    progress: report::fleet::Progress,
}

impl FleetView {
    /// The line `n` makes, if it makes one now.
    pub fn line(&mut self, n: &FleetNote<'_>) -> Option<String> {
        match n {
            FleetNote::Hosts { run, hosts } => {
                let labels = hosts.iter().map(|h| h.host.label.clone()).collect();
                self.progress = report::fleet::Progress::new(labels);
                match self.labels.as_slice() {
                    [_] => (run.total > 1)
                        .then(|| format!("numio: fleet run {} of {}", run.seq, run.total)),
                    arms => Some(format!(
                        "numio: round {} of {}: {}",
                        run.round + 1,
                        self.rounds,
                        arms[run.arm]
                    )),
                }
            }
            FleetNote::Fleet(e) => self.progress.line(e),
            _ => None,
        }
    }
}

/// The arms a [`FleetBench`] ran, with its counts.
struct Ran {
    arms: Vec<Arm>,
    failed_runs: usize,
    partial_runs: usize,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fleet_arms_take_hosts_and_a_label() {
        let a = HostsArm::parse("--a", "hosts=root@a,b:22,label=old").unwrap();
        assert_eq!(a.label, "old");
        assert_eq!(a.hosts.len(), 2);
        assert_eq!(a.spec(), "hosts=root@a,b:22");
        let b = HostsArm::parse("--b", "hosts=c").unwrap();
        assert_eq!(b.label, "c");
        let e = HostsArm::parse("--b", "policy=local").unwrap_err();
        assert!(
            e.to_string().contains("the other arm names hosts too"),
            "{e}"
        );
        assert!(HostsArm::parse("--a", "hosts=label=x").is_err());
        assert!(HostsArm::is_hosts("hosts=a") && !HostsArm::is_hosts("policy=local"));
    }

    #[test]
    fn the_hosts_bench_takes_the_command_line_after_the_verb_less_the_arms() {
        let words = |w: &str| w.split(' ').map(String::from).collect::<Vec<_>>();
        let all = words("numio bench /f --hosts a,b --iodepth 4");
        assert_eq!(
            bench_argv(&all, "bench"),
            Some(words("/f --hosts a,b --iodepth 4"))
        );
        let all = words("numio compare --a hosts=a --b=hosts=b --fio-numa-auto /f --rw read");
        assert_eq!(bench_argv(&all, "compare"), Some(words("/f --rw read")));
        assert_eq!(bench_argv(&all, "sweep"), None);
    }

    #[test]
    fn each_run_says_which_it_is_then_shows_its_own_hosts() {
        let arm = |text: &str| HostsArm::parse("--a", text).unwrap();
        let mut fleet = FleetBench {
            arms: vec![arm("hosts=a,label=one"), arm("hosts=b,c")],
            targets: Vec::new(),
            argv: Vec::new(),
            rounds: 5,
            opts: FleetOptions::default(),
        };
        let runs: Vec<HostRun> = fleet.arms[1]
            .hosts
            .iter()
            .map(|host| HostRun {
                host: host.clone(),
                targets: Vec::new(),
                connect: None,
            })
            .collect();
        let run = |seq, arm, round| crate::RunInfo {
            seq,
            total: 10,
            arm,
            round,
        };
        let hosts = |run| FleetNote::Hosts { run, hosts: &runs };
        let mut view = fleet.view();
        assert_eq!(
            view.line(&hosts(run(4, 1, 1))).as_deref(),
            Some("numio: round 2 of 5: b,c")
        );
        let start = FleetNote::Fleet(fleet::FleetEvent::Starting {
            at_unix_ns: 0,
            hosts: 2,
        });
        assert_eq!(
            view.line(&start).as_deref(),
            Some("numio: 2 host(s) start together")
        );
        fleet.arms.truncate(1);
        let mut view = fleet.view();
        let line = |v: &mut FleetView, r| v.line(&hosts(r));
        assert_eq!(
            line(&mut view, run(2, 0, 1)).as_deref(),
            Some("numio: fleet run 2 of 10")
        );
        let once = crate::RunInfo::SINGLE;
        assert_eq!(line(&mut view, once), None, "one run: no line");
    }

    /// A host that cannot be reached: the run fails at once (no ssh
    /// program), worded as the fleet words it.
    #[test]
    fn a_fleet_where_no_host_ran_says_so() {
        let fleet = FleetBench {
            arms: vec![HostsArm::parse("--a", "hosts=h1").unwrap()],
            targets: Vec::new(),
            argv: Vec::new(),
            rounds: 1,
            opts: FleetOptions {
                ssh: "/nonexistent/numio-test-ssh".into(),
                ..FleetOptions::default()
            },
        };
        let mut ran = Vec::new();
        let e = fleet
            .bench(&AtomicBool::new(false), &mut |n| {
                if let FleetNote::Ran { report, .. } = n {
                    ran.push(report.hosts.len());
                }
            })
            .unwrap_err();
        assert!(
            e.to_string().starts_with("no host of the fleet ran: "),
            "{e}"
        );
        assert_eq!(ran, [1], "the run's outcome is told first");
    }
}
