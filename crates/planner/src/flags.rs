//! The workload as a command line gives it: [`WorkloadFlags`] holds the
//! values of numio's workload flags as typed (fio's names and units, each
//! `None` where the flag was not given), and turns them into a
//! [`Workload`] (defaults for the rest), into the [`WorkloadField`]s they
//! set, or applies them over a plan or job file (fio's rule: the command
//! line wins). The parsers of single values ([`parse_size`],
//! [`parse_bs`], [`parse_duration_ns`], [`parse_percentiles`]) are the
//! ones every flag of a size, a time or a percentile list uses; each
//! error names the flag and the value ([`FlagError`]).
//!
//! The CLI's clap structs map onto these fields one to one and own no
//! rule of their own.

use crate::fio::units::{parse_size_bytes, parse_size_range, parse_time_ns};
use crate::overrides::WorkloadField;
use crate::workload::{IODEPTH_MAX, JOBS_PER_TARGET_MAX};
use crate::{Distribution, Placement, RwMode, Workload};

/// Why a workload flag's value was refused; the text names the flag, the
/// value and what to write.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum FlagError {
    /// A value the flag does not take.
    #[error("--{flag}={value}: {reason}")]
    Value {
        /// The flag, without its dashes (`iodepth`).
        flag: String,
        /// The value as given.
        value: String,
        /// Why, and what it takes.
        reason: String,
    },
    /// `--percentiles` names something that is not a number.
    #[error("--percentiles: `{item}` is not a number (e.g. 50,99,99.99)")]
    PercentileNotANumber {
        /// The list's item.
        item: String,
    },
    /// `--percentiles` names one outside (0, 100].
    #[error("--percentiles: {value} is outside (0, 100]")]
    PercentileOutOfRange {
        /// The percentile.
        value: f64,
    },
    /// `--percentiles` names none.
    #[error("--percentiles: give at least one (e.g. 50,99,99.99)")]
    NoPercentiles,
    /// `--randommap` with offsets that are not uniform.
    #[error("--randommap with --random-distribution={distribution}: a random map only steers uniform offsets (fio also turns it off for non-uniform distributions); drop --randommap")]
    RandommapNotUniform {
        /// The distribution as given.
        distribution: String,
    },
    /// `--numjobs` over a plan or a job file, whose jobs have their CPUs.
    #[error("--numjobs={numjobs} with {from}: its jobs and their CPUs are placed already; set numjobs there, or plan anew (numio plan TARGET --numjobs {numjobs} --format numio)")]
    NumjobsOverPlan {
        /// The jobs asked for.
        numjobs: i64,
        /// The plan or job file, in words.
        from: String,
    },
}

fn value_error(flag: &str, value: impl ToString, reason: impl ToString) -> FlagError {
    FlagError::Value {
        flag: flag.to_string(),
        value: value.to_string(),
        reason: reason.to_string(),
    }
}

/// Parses a size in fio's units (`512`, `4k`, `1.5k`, `1m`, `4KiB`) given
/// to `--flag`.
pub fn parse_size(flag: &str, text: &str) -> Result<u64, FlagError> {
    if text.trim().starts_with('-') {
        return Err(value_error(flag, text, "must not be negative"));
    }
    parse_size_bytes(text).map_err(|e| value_error(flag, text, e.reason))
}

/// Parses `--bs`: `4k` or a range `4k-64k`.
pub fn parse_bs(text: &str) -> Result<(u64, u64), FlagError> {
    if text.trim().starts_with('-') {
        return Err(value_error("bs", text, "must not be negative"));
    }
    parse_size_range(text).map_err(|e| value_error("bs", text, e.reason))
}

/// Parses a duration in fio's units given to `--flag`; a bare number is
/// seconds (as fio's `runtime`).
pub fn parse_duration_ns(flag: &str, text: &str) -> Result<u64, FlagError> {
    if text.trim().starts_with('-') {
        return Err(value_error(
            flag,
            text,
            "a duration must not be negative (e.g. 10s, 500ms)",
        ));
    }
    parse_time_ns(text, 1_000_000_000).map_err(|e| value_error(flag, text, e.reason))
}

/// Parses fio's `random_distribution` (`random`/`uniform`, `zipf`, `zipf:θ`).
pub fn parse_distribution(text: &str) -> Result<Distribution, FlagError> {
    Distribution::from_fio(text).map_err(|why| value_error("random-distribution", text, why))
}

/// Parses a comma-separated percentile list, each in (0, 100]; sorted,
/// without repeats.
pub fn parse_percentiles(text: &str) -> Result<Vec<f64>, FlagError> {
    let mut v = Vec::new();
    for p in text.split(',').filter(|p| !p.trim().is_empty()) {
        let x: f64 = p
            .trim()
            .parse()
            .map_err(|_| FlagError::PercentileNotANumber {
                item: p.to_string(),
            })?;
        if !(x > 0.0 && x <= 100.0) {
            return Err(FlagError::PercentileOutOfRange { value: x });
        }
        v.push(x);
    }
    if v.is_empty() {
        return Err(FlagError::NoPercentiles);
    }
    v.sort_by(|a, b| a.total_cmp(b));
    v.dedup();
    Ok(v)
}

/// The workload flags as given (`None` or `false`: not given).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct WorkloadFlags {
    /// `--rw`.
    pub rw: Option<RwMode>,
    /// `--rwmixread`.
    pub rwmixread: Option<u8>,
    /// `--bs`, a size or a range.
    pub bs: Option<String>,
    /// `--iodepth` (signed, so a negative one is named, not a parse error).
    pub iodepth: Option<i64>,
    /// `--numjobs`.
    pub numjobs: Option<i64>,
    /// `--runtime`.
    pub runtime: Option<String>,
    /// `--ramp-time`.
    pub ramp_time: Option<String>,
    /// `--size`.
    pub size: Option<String>,
    /// `--offset`.
    pub offset: Option<String>,
    /// `--no-time-based`.
    pub no_time_based: bool,
    /// `--number-ios`.
    pub number_ios: Option<u64>,
    /// `--rate-iops`.
    pub rate_iops: Option<u64>,
    /// `--random-distribution`.
    pub random_distribution: Option<String>,
    /// `--zipf θ` (the older spelling of `--random-distribution zipf:θ`).
    pub zipf: Option<f64>,
    /// `--randseed`.
    pub randseed: Option<u64>,
    /// `--randommap`.
    pub randommap: bool,
    /// `--buffered` (or fio's `--direct=0`).
    pub buffered: bool,
}

impl WorkloadFlags {
    /// The distribution the flags name, and its text.
    fn distribution(&self) -> Result<(Distribution, String), FlagError> {
        match self.zipf {
            Some(theta) => {
                let text = format!("zipf:{theta}");
                let d =
                    Distribution::from_fio(&text).map_err(|why| value_error("zipf", theta, why))?;
                Ok((d, text))
            }
            None => {
                let text = self.random_distribution.as_deref().unwrap_or("random");
                Ok((parse_distribution(text)?, text.to_string()))
            }
        }
    }

    /// The workload these flags describe (defaults for those not given:
    /// randread, 4k, QD 64, one job, 10 s).
    pub fn workload(&self) -> Result<Workload, FlagError> {
        let (bs_min_bytes, bs_max_bytes) = parse_bs(self.bs.as_deref().unwrap_or("4k"))?;
        let iodepth = self.iodepth.unwrap_or(64);
        if iodepth < 1 || iodepth > i64::from(IODEPTH_MAX) {
            let why = format!("must be at least 1 and at most {IODEPTH_MAX}");
            return Err(value_error("iodepth", iodepth, why));
        }
        let numjobs = self.numjobs.unwrap_or(1);
        if numjobs < 1 || numjobs > i64::from(JOBS_PER_TARGET_MAX) {
            let why = format!(
                "must be at least 1 and at most {JOBS_PER_TARGET_MAX} jobs per target (fio's limit too)"
            );
            return Err(value_error("numjobs", numjobs, why));
        }
        let rwmixread = self.rwmixread.unwrap_or(50);
        if rwmixread > 100 {
            return Err(value_error("rwmixread", rwmixread, "must be 0..=100"));
        }
        let (random_distribution, distribution) = self.distribution()?;
        if self.randommap && !random_distribution.uses_random_map() {
            return Err(FlagError::RandommapNotUniform { distribution });
        }
        let runtime = self.runtime.as_deref().unwrap_or("10s");
        let runtime_ns = parse_duration_ns("runtime", runtime)?;
        if runtime_ns == 0 && !self.no_time_based {
            return Err(value_error("runtime", runtime, "must be positive"));
        }
        let d = Workload::default();
        Ok(Workload {
            rw: self.rw.unwrap_or(RwMode::RandRead),
            rwmixread,
            bs_min_bytes,
            bs_max_bytes,
            // Both within u32 by the checks above.
            iodepth: iodepth as u32,
            numjobs: numjobs as u32,
            size_bytes: self
                .size
                .as_deref()
                .map(|s| parse_size("size", s))
                .transpose()?,
            offset_bytes: parse_size("offset", self.offset.as_deref().unwrap_or("0"))?,
            runtime_ns: (runtime_ns > 0).then_some(runtime_ns),
            ramp_time_ns: parse_duration_ns("ramp-time", self.ramp_time.as_deref().unwrap_or("0"))?,
            time_based: !self.no_time_based,
            number_ios: self.number_ios,
            rate_iops: self.rate_iops,
            random_distribution,
            randseed: self.randseed.unwrap_or(d.randseed),
            norandommap: !self.randommap,
            direct: !self.buffered,
        })
    }

    /// The workload fields the flags given set.
    pub fn given_fields(&self) -> Vec<WorkloadField> {
        use WorkloadField as F;
        [
            (F::Rw, self.rw.is_some()),
            (F::Rwmixread, self.rwmixread.is_some()),
            (F::Bs, self.bs.is_some()),
            (F::Iodepth, self.iodepth.is_some()),
            (F::Numjobs, self.numjobs.is_some()),
            (F::Runtime, self.runtime.is_some()),
            (F::RampTime, self.ramp_time.is_some()),
            (F::Size, self.size.is_some()),
            (F::Offset, self.offset.is_some()),
            (F::NoTimeBased, self.no_time_based),
            (F::NumberIos, self.number_ios.is_some()),
            (F::RateIops, self.rate_iops.is_some()),
            (
                F::RandomDistribution,
                self.random_distribution.is_some() || self.zipf.is_some(),
            ),
            (F::Randseed, self.randseed.is_some()),
            (F::Randommap, self.randommap),
            (F::Buffered, self.buffered),
        ]
        .into_iter()
        .filter_map(|(f, given)| given.then_some(f))
        .collect()
    }

    /// The workload flags given, by their flag names.
    pub fn given(&self) -> Vec<&'static str> {
        self.given_fields().iter().map(|f| f.name()).collect()
    }

    /// Applies the flags given over every job of a plan or a job file
    /// (`from` names it; fio's rule: the command line wins), with a note on
    /// each target saying which values came from where; the notes added,
    /// with their target's path. `--numjobs` is refused: it would need new
    /// CPUs for the new jobs, which the plan or job file chose.
    pub fn apply_over(
        &self,
        placement: &mut Placement,
        from: &str,
    ) -> Result<Vec<(String, String)>, FlagError> {
        if let Some(numjobs) = self.numjobs {
            return Err(FlagError::NumjobsOverPlan {
                numjobs,
                from: from.to_string(),
            });
        }
        let given = self.given_fields();
        if given.is_empty() {
            return Ok(Vec::new());
        }
        Ok(placement.take_workload(&self.workload()?, &given, from))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_name_the_flag_and_value() {
        assert_eq!(
            parse_size("target-bw", "-1").unwrap_err().to_string(),
            "--target-bw=-1: must not be negative"
        );
        assert_eq!(parse_bs("4k-64k").unwrap(), (4096, 65536));
        assert_eq!(parse_duration_ns("runtime", "2").unwrap(), 2_000_000_000);
        assert_eq!(parse_percentiles("99.9,50,50").unwrap(), vec![50.0, 99.9]);
        assert_eq!(
            parse_percentiles("x").unwrap_err().to_string(),
            "--percentiles: `x` is not a number (e.g. 50,99,99.99)"
        );
        let f = WorkloadFlags {
            iodepth: Some(0),
            ..WorkloadFlags::default()
        };
        assert_eq!(
            f.workload().unwrap_err().to_string(),
            format!("--iodepth=0: must be at least 1 and at most {IODEPTH_MAX}")
        );
    }

    #[test]
    fn numjobs_is_refused_over_a_plan_and_nothing_given_changes_nothing() {
        let mut p = Placement::default();
        let f = WorkloadFlags {
            numjobs: Some(2),
            ..WorkloadFlags::default()
        };
        let e = f.apply_over(&mut p, "the plan p.json").unwrap_err();
        assert!(
            e.to_string()
                .starts_with("--numjobs=2 with the plan p.json:"),
            "{e}"
        );
        assert!(WorkloadFlags::default()
            .apply_over(&mut p, "x")
            .unwrap()
            .is_empty());
        assert_eq!(
            WorkloadFlags::default().workload().unwrap(),
            Workload::default()
        );
    }
}
