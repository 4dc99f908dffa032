//! A target host of an NVMe-oF study: `numio agent` started over ssh runs
//! `numio serve` there, answers CPU samples while initiators measure, and
//! stops it (SIGTERM, then the agent exits) when told to, when the
//! controller goes away, or when this session is dropped on an error.

use std::sync::mpsc::{self, Receiver};
use std::time::Duration;

use crate::hosts::Host;
pub use crate::proto::CpuSample;
use crate::proto::{check_hello, FromAgent, HelloMismatch, ToAgent};
use crate::run::{login_failure, said, FleetOptions, LoginFailure};
use crate::ssh::{ssh_args, Incoming, PushError, Remote};

/// Why a target host could not be started or sampled. `doing` says what
/// the agent was asked to do when it failed (`saying hello`).
#[derive(Debug, thiserror::Error)]
pub enum TargetError {
    /// `--push` could not copy numio there.
    #[error(transparent)]
    Push(#[from] PushError),
    /// ssh could not be started.
    #[error("cannot run {ssh}: {source}")]
    Spawn {
        /// The ssh program.
        ssh: String,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// The agent runs another numio.
    #[error(transparent)]
    Hello(#[from] HelloMismatch),
    /// The agent answered something else than asked for.
    #[error("it said {said} instead of {expected}")]
    OutOfTurn {
        /// Its message, as sent.
        said: String,
        /// What was expected (`hello`).
        expected: &'static str,
    },
    /// `numio serve` there failed; its message.
    #[error("numio serve: {message}")]
    Serve {
        /// What the agent said.
        message: String,
    },
    /// A protocol line over the limit.
    #[error("it sent a protocol line of {len_bytes} bytes while {doing}, over the limit of {} MiB", crate::lines::AGENT_LINE_MAX_BYTES >> 20)]
    TooLong {
        /// The line's length.
        len_bytes: u64,
        /// What it was doing.
        doing: &'static str,
    },
    /// ssh failed, or found no numio there, before the agent answered.
    #[error(transparent)]
    Login(#[from] LoginFailure),
    /// The connection ended.
    #[error("the connection ended while {doing} (exit status {}){}", code.map_or("none".into(), |c| c.to_string()), said(tail))]
    Closed {
        /// What it was doing.
        doing: &'static str,
        /// ssh's exit code, if it exited.
        code: Option<i32>,
        /// The last lines of its stderr.
        tail: String,
    },
    /// No answer in time.
    #[error("no answer in {}s while {doing}", timeout.as_secs())]
    Timeout {
        /// What it was doing.
        doing: &'static str,
        /// How long numio waited.
        timeout: Duration,
    },
}

/// A serving target.
pub struct TargetSession {
    remote: Remote,
    events: Receiver<(usize, Incoming)>,
    /// Its host.
    pub host: Host,
    /// Its host name.
    pub hostname: String,
    /// What `numio serve` said while starting.
    pub lines: Vec<String>,
    /// How it was reached (for the error messages).
    opts: FleetOptions,
}

/// What the target spent between two samples.
#[derive(Debug, Clone, Copy, PartialEq, Default, serde::Serialize, serde::Deserialize)]
pub struct TargetCpu {
    /// Seconds between the samples.
    pub wall_s: f64,
    /// The serve process's CPU time over them, seconds.
    pub process_cpu_s: f64,
    /// Cores the target process kept busy (CPU seconds per second).
    pub process_cores: f64,
    /// The share of the target machine's CPU left unused, percent.
    pub headroom_pct: f64,
}

/// What a served target and its machine spent between two samples.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TargetSpend {
    /// Time between the samples on the target host's clock, ns.
    pub wall_ns: u64,
    /// The serve process's CPU time and context switches.
    pub process: results::ProcessCounters,
    /// The machine's CPU time, by kind.
    pub machine: results::CpuSplit,
}

impl CpuSample {
    /// From `self` to `later`.
    pub fn until(&self, later: &CpuSample) -> TargetSpend {
        TargetSpend {
            wall_ns: later.at_unix_ns.saturating_sub(self.at_unix_ns),
            process: later.process.since(&self.process),
            machine: later.machine.since(&self.machine),
        }
    }
}

impl TargetSession {
    /// Starts `numio serve argv` on `host`; returns once it is ready.
    pub fn start(
        host: &Host,
        argv: &[String],
        o: &FleetOptions,
    ) -> Result<TargetSession, TargetError> {
        let numio = match &o.push {
            Some(exe) => crate::ssh::push(&o.ssh, host, &o.ssh_args, exe, &o.version)?,
            None => o.remote_numio.clone(),
        };
        let (tx, events) = mpsc::channel();
        let args = ssh_args(host, &o.ssh_args, &[numio.clone(), "agent".into()]);
        let remote = Remote::spawn(&o.ssh, &args, 0, tx).map_err(|source| TargetError::Spawn {
            ssh: o.ssh.clone(),
            source,
        })?;
        let mut s = TargetSession {
            remote,
            events,
            host: host.clone(),
            hostname: String::new(),
            lines: Vec::new(),
            opts: o.clone(),
        };
        match s.next(o.connect_timeout, "saying hello")? {
            FromAgent::Hello {
                version,
                protocol,
                hostname,
            } => {
                check_hello(&version, protocol, &o.version)?;
                s.hostname = hostname;
            }
            other => return Err(out_of_turn(&other, "hello")),
        }
        s.remote.send(&ToAgent::Serve {
            argv: argv.to_vec(),
        });
        match s.next(o.prepare_timeout, "starting numio serve")? {
            FromAgent::Serving { lines } => s.lines = lines,
            FromAgent::Error { message } => return Err(TargetError::Serve { message }),
            other => return Err(out_of_turn(&other, "serving")),
        }
        Ok(s)
    }

    /// The target's CPU now.
    pub fn cpu(&mut self) -> Result<CpuSample, TargetError> {
        self.remote.send(&ToAgent::CpuSample);
        match self.next(Duration::from_secs(30), "answering a CPU sample")? {
            FromAgent::Cpu(c) => Ok(c),
            FromAgent::Error { message } => Err(TargetError::Serve { message }),
            other => Err(out_of_turn(&other, "a CPU sample")),
        }
    }

    /// Stops the target and waits for the agent to exit.
    pub fn stop(mut self) {
        self.remote.send(&ToAgent::Stop);
        self.remote.finish(Duration::from_secs(15));
    }

    fn next(&mut self, timeout: Duration, doing: &'static str) -> Result<FromAgent, TargetError> {
        match self.events.recv_timeout(timeout) {
            Ok((_, Incoming::Message(m))) => Ok(m),
            Ok((_, Incoming::TooLong { len_bytes })) => {
                Err(TargetError::TooLong { len_bytes, doing })
            }
            Ok((_, Incoming::Closed)) | Err(mpsc::RecvTimeoutError::Disconnected) => {
                let code = self
                    .remote
                    .finish(Duration::from_secs(2))
                    .and_then(|s| s.code());
                let tail = self.remote.stderr_tail();
                Err(match login_failure(code, &tail, &self.opts) {
                    Some(why) => why.into(),
                    None => TargetError::Closed { doing, code, tail },
                })
            }
            Err(mpsc::RecvTimeoutError::Timeout) => Err(TargetError::Timeout { doing, timeout }),
        }
    }
}

/// The agent said `said` where `expected` was due.
fn out_of_turn(said: &FromAgent, expected: &'static str) -> TargetError {
    TargetError::OutOfTurn {
        said: said.line(),
        expected,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_say_what_the_agent_was_doing() {
        let e = TargetError::Closed {
            doing: "saying hello",
            code: Some(1),
            tail: "boom".into(),
        };
        assert_eq!(
            e.to_string(),
            "the connection ended while saying hello (exit status 1) (it said: boom)"
        );
        let o = FleetOptions {
            version: "1.2".into(),
            ..FleetOptions::default()
        };
        let e: TargetError = login_failure(Some(127), "", &o).unwrap().into();
        assert!(
            matches!(&e, TargetError::Login(LoginFailure::NoNumio { remote_numio, version, tail })
                if remote_numio == "numio" && version == "1.2" && tail.is_empty()),
            "{e:?}"
        );
        assert_eq!(
            e.to_string(),
            "numio is not there or not executable; install numio 1.2 on it, pass --remote-numio PATH, or --push"
        );
        assert_eq!(login_failure(Some(1), "", &o), None);
    }

    #[test]
    fn cpu_between_samples() {
        let a = CpuSample {
            at_unix_ns: 1_000_000_000,
            ..CpuSample::default()
        };
        let mut b = CpuSample {
            at_unix_ns: 3_000_000_000,
            ..CpuSample::default()
        };
        b.process.user_ns = 2_000_000_000;
        b.process.system_ns = 1_000_000_000;
        b.machine.user_ns = 2_000_000_000;
        b.machine.idle_ns = 6_000_000_000;
        let s = a.until(&b);
        assert_eq!(s.wall_ns, 2_000_000_000);
        assert_eq!(s.process.cpu_ns(), 3_000_000_000);
        assert_eq!(s.machine.headroom_pct(), Some(75.0));
        // A sample taken before a later one the wrong way round: nothing
        // spent, never a wrapped count.
        assert_eq!(b.until(&a).process.cpu_ns(), 0);
    }
}
