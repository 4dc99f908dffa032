//! Direct access to a ring's submission queue: SQEs written in place in
//! the ring's own SQE array and a batch published with one tail store,
//! instead of built elsewhere and copied in (the io-uring crate's `push`
//! copies each entry).
//!
//! The ring stays the crate's (it sets the ring up, identity-maps the SQ
//! index array and keeps registration); this is a second mapping of the
//! same pages. The crate does not expose the ring's offsets, so they are
//! learnt from a throwaway probe ring: `head`, `tail`, `ring_mask` and
//! `ring_entries` are offsets into the kernel's `struct io_rings`, the same
//! for every ring of one kernel, and the mapping is checked against the
//! ring's known size before use.
//!
//! Ownership: only the owner of the [`DirectSq`] writes SQEs and the tail
//! (the crate's own `SubmissionQueue` must not be used on the same ring).
//! An entry past the tail is not the kernel's until the tail store
//! publishes it; the kernel reads published entries from the head up to
//! the tail, and moves the head on as it consumes them (at submission,
//! not at completion). [`DirectSq::entry`] hands out only positions
//! outside that window, and panics rather than hand out one inside it.

use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::sync::atomic::{AtomicU32, Ordering};

use rustix::io_uring::{io_uring_params, io_uring_setup, IORING_OFF_SQES, IORING_OFF_SQ_RING};
use rustix::mm::{MapFlags, ProtFlags};

use super::sqe::SqeView;

/// One shared mapping of a ring region, unmapped on drop.
#[derive(Debug)]
struct Map {
    ptr: *mut u8,
    len: usize,
}

impl Map {
    fn new(ring: impl AsFd, offset: u64, len: usize) -> io::Result<Map> {
        // SAFETY: a fresh shared mapping at an address the kernel picks (so
        // it overlaps nothing of ours) of the ring's own region; the kernel
        // checks `offset` and `len` against the ring and refuses a region
        // that is not there.
        let ptr = unsafe {
            rustix::mm::mmap(
                std::ptr::null_mut(),
                len,
                ProtFlags::READ | ProtFlags::WRITE,
                MapFlags::SHARED | MapFlags::POPULATE,
                ring,
                offset,
            )
        }?;
        Ok(Map {
            ptr: ptr.cast(),
            len,
        })
    }
}

impl Drop for Map {
    fn drop(&mut self) {
        // SAFETY: our own mapping, unmapped once; no reference into it
        // outlives the `DirectSq` that owns it (`entry` borrows `&mut self`).
        let _ = unsafe { rustix::mm::munmap(self.ptr.cast(), self.len) };
    }
}

/// The SQ ring offsets of this kernel, from a probe ring of `entries`.
fn probe_offsets(entries: u32) -> io::Result<rustix::io_uring::io_sqring_offsets> {
    let mut p = io_uring_params::default();
    // SAFETY: no IORING_SETUP_ATTACH_WQ flag, so `wq_fd` is not read; the
    // kernel writes only `p`, which outlives the call.
    let fd: OwnedFd = unsafe { io_uring_setup(entries, &mut p) }?;
    drop(fd);
    Ok(p.sq_off)
}

/// A second, writable view of one ring's submission queue, for entries of
/// type `E` ([`super::Sqe`] for a plain ring, [`super::NvmeSqe`] for
/// SQE128).
#[derive(Debug)]
pub struct DirectSq<E: SqeView> {
    _ring: Map,
    _sqes: Map,
    sqes: *mut E,
    head: *const AtomicU32,
    tail: *const AtomicU32,
    entries: u32,
    mask: u32,
    /// The tail as published.
    published: u32,
    /// Positions from `published` on that the kernel surely does not read:
    /// `entries` less the published entries not yet consumed, as of the
    /// last look at the head (which only moves on, so this only grows).
    room: u32,
}

impl<E: SqeView> DirectSq<E> {
    /// Maps the submission queue of `ring`, an io-uring crate ring with
    /// entries of `E`'s size and nothing queued yet. From now on its owner
    /// queues through this alone.
    pub fn new<C: io_uring::cqueue::EntryMarker>(
        ring: &io_uring::IoUring<E::Entry, C>,
    ) -> io::Result<Self> {
        let entries = ring.params().sq_entries();
        let off = probe_offsets(entries)?;
        let end = [off.head, off.tail, off.ring_mask, off.ring_entries]
            .into_iter()
            .max()
            .unwrap_or(0) as usize
            + 4;
        let map = Map::new(ring.as_fd(), IORING_OFF_SQ_RING, end)?;
        let at = |o: u32| map.ptr.wrapping_add(o as usize);
        // SAFETY: every offset is inside the `end` bytes just mapped and
        // 4-byte aligned (offsets of u32 fields of `struct io_rings`, in a
        // page-aligned mapping); the kernel writes `ring_mask` and
        // `ring_entries` once at set-up.
        let (mask, ring_entries) = unsafe {
            (
                at(off.ring_mask).cast::<u32>().read_volatile(),
                at(off.ring_entries).cast::<u32>().read_volatile(),
            )
        };
        if ring_entries != entries || mask != entries - 1 {
            return Err(io::Error::other(format!(
                "the probe ring's offsets do not fit this ring \
                 (ring_entries {ring_entries}, mask {mask}, expected {entries})"
            )));
        }
        let (head, tail) = (
            at(off.head).cast::<AtomicU32>(),
            at(off.tail).cast::<AtomicU32>(),
        );
        // SAFETY: `head` and `tail` point at the ring's live counters in
        // our mapping (the offsets were checked above), aligned u32s the
        // kernel shares with us, so atomics are how they are read.
        let (published, consumed) = unsafe {
            (
                (*tail).load(Ordering::Acquire),
                (*head).load(Ordering::Acquire),
            )
        };
        if published != consumed {
            return Err(io::Error::other("the ring already has SQEs queued"));
        }
        let sqes = Map::new(
            ring.as_fd(),
            IORING_OFF_SQES,
            entries as usize * size_of::<E>(),
        )?;
        Ok(DirectSq {
            sqes: sqes.ptr.cast(),
            _ring: map,
            _sqes: sqes,
            head,
            tail,
            entries,
            mask,
            published,
            room: entries,
        })
    }

    /// The SQE `i` positions past the published tail, to be written.
    /// Panics when the kernel may still read that position: more entries
    /// staged plus published-but-unconsumed than the ring holds (a caller
    /// that queues more than it submitted room for).
    #[inline(always)]
    pub fn entry(&mut self, i: u32) -> &mut E {
        if i >= self.room {
            self.look_at_head(i);
        }
        let at = (self.published.wrapping_add(i) & self.mask) as usize;
        // SAFETY: `at` ≤ mask < entries, inside the SQE mapping of
        // `entries` entries of `E`; `i < room`, so the position lies
        // outside the window from head to tail the kernel reads, and
        // `&mut self` makes this the only reference into the array.
        unsafe { &mut *self.sqes.add(at) }
    }

    /// Refreshes `room` from the kernel's head; panics when position `i`
    /// still is the kernel's.
    #[cold]
    fn look_at_head(&mut self, i: u32) {
        // SAFETY: the ring's live head counter in our mapping (see `new`).
        let head = unsafe { (*self.head).load(Ordering::Acquire) };
        let unconsumed = self.published.wrapping_sub(head);
        self.room = self.entries - unconsumed.min(self.entries);
        assert!(
            i < self.room,
            "SQE {i} past the tail with {unconsumed} of {} entries not yet consumed",
            self.entries
        );
    }

    /// Writes `e` into every SQE, e.g. to lay down a template once; panics
    /// when the kernel has entries left to consume.
    pub fn fill(&mut self, e: E) {
        for i in 0..self.entries {
            *self.entry(i) = e;
        }
    }

    /// Hands the next `n` entries to the kernel (then entered to submit
    /// them, or taken by an SQPOLL thread). Panics past the room `entry`
    /// checked.
    #[inline(always)]
    pub fn publish(&mut self, n: u32) {
        assert!(
            n <= self.room,
            "publishing {n} SQEs with room for {}",
            self.room
        );
        self.room -= n;
        self.published = self.published.wrapping_add(n);
        // SAFETY: the ring's tail in our mapping (see `new`); the release
        // store orders the SQE writes before it, as the kernel's acquire
        // load of the tail expects.
        unsafe { (*self.tail).store(self.published, Ordering::Release) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::uring::Sqe;

    // SQEs written in place, across many wrap-arounds of a small ring,
    // reach the kernel in order with the user_data written.
    #[test]
    fn in_place_sqes_wrap_around_in_order() {
        let mut ring = io_uring::IoUring::new(8).expect("io_uring");
        let entries = ring.params().sq_entries();
        let mut sq = DirectSq::<Sqe>::new(&ring).expect("map the SQ");
        let nop = Sqe::from_entry(io_uring::opcode::Nop::new().build());
        let mut next = 0u64;
        let mut seen = Vec::new();
        for round in 0..100u32 {
            let n = 1 + round % entries;
            for i in 0..n {
                let e = sq.entry(i);
                *e = nop;
                e.head.user_data = next + u64::from(i);
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
        assert!(DirectSq::<Sqe>::new(&ring).is_err());
    }

    // Published entries the kernel has not consumed are never handed out
    // again: asking for one more than the ring holds panics.
    #[test]
    #[should_panic(expected = "not yet consumed")]
    fn never_hands_out_an_unconsumed_entry() {
        let ring = io_uring::IoUring::new(4).expect("io_uring");
        let entries = ring.params().sq_entries();
        let mut sq = DirectSq::<Sqe>::new(&ring).expect("map the SQ");
        let nop = Sqe::from_entry(io_uring::opcode::Nop::new().build());
        sq.fill(nop);
        sq.publish(entries);
        // Nothing was submitted, so the head has not moved.
        sq.entry(0);
    }
}
