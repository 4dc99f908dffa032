//! Workload specifications, named as fio names them.
//!
//! A [`Workload`] is plain data: what each job does. The engine gives it
//! meaning; the planner and the fio reader/writer carry it.

use serde::{Deserialize, Serialize};

/// fio's `rw`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RwMode {
    /// Sequential reads.
    Read,
    /// Sequential writes.
    Write,
    /// Random reads.
    RandRead,
    /// Random writes.
    RandWrite,
    /// Sequential mixed reads and writes (`rw`, `readwrite`).
    ReadWrite,
    /// Random mixed reads and writes.
    RandRw,
}

impl RwMode {
    /// Whether the mode issues any write.
    pub fn writes(self) -> bool {
        !matches!(self, RwMode::Read | RwMode::RandRead)
    }
    /// Whether offsets are random.
    pub fn random(self) -> bool {
        matches!(self, RwMode::RandRead | RwMode::RandWrite | RwMode::RandRw)
    }
    /// The mode fio's `rw` value names (`rw` and `readwrite` are one mode);
    /// `None` for anything else.
    pub fn from_fio_name(name: &str) -> Option<RwMode> {
        Some(match name {
            "read" => RwMode::Read,
            "write" => RwMode::Write,
            "randread" => RwMode::RandRead,
            "randwrite" => RwMode::RandWrite,
            "rw" | "readwrite" => RwMode::ReadWrite,
            "randrw" => RwMode::RandRw,
            _ => return None,
        })
    }
    /// fio's spelling.
    pub fn fio_name(self) -> &'static str {
        match self {
            RwMode::Read => "read",
            RwMode::Write => "write",
            RwMode::RandRead => "randread",
            RwMode::RandWrite => "randwrite",
            RwMode::ReadWrite => "rw",
            RwMode::RandRw => "randrw",
        }
    }
}

/// fio's `random_distribution`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Distribution {
    /// Every block equally likely.
    Uniform,
    /// Zipf with exponent θ.
    Zipf(f64),
}

/// What one job does to one target.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Workload {
    /// Access pattern.
    pub rw: RwMode,
    /// Percentage of reads in mixed modes (fio `rwmixread`).
    pub rwmixread: u8,
    /// Block size range in bytes, inclusive (`bs=4k` gives 4096..=4096).
    pub bs_min_bytes: u64,
    /// Upper end of the block size range in bytes.
    pub bs_max_bytes: u64,
    /// I/Os in flight per job.
    pub iodepth: u32,
    /// Jobs per target.
    pub numjobs: u32,
    /// Bytes of the target each job covers (`None`: all of it from `offset`).
    pub size_bytes: Option<u64>,
    /// Start offset in bytes.
    pub offset_bytes: u64,
    /// Measured run time in nanoseconds (`None`: until `size` is done).
    pub runtime_ns: Option<u64>,
    /// Warm-up time in nanoseconds, not measured.
    pub ramp_time_ns: u64,
    /// Keep running for `runtime` even after covering `size`.
    pub time_based: bool,
    /// Stop each job after this many I/Os.
    pub number_ios: Option<u64>,
    /// Cap on I/Os per second per job.
    pub rate_iops: Option<u64>,
    /// Distribution of random offsets.
    pub random_distribution: Distribution,
    /// Seed of the offset generator.
    pub randseed: u64,
    /// fio `norandommap`: random offsets may repeat before every block is hit.
    pub norandommap: bool,
    /// O_DIRECT.
    pub direct: bool,
}

impl Default for Workload {
    /// fio's defaults where fio has one, and numio's main job otherwise
    /// (randread 4 KiB, QD 64, O_DIRECT).
    fn default() -> Self {
        Workload {
            rw: RwMode::RandRead,
            rwmixread: 50,
            bs_min_bytes: 4096,
            bs_max_bytes: 4096,
            iodepth: 64,
            numjobs: 1,
            size_bytes: None,
            offset_bytes: 0,
            runtime_ns: Some(10_000_000_000),
            ramp_time_ns: 0,
            time_based: true,
            number_ios: None,
            rate_iops: None,
            random_distribution: Distribution::Uniform,
            randseed: 0x6e75_6d69_6f21,
            norandommap: true,
            direct: true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::RwMode;

    #[test]
    fn fio_names_round_trip() {
        for m in [
            RwMode::Read,
            RwMode::Write,
            RwMode::RandRead,
            RwMode::RandWrite,
            RwMode::ReadWrite,
            RwMode::RandRw,
        ] {
            assert_eq!(RwMode::from_fio_name(m.fio_name()), Some(m));
        }
        assert_eq!(RwMode::from_fio_name("readwrite"), Some(RwMode::ReadWrite));
        assert_eq!(RwMode::from_fio_name("randtrim"), None);
    }
}
