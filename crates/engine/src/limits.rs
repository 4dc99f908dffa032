//! The limits a workload is checked against (by the target checks),
//! which the errors name: a leaf, so `error` and `targets` need not import
//! each other.

/// Most logical blocks one NVMe read or write moves (NLB is 16 bits, 0's based).
pub const NVME_MAX_BLOCKS_PER_COMMAND: u64 = 1 << 16;
/// Most I/Os a job may have in flight.
pub const MAX_IODEPTH: u32 = planner::flags::ENGINE_MAX_IODEPTH;
/// Largest block size.
pub const MAX_BS_BYTES: u64 = 64 << 20;
