//! The engine's OS boundary: NUMA-bound buffers, clocks and per-thread
//! resource usage. Every `unsafe` outside the io_uring backend lives here;
//! pinning is `sysapi::affinity`'s, device facts come from `topology`.

use std::io;
use std::ptr::NonNull;

use results::CpuUsage;

/// Nanoseconds of CLOCK_MONOTONIC.
#[inline]
pub fn now_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, exclusively borrowed timespec; the vDSO call
    // only writes into it.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// CPU and scheduling counters of the calling thread.
pub fn thread_usage() -> CpuUsage {
    usage(libc::RUSAGE_THREAD)
}

/// CPU and scheduling counters of the whole process, including the kernel's
/// io_uring worker threads (iou-wrk) that serve I/O punted from the rings.
pub fn process_usage() -> CpuUsage {
    usage(libc::RUSAGE_SELF)
}

fn usage(who: libc::c_int) -> CpuUsage {
    // SAFETY: rusage is plain data and a valid out-parameter.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: a valid `who` and a valid pointer.
    unsafe { libc::getrusage(who, &mut ru) };
    let tv = |t: libc::timeval| t.tv_sec as u64 * 1_000_000_000 + t.tv_usec as u64 * 1000;
    CpuUsage {
        wall_ns: 0,
        user_ns: tv(ru.ru_utime),
        system_ns: tv(ru.ru_stime),
        voluntary_ctx_switches: ru.ru_nvcsw as u64,
        involuntary_ctx_switches: ru.ru_nivcsw as u64,
        idle_poll_ns: 0,
    }
}

/// `now - start`, covering `wall_ns`.
pub fn delta(now: &CpuUsage, start: &CpuUsage, wall_ns: u64) -> CpuUsage {
    CpuUsage {
        wall_ns,
        user_ns: now.user_ns.saturating_sub(start.user_ns),
        system_ns: now.system_ns.saturating_sub(start.system_ns),
        voluntary_ctx_switches: now
            .voluntary_ctx_switches
            .saturating_sub(start.voluntary_ctx_switches),
        involuntary_ctx_switches: now
            .involuntary_ctx_switches
            .saturating_sub(start.involuntary_ctx_switches),
        idle_poll_ns: now.idle_poll_ns.saturating_sub(start.idle_poll_ns),
    }
}

/// An anonymous, page-aligned, pre-faulted mapping, optionally bound to one
/// NUMA node with mbind(2). Owned by one worker; unmapped on drop.
#[derive(Debug)]
pub struct NodeBuffer {
    ptr: NonNull<u8>,
    len_bytes: usize,
    node: Option<u32>,
    hugepages: bool,
}

/// The hugepage size [`NodeBuffer::new_hugepages`] maps.
pub const HUGEPAGE_BYTES: usize = sysapi::memory::HUGEPAGE_BYTES;

// SAFETY: the mapping is owned by this value alone; moving it to the worker
// thread that uses it moves that ownership.
unsafe impl Send for NodeBuffer {}

impl NodeBuffer {
    /// Maps `len_bytes` (rounded up to pages). With `node`, binds the pages to
    /// that node before touching them; when mbind fails the pages use the
    /// default policy and the returned note says so.
    pub fn new(len_bytes: usize, node: Option<u32>) -> io::Result<(NodeBuffer, Option<String>)> {
        let page = 4096usize;
        let len_bytes = len_bytes.max(page).div_ceil(page) * page;
        // SAFETY: a fresh private anonymous mapping; nothing else refers to it.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len_bytes,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let ptr = NonNull::new(p.cast::<u8>()).ok_or_else(io::Error::last_os_error)?;
        let mut note = None;
        let mut bound = None;
        if let Some(n) = node {
            // SAFETY: our fresh mapping, not yet handed out.
            match unsafe { sysapi::memory::mbind(ptr.as_ptr(), len_bytes, n) } {
                Ok(()) => bound = Some(n),
                Err(e) => {
                    note = Some(format!(
                        "mbind to node {n} failed ({e}); buffers use the default memory policy"
                    ))
                }
            }
        }
        // Touch every page now so that no page fault lands on the I/O path.
        // SAFETY: the mapping is `len_bytes` long, writable and ours.
        unsafe { std::ptr::write_bytes(ptr.as_ptr(), 0, len_bytes) };
        Ok((
            NodeBuffer {
                ptr,
                len_bytes,
                node: bound,
                hugepages: false,
            },
            note,
        ))
    }

    /// As [`NodeBuffer::new`], on 2 MiB hugepages where enough are
    /// reserved (the IOMMU then maps the buffer in few, large entries: what
    /// numio's own NVMe driver wants; `numio vfio bind --hugepages N`
    /// reserves them). The pages come from `node` where it has them free,
    /// else from another node, and the note says so: they were reserved
    /// from the whole machine's pool at mmap, so a strict bind could fault
    /// with no page on the node, a preference cannot. Without enough
    /// hugepages, ordinary pages and a note.
    pub fn new_hugepages(
        len_bytes: usize,
        node: Option<u32>,
    ) -> io::Result<(NodeBuffer, Option<String>)> {
        let len = len_bytes.max(1).div_ceil(HUGEPAGE_BYTES) * HUGEPAGE_BYTES;
        let ptr = match sysapi::memory::map_hugepages(len, node) {
            Ok(p) => p,
            Err(e) => {
                let (b, note) = NodeBuffer::new(len_bytes, node)?;
                let why = format!(
                    "buffers on 4 KiB pages: {} 2 MiB hugepages could not be had ({e}); `numio vfio bind --hugepages N` reserves them",
                    len / HUGEPAGE_BYTES
                );
                return Ok((b, Some(note.map_or(why.clone(), |n| format!("{n}; {why}")))));
            }
        };
        let landed = sysapi::memory::node_of(ptr.as_ptr()).ok();
        let note = match (node, landed) {
            (Some(n), Some(l)) if n != l => Some(format!(
                "node {n} had too few free 2 MiB hugepages: buffers on node {l}'s"
            )),
            _ => None,
        };
        Ok((
            NodeBuffer {
                ptr,
                len_bytes: len,
                node: landed,
                hugepages: true,
            },
            note,
        ))
    }

    /// Whether the buffer is on 2 MiB hugepages.
    pub fn hugepages(&self) -> bool {
        self.hugepages
    }

    /// Start of the mapping.
    pub fn as_ptr(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }

    /// Length in bytes.
    pub fn len_bytes(&self) -> usize {
        self.len_bytes
    }

    /// Node the pages are bound to, if binding succeeded.
    pub fn node(&self) -> Option<u32> {
        self.node
    }
}

impl Drop for NodeBuffer {
    fn drop(&mut self) {
        // SAFETY: we own the mapping; every I/O using it has completed before
        // the worker drops its buffers (the worker drains its queue first).
        unsafe { libc::munmap(self.ptr.as_ptr().cast(), self.len_bytes) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffer_is_page_aligned_zeroed_and_bound_when_possible() {
        let (b, note) = NodeBuffer::new(10_000, Some(0)).expect("mmap works");
        assert_eq!(b.as_ptr() as usize % 4096, 0);
        assert_eq!(b.len_bytes(), 12_288);
        // SAFETY: reading our own mapping.
        let s = unsafe { std::slice::from_raw_parts(b.as_ptr(), b.len_bytes()) };
        assert!(s.iter().all(|&x| x == 0));
        assert!(b.node() == Some(0) || note.is_some());
    }

    #[test]
    fn hugepage_buffers_or_a_note_saying_why_not() {
        let (b, note) = NodeBuffer::new_hugepages(3 << 20, None).expect("a buffer either way");
        // SAFETY: reading our own mapping.
        let s = unsafe { std::slice::from_raw_parts(b.as_ptr(), b.len_bytes()) };
        assert!(s.iter().all(|&x| x == 0));
        if b.hugepages() {
            // This machine had 2 hugepages free.
            assert_eq!(b.len_bytes(), 4 << 20);
            assert_eq!(b.as_ptr() as usize % HUGEPAGE_BYTES, 0);
        } else {
            assert_eq!(b.len_bytes(), 3 << 20);
            let n = note.expect("ordinary pages are said");
            assert!(
                n.contains("4 KiB pages") && n.contains("--hugepages"),
                "{n}"
            );
        }
    }

    #[test]
    fn clock_moves_forward() {
        let a = now_ns();
        let b = now_ns();
        assert!(b >= a && a > 0);
    }
}
