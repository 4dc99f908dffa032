//! What a target operator reads: [`Target::metrics`] takes the
//! controllers' counter tables (`counters.rs`), the connection count, the
//! refusals, the namespaces and the ports into a [`MetricsSnapshot`], which
//! renders itself in Prometheus' text format (`numio serve --metrics ADDR`
//! serves it over HTTP).

use std::fmt::Write;
use std::net::SocketAddr;
use std::sync::atomic::Ordering::Relaxed;

use nvme_spec::ana::AnaState;

use super::counters::{IoCounters, Refused, LATENCY_BOUNDS_NS};
use super::subsystem::Target;

/// One controller's counters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ControllerMetrics {
    /// Subsystem NQN.
    pub subsystem: String,
    /// Host NQN.
    pub host: String,
    /// Controller id.
    pub cntlid: u16,
    /// Port id its admin queue came through.
    pub port: u16,
    /// I/O queues connected.
    pub io_queues: usize,
    /// (qid, nsid, counters), in that order.
    pub queues: Vec<(u16, u32, IoCounters)>,
}

/// One namespace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NamespaceMetrics {
    /// Subsystem NQN.
    pub subsystem: String,
    /// Namespace id.
    pub nsid: u32,
    /// Its backing as configured.
    pub backing: String,
    /// Size in bytes.
    pub size_bytes: u64,
}

/// The target's counters at one moment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetricsSnapshot {
    /// Open connections (queues) over all hosts.
    pub connections: u32,
    /// Live controllers, by cntlid.
    pub controllers: Vec<ControllerMetrics>,
    /// Active namespaces.
    pub namespaces: Vec<NamespaceMetrics>,
    /// Ports: (id, listener, ANA state).
    pub ports: Vec<(u16, SocketAddr, AnaState)>,
    /// Connects refused and sockets closed before serving, by reason.
    pub refusals: Vec<(Refused, u64)>,
    /// Command data buffer bytes held, the limit, and commands that waited.
    pub buffers: (u64, u64, u64),
}

impl Target {
    /// The counters now (each queue's as of its last tick).
    pub fn metrics(&self) -> MetricsSnapshot {
        let mut controllers: Vec<ControllerMetrics> = self
            .controllers()
            .into_iter()
            .filter(|c| !c.subsys.is_discovery)
            .map(|c| ControllerMetrics {
                subsystem: c.subsys.nqn.clone(),
                host: c.hostnqn.clone(),
                cntlid: c.cntlid,
                port: c.port,
                io_queues: c.io_qids.lock().expect("queues lock").len(),
                queues: c.stats.queues.snapshot(),
            })
            .collect();
        controllers.sort_by_key(|c| c.cntlid);
        let namespaces = self
            .subsystems
            .iter()
            .flat_map(|s| {
                s.namespaces.iter().map(|n| NamespaceMetrics {
                    subsystem: s.nqn.clone(),
                    nsid: n.nsid,
                    backing: n.spec.clone(),
                    size_bytes: n.size_bytes(),
                })
            })
            .collect();
        MetricsSnapshot {
            connections: self.connections.load(Relaxed),
            controllers,
            namespaces,
            ports: self
                .ports
                .iter()
                .map(|p| (p.id, p.addr, p.state()))
                .collect(),
            refusals: self.refusals.snapshot(),
            buffers: (
                self.buffers.used(),
                self.buffers.limit(),
                self.buffers.waits(),
            ),
        }
    }
}

/// A Prometheus label value: backslash, double quote and newline escaped.
pub fn label(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// The counters of each series family: name, help, and the value of one
/// queue's counters (with the `op` label where the family has one).
type Family = (
    &'static str,
    &'static str,
    &'static [(&'static str, fn(&IoCounters) -> u64)],
);

const FAMILIES: [Family; 4] = [
    (
        "numio_commands_total",
        "Commands completed successfully, per queue and namespace (nsid 0: admin queue).",
        &[
            ("read", |c| c.reads),
            ("write", |c| c.writes),
            ("other", |c| c.other_commands),
        ],
    ),
    (
        "numio_bytes_total",
        "Bytes of successful reads and writes, per queue and namespace.",
        &[("read", |c| c.read_bytes), ("write", |c| c.written_bytes)],
    ),
    (
        "numio_errors_total",
        "Commands completed with an error status, per queue and namespace.",
        &[("", |c| c.errors)],
    ),
    (
        "numio_digest_failures_total",
        "Commands whose data digest (CRC32C) did not match, per queue and namespace.",
        &[("", |c| c.digest_failures)],
    ),
];

/// `numio serve --metrics ADDR` serves a target's counters until it shuts
/// down.
impl crate::metrics_http::MetricsSource for Target {
    fn metrics_text(&self) -> String {
        self.metrics().to_prometheus()
    }

    fn stopped(&self) -> bool {
        self.shutting_down
            .load(std::sync::atomic::Ordering::Acquire)
    }
}

impl MetricsSnapshot {
    /// Prometheus text exposition format 0.0.4.
    pub fn to_prometheus(&self) -> String {
        let mut out = String::new();
        let w = &mut out;
        let _ = writeln!(
            w,
            "# HELP numio_connections Open NVMe/TCP connections (queues) over all hosts."
        );
        let _ = writeln!(w, "# TYPE numio_connections gauge");
        let _ = writeln!(w, "numio_connections {}", self.connections);
        let _ = writeln!(
            w,
            "# HELP numio_io_queues I/O queues connected, per controller."
        );
        let _ = writeln!(w, "# TYPE numio_io_queues gauge");
        for c in &self.controllers {
            let _ = writeln!(w, "numio_io_queues{{{}}} {}", ctrl_labels(c), c.io_queues);
        }
        self.write_hosts(w);
        self.write_refusals(w);
        let (used, limit, waits) = self.buffers;
        for (name, kind, help, v) in [
            (
                "numio_buffer_bytes",
                "gauge",
                "Command data buffer bytes held over all connections.",
                used,
            ),
            (
                "numio_buffer_limit_bytes",
                "gauge",
                "The limit on them (max_buffer_bytes).",
                limit,
            ),
            (
                "numio_buffer_waits_total",
                "counter",
                "Commands that waited for buffer space under that limit.",
                waits,
            ),
        ] {
            let _ = writeln!(w, "# HELP {name} {help}");
            let _ = writeln!(w, "# TYPE {name} {kind}");
            let _ = writeln!(w, "{name} {v}");
        }
        for (name, help, ops) in FAMILIES {
            let _ = writeln!(w, "# HELP {name} {help}");
            let _ = writeln!(w, "# TYPE {name} counter");
            for c in &self.controllers {
                for (qid, nsid, q) in &c.queues {
                    for (op, value) in ops {
                        if *qid == 0 && matches!(*op, "read" | "write") {
                            continue; // the admin queue moves no data
                        }
                        let op = if op.is_empty() {
                            String::new()
                        } else {
                            format!(",op=\"{op}\"")
                        };
                        let _ = writeln!(
                            w,
                            "{name}{{{},qid=\"{qid}\",nsid=\"{nsid}\"{op}}} {}",
                            ctrl_labels(c),
                            value(q)
                        );
                    }
                }
            }
        }
        self.write_latency(w);
        let _ = writeln!(
            w,
            "# HELP numio_namespace_size_bytes Size of each active namespace."
        );
        let _ = writeln!(w, "# TYPE numio_namespace_size_bytes gauge");
        for n in &self.namespaces {
            let _ = writeln!(
                w,
                "numio_namespace_size_bytes{{subsystem=\"{}\",nsid=\"{}\",backing=\"{}\"}} {}",
                label(&n.subsystem),
                n.nsid,
                label(&n.backing),
                n.size_bytes
            );
        }
        let _ = writeln!(
            w,
            "# HELP numio_port_ana_state ANA state of each port (1 for its current state)."
        );
        let _ = writeln!(w, "# TYPE numio_port_ana_state gauge");
        for (id, addr, state) in &self.ports {
            let _ = writeln!(
                w,
                "numio_port_ana_state{{port=\"{id}\",addr=\"{addr}\",state=\"{state}\"}} 1"
            );
        }
        out
    }
}

impl MetricsSnapshot {
    /// Queues (admin and I/O) each host has connected, over its controllers.
    fn write_hosts(&self, w: &mut String) {
        let mut hosts: std::collections::BTreeMap<&str, usize> = Default::default();
        for c in &self.controllers {
            *hosts.entry(c.host.as_str()).or_default() += 1 + c.io_queues;
        }
        let _ = writeln!(
            w,
            "# HELP numio_host_queues Queues (admin and I/O) connected, per host."
        );
        let _ = writeln!(w, "# TYPE numio_host_queues gauge");
        for (host, n) in hosts {
            let _ = writeln!(w, "numio_host_queues{{host=\"{}\"}} {n}", label(host));
        }
    }

    /// Refusals by reason, and those of a host's identity as auth failures.
    fn write_refusals(&self, w: &mut String) {
        let _ = writeln!(
            w,
            "# HELP numio_refused_total Connects refused and sockets closed before they served a host, by reason."
        );
        let _ = writeln!(w, "# TYPE numio_refused_total counter");
        for (why, n) in &self.refusals {
            let _ = writeln!(w, "numio_refused_total{{reason=\"{}\"}} {n}", why.name());
        }
        let auth: u64 = self
            .refusals
            .iter()
            .filter(|(why, _)| why.is_auth())
            .map(|(_, n)| n)
            .sum();
        let _ = writeln!(
            w,
            "# HELP numio_auth_failures_total Connects refused for the host's identity (not allowed, wrong Host ID) and failed or unfinished DH-HMAC-CHAP transactions."
        );
        let _ = writeln!(w, "# TYPE numio_auth_failures_total counter");
        let _ = writeln!(w, "numio_auth_failures_total {auth}");
    }

    /// Each queue and namespace's latency histogram.
    fn write_latency(&self, w: &mut String) {
        const NAME: &str = "numio_command_latency_seconds";
        let _ = writeln!(
            w,
            "# HELP {NAME} Time in the target from the receive that brought a command to the receive or storage completion that completed it, per queue and namespace."
        );
        let _ = writeln!(w, "# TYPE {NAME} histogram");
        for c in &self.controllers {
            for (qid, nsid, q) in &c.queues {
                let labels = format!("{},qid=\"{qid}\",nsid=\"{nsid}\"", ctrl_labels(c));
                let mut cumulative = 0;
                for (bound, n) in LATENCY_BOUNDS_NS.iter().zip(&q.latency.buckets) {
                    cumulative += n;
                    let le = *bound as f64 / 1e9;
                    let _ = writeln!(w, "{NAME}_bucket{{{labels},le=\"{le}\"}} {cumulative}");
                }
                let count = q.latency.count();
                let _ = writeln!(w, "{NAME}_bucket{{{labels},le=\"+Inf\"}} {count}");
                let sum = q.latency.sum_ns as f64 / 1e9;
                let _ = writeln!(w, "{NAME}_sum{{{labels}}} {sum}");
                let _ = writeln!(w, "{NAME}_count{{{labels}}} {count}");
            }
        }
    }
}

fn ctrl_labels(c: &ControllerMetrics) -> String {
    format!(
        "subsystem=\"{}\",host=\"{}\",cntlid=\"{}\",port=\"{}\"",
        label(&c.subsystem),
        label(&c.host),
        c.cntlid,
        c.port
    )
}
/// One sample of the text format: name, labels, value.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    /// Metric name.
    pub name: String,
    /// Labels in order.
    pub labels: Vec<(String, String)>,
    /// Value.
    pub value: f64,
}

impl Sample {
    /// The value of label `key`; empty when absent.
    pub fn label(&self, key: &str) -> &str {
        self.labels
            .iter()
            .find(|(k, _)| k == key)
            .map_or("", |(_, v)| v.as_str())
    }
}

/// Parses one line of Prometheus' text format (what
/// [`MetricsSnapshot::to_prometheus`] writes; comments skipped); `None` for
/// a line that is not a sample.
pub fn parse_line(line: &str) -> Option<Sample> {
    let line = line.trim();
    if line.is_empty() || line.starts_with('#') {
        return None;
    }
    let (name, rest) = match line.find('{') {
        Some(i) => (&line[..i], &line[i + 1..]),
        None => {
            let (n, v) = line.split_once(' ')?;
            return Some(Sample {
                name: n.into(),
                labels: Vec::new(),
                value: v.trim().parse().ok()?,
            });
        }
    };
    let mut labels = Vec::new();
    let mut chars = rest.char_indices().peekable();
    let end = loop {
        let (start, c) = chars.next()?;
        if c == '}' {
            break start;
        }
        if c == ',' {
            continue;
        }
        let eq = rest[start..].find("=\"")? + start;
        let key = rest[start..eq].to_string();
        while chars.peek().is_some_and(|&(i, _)| i <= eq + 1) {
            chars.next();
        }
        let mut value = String::new();
        loop {
            match chars.next()?.1 {
                '\\' => match chars.next()?.1 {
                    'n' => value.push('\n'),
                    other => value.push(other),
                },
                '"' => break,
                other => value.push(other),
            }
        }
        labels.push((key, value));
    };
    Some(Sample {
        name: name.into(),
        labels,
        value: rest[end + 1..].trim().parse().ok()?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{NamespaceConfig, SubsystemConfig, TargetConfig};

    #[test]
    fn samples_with_escaped_labels() {
        let s = parse_line(r#"numio_x{a="b\"c",d="e,f\\g"} 3"#).unwrap();
        assert_eq!(s.name, "numio_x");
        assert_eq!(
            s.labels,
            [("a".into(), "b\"c".into()), ("d".into(), "e,f\\g".into())]
        );
        assert_eq!(s.label("d"), "e,f\\g");
        assert_eq!(s.label("none"), "");
        assert_eq!(s.value, 3.0);
        assert_eq!(parse_line("numio_connections 2").unwrap().value, 2.0);
        assert!(parse_line("# HELP x y").is_none());
        assert!(parse_line("numio_x{a=\"b\"} not-a-number").is_none());
    }

    /// What the target writes, the parser reads back: every line that is
    /// not a comment is a sample.
    #[test]
    fn the_target_s_text_parses_back() {
        let cfg = TargetConfig {
            subsystems: vec![SubsystemConfig {
                nqn: "nqn.2026-01.io.numio:p".into(),
                serial: "S".into(),
                model: "M".into(),
                allowed_hosts: Vec::new(),
                allow_any_host: true,
                hosts: Vec::new(),
                namespaces: vec![NamespaceConfig::new("mem:1M")],
            }],
            ..Default::default()
        };
        let text = Target::new(&cfg).unwrap().metrics().to_prometheus();
        let lines: Vec<&str> = text.lines().filter(|l| !l.starts_with('#')).collect();
        assert!(lines.len() > 3, "{text}");
        for l in &lines {
            assert!(parse_line(l).is_some(), "{l}");
        }
        let size = lines
            .iter()
            .filter_map(|l| parse_line(l))
            .find(|s| s.name == "numio_namespace_size_bytes")
            .unwrap();
        assert_eq!((size.label("backing"), size.value), ("mem:1M", 1_048_576.0));
    }
}
