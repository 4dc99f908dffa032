//! The pieces of fio's JSON: a latency summary (`slat_ns`, `clat_ns`,
//! `lat_ns`), a direction (`read`, `write`, `trim`), the latency buckets
//! (`latency_ns`, `latency_us`, `latency_ms`) from numio's histogram, and
//! fio's `time` string.

use serde::Serialize;

/// A JSON object whose keys keep their order (fio's order, not sorted).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Ordered<V>(pub Vec<(String, V)>);

impl<V: Serialize> Serialize for Ordered<V> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}

/// fio's latency summary: `min`, `max`, `mean`, `stddev`, `N`, and for
/// completion latency the `percentile` map (`"99.000000": ns`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Lat {
    /// Least, ns.
    pub min: u64,
    /// Most, ns.
    pub max: u64,
    /// Mean, ns.
    pub mean: f64,
    /// Standard deviation, ns.
    pub stddev: f64,
    /// Samples.
    #[serde(rename = "N")]
    pub n: u64,
    /// Percentiles (completion latency only, where measured).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub percentile: Option<Ordered<u64>>,
}

impl Lat {
    /// numio's summary as fio writes it; `percentiles` adds the map (fio
    /// writes it for `clat_ns` of a direction with I/O).
    pub fn of(s: &results::LatencySummary, percentiles: bool) -> Lat {
        let map = (percentiles && s.samples > 0 && !s.percentiles.is_empty()).then(|| {
            Ordered(
                s.percentiles
                    .iter()
                    .map(|p| (format!("{:.6}", p.percentile), p.latency_ns))
                    .collect(),
            )
        });
        Lat {
            min: s.min_ns,
            max: s.max_ns,
            mean: finite(s.mean_ns),
            stddev: finite(s.stdev_ns),
            n: s.samples,
            percentile: map,
        }
    }
}

fn finite(v: f64) -> f64 {
    if v.is_finite() {
        v
    } else {
        0.0
    }
}

/// One direction of a job (`read`, `write`, `trim`) with fio's keys.
/// numio takes no per-interval bandwidth or IOPS samples: the `bw_*` and
/// `iops_*` sample statistics are fio's values for no samples (0,
/// `*_samples` 0), except `bw_agg`, which is 100.0 where there was I/O
/// (one job's share of its group: all of it).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[allow(missing_docs)]
pub struct Direction {
    pub io_bytes: u64,
    pub io_kbytes: u64,
    pub bw_bytes: u64,
    pub bw: u64,
    pub iops: f64,
    pub runtime: u64,
    pub total_ios: u64,
    pub short_ios: u64,
    pub drop_ios: u64,
    pub slat_ns: Lat,
    pub clat_ns: Lat,
    pub lat_ns: Lat,
    pub bw_min: u64,
    pub bw_max: u64,
    pub bw_agg: f64,
    pub bw_mean: f64,
    pub bw_dev: f64,
    pub bw_samples: u64,
    pub iops_min: u64,
    pub iops_max: u64,
    pub iops_mean: f64,
    pub iops_stddev: f64,
    pub iops_samples: u64,
}

impl Direction {
    /// numio's statistics of one direction over `runtime_ns`.
    pub fn of(s: &results::IoStats, runtime_ns: u64) -> Direction {
        let active = s.ops > 0;
        Direction {
            io_bytes: s.bytes,
            io_kbytes: s.bytes / 1024,
            bw_bytes: finite(s.bandwidth_bytes_per_s).round() as u64,
            bw: (finite(s.bandwidth_bytes_per_s) / 1024.0).round() as u64,
            iops: finite(s.iops),
            runtime: if active { runtime_ns / 1_000_000 } else { 0 },
            total_ios: s.ops,
            short_ios: 0,
            drop_ios: 0,
            slat_ns: Lat::of(&s.latency.slat, false),
            clat_ns: Lat::of(&s.latency.clat, true),
            lat_ns: Lat::of(&s.latency.lat, false),
            bw_min: 0,
            bw_max: 0,
            bw_agg: if active { 100.0 } else { 0.0 },
            bw_mean: 0.0,
            bw_dev: 0.0,
            bw_samples: 0,
            iops_min: 0,
            iops_max: 0,
            iops_mean: 0.0,
            iops_stddev: 0.0,
            iops_samples: 0,
        }
    }

    /// fio's `trim` of a job without trims.
    pub fn none() -> Direction {
        Direction::of(&results::IoStats::default(), 0)
    }
}

/// fio's `sync` object (numio issues no fsync: zeros).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Sync {
    /// fsyncs issued.
    pub total_ios: u64,
    /// Their latency.
    pub lat_ns: Lat,
}

impl Sync {
    /// No syncs.
    pub fn none() -> Sync {
        Sync {
            total_ios: 0,
            lat_ns: Lat::of(&results::LatencySummary::default(), false),
        }
    }
}

/// Upper bounds of fio's latency buckets, per unit.
const NS_US: [&str; 10] = [
    "2", "4", "10", "20", "50", "100", "250", "500", "750", "1000",
];
const MS: [&str; 12] = [
    "2", "4", "10", "20", "50", "100", "250", "500", "750", "1000", "2000", ">=2000",
];

/// fio's `latency_ns`, `latency_us`, `latency_ms`: the percentage of I/Os
/// whose total latency falls in each bucket (below the bound, at or above
/// the previous one), from numio's latency histogram; all 0.0 where there
/// is none.
pub fn latency_buckets(h: Option<&hdrhistogram::Histogram<u64>>) -> [Ordered<f64>; 3] {
    let total = h.map_or(0, |h| h.len());
    let share = |from: u64, to: u64| -> f64 {
        let Some(h) = h.filter(|_| total > 0) else {
            return 0.0;
        };
        let below = |v: u64| if v == 0 { 0 } else { h.count_between(0, v - 1) };
        let n = below(to.min(h.max() + 1)) - below(from.min(h.max() + 1));
        n as f64 * 100.0 / total as f64
    };
    let mut out: [Ordered<f64>; 3] = Default::default();
    // ns buckets from 0, µs buckets from 1 µs (where the ns ones end).
    for (unit, scale, start) in [(0usize, 1u64, 0u64), (1, 1_000, 1_000)] {
        let mut from = start;
        for key in NS_US {
            let to = key.parse::<u64>().unwrap_or(0) * scale;
            out[unit].0.push((key.to_string(), share(from, to)));
            from = to;
        }
    }
    let mut from = 1_000_000;
    for key in MS {
        let to = key.parse::<u64>().map_or(u64::MAX, |v| v * 1_000_000);
        out[2].0.push((key.to_string(), share(from, to)));
        from = to;
    }
    out
}

/// numio's latency histograms (HdrHistogram V2 + deflate, hex, as the
/// engine saves them) merged; `None` where one is missing or malformed.
pub fn merged_histogram(hexes: &[&str]) -> Option<hdrhistogram::Histogram<u64>> {
    let mut merged: Option<hdrhistogram::Histogram<u64>> = None;
    for hex in hexes {
        if hex.is_empty() {
            return None;
        }
        let h = results::histogram::decode_histogram(hex)?;
        match &mut merged {
            Some(m) => m.add(&h).ok()?,
            None => merged = Some(h),
        }
    }
    merged
}

/// fio's `time`: `Wed Nov 25 04:21:37 2026` (UTC here; fio writes local
/// time).
pub fn ctime(unix_s: u64) -> String {
    const DAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let days = unix_s / 86_400;
    let secs = unix_s % 86_400;
    // Civil from days (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{} {} {:2} {:02}:{:02}:{:02} {year}",
        DAYS[(days % 7) as usize],
        MONTHS[(month - 1) as usize],
        day,
        secs / 3600,
        secs / 60 % 60,
        secs % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ctime_writes_fio_s_time_format() {
        // fio-3.33-null-randread.json: 1795580497 → "Wed Nov 25 04:21:37 2026" (UTC machine).
        assert_eq!(ctime(1_795_580_497), "Wed Nov 25 04:21:37 2026");
        assert_eq!(ctime(0), "Thu Jan  1 00:00:00 1970");
    }

    #[test]
    fn latency_buckets_share_out_every_io() {
        let mut h = hdrhistogram::Histogram::<u64>::new(3).unwrap();
        h.record(15).unwrap(); // ns bucket "20"
        h.record(80_000).unwrap(); // us bucket "100"
        h.record(3_000_000).unwrap(); // ms bucket "4"
        h.record(5_000_000_000).unwrap(); // ms bucket ">=2000"
        let [ns, us, ms] = latency_buckets(Some(&h));
        let get = |m: &Ordered<f64>, k: &str| m.0.iter().find(|(key, _)| key == k).unwrap().1;
        assert_eq!(get(&ns, "20"), 25.0);
        assert_eq!(get(&us, "100"), 25.0);
        assert_eq!(get(&ms, "4"), 25.0);
        assert_eq!(get(&ms, ">=2000"), 25.0);
        let sum: f64 = [ns, us, ms]
            .iter()
            .flat_map(|m| m.0.iter().map(|(_, v)| v))
            .sum();
        assert!((sum - 100.0).abs() < 1e-9, "{sum}");
    }
}
