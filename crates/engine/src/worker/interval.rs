//! A worker's time axis: its measured time cut into intervals on a grid,
//! and the ramp's I/O kept apart.
//!
//! The loop records into one [`WorkerStats`] as it always did; at each
//! grid point (checked where the loop checks its progress rhythm, once
//! per batch) [`Timeline::cut`] serializes what was recorded since the last
//! cut as one [`WorkerInterval`], adds it into the worker's totals and
//! clears it. The hot path is unchanged; a cut costs the histograms'
//! serialization, once per interval.

use results::histogram::encode_histogram;
use results::{CpuUsage, DirHistogramsHex, PhaseIo};

use crate::progress::LiveTotals;
use crate::stats::WorkerStats;

/// What one worker completed in one interval.
#[derive(Debug, Clone, PartialEq)]
pub struct WorkerInterval {
    /// Index on the grid (`start_ns / interval`).
    pub index: u64,
    /// Start and end, nanoseconds since the worker's measured time began.
    pub start_ns: u64,
    /// See `start_ns`.
    pub end_ns: u64,
    /// Successful I/Os per direction.
    pub ops: [u64; 2],
    /// Bytes per direction.
    pub bytes: [u64; 2],
    /// Failed I/Os.
    pub errors: u64,
    /// The thread's CPU usage over the interval.
    pub cpu_usage: CpuUsage,
    /// Each direction's histograms, serialized (`None`: no I/O that way).
    pub hist: [Option<DirHistogramsHex>; 2],
}

/// The intervals of one worker's measured time, as they are cut.
#[derive(Debug)]
pub(super) struct Timeline {
    /// Grid step; `None`: no intervals (a set-up trial).
    interval_ns: Option<u64>,
    /// Start of the measured time (absolute, the loop's clock).
    origin_ns: u64,
    /// The next grid point (absolute); `u64::MAX` before measuring.
    pub next_cut_ns: u64,
    last_cut_ns: u64,
    usage_at_cut: CpuUsage,
    /// What the cuts so far add up to.
    pub done: WorkerStats,
    /// The cut intervals.
    pub intervals: Vec<WorkerInterval>,
}

impl Timeline {
    /// A timeline cut every `interval_ns` once measuring starts.
    pub fn new(interval_ns: Option<u64>) -> Timeline {
        Timeline {
            interval_ns: interval_ns.filter(|&i| i > 0),
            origin_ns: 0,
            next_cut_ns: u64::MAX,
            last_cut_ns: 0,
            usage_at_cut: CpuUsage::default(),
            done: WorkerStats::new(),
            intervals: Vec::new(),
        }
    }

    /// The measured time begins at `now_ns` with `usage`.
    pub fn begin(&mut self, now_ns: u64, usage: CpuUsage) {
        self.origin_ns = now_ns;
        self.last_cut_ns = now_ns;
        self.usage_at_cut = usage;
        self.next_cut_ns = self
            .interval_ns
            .map_or(u64::MAX, |i| now_ns.saturating_add(i));
    }

    /// Ends the interval running at `now_ns`: what `stats` recorded since
    /// the last cut becomes an interval (kept where the timeline has a grid
    /// and it is not empty) and moves into [`Timeline::done`]; `stats` is
    /// cleared.
    /// `live` hears the interval's totals (`--metrics`).
    pub fn cut(
        &mut self,
        stats: &mut WorkerStats,
        now_ns: u64,
        usage: CpuUsage,
        live: &LiveTotals,
    ) {
        if let Some(step) = self.interval_ns {
            let start_ns = self.last_cut_ns - self.origin_ns;
            let end_ns = now_ns.max(self.last_cut_ns) - self.origin_ns;
            let errors = stats.error_count();
            if end_ns > start_ns || stats.ops != [0; 2] || errors > 0 {
                let hex = |d: usize| {
                    let h = &stats.hist[d];
                    (stats.ops[d] > 0).then(|| DirHistogramsHex {
                        slat_hex: encode_histogram(&h.slat),
                        clat_hex: encode_histogram(&h.clat),
                        lat_hex: encode_histogram(&h.lat),
                    })
                };
                self.intervals.push(WorkerInterval {
                    index: start_ns / step,
                    start_ns,
                    end_ns,
                    ops: stats.ops,
                    bytes: stats.bytes,
                    errors,
                    cpu_usage: crate::sys::delta(&usage, &self.usage_at_cut, end_ns - start_ns),
                    hist: [hex(0), hex(1)],
                });
            }
            // The next grid point after now: a loop stalled over several
            // points leaves those intervals empty (a stall shows as one).
            let k = (now_ns - self.origin_ns) / step + 1;
            self.next_cut_ns = self.origin_ns.saturating_add(k.saturating_mul(step));
        }
        self.last_cut_ns = now_ns.max(self.last_cut_ns);
        self.usage_at_cut = usage;
        live.add(stats);
        self.done.merge(stats);
        stats.reset();
    }
}

/// What `stats` recorded over a ramp of `time_ns`, as a phase apart.
pub(super) fn phase(stats: &WorkerStats, time_ns: u64) -> PhaseIo {
    PhaseIo {
        reads: stats.ops[0],
        writes: stats.ops[1],
        bytes: stats.bytes[0] + stats.bytes[1],
        errors: stats.error_count(),
        time_ns,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::Dir;

    fn record(s: &mut WorkerStats, n: u64) {
        s.ops[Dir::Read as usize] += n;
        s.bytes[Dir::Read as usize] += n * 4096;
        s.hist[0].lat.saturating_record_n(1000, n);
    }

    #[test]
    fn cuts_follow_the_grid_and_add_up_to_the_totals() {
        let mut t = Timeline::new(Some(1000));
        let mut s = WorkerStats::new();
        t.begin(500, CpuUsage::default());
        assert_eq!(t.next_cut_ns, 1500);
        record(&mut s, 3);
        t.cut(&mut s, 1510, CpuUsage::default(), &LiveTotals::default());
        assert_eq!(t.next_cut_ns, 2500);
        record(&mut s, 4);
        // A stall over two grid points: one interval, the next cut after it.
        t.cut(&mut s, 4200, CpuUsage::default(), &LiveTotals::default());
        assert_eq!(t.next_cut_ns, 4500);
        record(&mut s, 5);
        t.cut(&mut s, 4300, CpuUsage::default(), &LiveTotals::default());
        let got: Vec<_> = t
            .intervals
            .iter()
            .map(|i| (i.index, i.start_ns, i.end_ns, i.ops[0]))
            .collect();
        assert_eq!(
            got,
            vec![(0, 0, 1010, 3), (1, 1010, 3700, 4), (3, 3700, 3800, 5)]
        );
        assert_eq!(t.done.ops[0], 12);
        assert_eq!(t.done.hist[0].lat.len(), 12);
        assert_eq!(s.ops[0], 0);
        assert!(t.intervals[0].hist[0].is_some() && t.intervals[0].hist[1].is_none());
    }

    #[test]
    fn without_a_grid_cuts_only_add_up() {
        let mut t = Timeline::new(None);
        let mut s = WorkerStats::new();
        t.begin(0, CpuUsage::default());
        assert_eq!(t.next_cut_ns, u64::MAX);
        record(&mut s, 2);
        t.cut(&mut s, 10, CpuUsage::default(), &LiveTotals::default());
        assert!(t.intervals.is_empty());
        assert_eq!(t.done.ops[0], 2);
    }
}
