//! Per-worker statistics: HdrHistograms allocated at start-up, recorded
//! without allocation on the hot path, merged at the end.

use hdrhistogram::Histogram;

pub use results::histogram::{
    decode_histogram, encode_histogram, new_histogram, summarize, HIST_MAX_NS,
};
use results::{DirHistogramsHex, ErrnoCount, IoStats, Latencies, RawHistograms, NVME_STATUS_BASE};
/// Highest errno counted individually; larger ones share the last bucket.
pub const ERRNO_SLOTS: usize = 256;
/// NVMe statuses counted individually: every `SCT << 8 | SC` (11 bits).
pub const NVME_STATUS_SLOTS: usize = 0x800;

/// I/O direction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dir {
    /// Read from the target.
    Read = 0,
    /// Write to the target.
    Write = 1,
}

/// The three latency histograms of one direction.
#[derive(Debug, Clone)]
pub struct DirHistograms {
    /// Submission latency.
    pub slat: Histogram<u64>,
    /// Completion latency.
    pub clat: Histogram<u64>,
    /// Total latency.
    pub lat: Histogram<u64>,
}

impl DirHistograms {
    fn new() -> Self {
        DirHistograms {
            slat: new_histogram(),
            clat: new_histogram(),
            lat: new_histogram(),
        }
    }
    fn reset(&mut self) {
        self.slat.reset();
        self.clat.reset();
        self.lat.reset();
    }
    fn add(&mut self, other: &DirHistograms) {
        // Same bounds everywhere and auto-resize off: addition cannot fail
        // except on saturation, which saturating counts make impossible here.
        let _ = self.slat.add(&other.slat);
        let _ = self.clat.add(&other.clat);
        let _ = self.lat.add(&other.lat);
    }
}

/// Counters and histograms of one worker (or a merge of several).
#[derive(Debug, Clone)]
pub struct WorkerStats {
    /// Successful I/Os per direction.
    pub ops: [u64; 2],
    /// Bytes per direction.
    pub bytes: [u64; 2],
    /// Histograms per direction.
    pub hist: [DirHistograms; 2],
    /// Errors by errno (index = errno, last slot = anything larger).
    pub errors: Box<[u64; ERRNO_SLOTS]>,
    /// Errors by NVMe status (index = `SCT << 8 | SC`; passthru backend).
    pub nvme_status: Box<[u64; NVME_STATUS_SLOTS]>,
}

impl Default for WorkerStats {
    fn default() -> Self {
        Self::new()
    }
}

impl WorkerStats {
    /// Allocates every histogram (start-up only).
    pub fn new() -> Self {
        WorkerStats {
            ops: [0; 2],
            bytes: [0; 2],
            hist: [DirHistograms::new(), DirHistograms::new()],
            errors: Box::new([0; ERRNO_SLOTS]),
            nvme_status: Box::new([0; NVME_STATUS_SLOTS]),
        }
    }

    /// Forgets everything recorded (end of ramp). Does not allocate.
    pub fn reset(&mut self) {
        self.ops = [0; 2];
        self.bytes = [0; 2];
        self.hist[0].reset();
        self.hist[1].reset();
        self.errors.fill(0);
        self.nvme_status.fill(0);
    }

    /// Counts one failed I/O: an errno, or an NVMe status as
    /// [`NVME_STATUS_BASE`] + `SCT << 8 | SC`.
    #[inline]
    pub fn record_error(&mut self, errno: i32) {
        let nvme = errno.wrapping_sub(NVME_STATUS_BASE) as u32 as usize;
        if nvme < NVME_STATUS_SLOTS {
            self.nvme_status[nvme] += 1;
            return;
        }
        let i = (errno.max(0) as usize).min(ERRNO_SLOTS - 1);
        self.errors[i] += 1;
    }

    /// Total failed I/Os.
    pub fn error_count(&self) -> u64 {
        self.errors.iter().sum::<u64>() + self.nvme_status.iter().sum::<u64>()
    }

    /// Adds another worker's numbers.
    pub fn merge(&mut self, other: &WorkerStats) {
        for d in 0..2 {
            self.ops[d] += other.ops[d];
            self.bytes[d] += other.bytes[d];
            self.hist[d].add(&other.hist[d]);
        }
        for (a, b) in self.errors.iter_mut().zip(other.errors.iter()) {
            *a += *b;
        }
        for (a, b) in self.nvme_status.iter_mut().zip(other.nvme_status.iter()) {
            *a += *b;
        }
    }

    /// Both directions merged into one set of histograms.
    pub fn combined(&self) -> DirHistograms {
        let mut all = self.hist[0].clone();
        all.add(&self.hist[1]);
        all
    }

    /// Summaries for one direction (`Some`) or both (`None`) over `runtime_ns`.
    pub fn io_stats(&self, dir: Option<Dir>, runtime_ns: u64, percentiles: &[f64]) -> IoStats {
        let (ops, bytes, latency) = match dir {
            Some(d) => {
                let i = d as usize;
                (
                    self.ops[i],
                    self.bytes[i],
                    latencies(&self.hist[i], percentiles),
                )
            }
            None => (
                self.ops[0] + self.ops[1],
                self.bytes[0] + self.bytes[1],
                latencies(&self.combined(), percentiles),
            ),
        };
        let secs = runtime_ns as f64 / 1e9;
        let rate = |n: u64| if secs > 0.0 { n as f64 / secs } else { 0.0 };
        IoStats {
            ops,
            bytes,
            iops: rate(ops),
            bandwidth_bytes_per_s: rate(bytes),
            latency,
        }
    }

    /// Errors by errno, most frequent first.
    pub fn errno_counts(&self) -> Vec<ErrnoCount> {
        let mut v: Vec<ErrnoCount> = self
            .errors
            .iter()
            .enumerate()
            .filter(|(_, c)| **c > 0)
            .map(|(e, c)| ErrnoCount {
                errno: e as i32,
                name: errno_name(e as i32),
                count: *c,
            })
            .chain(
                self.nvme_status
                    .iter()
                    .enumerate()
                    .filter(|(_, c)| **c > 0)
                    .map(|(s, c)| ErrnoCount {
                        errno: NVME_STATUS_BASE + s as i32,
                        name: nvme_status_name(s as u16),
                        count: *c,
                    }),
            )
            .collect();
        v.sort_by(|a, b| b.count.cmp(&a.count).then(a.errno.cmp(&b.errno)));
        v
    }

    /// Serialized histograms of both directions together, and of each
    /// direction that did I/O.
    pub fn raw_histograms(&self) -> RawHistograms {
        let all = self.combined();
        let dir = |d: Dir| {
            let h = &self.hist[d as usize];
            (self.ops[d as usize] > 0).then(|| DirHistogramsHex {
                slat_hex: encode_histogram(&h.slat),
                clat_hex: encode_histogram(&h.clat),
                lat_hex: encode_histogram(&h.lat),
            })
        };
        RawHistograms {
            clat_hex: encode_histogram(&all.clat),
            lat_hex: encode_histogram(&all.lat),
            read: dir(Dir::Read),
            write: dir(Dir::Write),
        }
    }
}

fn latencies(h: &DirHistograms, percentiles: &[f64]) -> Latencies {
    Latencies {
        slat: summarize(&h.slat, percentiles),
        clat: summarize(&h.clat, percentiles),
        lat: summarize(&h.lat, percentiles),
    }
}

/// `NVMe status sct=MediaError sc=0x81` for `SCT << 8 | SC`.
pub fn nvme_status_name(sct_sc: u16) -> String {
    format!(
        "NVMe status {}",
        nvme_spec::Status::from_field(sct_sc & 0x7ff)
    )
}

/// The symbolic name of an errno (`EIO`), or `errno N`.
pub fn errno_name(errno: i32) -> String {
    let name = match errno {
        1 => "EPERM",
        2 => "ENOENT",
        4 => "EINTR",
        5 => "EIO",
        6 => "ENXIO",
        9 => "EBADF",
        11 => "EAGAIN",
        12 => "ENOMEM",
        13 => "EACCES",
        14 => "EFAULT",
        16 => "EBUSY",
        22 => "EINVAL",
        27 => "EFBIG",
        28 => "ENOSPC",
        30 => "EROFS",
        61 => "ENODATA",
        84 => "EILSEQ (verify mismatch)",
        32 => "EPIPE",
        95 => "EOPNOTSUPP",
        104 => "ECONNRESET",
        107 => "ENOTCONN",
        110 => "ETIMEDOUT",
        121 => "EREMOTEIO",
        125 => "ECANCELED",
        255 => "errno >= 255",
        _ => return format!("errno {errno}"),
    };
    name.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_of_known_values() {
        let mut s = WorkerStats::new();
        for v in 1..=1000u64 {
            s.hist[0].clat.saturating_record(v * 1000);
        }
        s.ops[0] = 1000;
        let st = s.io_stats(Some(Dir::Read), 2_000_000_000, &[50.0, 99.0]);
        assert_eq!(st.iops, 500.0);
        let clat = &st.latency.clat;
        assert_eq!(clat.samples, 1000);
        assert_eq!(clat.min_ns, 1000);
        assert!((clat.at(50.0).unwrap() as f64 - 500_000.0).abs() < 1000.0);
        assert!((clat.at(99.0).unwrap() as f64 - 990_000.0).abs() < 1000.0);
        assert!((clat.mean_ns - 500_500.0).abs() < 600.0);
    }

    #[test]
    fn merge_adds_counts_and_errors() {
        let mut a = WorkerStats::new();
        let mut b = WorkerStats::new();
        a.ops = [3, 1];
        b.ops = [2, 0];
        b.record_error(5);
        b.record_error(5);
        b.record_error(100_000);
        b.hist[1].lat.saturating_record(7);
        a.merge(&b);
        assert_eq!(a.ops, [5, 1]);
        assert_eq!(a.error_count(), 3);
        let e = a.errno_counts();
        assert_eq!(e[0].name, "EIO");
        assert_eq!(e[0].count, 2);
        assert_eq!(e[1].errno, 255);
        assert_eq!(a.hist[1].lat.len(), 1);
    }

    #[test]
    fn nvme_statuses_count_apart_from_errnos() {
        let mut a = WorkerStats::new();
        let mut b = WorkerStats::new();
        b.record_error(NVME_STATUS_BASE + 0x281);
        b.record_error(NVME_STATUS_BASE + 0x281);
        b.record_error(NVME_STATUS_BASE + 0x80);
        b.record_error(5);
        a.merge(&b);
        assert_eq!(a.error_count(), 4);
        let e = a.errno_counts();
        assert_eq!(e[0].errno, NVME_STATUS_BASE + 0x281);
        assert_eq!(e[0].name, "NVMe status sct=MediaError sc=0x81");
        assert_eq!(e[0].count, 2);
        assert!(e.iter().any(|x| x.errno == 5 && x.count == 1));
        assert!(e
            .iter()
            .any(|x| x.errno == NVME_STATUS_BASE + 0x80
                && x.name == "NVMe status sct=Generic sc=0x80"));
        a.reset();
        assert_eq!(a.error_count(), 0);
    }
}
