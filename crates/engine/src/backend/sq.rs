//! Direct access to a ring's submission queue: the engine writes each SQE in
//! place in the ring's own SQE array and publishes a batch with one tail
//! store, instead of building entries elsewhere and copying them in (the
//! io-uring crate's `push` copies 64 bytes per entry).
//!
//! The ring stays the crate's (it sets the ring up, identity-maps the SQ
//! index array and keeps registration); this is a second mapping of the same
//! pages. The crate does not expose the ring's offsets, so they are learnt
//! from a throwaway probe ring: `head`, `tail`, `ring_mask` and
//! `ring_entries` are offsets into the kernel's `struct io_rings`, the same
//! for every ring of one kernel, and the mapping is checked against the
//! ring's known size before use.
//!
//! Ownership: only the worker that owns the ring writes SQEs and the tail.
//! An SQE at a position past the tail is not the kernel's until the tail
//! store publishes it; the caller never has more unpublished plus in-flight
//! entries than the ring holds (at most `depth` I/Os in flight, depth ≤
//! entries), so a position is never reused while the kernel may read it.

use std::io;
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicU32, Ordering};

const IORING_OFF_SQ_RING: libc::off_t = 0;
const IORING_OFF_SQES: libc::off_t = 0x1000_0000;

/// The kernel's `struct io_sqring_offsets`.
#[repr(C)]
#[derive(Default)]
struct SqOffsets {
    head: u32,
    tail: u32,
    ring_mask: u32,
    ring_entries: u32,
    flags: u32,
    dropped: u32,
    array: u32,
    resv1: u32,
    user_addr: u64,
}

/// The kernel's `struct io_uring_params`.
#[repr(C)]
#[derive(Default)]
struct Params {
    sq_entries: u32,
    cq_entries: u32,
    flags: u32,
    sq_thread_cpu: u32,
    sq_thread_idle: u32,
    features: u32,
    wq_fd: u32,
    resv: [u32; 3],
    sq_off: SqOffsets,
    cq_off: [u32; 10],
}

const _: () = assert!(std::mem::size_of::<Params>() == 120);
const _: () = assert!(std::mem::size_of::<SqOffsets>() == 40);

/// One mapping, unmapped on drop.
#[derive(Debug)]
struct Map {
    ptr: *mut u8,
    len: usize,
}

impl Map {
    fn new(fd: RawFd, offset: libc::off_t, len: usize) -> io::Result<Map> {
        // SAFETY: a fresh shared mapping of the ring's own region; the kernel
        // checks `offset` and `len` against the ring.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_POPULATE,
                fd,
                offset,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(Map {
            ptr: ptr.cast(),
            len,
        })
    }
}

impl Drop for Map {
    fn drop(&mut self) {
        // SAFETY: our own mapping, unmapped once.
        unsafe { libc::munmap(self.ptr.cast(), self.len) };
    }
}

/// The SQ ring offsets of this kernel, from a probe ring of `entries`.
fn probe_offsets(entries: u32) -> io::Result<SqOffsets> {
    let mut p = Params::default();
    // SAFETY: io_uring_setup writes the params struct, which outlives the call.
    let fd = unsafe { libc::syscall(libc::SYS_io_uring_setup, entries, &mut p as *mut Params) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: the probe ring's fd is ours alone.
    unsafe { libc::close(fd as RawFd) };
    Ok(p.sq_off)
}

/// A second, writable view of one ring's submission queue, for entries of
/// `WORDS` 64-bit words (8 for SQE64, 16 for SQE128).
#[derive(Debug)]
pub(crate) struct DirectSq<const WORDS: usize> {
    _ring: Map,
    sqes_map: Map,
    sqes: *mut [u64; WORDS],
    tail: *const AtomicU32,
    mask: u32,
    /// The tail as published.
    published: u32,
}

impl<const WORDS: usize> DirectSq<WORDS> {
    /// Maps the submission queue of the ring `fd`, which has `entries` SQ
    /// entries and nothing queued yet.
    pub(crate) fn new(fd: RawFd, entries: u32) -> io::Result<Self> {
        let off = probe_offsets(entries)?;
        let end = [off.head, off.tail, off.ring_mask, off.ring_entries]
            .into_iter()
            .max()
            .unwrap_or(0) as usize
            + 4;
        let ring = Map::new(fd, IORING_OFF_SQ_RING, end)?;
        // SAFETY: every offset is inside the `end` bytes just mapped, 4-byte
        // aligned (offsets of u32 fields of `struct io_rings`).
        let (mask, ring_entries, tail, head) = unsafe {
            let at = |o: u32| ring.ptr.add(o as usize);
            (
                at(off.ring_mask).cast::<u32>().read_volatile(),
                at(off.ring_entries).cast::<u32>().read_volatile(),
                at(off.tail).cast::<AtomicU32>(),
                at(off.head).cast::<AtomicU32>(),
            )
        };
        if ring_entries != entries || mask != entries - 1 {
            return Err(io::Error::other(format!(
                "the probe ring's offsets do not fit this ring \
                 (ring_entries {ring_entries}, mask {mask}, expected {entries})"
            )));
        }
        // SAFETY: `tail` and `head` point at the ring's live counters in our
        // mapping (checked above), aligned u32s shared with the kernel.
        let (published, consumed) = unsafe {
            (
                (*tail).load(Ordering::Acquire),
                (*head).load(Ordering::Acquire),
            )
        };
        if published != consumed {
            return Err(io::Error::other("the ring already has SQEs queued"));
        }
        let sqes_map = Map::new(fd, IORING_OFF_SQES, entries as usize * WORDS * 8)?;
        Ok(DirectSq {
            sqes: sqes_map.ptr.cast(),
            _ring: ring,
            sqes_map,
            tail,
            mask,
            published,
        })
    }

    /// The SQE `i` positions past the published tail, to be written.
    ///
    /// The caller must keep `i` plus the entries in flight below the ring's
    /// size (see the module doc), so the kernel does not own that position.
    #[inline(always)]
    pub(crate) fn entry(&mut self, i: u32) -> &mut [u64; WORDS] {
        let at = (self.published.wrapping_add(i) & self.mask) as usize;
        // SAFETY: `at` ≤ mask < entries, inside the SQE mapping; the position
        // is not published, so the kernel does not read it now.
        unsafe { &mut *self.sqes.add(at) }
    }

    /// Every SQE of the ring, e.g. to lay down a template once.
    pub(crate) fn all(&mut self) -> &mut [[u64; WORDS]] {
        let n = self.sqes_map.len / (WORDS * 8);
        // SAFETY: the whole SQE mapping, while nothing is published (called
        // before the first submission).
        unsafe { std::slice::from_raw_parts_mut(self.sqes, n) }
    }

    /// Hands the next `n` entries to the kernel.
    #[inline(always)]
    pub(crate) fn publish(&mut self, n: u32) {
        self.published = self.published.wrapping_add(n);
        // SAFETY: the ring's tail in our mapping; the release store orders
        // the SQE writes before it, as the kernel's acquire load expects.
        unsafe { (*self.tail).store(self.published, Ordering::Release) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsRawFd;

    // SQEs written in place, across many wrap-arounds of a small ring,
    // reach the kernel in order with the user_data written.
    #[test]
    fn in_place_sqes_wrap_around_in_order() {
        let mut ring = io_uring::IoUring::new(8).expect("io_uring");
        let entries = ring.params().sq_entries();
        let mut sq = DirectSq::<8>::new(ring.as_raw_fd(), entries).expect("map the SQ");
        let nop = io_uring::opcode::Nop::new().build();
        // SAFETY: an SQE is 64 bytes of integers (asserted in uring.rs).
        let t: [u64; 8] = unsafe { std::mem::transmute(nop) };
        let mut next = 0u64;
        let mut seen = Vec::new();
        for round in 0..100u32 {
            let n = 1 + round % entries;
            for i in 0..n {
                let e = sq.entry(i);
                *e = t;
                e[4] = next + u64::from(i);
            }
            next += u64::from(n);
            sq.publish(n);
            ring.submitter().submit_and_wait(n as usize).expect("enter");
            seen.extend(ring.completion().map(|c| c.user_data()));
        }
        assert_eq!(seen, (0..next).collect::<Vec<_>>());
    }

    // A ring that already has SQEs queued is refused: its tail is not ours.
    #[test]
    fn refuses_a_ring_with_queued_sqes() {
        let mut ring = io_uring::IoUring::new(4).expect("io_uring");
        // SAFETY: a NOP carries no buffer.
        unsafe {
            ring.submission()
                .push(&io_uring::opcode::Nop::new().build())
        }
        .expect("push");
        let entries = ring.params().sq_entries();
        assert!(DirectSq::<8>::new(ring.as_raw_fd(), entries).is_err());
    }
}
