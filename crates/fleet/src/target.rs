//! A target host of an NVMe-oF study: `numio agent` started over ssh runs
//! `numio serve` there, answers CPU samples while initiators measure, and
//! stops it (SIGTERM, then the agent exits) when told to, when the
//! controller goes away, or when this session is dropped on an error.

use std::sync::mpsc::{self, Receiver};
use std::time::Duration;

use crate::hosts::Host;
pub use crate::proto::CpuSample;
use crate::proto::{check_hello, FromAgent, ToAgent};
use crate::run::{login_failure, said, FleetOptions};
use crate::ssh::{ssh_args, Incoming, Remote};

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

impl CpuSample {
    /// From `self` to `later`.
    pub fn until(&self, later: &CpuSample) -> TargetCpu {
        let wall_s = later.at_unix_ns.saturating_sub(self.at_unix_ns) as f64 / 1e9;
        let process_cpu_s = later.process_ns.saturating_sub(self.process_ns) as f64 / 1e9;
        let busy = later.machine_busy_ns.saturating_sub(self.machine_busy_ns) as f64;
        let total = later.machine_total_ns.saturating_sub(self.machine_total_ns) as f64;
        TargetCpu {
            wall_s,
            process_cpu_s,
            process_cores: if wall_s > 0.0 {
                process_cpu_s / wall_s
            } else {
                0.0
            },
            headroom_pct: if total > 0.0 {
                100.0 * (1.0 - busy / total)
            } else {
                0.0
            },
        }
    }
}

impl TargetSession {
    /// Starts `numio serve argv` on `host`; returns once it is ready.
    pub fn start(host: &Host, argv: &[String], o: &FleetOptions) -> Result<TargetSession, String> {
        let numio = match &o.push {
            Some(exe) => crate::ssh::push(&o.ssh, host, &o.ssh_args, exe, &o.version)?,
            None => o.remote_numio.clone(),
        };
        let (tx, events) = mpsc::channel();
        let args = ssh_args(host, &o.ssh_args, &[numio.clone(), "agent".into()]);
        let remote = Remote::spawn(&o.ssh, &args, 0, tx)
            .map_err(|e| format!("cannot run {}: {e}", o.ssh))?;
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
            other => return Err(format!("it said {} instead of hello", other.line())),
        }
        s.remote.send(&ToAgent::Serve {
            argv: argv.to_vec(),
        });
        match s.next(o.prepare_timeout, "starting numio serve")? {
            FromAgent::Serving { lines } => s.lines = lines,
            FromAgent::Error { message } => return Err(format!("numio serve: {message}")),
            other => return Err(format!("it said {} instead of serving", other.line())),
        }
        Ok(s)
    }

    /// The target's CPU now.
    pub fn cpu(&mut self) -> Result<CpuSample, String> {
        self.remote.send(&ToAgent::CpuSample);
        match self.next(Duration::from_secs(30), "answering a CPU sample")? {
            FromAgent::Cpu(c) => Ok(c),
            FromAgent::Error { message } => Err(format!("numio serve: {message}")),
            other => Err(format!("it said {} instead of a CPU sample", other.line())),
        }
    }

    /// Stops the target and waits for the agent to exit.
    pub fn stop(mut self) {
        self.remote.send(&ToAgent::Stop);
        self.remote.finish(Duration::from_secs(15));
    }

    fn next(&mut self, timeout: Duration, doing: &str) -> Result<FromAgent, String> {
        match self.events.recv_timeout(timeout) {
            Ok((_, Incoming::Message(m))) => Ok(m),
            Ok((_, Incoming::TooLong { len_bytes })) => Err(format!(
                "it sent a protocol line of {len_bytes} bytes while {doing}, over the limit of {} MiB",
                crate::lines::AGENT_LINE_MAX_BYTES >> 20
            )),
            Ok((_, Incoming::Closed)) | Err(mpsc::RecvTimeoutError::Disconnected) => {
                let code = self
                    .remote
                    .finish(Duration::from_secs(2))
                    .and_then(|s| s.code());
                let said = said(&self.remote.stderr_tail());
                Err(login_failure(code, &said, &self.opts).unwrap_or_else(|| {
                    format!(
                        "the connection ended while {doing} (exit status {}){said}",
                        code.map_or("none".into(), |c| c.to_string())
                    )
                }))
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {
                Err(format!("no answer in {}s while {doing}", timeout.as_secs()))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_between_samples() {
        let a = CpuSample {
            at_unix_ns: 1_000_000_000,
            process_ns: 0,
            machine_busy_ns: 0,
            machine_total_ns: 0,
        };
        let b = CpuSample {
            at_unix_ns: 3_000_000_000,
            process_ns: 3_000_000_000,
            machine_busy_ns: 2_000_000_000,
            machine_total_ns: 8_000_000_000,
        };
        let c = a.until(&b);
        assert_eq!(
            (c.wall_s, c.process_cpu_s, c.process_cores),
            (2.0, 3.0, 1.5)
        );
        assert_eq!(c.headroom_pct, 75.0);
    }
}
