//! The run's time axis: per-interval results, the I/O done outside the
//! measured time (set-up trials, ramp), and the intervals' anomaly flags.
//!
//! Each worker cuts its measured time into intervals on a grid from the
//! start of its measured time (`--interval`, default 1 s): interval `k`
//! holds what completed from the first loop pass after `k × interval` to
//! the first after `(k + 1) × interval`. A target's interval `k` is the
//! exact merge of its workers' (counts added, histograms merged), the run's
//! the merge of its targets': percentiles are computed from merged
//! histograms, never averaged. Every interval keeps its serialized
//! histograms, so hosts' intervals merge exactly too.

use std::collections::BTreeSet;

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

use crate::histogram::{decode_histogram, encode_histogram, new_histogram, summarize};
use crate::{CpuUsage, DirHistogramsHex, IoStats, Latencies, RawHistograms};

/// The default interval length: one second.
pub const DEFAULT_INTERVAL_NS: u64 = 1_000_000_000;

/// What completed in one interval of a target (or of the whole run).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct IntervalResult {
    /// Index on the interval grid: the interval starts at `index × interval`
    /// of measured time.
    pub index: u64,
    /// Start, nanoseconds since the measured time began.
    pub start_ns: u64,
    /// End (the latest worker's cut), nanoseconds since the measured time
    /// began; rates are over `end_ns - start_ns`.
    pub end_ns: u64,
    /// Reads.
    pub read: IoStats,
    /// Writes.
    pub write: IoStats,
    /// Both.
    pub total: IoStats,
    /// Failed I/Os.
    pub errors: u64,
    /// The workers' CPU usage over the interval.
    pub cpu_usage: CpuUsage,
    /// Interrupts of the target's controllers (the run's: all NVMe
    /// interrupts) in the interval, where `/proc/interrupts` was read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interrupts: Option<u64>,
    /// Serialized histograms, for exact merges later (hosts, repeats).
    pub histograms: RawHistograms,
    /// Anomalies seen in this interval ([`flag_anomalies`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub flags: Vec<IntervalFlag>,
}

impl IntervalResult {
    /// Length in nanoseconds.
    pub fn len_ns(&self) -> u64 {
        self.end_ns.saturating_sub(self.start_ns)
    }
}

/// I/O done outside the measured time, counted apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct PhaseIo {
    /// Reads completed.
    pub reads: u64,
    /// Writes completed.
    pub writes: u64,
    /// Bytes moved.
    pub bytes: u64,
    /// Failed I/Os.
    pub errors: u64,
    /// How long the phase took, in nanoseconds.
    pub time_ns: u64,
}

impl PhaseIo {
    /// Adds another worker's phase.
    pub fn add(&mut self, other: &PhaseIo) {
        self.reads += other.reads;
        self.writes += other.writes;
        self.bytes += other.bytes;
        self.errors += other.errors;
        self.time_ns = self.time_ns.max(other.time_ns);
    }
    /// Whether nothing was issued.
    pub fn is_empty(&self) -> bool {
        self.reads + self.writes + self.errors == 0
    }
    /// The sum over `phases`, `None` where every one is empty.
    pub fn sum<'a>(phases: impl IntoIterator<Item = &'a PhaseIo>) -> Option<PhaseIo> {
        let mut all = PhaseIo::default();
        for p in phases {
            all.add(p);
        }
        (!all.is_empty()).then_some(all)
    }
}

/// What is unusual about an interval.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AnomalyKind {
    /// IOPS fell below the set share of the rolling median (a garbage
    /// collection cliff, an exhausted SLC cache, a throttle).
    IopsDrop,
    /// p99.9 total latency rose above the set multiple of its rolling
    /// median.
    LatencyJump,
}

/// One anomaly of one interval.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IntervalFlag {
    /// What.
    pub kind: AnomalyKind,
    /// The interval's value (IOPS, or p99.9 in nanoseconds).
    pub value: f64,
    /// The rolling median it was compared with.
    pub median: f64,
}

impl IntervalFlag {
    /// One line: `IOPS 12.3 k, 28 % of the rolling median 44.1 k`.
    pub fn describe(&self) -> String {
        let share = if self.median > 0.0 {
            self.value * 100.0 / self.median
        } else {
            0.0
        };
        match self.kind {
            AnomalyKind::IopsDrop => format!(
                "IOPS {:.0}, {share:.0} % of the rolling median {:.0}",
                self.value, self.median
            ),
            AnomalyKind::LatencyJump => format!(
                "p99.9 {:.0} us, {:.1}x the rolling median {:.0} us",
                self.value / 1e3,
                share / 100.0,
                self.median / 1e3
            ),
        }
    }
}

/// When an interval is flagged.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct AnomalyRule {
    /// An interval whose IOPS is below this share (0..1) of the rolling
    /// median is an IOPS drop.
    pub iops_drop_below: f64,
    /// An interval whose p99.9 is above this multiple of the rolling
    /// median is a latency jump.
    pub latency_jump_above: f64,
    /// The rolling median covers this many intervals before the one judged.
    pub window: usize,
    /// Intervals judged need at least this many before them.
    pub min_history: usize,
}

impl Default for AnomalyRule {
    fn default() -> Self {
        AnomalyRule {
            iops_drop_below: 0.5,
            latency_jump_above: 3.0,
            window: 10,
            min_history: 3,
        }
    }
}

/// Flags every interval of `intervals` that `rule` calls anomalous,
/// replacing the flags it had. The rolling median is over the `window`
/// intervals before, full-length ones only; a flagged interval stays out
/// of later medians (a cliff of several seconds is flagged all along, not
/// only at its first second). An interval shorter than half the grid
/// (the last, cut short) is not judged.
pub fn flag_anomalies(intervals: &mut [IntervalResult], interval_ns: u64, rule: &AnomalyRule) {
    let mut iops_hist: Vec<f64> = Vec::new();
    let mut lat_hist: Vec<f64> = Vec::new();
    for iv in intervals.iter_mut() {
        iv.flags.clear();
        if iv.len_ns() * 2 < interval_ns {
            continue;
        }
        let iops = iv.total.iops;
        let p999 = iv.total.latency.lat.at(99.9).map_or(0.0, |v| v as f64);
        let mut flagged = false;
        if iops_hist.len() >= rule.min_history {
            let m = median(&iops_hist[iops_hist.len().saturating_sub(rule.window)..]);
            if iops < m * rule.iops_drop_below {
                iv.flags.push(IntervalFlag {
                    kind: AnomalyKind::IopsDrop,
                    value: iops,
                    median: m,
                });
                flagged = true;
            }
        }
        if lat_hist.len() >= rule.min_history && iv.total.ops > 0 {
            let m = median(&lat_hist[lat_hist.len().saturating_sub(rule.window)..]);
            if m > 0.0 && p999 > m * rule.latency_jump_above {
                iv.flags.push(IntervalFlag {
                    kind: AnomalyKind::LatencyJump,
                    value: p999,
                    median: m,
                });
                flagged = true;
            }
        }
        if !flagged {
            iops_hist.push(iops);
            if iv.total.ops > 0 {
                lat_hist.push(p999);
            }
        }
    }
}

fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    match s.len() {
        0 => 0.0,
        n if n % 2 == 1 => s[n / 2],
        n => (s[n / 2 - 1] + s[n / 2]) / 2.0,
    }
}

/// The anomalies of `intervals`, as `(start_ns, flag)`, in time order.
pub fn anomalies(intervals: &[IntervalResult]) -> Vec<(u64, &IntervalFlag)> {
    intervals
        .iter()
        .flat_map(|iv| iv.flags.iter().map(move |f| (iv.start_ns, f)))
        .collect()
}

/// Merges several sets of intervals on one grid (a target's workers, a
/// run's targets, a fleet's hosts) into one: interval `k` of the result
/// is the exact merge of every set's interval `k` (counts and CPU added,
/// interrupts added where every set has them, histograms merged from
/// their serialized form and summarized at `percentiles`), from the
/// earliest start to the latest end. Each set must be in index order.
/// Flags are not carried over: judge the merged intervals again.
pub fn merge(sets: &[&[IntervalResult]], percentiles: &[f64]) -> Vec<IntervalResult> {
    let indexes: BTreeSet<u64> = sets
        .iter()
        .flat_map(|s| s.iter().map(|i| i.index))
        .collect();
    indexes
        .into_iter()
        .map(|k| {
            let parts: Vec<&IntervalResult> = sets
                .iter()
                .filter_map(|s| s.binary_search_by_key(&k, |i| i.index).ok().map(|p| &s[p]))
                .collect();
            merge_one(k, &parts, percentiles)
        })
        .collect()
}

/// One direction's three histograms, decoded.
struct DirHists {
    slat: Histogram<u64>,
    clat: Histogram<u64>,
    lat: Histogram<u64>,
}

impl DirHists {
    fn new() -> DirHists {
        DirHists {
            slat: new_histogram(),
            clat: new_histogram(),
            lat: new_histogram(),
        }
    }
    /// Adds a serialized set; one that does not decode adds nothing (it
    /// came from a file: the counts still add up, the percentiles miss it).
    fn add_hex(&mut self, h: &DirHistogramsHex) {
        for (into, hex) in [
            (&mut self.slat, &h.slat_hex),
            (&mut self.clat, &h.clat_hex),
            (&mut self.lat, &h.lat_hex),
        ] {
            if let Some(d) = decode_histogram(hex) {
                let _ = into.add(&d);
            }
        }
    }
    fn add(&mut self, o: &DirHists) {
        let _ = self.slat.add(&o.slat);
        let _ = self.clat.add(&o.clat);
        let _ = self.lat.add(&o.lat);
    }
    fn latencies(&self, percentiles: &[f64]) -> Latencies {
        Latencies {
            slat: summarize(&self.slat, percentiles),
            clat: summarize(&self.clat, percentiles),
            lat: summarize(&self.lat, percentiles),
        }
    }
    fn hex(&self) -> DirHistogramsHex {
        DirHistogramsHex {
            slat_hex: encode_histogram(&self.slat),
            clat_hex: encode_histogram(&self.clat),
            lat_hex: encode_histogram(&self.lat),
        }
    }
}

fn merge_one(index: u64, parts: &[&IntervalResult], percentiles: &[f64]) -> IntervalResult {
    let mut out = IntervalResult {
        index,
        start_ns: parts.iter().map(|p| p.start_ns).min().unwrap_or(0),
        end_ns: parts.iter().map(|p| p.end_ns).max().unwrap_or(0),
        interrupts: parts.iter().map(|p| p.interrupts).sum(),
        ..IntervalResult::default()
    };
    let mut dirs = [DirHists::new(), DirHists::new()];
    let mut ops = [0u64; 2];
    let mut bytes = [0u64; 2];
    for p in parts {
        out.errors += p.errors;
        out.cpu_usage.add(&p.cpu_usage);
        for (d, (io, hex)) in [
            (&p.read, &p.histograms.read),
            (&p.write, &p.histograms.write),
        ]
        .into_iter()
        .enumerate()
        {
            ops[d] += io.ops;
            bytes[d] += io.bytes;
            if let Some(h) = hex {
                dirs[d].add_hex(h);
            }
        }
    }
    let secs = out.len_ns() as f64 / 1e9;
    let stats = |ops: u64, bytes: u64, latency: Latencies| IoStats {
        ops,
        bytes,
        iops: if secs > 0.0 { ops as f64 / secs } else { 0.0 },
        bandwidth_bytes_per_s: if secs > 0.0 { bytes as f64 / secs } else { 0.0 },
        latency,
    };
    out.read = stats(ops[0], bytes[0], dirs[0].latencies(percentiles));
    out.write = stats(ops[1], bytes[1], dirs[1].latencies(percentiles));
    let mut all = DirHists::new();
    all.add(&dirs[0]);
    all.add(&dirs[1]);
    out.total = stats(
        ops[0] + ops[1],
        bytes[0] + bytes[1],
        all.latencies(percentiles),
    );
    let [r, w] = dirs;
    out.histograms = RawHistograms {
        clat_hex: encode_histogram(&all.clat),
        lat_hex: encode_histogram(&all.lat),
        read: (ops[0] > 0).then(|| r.hex()),
        write: (ops[1] > 0).then(|| w.hex()),
    };
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Latencies, LatencySummary, Percentile};

    fn iv(k: u64, iops: f64, p999_ns: u64) -> IntervalResult {
        let lat = LatencySummary {
            samples: iops as u64,
            percentiles: vec![Percentile {
                percentile: 99.9,
                latency_ns: p999_ns,
            }],
            ..LatencySummary::default()
        };
        IntervalResult {
            index: k,
            start_ns: k * DEFAULT_INTERVAL_NS,
            end_ns: (k + 1) * DEFAULT_INTERVAL_NS,
            total: IoStats {
                ops: iops as u64,
                iops,
                latency: Latencies {
                    lat,
                    ..Latencies::default()
                },
                ..IoStats::default()
            },
            ..IntervalResult::default()
        }
    }

    fn flagged(ivs: &[IntervalResult]) -> Vec<(u64, AnomalyKind)> {
        anomalies(ivs)
            .into_iter()
            .map(|(t, f)| (t / DEFAULT_INTERVAL_NS, f.kind))
            .collect()
    }

    #[test]
    fn a_cliff_is_flagged_at_its_seconds_and_only_there() {
        // 100 k IOPS with 1 % noise, a throttle to 30 k from t = 3 s to 6 s.
        let mut ivs: Vec<_> = (0..10)
            .map(|k| {
                let base = if (3..6).contains(&k) {
                    30_000.0
                } else {
                    100_000.0
                };
                iv(k, base * (1.0 + 0.01 * ((k % 3) as f64 - 1.0)), 200_000)
            })
            .collect();
        flag_anomalies(&mut ivs, DEFAULT_INTERVAL_NS, &AnomalyRule::default());
        assert_eq!(
            flagged(&ivs),
            vec![
                (3, AnomalyKind::IopsDrop),
                (4, AnomalyKind::IopsDrop),
                (5, AnomalyKind::IopsDrop)
            ]
        );
        assert!(ivs[3].flags[0]
            .describe()
            .starts_with("IOPS 29700, 30 % of the rolling median 100000"));
    }

    #[test]
    fn a_latency_jump_is_flagged_and_noise_is_not() {
        let mut ivs: Vec<_> = (0..8)
            .map(|k| {
                iv(
                    k,
                    50_000.0,
                    if k == 5 {
                        2_000_000
                    } else {
                        200_000 + k * 10_000
                    },
                )
            })
            .collect();
        flag_anomalies(&mut ivs, DEFAULT_INTERVAL_NS, &AnomalyRule::default());
        assert_eq!(flagged(&ivs), vec![(5, AnomalyKind::LatencyJump)]);
    }

    #[test]
    fn early_intervals_and_a_short_last_one_are_not_judged() {
        let mut ivs = vec![iv(0, 100.0, 1), iv(1, 1.0, 1), iv(2, 100.0, 1)];
        flag_anomalies(&mut ivs, DEFAULT_INTERVAL_NS, &AnomalyRule::default());
        assert!(flagged(&ivs).is_empty());
        let mut ivs: Vec<_> = (0..5).map(|k| iv(k, 100.0, 1)).collect();
        let mut last = iv(5, 10.0, 1);
        last.end_ns = last.start_ns + DEFAULT_INTERVAL_NS / 4;
        ivs.push(last);
        flag_anomalies(&mut ivs, DEFAULT_INTERVAL_NS, &AnomalyRule::default());
        assert!(flagged(&ivs).is_empty());
    }

    /// One worker's interval `k` holding reads of the latencies `lats`.
    fn worker_iv(k: u64, lats: &[u64]) -> IntervalResult {
        let mut h = DirHists::new();
        for &v in lats {
            h.slat.record(v / 10).unwrap();
            h.clat.record(v).unwrap();
            h.lat.record(v + v / 10).unwrap();
        }
        IntervalResult {
            index: k,
            start_ns: k * 1_000,
            end_ns: (k + 1) * 1_000 + lats.len() as u64,
            read: IoStats {
                ops: lats.len() as u64,
                bytes: 4096 * lats.len() as u64,
                ..IoStats::default()
            },
            histograms: RawHistograms {
                read: Some(h.hex()),
                ..RawHistograms::default()
            },
            interrupts: Some(k),
            ..IntervalResult::default()
        }
    }

    #[test]
    fn merged_intervals_equal_one_histogram_of_all_samples() {
        let pcts = [50.0, 99.0, 99.9];
        let a: Vec<u64> = (1..=500).map(|v| v * 1_000).collect();
        let b: Vec<u64> = (1..=300).map(|v| v * 7_000).collect();
        let w0 = vec![worker_iv(0, &a[..200]), worker_iv(1, &a[200..])];
        // Worker 1 stalled through interval 0: it has only interval 1.
        let w1 = vec![worker_iv(1, &b)];
        let merged = merge(&[&w0, &w1], &pcts);
        assert_eq!(merged.len(), 2);
        assert_eq!(merged[0].read.ops, 200);
        assert_eq!(merged[1].read.ops, 300 + 300);
        assert_eq!(merged[1].total.bytes, 600 * 4096);
        assert_eq!((merged[1].start_ns, merged[1].end_ns), (1_000, 2_300));
        assert_eq!(merged[1].interrupts, Some(2));
        // Interval 1 against one histogram of all its samples.
        let mut one = DirHists::new();
        for &v in a[200..].iter().chain(&b) {
            one.slat.record(v / 10).unwrap();
            one.clat.record(v).unwrap();
            one.lat.record(v + v / 10).unwrap();
        }
        assert_eq!(merged[1].read.latency, one.latencies(&pcts));
        assert_eq!(merged[1].total.latency, one.latencies(&pcts));
        assert!(merged[1].write.ops == 0 && merged[1].histograms.write.is_none());
        // Merging merged sets again (targets into a run) changes nothing.
        let again = merge(&[&merged], &pcts);
        assert_eq!(again[1].read.latency, merged[1].read.latency);
        assert_eq!(again[1].total.iops, merged[1].total.iops);
    }

    #[test]
    fn phases_add_up() {
        let a = PhaseIo {
            reads: 1,
            writes: 2,
            bytes: 3,
            errors: 0,
            time_ns: 5,
        };
        let b = PhaseIo { time_ns: 7, ..a };
        let s = PhaseIo::sum([&a, &b]).unwrap();
        assert_eq!((s.reads, s.writes, s.bytes, s.time_ns), (2, 4, 6, 7));
        assert_eq!(PhaseIo::sum([&PhaseIo::default()]), None);
    }
}
