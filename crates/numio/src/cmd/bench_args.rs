//! Values of `numio bench` flags (fio syntax: `4k`, `4k-64k`, `10s`,
//! `zipf:1.2`) and the [`Workload`] they build. Every error names the flag,
//! the value and what would work.

use anyhow::{bail, Context};
use planner::{Distribution, RwMode, Workload};

/// Parses a size with fio's binary suffixes (`512`, `4k`, `1m`, `1g`, `4KiB`).
pub fn parse_size(flag: &str, text: &str) -> anyhow::Result<u64> {
    let t = text.trim();
    if t.starts_with('-') {
        bail!("--{flag}={text}: must not be negative");
    }
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, suffix) = t.split_at(split);
    let shift = match suffix.to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        "t" | "tb" | "tib" => 40,
        _ => bail!("--{flag}={text}: unknown size suffix `{suffix}` (use e.g. 4k, 1m, 1g)"),
    };
    let n: u64 = num
        .parse()
        .with_context(|| format!("--{flag}={text}: not a size (use e.g. 4k, 1m, 1g)"))?;
    n.checked_mul(1u64 << shift)
        .with_context(|| format!("--{flag}={text}: too large"))
}

/// Parses `4k` or a range `4k-64k`.
pub fn parse_bs(text: &str) -> anyhow::Result<(u64, u64)> {
    let (lo, hi) = match text.split_once('-') {
        Some((a, b)) if !a.is_empty() => (parse_size("bs", a)?, parse_size("bs", b)?),
        _ => {
            let n = parse_size("bs", text)?;
            (n, n)
        }
    };
    if lo == 0 || hi < lo {
        bail!("--bs={text}: needs 0 < min ≤ max (e.g. 4k or 4k-64k)");
    }
    Ok((lo, hi))
}

/// Parses a duration; a bare number is seconds (as fio's `runtime`).
pub fn parse_duration_ns(flag: &str, text: &str) -> anyhow::Result<u64> {
    let t = text.trim();
    if t.starts_with('-') {
        bail!("--{flag}={text}: a duration must not be negative (e.g. 10s, 500ms)");
    }
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, suffix) = t.split_at(split);
    let unit: u64 = match suffix {
        "" | "s" => 1_000_000_000,
        "ms" => 1_000_000,
        "us" => 1_000,
        "m" => 60_000_000_000,
        "h" => 3_600_000_000_000,
        _ => bail!("--{flag}={text}: unknown time unit `{suffix}` (use us, ms, s, m or h)"),
    };
    let n: u64 = num
        .parse()
        .with_context(|| format!("--{flag}={text}: not a duration (e.g. 10s, 500ms)"))?;
    n.checked_mul(unit)
        .with_context(|| format!("--{flag}={text}: too long"))
}

/// Parses fio's `rw` names.
pub fn parse_rw(text: &str) -> anyhow::Result<RwMode> {
    RwMode::from_fio_name(text).with_context(|| {
        format!("--rw={text}: unknown mode (use read, write, randread, randwrite, rw, randrw)")
    })
}

/// Parses fio's `random_distribution` (`random`/`uniform`, `zipf`, `zipf:θ`).
pub fn parse_distribution(text: &str) -> anyhow::Result<Distribution> {
    Distribution::from_fio(text)
        .map_err(|why| anyhow::anyhow!("--random-distribution={text}: {why}"))
}

/// Parses a comma-separated percentile list, each in (0, 100].
pub fn parse_percentiles(text: &str) -> anyhow::Result<Vec<f64>> {
    let mut v = Vec::new();
    for p in text.split(',').filter(|p| !p.trim().is_empty()) {
        let x: f64 = p
            .trim()
            .parse()
            .with_context(|| format!("--percentiles: `{p}` is not a number (e.g. 50,99,99.99)"))?;
        if !(x > 0.0 && x <= 100.0) {
            bail!("--percentiles: {x} is outside (0, 100]");
        }
        v.push(x);
    }
    if v.is_empty() {
        bail!("--percentiles: give at least one (e.g. 50,99,99.99)");
    }
    v.sort_by(|a, b| a.total_cmp(b));
    v.dedup();
    Ok(v)
}

/// The workload flags of `numio bench`, as typed.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct WorkloadArgs {
    /// Access pattern: read, write, randread, randwrite, rw (readwrite), randrw.
    #[arg(long, default_value = "randread")]
    pub rw: String,
    /// Percentage of reads in rw/randrw.
    #[arg(long, default_value_t = 50)]
    pub rwmixread: u8,
    /// Block size, or a range (4k, 4k-64k).
    #[arg(long, default_value = "4k")]
    pub bs: String,
    /// I/Os in flight per job.
    #[arg(long, default_value_t = 64, allow_negative_numbers = true)]
    pub iodepth: i64,
    /// Jobs (worker threads) per target (fio numjobs).
    #[arg(long, default_value_t = 1, allow_negative_numbers = true)]
    pub jobs: i64,
    /// Measured time per run (10s, 500ms; bare numbers are seconds).
    #[arg(long, default_value = "10s", allow_hyphen_values = true)]
    pub runtime: String,
    /// Warm-up before measuring (fio ramp_time).
    #[arg(
        long,
        alias = "ramp-time",
        default_value = "0",
        allow_hyphen_values = true
    )]
    pub ramp: String,
    /// Bytes of each target each job covers (default: all of it from --offset).
    #[arg(long, allow_hyphen_values = true)]
    pub size: Option<String>,
    /// Start offset in each target.
    #[arg(long, default_value = "0", allow_hyphen_values = true)]
    pub offset: String,
    /// Stop when --size is covered instead of running for --runtime (fio time_based=0).
    #[arg(long)]
    pub no_time_based: bool,
    /// Stop each job after this many I/Os.
    #[arg(long)]
    pub number_ios: Option<u64>,
    /// Cap on I/Os per second per job.
    #[arg(long)]
    pub rate_iops: Option<u64>,
    /// Offsets: random (uniform), zipf (θ 1.1) or zipf:θ (fio's
    /// random_distribution; pareto, normal and zoned are not implemented).
    #[arg(long, default_value = "uniform")]
    pub random_distribution: String,
    /// Seed of the offset generator.
    #[arg(long)]
    pub randseed: Option<u64>,
    /// Hit every block once per pass before repeating (fio's random map,
    /// uniform offsets only; default is norandommap: offsets may repeat).
    #[arg(long)]
    pub randommap: bool,
    /// Use the page cache instead of O_DIRECT.
    #[arg(long)]
    pub buffered: bool,
}

impl WorkloadArgs {
    /// The workload these flags describe.
    pub fn workload(&self) -> anyhow::Result<Workload> {
        let (bs_min_bytes, bs_max_bytes) = parse_bs(&self.bs)?;
        if self.iodepth < 1 {
            bail!("--iodepth={}: must be at least 1", self.iodepth);
        }
        if self.jobs < 1 {
            bail!("--jobs={}: must be at least 1", self.jobs);
        }
        if self.rwmixread > 100 {
            bail!("--rwmixread={}: must be 0..=100", self.rwmixread);
        }
        let random_distribution = parse_distribution(&self.random_distribution)?;
        if self.randommap && !random_distribution.uses_random_map() {
            bail!(
                "--randommap with --random-distribution={}: a random map only steers uniform offsets (fio also turns it off for non-uniform distributions); drop --randommap",
                self.random_distribution
            );
        }
        let runtime_ns = parse_duration_ns("runtime", &self.runtime)?;
        if runtime_ns == 0 && !self.no_time_based {
            bail!("--runtime={}: must be positive", self.runtime);
        }
        let d = Workload::default();
        Ok(Workload {
            rw: parse_rw(&self.rw)?,
            rwmixread: self.rwmixread,
            bs_min_bytes,
            bs_max_bytes,
            iodepth: u32::try_from(self.iodepth).context("--iodepth: too large")?,
            numjobs: u32::try_from(self.jobs).context("--jobs: too large")?,
            size_bytes: self
                .size
                .as_deref()
                .map(|s| parse_size("size", s))
                .transpose()?,
            offset_bytes: parse_size("offset", &self.offset)?,
            runtime_ns: (runtime_ns > 0).then_some(runtime_ns),
            ramp_time_ns: parse_duration_ns("ramp", &self.ramp)?,
            time_based: !self.no_time_based,
            number_ios: self.number_ios,
            rate_iops: self.rate_iops,
            random_distribution,
            randseed: self.randseed.unwrap_or(d.randseed),
            norandommap: !self.randommap,
            direct: !self.buffered,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_and_ranges() {
        assert_eq!(parse_size("size", "4k").unwrap(), 4096);
        assert_eq!(parse_size("size", "1GiB").unwrap(), 1 << 30);
        assert_eq!(parse_bs("4k-64k").unwrap(), (4096, 65536));
        assert!(parse_bs("0").is_err());
        assert!(parse_size("size", "-1")
            .unwrap_err()
            .to_string()
            .contains("negative"));
        assert!(parse_size("size", "4x")
            .unwrap_err()
            .to_string()
            .contains("suffix"));
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration_ns("runtime", "10").unwrap(), 10_000_000_000);
        assert_eq!(parse_duration_ns("runtime", "500ms").unwrap(), 500_000_000);
        let e = parse_duration_ns("runtime", "-5").unwrap_err().to_string();
        assert!(e.contains("--runtime=-5") && e.contains("negative"), "{e}");
    }

    #[test]
    fn workload_errors_name_the_flag() {
        let mut a = WorkloadArgs {
            rw: "randread".into(),
            bs: "4k".into(),
            iodepth: 0,
            jobs: 1,
            runtime: "1s".into(),
            ramp: "0".into(),
            offset: "0".into(),
            random_distribution: "uniform".into(),
            ..WorkloadArgs::default()
        };
        assert!(a
            .workload()
            .unwrap_err()
            .to_string()
            .contains("--iodepth=0"));
        a.iodepth = 8;
        a.rw = "randomread".into();
        assert!(a
            .workload()
            .unwrap_err()
            .to_string()
            .contains("--rw=randomread"));
        a.rw = "randrw".into();
        a.random_distribution = "zipf:1.2".into();
        let w = a.workload().unwrap();
        assert_eq!(w.random_distribution, Distribution::Zipf(1.2));
        assert_eq!(w.iodepth, 8);
        a.randommap = true;
        let e = a.workload().unwrap_err().to_string();
        assert!(
            e.contains("--randommap with --random-distribution=zipf:1.2"),
            "{e}"
        );
        a.random_distribution = "pareto:0.3".into();
        let e = a.workload().unwrap_err().to_string();
        assert!(
            e.contains("--random-distribution=pareto:0.3") && e.contains("not implemented"),
            "{e}"
        );
    }

    #[test]
    fn percentiles() {
        assert_eq!(
            parse_percentiles("99.99,50,99").unwrap(),
            vec![50.0, 99.0, 99.99]
        );
        assert!(parse_percentiles("101").is_err());
    }
}
