//! `io_uring_enter` the way the engine's hot path calls it: through the
//! ring's registered fd where the kernel allows (IORING_REGISTER_RING_FDS,
//! Linux 5.18, which skips the fd lookup on every call), with GETEVENTS
//! always set so a DEFER_TASKRUN ring posts its completions, EINTR retried
//! and EAGAIN/EBUSY (completions to reap first) reported as nothing
//! submitted.
//!
//! Why not the io-uring crate's own registration: its
//! `Submitter::register_ring_fd` keeps the registered index in the
//! `Submitter<'_>` it was called on, a value that borrows the ring and that
//! `IoUring::submitter()` makes afresh, index unset, on every call; the
//! index is not readable and no `Submitter` can be made with one. To enter
//! with it every batch, a backend would have to keep a `Submitter`
//! borrowing the ring it owns: a self-referential struct, more `unsafe`
//! than the two system calls below. The crate's `submit_and_wait` also sets
//! GETEVENTS only when waiting (or when TASKRUN_FLAG says so), where the
//! hot path wants it on every submit.

use std::io;
use std::os::fd::AsRawFd;

const IORING_ENTER_GETEVENTS: u32 = 1;
const IORING_ENTER_REGISTERED_RING: u32 = 1 << 4;
const IORING_REGISTER_RING_FDS: u32 = 20;
const IORING_UNREGISTER_RING_FDS: u32 = 21;

/// The kernel's `struct io_uring_rsrc_update`.
#[repr(C)]
struct RsrcUpdate {
    offset: u32,
    resv: u32,
    data: u64,
}

const _: () = assert!(std::mem::size_of::<RsrcUpdate>() == 16);

/// How one ring is entered: its registered index (or plain fd) and flags,
/// and the SQEs the kernel has not taken yet.
#[derive(Debug)]
pub struct Enter {
    /// The registered index, or the ring fd.
    fd: i32,
    /// The ring fd (to unregister the index).
    ring_fd: i32,
    flags: u32,
    unsubmitted: u32,
}

impl Enter {
    /// Registers the fd of `ring` (which the caller owns and keeps for as
    /// long as this is used); says in `features` or `notes` whether that
    /// worked (a plain fd is used otherwise).
    pub fn register(
        ring: &impl AsRawFd,
        features: &mut Vec<String>,
        notes: &mut Vec<String>,
    ) -> Enter {
        let ring_fd = ring.as_raw_fd();
        let mut up = RsrcUpdate {
            offset: u32::MAX,
            resv: 0,
            data: ring_fd as u64,
        };
        // SAFETY: IORING_REGISTER_RING_FDS with nr_args 1 reads and writes
        // exactly one `io_uring_rsrc_update` (the layout above, 16 bytes
        // asserted), which lives on this stack frame for the whole call; it
        // changes only the calling task's table of registered rings.
        let rc = unsafe {
            libc::syscall(
                libc::SYS_io_uring_register,
                ring_fd,
                IORING_REGISTER_RING_FDS,
                &mut up as *mut RsrcUpdate,
                1u32,
            )
        };
        if rc >= 0 {
            features.push("registered ring fd".into());
            Enter {
                fd: up.offset as i32,
                ring_fd,
                flags: IORING_ENTER_REGISTERED_RING,
                unsubmitted: 0,
            }
        } else {
            notes.push(format!(
                "registering the ring fd failed ({}); plain io_uring_enter",
                io::Error::last_os_error()
            ));
            Enter {
                fd: ring_fd,
                ring_fd,
                flags: 0,
                unsubmitted: 0,
            }
        }
    }

    /// Submits `queued` new SQEs, and any the kernel left last time,
    /// without waiting.
    pub fn submit(&mut self, queued: u32) -> io::Result<()> {
        let want = self.unsubmitted + queued;
        if want > 0 {
            let done = self.enter(want, 0)?;
            self.unsubmitted = want - done.min(want);
        }
        Ok(())
    }

    /// Waits for `min_complete` completions, submitting any SQEs the kernel
    /// left.
    pub fn wait(&mut self, min_complete: u32) -> io::Result<()> {
        self.submit_and_wait(0, min_complete)
    }

    /// Submits `queued` new SQEs (and any left) and waits for
    /// `min_complete` completions, in one system call.
    pub fn submit_and_wait(&mut self, queued: u32, min_complete: u32) -> io::Result<()> {
        let want = self.unsubmitted + queued;
        let done = self.enter(want, min_complete)?;
        self.unsubmitted = want - done.min(want);
        Ok(())
    }

    /// Submits `to_submit` SQEs and waits for `min_complete` completions;
    /// returns how many SQEs the kernel consumed.
    fn enter(&self, to_submit: u32, min_complete: u32) -> io::Result<u32> {
        loop {
            // SAFETY: io_uring_enter without an argument struct (null, size
            // 0) on the ring this was registered for, which its owner keeps
            // open. It reads only the SQEs already published to the ring,
            // whose buffers their publishers keep until the completions
            // (the contract of the crate's `push` and of the backends' `queue`).
            let rc = unsafe {
                libc::syscall(
                    libc::SYS_io_uring_enter,
                    self.fd,
                    to_submit,
                    min_complete,
                    IORING_ENTER_GETEVENTS | self.flags,
                    std::ptr::null::<libc::c_void>(),
                    0usize,
                )
            };
            if rc >= 0 {
                return Ok(rc as u32);
            }
            let e = io::Error::last_os_error();
            match e.raw_os_error() {
                Some(libc::EINTR) => continue,
                // Completions must be reaped first; the caller reaps next.
                Some(libc::EAGAIN) | Some(libc::EBUSY) => return Ok(0),
                _ => return Err(e),
            }
        }
    }
}

impl Drop for Enter {
    /// Drops the registration, so the ring's file goes when its owner
    /// closes it rather than when the thread exits (the task's table holds
    /// a reference, and has room for 16 rings). The owner drops this
    /// before the ring: the call names the ring by its fd (naming it by
    /// the index needs Linux 6.3).
    fn drop(&mut self) {
        if self.flags & IORING_ENTER_REGISTERED_RING == 0 {
            return;
        }
        let up = RsrcUpdate {
            offset: self.fd as u32,
            resv: 0,
            data: 0,
        };
        // SAFETY: IORING_UNREGISTER_RING_FDS with nr_args 1 reads one
        // `io_uring_rsrc_update` from this stack frame and writes nothing;
        // it names the index this registered, so it drops only our own
        // entry of the calling task's table (from another thread, or with
        // the ring fd already closed, it fails and changes nothing).
        unsafe {
            libc::syscall(
                libc::SYS_io_uring_register,
                self.ring_fd,
                IORING_UNREGISTER_RING_FDS,
                &up as *const RsrcUpdate,
                1u32,
            )
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // NOPs go in and come back through the registered fd, and dropping an
    // `Enter` frees its slot: more rings than the task's table holds (16)
    // are registered one after another on this thread.
    #[test]
    fn enters_registered_and_frees_the_slot() {
        for round in 0..20u64 {
            let mut ring = io_uring::IoUring::new(4).expect("io_uring");
            let (mut features, mut notes) = (Vec::new(), Vec::new());
            let mut enter = Enter::register(&ring, &mut features, &mut notes);
            assert_eq!(features, ["registered ring fd"], "round {round}: {notes:?}");
            let nop = io_uring::opcode::Nop::new().build().user_data(round);
            // SAFETY: a NOP names no memory.
            unsafe { ring.submission().push(&nop) }.expect("room");
            enter.submit_and_wait(1, 1).expect("enter");
            let got: Vec<u64> = ring.completion().map(|c| c.user_data()).collect();
            assert_eq!(got, [round]);
            drop(enter);
        }
    }
}
