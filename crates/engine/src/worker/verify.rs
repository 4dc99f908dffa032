//! The verify blocks: every 512-byte block numio writes with `--verify`
//! starts with a header in the style of fio's `verify=crc32c` (its byte
//! offset, the run's generation and seed, a sequence number, a CRC32C over
//! the rest of the block) followed by a pattern. A read checks each block
//! and classifies one that does not check out (see
//! [`results::MismatchKind`]): all zeroes, a bad checksum or header, a
//! valid block of another offset (misdirected), or of another generation
//! than expected (a lost write). A replay (`--verify-only`) also checks
//! sequence numbers: its read `i` reads where the saved run's write `i`
//! went, so a block of the expected generation that this job wrote must
//! carry a sequence of at least `i` less the saved run's reorder window
//! (an older one: the last overwrite was lost). A valid block of a run
//! the expected stamp does not know (a newer generation, or the same
//! generation with another seed) says the saved state is stale, not that
//! data was lost: it is counted apart ([`VerifyLog::stale_blocks`]) and
//! fails no read. Findings go to the worker's [`VerifyLog`], allocated at
//! start-up.

use results::{MismatchKind, MismatchRange, VerifyStamp, MISMATCH_RANGES_MAX};

use crate::backend::Completion;
use crate::gen::mix64;

/// Bytes of one verify block.
pub const BLOCK_BYTES: usize = results::VERIFY_BLOCK_BYTES as usize;
/// `NMV1`: the header's first word.
const MAGIC: u32 = u32::from_le_bytes(*b"NMV1");
/// Bytes of the header: magic, CRC32C, offset, generation, seed, sequence.
pub const HEADER_BYTES: usize = 40;
/// Where the CRC32C covers from: everything after the magic and itself.
const CRC_FROM: usize = 8;

/// What a worker writes and what its reads accept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VerifyKey {
    /// The generation and seed this worker's writes carry.
    pub write: VerifyStamp,
    /// What reads accept: `None`, any generation (no saved state); else
    /// this one, or `also` (a mixed run's blocks not yet rewritten).
    pub expect: Option<VerifyStamp>,
    /// A second generation reads accept.
    pub also: Option<VerifyStamp>,
    /// The job (the high bits of each write's sequence number).
    pub job: u32,
    /// `--verify-only`: the reads replay the saved run's writes in order
    /// (read `i` where write `i` went), and a block of `expect` written by
    /// this job must carry a sequence of at least `i` less this window
    /// (the saved run's [`VerifyLog::sequence_window`]); `None` checks no
    /// sequence.
    pub replay_window: Option<u64>,
}

/// The low bits of a sequence number: the write's index in its job.
const SEQUENCE_MASK: u64 = (1 << 48) - 1;

/// A worker's verify findings: counts per kind and the first
/// [`MISMATCH_RANGES_MAX`] ranges (adjacent blocks of one kind merged).
#[derive(Debug, Clone)]
pub struct VerifyLog {
    /// Blocks checked.
    pub checked_blocks: u64,
    /// Mismatched blocks per kind (in [`MismatchKind::ALL`] order).
    pub mismatched: [u64; 4],
    /// Where, as ranges (capacity fixed at start-up).
    pub ranges: Vec<MismatchRange>,
    /// Ranges past the capacity.
    pub dropped: u64,
    /// Writes: the most later writes issued while one write was in flight
    /// (0 at `--iodepth 1`). Two writes to a block in flight together may
    /// land in either order, so a replay takes a sequence this much older
    /// than the one it expects.
    pub sequence_window: u64,
    /// Valid blocks written by a run the expected stamp does not know (a
    /// newer generation, or the same one with another seed): the saved
    /// state is older than the data. No data loss; not checked further.
    pub stale_blocks: u64,
    /// The newest generation among [`VerifyLog::stale_blocks`].
    pub stale_generation: u64,
}

impl Default for VerifyLog {
    fn default() -> Self {
        VerifyLog {
            checked_blocks: 0,
            mismatched: [0; 4],
            ranges: Vec::with_capacity(MISMATCH_RANGES_MAX),
            dropped: 0,
            sequence_window: 0,
            stale_blocks: 0,
            stale_generation: 0,
        }
    }
}

fn kind_index(kind: MismatchKind) -> usize {
    MismatchKind::ALL
        .iter()
        .position(|k| *k == kind)
        .unwrap_or(0)
}

impl VerifyLog {
    /// Records one mismatched block at `offset_bytes`, extending the last
    /// range when it ends there with the same kind; never allocates.
    fn record(&mut self, kind: MismatchKind, offset_bytes: u64) {
        self.mismatched[kind_index(kind)] += 1;
        if let Some(last) = self.ranges.last_mut() {
            if last.kind == kind && last.offset_bytes + last.len_bytes == offset_bytes {
                last.len_bytes += BLOCK_BYTES as u64;
                return;
            }
        }
        if self.ranges.len() < self.ranges.capacity() {
            self.ranges.push(MismatchRange {
                kind,
                offset_bytes,
                len_bytes: BLOCK_BYTES as u64,
            });
        } else {
            self.dropped += 1;
        }
    }
}

/// What checking a read needs.
pub(super) struct Verify<'a> {
    /// The worker's key.
    pub key: VerifyKey,
    /// Target offsets of the slots' I/Os.
    pub offsets: &'a [u64],
    /// Indexes of the slots' I/Os among the worker's reads (or writes).
    pub seqs: &'a [u64],
    /// Start of the worker's buffer region.
    pub buf_base: *mut u8,
    /// Bytes of one slot.
    pub slot_bytes: usize,
}

impl Verify<'_> {
    /// Whether every block the read `c` returned checks out; the ones that
    /// do not go to `log`.
    #[cold]
    pub fn check(&self, c: Completion, log: &mut VerifyLog) -> bool {
        let buf = self
            .buf_base
            .wrapping_add(c.slot as usize * self.slot_bytes);
        // SAFETY: the completion for this slot was just reaped, so the
        // backend has handed its buffer (slot_bytes at its offset in the
        // worker's region) back to this worker.
        let buf = unsafe { std::slice::from_raw_parts(buf, self.slot_bytes) };
        let len = (c.result as usize).min(buf.len());
        let slot = c.slot as usize;
        check_blocks(
            &buf[..len],
            self.offsets[slot],
            self.seqs[slot],
            &self.key,
            log,
        )
    }

    /// Writes issued after the write in `slot` while it was in flight,
    /// `writes_issued` having been issued in all.
    pub fn issued_past(&self, slot: u32, writes_issued: u64) -> u64 {
        writes_issued - 1 - self.seqs[slot as usize]
    }
}

/// Writes verify blocks for the `len_bytes` at `offset_bytes` into `buf`:
/// each block's header (sequence `sequence`) and pattern, then its CRC32C.
pub fn fill_blocks(
    buf: &mut [u8],
    offset_bytes: u64,
    len_bytes: u32,
    key: &VerifyKey,
    sequence: u64,
) {
    let seq = u64::from(key.job) << 48 | (sequence & SEQUENCE_MASK);
    for (i, b) in buf[..len_bytes as usize]
        .chunks_exact_mut(BLOCK_BYTES)
        .enumerate()
    {
        let off = offset_bytes + (i * BLOCK_BYTES) as u64;
        b[0..4].copy_from_slice(&MAGIC.to_le_bytes());
        b[8..16].copy_from_slice(&off.to_le_bytes());
        b[16..24].copy_from_slice(&key.write.generation.to_le_bytes());
        b[24..32].copy_from_slice(&key.write.seed.to_le_bytes());
        b[32..40].copy_from_slice(&seq.to_le_bytes());
        let salt = key.write.seed ^ key.write.generation.rotate_left(32);
        for (j, w) in b[HEADER_BYTES..].chunks_exact_mut(8).enumerate() {
            let word = mix64((off + (HEADER_BYTES + 8 * j) as u64) ^ salt);
            w.copy_from_slice(&word.to_le_bytes());
        }
        let crc = crc32c::crc32c(&b[CRC_FROM..]);
        b[4..8].copy_from_slice(&crc.to_le_bytes());
    }
}

/// Checks the verify blocks of `buf` (read at `offset_bytes` by the
/// worker's read number `read_index`), recording each one that does not
/// check out; whether all did.
pub fn check_blocks(
    buf: &[u8],
    offset_bytes: u64,
    read_index: u64,
    key: &VerifyKey,
    log: &mut VerifyLog,
) -> bool {
    let mut ok = true;
    for (i, b) in buf.chunks_exact(BLOCK_BYTES).enumerate() {
        let off = offset_bytes + (i * BLOCK_BYTES) as u64;
        log.checked_blocks += 1;
        match judge(b, off, read_index, key) {
            Verdict::Good => {}
            Verdict::Stale { generation } => {
                log.stale_blocks += 1;
                log.stale_generation = log.stale_generation.max(generation);
            }
            Verdict::Bad(kind) => {
                log.record(kind, off);
                ok = false;
            }
        }
    }
    ok
}

fn word(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

/// What one verify block says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// It checks out.
    Good,
    /// A valid block of a run the expected stamp does not know (a newer
    /// generation, or the same one with another seed): the state reads
    /// expect is stale; no data loss.
    Stale {
        /// The generation the block carries.
        generation: u64,
    },
    /// It does not check out, and why.
    Bad(MismatchKind),
}

/// Why the block `b` read at `offset_bytes` (by read number `read_index`)
/// does not check out, if it does not ([`judge`]; a stale state's block
/// checks out here).
pub fn classify(
    b: &[u8],
    offset_bytes: u64,
    read_index: u64,
    key: &VerifyKey,
) -> Option<MismatchKind> {
    match judge(b, offset_bytes, read_index, key) {
        Verdict::Bad(kind) => Some(kind),
        Verdict::Good | Verdict::Stale { .. } => None,
    }
}

/// The block `b` read at `offset_bytes` (by read number `read_index`):
/// zeroes, then a bad header or checksum, then another offset, then an
/// older generation than reads accept (a lost write) or a run they do not
/// know (stale), then (a replay) a sequence older than the last write there.
pub fn judge(b: &[u8], offset_bytes: u64, read_index: u64, key: &VerifyKey) -> Verdict {
    let magic = u32::from_le_bytes(b[0..4].try_into().expect("4 bytes"));
    let crc = u32::from_le_bytes(b[4..8].try_into().expect("4 bytes"));
    if magic != MAGIC || crc != crc32c::crc32c(&b[CRC_FROM..]) {
        return Verdict::Bad(if b.iter().all(|&x| x == 0) {
            MismatchKind::Zeroes
        } else {
            MismatchKind::Corrupt
        });
    }
    if word(b, 8) != offset_bytes {
        return Verdict::Bad(MismatchKind::Misdirected);
    }
    let found = VerifyStamp {
        generation: word(b, 16),
        seed: word(b, 24),
    };
    let Some(e) = key.expect else {
        return Verdict::Good;
    };
    if found == e {
        return match stale_sequence(word(b, 32), read_index, key) {
            Some(kind) => Verdict::Bad(kind),
            None => Verdict::Good,
        };
    }
    if Some(found) == key.also {
        return Verdict::Good;
    }
    // Newer than every stamp reads accept, or the same generation by
    // another run: written after the state was saved (or under another
    // state file), so the state, not the device, is behind.
    let newest = key
        .also
        .map_or(e.generation, |a| a.generation.max(e.generation));
    if found.generation > newest || (found.generation == e.generation && found.seed != e.seed) {
        return Verdict::Stale {
            generation: found.generation,
        };
    }
    Verdict::Bad(MismatchKind::LostWrite)
}

/// A replay's sequence check: the block at read `read_index` holds the
/// write `i` made there or a later one (written last), so a sequence of
/// this job older than `i` less the window is a lost overwrite. Another
/// job's block is taken: jobs' writes have no order between them.
fn stale_sequence(seq: u64, read_index: u64, key: &VerifyKey) -> Option<MismatchKind> {
    let window = key.replay_window?;
    let (job, index) = ((seq >> 48) as u32, seq & SEQUENCE_MASK);
    (job == key.job && index < (read_index & SEQUENCE_MASK).saturating_sub(window))
        .then_some(MismatchKind::LostWrite)
}
