//! NVM I/O commands: Read, Write, Flush, Write Zeroes, Dataset Management.
//!
//! Runs on the reactor that owns the queue; the namespace is shared by fd.
//! RAM namespaces are served here, synchronously. For file and block device
//! namespaces, Read, Write, Flush and Write Zeroes become a [`StorageOp`]
//! the handler returns and the connection queues for its reactor's io_uring
//! (the request waits in `Executing`), and [`finish`] turns the completion
//! into the command's status: a Write Zeroes over a large range of a block device can take the
//! device a while, and the reactor keeps serving its other connections
//! meanwhile. Where the zeroing `fallocate` is refused, the zeroes are
//! written with blocking calls. A Dataset Management deallocate runs the
//! same way, one range (or [`DSM_PIECE_BYTES`] of one) at a time: each
//! completion queues the next piece until the ranges are done; a Flush of
//! every namespace (NSID FFFFFFFFh) likewise syncs one namespace at a time.
//! The reactor never blocks on storage except for RAM namespaces (memory
//! copies) and the written-zeroes fallback.

use std::os::fd::RawFd;

use nvme_spec::command::{io, DsmRange};
use nvme_spec::{Sqe, Status};

use super::command::{Binding, Ctx, Outcome};
use super::namespace::Namespace;
use super::ns_set::NamespaceSet;
use super::request::{RamData, Request};
use super::storage::{StorageKind, StorageOp};

/// Most ranges one DSM command may carry.
pub const DSM_MAX_RANGES: usize = 256;

/// The NSID of a Flush that covers every namespace.
pub const FLUSH_ALL: u32 = 0xFFFF_FFFF;

/// Largest piece of a deallocate range given to one storage operation.
pub const DSM_PIECE_BYTES: u64 = 1 << 30;

/// Runs an I/O command.
pub fn execute(ctx: &mut Ctx<'_>) -> Outcome {
    let ctrl = ctx.ctrl().clone();
    let sqe = ctx.sqe();
    let slot = ctx.slot;
    // A port that is not ANA-accessible takes no I/O: the path status
    // sends the host to another path.
    if let Some(status) = super::ana::io_status(ctrl.ana_state(ctx.target)) {
        return Outcome::err(status);
    }
    if sqe.opcode == io::FLUSH && sqe.nsid == FLUSH_ALL {
        // One fdatasync per file or block device namespace, in turn.
        return match flush_all_target(&ctrl.subsys.namespaces, 0) {
            None => Outcome::ok(0),
            Some(fd) => Outcome::Storage(StorageOp {
                slot,
                kind: StorageKind::Flush,
                fd,
                offset: 0,
                len: 0,
            }),
        };
    }
    let Some(ns) = ctrl.subsys.namespace(sqe.nsid) else {
        return Outcome::err(Status::INVALID_NS);
    };
    match sqe.opcode {
        io::READ | io::WRITE => read_write(ctx, ns),
        io::FLUSH if ns.is_memory() => Outcome::ok(0),
        io::FLUSH => Outcome::Storage(StorageOp {
            slot,
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
            // At most 65536 blocks: a u32 of bytes for blocks up to 4 KiB,
            // which every namespace here has.
            match u32::try_from(nlb * ns.lba_bytes()) {
                Ok(len) if !ns.is_memory() => Outcome::Storage(StorageOp {
                    slot,
                    kind: StorageKind::Zero {
                        mode: ns.zero_mode(),
                    },
                    fd: ns.raw_fd(),
                    offset: sqe.slba() * ns.lba_bytes(),
                    len,
                }),
                // RAM, or a range too long for one operation: zeroed at once.
                _ => ns
                    .zero(sqe.slba(), nlb)
                    .map_or_else(io_err, |_| Outcome::ok(0)),
            }
        }
        io::DSM => dataset_management(ctx, ns),
        _ => Outcome::err(Status::INVALID_OPCODE),
    }
}

fn io_err(_: std::io::Error) -> Outcome {
    Outcome::err(Status::INTERNAL_ERROR)
}

fn read_write(ctx: &mut Ctx<'_>, ns: &Namespace) -> Outcome {
    let slot = ctx.slot;
    let r = &mut *ctx.req;
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
        return Outcome::Storage(StorageOp {
            slot,
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
        // The data stays in the namespace: the reply sends it from there.
        ns.ram_source(sqe.slba(), len as usize)
            .map(|p| r.ram = Some(RamData(p)))
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
            finish(kind, len as u32, len as i32)
        }
        Err(e) => io_err(e),
    }
}

/// The outcome of a finished storage operation of `kind` over `len` bytes
/// that returned `res` (bytes moved, or a negated errno). A short transfer
/// is an error: O_DIRECT within the namespace's size moves everything or
/// fails.
pub fn finish(kind: StorageKind, len: u32, res: i32) -> Outcome {
    // fsync and fallocate return 0; reads and writes the bytes moved.
    let expected = match kind {
        StorageKind::Flush | StorageKind::Zero { .. } => 0,
        StorageKind::Read | StorageKind::Write => len,
    };
    if res < 0 || res as u32 != expected {
        return Outcome::err(Status::INTERNAL_ERROR);
    }
    match kind {
        StorageKind::Flush | StorageKind::Zero { .. } | StorageKind::Write => Outcome::ok(0),
        StorageKind::Read => Outcome::data(len as usize),
    }
}

/// Where the zeroing `fallocate` of command `sqe` on the queue bound to
/// `b` failed with `res`, writes the zeroes with blocking calls and returns
/// 0, or the write's negated errno; any other result is returned as it is.
pub fn zero_fallback(b: Option<&Binding>, sqe: &Sqe, op: &StorageOp, res: i32) -> i32 {
    if res >= 0 || !matches!(op.kind, StorageKind::Zero { .. }) {
        return res;
    }
    let Some(b) = b else {
        return res;
    };
    let Some(ns) = b.ctrl.subsys.namespace(sqe.nsid) else {
        return res;
    };
    match ns.write_zeroes(op.offset, u64::from(op.len)) {
        Ok(()) => 0,
        Err(e) => -e.raw_os_error().unwrap_or(libc::EIO),
    }
}

/// The deallocate ranges of a DSM command: its `nr` 16-byte range entries.
fn dsm_ranges(r: &Request) -> impl Iterator<Item = DsmRange> + '_ {
    let nr = (r.sqe.cdw10 & 0xFF) as usize + 1;
    r.buf[..nr * io::DSM_RANGE_SIZE]
        .chunks_exact(io::DSM_RANGE_SIZE)
        .map(DsmRange::decode)
}

/// The piece of `ranges` (blocks of `lba_bytes`, in order, empty ones
/// skipped) that starts after the first `done` bytes: its byte offset and
/// length, at most [`DSM_PIECE_BYTES`]; `None` when all are done.
pub fn dsm_piece(
    ranges: impl Iterator<Item = DsmRange>,
    lba_bytes: u64,
    done: u64,
) -> Option<(u64, u32)> {
    let mut before = 0u64;
    for d in ranges {
        let len = u64::from(d.nlb) * lba_bytes;
        if done < before + len {
            let into = done - before;
            let piece = (len - into).min(DSM_PIECE_BYTES);
            return Some((d.slba * lba_bytes + into, piece as u32));
        }
        before += len;
    }
    None
}

/// The descriptor of the `n`th namespace a Flush of every namespace must
/// sync (files and block devices; RAM needs none), if there is one.
fn flush_all_target(namespaces: &NamespaceSet, n: u64) -> Option<RawFd> {
    namespaces
        .iter()
        .filter(|ns| !ns.is_memory())
        .nth(n as usize)
        .map(|ns| ns.raw_fd())
}

/// After a piece of multi-piece command `r` (on the queue bound to `b`)
/// finished with `res`: the next piece to queue, or `None` when the command
/// is done (or failed).
pub fn next_piece(
    b: Option<&Binding>,
    r: &mut Request,
    op: &StorageOp,
    res: i32,
) -> Option<StorageOp> {
    if res != 0 {
        return None;
    }
    let b = b?;
    if r.sqe.opcode == io::FLUSH && r.sqe.nsid == FLUSH_ALL {
        let done = r.storage_progress + 1;
        let fd = flush_all_target(&b.ctrl.subsys.namespaces, done)?;
        r.storage_progress = done;
        return Some(StorageOp { fd, ..*op });
    }
    if r.sqe.opcode != io::DSM || !matches!(op.kind, StorageKind::Zero { .. }) {
        return None;
    }
    let ns = b.ctrl.subsys.namespace(r.sqe.nsid)?;
    let done = r.storage_progress + u64::from(op.len);
    let (offset, len) = dsm_piece(dsm_ranges(r), ns.lba_bytes(), done)?;
    r.storage_progress = done;
    Some(StorageOp { offset, len, ..*op })
}

fn dataset_management(ctx: &mut Ctx<'_>, ns: &Namespace) -> Outcome {
    let slot = ctx.slot;
    let r = &*ctx.req;
    let sqe = r.sqe;
    let nr = (sqe.cdw10 & 0xFF) as usize + 1;
    if nr > DSM_MAX_RANGES || r.buf.len() < nr * io::DSM_RANGE_SIZE {
        return Outcome::err(Status::SGL_LENGTH_INVALID);
    }
    if sqe.cdw11 & io::DSM_ATTR_DEALLOCATE == 0 {
        return Outcome::ok(0);
    }
    if dsm_ranges(r).any(|d| !ns.in_range(d.slba, d.nlb as u64)) {
        return Outcome::err(Status::LBA_RANGE);
    }
    if ns.is_memory() {
        for d in dsm_ranges(r).filter(|d| d.nlb > 0) {
            if let Err(e) = ns.zero(d.slba, d.nlb as u64) {
                return io_err(e);
            }
        }
        return Outcome::ok(0);
    }
    match dsm_piece(dsm_ranges(r), ns.lba_bytes(), 0) {
        None => Outcome::ok(0),
        Some((offset, len)) => Outcome::Storage(StorageOp {
            slot,
            kind: StorageKind::Zero {
                mode: ns.zero_mode(),
            },
            fd: ns.raw_fd(),
            offset,
            len,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn range(slba: u64, nlb: u32) -> DsmRange {
        DsmRange {
            cattr: 0,
            nlb,
            slba,
        }
    }

    // Pieces walk the ranges in order, skip empty ones and split a range
    // larger than DSM_PIECE_BYTES.
    #[test]
    fn dsm_pieces_cover_every_range_in_order() {
        let big_blocks = (DSM_PIECE_BYTES / 512 * 2 + 8) as u32;
        let ranges = [
            range(10, 4),
            range(99, 0),
            range(1 << 20, big_blocks),
            range(0, 1),
        ];
        let mut done = 0u64;
        let mut pieces = Vec::new();
        while let Some((off, len)) = dsm_piece(ranges.iter().copied(), 512, done) {
            pieces.push((off, len));
            done += u64::from(len);
        }
        let big = (1u64 << 20) * 512;
        assert_eq!(
            pieces,
            vec![
                (10 * 512, 2048),
                (big, DSM_PIECE_BYTES as u32),
                (big + DSM_PIECE_BYTES, DSM_PIECE_BYTES as u32),
                (big + 2 * DSM_PIECE_BYTES, 4096),
                (0, 512),
            ]
        );
        assert_eq!(dsm_piece([range(5, 0)].into_iter(), 512, 0), None);
    }
}
