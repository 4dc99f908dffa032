//! One host's ssh child: `ssh -T -o BatchMode=yes [-p PORT] [-l USER]
//! [ARGS] HOST -- NUMIO agent`, its stdin the controller's channel to the
//! agent, its stdout read by a thread into the run's one event channel,
//! the last lines of its stderr kept for the error message.
//!
//! `BatchMode=yes` only stops ssh from asking for a password or
//! passphrase on a terminal numio does not have; host key checking stays
//! as the user configured it (a host whose key is unknown fails with ssh's
//! own message).

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc::Sender;
use std::sync::{Arc, Mutex};

use crate::hosts::Host;
use crate::lines::{read_line_bounded, Line, Tail, AGENT_LINE_MAX_BYTES};
use crate::proto::{FromAgent, ToAgent};

/// What a host's reader thread reports.
#[derive(Debug)]
pub enum Incoming {
    /// A protocol line.
    Message(FromAgent),
    /// A protocol line longer than [`AGENT_LINE_MAX_BYTES`]: the host is
    /// given up (what it meant is lost).
    TooLong {
        /// The line's length.
        len_bytes: u64,
    },
    /// stdout closed: the agent (or ssh) ended.
    Closed,
}

/// The ssh command line for `host` (without the program).
pub fn ssh_args(host: &Host, global: &[String], remote: &[String]) -> Vec<String> {
    let mut a = ssh_prefix(host, global);
    a.extend(remote.iter().map(|w| shell_quote(w)));
    a
}

/// Where `--push` puts numio on a host, relative to the login directory.
pub fn pushed_path(version: &str) -> String {
    let v: String = version
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || ".-+_".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!(".cache/numio/numio-{v}")
}

/// Why `--push` could not copy numio to a host.
#[derive(Debug, thiserror::Error)]
pub enum PushError {
    /// This numio's executable could not be opened.
    #[error("reading {exe}: {source}")]
    ReadExe {
        /// The executable.
        exe: std::path::PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// ssh could not be started.
    #[error("cannot run {ssh}: {source}")]
    Spawn {
        /// The ssh program.
        ssh: String,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// The remote copy failed.
    #[error("copying numio over (--push) failed ({status}): {stderr}")]
    Failed {
        /// ssh's exit status.
        status: ExitStatus,
        /// What ssh and the remote shell wrote, trimmed.
        stderr: String,
    },
    /// The thread that copied panicked.
    #[error("the copy panicked")]
    Panicked,
}

/// Copies `exe` (this numio) to `host` over ssh, as [`pushed_path`];
/// returns that path, or why it failed.
pub fn push(
    ssh: &str,
    host: &Host,
    global: &[String],
    exe: &std::path::Path,
    version: &str,
) -> Result<String, PushError> {
    let path = pushed_path(version);
    let mut a = ssh_prefix(host, global);
    // One remote shell command: written under a temporary name, then
    // renamed, so a host never runs a half-copied numio.
    a.push(format!(
        "mkdir -p .cache/numio && cat > {path}.$$ && chmod 755 {path}.$$ && mv -f {path}.$$ {path}"
    ));
    let file = std::fs::File::open(exe).map_err(|source| PushError::ReadExe {
        exe: exe.to_path_buf(),
        source,
    })?;
    let out = Command::new(ssh)
        .args(&a)
        .stdin(file)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .map_err(|source| PushError::Spawn {
            ssh: ssh.to_string(),
            source,
        })?;
    if !out.status.success() {
        return Err(PushError::Failed {
            status: out.status,
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        });
    }
    Ok(path)
}

/// `ssh`'s options and destination for `host`, before the command.
fn ssh_prefix(host: &Host, global: &[String]) -> Vec<String> {
    let mut a = vec!["-T".to_string(), "-o".into(), "BatchMode=yes".into()];
    if let Some(p) = host.port {
        a.extend(["-p".to_string(), p.to_string()]);
    }
    if let Some(u) = &host.user {
        a.extend(["-l".to_string(), u.clone()]);
    }
    a.extend(global.iter().cloned());
    a.extend(host.ssh_args.iter().cloned());
    a.push(host.addr.clone());
    a.push("--".into());
    a
}

/// `w` quoted for the remote shell (ssh joins the command's words with
/// spaces and hands them to the login shell).
pub fn shell_quote(w: &str) -> String {
    if !w.is_empty()
        && w.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_./=:,@+%".contains(&b))
    {
        return w.to_string();
    }
    format!("'{}'", w.replace('\'', r"'\''"))
}

/// A running ssh child.
pub struct Remote {
    child: Child,
    stdin: Option<ChildStdin>,
    stderr: Arc<Mutex<Tail>>,
    /// Closed when the stderr reader has read everything (EOF).
    stderr_read: std::sync::mpsc::Receiver<()>,
}

impl Remote {
    /// Starts `ssh` with `args`; its stdout lines go to `events` tagged
    /// with `index`.
    pub fn spawn(
        ssh: &str,
        args: &[String],
        index: usize,
        events: Sender<(usize, Incoming)>,
    ) -> std::io::Result<Remote> {
        let mut child = Command::new(ssh)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()?;
        let stdout = child.stdout.take().expect("piped");
        let stderr = child.stderr.take().expect("piped");
        let tail = Arc::new(Mutex::new(Tail::default()));
        let keep = Arc::clone(&tail);
        let (stderr_done, stderr_read) = std::sync::mpsc::channel::<()>();
        std::thread::spawn(move || {
            let _done = stderr_done;
            keep_tail(BufReader::new(stderr), &keep);
        });
        let keep = Arc::clone(&tail);
        std::thread::spawn(move || {
            forward_stdout(BufReader::new(stdout), AGENT_LINE_MAX_BYTES, &keep, |m| {
                events.send((index, m)).is_ok()
            });
        });
        Ok(Remote {
            stdin: child.stdin.take(),
            child,
            stderr: tail,
            stderr_read,
        })
    }

    /// Sends one message; false when the channel is gone.
    pub fn send(&mut self, m: &ToAgent) -> bool {
        let Some(w) = self.stdin.as_mut() else {
            return false;
        };
        let mut line = m.line();
        line.push('\n');
        w.write_all(line.as_bytes())
            .and_then(|()| w.flush())
            .is_ok()
    }

    /// Closes the agent's stdin: it stops and exits.
    pub fn close(&mut self) {
        self.stdin = None;
    }

    /// The last lines ssh and the agent wrote on stderr, joined.
    pub fn stderr_tail(&self) -> String {
        let t = self.stderr.lock().expect("stderr tail");
        t.lines()
            .filter(|l| !l.trim().is_empty())
            .collect::<Vec<_>>()
            .join(" | ")
    }

    /// Waits for ssh to exit, killing it after `grace`, and for its last
    /// stderr lines to be read (they explain the exit).
    pub fn finish(&mut self, grace: std::time::Duration) -> Option<ExitStatus> {
        let status = self.exit(grace);
        // The reader ends at EOF, which follows the exit unless something
        // the remote side started still holds the pipe: bounded.
        let _ = self
            .stderr_read
            .recv_timeout(std::time::Duration::from_secs(2));
        status
    }

    fn exit(&mut self, grace: std::time::Duration) -> Option<ExitStatus> {
        self.close();
        let until = std::time::Instant::now() + grace;
        loop {
            match self.child.try_wait() {
                Ok(Some(s)) => return Some(s),
                Ok(None) if std::time::Instant::now() < until => {
                    // Waiting for a child process to exit: there is no
                    // event to wait on short of SIGCHLD handling.
                    std::thread::sleep(std::time::Duration::from_millis(20));
                }
                _ => {
                    let _ = self.child.kill();
                    return self.child.wait().ok();
                }
            }
        }
    }
}

/// Keeps the last lines of `r` (a host's stderr) in `tail`, each line
/// read within [`crate::lines::TAIL_LINE_MAX_BYTES`].
fn keep_tail(mut r: impl BufRead, tail: &Mutex<Tail>) {
    let mut buf = Vec::new();
    while let Ok(Some(line)) =
        read_line_bounded(&mut r, &mut buf, crate::lines::TAIL_LINE_MAX_BYTES)
    {
        tail.lock()
            .expect("stderr tail")
            .push(&buf, line_len(&buf, line));
    }
}

fn line_len(buf: &[u8], line: Line) -> u64 {
    match line {
        Line::Whole => buf.len() as u64,
        Line::TooLong { len_bytes } => len_bytes,
    }
}

/// Reads an agent's stdout: protocol lines (at most `max_bytes` each) go
/// to `send` until it returns false; other lines (a login script's
/// output) go to `tail`; then [`Incoming::Closed`]. A protocol line over
/// the limit is reported as [`Incoming::TooLong`] and ends the reading.
pub fn forward_stdout(
    mut r: impl BufRead,
    max_bytes: usize,
    tail: &Mutex<Tail>,
    mut send: impl FnMut(Incoming) -> bool,
) {
    let mut buf = Vec::new();
    while let Ok(Some(line)) = read_line_bounded(&mut r, &mut buf, max_bytes) {
        let len_bytes = line_len(&buf, line);
        let parsed = match line {
            Line::Whole => serde_json::from_slice::<FromAgent>(&buf).ok(),
            Line::TooLong { .. } => None,
        };
        match parsed {
            Some(m) => {
                if !send(Incoming::Message(m)) {
                    return;
                }
            }
            None if matches!(line, Line::TooLong { .. }) && buf.starts_with(b"{\"type\":") => {
                send(Incoming::TooLong { len_bytes });
                // The rest is drained unread so the agent is not blocked
                // on a full pipe while the controller gives it up.
                let _ = std::io::copy(&mut r, &mut std::io::sink());
                break;
            }
            // Not the protocol (a login script's output): kept with
            // stderr for the error message, within the tail's bounds.
            None => {
                let mut stray = b"(stdout) ".to_vec();
                stray.extend_from_slice(&buf[..buf.len().min(crate::lines::TAIL_LINE_MAX_BYTES)]);
                tail.lock()
                    .expect("stderr tail")
                    .push(&stray, len_bytes + 9);
            }
        }
    }
    send(Incoming::Closed);
}

impl Drop for Remote {
    fn drop(&mut self) {
        self.close();
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
        }
        let _ = self.child.wait();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hosts::parse_hosts_file;

    // Issue 38: a host printing non-protocol lines without end (a login
    // script that loops) grew the controller's memory without bound.
    #[test]
    fn stray_output_keeps_a_bounded_tail() {
        let (tx, rx) = std::sync::mpsc::channel();
        let script = "i=0; while [ $i -lt 3000 ]; do echo \"banner line $i\"; i=$((i+1)); done; \
                      head -c 3000000 /dev/zero | tr '\\0' x >&2; echo >&2; echo last >&2";
        let mut r = Remote::spawn("sh", &["-c".into(), script.into()], 7, tx).unwrap();
        // Only the end of stdout comes: none of it is the protocol.
        let (i, end) = rx.recv().unwrap();
        assert!(i == 7 && matches!(end, Incoming::Closed), "{end:?}");
        r.finish(std::time::Duration::from_secs(5));
        let tail = r.stderr_tail();
        assert!(tail.len() < 20 * 600, "{} bytes kept", tail.len());
        assert!(
            tail.ends_with("last"),
            "{}",
            &tail[tail.len().saturating_sub(200)..]
        );
        assert!(
            tail.contains("banner line 2999"),
            "the stray stdout is kept too"
        );
    }

    // Issue 38: a 1 GiB agent line cost the controller 1.06 GB.
    #[test]
    fn a_protocol_line_over_the_limit_gives_the_host_up() {
        let mut input = br#"{"type":"hello","version":"T","protocol":1,"hostname":"a"}"#.to_vec();
        input.push(b'\n');
        input.extend_from_slice(br#"{"type":"result","result":"#);
        input.extend(std::iter::repeat_n(b'x', 10_000));
        input.extend_from_slice(b"\nnot seen\n");
        let tail = Mutex::new(Tail::default());
        let mut got = Vec::new();
        forward_stdout(&input[..], 1000, &tail, |m| {
            got.push(format!("{m:?}"));
            true
        });
        assert_eq!(got.len(), 3, "{got:?}");
        assert!(got[0].starts_with("Message(Hello"), "{got:?}");
        assert_eq!(got[1], "TooLong { len_bytes: 10026 }");
        assert_eq!(got[2], "Closed");
    }

    #[test]
    fn the_command_line_keeps_the_users_ssh_settings() {
        let h = &parse_hosts_file("root@db1:2222 -i /k/id\n", "h").unwrap()[0];
        let a = ssh_args(
            h,
            &["-F".into(), "/cfg".into()],
            &["/opt/numio dir/numio".into(), "agent".into()],
        );
        assert_eq!(
            a,
            [
                "-T",
                "-o",
                "BatchMode=yes",
                "-p",
                "2222",
                "-l",
                "root",
                "-F",
                "/cfg",
                "-i",
                "/k/id",
                "db1",
                "--",
                "'/opt/numio dir/numio'",
                "agent"
            ]
        );
        assert!(!a.iter().any(|w| w.contains("StrictHostKeyChecking")));
        assert_eq!(shell_quote("it's"), r"'it'\''s'");
        assert_eq!(
            pushed_path("0.1.0 (abc/d)"),
            ".cache/numio/numio-0.1.0__abc_d_"
        );
    }
}
