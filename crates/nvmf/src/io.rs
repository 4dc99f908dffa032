//! NVM I/O commands: Read, Write, Flush, Write Zeroes, Dataset Management.
//!
//! Runs on the reactor that owns the queue; the namespace is shared by fd.
//! RAM namespaces are served here, synchronously. For file and block device
//! namespaces, Read, Write, Flush and Write Zeroes become a [`StorageOp`]
//! the connection queues for its reactor's io_uring (the request waits in
//! `Executing`), and [`finish`] turns the completion into the command's
//! status: a Write Zeroes over a large range of a block device can take the
//! device a while, and the reactor keeps serving its other connections
//! meanwhile. Where the zeroing `fallocate` is refused, the zeroes are
//! written with blocking calls. Dataset Management (deallocate) and a flush
//! of every namespace stay blocking: one command may name up to 256 ranges
//! or every namespace, and hosts send them rarely.

use std::os::fd::RawFd;

use nvme_spec::command::{io, DsmRange};
use nvme_spec::Status;

use crate::namespace::Namespace;
use crate::queue::Connection;
use crate::request::{Outcome, Request};

/// Most ranges one DSM command may carry.
pub const DSM_MAX_RANGES: usize = 256;

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
        /// The `fallocate` mode ([`Namespace::zero_mode`]).
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

/// Runs an I/O command.
pub fn execute(conn: &mut Connection, slot: usize) -> Outcome {
    let ctrl = conn
        .binding
        .as_ref()
        .expect("I/O queue is bound")
        .ctrl
        .clone();
    let sqe = conn.reqs[slot].sqe;
    if sqe.opcode == io::FLUSH && sqe.nsid == 0xFFFF_FFFF {
        // Flush of every namespace: rare (the Linux host names one), so
        // blocking fdatasync calls rather than one operation per namespace.
        for ns in &ctrl.subsys.namespaces {
            if ns.flush().is_err() {
                return Outcome::err(Status::INTERNAL_ERROR);
            }
        }
        return Outcome::ok(0);
    }
    let Some(ns) = ctrl.subsys.namespace(sqe.nsid) else {
        return Outcome::err(Status::INVALID_NS);
    };
    match sqe.opcode {
        io::READ | io::WRITE => read_write(conn, slot, ns),
        io::FLUSH if ns.is_memory() => Outcome::ok(0),
        io::FLUSH => conn.queue_storage(StorageOp {
            slot: slot as u16,
            kind: StorageKind::Flush,
            fd: ns.raw_fd(),
            offset: 0,
            len: 0,
        }),
        io::WRITE_ZEROES => {
            let nlb = sqe.nlb() as u64;
            if !ns.in_range(sqe.slba(), nlb) {
                return Outcome::err(Status::LBA_RANGE);
            }
            if ns.is_memory() {
                return ns
                    .zero(sqe.slba(), nlb)
                    .map_or_else(io_err, |_| Outcome::ok(0));
            }
            // At most 65536 blocks of at most 64 KiB: fits a u32 when the
            // block is 4 KiB or less, which every namespace here is.
            let len = nlb * ns.lba_bytes();
            let Ok(len) = u32::try_from(len) else {
                return ns
                    .zero(sqe.slba(), nlb)
                    .map_or_else(io_err, |_| Outcome::ok(0));
            };
            conn.queue_storage(StorageOp {
                slot: slot as u16,
                kind: StorageKind::Zero {
                    mode: ns.zero_mode(),
                },
                fd: ns.raw_fd(),
                offset: sqe.slba() * ns.lba_bytes(),
                len,
            })
        }
        io::DSM => dataset_management(&conn.reqs[slot], ns),
        _ => Outcome::err(Status::INVALID_OPCODE),
    }
}

fn io_err(_: std::io::Error) -> Outcome {
    Outcome::err(Status::INTERNAL_ERROR)
}

fn read_write(conn: &mut Connection, slot: usize, ns: &Namespace) -> Outcome {
    let r = &mut conn.reqs[slot];
    let sqe = r.sqe;
    let nlb = sqe.nlb() as u64;
    if !ns.in_range(sqe.slba(), nlb) {
        return Outcome::err(Status::LBA_RANGE);
    }
    let len = nlb * ns.lba_bytes();
    if len != r.len_bytes as u64 || r.buf.len() as u64 != len {
        return Outcome::err(Status::SGL_LENGTH_INVALID);
    }
    let read = sqe.opcode == io::READ;
    if !ns.is_memory() {
        return conn.queue_storage(StorageOp {
            slot: slot as u16,
            kind: if read {
                StorageKind::Read
            } else {
                StorageKind::Write
            },
            fd: ns.raw_fd(),
            offset: sqe.slba() * ns.lba_bytes(),
            len: len as u32,
        });
    }
    let done = if read {
        ns.read(sqe.slba(), &mut r.buf)
    } else {
        ns.write(sqe.slba(), &r.buf)
    };
    match done {
        Ok(()) => {
            let kind = if read {
                StorageKind::Read
            } else {
                StorageKind::Write
            };
            finish(conn, kind, len as u32, len as i32)
        }
        Err(e) => io_err(e),
    }
}

/// The outcome of a finished storage operation of `kind` over `len` bytes
/// that returned `res` (bytes moved, or a negated errno), counted on the
/// queue. A short transfer is an error: O_DIRECT within the namespace's
/// size moves everything or fails.
pub fn finish(conn: &mut Connection, kind: StorageKind, len: u32, res: i32) -> Outcome {
    // fsync and fallocate return 0; reads and writes the bytes moved.
    let expected = match kind {
        StorageKind::Flush | StorageKind::Zero { .. } => 0,
        StorageKind::Read | StorageKind::Write => len,
    };
    if res < 0 || res as u32 != expected {
        return Outcome::err(Status::INTERNAL_ERROR);
    }
    match kind {
        StorageKind::Flush | StorageKind::Zero { .. } => Outcome::ok(0),
        StorageKind::Read => {
            conn.counters.reads += 1;
            conn.counters.read_bytes += len as u64;
            Outcome::data(len as usize)
        }
        StorageKind::Write => {
            conn.counters.writes += 1;
            conn.counters.written_bytes += len as u64;
            Outcome::ok(0)
        }
    }
}

/// Where the zeroing `fallocate` of a Write Zeroes failed with `res`, writes
/// the zeroes with blocking calls and returns 0, or the write's negated
/// errno; any other result is returned as it is.
pub fn zero_fallback(conn: &Connection, op: &StorageOp, res: i32) -> i32 {
    if res >= 0 || !matches!(op.kind, StorageKind::Zero { .. }) {
        return res;
    }
    let Some(b) = conn.binding.as_ref() else {
        return res;
    };
    let sqe = conn.reqs[op.slot as usize].sqe;
    let Some(ns) = b.ctrl.subsys.namespace(sqe.nsid) else {
        return res;
    };
    match ns.write_zeroes(op.offset, u64::from(op.len)) {
        Ok(()) => 0,
        Err(e) => -e.raw_os_error().unwrap_or(libc::EIO),
    }
}

fn dataset_management(r: &Request, ns: &Namespace) -> Outcome {
    let sqe = r.sqe;
    let nr = (sqe.cdw10 & 0xFF) as usize + 1;
    if nr > DSM_MAX_RANGES || r.buf.len() < nr * io::DSM_RANGE_SIZE {
        return Outcome::err(Status::SGL_LENGTH_INVALID);
    }
    if sqe.cdw11 & io::DSM_ATTR_DEALLOCATE == 0 {
        return Outcome::ok(0);
    }
    let ranges: Vec<DsmRange> = r.buf[..nr * io::DSM_RANGE_SIZE]
        .chunks_exact(io::DSM_RANGE_SIZE)
        .map(DsmRange::decode)
        .collect();
    if ranges.iter().any(|d| !ns.in_range(d.slba, d.nlb as u64)) {
        return Outcome::err(Status::LBA_RANGE);
    }
    // Blocking fallocate (see the module comment).
    for d in ranges.iter().filter(|d| d.nlb > 0) {
        if let Err(e) = ns.zero(d.slba, d.nlb as u64) {
            return io_err(e);
        }
    }
    Outcome::ok(0)
}
