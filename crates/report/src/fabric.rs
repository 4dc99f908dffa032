//! The human view of a study an older `numio fabric` saved (what it
//! printed, and what `numio report` reprints of it): a row per point, its
//! median run by IOPS, with both sides' CPU per I/O and headroom.

use std::fmt::Write;

use fleet::study::{Stack, Study};

/// The table `numio fabric` prints: each point's median run by IOPS.
pub fn render(s: &Study) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "target {} ({}); initiators: {}",
        s.target,
        s.url,
        match (
            s.stack,
            planner::TargetAddr::parse(&s.url).fabric() == Some(planner::Fabric::Rdma),
        ) {
            (Stack::Numio, false) => "numio's tcp backend",
            (Stack::Numio, true) => "numio's rdma backend",
            (Stack::Kernel, false) => "the Linux kernel's nvme-tcp (block device)",
            (Stack::Kernel, true) => "the Linux kernel's nvme-rdma (block device)",
        }
    );
    let cores_axis = s.points.iter().any(|p| p.target_cores.is_some());
    let repeated = s.repeat > 1;
    let mut head = String::new();
    if cores_axis {
        head.push_str(&format!("{:>9} ", "tgt CPUs"));
    }
    head.push_str(&format!(
        "{:>10} {:>10} {:>11} {:>10} {:>10} {:>15} {:>13} {:>15} {:>14} {:>10} {:>15}",
        "initiators",
        "IOPS",
        "bandwidth",
        "p50",
        "p99",
        "workers µs/IO",
        "init µs/IO",
        "init headroom %",
        "tgt µs/IO",
        "tgt cores",
        "tgt headroom %"
    ));
    if repeated {
        head.push_str(&format!(" {:>5} {:>13}", "runs", "IOPS spread %"));
    }
    let _ = writeln!(out, "{head}");
    let opt = |v: Option<f64>, prec: usize| v.map_or("-".to_string(), |v| format!("{v:.prec$}"));
    for runs in s.point_runs() {
        // The median run by IOPS (the lower one of an even count).
        let mut sorted = runs.clone();
        sorted.sort_by(|a, b| a.iops().total_cmp(&b.iops()));
        let p = sorted[(sorted.len() - 1) / 2];
        let Some(m) = &p.fleet.merged else { continue };
        let ops = m.total.ops.max(1) as f64;
        let lat = &m.total.latency.clat;
        let workers = (m.cpu_usage.user_ns + m.cpu_usage.system_ns) as f64 / 1e3 / ops;
        let t = p.target_cpu;
        let mut line = String::new();
        if cores_axis {
            line.push_str(&format!(
                "{:>9} ",
                p.target_cores.map_or("-".to_string(), |k| k.to_string())
            ));
        }
        line.push_str(&format!(
            "{:>10} {:>10} {:>11} {:>10} {:>10} {:>15.2} {:>13} {:>15} {:>14} {:>10} {:>15}",
            p.initiators,
            crate::format::si(m.total.iops),
            crate::format::bandwidth(m.total.bandwidth_bytes_per_s),
            crate::format::latency(lat.at(50.0).unwrap_or(0) as f64),
            crate::format::latency(lat.at(99.0).unwrap_or(0) as f64),
            workers,
            opt(p.initiator_cpu.machine_cpu_ns_per_io.map(|n| n / 1e3), 2),
            opt(p.initiator_cpu.min_headroom_pct, 1),
            opt(t.map(|c| c.process_cpu_s * 1e6 / ops), 2),
            opt(t.map(|c| c.process_cores), 2),
            opt(t.map(|c| c.headroom_pct), 1),
        ));
        if repeated {
            let (lo, hi) = (sorted[0].iops(), sorted[sorted.len() - 1].iops());
            let spread = (m.total.iops > 0.0).then(|| (hi - lo) * 100.0 / m.total.iops);
            line.push_str(&format!(" {:>5} {:>13}", runs.len(), opt(spread, 1)));
        }
        if runs.iter().any(|r| r.fleet.partial) {
            line.push_str("  PARTIAL");
        }
        let _ = writeln!(out, "{line}");
    }
    let mut notes = vec![
        "latency: percentiles of the initiators' merged histograms",
        "workers: the initiators' bench threads' CPU",
        "init: the initiator machines' busy CPU (kernel threads and softirqs too) summed over hosts, and the lowest host's unused share",
        "tgt: the target's numio serve process, and its machine's unused share",
    ];
    if repeated {
        notes.push(
            "each row the median run by IOPS; spread: (max - min) / median IOPS over the runs",
        );
    }
    let _ = writeln!(out, "({})", notes.join("; "));
    out
}
