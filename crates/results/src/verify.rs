//! What `--verify` found on a target, and the state a write run leaves for
//! a later `--verify-only` (as fio's `verify_state_save`).
//!
//! Every 512-byte verify block numio writes carries a header in the style
//! of fio's `verify=crc32c`: its byte offset, the run's generation and
//! seed, a sequence number and a CRC32C over the block. A read classifies
//! a block that does not check out as one of [`MismatchKind`].

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use planner::Workload;

/// Bytes of one verify block (a header and its payload): the smallest
/// logical block size, so any I/O a device accepts covers whole ones.
pub const VERIFY_BLOCK_BYTES: u32 = 512;

/// Why a verify block did not check out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MismatchKind {
    /// A valid block written for another offset (a misdirected write).
    Misdirected,
    /// A valid block of another generation than the one written last (the
    /// device kept older data: a lost write).
    LostWrite,
    /// A bad checksum or header (corruption).
    Corrupt,
    /// All zeroes (never written, or discarded).
    Zeroes,
}

impl MismatchKind {
    /// Every kind, in report order.
    pub const ALL: [MismatchKind; 4] = [
        MismatchKind::Corrupt,
        MismatchKind::LostWrite,
        MismatchKind::Misdirected,
        MismatchKind::Zeroes,
    ];

    /// The kind in words, for the text report.
    pub fn describe(self) -> &'static str {
        match self {
            MismatchKind::Misdirected => "misdirected (a block written for another offset)",
            MismatchKind::LostWrite => "lost write (an older generation)",
            MismatchKind::Corrupt => "corrupt (bad checksum or header)",
            MismatchKind::Zeroes => "zeroes (unwritten or discarded)",
        }
    }

    /// The `snake_case` name (as in JSON).
    pub fn name(self) -> &'static str {
        match self {
            MismatchKind::Misdirected => "misdirected",
            MismatchKind::LostWrite => "lost_write",
            MismatchKind::Corrupt => "corrupt",
            MismatchKind::Zeroes => "zeroes",
        }
    }
}

/// Consecutive verify blocks of one kind of mismatch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct MismatchRange {
    /// Why the blocks did not check out.
    pub kind: MismatchKind,
    /// Byte offset of the first block in the target.
    pub offset_bytes: u64,
    /// Bytes the range covers (a multiple of [`VERIFY_BLOCK_BYTES`]).
    pub len_bytes: u64,
}

/// A run's generation and pattern seed: what its written blocks carry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct VerifyStamp {
    /// Counts the write runs with `--verify` of a target (1, 2, ...).
    pub generation: u64,
    /// The run's pattern seed.
    pub seed: u64,
}

/// The verify outcome of one target.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct VerifyResult {
    /// What this run's writes carried, when it wrote.
    pub written: Option<VerifyStamp>,
    /// What reads expected (a saved state's or this run's); `None`: any
    /// generation was taken (no saved state), so lost writes go unseen.
    pub expected: Option<VerifyStamp>,
    /// Verify blocks read and checked.
    pub checked_blocks: u64,
    /// Mismatched blocks per kind.
    pub mismatched_blocks: BTreeMap<MismatchKind, u64>,
    /// Where, as ranges, in offset order (at most the first
    /// [`MISMATCH_RANGES_MAX`] per worker; `ranges_dropped` counts the rest).
    pub ranges: Vec<MismatchRange>,
    /// Ranges past the cap, not listed.
    pub ranges_dropped: u64,
    /// A write run: the most later writes any job issued while one of its
    /// writes was in flight (0 at `--iodepth 1`); a replay takes a block's
    /// sequence this much older than the last write there, since two
    /// writes to a block in flight together may land in either order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sequence_window: Option<u64>,
    /// Valid blocks written by a run the expected stamp does not know (a
    /// newer generation, or the same one with another seed): the verify
    /// state is older than the data, which is no data loss and no
    /// mismatch; those blocks could not be checked against it.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub stale_blocks: u64,
    /// The newest generation among `stale_blocks`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stale_generation: Option<u64>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// Ranges one worker keeps (allocated at start-up).
pub const MISMATCH_RANGES_MAX: usize = 4096;

impl VerifyResult {
    /// Mismatched blocks of every kind together.
    pub fn mismatched_total(&self) -> u64 {
        self.mismatched_blocks.values().sum()
    }
}

/// Version of the [`VerifyState`] file.
pub const VERIFY_STATE_SCHEMA_VERSION: u32 = 1;

/// What a write run with `--verify` left on one target.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TargetVerifyState {
    /// The generation and seed its blocks carry.
    pub stamp: VerifyStamp,
    /// The workload that wrote them (replayed as reads by `--verify-only`).
    pub workload: Workload,
    /// Writes completed per job, in job order (the replay's length).
    pub writes_per_job: Vec<u64>,
    /// The run's [`VerifyResult::sequence_window`]: the replay checks
    /// sequence numbers with it (none in a state saved before it was kept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sequence_window: Option<u64>,
    /// When it was saved (seconds since the Unix epoch).
    pub saved_unix_s: u64,
}

/// The verify state file: per target (by its path), what the last write
/// run with `--verify` left there.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct VerifyState {
    /// [`VERIFY_STATE_SCHEMA_VERSION`].
    pub schema_version: u32,
    /// Target path → its state.
    pub targets: BTreeMap<String, TargetVerifyState>,
}
