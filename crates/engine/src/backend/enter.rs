//! `io_uring_enter` the way the engine's rings call it: through the ring's
//! registered fd where the kernel allows (IORING_REGISTER_RING_FDS, 5.18+,
//! which skips the fd lookup on every call), with GETEVENTS always set so a
//! DEFER_TASKRUN ring posts its completions, EINTR retried and EAGAIN/EBUSY
//! (completions to reap first) reported as nothing submitted. Shared by the
//! `uring`, `nop` and `passthru` backends.

use std::io;
use std::os::fd::RawFd;

const IORING_ENTER_GETEVENTS: u32 = 1;
const IORING_ENTER_REGISTERED_RING: u32 = 1 << 4;
const IORING_REGISTER_RING_FDS: u32 = 20;

#[repr(C)]
struct RsrcUpdate {
    offset: u32,
    resv: u32,
    data: u64,
}

/// How one ring is entered: its registered index (or plain fd) and flags,
/// and the SQEs the kernel has not taken yet.
#[derive(Debug)]
pub(crate) struct Enter {
    fd: i32,
    flags: u32,
    unsubmitted: u32,
}

impl Enter {
    /// Registers the ring fd `ring_fd`; says in `features` or `notes`
    /// whether that worked (a plain fd is used otherwise).
    pub(crate) fn register(
        ring_fd: RawFd,
        features: &mut Vec<String>,
        notes: &mut Vec<String>,
    ) -> Enter {
        let mut up = RsrcUpdate {
            offset: u32::MAX,
            resv: 0,
            data: ring_fd as u64,
        };
        // SAFETY: IORING_REGISTER_RING_FDS reads and writes the one update
        // struct, which lives on our stack for the call.
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
                flags: 0,
                unsubmitted: 0,
            }
        }
    }

    /// Submits `queued` new SQEs, and any the kernel left last time,
    /// without waiting.
    ///
    /// The caller must own the ring this was registered for, and every SQE
    /// it submits must point at memory that stays valid until its
    /// completion is reaped (as for [`Enter::wait`]).
    pub(crate) fn submit(&mut self, queued: u32) -> io::Result<()> {
        let want = self.unsubmitted + queued;
        if want > 0 {
            let done = self.enter(want, 0)?;
            self.unsubmitted = want - done.min(want);
        }
        Ok(())
    }

    /// Waits for `min_complete` completions, submitting any SQEs the kernel
    /// left.
    pub(crate) fn wait(&mut self, min_complete: u32) -> io::Result<()> {
        let done = self.enter(self.unsubmitted, min_complete)?;
        self.unsubmitted -= done.min(self.unsubmitted);
        Ok(())
    }

    /// Submits `to_submit` SQEs and waits for `min_complete` completions;
    /// returns how many SQEs the kernel consumed.
    fn enter(&self, to_submit: u32, min_complete: u32) -> io::Result<u32> {
        loop {
            // SAFETY: plain io_uring_enter on the caller's own ring with no
            // argument struct; the SQEs it consumes point at buffers the
            // caller keeps until their completions are reaped (see above).
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

/// A ring, the set-up features it was granted and the fallbacks taken.
pub(crate) type BuiltRing<S, C> = (io_uring::IoUring<S, C>, Vec<String>, Vec<String>);

/// Builds a ring of `depth` entries with the best task-run set-up the kernel
/// grants, starting the fallback chain at `setup` (SINGLE_ISSUER +
/// DEFER_TASKRUN, then COOP_TASKRUN + TASKRUN_FLAG, then none), or with
/// SQPOLL (+ SINGLE_ISSUER where granted) when `sqpoll_idle_ms` is given.
/// `extra` adds flags every attempt needs (IOPOLL, say); `label` prefixes
/// the notes (e.g. "SQE128+CQE32"). Each refusal is a note.
pub(crate) fn build_ring<S, C>(
    depth: u32,
    setup: crate::backend::UringSetup,
    sqpoll_idle_ms: Option<u32>,
    label: &str,
    extra: impl Fn(&mut io_uring::Builder<S, C>),
) -> io::Result<BuiltRing<S, C>>
where
    S: io_uring::squeue::EntryMarker,
    C: io_uring::cqueue::EntryMarker,
{
    use crate::backend::UringSetup;
    type Attempt<S, C> = (&'static [&'static str], fn(&mut io_uring::Builder<S, C>));
    let attempts: Vec<Attempt<S, C>> = if sqpoll_idle_ms.is_some() {
        vec![
            (&["SQPOLL", "SINGLE_ISSUER"], |b| {
                b.setup_single_issuer();
            }),
            (&["SQPOLL"], |_| {}),
        ]
    } else {
        vec![
            (&["SINGLE_ISSUER", "DEFER_TASKRUN"], |b| {
                b.setup_single_issuer().setup_defer_taskrun();
            }),
            (&["COOP_TASKRUN", "TASKRUN_FLAG"], |b| {
                b.setup_coop_taskrun().setup_taskrun_flag();
            }),
            (&[], |_| {}),
        ]
    };
    // Start the fallback chain at the set-up asked for.
    let first = match (sqpoll_idle_ms, setup) {
        (Some(_), _) | (None, UringSetup::Auto | UringSetup::DeferTaskrun) => 0,
        (None, UringSetup::CoopTaskrun) => 1,
        (None, UringSetup::Plain) => 2,
    };
    let mut notes = Vec::new();
    let mut last_err = None;
    for (names, apply) in &attempts[first..] {
        let mut b = io_uring::IoUring::<S, C>::builder();
        apply(&mut b);
        if let Some(idle) = sqpoll_idle_ms {
            b.setup_sqpoll(idle);
        }
        extra(&mut b);
        match b.build(depth.max(1)) {
            Ok(ring) => {
                let features = names.iter().map(|s| s.to_string()).collect();
                return Ok((ring, features, notes));
            }
            Err(e) => {
                let what = if names.is_empty() {
                    "no flags".to_string()
                } else {
                    names.join("+")
                };
                let label = if label.is_empty() {
                    String::new()
                } else {
                    format!(" ({label})")
                };
                notes.push(format!(
                    "io_uring set-up{label} with {what} refused ({e}); falling back"
                ));
                last_err = Some(e);
            }
        }
    }
    Err(last_err.unwrap_or_else(|| io::Error::from_raw_os_error(libc::EINVAL)))
}
