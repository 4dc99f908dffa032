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
    /// Every mode, in the order messages list them.
    pub const ALL: [RwMode; 6] = [
        RwMode::Read,
        RwMode::Write,
        RwMode::RandRead,
        RwMode::RandWrite,
        RwMode::ReadWrite,
        RwMode::RandRw,
    ];

    /// Whether the mode issues any write.
    pub fn writes(self) -> bool {
        !matches!(self, RwMode::Read | RwMode::RandRead)
    }
    /// Whether the mode issues any read.
    pub fn reads(self) -> bool {
        !matches!(self, RwMode::Write | RwMode::RandWrite)
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

/// Why a `random_distribution` value was refused; none repeats the value.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum DistributionError {
    /// `random:x`.
    #[error("uniform offsets take no parameter")]
    UniformParameter {
        /// The parameter given.
        param: String,
    },
    /// `zipf:θ:center`.
    #[error("numio does not implement fio's hot-spot centre (`:{centre}`); use zipf:θ")]
    HotSpotCentre {
        /// The centre given.
        centre: String,
    },
    /// `zipf:abc`.
    #[error("θ `{theta}` is not a number (e.g. zipf:1.2)")]
    ThetaNotANumber {
        /// θ as written.
        theta: String,
    },
    /// `zipf:1`, `zipf:-2`.
    #[error("θ {theta}: zipf needs θ > 0 and θ ≠ 1")]
    ThetaOutOfRange {
        /// θ.
        theta: f64,
    },
    /// `pareto`, `normal`, `zoned`, `zoned_abs`.
    #[error("fio's {name} distribution is not implemented by numio (use random or zipf:θ)")]
    NotImplemented {
        /// fio's name of it.
        name: String,
    },
    /// Anything else.
    #[error("unknown distribution (use random or zipf:θ)")]
    Unknown {
        /// The value given.
        text: String,
    },
}

/// fio's θ when `random_distribution=zipf` gives none (`FIO_DEF_ZIPF`).
pub const FIO_DEFAULT_ZIPF_THETA: f64 = 1.1;

impl Distribution {
    /// Reads fio's `random_distribution` value: `random` (numio also takes
    /// `uniform`), `zipf` (θ = 1.1, fio's default) or `zipf:θ` with θ > 0 and
    /// θ ≠ 1. fio's other forms (`pareto`, `normal`, `zoned`, `zoned_abs`)
    /// and a hot-spot centre (`zipf:θ:center`) are not implemented and are
    /// refused with the reason; the message does not repeat the value.
    pub fn from_fio(text: &str) -> Result<Distribution, DistributionError> {
        let (name, param) = match text.split_once(':') {
            Some((n, p)) => (n, Some(p)),
            None => (text, None),
        };
        match (name, param) {
            ("random" | "uniform", None) => Ok(Distribution::Uniform),
            ("random" | "uniform", Some(p)) => Err(DistributionError::UniformParameter {
                param: p.to_string(),
            }),
            ("zipf", None) => Ok(Distribution::Zipf(FIO_DEFAULT_ZIPF_THETA)),
            ("zipf", Some(p)) => {
                if let Some((_, centre)) = p.split_once(':') {
                    return Err(DistributionError::HotSpotCentre {
                        centre: centre.to_string(),
                    });
                }
                let theta: f64 = p.parse().map_err(|_| DistributionError::ThetaNotANumber {
                    theta: p.to_string(),
                })?;
                if !(theta > 0.0 && theta.is_finite()) || theta == 1.0 {
                    return Err(DistributionError::ThetaOutOfRange { theta });
                }
                Ok(Distribution::Zipf(theta))
            }
            ("pareto" | "normal" | "zoned" | "zoned_abs", _) => {
                Err(DistributionError::NotImplemented {
                    name: name.to_string(),
                })
            }
            _ => Err(DistributionError::Unknown {
                text: text.to_string(),
            }),
        }
    }

    /// Whether fio keeps a random map for it: only for uniform offsets. fio
    /// sets `norandommap` for every other distribution (init.c,
    /// `fixup_options`), and numio does the same.
    pub fn uses_random_map(self) -> bool {
        self == Distribution::Uniform
    }
}

/// Most jobs on one target: fio's cap on `numjobs` (`REAL_MAX_JOBS`). Each
/// job is a thread with its ring, buffers and stats; more only exhausts
/// memory (issue #16: `--jobs 10000` took 8 GB and crashed).
pub const JOBS_PER_TARGET_MAX: u32 = 4096;
/// Most jobs of one run, every target together (fio's cap on the jobs of
/// one job file).
pub const JOBS_TOTAL_MAX: u32 = 4096;
/// Jobs of one run above which the plan warns of their statistics'
/// memory: a few hundred jobs already drive any device numio measures.
pub const JOBS_MEMORY_WARN: usize = 256;
/// About what one job's statistics hold: six latency histograms (slat,
/// clat and lat per direction, 1 ns to 60 s at 3 digits), kept again per
/// interval, and its error counters. Measured (issue 38): `--jobs 4096`
/// took 6.4 GB, 1.6 MB a job, and minutes to tear down a 1 s run.
pub const JOB_STATS_BYTES: u64 = 1_600_000;

/// The warning for a run of `jobs` jobs, when there are more than
/// [`JOBS_MEMORY_WARN`]: what they will hold and how to get the same load
/// with fewer.
pub fn jobs_memory_warning(jobs: usize) -> Option<String> {
    (jobs > JOBS_MEMORY_WARN).then(|| {
        format!(
            "{jobs} jobs: their latency histograms and counters take about {:.1} GB ({:.1} MB a job) and long to tear down; above {JOBS_MEMORY_WARN} jobs, fewer --jobs with a deeper --iodepth give the same load",
            jobs as f64 * JOB_STATS_BYTES as f64 / 1e9,
            JOB_STATS_BYTES as f64 / 1e6
        )
    })
}

/// Largest queue depth per job.
pub const IODEPTH_MAX: u32 = 65_536;

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

    #[test]
    fn fio_distribution_forms() {
        use super::Distribution;
        let ok = |t: &str| Distribution::from_fio(t).unwrap();
        let err = |t: &str| Distribution::from_fio(t).unwrap_err().to_string();
        assert_eq!(ok("random"), Distribution::Uniform);
        assert_eq!(ok("uniform"), Distribution::Uniform);
        assert_eq!(ok("zipf"), Distribution::Zipf(1.1));
        assert_eq!(ok("zipf:1.2"), Distribution::Zipf(1.2));
        assert_eq!(ok("zipf:0.8"), Distribution::Zipf(0.8));
        assert!(err("zipf:1.2:0.3").contains("centre (`:0.3`)"));
        assert!(err("zipf:1").contains("θ ≠ 1"));
        assert!(err("zipf:-2").contains("θ > 0"));
        assert!(err("zipf:abc").contains("`abc` is not a number"));
        assert!(err("zipf:1.2,1.1").contains("not a number"));
        for other in [
            "pareto",
            "pareto:0.3",
            "normal:5",
            "zoned:50/10:50/90",
            "zoned_abs:1/1g",
        ] {
            assert!(err(other).contains("not implemented"), "{other}");
        }
        assert!(err("gauss").contains("unknown"));
        assert!(err("random:1").contains("no parameter"));
        assert_eq!(
            Distribution::from_fio("zipf:1.2:0.3"),
            Err(super::DistributionError::HotSpotCentre {
                centre: "0.3".into()
            })
        );
        assert_eq!(
            Distribution::from_fio("zipf:-2"),
            Err(super::DistributionError::ThetaOutOfRange { theta: -2.0 })
        );
        assert!(Distribution::Uniform.uses_random_map());
        assert!(!Distribution::Zipf(1.2).uses_random_map());
    }
}
