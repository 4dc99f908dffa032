//! What the controlling numio and `numio agent` say to each other over the
//! ssh channel: one JSON object per line, the agent's on its stdout, the
//! controller's on the agent's stdin. Nothing else travels: no secrets
//! (ssh carries the authentication), no listening socket.
//!
//! The order: the agent says `hello`; the controller pings a few times
//! (the clock offset), sends `prepare` (the bench arguments and this
//! host's targets); the agent plans and opens its targets and says
//! `ready`; once every host is ready the controller sends `start` with an
//! instant in the agent's own clock; the agent runs then, reports
//! `measuring` and `progress`, and ends with `result` (or `error`). The
//! agent stops its run and exits when its stdin closes: when the ssh
//! session ends, nothing is left running.

use results::RunResult;
use serde::{Deserialize, Serialize};

/// Version of this protocol; the hello of an agent with another one is
/// refused.
pub const PROTOCOL: u32 = 2;

/// Controller → agent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ToAgent {
    /// Answer with [`FromAgent::Pong`] at once.
    Ping {
        /// The controller's clock when it sent this, ns since the epoch.
        sent_ns: u64,
    },
    /// Plan and open the targets; answer `ready` or `error`.
    Prepare {
        /// The `numio bench` arguments (after `bench`) as the user gave
        /// them; the fleet's own flags among them are ignored.
        argv: Vec<String>,
        /// This host's targets (empty: its NVMe namespaces).
        targets: Vec<String>,
        /// An `nvme-tcp://` namespace for the Linux host to connect to
        /// (`numio connect`, held until the agent exits): its block device
        /// is then the one target.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        connect: Option<String>,
    },
    /// Start measuring at `at_unix_ns` of the agent's clock.
    Start {
        /// The instant, ns since the epoch, in the agent's clock.
        at_unix_ns: u64,
    },
    /// Stop the run now (Ctrl-C at the controller); a serving agent stops
    /// its target and exits.
    Stop,
    /// Start `numio serve` with `argv` here and keep it until stdin
    /// closes; answer `serving` once it is ready, or `error`.
    Serve {
        /// `numio serve`'s arguments.
        argv: Vec<String>,
    },
    /// Answer with [`FromAgent::Cpu`]: the serving target's CPU so far.
    CpuSample,
}

/// A serving target's CPU at one instant (the agent's answer to
/// [`ToAgent::CpuSample`]): counts since the process started and since the
/// machine booted, so that two samples give what was spent between them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct CpuSample {
    /// The target host's clock, ns since the epoch.
    pub at_unix_ns: u64,
    /// The serve process's CPU time and context switches.
    pub process: results::ProcessCounters,
    /// The machine's CPU time (all CPUs), by kind.
    pub machine: results::CpuSplit,
}

/// Agent → controller.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum FromAgent {
    /// The first line.
    Hello {
        /// `numio --version`'s version.
        version: String,
        /// [`PROTOCOL`].
        protocol: u32,
        /// The host's name.
        hostname: String,
    },
    /// Answer to a ping.
    Pong {
        /// The ping's `sent_ns`.
        sent_ns: u64,
        /// The agent's clock when it answered, ns since the epoch.
        agent_ns: u64,
    },
    /// Targets planned and checked; waiting for `start`.
    Ready {
        /// The targets the host will run, with their NUMA placement.
        targets: Vec<String>,
        /// Workers (jobs) over all targets.
        jobs: usize,
    },
    /// The workers passed their start barrier.
    Measuring {
        /// When, in the agent's clock, ns since the epoch.
        at_unix_ns: u64,
    },
    /// Live counters, about five times a second.
    Progress {
        /// Seconds since measuring began.
        elapsed_s: f64,
        /// I/Os per second over the last interval.
        iops: f64,
        /// Bytes per second over the last interval.
        bandwidth_bytes_per_s: f64,
    },
    /// The run's whole result.
    Result {
        /// As `numio bench --json` prints it.
        result: Box<RunResult>,
    },
    /// `numio serve` is ready.
    Serving {
        /// What it said while starting (listeners, subsystems, reactors).
        lines: Vec<String>,
    },
    /// CPU time so far: the target process's and the machine's.
    Cpu(CpuSample),
    /// The agent cannot go on; the last line it sends.
    Error {
        /// What went wrong, with the fix where there is one.
        message: String,
    },
}

/// An agent that runs another numio, or speaks another protocol.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("it runs numio {version} (agent protocol {protocol}), this is numio {want} (protocol {PROTOCOL}): install numio {want} there, or pass --push to copy this one over")]
pub struct HelloMismatch {
    /// The agent's numio version.
    pub version: String,
    /// The agent's protocol.
    pub protocol: u32,
    /// This numio's version.
    pub want: String,
}

/// The first answer of an agent: an error unless it runs numio `want`
/// with this protocol.
pub fn check_hello(version: &str, protocol: u32, want: &str) -> Result<(), HelloMismatch> {
    if version != want || protocol != PROTOCOL {
        return Err(HelloMismatch {
            version: version.to_string(),
            protocol,
            want: want.to_string(),
        });
    }
    Ok(())
}

impl FromAgent {
    /// The line to send: JSON without a newline inside.
    pub fn line(&self) -> String {
        serde_json::to_string(self).expect("agent messages serialize")
    }
}

impl ToAgent {
    /// The line to send: JSON without a newline inside.
    pub fn line(&self) -> String {
        serde_json::to_string(self).expect("controller messages serialize")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_are_one_line_of_json_each_way() {
        let m = ToAgent::Prepare {
            argv: vec!["--rw".into(), "randread\nx".into()],
            targets: vec!["/dev/nvme0n1".into()],
            connect: None,
        };
        let l = m.line();
        assert!(!l.contains('\n'));
        assert_eq!(serde_json::from_str::<ToAgent>(&l).unwrap(), m);
        let h = FromAgent::Hello {
            version: "0.1.0".into(),
            protocol: PROTOCOL,
            hostname: "a".into(),
        };
        assert!(h.line().starts_with(r#"{"type":"hello""#));
        assert_eq!(serde_json::from_str::<FromAgent>(&h.line()).unwrap(), h);
    }
}
