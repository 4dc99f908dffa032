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
//! [`Placing`] is the one placement grammar of `bench`, `plan`, `sweep`
//! and `compare` (`--numa`, `--cpus`, `--cpus-for`): one set of values,
//! one set of refusals.
//!
//! The CLI's clap structs map onto these fields one to one and own no
//! rule of their own.

use crate::fio::units::{parse_size_bytes, parse_size_range, parse_time_ns};
use crate::overrides::WorkloadField;
use crate::workload::{IODEPTH_MAX, JOBS_PER_TARGET_MAX};
use crate::{Distribution, Placement, Policy, RwMode, Workload};
use topology::CpuId;

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
    /// Placement flags that contradict each other (`--cpus-for` with
    /// `--numa`), or one that does not apply (`--numa spread` with a job
    /// file).
    #[error("{given}: {fix}")]
    Placement {
        /// The flags, as given (`--cpus 0-3 with --numa spread`).
        given: String,
        /// What to write instead.
        fix: &'static str,
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

/// The most I/Os numio's engine keeps in flight per job (the engine's
/// `MAX_IODEPTH`), and so the most completions one reap may wait for.
pub const ENGINE_MAX_IODEPTH: u32 = 4096;

/// Parses `--batch-complete N`: at least one completion, at most the
/// deepest queue.
pub fn parse_batch_complete(text: &str) -> Result<usize, FlagError> {
    let most = ENGINE_MAX_IODEPTH as usize;
    match text.trim().parse::<usize>() {
        Ok(n) if (1..=most).contains(&n) => Ok(n),
        _ => Err(value_error(
            "batch-complete",
            text,
            format!(
                "give 1 to {most} completions per reap (more than --iodepth waits for --iodepth)"
            ),
        )),
    }
}

/// The shortest `--interval` of a result's time axis: 100 ms.
pub const MIN_INTERVAL_NS: u64 = 100_000_000;

/// Parses `--interval`, the length of a result's intervals: a duration in
/// fio's units (a bare number is seconds) of at least 100 ms, or `off`
/// (0: no time axis; what `bench/intervals.sh` measures against).
pub fn parse_interval_ns(text: &str) -> Result<u64, FlagError> {
    if text.trim() == "off" {
        return Ok(0);
    }
    let ns = parse_duration_ns("interval", text)?;
    if ns < MIN_INTERVAL_NS {
        return Err(value_error(
            "interval",
            text,
            "intervals are 100ms or longer (e.g. 1s, 500ms), or off",
        ));
    }
    Ok(ns)
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

/// `--numa`: where jobs run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Numa {
    /// CPUs of each target's NUMA node (the default).
    Local,
    /// Job after job on the next NUMA node in turn, ignoring locality.
    Spread,
    /// Each target's jobs and buffers on the node farthest from it.
    Remote,
    /// No pinning.
    None,
    /// fio job files: numio's local placement for the jobs that name no
    /// CPUs (with targets: local).
    Auto,
}

impl Numa {
    /// Its flag value.
    pub fn name(self) -> &'static str {
        match self {
            Numa::Local => "local",
            Numa::Spread => "spread",
            Numa::Remote => "remote",
            Numa::None => "none",
            Numa::Auto => "auto",
        }
    }
}

/// The placement flags as given: `--numa`, `--cpus LIST` (every target's
/// jobs on these CPUs, one job per CPU in order), `--cpus-for TARGET=LIST`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Placing {
    /// `--numa`.
    pub numa: Option<Numa>,
    /// `--cpus`.
    pub cpus: Option<String>,
    /// `--cpus-for`, each `TARGET=LIST`.
    pub cpus_for: Vec<String>,
}

fn placement_error(given: String, fix: &'static str) -> FlagError {
    FlagError::Placement { given, fix }
}

impl Placing {
    /// The policy that places `targets`: explicit CPUs (`--cpus-for`, or
    /// `--cpus` for every target), else `--numa` (local by default; auto
    /// is local for targets). Flags that contradict each other are refused.
    pub fn policy(&self, targets: &[String]) -> Result<Policy, FlagError> {
        if !self.cpus_for.is_empty() {
            if self.cpus.is_some() || self.numa.is_some() {
                let (given, fix) = match (&self.cpus, self.numa) {
                    (Some(c), _) => (
                        format!("--cpus-for with --cpus {c}"),
                        "--cpus-for places targets explicitly: drop --cpus",
                    ),
                    (None, Some(n)) => (
                        format!("--cpus-for with --numa {}", n.name()),
                        "--cpus-for places targets explicitly: drop --numa",
                    ),
                    (None, None) => unreachable!("checked above"),
                };
                return Err(placement_error(given, fix));
            }
            return Ok(Policy::Explicit(parse_cpus_for(&self.cpus_for)?));
        }
        if let Some(list) = &self.cpus {
            if let Some(n) = self.numa {
                return Err(placement_error(
                    format!("--cpus {list} with --numa {}", n.name()),
                    "--cpus places the jobs explicitly: drop --numa",
                ));
            }
            let cpus = parse_cpus("cpus", list)?;
            return Ok(Policy::Explicit(
                targets.iter().map(|t| (t.clone(), cpus.clone())).collect(),
            ));
        }
        Ok(match self.numa.unwrap_or(Numa::Local) {
            Numa::Local | Numa::Auto => Policy::Local,
            Numa::Spread => Policy::Spread,
            Numa::Remote => Policy::Remote,
            Numa::None => Policy::None,
        })
    }

    /// For a fio job file (`what` names it): whether jobs that name no CPUs
    /// get numio's local placement (`--numa auto` or `local`); the job
    /// file places its own jobs, so `--cpus`, `--cpus-for`, `--numa spread`
    /// and `--numa remote` are refused.
    pub fn job_file_auto(&self, what: &str) -> Result<bool, FlagError> {
        if self.cpus.is_some() || !self.cpus_for.is_empty() {
            return Err(placement_error(
                format!("--cpus or --cpus-for with {what}"),
                "a job file places its own jobs (cpus_allowed, numa_cpu_nodes): drop them, or give --numa auto for numio's local placement",
            ));
        }
        match self.numa {
            None | Some(Numa::None) => Ok(false),
            Some(Numa::Auto | Numa::Local) => Ok(true),
            Some(n @ (Numa::Spread | Numa::Remote)) => Err(placement_error(
                format!("--numa {} with {what}", n.name()),
                "use auto or none",
            )),
        }
    }
}

/// Parses a CPU list (`0-3,8`) given to `--flag`.
pub fn parse_cpus(flag: &str, list: &str) -> Result<Vec<CpuId>, FlagError> {
    crate::cpuset::parse_cpu_list(list).map_err(|e| value_error(flag, list, e))
}

/// `--cpus-for TARGET=LIST` values.
pub fn parse_cpus_for(items: &[String]) -> Result<Vec<(String, Vec<CpuId>)>, FlagError> {
    let mut lists = Vec::new();
    for item in items {
        let Some((target, list)) = item.split_once('=') else {
            return Err(value_error(
                "cpus-for",
                item,
                "write TARGET=LIST, e.g. nvme0n1=0-3,112-115",
            ));
        };
        let cpus =
            crate::cpuset::parse_cpu_list(list).map_err(|e| value_error("cpus-for", item, e))?;
        lists.push((target.to_string(), cpus));
    }
    Ok(lists)
}

#[cfg(test)]
mod interval_tests {
    use super::*;

    #[test]
    fn intervals_are_100ms_or_longer() {
        assert_eq!(parse_interval_ns("1s").unwrap(), 1_000_000_000);
        assert_eq!(parse_interval_ns("100ms").unwrap(), MIN_INTERVAL_NS);
        assert_eq!(parse_interval_ns("2").unwrap(), 2_000_000_000);
        assert_eq!(parse_interval_ns("off").unwrap(), 0);
        let e = parse_interval_ns("50ms").unwrap_err().to_string();
        assert!(
            e.contains("--interval=50ms") && e.contains("100ms or longer"),
            "{e}"
        );
        assert!(parse_interval_ns("-1s").is_err());
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

    #[test]
    fn one_placement_grammar() {
        let t = vec!["/dev/a".to_string()];
        let p = |numa, cpus: Option<&str>, cpus_for: &[&str]| Placing {
            numa,
            cpus: cpus.map(String::from),
            cpus_for: cpus_for.iter().map(|s| s.to_string()).collect(),
        };
        assert_eq!(p(None, None, &[]).policy(&t).unwrap(), Policy::Local);
        assert_eq!(
            p(Some(Numa::Auto), None, &[]).policy(&t).unwrap(),
            Policy::Local
        );
        assert_eq!(
            p(None, Some("0-1"), &[]).policy(&t).unwrap(),
            Policy::Explicit(vec![("/dev/a".into(), vec![CpuId(0), CpuId(1)])])
        );
        let e = |p: Placing| p.policy(&t).unwrap_err().to_string();
        assert_eq!(
            e(p(Some(Numa::Spread), Some("0"), &[])),
            "--cpus 0 with --numa spread: --cpus places the jobs explicitly: drop --numa"
        );
        assert!(e(p(None, Some("0"), &["a=1"])).ends_with("drop --cpus"));
        assert!(e(p(None, None, &["a"])).starts_with("--cpus-for=a: write TARGET=LIST"));
        assert!(e(p(None, Some("x"), &[])).starts_with("--cpus=x: "));
        assert!(p(Some(Numa::Auto), None, &[])
            .job_file_auto("JOB.fio")
            .unwrap());
        assert!(!p(None, None, &[]).job_file_auto("JOB.fio").unwrap());
        assert_eq!(
            p(Some(Numa::Spread), None, &[])
                .job_file_auto("the job file a.fio")
                .unwrap_err()
                .to_string(),
            "--numa spread with the job file a.fio: use auto or none"
        );
        assert!(p(None, Some("0"), &[]).job_file_auto("x").is_err());
        assert_eq!(
            p(Some(Numa::Remote), None, &[]).policy(&t).unwrap(),
            Policy::Remote
        );
        assert_eq!(
            p(Some(Numa::Remote), None, &[])
                .job_file_auto("the job file a.fio")
                .unwrap_err()
                .to_string(),
            "--numa remote with the job file a.fio: use auto or none"
        );
    }
}
