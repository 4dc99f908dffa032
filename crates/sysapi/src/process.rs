//! Child processes numio starts (a `numio serve` for a sweep, a fabric
//! study or the fleet agent; a `numio connect`) and stops: started as from
//! a shell and tied to their parent ([`tie_to_parent`]), stopped with
//! SIGTERM ([`terminate`]) so they drain and close as on Ctrl-C.

use std::process::Command;

/// Makes `command`'s child start as from a shell and die with its parent:
/// the parent blocks SIGINT and SIGTERM for its signal thread and a child
/// inherits the mask, so they are unblocked (or SIGTERM never stops it);
/// and if the parent dies without stopping it (SIGKILL, a crash) the
/// kernel sends it SIGTERM, so nothing is left listening.
pub fn tie_to_parent(command: &mut Command) {
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

/// Sends SIGTERM to `child` (not yet waited for, so its pid is still its
/// own).
pub fn terminate(child: &std::process::Child) -> std::io::Result<()> {
    let pid = rustix::process::Pid::from_raw(child.id() as i32)
        .ok_or_else(|| std::io::Error::from(std::io::ErrorKind::InvalidInput))?;
    rustix::process::kill_process(pid, rustix::process::Signal::TERM)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A child started tied to its parent stops on SIGTERM, even though
    /// this test's thread may block signals.
    #[test]
    fn a_tied_child_stops_on_terminate() {
        let mut cmd = Command::new("sleep");
        cmd.arg("600");
        tie_to_parent(&mut cmd);
        let mut child = cmd.spawn().unwrap();
        terminate(&child).unwrap();
        let status = child.wait().unwrap();
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(status.signal(), Some(libc::SIGTERM));
    }
}
