//! Ctrl-C (SIGINT) and SIGTERM during a session: the first one sets a flag
//! the engine polls (workers drain what is in flight and the run covers the
//! time measured; a schedule keeps its completed runs), a second one exits
//! the process at once, after the exit hooks registered with
//! [`on_second_signal`] ran (a device setting numio changed is put back
//! even then).
//!
//! The signals are blocked in the calling thread before any worker exists,
//! so every thread started later inherits the mask: no worker's
//! `io_uring_enter` or `pread` is ever interrupted (EINTR), and no handler
//! runs in async-signal context. One thread takes them with `sigwait` and
//! tells the caller through a plain function (it runs on that thread).
//! Child processes do not inherit the mask (std resets it on spawn).

use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use crate::{SessionError, SignalError};

/// Set by the first SIGINT / SIGTERM; the engine polls it.
static INTERRUPT: AtomicBool = AtomicBool::new(false);
/// The signal that set it.
static SIGNAL: AtomicI32 = AtomicI32::new(0);
/// Whether a second signal exits (see [`second_signal_waits`]).
static SECOND_EXITS: AtomicBool = AtomicBool::new(true);
/// Whether [`install`] succeeded (once per process).
static INSTALLED: OnceLock<Result<(), SignalError>> = OnceLock::new();

/// Work a second signal runs before the process exits.
type ExitWork = Arc<dyn Fn() + Send + Sync>;
/// The registered exit hooks, by id.
static EXIT_HOOKS: Mutex<Vec<(u64, ExitWork)>> = Mutex::new(Vec::new());
static NEXT_HOOK_ID: AtomicU64 = AtomicU64::new(0);

/// What the signal thread tells the caller's `notify` function.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Notice {
    /// A first signal: the flag is set and the run is stopping.
    Stopping {
        /// `libc::SIGINT` or `libc::SIGTERM`.
        signal: i32,
    },
    /// A second signal: the process exits with 128 + `signal` right after
    /// `notify` returns and the [`on_second_signal`] hooks ran, without
    /// running destructors.
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

/// A registered exit hook; dropping it unregisters the hook.
#[derive(Debug)]
#[must_use = "the hook is unregistered when this handle drops"]
pub struct ExitHook {
    id: u64,
}

/// Registers `hook` to run on the signal thread when a second SIGINT /
/// SIGTERM exits the process at once (the first one only sets the flag:
/// the caller's own code winds down and undoes what it changed). For
/// changes to the machine that must not outlive numio, such as a
/// controller feature: the hook puts it back. Hooks run in registration
/// order; each must finish quickly and may run while the main thread is in
/// the middle of its own work, so it synchronises with it.
pub fn on_second_signal(hook: impl Fn() + Send + Sync + 'static) -> ExitHook {
    let id = NEXT_HOOK_ID.fetch_add(1, Ordering::Relaxed);
    EXIT_HOOKS
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .push((id, Arc::new(hook)));
    ExitHook { id }
}

impl Drop for ExitHook {
    fn drop(&mut self) {
        EXIT_HOOKS
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .retain(|(id, _)| *id != self.id);
    }
}

/// [`on_second_signal`] for an undo that can fail (a guard's restorer):
/// its error is said on stderr (`numio: …`) before the process exits.
pub fn undo_on_second_signal<E: std::fmt::Display>(
    undo: impl Fn() -> Result<(), E> + Send + Sync + 'static,
) -> ExitHook {
    on_second_signal(move || {
        if let Err(e) = undo() {
            eprintln!("numio: {e}");
        }
    })
}

/// What a command puts back when a signal stops it: the words of its
/// [`Notice::line`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Undoing {
    /// `numio coalesce set` and `off`: the values changed so far.
    Coalescing,
    /// `numio coalesce sweep`: every original value (a progress line may
    /// be on the screen: cleared first).
    CoalesceSweep,
    /// `numio vfio bind`: the controllers moved so far.
    VfioBind,
}

impl Notice {
    /// The line (with its newline) that says what happens now, for a
    /// command `undoing` something.
    pub fn line(self, undoing: Undoing) -> String {
        let name = |signal| {
            if signal == libc::SIGTERM {
                "SIGTERM"
            } else {
                "Ctrl-C"
            }
        };
        match (undoing, self) {
            (Undoing::Coalescing, Notice::Stopping { signal }) => format!(
                "numio: {}: stopping; what changed is put back (again to exit at once, still putting it back)\n",
                name(signal)
            ),
            (Undoing::Coalescing, Notice::Exiting { .. }) => {
                "numio: interrupted again: putting back what changed, then exiting\n".to_string()
            }
            (Undoing::CoalesceSweep, Notice::Stopping { signal }) => format!(
                "\r\x1b[2Knumio: {}: stopping; the points measured are reported and every original coalescing value is put back (again to exit at once, still putting them back)\n",
                name(signal)
            ),
            (Undoing::CoalesceSweep, Notice::Exiting { .. }) => "\r\x1b[2Knumio: interrupted again: putting back the original coalescing values, then exiting without a report\n".to_string(),
            (Undoing::VfioBind, Notice::Stopping { .. }) => {
                "numio: stopping; the controllers moved so far are given back\n".to_string()
            }
            (Undoing::VfioBind, Notice::Exiting { .. }) => {
                "numio: interrupted again: giving back, then exiting\n".to_string()
            }
        }
    }
}

/// Runs the registered exit hooks (outside the registry's lock, so a hook
/// may drop its own handle).
fn run_exit_hooks() {
    let hooks: Vec<ExitWork> = EXIT_HOOKS
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .iter()
        .map(|(_, h)| Arc::clone(h))
        .collect();
    for hook in hooks {
        hook();
    }
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

/// Makes every later signal do what the first did (set the flag, tell
/// `notify` it is stopping) instead of exiting: for a process whose undo
/// must run to its end whatever arrives (`numio connect` disconnecting).
/// SIGKILL still ends it.
pub fn second_signal_waits() {
    SECOND_EXITS.store(false, Ordering::Relaxed);
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
                return Err(SignalError::Block {
                    source: Arc::new(std::io::Error::from_raw_os_error(rc)),
                });
            }
            std::thread::Builder::new()
                .name("numio-signals".into())
                .spawn(move || wait_for_signals(set, notify))
                .map(|_| ())
                .map_err(|e| SignalError::Thread {
                    source: Arc::new(e),
                })
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
        if INTERRUPT.load(Ordering::Relaxed) && SECOND_EXITS.load(Ordering::Relaxed) {
            notify(Notice::Exiting { signal: sig });
            run_exit_hooks();
            // SAFETY: _exit ends the process at once without running
            // destructors or atexit handlers, which other threads may be using.
            unsafe { libc::_exit(128 + sig) };
        }
        SIGNAL.store(sig, Ordering::Relaxed);
        INTERRUPT.store(true, Ordering::Relaxed);
        notify(Notice::Stopping { signal: sig });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    #[test]
    fn exit_hooks_run_in_order_until_their_handle_drops() {
        static RAN: Mutex<Vec<&str>> = Mutex::new(Vec::new());
        static COUNT: AtomicUsize = AtomicUsize::new(0);
        let a = on_second_signal(|| RAN.lock().unwrap().push("a"));
        let b = on_second_signal(|| {
            RAN.lock().unwrap().push("b");
            COUNT.fetch_add(1, Ordering::Relaxed);
        });
        run_exit_hooks();
        // Other tests may register hooks of their own: look only at ours.
        assert_eq!(*RAN.lock().unwrap(), ["a", "b"]);
        drop(a);
        run_exit_hooks();
        assert_eq!(*RAN.lock().unwrap(), ["a", "b", "b"]);
        drop(b);
        run_exit_hooks();
        assert_eq!(COUNT.load(Ordering::Relaxed), 2, "b unregistered");
    }

    #[test]
    fn notices_say_what_is_put_back() {
        let stop = Notice::Stopping {
            signal: libc::SIGTERM,
        };
        assert_eq!(
            stop.line(Undoing::Coalescing),
            "numio: SIGTERM: stopping; what changed is put back (again to exit at once, still putting it back)\n"
        );
        let again = Notice::Exiting {
            signal: libc::SIGINT,
        };
        assert!(again
            .line(Undoing::CoalesceSweep)
            .starts_with("\r\x1b[2Knumio: interrupted again"));
        assert_eq!(
            Notice::Stopping {
                signal: libc::SIGINT
            }
            .line(Undoing::VfioBind),
            "numio: stopping; the controllers moved so far are given back\n"
        );
    }
}
