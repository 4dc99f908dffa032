//! The controller's side of a fleet run: start every host's agent, take
//! its hello (a numio of another version is refused), measure its clock
//! offset, have it plan and open its targets, and once every host that is
//! still there is ready (the barrier), start them all at one instant of
//! the controller's clock, each told the instant in its own. Then collect
//! progress and results. A host that cannot be reached, has no numio, or
//! dies on the way is named with the reason; the others go on and the run
//! is partial.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use results::RunResult;

use crate::clock::{self, Offset, Sample};
use crate::hosts::Host;
use crate::proto::{FromAgent, ToAgent};
use crate::ssh::{ssh_args, Incoming, PushError, Remote};

/// How a fleet run reaches its hosts.
#[derive(Debug, Clone)]
pub struct FleetOptions {
    /// The ssh program.
    pub ssh: String,
    /// ssh arguments for every host (`--ssh-opt`).
    pub ssh_args: Vec<String>,
    /// numio on the hosts (a name on PATH or a path).
    pub remote_numio: String,
    /// Copy this numio (the file) to every host first and run that.
    pub push: Option<std::path::PathBuf>,
    /// This numio's version: an agent must have the same.
    pub version: String,
    /// Pings for each host's clock offset.
    pub pings: usize,
    /// How long a host may take to answer hello and each ping.
    pub connect_timeout: Duration,
    /// How long a host may take to plan and open its targets.
    pub prepare_timeout: Duration,
    /// Least time between the barrier and the start.
    pub start_lead: Duration,
    /// A running host that says nothing this long (its progress comes
    /// five times a second) is taken for lost: a network partition or a
    /// hung host.
    pub silence_timeout: Duration,
}

impl Default for FleetOptions {
    fn default() -> Self {
        FleetOptions {
            ssh: "ssh".into(),
            ssh_args: Vec::new(),
            remote_numio: "numio".into(),
            push: None,
            version: String::new(),
            pings: 8,
            connect_timeout: Duration::from_secs(30),
            prepare_timeout: Duration::from_secs(120),
            start_lead: Duration::from_millis(300),
            silence_timeout: Duration::from_secs(60),
        }
    }
}

/// One host and what it runs.
#[derive(Debug, Clone)]
pub struct HostRun {
    /// The host.
    pub host: Host,
    /// Its targets (empty: its NVMe namespaces).
    pub targets: Vec<String>,
    /// An `nvme-tcp://` namespace its Linux host connects to for the run;
    /// the block device made is its one target.
    pub connect: Option<String>,
}

/// How one host's part ended.
#[derive(Debug, Clone)]
pub enum HostOutcome {
    /// It ran and sent its result.
    Done {
        /// Its result.
        result: Box<RunResult>,
        /// Its clock against the controller's.
        offset: Offset,
        /// When its workers began measuring, minus the common start, in
        /// the controller's clock (ns; `None` when it did not say).
        start_skew_ns: Option<i64>,
    },
    /// It did not: why.
    Failed {
        /// What went wrong and what to do.
        reason: String,
    },
}

/// What a fleet run shows while it goes.
#[derive(Debug)]
pub enum FleetEvent<'a> {
    /// A host answered and its clock was measured.
    Connected {
        /// Which.
        host: &'a Host,
        /// Its host name.
        hostname: &'a str,
        /// Its clock offset.
        offset: Offset,
    },
    /// A host planned and opened its targets.
    Ready {
        /// Which.
        host: &'a Host,
        /// Its targets.
        targets: &'a [String],
        /// Its jobs.
        jobs: usize,
    },
    /// Every host still there is ready: they start at this instant of the
    /// controller's clock (ns since the epoch).
    Starting {
        /// The instant.
        at_unix_ns: u64,
        /// Hosts starting.
        hosts: usize,
    },
    /// A host's live counters.
    Progress {
        /// Which.
        host: &'a Host,
        /// Seconds since it began measuring.
        elapsed_s: f64,
        /// Its IOPS over the last interval.
        iops: f64,
        /// Its bandwidth over the last interval.
        bandwidth_bytes_per_s: f64,
    },
    /// A host is out of the run.
    Failed {
        /// Which.
        host: &'a Host,
        /// Why.
        reason: &'a str,
    },
}

/// Where one host is.
enum Phase {
    Hello,
    Ping(Vec<Sample>),
    Prepare,
    Ready,
    Running,
    Over(HostOutcome),
}

struct Slot {
    remote: Option<Remote>,
    phase: Phase,
    offset: Offset,
    deadline: Option<Instant>,
    measuring_ns: Option<u64>,
    hostname: String,
}

impl Slot {
    /// A host whose agent was started, waiting for its hello.
    fn started(remote: Remote, connect_timeout: Duration) -> Slot {
        Slot {
            remote: Some(remote),
            phase: Phase::Hello,
            offset: Offset::default(),
            deadline: Some(Instant::now() + connect_timeout),
            measuring_ns: None,
            hostname: String::new(),
        }
    }

    /// A host out of the run before its agent started.
    fn failed(reason: String) -> Slot {
        Slot {
            remote: None,
            phase: Phase::Over(HostOutcome::Failed { reason }),
            offset: Offset::default(),
            deadline: None,
            measuring_ns: None,
            hostname: String::new(),
        }
    }
}

/// The controller's clock, ns since the epoch.
pub fn now_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

/// Runs `argv` (the `numio bench` arguments) on every host of `hosts` at
/// once; returns each host's outcome, in order. `stop` (Ctrl-C) stops the
/// hosts' runs; they still send what they measured.
pub fn run(
    hosts: &[HostRun],
    argv: &[String],
    o: &FleetOptions,
    stop: &AtomicBool,
    observer: &mut dyn FnMut(FleetEvent<'_>),
) -> Vec<HostOutcome> {
    let (tx, rx) = mpsc::channel();
    let pushed = push_all(hosts, o);
    let mut slots: Vec<Slot> = hosts
        .iter()
        .enumerate()
        .map(|(i, h)| {
            let remote = match &pushed[i] {
                Some(Ok(path)) => path.clone(),
                None => o.remote_numio.clone(),
                Some(Err(e)) => return Slot::failed(e.to_string()),
            };
            let args = ssh_args(&h.host, &o.ssh_args, &[remote, "agent".into()]);
            match Remote::spawn(&o.ssh, &args, i, tx.clone()) {
                Ok(r) => Slot::started(r, o.connect_timeout),
                Err(e) => Slot::failed(format!("cannot run {}: {e}", o.ssh)),
            }
        })
        .collect();
    drop(tx);
    for (i, s) in slots.iter().enumerate() {
        if let Phase::Over(HostOutcome::Failed { reason }) = &s.phase {
            observer(FleetEvent::Failed {
                host: &hosts[i].host,
                reason,
            });
        }
    }
    let mut start_ns: Option<u64> = None;
    let mut stop_sent = false;
    loop {
        if slots.iter().all(|s| matches!(s.phase, Phase::Over(_))) {
            break;
        }
        if start_ns.is_none()
            && slots
                .iter()
                .all(|s| matches!(s.phase, Phase::Ready | Phase::Over(_)))
        {
            start_ns = Some(start_all(&mut slots, o, &mut *observer));
        }
        if stop.load(Ordering::Relaxed) && !stop_sent {
            stop_sent = true;
            for s in &mut slots {
                match s.phase {
                    Phase::Running => {
                        if let Some(r) = s.remote.as_mut() {
                            r.send(&ToAgent::Stop);
                        }
                    }
                    Phase::Over(_) => {}
                    _ => {
                        s.phase = Phase::Over(HostOutcome::Failed {
                            reason: "interrupted before it started".into(),
                        });
                        if let Some(r) = s.remote.as_mut() {
                            r.close();
                        }
                    }
                }
            }
        }
        let now = Instant::now();
        for (i, s) in slots.iter_mut().enumerate() {
            if s.deadline.is_some_and(|d| now >= d) && !matches!(s.phase, Phase::Over(_)) {
                let what = match s.phase {
                    Phase::Hello => "did not start numio agent in time".to_string(),
                    Phase::Ping(_) => "did not answer pings in time".to_string(),
                    Phase::Running => format!(
                        "said nothing for {} s mid-run (a network partition or a hung host): its result is lost",
                        o.silence_timeout.as_secs()
                    ),
                    _ => "did not plan and open its targets in time".to_string(),
                };
                fail(s, &hosts[i].host, what, &mut *observer);
            }
        }
        let (i, msg) = match rx.recv_timeout(Duration::from_millis(100)) {
            Ok(m) => m,
            Err(mpsc::RecvTimeoutError::Timeout) => continue,
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        };
        let s = &mut slots[i];
        if matches!(s.phase, Phase::Over(_)) {
            continue;
        }
        if matches!(s.phase, Phase::Running) {
            s.deadline = Some(Instant::now() + o.silence_timeout);
        }
        let host = &hosts[i];
        match msg {
            Incoming::Closed => {
                let status = s
                    .remote
                    .as_mut()
                    .and_then(|r| r.finish(Duration::from_secs(2)));
                let tail = s
                    .remote
                    .as_ref()
                    .map(Remote::stderr_tail)
                    .unwrap_or_default();
                let reason = closed_reason(&s.phase, status, &tail, o);
                fail(s, &host.host, reason, &mut *observer);
            }
            Incoming::Message(m) => on_message(s, host, argv, m, o, &mut *observer),
            Incoming::TooLong { len_bytes } => {
                let reason = format!(
                    "it sent a protocol line of {len_bytes} bytes, over the limit of {} MiB (fleet::lines::AGENT_LINE_MAX_BYTES): its result is lost; is it numio {}?",
                    crate::lines::AGENT_LINE_MAX_BYTES >> 20,
                    o.version
                );
                fail(s, &host.host, reason, &mut *observer);
            }
        }
    }
    for s in &mut slots {
        if let Some(r) = s.remote.as_mut() {
            r.finish(Duration::from_secs(5));
        }
    }
    slots
        .into_iter()
        .map(|s| match s.phase {
            Phase::Over(HostOutcome::Done { result, offset, .. }) => HostOutcome::Done {
                result,
                offset,
                start_skew_ns: match (s.measuring_ns, start_ns) {
                    (Some(m), Some(st)) => Some(offset.to_controller(m) as i64 - st as i64),
                    _ => None,
                },
            },
            Phase::Over(f) => f,
            _ => HostOutcome::Failed {
                reason: "its channel ended without a result".into(),
            },
        })
        .collect()
}

/// `--push`: copies numio to every host at once; `None` per host without
/// it.
fn push_all(hosts: &[HostRun], o: &FleetOptions) -> Vec<Option<Result<String, PushError>>> {
    let Some(exe) = &o.push else {
        return hosts.iter().map(|_| None).collect();
    };
    std::thread::scope(|s| {
        let jobs: Vec<_> = hosts
            .iter()
            .map(|h| {
                s.spawn(move || crate::ssh::push(&o.ssh, &h.host, &o.ssh_args, exe, &o.version))
            })
            .collect();
        jobs.into_iter()
            .map(|j| Some(j.join().unwrap_or(Err(PushError::Panicked))))
            .collect()
    })
}

fn fail(s: &mut Slot, host: &Host, reason: String, observer: &mut dyn FnMut(FleetEvent<'_>)) {
    observer(FleetEvent::Failed {
        host,
        reason: &reason,
    });
    if let Some(r) = s.remote.as_mut() {
        r.close();
    }
    s.deadline = None;
    s.phase = Phase::Over(HostOutcome::Failed { reason });
}

/// Why a host's agent never answered, by ssh's exit status.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LoginFailure {
    /// ssh itself failed (exit status 255).
    #[error(
        "ssh could not reach or log in to it{}; check the address, your keys and `ssh HOST true`",
        said(tail)
    )]
    Unreachable {
        /// The last lines ssh wrote to stderr.
        tail: String,
    },
    /// The remote shell found no numio to run (126, 127).
    #[error("{remote_numio} is not there or not executable{}; install numio {version} on it, pass --remote-numio PATH, or --push", said(tail))]
    NoNumio {
        /// numio on the host, as run.
        remote_numio: String,
        /// This numio's version.
        version: String,
        /// The last lines the remote shell wrote to stderr.
        tail: String,
    },
}

/// What ssh's exit status `code` says when the agent never answered: ssh
/// itself failed (255), or the remote shell found no numio to run
/// (126, 127). `tail` is the last lines they wrote.
pub(crate) fn login_failure(
    code: Option<i32>,
    tail: &str,
    o: &FleetOptions,
) -> Option<LoginFailure> {
    let tail = tail.to_string();
    match code {
        Some(255) => Some(LoginFailure::Unreachable { tail }),
        Some(126 | 127) => Some(LoginFailure::NoNumio {
            remote_numio: o.remote_numio.clone(),
            version: o.version.clone(),
            tail,
        }),
        _ => None,
    }
}

/// ` (it said: TAIL)`, or nothing for an empty tail.
pub(crate) fn said(tail: &str) -> String {
    if tail.is_empty() {
        String::new()
    } else {
        format!(" (it said: {tail})")
    }
}

/// Why a host's channel closed before its result, from the phase it was
/// in, ssh's exit status and the last lines of stderr.
fn closed_reason(
    phase: &Phase,
    status: Option<std::process::ExitStatus>,
    tail: &str,
    o: &FleetOptions,
) -> String {
    let code = status.and_then(|s| s.code());
    if let (Phase::Hello, Some(why)) = (phase, login_failure(code, tail, o)) {
        return why.to_string();
    }
    let said = said(tail);
    match (phase, code) {
        (Phase::Hello, _) => format!(
            "{} agent ended before saying hello (exit status {}){said}; is it numio {}?",
            o.remote_numio,
            code.map_or("none".to_string(), |c| c.to_string()),
            o.version
        ),
        (Phase::Running, _) => format!(
            "the connection ended mid-run (exit status {}){said}: its result is lost",
            code.map_or("none".to_string(), |c| c.to_string())
        ),
        _ => format!(
            "the connection ended before the run (exit status {}){said}",
            code.map_or("none".to_string(), |c| c.to_string())
        ),
    }
}

fn on_message(
    s: &mut Slot,
    host: &HostRun,
    argv: &[String],
    m: FromAgent,
    o: &FleetOptions,
    observer: &mut dyn FnMut(FleetEvent<'_>),
) {
    let h = &host.host;
    let send = |s: &mut Slot, m: &ToAgent| s.remote.as_mut().is_some_and(|r| r.send(m));
    match (&mut s.phase, m) {
        (_, FromAgent::Error { message }) => fail(s, h, message, observer),
        (
            Phase::Hello,
            FromAgent::Hello {
                version,
                protocol,
                hostname,
            },
        ) => {
            if let Err(reason) = crate::proto::check_hello(&version, protocol, &o.version) {
                return fail(s, h, reason.to_string(), observer);
            }
            s.phase = Phase::Ping(Vec::with_capacity(o.pings));
            s.hostname = hostname;
            send(s, &ToAgent::Ping { sent_ns: now_ns() });
        }
        (Phase::Ping(samples), FromAgent::Pong { sent_ns, agent_ns }) => {
            samples.push(Sample {
                sent_ns,
                agent_ns,
                received_ns: now_ns(),
            });
            if samples.len() < o.pings.max(1) {
                send(s, &ToAgent::Ping { sent_ns: now_ns() });
                return;
            }
            s.offset = clock::estimate(samples).unwrap_or_default();
            s.phase = Phase::Prepare;
            s.deadline = Some(Instant::now() + o.prepare_timeout);
            observer(FleetEvent::Connected {
                host: h,
                hostname: &s.hostname,
                offset: s.offset,
            });
            send(
                s,
                &ToAgent::Prepare {
                    argv: argv.to_vec(),
                    targets: host.targets.clone(),
                    connect: host.connect.clone(),
                },
            );
        }
        (Phase::Prepare, FromAgent::Ready { targets, jobs }) => {
            s.phase = Phase::Ready;
            s.deadline = None;
            observer(FleetEvent::Ready {
                host: h,
                targets: &targets,
                jobs,
            });
        }
        (Phase::Running, FromAgent::Measuring { at_unix_ns }) => s.measuring_ns = Some(at_unix_ns),
        (
            Phase::Running,
            FromAgent::Progress {
                elapsed_s,
                iops,
                bandwidth_bytes_per_s,
            },
        ) => observer(FleetEvent::Progress {
            host: h,
            elapsed_s,
            iops,
            bandwidth_bytes_per_s,
        }),
        (Phase::Running, FromAgent::Result { result }) => {
            s.phase = Phase::Over(HostOutcome::Done {
                result,
                offset: s.offset,
                start_skew_ns: None,
            });
            if let Some(r) = s.remote.as_mut() {
                r.close();
            }
        }
        (_, other) => {
            let reason = format!("it said something out of turn: {}", other.line());
            fail(s, h, reason, observer);
        }
    }
}

/// The barrier passed: starts every ready host at one instant, each told
/// it in its own clock; returns the instant (controller's clock).
fn start_all(
    slots: &mut [Slot],
    o: &FleetOptions,
    observer: &mut dyn FnMut(FleetEvent<'_>),
) -> u64 {
    let max_rtt = slots
        .iter()
        .filter(|s| matches!(s.phase, Phase::Ready))
        .map(|s| s.offset.rtt_ns)
        .max()
        .unwrap_or(0);
    let lead = (o.start_lead.as_nanos() as u64).max(4 * max_rtt);
    let at = now_ns() + lead;
    let mut n = 0;
    for s in slots.iter_mut() {
        if matches!(s.phase, Phase::Ready) {
            let msg = ToAgent::Start {
                at_unix_ns: s.offset.to_agent(at),
            };
            if s.remote.as_mut().is_some_and(|r| r.send(&msg)) {
                s.phase = Phase::Running;
                s.deadline = Some(Instant::now() + Duration::from_nanos(lead) + o.silence_timeout);
                n += 1;
            }
        }
    }
    observer(FleetEvent::Starting {
        at_unix_ns: at,
        hosts: n,
    });
    at
}
