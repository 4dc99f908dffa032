//! The `reactors` axis of a sweep: target core scaling. Each run starts
//! its own `numio serve` (the binary the caller names) with that many
//! reactors on a RAM namespace on loopback, waits for its listening and
//! ready events (`nvmf::serve_child`), runs the point against it over
//! NVMe/TCP and stops it (SIGTERM). The serve process's CPU is sampled
//! from `/proc/PID` over the measured time and kept apart from the
//! initiator's (`RunCounters::target_process`).

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::mpsc;
use std::time::Instant;

use engine::result::{ProcessCounters, RunResult};
use engine::RunOptions;
use nvmf::serve_child::{Progress, Readiness, ServeChild, ServeChildError, ServeOutput};
use topology::counters::{self, ProcessSample};

use crate::schedule::BoxError;
use crate::{Event, LiveArm, RunInfo, Runner};

/// Subsystem NQN of the served RAM namespace.
pub const NQN: &str = "nqn.2026-01.io.numio:sweep";

/// The RAM namespace each serve exports.
const NAMESPACE: &str = "mem:256M";

/// The target's name in the points (the port changes from run to run).
pub const TARGET: &str = "nvme-tcp://127.0.0.1/nqn.2026-01.io.numio:sweep";

/// A running `numio serve`, stopped (SIGTERM) by [`Served::stop`] or on
/// drop.
struct Served {
    child: ServeChild,
    addr: SocketAddr,
}

impl Served {
    /// Starts `exe serve` with reactors on `cpus`, returning once it
    /// reported its listener and that it is ready.
    fn start(exe: &Path, cpus: &[u32]) -> Result<Served, ServeChildError> {
        let list: Vec<String> = cpus.iter().map(u32::to_string).collect();
        let args: Vec<String> = [
            "--ns",
            NAMESPACE,
            "--nqn",
            NQN,
            "--allow-any-host",
            "--listen",
            "127.0.0.1:0",
            "--discovery-port",
            "0",
            "--cpus",
        ]
        .iter()
        .map(|a| a.to_string())
        .chain([list.join(",")])
        .collect();
        let (tx, rx) = mpsc::channel();
        let mut child = ServeChild::spawn(exe, &args, move |out| {
            let _ = tx.send(out);
        })?;
        let mut readiness = Readiness::default();
        loop {
            let out = rx.recv().unwrap_or(ServeOutput::Ended);
            match readiness.feed(&out)? {
                Progress::Starting => {}
                Progress::Ended { said } => return Err(child.ended_before_ready(said)),
                Progress::Ready(ready) => {
                    let addr = ready.listening[0].addr;
                    // The rest of its log is not needed: the receiver goes,
                    // and the reader threads' sends fail quietly.
                    return Ok(Served { child, addr });
                }
            }
        }
    }
}

/// Runs each point of a `reactors` sweep against a serve of its own.
pub struct ServeRunner {
    /// The reactor CPUs of each point, by its label.
    pub cpus: HashMap<String, Vec<u32>>,
    /// The numio binary to serve with.
    pub exe: PathBuf,
}

impl Runner for ServeRunner {
    fn run(
        &mut self,
        arm: &LiveArm,
        opts: &RunOptions,
        run: RunInfo,
        interrupt: &AtomicBool,
        observer: &mut dyn FnMut(&Event<'_>),
    ) -> Result<RunResult, BoxError> {
        let cpus = self
            .cpus
            .get(&arm.label)
            .ok_or_else(|| format!("point {}: no reactor CPUs", arm.label))?;
        let served = Served::start(&self.exe, cpus)?;
        let mut placement = arm.placement.clone();
        let url = format!("nvme-tcp://{}/{NQN}", served.addr);
        for t in &mut placement.targets {
            t.path.clone_from(&url);
        }
        let pid = served.child.pid();
        let mut measuring: Option<(Instant, ProcessSample)> = None;
        let mut watch = |e: &Event<'_>| {
            if let Event::Measuring { .. } = e {
                measuring = process_sample(pid).map(|s| (Instant::now(), s));
            }
            observer(e);
        };
        let result = crate::run_once(&placement, opts, run, interrupt, &mut watch);
        let end = process_sample(pid).map(|s| (Instant::now(), s));
        served.child.stop()?;
        let mut result = result?;
        rename_target(&mut result, &url);
        if let (Some(c), Some(a), Some(b)) = (result.counters.as_mut(), measuring, end) {
            c.target_process = Some(served_cpu(a, b, c.window_ns));
        }
        Ok(result)
    }
}

fn process_sample(pid: u32) -> Option<ProcessSample> {
    counters::sample(Path::new("/"), &[pid])
        .ok()?
        .processes
        .into_iter()
        .next()
}

/// The serve's CPU between the two samples, scaled to the run's counter
/// window (the samples bracket the measured time from its start event to
/// the engine's return).
fn served_cpu(
    (t0, a): (Instant, ProcessSample),
    (t1, b): (Instant, ProcessSample),
    window_ns: u64,
) -> ProcessCounters {
    let elapsed = t1.duration_since(t0).as_nanos() as u64;
    ProcessCounters::from_sample(&b)
        .since(&ProcessCounters::from_sample(&a))
        .scaled(window_ns, elapsed)
}

/// Names the target [`TARGET`] in the result, whatever port the run had.
fn rename_target(result: &mut RunResult, url: &str) {
    for t in &mut result.targets {
        if t.path == url {
            t.path = TARGET.to_string();
        }
    }
    for t in &mut result.environment.targets {
        if t.path == url {
            t.path = TARGET.to_string();
        }
    }
    if let Some(c) = result.counters.as_mut() {
        for t in &mut c.targets {
            if t.path == url {
                t.path = TARGET.to_string();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn served_cpu_is_scaled_to_the_counter_window() {
        let t0 = Instant::now();
        let t1 = t0 + std::time::Duration::from_secs(2);
        let a = ProcessSample::default();
        let b = ProcessSample {
            user_ticks: 100,
            system_ticks: 50,
            voluntary_switches: 10,
            ..Default::default()
        };
        // 1 s of user time over 2 s, window 1 s: 0.5 s.
        let c = served_cpu((t0, a), (t1, b), 1_000_000_000);
        assert_eq!(c.user_ns, 500_000_000);
        assert_eq!(c.system_ns, 250_000_000);
        assert_eq!(c.voluntary_ctx_switches, 5);
    }
}
