//! Storage operations: what a connection hands its reactor to run on the
//! io_uring (or, without a reactor, with blocking calls), one at a time per
//! request.

use std::os::fd::RawFd;

/// What a storage operation does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StorageKind {
    /// Read `len` bytes at `offset` into the request buffer.
    Read,
    /// Write `len` bytes of the request buffer at `offset`.
    Write,
    /// `fdatasync` (IORING_OP_FSYNC with DATASYNC).
    Flush,
    /// `fallocate(mode)` over `len` bytes at `offset` (IORING_OP_FALLOCATE):
    /// Write Zeroes, with the namespace's zeroing mode.
    Zero {
        /// The `fallocate` mode ([`Namespace::zero_mode`](super::namespace::Namespace::zero_mode)).
        mode: i32,
    },
}

/// One storage operation a connection hands to its reactor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StorageOp {
    /// Request slot (the buffer is that slot's).
    pub slot: u16,
    /// Read, write or flush.
    pub kind: StorageKind,
    /// The namespace's descriptor (open for the target's lifetime).
    pub fd: RawFd,
    /// Byte offset.
    pub offset: u64,
    /// Byte length: of the data (Read, Write; the slot's buffer holds it),
    /// of the range zeroed (Zero), 0 for Flush.
    pub len: u32,
}

impl StorageOp {
    /// Runs the operation with blocking system calls on `buf` (the request
    /// slot's buffer, at least `len` bytes for a read or write): bytes moved
    /// (reads and writes) or 0, or a negated errno, as the ring reports it.
    ///
    /// # Safety
    /// `buf` must be valid for `len` bytes of reads and writes and untouched
    /// by anything else during the call.
    pub unsafe fn run_blocking(&self, buf: *mut u8) -> i32 {
        let len = self.len as usize;
        // SAFETY: the caller vouches for buf (above); fd is the namespace's
        // open descriptor.
        let res = unsafe {
            match self.kind {
                StorageKind::Read => {
                    libc::pread(self.fd, buf as *mut libc::c_void, len, self.offset as i64)
                }
                StorageKind::Write => {
                    libc::pwrite(self.fd, buf as *const libc::c_void, len, self.offset as i64)
                }
                StorageKind::Flush => libc::fdatasync(self.fd) as isize,
                StorageKind::Zero { mode } => {
                    libc::fallocate(self.fd, mode, self.offset as i64, len as i64) as isize
                }
            }
        };
        if res < 0 {
            -std::io::Error::last_os_error()
                .raw_os_error()
                .unwrap_or(libc::EIO)
        } else {
            res as i32
        }
    }
}
