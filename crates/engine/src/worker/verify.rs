//! The verify pattern: every 8-byte word holds a hash of its byte offset in
//! the target, so misplaced or stale data is caught, not only corrupt data.

use crate::backend::Completion;
use crate::gen::mix64;

/// What checking a read against the verify pattern needs.
pub(super) struct Verify<'a> {
    /// The pattern's seed.
    pub seed: u64,
    /// Target offsets of the slots' I/Os.
    pub offsets: &'a [u64],
    /// Start of the worker's buffer region.
    pub buf_base: *mut u8,
    /// Bytes of one slot.
    pub slot_bytes: usize,
}

impl Verify<'_> {
    /// Whether the data the read `c` returned holds the verify pattern.
    #[cold]
    pub fn check(&self, c: Completion) -> bool {
        let buf = self
            .buf_base
            .wrapping_add(c.slot as usize * self.slot_bytes);
        // SAFETY: the completion for this slot was just reaped, so the
        // backend has handed its buffer (slot_bytes at its offset in the
        // worker's region) back to this worker.
        let buf = unsafe { std::slice::from_raw_parts(buf, self.slot_bytes) };
        check_pattern(
            buf,
            self.offsets[c.slot as usize],
            c.result as u32,
            self.seed,
        )
    }
}

/// The pattern's word at byte `offset_bytes`.
#[inline]
fn pattern_word(offset_bytes: u64, seed: u64) -> u64 {
    mix64(offset_bytes ^ seed)
}

/// Writes the verify pattern for `len` bytes at `offset` into `buf`.
pub fn fill_pattern(buf: &mut [u8], offset_bytes: u64, len_bytes: u32, seed: u64) {
    for (i, w) in buf[..len_bytes as usize].chunks_exact_mut(8).enumerate() {
        w.copy_from_slice(&pattern_word(offset_bytes + 8 * i as u64, seed).to_le_bytes());
    }
}

/// Whether `buf` holds the verify pattern for `len` bytes at `offset`.
pub fn check_pattern(buf: &[u8], offset_bytes: u64, len_bytes: u32, seed: u64) -> bool {
    buf[..len_bytes as usize]
        .chunks_exact(8)
        .enumerate()
        .all(|(i, w)| w == pattern_word(offset_bytes + 8 * i as u64, seed).to_le_bytes())
}
