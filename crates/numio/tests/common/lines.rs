//! Waiting for numio's own word: lines read from a child's pipe, and the
//! next one that says something, never a clock.

use std::io::{BufRead, BufReader, Read};
use std::sync::mpsc::Receiver;
use std::time::Duration;

/// How long a wait for a line may take before the test gives up (a hung
/// numio, not a slow one).
pub const LINE_WAIT: Duration = Duration::from_secs(120);

/// The lines of `r` (a child's stdout or stderr), read on a thread.
pub fn lines_of(r: impl Read + Send + 'static) -> Receiver<String> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for l in BufReader::new(r).lines().map_while(Result::ok) {
            let _ = tx.send(l);
        }
    });
    rx
}

/// The next line that contains `want`.
pub fn next_line(lines: &Receiver<String>, want: &str) -> String {
    loop {
        let l = lines
            .recv_timeout(LINE_WAIT)
            .unwrap_or_else(|_| panic!("no line with {want:?} from numio serve"));
        if l.contains(want) {
            return l;
        }
    }
}
