//! Page-aligned data buffers for `O_DIRECT` storage I/O.
//!
//! Each request slot owns one [`AlignedBuf`]. It grows to the largest
//! transfer the slot has carried (allocated zeroed, so every byte is always
//! initialised) and is then reused: in steady state no command allocates.
//! While a storage operation is in flight the kernel owns the bytes; the
//! connection never frees or grows the buffer of a request in the
//! `Executing` state.

use std::alloc::{alloc_zeroed, dealloc, Layout};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, Ordering};

/// The bytes of command data buffers all connections hold together,
/// against [`Limits::max_buffer_bytes`](super::config::Limits): a command
/// whose buffer would go past it waits (its slot stays taken, so its host
/// cannot send more than its queue depth) until other commands give theirs
/// back. Buffers are counted by capacity, retained ones included.
#[derive(Debug)]
pub struct BufferBudget {
    used: AtomicU64,
    limit: u64,
    waits: AtomicU64,
}

impl BufferBudget {
    /// A budget of `limit` bytes.
    pub fn new(limit: u64) -> Self {
        Self {
            used: AtomicU64::new(0),
            limit,
            waits: AtomicU64::new(0),
        }
    }

    /// Takes `n` bytes if they fit under the limit.
    pub fn try_take(&self, n: u64) -> bool {
        let mut cur = self.used.load(Ordering::Relaxed);
        loop {
            if cur.saturating_add(n) > self.limit {
                return false;
            }
            match self
                .used
                .compare_exchange_weak(cur, cur + n, Ordering::AcqRel, Ordering::Relaxed)
            {
                Ok(_) => return true,
                Err(now) => cur = now,
            }
        }
    }

    /// Takes `n` bytes whatever the limit (data that already arrived in a
    /// capsule, bounded by the in-capsule size).
    pub fn take(&self, n: u64) {
        self.used.fetch_add(n, Ordering::AcqRel);
    }

    /// Gives `n` bytes back.
    pub fn give(&self, n: u64) {
        self.used.fetch_sub(n, Ordering::AcqRel);
    }

    /// Counts a command that had to wait for buffer space.
    pub fn count_wait(&self) {
        self.waits.fetch_add(1, Ordering::Relaxed);
    }

    /// Bytes held now.
    pub fn used(&self) -> u64 {
        self.used.load(Ordering::Relaxed)
    }

    /// The limit.
    pub fn limit(&self) -> u64 {
        self.limit
    }

    /// Commands that waited for buffer space so far.
    pub fn waits(&self) -> u64 {
        self.waits.load(Ordering::Relaxed)
    }
}

/// Alignment of every buffer: the largest logical block size served, and
/// the page size, so `O_DIRECT` accepts any of them.
pub const BUF_ALIGN_BYTES: usize = 4096;

/// A growable, page-aligned byte buffer with a length.
pub struct AlignedBuf {
    ptr: NonNull<u8>,
    cap: usize,
    len: usize,
}

// SAFETY: AlignedBuf owns its allocation exclusively (like Vec<u8>); moving
// it to another thread moves that ownership.
unsafe impl Send for AlignedBuf {}
// SAFETY: shared references only read the bytes (Deref to &[u8]).
unsafe impl Sync for AlignedBuf {}

impl AlignedBuf {
    /// An empty buffer that has allocated nothing.
    pub const fn new() -> Self {
        Self {
            ptr: NonNull::<[u8; BUF_ALIGN_BYTES]>::dangling().cast(),
            cap: 0,
            len: 0,
        }
    }

    /// Bytes allocated.
    pub fn capacity(&self) -> usize {
        self.cap
    }

    /// Makes the length zero (keeps the allocation).
    pub fn clear(&mut self) {
        self.len = 0;
    }

    /// Ensures room for `n` bytes. Growing discards the contents (callers
    /// grow before they fill).
    fn reserve_discarding(&mut self, n: usize) {
        if n <= self.cap {
            return;
        }
        let cap = n.div_ceil(BUF_ALIGN_BYTES) * BUF_ALIGN_BYTES;
        let layout = Layout::from_size_align(cap, BUF_ALIGN_BYTES).expect("buffer layout");
        // SAFETY: layout has a non-zero size (n > cap >= 0, so cap >= 4096).
        let p = unsafe { alloc_zeroed(layout) };
        let Some(p) = NonNull::new(p) else {
            std::alloc::handle_alloc_error(layout);
        };
        self.free();
        self.ptr = p;
        self.cap = cap;
        self.len = 0;
    }

    /// Sets the length to `n` without clearing: bytes beyond the old length
    /// hold what this buffer last carried (always initialised). For data
    /// buffers that are completely overwritten (by storage or the host)
    /// before anything reads them.
    pub fn set_len_stale(&mut self, n: usize) {
        if n > self.cap {
            self.reserve_discarding(n);
        }
        self.len = n;
    }

    /// Sets the length to `n`, with every byte zero.
    pub fn set_len_zeroed(&mut self, n: usize) {
        self.set_len_stale(n);
        self[..].fill(0);
    }

    /// Replaces the contents with `data`.
    pub fn assign(&mut self, data: &[u8]) {
        self.set_len_stale(data.len());
        self[..].copy_from_slice(data);
    }

    /// Frees the allocation when it is larger than `limit` bytes, so an
    /// idle queue does not pin depth x MDTS bytes.
    pub fn shrink_above(&mut self, limit: usize) {
        if self.cap > limit {
            self.free();
        }
    }

    /// Start of the buffer, for handing to the kernel.
    pub fn as_mut_ptr(&mut self) -> *mut u8 {
        self.ptr.as_ptr()
    }

    fn free(&mut self) {
        if self.cap > 0 {
            let layout = Layout::from_size_align(self.cap, BUF_ALIGN_BYTES).expect("buffer layout");
            // SAFETY: ptr was allocated by alloc_zeroed with this layout and
            // is freed once (cap is reset below).
            unsafe { dealloc(self.ptr.as_ptr(), layout) };
        }
        self.ptr = NonNull::<[u8; BUF_ALIGN_BYTES]>::dangling().cast();
        self.cap = 0;
        self.len = 0;
    }
}

impl Drop for AlignedBuf {
    fn drop(&mut self) {
        self.free();
    }
}

impl Default for AlignedBuf {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for AlignedBuf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AlignedBuf")
            .field("len", &self.len)
            .field("cap", &self.cap)
            .finish()
    }
}

impl std::ops::Deref for AlignedBuf {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        // SAFETY: ptr is valid for cap >= len initialised bytes (allocated
        // zeroed), or dangling and aligned with len 0.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl std::ops::DerefMut for AlignedBuf {
    fn deref_mut(&mut self) -> &mut [u8] {
        // SAFETY: as in Deref; &mut self gives exclusive access.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aligned_grows_once_and_keeps_its_allocation() {
        let mut b = AlignedBuf::new();
        assert_eq!(b.len(), 0);
        b.assign(&[7; 100]);
        assert_eq!(b.as_mut_ptr() as usize % BUF_ALIGN_BYTES, 0);
        assert_eq!((b.len(), b.capacity()), (100, 4096));
        let p = b.as_mut_ptr();
        b.clear();
        b.set_len_stale(4096);
        assert_eq!(b.as_mut_ptr(), p, "no reallocation within capacity");
        assert_eq!(&b[..100], &[7; 100], "stale bytes are the old ones");
        b.set_len_zeroed(8192);
        assert!(b.iter().all(|&x| x == 0));
        assert_eq!(b.capacity(), 8192);
        b.shrink_above(4096);
        assert_eq!((b.len(), b.capacity()), (0, 0));
    }
}
