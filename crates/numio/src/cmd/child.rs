//! Starting a numio child (a `numio serve` for a sweep or a fabric study)
//! from a process that handles its own signals.

use std::process::Command;

/// Makes `command`'s child start as from a shell and die with its parent:
/// the parent blocks SIGINT and SIGTERM for its signal thread and a child
/// inherits the mask, so they are unblocked (or SIGTERM never stops it);
/// and if the parent dies without stopping it (SIGKILL, a crash) the
/// kernel sends it SIGTERM, so nothing is left listening.
pub fn unblocked_and_tied_to_parent(command: &mut Command) {
    let parent = std::process::id();
    // SAFETY: sigemptyset, sigprocmask, prctl, getppid and _exit are
    // async-signal-safe; the closure touches nothing else between fork and
    // exec.
    unsafe {
        std::os::unix::process::CommandExt::pre_exec(command, move || {
            let mut none: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut none);
            libc::sigprocmask(libc::SIG_SETMASK, &none, std::ptr::null_mut());
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM);
            if libc::getppid() as u32 != parent {
                // The parent died before the prctl took hold.
                libc::_exit(1);
            }
            Ok(())
        });
    }
}
