//! `numio agent`: the far end of a fleet run (`numio bench --hosts`),
//! started by the controlling numio over ssh. It speaks the line protocol
//! of `fleet::proto` on stdin and stdout: hello, pongs, `ready` once the
//! bench arguments it was sent are planned on this host's own topology,
//! the run at the instant it is told, progress, the result. It stops its
//! run and exits as soon as its stdin closes (the ssh session ended), so
//! nothing keeps running on a host the controller lost.

use std::io::Write;
use std::sync::atomic::Ordering;
use std::sync::mpsc;
use std::time::Duration;

use anyhow::Context;
use clap::{Args as _, FromArgMatches};
use fleet::{FromAgent, ToAgent, PROTOCOL};
use nvmf::serve_child::{Progress, Readiness, ServeChild, ServeOutput};
use session::interrupt;

use super::bench;

/// Flags of `numio agent` (none: everything arrives on stdin).
#[derive(Debug, clap::Args)]
pub struct Args {}

/// What the stdin thread (and a served target's log thread) hand the
/// agent.
enum Input {
    Message(ToAgent),
    /// stdin closed, or a line that is not the protocol.
    Gone(String),
    /// A line of `numio serve`'s log, or its end (it exited).
    Serve(ServeOutput),
}

/// Runs the agent until its run is reported or its stdin closes.
pub fn run(_args: Args) -> anyhow::Result<i32> {
    interrupt::install(|_| {})?;
    let (tx, rx) = mpsc::channel();
    let serve_tx = tx.clone();
    std::thread::spawn(move || {
        let stdin = std::io::stdin();
        let mut stdin = stdin.lock();
        let mut buf = Vec::new();
        loop {
            let max = fleet::lines::CONTROLLER_LINE_MAX_BYTES;
            let msg = match fleet::lines::read_line_bounded(&mut stdin, &mut buf, max) {
                Ok(None) => break,
                Ok(Some(fleet::lines::Line::TooLong { len_bytes })) => Input::Gone(format!(
                    "a line of {len_bytes} bytes from the controller, over the limit of {} KiB (fleet::lines::CONTROLLER_LINE_MAX_BYTES); is it this numio's version?",
                    max >> 10
                )),
                Ok(Some(fleet::lines::Line::Whole)) => match serde_json::from_slice::<ToAgent>(&buf) {
                    Ok(ToAgent::Stop) => {
                        // A run sees the flag; a served target the message.
                        interrupt::flag().store(true, Ordering::Relaxed);
                        Input::Message(ToAgent::Stop)
                    }
                    Ok(m) => Input::Message(m),
                    Err(e) => Input::Gone(format!("a line that is not the fleet protocol ({e})")),
                },
                Err(e) => Input::Gone(format!("reading stdin: {e}")),
            };
            let gone = matches!(msg, Input::Gone(_));
            if gone {
                interrupt::flag().store(true, Ordering::Relaxed);
            }
            if tx.send(msg).is_err() || gone {
                return;
            }
        }
        // The controller (or its ssh) went away: stop whatever runs.
        interrupt::flag().store(true, Ordering::Relaxed);
        let _ = tx.send(Input::Gone("stdin closed".into()));
    });
    say(&FromAgent::Hello {
        version: env!("NUMIO_VERSION").to_string(),
        protocol: PROTOCOL,
        hostname: hostname(),
    })?;
    let mut prepared = None;
    // A connection of the Linux host made for this run: undone when the
    // agent returns (and by `numio connect` itself if the agent dies).
    let mut _connection = None;
    loop {
        let m = match rx.recv() {
            Ok(Input::Message(m)) => m,
            Ok(Input::Gone(why)) => {
                eprintln!("numio agent: {why}: exiting");
                return Ok(1);
            }
            Ok(Input::Serve(_)) => continue,
            Err(_) => return Ok(1),
        };
        match m {
            ToAgent::Ping { sent_ns } => say(&FromAgent::Pong {
                sent_ns,
                agent_ns: fleet::run::now_ns(),
            })?,
            ToAgent::Prepare {
                argv,
                targets,
                connect,
            } => match connect
                .map(|url| Connection::open(&url))
                .transpose()
                .and_then(|c| {
                    let targets = match &c {
                        Some(c) => vec![c.device.clone()],
                        None => targets,
                    };
                    _connection = c;
                    prepare(&argv, targets)
                }) {
                Ok(p) => {
                    say(&FromAgent::Ready {
                        targets: p.placement.targets.iter().map(|t| t.path.clone()).collect(),
                        jobs: p.placement.targets.iter().map(|t| t.jobs.len()).sum(),
                    })?;
                    prepared = Some(p);
                }
                Err(e) => return refuse(&format!("{e:#}")),
            },
            ToAgent::Start { at_unix_ns } => {
                let Some(p) = prepared.take() else {
                    return refuse("start before prepare");
                };
                if !wait_until(at_unix_ns, &rx) {
                    return Ok(1);
                }
                return measure(p);
            }
            ToAgent::Serve { argv } => return serve(&argv, &rx, serve_tx),
            ToAgent::Stop | ToAgent::CpuSample => {}
        }
    }
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
fn serve(
    argv: &[String],
    rx: &mpsc::Receiver<Input>,
    tx: mpsc::Sender<Input>,
) -> anyhow::Result<i32> {
    let exe = std::env::current_exe().context("finding this numio to run numio serve")?;
    // The target dies with the agent, even a killed one.
    let mut child = ServeChild::spawn(&exe, argv, move |out| {
        let _ = tx.send(Input::Serve(out));
    })?;
    let mut readiness = Readiness::default();
    let mut ready = false;
    // Its last lines, for an exit's message (at start-up or later).
    let mut last = std::collections::VecDeque::new();
    loop {
        let input = rx.recv().unwrap_or(Input::Gone("stdin closed".into()));
        match input {
            Input::Serve(ServeOutput::Line(l)) => {
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
                        Err(e) => return refuse(&e.to_string()),
                    }
                }
            }
            Input::Serve(ServeOutput::Ended) => {
                let status = child.exit_status();
                let last: Vec<&str> = last.iter().map(String::as_str).collect();
                return refuse(&format!("exited ({status}): {}", last.join(" | ")));
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

/// The served target's CPU time and the machine's, now.
fn cpu_sample(pid: u32) -> FromAgent {
    let s = topology::counters::sample(std::path::Path::new("/"), &[pid]).ok();
    let ns = topology::counters::ticks_ns;
    let (process_ns, machine_busy_ns, machine_total_ns) = s.map_or((0, 0, 0), |s| {
        let p = s
            .processes
            .first()
            .map_or(0, |p| ns(p.user_ticks + p.system_ticks));
        (p, ns(s.stat.total.busy()), ns(s.stat.total.total()))
    });
    FromAgent::Cpu(fleet::proto::CpuSample {
        at_unix_ns: fleet::run::now_ns(),
        process_ns,
        machine_busy_ns,
        machine_total_ns,
    })
}

/// Sleeps until `at_unix_ns` of this host's clock; false when stdin
/// closed meanwhile.
fn wait_until(at_unix_ns: u64, rx: &mpsc::Receiver<Input>) -> bool {
    loop {
        if interrupt::flag().load(Ordering::Relaxed) {
            return false;
        }
        let now = fleet::run::now_ns();
        if now >= at_unix_ns {
            return true;
        }
        match rx.recv_timeout(Duration::from_nanos(at_unix_ns - now)) {
            Err(mpsc::RecvTimeoutError::Timeout) => return true,
            Ok(Input::Gone(why)) => {
                eprintln!("numio agent: {why}: not starting");
                return false;
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => return false,
            Ok(Input::Message(_) | Input::Serve(_)) => {}
        }
    }
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

/// Runs the plan, reporting as it goes, and sends the result (after
/// saving what a verifying run wrote in this host's verify state).
fn measure(p: Prepared) -> anyhow::Result<i32> {
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
    match result {
        Ok(r) => {
            bench::bench_verify::finish(p.verify, std::slice::from_ref(&r));
            say(&FromAgent::Result {
                result: Box::new(r),
            })?;
            Ok(0)
        }
        Err(e) => refuse(&e.to_string()),
    }
}

fn refuse(message: &str) -> anyhow::Result<i32> {
    say(&FromAgent::Error {
        message: message.to_string(),
    })?;
    Ok(1)
}

fn say(m: &FromAgent) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    writeln!(out, "{}", m.line())
        .and_then(|()| out.flush())
        .context("writing to the controller")
}

fn hostname() -> String {
    topology::host::hostname(std::path::Path::new("/"))
}
