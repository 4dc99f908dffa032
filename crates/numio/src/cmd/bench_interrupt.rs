//! Ctrl-C (SIGINT) and SIGTERM during `numio bench` and `numio compare`:
//! the first one asks the engine to stop (workers drain what is in flight
//! and the report covers the time measured), a second one exits at once.
//!
//! The signals are blocked in the calling thread before any worker exists,
//! so every thread started later inherits the mask: no worker's
//! `io_uring_enter` or `pread` is ever interrupted (EINTR), and no handler
//! runs in async-signal context. One thread takes them with `sigwait`.
//! Child processes do not inherit the mask (std resets it on spawn).

use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::OnceLock;

/// Set by the first SIGINT / SIGTERM; the engine polls it.
static INTERRUPT: AtomicBool = AtomicBool::new(false);
/// The signal that set it.
static SIGNAL: AtomicI32 = AtomicI32::new(0);
/// Whether [`install`] succeeded (once per process).
static INSTALLED: OnceLock<Result<(), String>> = OnceLock::new();

/// The flag to hand to `engine::run_until`.
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
/// it starts from now on) and starts the thread that takes them. Call it
/// before starting workers; later calls do nothing.
pub fn install() -> anyhow::Result<()> {
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
                .spawn(move || wait_for_signals(set))
                .map(|_| ())
                .map_err(|e| format!("cannot start the signal thread: {e}"))
        })
        .clone()
        .map_err(anyhow::Error::msg)
}

fn wait_for_signals(set: libc::sigset_t) {
    loop {
        let mut sig: libc::c_int = 0;
        // SAFETY: `set` is initialised and blocked in this thread (inherited
        // from the thread that called `install`); `sig` is a valid out pointer.
        if unsafe { libc::sigwait(&set, &mut sig) } != 0 {
            continue;
        }
        if INTERRUPT.load(Ordering::Relaxed) {
            // Second signal: no report. Clear a progress line, then go.
            eprint!("\r\x1b[2Knumio: interrupted again: exiting without a report\n");
            // SAFETY: _exit ends the process at once without running
            // destructors or atexit handlers, which other threads may be using.
            unsafe { libc::_exit(128 + sig) };
        }
        SIGNAL.store(sig, Ordering::Relaxed);
        INTERRUPT.store(true, Ordering::Relaxed);
        let name = if sig == libc::SIGTERM {
            "SIGTERM"
        } else {
            "Ctrl-C"
        };
        eprint!(
            "\r\x1b[2Knumio: {name}: stopping; in-flight I/O drains and the report covers the time measured (again to exit at once)\n"
        );
    }
}
