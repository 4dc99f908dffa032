//! The `sync` backend: pread(2)/pwrite(2), one I/O at a time, done at submit.
//! The reference every other backend is checked against.

use std::io;
use std::os::fd::RawFd;

use super::{Backend, Completion, IoRequest};
use crate::stats::Dir;

/// Runs each queued I/O synchronously when the batch is submitted.
#[derive(Debug)]
pub struct SyncBackend {
    fd: RawFd,
    queued: Vec<IoRequest>,
    done: Vec<Completion>,
    done_len: usize,
}

impl SyncBackend {
    /// A backend on `fd` (owned by the caller, open for the whole run) for up
    /// to `depth` I/Os in flight.
    pub fn new(fd: RawFd, depth: usize) -> SyncBackend {
        SyncBackend {
            fd,
            queued: Vec::with_capacity(depth.max(1)),
            done: vec![Completion::default(); depth.max(1)],
            done_len: 0,
        }
    }
}

impl Backend for SyncBackend {
    #[inline]
    unsafe fn queue(&mut self, io: IoRequest) {
        debug_assert!(self.queued.len() < self.queued.capacity());
        self.queued.push(io);
    }

    fn submit(&mut self) -> io::Result<()> {
        for io in self.queued.drain(..) {
            let off = io.offset_bytes as libc::off_t;
            let len = io.len_bytes as usize;
            // SAFETY: `io.buf` points at `len` bytes of the worker's buffer
            // region, which the worker hands to this backend until the
            // completion is reaped; the call is synchronous, so the kernel
            // is done with it when it returns.
            let rc = unsafe {
                match io.dir {
                    Dir::Read => libc::pread(self.fd, io.buf.cast(), len, off),
                    Dir::Write => libc::pwrite(self.fd, io.buf.cast(), len, off),
                }
            };
            let result = if rc < 0 {
                -io::Error::last_os_error()
                    .raw_os_error()
                    .unwrap_or(libc::EIO)
            } else {
                rc as i32
            };
            self.done[self.done_len] = Completion {
                slot: io.slot,
                result,
            };
            self.done_len += 1;
        }
        Ok(())
    }

    fn reap(&mut self, out: &mut [Completion], _min: usize) -> io::Result<usize> {
        let n = self.done_len.min(out.len());
        out[..n].copy_from_slice(&self.done[self.done_len - n..self.done_len]);
        self.done_len -= n;
        Ok(n)
    }
}
