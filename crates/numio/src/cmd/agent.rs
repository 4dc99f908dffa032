//! `numio agent`: the far end of a fleet run (`numio bench --hosts`),
//! started by the controlling numio over ssh. It speaks the line protocol
//! of `fleet::proto` on stdin and stdout: hello, pongs, `ready` once the
//! bench arguments it was sent are planned on this host's own topology,
//! the run at the instant it is told, progress, the result. It stops its
//! run and exits as soon as its stdin closes (the ssh session ended), so
//! nothing keeps running on a host the controller lost.

use std::sync::atomic::Ordering;
use std::sync::mpsc;

use anyhow::Context;
use clap::{Args as _, FromArgMatches};
use fleet::agent::{refuse, say, AgentHost, BoxError, Inbox, Input, Planned};
use fleet::{FromAgent, ToAgent};
use nvmf::serve_child::{Progress, Readiness, ServeChild, ServeOutput};
use session::interrupt;

use super::bench;

/// Flags of `numio agent` (none: everything arrives on stdin).
#[derive(Debug, clap::Args)]
pub struct Args {}

/// What this host does for the agent: plan and run a bench (after a kernel
/// connection when asked), or serve a target.
#[derive(Default)]
struct Host {
    prepared: Option<Prepared>,
    /// A connection of the Linux host made for this run: undone when the
    /// agent returns (and by `numio connect` itself if the agent dies).
    connection: Option<Connection>,
}

impl AgentHost for Host {
    type Local = ServeOutput;

    fn prepare(
        &mut self,
        argv: &[String],
        targets: Vec<String>,
        connect: Option<String>,
    ) -> Result<Planned, BoxError> {
        let planned = (|| -> anyhow::Result<Planned> {
            let c = connect.map(|url| Connection::open(&url)).transpose()?;
            let targets = match &c {
                Some(c) => vec![c.device.clone()],
                None => targets,
            };
            self.connection = c;
            let p = prepare(argv, targets)?;
            let planned = Planned {
                targets: p.placement.targets.iter().map(|t| t.path.clone()).collect(),
                jobs: p.placement.targets.iter().map(|t| t.jobs.len()).sum(),
            };
            self.prepared = Some(p);
            Ok(planned)
        })();
        planned.map_err(|e| format!("{e:#}").into())
    }

    fn measure(&mut self) -> Result<results::RunResult, BoxError> {
        let p = self.prepared.take().ok_or("start before prepare")?;
        measure(p).map_err(|e| format!("{e:#}").into())
    }

    fn serve(&mut self, argv: &[String], inbox: &Inbox<ServeOutput>) -> Result<i32, BoxError> {
        serve(argv, inbox).map_err(|e| format!("{e:#}").into())
    }
}

/// Runs the agent until its run is reported or its stdin closes.
pub fn run(_args: Args) -> anyhow::Result<i32> {
    interrupt::install(|_| {})?;
    let inbox = Inbox::from_stdin(interrupt::flag());
    let hostname = topology::host::hostname(std::path::Path::new("/"));
    fleet::agent::run(
        &mut Host::default(),
        &inbox,
        interrupt::flag(),
        env!("NUMIO_VERSION"),
        hostname,
    )
    .map_err(|e| anyhow::anyhow!("{e}"))
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
    /// Starts `numio connect url` and waits for its device line.
    fn open(url: &str) -> anyhow::Result<Connection> {
        let exe = std::env::current_exe().context("finding this numio to run numio connect")?;
        let mut cmd = std::process::Command::new(exe);
        cmd.arg("connect")
            .arg(url)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        // It disconnects when the agent dies, even a killed one.
        sysapi::process::tie_to_parent(&mut cmd);
        let mut child = cmd.spawn().context("starting numio connect")?;
        let out = child.stdout.take().expect("piped");
        let err = child.stderr.take().expect("piped");
        // Its log goes to the agent's stderr (the ssh session's), and its
        // last lines into a failure's message.
        let (etx, erx) = mpsc::channel();
        std::thread::spawn(move || {
            for_each_line(err, |l| {
                eprintln!("{l}");
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
                let status = child.wait().context("waiting for numio connect")?;
                let lines: Vec<String> = erx.iter().collect();
                anyhow::bail!("numio connect {url} ({status}): {}", lines.join(" | "))
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
/// to the agent's stderr as the text serve prints, and its start-up lines to
/// the controller.
fn serve(argv: &[String], inbox: &Inbox<ServeOutput>) -> anyhow::Result<i32> {
    let exe = std::env::current_exe().context("finding this numio to run numio serve")?;
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
                eprintln!("{}", l.text);
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
                    eprintln!("numio agent: {e}");
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
fn for_each_line(r: impl std::io::Read, mut each: impl FnMut(String) -> bool) -> bool {
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
    let s = topology::counters::sample(std::path::Path::new("/"), &[pid]).ok();
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

/// The bench arguments planned here: `targets` replace the ones in
/// `argv` (the controller split them by host).
fn prepare(argv: &[String], targets: Vec<String>) -> anyhow::Result<Prepared> {
    let cmd = bench::Args::augment_args(clap::Command::new("bench").no_binary_name(true));
    let m = cmd
        .try_get_matches_from(argv)
        .map_err(|e| anyhow::anyhow!("{}", e.render().to_string().trim()))?;
    let mut args = bench::Args::from_arg_matches(&m).map_err(|e| anyhow::anyhow!("{e}"))?;
    args.targets = targets;
    bench::fold_fio_names(&mut args)?;
    let (placement, mut opts) = bench::plan(&args)?;
    // --verify and --verify-only with this host's own state file (the
    // default one, or --verify-state's path on this host).
    let (placement, verify) = bench::bench_verify::prepare(&args.engine, placement, &mut opts)?;
    let groups = bench::bench_jobs::groups(&placement);
    if groups.len() > 1 {
        anyhow::bail!(
            "a fleet run runs one group: the job file has {} stonewall groups",
            groups.len()
        );
    }
    // `ready` means the targets are open-able as the run opens them: a
    // host that cannot fails at the barrier, not after the start.
    engine::run::preflight(&placement, &opts)?;
    Ok(Prepared {
        placement,
        opts,
        verify,
    })
}

/// A bench planned here, ready to start.
struct Prepared {
    placement: planner::Placement,
    opts: engine::RunOptions,
    verify: Option<bench::bench_verify::VerifyRun>,
}

/// Runs the plan, reporting as it goes; its result (after saving what a
/// verifying run wrote in this host's verify state).
fn measure(p: Prepared) -> anyhow::Result<results::RunResult> {
    let mut failed = None;
    let result = session::run_once(
        &p.placement,
        &p.opts,
        session::RunInfo::SINGLE,
        interrupt::flag(),
        &mut |e| {
            let m = match e {
                session::Event::Measuring { .. } => FromAgent::Measuring {
                    at_unix_ns: fleet::run::now_ns(),
                },
                // During the ramp too: the controller takes a silent host
                // for a lost one.
                session::Event::Progress { snapshot, .. } => FromAgent::Progress {
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
    if let Some(e) = failed {
        return Err(e).context("the controller's channel closed mid-run");
    }
    let r = result?;
    bench::bench_verify::finish(p.verify, std::slice::from_ref(&r));
    Ok(r)
}
