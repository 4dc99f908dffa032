//! The `uring` and `nop` backends: one io_uring per worker.
//!
//! Set-up probes the kernel: SINGLE_ISSUER + DEFER_TASKRUN where granted,
//! else COOP_TASKRUN, else a plain ring (each fallback is reported as a
//! note); optional SQPOLL and IOPOLL; the target registered as a fixed file,
//! the worker's whole buffer region registered as one fixed buffer, and the
//! ring fd registered so `io_uring_enter` skips the fd lookup.
//!
//! `queue` patches the per-I/O fields of a per-direction template (an
//! [`Sqe`] made by the io-uring crate's builders) into the next staged
//! entry, `submit` copies the batch into the ring with the crate's
//! `push_multiple`. A NOP ring stages the NOP in every entry from the
//! start and writes only `user_data`. The ring
//! set-up chain and the registered-fd `io_uring_enter` are
//! `sysapi::uring`'s too.
//!
//! Timing model (fio's): `submit` enters the kernel without waiting (with
//! GETEVENTS so deferred completions are flushed), `reap` drains the CQ and
//! only waits when fewer than `min` completions are there.

use std::io;
use std::os::fd::RawFd;

use io_uring::{opcode, squeue, types, IoUring};
use sysapi::uring::{Enter, RingSpec, Sqe, SqeView, TaskRun};

use super::{Backend, Completion, IoRequest};
use crate::stats::Dir;
pub use results::UringSetup;

/// The kernel refuses registered buffers larger than this.
const MAX_FIXED_BUFFER_BYTES: usize = 1 << 30;

/// io_uring set-up choices.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct UringOptions {
    /// Kernel-side submission polling thread (SQPOLL) with this idle time.
    pub sqpoll_idle_ms: Option<u32>,
    /// Completion polling (IOPOLL); only valid on devices with poll queues.
    pub iopoll: bool,
    /// Register the worker's buffers (READ_FIXED / WRITE_FIXED).
    pub fixed_buffers: bool,
    /// Register the target file.
    pub registered_files: bool,
    /// Task-run mode of the ring.
    #[serde(default)]
    pub setup: UringSetup,
}

impl Default for UringOptions {
    fn default() -> Self {
        UringOptions {
            sqpoll_idle_ms: None,
            iopoll: false,
            fixed_buffers: true,
            registered_files: true,
            setup: UringSetup::Auto,
        }
    }
}

/// One io_uring owned by one worker.
pub struct UringBackend {
    /// Before `ring`: dropped first, it unregisters the ring fd by the fd.
    enter: Enter,
    /// The SQEs queued since the last submit, in order, patched by `queue`
    /// from a template and copied into the ring by `submit` in one go.
    sqes: Vec<squeue::Entry>,
    ring: IoUring,
    fd: RawFd,
    fixed_file: bool,
    fixed_buffers: bool,
    sqpoll: bool,
    nop: bool,
    /// SQEs written since the last submit.
    staged: u32,
    /// The most SQEs one batch may stage (the depth).
    depth: u32,
    /// The read and write SQEs of this ring with offset, address, length
    /// and user_data zero.
    templates: [Sqe; 2],
    /// Features granted, e.g. `DEFER_TASKRUN`, `fixed buffers`.
    pub features: Vec<String>,
    /// Fallbacks taken, in words.
    pub notes: Vec<String>,
}

impl std::fmt::Debug for UringBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UringBackend")
            .field("features", &self.features)
            .finish_non_exhaustive()
    }
}

/// Where a ring's set-up chain starts for `setup`.
pub(crate) fn taskrun(setup: UringSetup) -> TaskRun {
    match setup {
        UringSetup::Auto | UringSetup::DeferTaskrun => TaskRun::Defer,
        UringSetup::CoopTaskrun => TaskRun::Coop,
        UringSetup::Plain => TaskRun::Plain,
    }
}

fn build_ring(
    depth: u32,
    opts: &UringOptions,
    nop: bool,
) -> io::Result<(IoUring, Vec<String>, Vec<String>)> {
    let spec = RingSpec {
        taskrun: taskrun(opts.setup),
        sqpoll_idle_ms: opts.sqpoll_idle_ms,
        iopoll: opts.iopoll && !nop,
        ..RingSpec::new(depth)
    };
    let b = sysapi::uring::build_ring(&spec)?;
    Ok((b.ring, b.features, b.notes))
}

impl UringBackend {
    /// A ring of `depth` entries on `fd` (owned by the caller for the whole
    /// run). `region` is the worker's buffer region, registered as fixed
    /// buffer 0 when asked. `nop` issues IORING_OP_NOP instead of I/O.
    pub fn new(
        fd: RawFd,
        depth: u32,
        region: (*mut u8, usize),
        opts: &UringOptions,
        nop: bool,
    ) -> io::Result<UringBackend> {
        let (ring, mut features, mut notes) = build_ring(depth, opts, nop)?;
        let mut fixed_file = false;
        if opts.registered_files && !nop {
            match ring.submitter().register_files(&[fd]) {
                Ok(()) => {
                    fixed_file = true;
                    features.push("registered files".into());
                }
                Err(e) => notes.push(format!("register_files failed ({e}); using the plain fd")),
            }
        }
        let mut fixed_buffers = false;
        if opts.fixed_buffers && !nop {
            if region.1 > MAX_FIXED_BUFFER_BYTES {
                notes.push("buffer region over 1 GiB: fixed buffers off".into());
            } else {
                let iov = libc::iovec {
                    iov_base: region.0.cast(),
                    iov_len: region.1,
                };
                // SAFETY: the region is the worker's own mapping; it outlives
                // the ring (the worker drops the backend before its buffers)
                // and is only handed to the kernel slot by slot via `queue`.
                match unsafe { ring.submitter().register_buffers(&[iov]) } {
                    Ok(()) => {
                        fixed_buffers = true;
                        features.push("fixed buffers".into());
                    }
                    Err(e) => notes.push(format!(
                        "register_buffers failed ({e}); using plain buffers"
                    )),
                }
            }
        }
        let enter = Enter::register(&ring, &mut features, &mut notes);
        let sqes = vec![opcode::Nop::new().build(); depth.max(1) as usize];
        let mut b = UringBackend {
            sqpoll: opts.sqpoll_idle_ms.is_some(),
            ring,
            fd,
            fixed_file,
            fixed_buffers,
            nop,
            enter,
            sqes,
            staged: 0,
            depth: depth.max(1),
            templates: [Sqe::default(); 2],
            features,
            notes,
        };
        for dir in [Dir::Read, Dir::Write] {
            b.templates[dir as usize] = Sqe::from_entry(b.entry(&IoRequest::blank(dir)));
        }
        if nop {
            // A NOP ring only ever carries NOPs: lay the template into every
            // SQE once, so `queue` writes just the user_data.
            let t = b.templates[Dir::Read as usize].into_entry();
            b.sqes.iter_mut().for_each(|e| *e = t.clone());
        }
        Ok(b)
    }

    /// The SQE for `io`, built by the io-uring crate (start-up and tests;
    /// the hot path patches a template made from it, see [`patch_sqe`]).
    fn entry(&self, io: &IoRequest) -> squeue::Entry {
        macro_rules! rw {
            ($fd:expr) => {
                match (io.dir, self.fixed_buffers) {
                    (Dir::Read, true) => opcode::ReadFixed::new($fd, io.buf, io.len_bytes, 0)
                        .offset(io.offset_bytes)
                        .build(),
                    (Dir::Read, false) => opcode::Read::new($fd, io.buf, io.len_bytes)
                        .offset(io.offset_bytes)
                        .build(),
                    (Dir::Write, true) => opcode::WriteFixed::new($fd, io.buf, io.len_bytes, 0)
                        .offset(io.offset_bytes)
                        .build(),
                    (Dir::Write, false) => opcode::Write::new($fd, io.buf, io.len_bytes)
                        .offset(io.offset_bytes)
                        .build(),
                }
            };
        }
        let e = if self.nop {
            opcode::Nop::new().build()
        } else if self.fixed_file {
            rw!(types::Fixed(0))
        } else {
            rw!(types::Fd(self.fd))
        };
        e.user_data(io.slot as u64)
    }

    /// Hands up to `max` completions from the CQ to `f`; returns how many.
    #[inline(always)]
    fn drain_each<F: FnMut(Completion)>(&mut self, max: usize, f: &mut F) -> usize {
        let mut cq = self.ring.completion();
        let mut n = 0;
        while n < max {
            let Some(cqe) = cq.next() else { break };
            f(Completion {
                slot: cqe.user_data() as u32,
                result: cqe.result(),
            });
            n += 1;
        }
        n
    }
}

/// `template` with the per-I/O fields of `io` filled in: offset, buffer
/// address, length and user_data (the slot).
#[inline(always)]
fn patch_sqe(template: &Sqe, io: &IoRequest) -> Sqe {
    let t = template;
    Sqe {
        head: sysapi::uring::SqeHead {
            off: io.offset_bytes,
            addr: io.buf as u64,
            len: io.len_bytes,
            user_data: u64::from(io.slot),
            ..t.head
        },
        ..*t
    }
}

impl Backend for UringBackend {
    #[inline]
    unsafe fn queue(&mut self, io: IoRequest) {
        debug_assert!(self.staged < self.depth, "more I/Os queued than the depth");
        let e = &mut self.sqes[self.staged as usize];
        if self.nop {
            // Every staged entry of a NOP ring already is the NOP template
            // (laid down at construction, never overwritten otherwise).
            *e = e.clone().user_data(u64::from(io.slot));
        } else {
            *e = patch_sqe(&self.templates[io.dir as usize], &io).into_entry();
        }
        self.staged += 1;
    }

    #[inline]
    fn moves_data(&self) -> bool {
        !self.nop
    }

    fn submit(&mut self) -> io::Result<()> {
        let n = std::mem::take(&mut self.staged);
        if n > 0 {
            // SAFETY: only this worker's thread touches this ring, so no
            // other SubmissionQueue exists.
            let mut sq = unsafe { self.ring.submission_shared() };
            // SAFETY: each entry points at its slot's buffer, which the
            // worker keeps and leaves alone until the completion carrying
            // the slot is reaped (`Backend::queue`'s contract). The ring
            // has at least `depth` entries and no more than `depth` I/Os
            // are ever in flight, so the push cannot fail.
            let pushed = unsafe { sq.push_multiple(&self.sqes[..n as usize]) };
            debug_assert!(pushed.is_ok(), "more I/Os queued than the ring holds");
        }
        if self.sqpoll {
            self.ring.submit()?;
            return Ok(());
        }
        self.enter.submit(n)
    }

    fn reap(&mut self, out: &mut [Completion], min: usize) -> io::Result<usize> {
        let mut n = 0;
        self.reap_upto(out.len(), min, |c| {
            out[n] = c;
            n += 1;
        })
    }

    #[inline]
    fn reap_each<F: FnMut(Completion)>(
        &mut self,
        out: &mut [Completion],
        min: usize,
        f: F,
    ) -> io::Result<usize> {
        self.reap_upto(out.len(), min, f)
    }
}

impl UringBackend {
    /// Hands at least `min` and at most `max` completions to `f`, waiting
    /// for the first `min`; returns how many.
    #[inline(always)]
    fn reap_upto<F: FnMut(Completion)>(
        &mut self,
        max: usize,
        min: usize,
        mut f: F,
    ) -> io::Result<usize> {
        let mut n = self.drain_each(max, &mut f);
        while n < min {
            if self.sqpoll {
                self.ring.submit_and_wait(min - n)?;
            } else {
                self.enter.wait((min - n) as u32)?;
            }
            n += self.drain_each(max - n, &mut f);
        }
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Pins the fields `patch_sqe` writes against the crate's builders.
    #[test]
    fn patched_template_equals_built_entry() {
        let buf = 0x7f12_3456_7000usize as *mut u8;
        let io = |dir| IoRequest {
            slot: 77,
            dir,
            offset_bytes: 0x1234_5678_9000,
            len_bytes: 12_288,
            buf,
        };
        let blank = Sqe::from_entry;
        let cases: Vec<(Dir, squeue::Entry, squeue::Entry)> = vec![
            (
                Dir::Read,
                opcode::ReadFixed::new(types::Fixed(0), std::ptr::null_mut(), 0, 0).build(),
                opcode::ReadFixed::new(types::Fixed(0), buf, 12_288, 0)
                    .offset(0x1234_5678_9000)
                    .build(),
            ),
            (
                Dir::Write,
                opcode::WriteFixed::new(types::Fixed(0), std::ptr::null(), 0, 0).build(),
                opcode::WriteFixed::new(types::Fixed(0), buf, 12_288, 0)
                    .offset(0x1234_5678_9000)
                    .build(),
            ),
            (
                Dir::Read,
                opcode::Read::new(types::Fd(5), std::ptr::null_mut(), 0).build(),
                opcode::Read::new(types::Fd(5), buf, 12_288)
                    .offset(0x1234_5678_9000)
                    .build(),
            ),
        ];
        for (dir, template, expected) in cases {
            let got = patch_sqe(&blank(template), &io(dir));
            assert_eq!(got, blank(expected.user_data(77)), "{dir:?}");
        }
    }
}
