//! The agent's side of the fleet protocol (`numio agent`, started by the
//! controller over ssh): it reads [`ToAgent`] lines on stdin and answers
//! with [`FromAgent`] lines on stdout: hello, pongs, `ready` once the bench
//! it was sent is planned on this host, the run at the instant it is told,
//! progress, the result; or a target served for a study, with CPU samples.
//! It stops as soon as its stdin closes (the ssh session ended), so
//! nothing keeps running on a host the controller lost.
//!
//! The protocol lives here, beside the controller's side (`run`,
//! `target`); what the host does (plan and run a bench, serve a target) is
//! the binary's, through [`AgentHost`].

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::time::Duration;

use crate::lines::{read_line_bounded, Line, CONTROLLER_LINE_MAX_BYTES};
use crate::proto::{FromAgent, ToAgent, PROTOCOL};
use crate::run::now_ns;

/// An error of the host's work, shown to the controller as text.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// What reaches the agent's loop: the controller's messages, the end of
/// its stdin, and the host's own events (`T`: a served target's log).
#[derive(Debug)]
pub enum Input<T> {
    /// A message of the controller.
    Message(ToAgent),
    /// stdin closed, or a line that is not the protocol: why.
    Gone(String),
    /// An event of the host's own.
    Local(T),
}

/// The agent's inbox: the stdin reader's messages, and the host's events.
#[derive(Debug)]
pub struct Inbox<T> {
    rx: Receiver<Input<T>>,
    tx: Sender<Input<T>>,
}

impl<T: Send + 'static> Inbox<T> {
    /// Starts reading stdin on a thread of its own; `stop` is raised when
    /// the controller says stop, or its stdin ends or goes wrong.
    pub fn from_stdin(stop: &'static AtomicBool) -> Self {
        let (tx, rx) = mpsc::channel();
        let reader = tx.clone();
        std::thread::spawn(move || {
            let stdin = std::io::stdin();
            let mut stdin = stdin.lock();
            read_controller(&mut stdin, stop, &reader);
        });
        Inbox { rx, tx }
    }

    /// A sender for the host's own events.
    pub fn sender(&self) -> Sender<Input<T>> {
        self.tx.clone()
    }

    /// The next input; `Gone` when nothing can come any more.
    pub fn recv(&self) -> Input<T> {
        self.rx
            .recv()
            .unwrap_or_else(|_| Input::Gone("stdin closed".into()))
    }

    /// Sleeps until `at_unix_ns` of this host's clock; false when the run
    /// should not start (stopped, or stdin closed meanwhile).
    pub fn wait_until(&self, at_unix_ns: u64, stop: &AtomicBool) -> bool {
        loop {
            if stop.load(Ordering::Relaxed) {
                return false;
            }
            let now = now_ns();
            if now >= at_unix_ns {
                return true;
            }
            match self.rx.recv_timeout(Duration::from_nanos(at_unix_ns - now)) {
                Err(RecvTimeoutError::Timeout) => return true,
                Ok(Input::Gone(why)) => {
                    eprintln!("numio agent: {why}: not starting");
                    return false;
                }
                Err(RecvTimeoutError::Disconnected) => return false,
                Ok(Input::Message(_) | Input::Local(_)) => {}
            }
        }
    }
}

/// Reads the controller's lines from `r` into `tx` until it ends or a line
/// is not the protocol; raises `stop` on a stop and at the end.
fn read_controller<T>(r: &mut dyn std::io::BufRead, stop: &AtomicBool, tx: &Sender<Input<T>>) {
    let mut buf = Vec::new();
    loop {
        let max = CONTROLLER_LINE_MAX_BYTES;
        let msg = match read_line_bounded(r, &mut buf, max) {
            Ok(None) => break,
            Ok(Some(Line::TooLong { len_bytes })) => Input::Gone(format!(
                "a line of {len_bytes} bytes from the controller, over the limit of {} KiB (fleet::lines::CONTROLLER_LINE_MAX_BYTES); is it this numio's version?",
                max >> 10
            )),
            Ok(Some(Line::Whole)) => match serde_json::from_slice::<ToAgent>(&buf) {
                Ok(ToAgent::Stop) => {
                    // A run sees the flag; a served target the message.
                    stop.store(true, Ordering::Relaxed);
                    Input::Message(ToAgent::Stop)
                }
                Ok(m) => Input::Message(m),
                Err(e) => Input::Gone(format!("a line that is not the fleet protocol ({e})")),
            },
            Err(e) => Input::Gone(format!("reading stdin: {e}")),
        };
        let gone = matches!(msg, Input::Gone(_));
        if gone {
            stop.store(true, Ordering::Relaxed);
        }
        if tx.send(msg).is_err() || gone {
            return;
        }
    }
    // The controller (or its ssh) went away: stop whatever runs.
    stop.store(true, Ordering::Relaxed);
    let _ = tx.send(Input::Gone("stdin closed".into()));
}

/// Sends `m` to the controller (a line on stdout).
pub fn say(m: &FromAgent) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    writeln!(out, "{}", m.line()).and_then(|()| out.flush())
}

/// Tells the controller why this host cannot go on; exit status 1.
pub fn refuse(message: &str) -> std::io::Result<i32> {
    say(&FromAgent::Error {
        message: message.to_string(),
    })?;
    Ok(1)
}

/// A bench planned on this host, as `ready` announces it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Planned {
    /// The targets it runs.
    pub targets: Vec<String>,
    /// Its jobs.
    pub jobs: usize,
}

/// What the host does for the agent (the binary knows bench's flags, the
/// engine and `numio serve`).
pub trait AgentHost {
    /// Its own events in the inbox (a served target's log).
    type Local: Send + 'static;

    /// Plans bench `argv` here on `targets`, or on the device a kernel
    /// connection to `connect` makes (held until the host is dropped).
    fn prepare(
        &mut self,
        argv: &[String],
        targets: Vec<String>,
        connect: Option<String>,
    ) -> Result<Planned, BoxError>;

    /// Runs what was prepared, telling the controller as it goes (through
    /// [`say`]); the result or why there is none.
    fn measure(&mut self) -> Result<results::RunResult, BoxError>;

    /// Serves a target with `argv` until told to stop, answering CPU
    /// samples; the exit status.
    fn serve(&mut self, argv: &[String], inbox: &Inbox<Self::Local>) -> Result<i32, BoxError>;
}

/// The agent: hello, then the controller's messages until the run is
/// reported or stdin closes; the exit status. `stop` is the flag runs
/// watch (raised on the controller's stop or when it goes away).
pub fn run<H: AgentHost>(
    host: &mut H,
    inbox: &Inbox<H::Local>,
    stop: &AtomicBool,
    version: &str,
    hostname: String,
) -> Result<i32, BoxError> {
    say(&FromAgent::Hello {
        version: version.to_string(),
        protocol: PROTOCOL,
        hostname,
    })?;
    let mut prepared = false;
    loop {
        let m = match inbox.recv() {
            Input::Message(m) => m,
            Input::Gone(why) => {
                eprintln!("numio agent: {why}: exiting");
                return Ok(1);
            }
            Input::Local(_) => continue,
        };
        match m {
            ToAgent::Ping { sent_ns } => say(&FromAgent::Pong {
                sent_ns,
                agent_ns: now_ns(),
            })?,
            ToAgent::Prepare {
                argv,
                targets,
                connect,
            } => match host.prepare(&argv, targets, connect) {
                Ok(p) => {
                    say(&FromAgent::Ready {
                        targets: p.targets,
                        jobs: p.jobs,
                    })?;
                    prepared = true;
                }
                Err(e) => return Ok(refuse(&e.to_string())?),
            },
            ToAgent::Start { at_unix_ns } => {
                if !prepared {
                    return Ok(refuse("start before prepare")?);
                }
                if !inbox.wait_until(at_unix_ns, stop) {
                    return Ok(1);
                }
                return match host.measure() {
                    Ok(r) => {
                        say(&FromAgent::Result {
                            result: Box::new(r),
                        })?;
                        Ok(0)
                    }
                    Err(e) => Ok(refuse(&e.to_string())?),
                };
            }
            ToAgent::Serve { argv } => return host.serve(&argv, inbox),
            ToAgent::Stop | ToAgent::CpuSample => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The controller's lines become messages; a stop raises the flag; a
    /// line that is not the protocol, or the end, is `Gone` and raises it
    /// too.
    #[test]
    fn the_controller_s_lines_and_their_end() {
        let stop = AtomicBool::new(false);
        let (tx, rx) = mpsc::channel::<Input<()>>();
        let text = format!(
            "{}\n{}\n",
            serde_json::to_string(&ToAgent::Ping { sent_ns: 7 }).unwrap(),
            serde_json::to_string(&ToAgent::Stop).unwrap()
        );
        read_controller(&mut text.as_bytes(), &stop, &tx);
        assert!(matches!(
            rx.recv().unwrap(),
            Input::Message(ToAgent::Ping { sent_ns: 7 })
        ));
        assert!(matches!(rx.recv().unwrap(), Input::Message(ToAgent::Stop)));
        assert!(matches!(rx.recv().unwrap(), Input::Gone(why) if why == "stdin closed"));
        assert!(stop.load(Ordering::Relaxed));

        let stop = AtomicBool::new(false);
        read_controller(&mut "hello\n".as_bytes(), &stop, &tx);
        assert!(
            matches!(rx.recv().unwrap(), Input::Gone(why) if why.contains("not the fleet protocol"))
        );
        assert!(stop.load(Ordering::Relaxed));
    }

    #[test]
    fn a_start_time_passed_starts_at_once_and_a_stop_does_not_start() {
        let (tx, rx) = mpsc::channel::<Input<()>>();
        let inbox = Inbox { rx, tx };
        let stop = AtomicBool::new(false);
        assert!(inbox.wait_until(0, &stop));
        stop.store(true, Ordering::Relaxed);
        assert!(!inbox.wait_until(u64::MAX, &stop));
        let stop = AtomicBool::new(false);
        inbox
            .sender()
            .send(Input::Gone("stdin closed".into()))
            .unwrap();
        assert!(!inbox.wait_until(now_ns() + 60_000_000_000, &stop));
    }
}
