//! Ctrl-C (SIGINT) and SIGTERM during a session: the first one sets a flag
//! the engine polls (workers drain what is in flight and the run covers the
//! time measured; a schedule keeps its completed runs), a second one exits
//! the process at once.
//!
//! The signals are blocked in the calling thread before any worker exists,
//! so every thread started later inherits the mask: no worker's
//! `io_uring_enter` or `pread` is ever interrupted (EINTR), and no handler
//! runs in async-signal context. One thread takes them with `sigwait` and
//! tells the caller through a plain function (it runs on that thread).
//! Child processes do not inherit the mask (std resets it on spawn).

use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::OnceLock;

use crate::SessionError;

/// Set by the first SIGINT / SIGTERM; the engine polls it.
static INTERRUPT: AtomicBool = AtomicBool::new(false);
/// The signal that set it.
static SIGNAL: AtomicI32 = AtomicI32::new(0);
/// Whether [`install`] succeeded (once per process).
static INSTALLED: OnceLock<Result<(), String>> = OnceLock::new();

/// What the signal thread tells the caller's `notify` function.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Notice {
    /// A first signal: the flag is set and the run is stopping.
    Stopping {
        /// `libc::SIGINT` or `libc::SIGTERM`.
        signal: i32,
    },
    /// A second signal: the process exits with 128 + `signal` right after
    /// `notify` returns, without running destructors.
    Exiting {
        /// `libc::SIGINT` or `libc::SIGTERM`.
        signal: i32,
    },
}

/// The flag to hand to [`crate::run_once`], [`crate::Schedule::run`] or
/// `engine::run_until`.
pub fn flag() -> &'static AtomicBool {
    &INTERRUPT
}

/// Whether a first SIGINT / SIGTERM has arrived.
pub fn interrupted() -> bool {
    INTERRUPT.load(Ordering::Relaxed)
}

/// The exit status after an interrupt: 128 + the signal (130 for Ctrl-C,
/// 143 for SIGTERM), as a shell reports a process the signal killed.
pub fn exit_code() -> Option<i32> {
    interrupted().then(|| 128 + SIGNAL.load(Ordering::Relaxed))
}

fn signal_set() -> libc::sigset_t {
    // SAFETY: sigset_t is plain data; sigemptyset initialises it before use,
    // and sigaddset only sets bits for two valid signal numbers.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGINT);
        libc::sigaddset(&mut set, libc::SIGTERM);
        set
    }
}

/// Blocks SIGINT and SIGTERM in the calling thread (and so in every thread
/// it starts from now on) and starts the thread that takes them, which
/// calls `notify` for each. Call it before starting workers; later calls
/// do nothing (the first `notify` stays).
pub fn install(notify: fn(Notice)) -> Result<(), SessionError> {
    INSTALLED
        .get_or_init(|| {
            let set = signal_set();
            // SAFETY: `set` is an initialised sigset_t; a null old-mask
            // pointer is allowed.
            let rc = unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) };
            if rc != 0 {
                return Err(format!(
                    "cannot block SIGINT/SIGTERM: {}",
                    std::io::Error::from_raw_os_error(rc)
                ));
            }
            std::thread::Builder::new()
                .name("numio-signals".into())
                .spawn(move || wait_for_signals(set, notify))
                .map(|_| ())
                .map_err(|e| format!("cannot start the signal thread: {e}"))
        })
        .clone()
        .map_err(SessionError::Signals)
}

fn wait_for_signals(set: libc::sigset_t, notify: fn(Notice)) {
    loop {
        let mut sig: libc::c_int = 0;
        // SAFETY: `set` is initialised and blocked in this thread (inherited
        // from the thread that called `install`); `sig` is a valid out pointer.
        if unsafe { libc::sigwait(&set, &mut sig) } != 0 {
            continue;
        }
        if INTERRUPT.load(Ordering::Relaxed) {
            notify(Notice::Exiting { signal: sig });
            // SAFETY: _exit ends the process at once without running
            // destructors or atexit handlers, which other threads may be using.
            unsafe { libc::_exit(128 + sig) };
        }
        SIGNAL.store(sig, Ordering::Relaxed);
        INTERRUPT.store(true, Ordering::Relaxed);
        notify(Notice::Stopping { signal: sig });
    }
}
