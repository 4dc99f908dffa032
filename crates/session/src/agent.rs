//! What `numio agent` does on its host, behind the fleet protocol's
//! agent side (`fleet::agent`, the [`AgentHost`] trait): plan a bench from
//! the arguments the controller sent (the binary parses bench's flags,
//! through [`BenchPlanner`]) after a kernel connection when asked, check
//! its targets open, run it reporting progress, and serve a target (a
//! `numio serve` child, its output forwarded, its CPU sampled on request).
//! The binary's part is bench's flags ([`BenchPlanner`]) and where the
//! log lines go.

use std::io::Read;
use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::mpsc;

use engine::{RunOptions, RunResult};
use fleet::agent::{refuse, say, AgentHost, BoxError, Inbox, Input, Planned};
use fleet::{FromAgent, ToAgent};
use nvmf::serve_child::{Progress, Readiness, ServeChild, ServeChildError, ServeOutput};
use planner::Placement;

use crate::{interrupt, SessionError};

/// Why the agent's own work failed (the planner's errors are its own).
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    /// This numio's file could not be found to start it again.
    #[error("finding this numio to run {what}")]
    Exe {
        /// What was to run (`numio connect`).
        what: &'static str,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// `numio connect` could not be started.
    #[error("starting numio connect")]
    ConnectStart {
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// `numio connect` could not be waited for.
    #[error("waiting for numio connect")]
    ConnectWait {
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// `numio connect` exited without a device.
    #[error("numio connect {url} ({status}): {lines}")]
    Connect {
        /// The namespace.
        url: String,
        /// How it exited.
        status: String,
        /// Its last lines, joined by ` | `.
        lines: String,
    },
    /// The controller's channel closed while the bench ran.
    #[error("the controller's channel closed mid-run")]
    Channel {
        /// The write error.
        #[source]
        source: std::io::Error,
    },
    /// A line to the controller could not be written.
    #[error(transparent)]
    Say(#[from] std::io::Error),
    /// The bench failed, or the signal thread could not be set up.
    #[error(transparent)]
    Session(#[from] SessionError),
    /// Its targets cannot be opened as the run opens them.
    #[error(transparent)]
    Preflight(#[from] engine::EngineError),
    /// The served target's child failed.
    #[error(transparent)]
    Serve(#[from] ServeChildError),
    /// The protocol failed (the fleet's words).
    #[error("{0}")]
    Protocol(BoxError),
}

/// A bench planned on this host: the plan, its engine options, and what
/// the planner does once it ran (`A`: a verify state to save).
pub struct BenchPlan<A> {
    /// The plan.
    pub placement: Placement,
    /// Its engine options.
    pub opts: RunOptions,
    /// Kept for [`BenchPlanner::finish`].
    pub after: A,
}

/// The binary's part: bench's flags, from the controller's arguments to a
/// plan, and what it does after the run.
pub trait BenchPlanner {
    /// What [`BenchPlanner::finish`] needs of the plan.
    type After;

    /// Plans the bench `argv` here on `targets` (they replace argv's: the
    /// controller split them by host). Its error text goes to the
    /// controller as it is.
    fn plan(
        &mut self,
        argv: &[String],
        targets: Vec<String>,
    ) -> Result<BenchPlan<Self::After>, BoxError>;

    /// After the run of `after`'s plan, with its result.
    fn finish(&mut self, after: Self::After, result: &RunResult);
}

/// The host's work for the agent (see the module's words).
pub struct Agent<P: BenchPlanner> {
    planner: P,
    /// Where the children's lines go (the agent's stderr: the ssh
    /// session's).
    log: fn(&str),
    prepared: Option<BenchPlan<P::After>>,
    /// A connection of the Linux host made for this run: undone when the
    /// agent is dropped (and by `numio connect` itself if the agent dies).
    connection: Option<Connection>,
}

impl<P: BenchPlanner> Agent<P> {
    /// The agent with `planner`, its children's lines to `log`.
    pub fn new(planner: P, log: fn(&str)) -> Self {
        Agent {
            planner,
            log,
            prepared: None,
            connection: None,
        }
    }
}

/// `e` and its causes joined by `: `, as the controller shows it.
fn chain(e: &(dyn std::error::Error + 'static)) -> BoxError {
    let mut text = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        text.push_str(": ");
        text.push_str(&c.to_string());
        cause = c.source();
    }
    text.into()
}

impl<P: BenchPlanner> AgentHost for Agent<P> {
    type Local = ServeOutput;

    fn prepare(
        &mut self,
        argv: &[String],
        targets: Vec<String>,
        connect: Option<String>,
    ) -> Result<Planned, BoxError> {
        let c = connect
            .map(|url| Connection::open(&url, self.log))
            .transpose()
            .map_err(|e| chain(&e))?;
        let targets = match &c {
            Some(c) => vec![c.device.clone()],
            None => targets,
        };
        self.connection = c;
        let p = self.planner.plan(argv, targets)?;
        // `ready` means the targets are open-able as the run opens them: a
        // host that cannot fails at the barrier, not after the start.
        engine::run::preflight(&p.placement, &p.opts).map_err(|e| chain(&e))?;
        let planned = Planned {
            targets: p.placement.targets.iter().map(|t| t.path.clone()).collect(),
            jobs: p.placement.targets.iter().map(|t| t.jobs.len()).sum(),
        };
        self.prepared = Some(p);
        Ok(planned)
    }

    fn measure(&mut self) -> Result<RunResult, BoxError> {
        let p = self.prepared.take().ok_or("start before prepare")?;
        let r = measure(&p).map_err(|e| chain(&e))?;
        self.planner.finish(p.after, &r);
        Ok(r)
    }

    fn serve(&mut self, argv: &[String], inbox: &Inbox<ServeOutput>) -> Result<i32, BoxError> {
        serve(argv, inbox, self.log).map_err(|e| chain(&e))
    }
}

/// Runs the agent on stdin and stdout until its run is reported or its
/// stdin closes; the exit status. `version` is this numio's.
pub fn run<P: BenchPlanner>(planner: P, version: &str, log: fn(&str)) -> Result<i32, AgentError> {
    interrupt::install(|_| {})?;
    let inbox = Inbox::from_stdin(interrupt::flag());
    let hostname = topology::host::hostname(Path::new("/"));
    fleet::agent::run(
        &mut Agent::new(planner, log),
        &inbox,
        interrupt::flag(),
        version,
        hostname,
    )
    .map_err(AgentError::Protocol)
}

/// Runs the plan, reporting as it goes; its result.
fn measure<A>(p: &BenchPlan<A>) -> Result<RunResult, AgentError> {
    let mut failed = None;
    let result = crate::run_once(
        &p.placement,
        &p.opts,
        crate::RunInfo::SINGLE,
        interrupt::flag(),
        &mut |e| {
            let m = match e {
                crate::Event::Measuring { .. } => FromAgent::Measuring {
                    at_unix_ns: fleet::run::now_ns(),
                },
                // During the ramp too: the controller takes a silent host
                // for a lost one.
                crate::Event::Progress { snapshot, .. } => FromAgent::Progress {
                    elapsed_s: snapshot.elapsed_ns as f64 / 1e9,
                    iops: snapshot.iops,
                    bandwidth_bytes_per_s: snapshot.bytes_per_s,
                },
                _ => return,
            };
            if let Err(e) = say(&m) {
                failed.get_or_insert(e);
                interrupt::flag().store(true, Ordering::Relaxed);
            }
        },
    );
    if let Some(source) = failed {
        return Err(AgentError::Channel { source });
    }
    Ok(result?)
}

/// A `numio connect` child holding the Linux host's connection to an
/// NVMe/TCP namespace; dropping it closes the child's stdin, on which it
/// disconnects, and waits for that.
struct Connection {
    child: std::process::Child,
    /// The block device the kernel made (`/dev/nvme1n1`).
    device: String,
}

impl Connection {
    /// Starts `numio connect url` and waits for its device line; its log
    /// goes to `log`.
    fn open(url: &str, log: fn(&str)) -> Result<Connection, AgentError> {
        let exe = std::env::current_exe().map_err(|source| AgentError::Exe {
            what: "numio connect",
            source,
        })?;
        let mut cmd = std::process::Command::new(exe);
        cmd.arg("connect")
            .arg(url)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        // It disconnects when the agent dies, even a killed one.
        sysapi::process::tie_to_parent(&mut cmd);
        let mut child = cmd
            .spawn()
            .map_err(|source| AgentError::ConnectStart { source })?;
        let out = child.stdout.take().expect("piped");
        let err = child.stderr.take().expect("piped");
        // Its log goes to the agent's stderr (the ssh session's), and its
        // last lines into a failure's message.
        let (etx, erx) = mpsc::channel();
        std::thread::spawn(move || {
            for_each_line(err, |l| {
                log(&l);
                etx.send(l).is_ok()
            });
        });
        let mut first = String::new();
        for_each_line(out, |l| {
            first = l;
            false
        });
        match first.trim().strip_prefix("device ") {
            Some(dev) => Ok(Connection {
                device: dev.to_string(),
                child,
            }),
            None => {
                let status = child
                    .wait()
                    .map_err(|source| AgentError::ConnectWait { source })?;
                let lines: Vec<String> = erx.iter().collect();
                Err(AgentError::Connect {
                    url: url.to_string(),
                    status: status.to_string(),
                    lines: lines.join(" | "),
                })
            }
        }
    }
}

impl Drop for Connection {
    fn drop(&mut self) {
        drop(self.child.stdin.take());
        let _ = self.child.wait();
    }
}

/// Runs `numio serve argv` until told to stop or stdin closes, answering
/// CPU samples; SIGTERM stops it (it drains and closes as on Ctrl-C). Its
/// structured log (`nvmf::serve_child`) says when it is ready; its lines go
/// to `log` as the text serve prints, and its start-up lines to the
/// controller.
fn serve(argv: &[String], inbox: &Inbox<ServeOutput>, log: fn(&str)) -> Result<i32, AgentError> {
    let exe = std::env::current_exe().map_err(|source| AgentError::Exe {
        what: "numio serve",
        source,
    })?;
    let tx = inbox.sender();
    // The target dies with the agent, even a killed one.
    let mut child = ServeChild::spawn(&exe, argv, move |out| {
        let _ = tx.send(Input::Local(out));
    })?;
    let mut readiness = Readiness::default();
    let mut ready = false;
    // Its last lines, for an exit's message (at start-up or later).
    let mut last = std::collections::VecDeque::new();
    loop {
        match inbox.recv() {
            Input::Local(ServeOutput::Line(l)) => {
                log(&l.text);
                if last.len() == 5 {
                    last.pop_front();
                }
                last.push_back(l.text.clone());
                if !ready {
                    match readiness.feed(&ServeOutput::Line(l)) {
                        Ok(Progress::Ready(r)) => {
                            ready = true;
                            say(&FromAgent::Serving { lines: r.lines })?;
                        }
                        Ok(_) => {}
                        Err(e) => return Ok(refuse(&e.to_string())?),
                    }
                }
            }
            Input::Local(ServeOutput::Ended) => {
                let status = child.exit_status();
                let last: Vec<&str> = last.iter().map(String::as_str).collect();
                return Ok(refuse(&format!("exited ({status}): {}", last.join(" | ")))?);
            }
            Input::Message(ToAgent::CpuSample) => say(&cpu_sample(child.pid()))?,
            Input::Message(ToAgent::Stop) | Input::Gone(_) => {
                if let Err(e) = child.stop() {
                    log(&format!("numio agent: {e}"));
                }
                return Ok(0);
            }
            Input::Message(_) => {}
        }
    }
}

/// Longest line of a child's log (serve's, connect's) kept; the rest of
/// a longer one is dropped.
const CHILD_LINE_MAX_BYTES: usize = 4096;

/// Hands each line of `r` (within [`CHILD_LINE_MAX_BYTES`]) to `each`
/// until it returns false (then false) or `r` ends (then true).
fn for_each_line(r: impl Read, mut each: impl FnMut(String) -> bool) -> bool {
    let mut r = std::io::BufReader::new(r);
    let mut buf = Vec::new();
    while let Ok(Some(_)) = fleet::lines::read_line_bounded(&mut r, &mut buf, CHILD_LINE_MAX_BYTES)
    {
        if !each(String::from_utf8_lossy(&buf).into_owned()) {
            return false;
        }
    }
    true
}

/// The served target's CPU time and the machine's, now (zero where
/// `/proc` could not be read).
fn cpu_sample(pid: u32) -> FromAgent {
    let s = topology::counters::sample(Path::new("/"), &[pid]).ok();
    FromAgent::Cpu(fleet::proto::CpuSample {
        at_unix_ns: fleet::run::now_ns(),
        process: s
            .as_ref()
            .and_then(|s| s.processes.first())
            .map(results::ProcessCounters::from_sample)
            .unwrap_or_default(),
        machine: s
            .as_ref()
            .map(|s| results::CpuSplit::from_ticks(&s.stat.total))
            .unwrap_or_default(),
    })
}
