//! What a target operator reads: [`Target::metrics`] takes the
//! controllers' counter tables (`counters.rs`), the connection count, the
//! namespaces and the ports into a [`MetricsSnapshot`], which renders
//! itself in Prometheus' text format (`numio serve --metrics ADDR` serves
//! it over HTTP).

use std::fmt::Write;
use std::net::SocketAddr;
use std::sync::atomic::Ordering::Relaxed;

use nvme_spec::ana::AnaState;

use super::counters::IoCounters;
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
        }
    }
}

/// A Prometheus label value: backslash, double quote and newline escaped.
fn label(v: &str) -> String {
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

fn ctrl_labels(c: &ControllerMetrics) -> String {
    format!(
        "subsystem=\"{}\",host=\"{}\",cntlid=\"{}\",port=\"{}\"",
        label(&c.subsystem),
        label(&c.host),
        c.cntlid,
        c.port
    )
}
