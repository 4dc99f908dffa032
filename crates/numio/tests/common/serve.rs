//! A `numio serve` child whose stdout and stderr lines a test waits on
//! (events, never a clock); killed when dropped.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::Receiver;

use super::running::GIVE_UP;

/// A `numio serve` whose stdout and stderr lines a test waits on.
pub struct Serve {
    child: Child,
    lines: Receiver<String>,
}

impl Serve {
    pub fn start(args: &[&str]) -> Serve {
        let mut child = Command::new(env!("CARGO_BIN_EXE_numio"))
            .arg("serve")
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("numio serve runs");
        let (tx, lines) = std::sync::mpsc::channel();
        let out: Box<dyn std::io::Read + Send> = Box::new(child.stdout.take().unwrap());
        let err: Box<dyn std::io::Read + Send> = Box::new(child.stderr.take().unwrap());
        for r in [out, err] {
            let tx = tx.clone();
            std::thread::spawn(move || {
                for l in BufReader::new(r).lines().map_while(Result::ok) {
                    let _ = tx.send(l);
                }
            });
        }
        Serve { child, lines }
    }

    /// The next line holding `want`.
    pub fn line(&self, want: &str) -> String {
        loop {
            let l = self
                .lines
                .recv_timeout(GIVE_UP)
                .unwrap_or_else(|_| panic!("no line with {want:?} from numio serve"));
            if l.contains(want) {
                return l;
            }
        }
    }

    /// The ports it listens on, once ready.
    pub fn ports(&self, n: usize) -> Vec<String> {
        let ports = (1..=n)
            .map(|i| {
                let l = self.line(&format!("port {i} "));
                l.split_whitespace().nth(4).unwrap().to_string()
            })
            .collect();
        self.line("ready");
        ports
    }

    pub fn signal(&self, sig: i32) {
        let pid = i32::try_from(self.child.id()).unwrap();
        // SAFETY: kill(2) on our own child, not yet waited for.
        assert_eq!(unsafe { libc::kill(pid, sig) }, 0, "signal delivered");
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
