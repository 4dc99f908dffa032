//! Reading `numio serve --config`: a regular file of at most
//! [`MAX_CONFIG_BYTES`], opened without blocking (a FIFO is refused, not
//! waited on) and read on a thread of its own within [`READ_TIMEOUT`], so
//! that the thread which answers SIGTERM never waits on the file (a hung
//! mount, a FIFO) and a `/dev/zero` cannot fill memory. Start-up and each
//! SIGHUP reload read the file through [`read`].

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::RecvTimeoutError;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The largest configuration read (a real one is a few KiB).
pub const MAX_CONFIG_BYTES: u64 = 1 << 20;
/// How long a read of the configuration may take.
pub const READ_TIMEOUT: Duration = Duration::from_secs(5);
/// How often a wait looks whether it should stop.
const POLL: Duration = Duration::from_millis(20);

/// Why `--config` could not be read; each names the file.
#[derive(Debug, thiserror::Error)]
pub enum ConfigFileError {
    /// An earlier read that was given up on has not returned.
    #[error("reading --config {}: the previous read has not returned yet (a hung mount?); give a regular file on a local filesystem", path.display())]
    Hung {
        /// The file.
        path: PathBuf,
    },
    /// No answer within the timeout.
    #[error("reading --config {}: no answer within {timeout_s} s (a hung mount or a device?); give a regular file on a local filesystem", path.display())]
    TimedOut {
        /// The file.
        path: PathBuf,
        /// The timeout, seconds.
        timeout_s: u64,
    },
    /// The read was given up on because the target is stopping.
    #[error("reading --config {}: abandoned, stopping", path.display())]
    Stopped {
        /// The file.
        path: PathBuf,
    },
    /// The file was read and refused, or the read failed.
    #[error("reading --config {}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: ReadFailure,
    },
}

/// Why the file read is not a configuration.
#[derive(Debug, thiserror::Error)]
pub enum ReadFailure {
    /// The open, `fstat` or read failed.
    #[error(transparent)]
    Io(std::io::Error),
    /// Not a regular file: what it is, in words ("a FIFO").
    #[error("not a regular file ({kind}); give a TOML file")]
    NotRegular {
        /// What it is.
        kind: &'static str,
    },
    /// Longer than [`MAX_CONFIG_BYTES`].
    #[error("{len_bytes} bytes or more, more than the {} MiB a configuration may have; give the TOML file", MAX_CONFIG_BYTES >> 20)]
    TooBig {
        /// Bytes found.
        len_bytes: u64,
    },
    /// Not UTF-8.
    #[error("not UTF-8 text; give a TOML file")]
    NotUtf8,
}

/// Set while a read that was given up on (a hung mount) has not returned:
/// its thread is not joined by another at each SIGHUP. Reads that are
/// merely running at once (a reload beside a test's read) are fine.
static HUNG: AtomicBool = AtomicBool::new(false);

/// Where one read's thread stands, shared with the reader that waits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ReadState {
    Running,
    Done,
    GivenUp,
}

/// Marks a read done when its work ends, or is dropped without running (a
/// thread that could not start), and clears [`HUNG`] if it had been given
/// up on.
struct Finish(Arc<Mutex<ReadState>>);

impl Drop for Finish {
    fn drop(&mut self) {
        let mut st = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if *st == ReadState::GivenUp {
            HUNG.store(false, Ordering::SeqCst);
        }
        *st = ReadState::Done;
    }
}

/// The text of `path`, read off this thread: gives up after `timeout`, or
/// as soon as `stop()` says so (SIGTERM during a reload).
pub fn read(
    path: &Path,
    timeout: Duration,
    stop: impl Fn() -> bool,
) -> Result<String, ConfigFileError> {
    let path_buf = || path.to_path_buf();
    if HUNG.load(Ordering::SeqCst) {
        return Err(ConfigFileError::Hung { path: path_buf() });
    }
    let state = Arc::new(Mutex::new(ReadState::Running));
    let finish = Finish(Arc::clone(&state));
    let owned = path.to_path_buf();
    let work = move || {
        let _finish = finish;
        read_capped(&owned)
    };
    let text = off_thread(work, timeout, stop).map_err(|w| {
        let mut st = state.lock().unwrap_or_else(|e| e.into_inner());
        if *st == ReadState::Running {
            *st = ReadState::GivenUp;
            HUNG.store(true, Ordering::SeqCst);
        }
        match w {
            Waited::TimedOut => ConfigFileError::TimedOut {
                path: path_buf(),
                timeout_s: timeout.as_secs(),
            },
            Waited::Stopped => ConfigFileError::Stopped { path: path_buf() },
        }
    })?;
    text.map_err(|source| ConfigFileError::Read {
        path: path_buf(),
        source,
    })
}

/// Why [`off_thread`] returned without the work's answer.
#[derive(Debug, PartialEq, Eq)]
pub enum Waited {
    /// The work took longer than the timeout (it is left to finish alone).
    TimedOut,
    /// `stop()` said to give up.
    Stopped,
}

/// Runs `work` on a thread of its own and waits for its answer for at most
/// `timeout`, looking at `stop` every [`POLL`].
pub fn off_thread<T: Send + 'static>(
    work: impl FnOnce() -> T + Send + 'static,
    timeout: Duration,
    stop: impl Fn() -> bool,
) -> Result<T, Waited> {
    let (tx, rx) = std::sync::mpsc::sync_channel(1);
    let spawned = std::thread::Builder::new()
        .name("numio-config-read".into())
        .spawn(move || {
            let _ = tx.send(work());
        });
    if spawned.is_err() {
        // No thread to be had: the caller's error names the file.
        return Err(Waited::TimedOut);
    }
    let deadline = Instant::now() + timeout;
    loop {
        if stop() {
            return Err(Waited::Stopped);
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(Waited::TimedOut);
        }
        match rx.recv_timeout(left.min(POLL)) {
            Ok(v) => return Ok(v),
            Err(RecvTimeoutError::Timeout) => continue,
            Err(RecvTimeoutError::Disconnected) => return Err(Waited::TimedOut),
        }
    }
}

/// `path`'s text: a regular file (opened with O_NONBLOCK, so a FIFO does
/// not wait for a writer) of at most [`MAX_CONFIG_BYTES`].
fn read_capped(path: &Path) -> Result<String, ReadFailure> {
    use sysapi::file::CappedReadError as E;
    let bytes = sysapi::file::read_regular_capped(path, MAX_CONFIG_BYTES).map_err(|e| match e {
        E::Io(e) => ReadFailure::Io(e),
        E::NotRegular(kind) => ReadFailure::NotRegular { kind },
        E::TooBig { len_bytes, .. } => ReadFailure::TooBig { len_bytes },
    })?;
    String::from_utf8(bytes).map_err(|_| ReadFailure::NotUtf8)
}
#[cfg(test)]
mod tests {
    use super::*;

    /// `e` and its causes joined with ": ", as the binary prints them.
    fn chain(e: &dyn std::error::Error) -> String {
        let mut text = e.to_string();
        let mut cause = e.source();
        while let Some(c) = cause {
            text.push_str(&format!(": {c}"));
            cause = c.source();
        }
        text
    }

    fn temp(tag: &str) -> PathBuf {
        std::env::temp_dir().join(format!("numio-config-{tag}-{}", std::process::id()))
    }

    /// The tests take turns (one reads /dev/zero).
    static ONE_READ: std::sync::Mutex<()> = std::sync::Mutex::new(());

    /// Regression: reads running at once (serve's tests read their
    /// configuration beside these) were refused as "the previous read has
    /// not returned yet", which only a read given up on should be.
    #[test]
    fn reads_at_once_are_all_answered() {
        let p = temp("many");
        std::fs::write(&p, "listen = []\n").unwrap();
        let readers: Vec<_> = (0..4)
            .map(|_| {
                let p = p.clone();
                std::thread::spawn(move || {
                    read(&p, READ_TIMEOUT, || false).map_err(|e| format!("{e:#}"))
                })
            })
            .collect();
        for r in readers {
            assert_eq!(r.join().unwrap().unwrap(), "listen = []\n");
        }
        std::fs::remove_file(&p).unwrap();
    }

    #[test]
    fn a_regular_file_is_read() {
        let _turn = ONE_READ.lock().unwrap();
        let p = temp("ok");
        std::fs::write(&p, "listen = []\n").unwrap();
        let text = read(&p, READ_TIMEOUT, || false).unwrap();
        std::fs::remove_file(&p).unwrap();
        assert_eq!(text, "listen = []\n");
    }

    // Regression (issue 38): `--config /dev/zero` read until memory failed,
    // and a FIFO blocked the thread that answers SIGTERM.
    #[test]
    fn devices_fifos_and_big_files_are_refused_by_name() {
        let _turn = ONE_READ.lock().unwrap();
        let e = chain(&read(Path::new("/dev/zero"), READ_TIMEOUT, || false).unwrap_err());
        assert!(
            e.contains("--config /dev/zero") && e.contains("a character device"),
            "{e}"
        );
        let fifo = temp("fifo");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: mkfifo on a NUL-terminated path we own.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let e = chain(&read(&fifo, READ_TIMEOUT, || false).unwrap_err());
        std::fs::remove_file(&fifo).unwrap();
        assert!(e.contains("a FIFO"), "{e}");
        let big = temp("big");
        std::fs::File::create(&big)
            .unwrap()
            .set_len(MAX_CONFIG_BYTES + 1)
            .unwrap();
        let e = chain(&read(&big, READ_TIMEOUT, || false).unwrap_err());
        std::fs::remove_file(&big).unwrap();
        assert!(e.contains("more than the 1 MiB"), "{e}");
    }

    #[test]
    fn a_wait_ends_at_its_timeout_or_when_told_to_stop() {
        // Work that never answers (a hung mount): the sender is kept alive
        // by the blocked thread, which is left behind.
        let (_hold, never) = std::sync::mpsc::channel::<()>();
        let work = move || never.recv().ok();
        let began = Instant::now();
        let r = off_thread(work, Duration::from_millis(100), || false);
        assert_eq!(r.unwrap_err(), Waited::TimedOut);
        assert!(began.elapsed() < Duration::from_secs(5));
        let (_hold2, never2) = std::sync::mpsc::channel::<()>();
        let r = off_thread(
            move || never2.recv().ok(),
            Duration::from_secs(3600),
            || true,
        );
        assert_eq!(r.unwrap_err(), Waited::Stopped);
        assert_eq!(off_thread(|| 7, Duration::from_secs(60), || false), Ok(7));
    }
}
