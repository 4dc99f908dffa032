//! `numio bench --metrics ADDR`: the run in progress as OpenMetrics /
//! Prometheus text, per target and job, in the names and units `numio
//! serve --metrics` uses (`numio_commands_total`, `numio_bytes_total`,
//! `numio_errors_total`, `numio_command_latency_seconds`), labelled by
//! `target` and `job` instead of the target's controller. The numbers are
//! each worker's measured totals as of its last interval cut
//! ([`crate::progress::LiveTotals`]): after the last cut they are the
//! result's, exactly.
//!
//! One endpoint per address for the whole process ([`serve_run`]): the
//! runs of `--repeat` or `compare` each take it over as they start, so a
//! scraper never loses its target between runs (it then sees the run
//! before's final totals).

use std::fmt::Write as _;
use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use nvmf::metrics_http::{self, HttpError, MetricsSource};
use nvmf::tgt::counters::LATENCY_BOUNDS_NS;
use nvmf::tgt::metrics::label;

use crate::progress::WorkerProgress;

/// One worker: its target's path, its job index, its published counters.
pub type Job = (String, u32, Arc<WorkerProgress>);

/// The workers of the latest run, as the metrics endpoint reads them.
#[derive(Default)]
pub struct BenchMetrics {
    jobs: Mutex<Vec<Job>>,
}

impl BenchMetrics {
    /// The metrics of workers `jobs`.
    pub fn new(jobs: Vec<Job>) -> BenchMetrics {
        BenchMetrics {
            jobs: Mutex::new(jobs),
        }
    }
}

/// The endpoints of this process: the address asked for, the one bound,
/// what it serves.
type Endpoint = (SocketAddr, SocketAddr, Arc<BenchMetrics>);
static ENDPOINTS: Mutex<Vec<Endpoint>> = Mutex::new(Vec::new());

/// Serves the run of workers `jobs` at `addr` (the endpoint started for
/// `addr` by an earlier run of this process, or a new one); the bound
/// address.
pub fn serve_run(addr: SocketAddr, jobs: Vec<Job>) -> Result<SocketAddr, HttpError> {
    let mut all = ENDPOINTS.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, bound, m)) = all.iter().find(|(asked, _, _)| *asked == addr) {
        *m.jobs.lock().unwrap_or_else(|e| e.into_inner()) = jobs;
        return Ok(*bound);
    }
    let m = Arc::new(BenchMetrics::new(jobs));
    let bound = metrics_http::start(addr, Arc::clone(&m) as Arc<dyn MetricsSource>)?;
    all.push((addr, bound, m));
    Ok(bound)
}

const OPS: [&str; 2] = ["read", "write"];

impl MetricsSource for BenchMetrics {
    fn metrics_text(&self) -> String {
        let jobs = self.jobs.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let jobs = &jobs;
        let mut w = String::new();
        let load = |a: &std::sync::atomic::AtomicU64| a.load(Ordering::Relaxed);
        let _ = writeln!(w, "# HELP numio_commands_total I/Os completed successfully, per target, job and direction (measured time, as of the job's last interval).");
        let _ = writeln!(w, "# TYPE numio_commands_total counter");
        for (path, job, p) in jobs {
            for (d, op) in OPS.iter().enumerate() {
                let _ = writeln!(
                    w,
                    "numio_commands_total{{target=\"{}\",job=\"{job}\",op=\"{op}\"}} {}",
                    label(path),
                    load(&p.live.ops[d])
                );
            }
        }
        let _ = writeln!(w, "# HELP numio_bytes_total Bytes of successful reads and writes, per target, job and direction.");
        let _ = writeln!(w, "# TYPE numio_bytes_total counter");
        for (path, job, p) in jobs {
            for (d, op) in OPS.iter().enumerate() {
                let _ = writeln!(
                    w,
                    "numio_bytes_total{{target=\"{}\",job=\"{job}\",op=\"{op}\"}} {}",
                    label(path),
                    load(&p.live.bytes[d])
                );
            }
        }
        let _ = writeln!(
            w,
            "# HELP numio_errors_total I/Os that failed, per target and job."
        );
        let _ = writeln!(w, "# TYPE numio_errors_total counter");
        for (path, job, p) in jobs {
            let _ = writeln!(
                w,
                "numio_errors_total{{target=\"{}\",job=\"{job}\"}} {}",
                label(path),
                load(&p.live.errors)
            );
        }
        const NAME: &str = "numio_command_latency_seconds";
        let _ = writeln!(w, "# HELP {NAME} Total latency (lat: queued to reaped) of successful I/Os, per target, job and direction.");
        let _ = writeln!(w, "# TYPE {NAME} histogram");
        for (path, job, p) in jobs {
            for (d, op) in OPS.iter().enumerate() {
                let labels = format!("target=\"{}\",job=\"{job}\",op=\"{op}\"", label(path));
                let mut cumulative = 0;
                for (bound, n) in LATENCY_BOUNDS_NS.iter().zip(&p.live.lat_buckets[d]) {
                    cumulative += load(n);
                    let le = *bound as f64 / 1e9;
                    let _ = writeln!(w, "{NAME}_bucket{{{labels},le=\"{le}\"}} {cumulative}");
                }
                cumulative += load(&p.live.lat_buckets[d][LATENCY_BOUNDS_NS.len()]);
                let _ = writeln!(w, "{NAME}_bucket{{{labels},le=\"+Inf\"}} {cumulative}");
                let sum = load(&p.live.lat_sum_ns[d]) as f64 / 1e9;
                let _ = writeln!(w, "{NAME}_sum{{{labels}}} {sum}");
                let _ = writeln!(w, "{NAME}_count{{{labels}}} {cumulative}");
            }
        }
        w
    }

    /// Served until the process ends: later runs take it over.
    fn stopped(&self) -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::WorkerStats;
    use nvmf::tgt::metrics::parse_line;

    #[test]
    fn a_scrape_says_each_jobs_counts_and_latency_buckets() {
        let p = Arc::new(WorkerProgress::default());
        let mut s = WorkerStats::new();
        s.ops = [3, 1];
        s.bytes = [3 * 4096, 4096];
        for v in [4_000, 7_000, 2_000_000_000] {
            s.hist[0].lat.saturating_record(v);
        }
        s.hist[1].lat.saturating_record(30_000);
        p.live.add(&s);
        p.live.add(&s);
        let m = BenchMetrics::new(vec![("/dev/x\"y".into(), 2, p)]);
        let samples: Vec<_> = m.metrics_text().lines().filter_map(parse_line).collect();
        let get = |name: &str, op: &str, le: &str| {
            samples
                .iter()
                .find(|s| s.name == name && s.label("op") == op && s.label("le") == le)
                .map(|s| s.value)
        };
        assert_eq!(get("numio_commands_total", "read", ""), Some(6.0));
        assert_eq!(get("numio_bytes_total", "write", ""), Some(2.0 * 4096.0));
        let h = "numio_command_latency_seconds_bucket";
        assert_eq!(get(h, "read", "0.000005"), Some(2.0));
        assert_eq!(get(h, "read", "0.00001"), Some(4.0));
        assert_eq!(get(h, "read", "1"), Some(4.0));
        assert_eq!(get(h, "read", "+Inf"), Some(6.0));
        assert_eq!(get(h, "write", "0.00005"), Some(2.0));
        assert_eq!(
            get("numio_command_latency_seconds_count", "read", ""),
            Some(6.0)
        );
        assert!(samples
            .iter()
            .all(|s| s.label("target") == "/dev/x\"y" && s.label("job") == "2"));
    }
}
