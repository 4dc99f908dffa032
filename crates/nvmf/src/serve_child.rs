//! A `numio serve` run as a child process by another numio (a sweep's
//! `reactors` axis, the fleet agent for `numio sweep --target-host`), read through its
//! structured log (`--log-format json`) rather than its human text: the
//! `listening` events give the addresses, the `ready` event says it
//! serves, and each line is also handed on as the text `numio serve` would
//! have printed, for the user. A changed wording therefore breaks nothing.
//!
//! [`ServeChild::spawn`] starts it (tied to its parent, so it dies with
//! it) and hands every line of both streams, and the end of its output,
//! to a sink; [`Readiness`] turns those into the addresses once it is
//! ready ([`Progress`]), or the last lines it wrote when it ended first;
//! [`ServeChild::stop`] sends SIGTERM and says how it stopped.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use crate::log::{Level, Stream};

/// Longest line kept of the child's log; the rest of a longer one is
/// dropped.
pub const LINE_MAX_BYTES: usize = 4096;
/// Lines kept of the child's last words (an error's message).
const TAIL_LINES: usize = 5;

/// One line the child wrote.
#[derive(Debug, Clone, PartialEq)]
pub struct LogLine {
    /// The stream it came on.
    pub stream: Stream,
    /// Its event name (`listening`, `ready`, `connected`, …); `None` for a
    /// line that is not the structured log (a panic, an argument error).
    pub event: Option<String>,
    /// The line as `numio serve --log-format text` prints it.
    pub text: String,
    /// Its fields (`addr`, `transport`, …); empty for an unstructured line.
    pub fields: serde_json::Map<String, serde_json::Value>,
}

impl LogLine {
    /// Reads one line of `--log-format json` (or any other line, kept as
    /// its text).
    pub fn parse(stream: Stream, line: &str) -> Self {
        let unstructured = || Self {
            stream,
            event: None,
            text: line.to_string(),
            fields: serde_json::Map::new(),
        };
        let Ok(serde_json::Value::Object(mut fields)) = serde_json::from_str(line) else {
            return unstructured();
        };
        let (Some(event), Some(msg)) = (
            fields
                .get("event")
                .and_then(|v| v.as_str())
                .map(str::to_string),
            fields
                .get("msg")
                .and_then(|v| v.as_str())
                .map(str::to_string),
        ) else {
            return unstructured();
        };
        let level = fields
            .get("level")
            .and_then(|v| v.as_str())
            .and_then(Level::from_name)
            .unwrap_or(Level::Info);
        for k in ["ts", "level", "event", "msg"] {
            fields.remove(k);
        }
        Self {
            stream,
            event: Some(event),
            text: format!("numio serve: {}{msg}", level.text_prefix()),
            fields,
        }
    }

    /// The string field `key`.
    pub fn field(&self, key: &str) -> Option<&str> {
        self.fields.get(key).and_then(|v| v.as_str())
    }
}

/// What the child sends its sink.
#[derive(Debug, Clone, PartialEq)]
pub enum ServeOutput {
    /// A line of its log.
    Line(LogLine),
    /// Both its streams closed: it exited (or closed them).
    Ended,
}

/// A listener the child reported.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listening {
    /// Its address.
    pub addr: SocketAddr,
    /// `tcp` or `rdma`.
    pub transport: String,
}

/// The child serves: its listeners and its start-up lines (as text).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ready {
    /// Its listeners, in the order it reported them.
    pub listening: Vec<Listening>,
    /// Its lines up to and with the ready line.
    pub lines: Vec<String>,
}

/// What went wrong with a serve child.
#[derive(Debug, thiserror::Error)]
pub enum ServeChildError {
    /// It could not be started.
    #[error("starting {} serve", exe.display())]
    Spawn {
        /// The numio binary.
        exe: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// It exited before it was ready.
    #[error("numio serve ended before it was ready ({status}): {}", said.join(" | "))]
    EndedBeforeReady {
        /// How it exited.
        status: String,
        /// Its last lines.
        said: Vec<String>,
    },
    /// It said it was ready without a listener.
    #[error("numio serve was ready without a listen line")]
    NoListener,
    /// A `listening` event without a readable address.
    #[error("numio serve said `{line}`: no address in it")]
    BadListener {
        /// The line as text.
        line: String,
    },
    /// Stopping or waiting for it failed.
    #[error("stopping numio serve")]
    Stop {
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// It stopped with a failure.
    #[error("numio serve stopped with {status}: {}", said.join(" | "))]
    Failed {
        /// How it exited.
        status: String,
        /// Its last lines on stderr.
        said: Vec<String>,
    },
}

/// A running `numio serve`; stopped with SIGTERM by [`ServeChild::stop`],
/// killed on drop if still running.
#[derive(Debug)]
pub struct ServeChild {
    child: Child,
    tail: Arc<Mutex<VecDeque<String>>>,
}

impl ServeChild {
    /// Starts `exe serve --log-format json ARGS` with stdin closed, tied to
    /// this process, handing each line of its stdout and stderr and then
    /// [`ServeOutput::Ended`] to `sink` (from threads of its own).
    pub fn spawn(
        exe: &Path,
        args: &[String],
        sink: impl Fn(ServeOutput) + Send + Sync + 'static,
    ) -> Result<Self, ServeChildError> {
        let mut cmd = Command::new(exe);
        cmd.args(["serve", "--log-format", "json"])
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        sysapi::process::tie_to_parent(&mut cmd);
        let mut child = cmd.spawn().map_err(|source| ServeChildError::Spawn {
            exe: exe.to_path_buf(),
            source,
        })?;
        let tail = Arc::new(Mutex::new(VecDeque::new()));
        let sink = Arc::new(sink);
        let open = Arc::new(AtomicUsize::new(2));
        let streams: [(Box<dyn Read + Send>, Stream); 2] = [
            (Box::new(child.stdout.take().expect("piped")), Stream::Out),
            (Box::new(child.stderr.take().expect("piped")), Stream::Err),
        ];
        for (r, stream) in streams {
            let (sink, open, tail) = (Arc::clone(&sink), Arc::clone(&open), Arc::clone(&tail));
            std::thread::spawn(move || {
                for_each_line(r, |l| {
                    let line = LogLine::parse(stream, &l);
                    if stream == Stream::Err {
                        let mut t = tail.lock().unwrap_or_else(|e| e.into_inner());
                        if t.len() == TAIL_LINES {
                            t.pop_front();
                        }
                        t.push_back(line.text.clone());
                    }
                    sink(ServeOutput::Line(line));
                });
                if open.fetch_sub(1, Ordering::AcqRel) == 1 {
                    sink(ServeOutput::Ended);
                }
            });
        }
        Ok(Self { child, tail })
    }

    /// Its process id (for its CPU time in /proc).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Its last lines on stderr.
    pub fn tail(&self) -> Vec<String> {
        let t = self.tail.lock().unwrap_or_else(|e| e.into_inner());
        t.iter().cloned().collect()
    }

    /// Waits for it after its output [`ServeOutput::Ended`]: how it exited,
    /// as text.
    pub fn exit_status(&mut self) -> String {
        match self.child.wait() {
            Ok(s) => s.to_string(),
            Err(e) => format!("status unknown: {e}"),
        }
    }

    /// Waits for it after its output [`ServeOutput::Ended`] before it was
    /// ready: the error that says how it exited and what it said last
    /// (`said`: [`Progress::Ended`]'s last lines of both streams).
    pub fn ended_before_ready(&mut self, said: Vec<String>) -> ServeChildError {
        ServeChildError::EndedBeforeReady {
            status: self.exit_status(),
            said,
        }
    }

    /// SIGTERM (it drains and closes as on Ctrl-C), then its exit status;
    /// an error unless it stopped cleanly.
    pub fn stop(mut self) -> Result<ExitStatus, ServeChildError> {
        if let Ok(None) = self.child.try_wait() {
            sysapi::process::terminate(&self.child)
                .map_err(|source| ServeChildError::Stop { source })?;
        }
        let status = self
            .child
            .wait()
            .map_err(|source| ServeChildError::Stop { source })?;
        if !status.success() {
            return Err(ServeChildError::Failed {
                status: status.to_string(),
                said: self.tail(),
            });
        }
        Ok(status)
    }
}

impl Drop for ServeChild {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Follows a serve child's output up to its `ready` event.
#[derive(Debug, Default)]
pub struct Readiness {
    listening: Vec<Listening>,
    lines: Vec<String>,
    last: VecDeque<String>,
}

/// Where a serve child stands after an output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Progress {
    /// Still starting.
    Starting,
    /// It serves.
    Ready(Ready),
    /// Its output ended before it was ready: its last lines, of both
    /// streams (for [`ServeChild::ended_before_ready`]).
    Ended {
        /// Its last lines.
        said: Vec<String>,
    },
}

impl Readiness {
    /// Takes one output of the child.
    pub fn feed(&mut self, out: &ServeOutput) -> Result<Progress, ServeChildError> {
        let line = match out {
            ServeOutput::Ended => {
                return Ok(Progress::Ended {
                    said: self.last.iter().cloned().collect(),
                })
            }
            ServeOutput::Line(l) => l,
        };
        if self.last.len() == TAIL_LINES {
            self.last.pop_front();
        }
        self.last.push_back(line.text.clone());
        if line.stream == Stream::Out {
            self.lines.push(line.text.clone());
        }
        match line.event.as_deref() {
            Some("listening") => {
                let addr = line
                    .field("addr")
                    .and_then(|a| a.parse().ok())
                    .ok_or_else(|| ServeChildError::BadListener {
                        line: line.text.clone(),
                    })?;
                self.listening.push(Listening {
                    addr,
                    transport: line.field("transport").unwrap_or("tcp").to_string(),
                });
                Ok(Progress::Starting)
            }
            Some("ready") if self.listening.is_empty() => Err(ServeChildError::NoListener),
            Some("ready") => Ok(Progress::Ready(Ready {
                listening: std::mem::take(&mut self.listening),
                lines: std::mem::take(&mut self.lines),
            })),
            _ => Ok(Progress::Starting),
        }
    }
}

/// Hands each line of `r` (within [`LINE_MAX_BYTES`]; the rest of a longer
/// one is dropped) to `each` until `r` ends.
fn for_each_line(r: impl Read, mut each: impl FnMut(String)) {
    let mut r = BufReader::new(r);
    let mut buf = Vec::new();
    loop {
        buf.clear();
        let mut over = false;
        loop {
            let chunk = match r.fill_buf() {
                Ok(c) => c,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(_) => return,
            };
            if chunk.is_empty() {
                if buf.is_empty() && !over {
                    return;
                }
                break;
            }
            let (take, done) = match chunk.iter().position(|&b| b == b'\n') {
                Some(i) => (i + 1, true),
                None => (chunk.len(), false),
            };
            let room = LINE_MAX_BYTES.saturating_sub(buf.len());
            over |= take > room;
            buf.extend_from_slice(&chunk[..take.min(room)]);
            r.consume(take);
            if done {
                break;
            }
        }
        let text = String::from_utf8_lossy(&buf);
        each(text.trim_end_matches(['\n', '\r']).to_string());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn out(line: &str) -> ServeOutput {
        ServeOutput::Line(LogLine::parse(Stream::Out, line))
    }

    #[test]
    fn json_lines_read_back_as_the_text_serve_prints() {
        let l = LogLine::parse(
            Stream::Err,
            r#"{"ts":"2026-12-01T00:00:00.000Z","level":"warn","event":"refused","msg":"refused host x","host":"x","qid":0}"#,
        );
        assert_eq!(l.event.as_deref(), Some("refused"));
        assert_eq!(l.text, "numio serve: warning: refused host x");
        assert_eq!(l.field("host"), Some("x"));
        assert!(!l.fields.contains_key("msg"));
        let raw = LogLine::parse(Stream::Err, "error: unexpected argument '--x'");
        assert_eq!(
            (raw.event, raw.text.as_str()),
            (None, "error: unexpected argument '--x'")
        );
    }

    #[test]
    fn ready_gives_the_listeners_and_an_early_end_the_last_words() {
        let mut r = Readiness::default();
        let listen = r#"{"level":"info","event":"listening","msg":"NVMe/TCP listening on 127.0.0.1:4420","addr":"127.0.0.1:4420","tls":"off"}"#;
        let rdma = r#"{"level":"info","event":"listening","msg":"NVMe/RDMA listening on 10.0.0.1:4420","addr":"10.0.0.1:4420","transport":"rdma"}"#;
        assert_eq!(r.feed(&out(listen)).unwrap(), Progress::Starting);
        assert_eq!(r.feed(&out(rdma)).unwrap(), Progress::Starting);
        let Progress::Ready(ready) = r
            .feed(&out(r#"{"level":"info","event":"ready","msg":"ready"}"#))
            .unwrap()
        else {
            panic!("not ready")
        };
        assert_eq!(ready.listening.len(), 2);
        assert_eq!(ready.listening[0].addr, "127.0.0.1:4420".parse().unwrap());
        assert_eq!(ready.listening[1].transport, "rdma");
        assert_eq!(
            ready.lines[0],
            "numio serve: NVMe/TCP listening on 127.0.0.1:4420"
        );
        assert_eq!(ready.lines.last().unwrap(), "numio serve: ready");

        let mut r = Readiness::default();
        let err = ServeOutput::Line(LogLine::parse(Stream::Err, "error: --ns: bad"));
        assert_eq!(r.feed(&err).unwrap(), Progress::Starting);
        assert_eq!(
            r.feed(&ServeOutput::Ended).unwrap(),
            Progress::Ended {
                said: vec!["error: --ns: bad".into()]
            }
        );

        let mut r = Readiness::default();
        let e = r
            .feed(&out(r#"{"level":"info","event":"ready","msg":"ready"}"#))
            .unwrap_err();
        assert!(matches!(e, ServeChildError::NoListener), "{e}");
        let bad = r#"{"level":"info","event":"listening","msg":"listening on ?"}"#;
        let e = Readiness::default().feed(&out(bad)).unwrap_err();
        assert_eq!(
            e.to_string(),
            "numio serve said `numio serve: listening on ?`: no address in it"
        );
    }

    #[test]
    fn long_lines_are_cut_and_the_rest_kept_apart() {
        let text = format!("{}\nshort\nlast", "x".repeat(LINE_MAX_BYTES + 10));
        let mut got = Vec::new();
        for_each_line(text.as_bytes(), |l| got.push(l));
        assert_eq!(got.len(), 3);
        assert_eq!(got[0].len(), LINE_MAX_BYTES);
        assert_eq!(&got[1..], ["short", "last"]);
    }
}
