//! A numio child whose stderr is read line by line, so a test can wait
//! for numio's own word (a line on stderr) and then signal it, never for
//! a clock.

use std::io::Read;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long a wait for numio's next line may take before the test gives
/// up (a hung numio, not a slow one: the events come within seconds).
pub const GIVE_UP: Duration = Duration::from_secs(300);

/// A running numio whose stderr is read line by line (`\n` and the `\r` of
/// a redrawn progress line both end a line).
pub struct Running {
    child: Child,
    lines: Receiver<String>,
    stderr: Arc<Mutex<String>>,
}

impl Running {
    pub fn start(args: &[&str]) -> Running {
        let mut child = Command::new(env!("CARGO_BIN_EXE_numio"))
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("numio starts");
        let mut err = child.stderr.take().expect("stderr is piped");
        let (tx, lines) = std::sync::mpsc::channel();
        let stderr = Arc::new(Mutex::new(String::new()));
        let log = Arc::clone(&stderr);
        std::thread::spawn(move || {
            let (mut buf, mut line) = ([0u8; 4096], Vec::new());
            while let Ok(n @ 1..) = err.read(&mut buf) {
                log.lock()
                    .unwrap()
                    .push_str(&String::from_utf8_lossy(&buf[..n]));
                for &b in &buf[..n] {
                    if b == b'\n' || b == b'\r' {
                        let _ = tx.send(String::from_utf8_lossy(&line).into_owned());
                        line.clear();
                    } else {
                        line.push(b);
                    }
                }
            }
        });
        Running {
            child,
            lines,
            stderr,
        }
    }

    /// The process id of the running numio.
    #[allow(dead_code)] // not every test crate that shares this module asks
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Waits for the `n`-th stderr line that `pred` accepts and returns it.
    pub fn wait_for(&self, n: usize, what: &str, pred: impl Fn(&str) -> bool) -> String {
        let mut seen = 0;
        loop {
            match self.lines.recv_timeout(GIVE_UP) {
                Ok(line) if pred(&line) => {
                    seen += 1;
                    if seen == n {
                        return line;
                    }
                }
                Ok(_) => {}
                Err(RecvTimeoutError::Disconnected) => panic!(
                    "numio ended before {what}; stderr: {}",
                    self.stderr.lock().unwrap()
                ),
                Err(RecvTimeoutError::Timeout) => panic!(
                    "no {what} within {GIVE_UP:?}; stderr: {}",
                    self.stderr.lock().unwrap()
                ),
            }
        }
    }

    /// Sends `signal`, waits for the exit, and returns the exit code,
    /// stdout, stderr and how long it took from the signal to the exit.
    pub fn signal_and_wait(self, signal: i32) -> (i32, String, String, Duration) {
        let pid = i32::try_from(self.child.id()).expect("pid fits");
        // SAFETY: kill(2) on the pid of our own child, which has not been
        // waited for yet, so the pid cannot have been reused.
        assert_eq!(unsafe { libc::kill(pid, signal) }, 0, "signal delivered");
        let sent = Instant::now();
        let out = self.child.wait_with_output().expect("numio exits");
        let took = sent.elapsed();
        // The reader thread ends at EOF, after the process exits.
        while self.lines.recv_timeout(GIVE_UP).is_ok() {}
        let err = self.stderr.lock().unwrap().clone();
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            err,
            took,
        )
    }

    /// Waits for numio to exit by itself; the exit code, stdout, stderr.
    #[allow(dead_code)] // not every test crate that shares this module asks
    pub fn wait(self) -> (i32, String, String) {
        let out = self.child.wait_with_output().expect("numio exits");
        while self.lines.recv_timeout(GIVE_UP).is_ok() {}
        let err = self.stderr.lock().unwrap().clone();
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            err,
        )
    }
}

/// The seconds a progress line (`[  3.2s / 8.0s, …`) says.
#[allow(dead_code)] // not every test crate that shares this module asks
pub fn progress_s(line: &str) -> Option<f64> {
    line.trim_start()
        .strip_prefix('[')?
        .split('s')
        .next()?
        .trim()
        .parse()
        .ok()
}
