//! The human view of a fleet run (`numio bench --hosts`, and `numio report`
//! of its `--json` file): a line per host with its targets, then the
//! fleet's merged line.

use std::fmt::Write;
use std::time::Instant;

use fleet::report::FleetReport;
use fleet::FleetEvent;

/// This run as run `seq` of a result set, every host's whole result in
/// its `raw`; `None` when no host ran.
pub fn record(r: &FleetReport, seq: usize) -> Result<Option<crate::RunRecord>, serde_json::Error> {
    let Some(merged) = &r.merged else {
        return Ok(None);
    };
    let mut record = crate::from_engine::record(seq, merged);
    record.raw = Some(serde_json::to_value(r)?);
    Ok(Some(record))
}

/// What `numio bench --hosts` prints for one run.
pub fn render(r: &FleetReport) -> String {
    let mut out = hosts(r);
    if let Some(m) = &r.merged {
        out += &total(m, r);
        out.push('\n');
    }
    out
}

/// One line per host (IOPS, bandwidth, latency, its clock offset and
/// start skew), its targets under it, or why it did not run.
pub fn hosts(r: &FleetReport) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:<24} {:>10} {:>11} {:>10} {:>10} {:>12} {:>11}",
        "host", "IOPS", "bandwidth", "mean", "p99", "clock offset", "start skew"
    );
    for h in &r.hosts {
        let Some(res) = &h.result else {
            let _ = writeln!(
                out,
                "{:<24} FAILED: {}",
                h.host,
                h.reason.as_deref().unwrap_or("")
            );
            continue;
        };
        let lat = &res.total.latency.clat;
        let _ = writeln!(
            out,
            "{:<24} {:>10} {:>11} {:>10} {:>10} {:>12} {:>11}",
            h.host,
            crate::format::si(res.total.iops),
            crate::format::bandwidth(res.total.bandwidth_bytes_per_s),
            crate::format::latency(lat.mean_ns),
            crate::format::latency(lat.at(99.0).unwrap_or(0) as f64),
            format!(
                "{}±{}",
                signed_latency(h.clock_offset_ns.unwrap_or(0)),
                crate::format::latency(h.clock_rtt_ns.unwrap_or(0) as f64 / 2.0)
            ),
            h.start_skew_ns.map_or("-".into(), signed_latency),
        );
        for t in &res.targets {
            let _ = writeln!(
                out,
                "  {:<22} {:>10} {:>11} {:>10} {:>10}",
                t.path,
                crate::format::si(t.total.iops),
                crate::format::bandwidth(t.total.bandwidth_bytes_per_s),
                crate::format::latency(t.total.latency.clat.mean_ns),
                crate::format::latency(t.total.latency.clat.at(99.0).unwrap_or(0) as f64),
            );
            if let Some(v) = &t.verify {
                let mut lines = String::new();
                crate::bench::verify_lines(&mut lines, v);
                for l in lines.lines() {
                    let _ = writeln!(out, "  {l}");
                }
            }
        }
    }
    out
}

/// The fleet's line: the merged result of the hosts that ran.
pub fn total(m: &results::RunResult, r: &FleetReport) -> String {
    let ok = r.hosts.iter().filter(|h| h.ok).count();
    let lat = &m.total.latency.clat;
    let pct = |p: f64| crate::format::latency(lat.at(p).unwrap_or(0) as f64);
    format!(
        "fleet ({ok} of {} hosts{}): {} IOPS, {}, clat mean {} p50 {} p99 {} p99.9 {} (percentiles of the merged histograms, {} I/Os)",
        r.hosts.len(),
        if r.partial { ", PARTIAL" } else { "" },
        crate::format::si(m.total.iops),
        crate::format::bandwidth(m.total.bandwidth_bytes_per_s),
        crate::format::latency(lat.mean_ns),
        pct(50.0),
        pct(99.0),
        pct(99.9),
        m.total.ops
    )
}

/// A latency with its sign: `-12.3µs`.
pub fn signed_latency(ns: i64) -> String {
    let s = crate::format::latency(ns.unsigned_abs() as f64);
    if ns < 0 {
        format!("-{s}")
    } else {
        format!("+{s}")
    }
}

/// A fleet run's progress as lines for stderr: one per host event
/// (connected with its clock offset, ready, failed, the common start), and
/// the hosts' live IOPS with their total at most once a second.
#[derive(Debug)]
pub struct Progress {
    labels: Vec<String>,
    iops: Vec<f64>,
    last: Instant,
}

impl Progress {
    /// For the hosts labelled `labels`, in order.
    pub fn new(labels: Vec<String>) -> Progress {
        Progress {
            iops: vec![0.0; labels.len()],
            labels,
            last: Instant::now(),
        }
    }

    /// The line `e` makes, if it makes one now.
    pub fn line(&mut self, e: &FleetEvent<'_>) -> Option<String> {
        match e {
            FleetEvent::Connected {
                host,
                hostname,
                offset,
            } => Some(format!(
                "numio: {host}: {hostname}, clock {} ± {}",
                signed_latency(offset.offset_ns),
                crate::format::latency(offset.rtt_ns as f64 / 2.0)
            )),
            FleetEvent::Ready {
                host,
                targets,
                jobs,
            } => Some(format!(
                "numio: {host}: ready: {} ({jobs} jobs)",
                targets.join(", ")
            )),
            FleetEvent::Starting { hosts, .. } => {
                Some(format!("numio: {hosts} host(s) start together"))
            }
            FleetEvent::Failed { host, reason } => Some(format!("numio: {host}: {reason}")),
            FleetEvent::Progress {
                host,
                elapsed_s,
                iops,
                ..
            } => {
                if let Some(i) = self.labels.iter().position(|l| *l == host.label) {
                    self.iops[i] = *iops;
                }
                if self.last.elapsed().as_secs_f64() < 1.0 {
                    return None;
                }
                self.last = Instant::now();
                let parts: Vec<String> = self
                    .labels
                    .iter()
                    .zip(&self.iops)
                    .map(|(l, x)| format!("{l} {}", crate::format::si(*x)))
                    .collect();
                Some(format!(
                    "numio: {elapsed_s:>5.1}s  {}  total {} IOPS",
                    parts.join("  "),
                    crate::format::si(self.iops.iter().sum())
                ))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_names_each_host_event_and_totals_the_live_iops_once_a_second() {
        let a = fleet::parse_host("root@a").unwrap();
        let b = fleet::parse_host("b").unwrap();
        let mut p = Progress::new(vec!["root@a".into(), "b".into()]);
        let targets = ["/dev/nvme0n1".to_string()];
        let ready = FleetEvent::Ready {
            host: &a,
            targets: &targets,
            jobs: 2,
        };
        assert_eq!(
            p.line(&ready).as_deref(),
            Some("numio: root@a: ready: /dev/nvme0n1 (2 jobs)")
        );
        let start = FleetEvent::Starting {
            at_unix_ns: 0,
            hosts: 2,
        };
        assert_eq!(
            p.line(&start).as_deref(),
            Some("numio: 2 host(s) start together")
        );
        let live = |host, iops| FleetEvent::Progress {
            host,
            elapsed_s: 1.5,
            iops,
            bandwidth_bytes_per_s: 0.0,
        };
        // Within a second of the last line: kept, not printed.
        p.last = Instant::now();
        assert_eq!(p.line(&live(&a, 1000.0)), None);
        p.last = Instant::now() - std::time::Duration::from_secs(2);
        let line = p.line(&live(&b, 500.0)).unwrap();
        assert!(
            line.ends_with("root@a 1.0k  b 500  total 1.5k IOPS"),
            "{line}"
        );
        assert_eq!(p.line(&live(&a, 10.0)), None, "the next within a second");
    }
}
