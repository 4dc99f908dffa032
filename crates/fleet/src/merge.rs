//! One result from the hosts' results: every host's targets, named
//! `HOST:PATH`, and totals over the fleet. Counts and rates add up (the
//! hosts measured over the same instants); latency percentiles come from
//! the hosts' histograms merged, never from averaged percentiles.
//!
//! Per-direction and submission latencies come from each target's
//! per-direction histograms; a result saved by a numio that did not keep
//! them (before 2026-11-27) leaves those summaries empty in the merge, and
//! each host's own result, kept beside the merged one, has its own.
//!
//! Intervals merge by their index on the grid: the hosts start measuring
//! at the fleet's barrier, so each one's interval `k` covers the same
//! instants to within the barrier's skew (which the fleet run reports),
//! and the merged interval is the exact merge of theirs.

use hdrhistogram::Histogram;
use results::histogram::{decode_histogram, new_histogram, summarize};
use results::{
    CpuUsage, DirHistogramsHex, Environment, ErrnoCount, IoStats, Latencies, RunCounters,
    RunResult, RESULT_SCHEMA_VERSION,
};

/// Why the hosts' results could not be merged.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MergeError {
    /// A histogram of a host's target does not decode, or does not add to
    /// the others (another precision).
    #[error("{host}: the {}{histogram} histogram of {target} cannot be read", direction.map(|d| format!("{d} ")).unwrap_or_default())]
    Histogram {
        /// The host's label.
        host: String,
        /// `read` or `write`; `None` for the target's totals.
        direction: Option<&'static str>,
        /// Which (`clat`, `lat`, `slat`).
        histogram: &'static str,
        /// The target's path on that host.
        target: String,
    },
    /// The fleet's read and write submission histograms do not add up
    /// (another precision).
    #[error("the submission histograms do not add up")]
    SubmissionTotals,
}

/// One direction's histograms being merged; `None` once a target that did
/// I/O in that direction brought none (an older result).
struct DirMerge(Option<[Histogram<u64>; 3]>);

impl DirMerge {
    fn new() -> DirMerge {
        DirMerge(Some([new_histogram(), new_histogram(), new_histogram()]))
    }

    fn add(
        &mut self,
        ops: u64,
        hex: Option<&DirHistogramsHex>,
        bad: &dyn Fn(&'static str) -> MergeError,
    ) -> Result<(), MergeError> {
        if ops == 0 {
            return Ok(());
        }
        let (Some(h), Some(hex)) = (self.0.as_mut(), hex) else {
            self.0 = None;
            return Ok(());
        };
        for (i, (what, x)) in [
            ("slat", &hex.slat_hex),
            ("clat", &hex.clat_hex),
            ("lat", &hex.lat_hex),
        ]
        .into_iter()
        .enumerate()
        {
            h[i].add(decode_histogram(x).ok_or_else(|| bad(what))?)
                .map_err(|_| bad(what))?;
        }
        Ok(())
    }

    fn latencies(&self, percentiles: &[f64]) -> Option<Latencies> {
        self.0.as_ref().map(|[s, c, l]| Latencies {
            slat: summarize(s, percentiles),
            clat: summarize(c, percentiles),
            lat: summarize(l, percentiles),
        })
    }
}

/// The fleet's result from `(host label, its result)` pairs, in host
/// order, with latency `percentiles` (0 < p ≤ 100). An error names a host
/// whose histograms cannot be read.
pub fn merge(parts: &[(&str, &RunResult)], percentiles: &[f64]) -> Result<RunResult, MergeError> {
    let mut targets = Vec::new();
    let mut env = Environment {
        hostname: format!(
            "fleet of {}: {}",
            parts.len(),
            parts.iter().map(|(h, _)| *h).collect::<Vec<_>>().join(", ")
        ),
        ..parts
            .first()
            .map(|(_, r)| r.environment.clone())
            .unwrap_or_default()
    };
    env.cpus_used.clear();
    env.targets.clear();
    env.notes.clear();
    let (mut clat, mut lat) = (new_histogram(), new_histogram());
    let (mut read, mut write) = (DirMerge::new(), DirMerge::new());
    let mut out = RunResult {
        schema_version: RESULT_SCHEMA_VERSION,
        environment: Environment::default(),
        policy: parts
            .first()
            .map(|(_, r)| r.policy.clone())
            .unwrap_or_default(),
        targets: Vec::new(),
        read: IoStats::default(),
        write: IoStats::default(),
        total: IoStats::default(),
        cpu_usage: CpuUsage::default(),
        process_cpu_usage: CpuUsage::default(),
        errors: Vec::new(),
        runtime_ns: 0,
        interrupted: false,
        counters: None,
        interval_ns: parts.first().map_or(0, |(_, r)| r.interval_ns),
        intervals: Vec::new(),
        setup_io: results::PhaseIo::sum(parts.iter().filter_map(|(_, r)| r.setup_io.as_ref())),
        ramp_io: results::PhaseIo::sum(parts.iter().filter_map(|(_, r)| r.ramp_io.as_ref())),
    };
    let sets: Vec<&[results::IntervalResult]> =
        parts.iter().map(|(_, r)| r.intervals.as_slice()).collect();
    out.intervals = results::intervals::merge(&sets, percentiles);
    results::intervals::flag_anomalies(
        &mut out.intervals,
        out.interval_ns,
        &results::AnomalyRule::default(),
    );
    for (host, r) in parts {
        env.started_unix_s = env.started_unix_s.min(r.environment.started_unix_s);
        for t in &r.environment.targets {
            let mut t = t.clone();
            t.path = format!("{host}:{}", t.path);
            env.targets.push(t);
        }
        env.notes
            .extend(r.environment.notes.iter().map(|n| format!("{host}: {n}")));
        for t in &r.targets {
            let bad = |direction, histogram| MergeError::Histogram {
                host: host.to_string(),
                direction,
                histogram,
                target: t.path.clone(),
            };
            if t.total.ops > 0 {
                let total = |h| bad(None, h);
                clat.add(decode_histogram(&t.histograms.clat_hex).ok_or_else(|| total("clat"))?)
                    .map_err(|_| total("clat"))?;
                lat.add(decode_histogram(&t.histograms.lat_hex).ok_or_else(|| total("lat"))?)
                    .map_err(|_| total("lat"))?;
            }
            read.add(t.read.ops, t.histograms.read.as_ref(), &|h| {
                bad(Some("read"), h)
            })?;
            write.add(t.write.ops, t.histograms.write.as_ref(), &|h| {
                bad(Some("write"), h)
            })?;
            let mut t = t.clone();
            t.path = format!("{host}:{}", t.path);
            targets.push(t);
        }
        add_counts(&mut out.read, &r.read);
        add_counts(&mut out.write, &r.write);
        add_counts(&mut out.total, &r.total);
        add_cpu(&mut out.cpu_usage, &r.cpu_usage);
        add_cpu(&mut out.process_cpu_usage, &r.process_cpu_usage);
        for e in &r.errors {
            match out.errors.iter_mut().find(|o| o.errno == e.errno) {
                Some(o) => o.count += e.count,
                None => out.errors.push(ErrnoCount { ..e.clone() }),
            }
        }
        out.runtime_ns = out.runtime_ns.max(r.runtime_ns);
        out.interrupted |= r.interrupted;
    }
    out.errors
        .sort_by(|a, b| b.count.cmp(&a.count).then(a.errno.cmp(&b.errno)));
    out.total.latency = Latencies {
        slat: Default::default(),
        clat: summarize(&clat, percentiles),
        lat: summarize(&lat, percentiles),
    };
    let (r, w) = (read.latencies(percentiles), write.latencies(percentiles));
    if let (Some(r), Some(w)) = (&read.0, &write.0) {
        // Submission latency of both directions (the combined histograms
        // hold only completion and total).
        let mut slat = r[0].clone();
        slat.add(&w[0]).map_err(|_| MergeError::SubmissionTotals)?;
        out.total.latency.slat = summarize(&slat, percentiles);
    }
    out.read.latency = r.unwrap_or_default();
    out.write.latency = w.unwrap_or_default();
    out.targets = targets;
    out.environment = env;
    out.counters = merge_counters(parts);
    Ok(out)
}

/// The hosts' machine counters together, when every host has them: CPU
/// time, context switches and interrupts add up (the CPU headroom is then
/// the fleet's unused share, the machine CPU per I/O the fleet's busy time
/// over all its I/Os), each target's lines are named `HOST:PATH`, and the
/// window is the longest (the hosts measured over the same instants, each
/// within its own engine's tick). Per-node CPU stays in each host's result.
fn merge_counters(parts: &[(&str, &RunResult)]) -> Option<RunCounters> {
    let mut out = RunCounters::default();
    let mut nvme = Some(0u64);
    let mut process = Some(results::ProcessCounters::default());
    for (host, r) in parts {
        let c = r.counters.as_ref()?;
        out.window_ns = out.window_ns.max(c.window_ns);
        out.cpu.add(&c.cpu);
        out.online_cpus += c.online_cpus;
        out.context_switches += c.context_switches;
        out.interrupts += c.interrupts;
        nvme = nvme.zip(c.nvme_interrupts).map(|(a, b)| a + b);
        process = process.zip(c.process).map(|(mut a, b)| {
            a.add(&b);
            a
        });
        out.targets
            .extend(c.targets.iter().map(|t| results::TargetCounters {
                path: format!("{host}:{}", t.path),
                ..t.clone()
            }));
    }
    out.nvme_interrupts = nvme;
    out.process = process;
    (!parts.is_empty()).then_some(out)
}

fn add_counts(sum: &mut IoStats, x: &IoStats) {
    sum.ops += x.ops;
    sum.bytes += x.bytes;
    sum.iops += x.iops;
    sum.bandwidth_bytes_per_s += x.bandwidth_bytes_per_s;
}

fn add_cpu(sum: &mut CpuUsage, x: &CpuUsage) {
    sum.wall_ns = sum.wall_ns.max(x.wall_ns);
    sum.user_ns += x.user_ns;
    sum.system_ns += x.system_ns;
    sum.voluntary_ctx_switches += x.voluntary_ctx_switches;
    sum.involuntary_ctx_switches += x.involuntary_ctx_switches;
}

#[cfg(test)]
mod tests {
    use super::*;
    use results::histogram::encode_histogram;
    use results::{DirHistogramsHex, RawHistograms, TargetResult};

    fn host_result(samples: &[u64]) -> RunResult {
        let (mut h, mut slat) = (new_histogram(), new_histogram());
        for &s in samples {
            h.record(s).unwrap();
            slat.record(s / 10).unwrap();
        }
        let total = IoStats {
            ops: samples.len() as u64,
            bytes: samples.len() as u64 * 4096,
            iops: samples.len() as f64,
            bandwidth_bytes_per_s: samples.len() as f64 * 4096.0,
            latency: Latencies::default(),
        };
        let target = TargetResult {
            path: "/dev/nvme0n1".into(),
            label: None,
            node: None,
            workload: Default::default(),
            runtime_ns: 1_000_000_000,
            read: total.clone(),
            write: IoStats::default(),
            total: total.clone(),
            cpu_usage: CpuUsage::default(),
            errors: vec![],
            workers: vec![],
            histograms: RawHistograms {
                clat_hex: encode_histogram(&h),
                lat_hex: encode_histogram(&h),
                // Reads only: submission latency a tenth of completion's.
                read: Some(DirHistogramsHex {
                    slat_hex: encode_histogram(&slat),
                    clat_hex: encode_histogram(&h),
                    lat_hex: encode_histogram(&h),
                }),
                write: None,
            },
            verify: None,
            multipath: None,
            intervals: vec![],
            setup_io: None,
            ramp_io: None,
        };
        RunResult {
            schema_version: RESULT_SCHEMA_VERSION,
            environment: Environment::default(),
            policy: "local".into(),
            targets: vec![target],
            read: total.clone(),
            write: IoStats::default(),
            total,
            cpu_usage: CpuUsage {
                user_ns: 10,
                ..Default::default()
            },
            process_cpu_usage: CpuUsage::default(),
            errors: vec![ErrnoCount {
                errno: 5,
                name: "EIO".into(),
                count: 2,
            }],
            runtime_ns: 1_000_000_000,
            interrupted: false,
            counters: None,
            ..RunResult::default()
        }
    }

    /// Two hosts of very different latency: the merged p50 and p99 are
    /// those of one histogram of every sample (averaging the hosts'
    /// percentiles would give neither).
    #[test]
    fn counters_add_up_over_hosts_when_every_host_has_them() {
        let counted = |busy: u64, idle: u64, irqs: u64| RunCounters {
            window_ns: 1_000_000_000,
            cpu: results::CpuSplit {
                user_ns: busy,
                idle_ns: idle,
                ..Default::default()
            },
            online_cpus: 4,
            nvme_interrupts: Some(irqs),
            process: Some(results::ProcessCounters {
                user_ns: busy / 2,
                ..Default::default()
            }),
            ..Default::default()
        };
        let (mut a, mut b) = (host_result(&[1000]), host_result(&[2000]));
        a.counters = Some(counted(1_000_000_000, 3_000_000_000, 10));
        b.counters = Some(counted(3_000_000_000, 1_000_000_000, 30));
        let m = merge(&[("a", &a), ("b", &b)], &[50.0]).unwrap();
        let c = m.counters.as_ref().unwrap();
        assert_eq!(c.online_cpus, 8);
        assert_eq!(c.nvme_interrupts, Some(40));
        assert_eq!(c.process.unwrap().user_ns, 2_000_000_000);
        // Half of the fleet's 8 CPUs idle: 50 % headroom, not either
        // host's 75 % or 25 %.
        assert_eq!(c.cpu.headroom_pct(), Some(50.0));
        assert_eq!(m.per_io().cpu_headroom_pct, Some(50.0));
        // One host without counters: the fleet has none, rather than a
        // sum that leaves a host out.
        b.counters = None;
        let m = merge(&[("a", &a), ("b", &b)], &[50.0]).unwrap();
        assert!(m.counters.is_none());
    }

    #[test]
    fn percentiles_come_from_one_histogram_of_all_samples() {
        let fast: Vec<u64> = (1..=900).map(|i| 10_000 + i).collect();
        let slow: Vec<u64> = (1..=100).map(|i| 1_000_000 + i * 1000).collect();
        let (a, b) = (host_result(&fast), host_result(&slow));
        let m = merge(&[("a", &a), ("b", &b)], &[50.0, 99.0]).unwrap();
        let mut all = new_histogram();
        for s in fast.iter().chain(&slow) {
            all.record(*s).unwrap();
        }
        let want = summarize(&all, &[50.0, 99.0]);
        assert_eq!(m.total.latency.clat, want);
        assert_eq!(m.total.latency.clat.samples, 1000);
        // Per direction and submission latency the same way.
        assert_eq!(m.read.latency.clat, want);
        assert_eq!(m.read.latency.lat, want);
        let mut all_slat = new_histogram();
        for s in fast.iter().chain(&slow) {
            all_slat.record(*s / 10).unwrap();
        }
        let want_slat = summarize(&all_slat, &[50.0, 99.0]);
        assert_eq!(m.read.latency.slat, want_slat);
        assert_eq!(m.total.latency.slat, want_slat);
        assert_eq!(m.write.latency.clat.samples, 0, "no writes");
        assert!(m.total.latency.clat.at(99.0).unwrap() > 1_000_000);
        assert_eq!(m.total.ops, 1000);
        assert_eq!(m.total.iops, 1000.0);
        assert_eq!(m.cpu_usage.user_ns, 20);
        assert_eq!(m.errors[0].count, 4);
        let names: Vec<_> = m.targets.iter().map(|t| t.path.as_str()).collect();
        assert_eq!(names, ["a:/dev/nvme0n1", "b:/dev/nvme0n1"]);
        assert!(m.environment.hostname.contains("a, b"));
    }

    /// A host whose result has no per-direction histograms (an older
    /// numio's): the merge keeps the combined percentiles and leaves the
    /// per-direction ones empty rather than partial.
    #[test]
    fn a_result_without_direction_histograms_leaves_those_empty() {
        let a = host_result(&[10, 20, 30]);
        let mut old = host_result(&[40, 50]);
        old.targets[0].histograms.read = None;
        let m = merge(&[("a", &a), ("old", &old)], &[50.0]).unwrap();
        assert_eq!(m.total.latency.clat.samples, 5);
        assert_eq!(m.read.latency, Latencies::default());
        assert_eq!(m.total.latency.slat, Default::default());
    }

    #[test]
    fn an_unreadable_histogram_names_its_host() {
        let mut a = host_result(&[5, 6]);
        a.targets[0].histograms.clat_hex = "zz".into();
        let e = merge(&[("db7", &a)], &[99.0]).unwrap_err();
        assert_eq!(
            e,
            MergeError::Histogram {
                host: "db7".into(),
                direction: None,
                histogram: "clat",
                target: "/dev/nvme0n1".into()
            }
        );
        assert!(
            e.to_string()
                .starts_with("db7: the clat histogram of /dev/nvme0n1"),
            "{e}"
        );
        let mut b = host_result(&[5, 6]);
        if let Some(r) = b.targets[0].histograms.read.as_mut() {
            r.lat_hex = "zz".into();
        }
        let e = merge(&[("db8", &b)], &[99.0]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "db8: the read lat histogram of /dev/nvme0n1 cannot be read"
        );
    }
}
