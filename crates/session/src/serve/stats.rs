//! `numio serve --stats ADDR`: a running target's counters, read from its
//! `--metrics ADDR` endpoint ([`fetch`]) and rendered per controller
//! (subsystem, host) ([`render`]): commands, bytes, errors, digest
//! failures and the mean command latency over all its queues and
//! namespaces, then the refusals, the namespaces and the ports. The
//! endpoint and its parser are `nvmf`'s (`metrics_http`, `tgt::metrics`);
//! the view is here, beside the rest of serve's orchestration, because it
//! writes sizes in `report::format`'s units, and `report` builds without
//! `nvmf`.

use std::collections::BTreeMap;
use std::net::SocketAddr;

use nvmf::tgt::metrics::{parse_line, Sample};
use report::format::bytes;

use super::error::ServeError;

/// Totals of one controller.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
struct Totals {
    io_queues: f64,
    reads: f64,
    writes: f64,
    other: f64,
    read_bytes: f64,
    written_bytes: f64,
    errors: f64,
    digests: f64,
    latency_sum_s: f64,
    latency_count: f64,
}

/// Totals by (subsystem, host, cntlid).
type ByController = BTreeMap<(String, String, u32), Totals>;

/// Per controller (subsystem, host, cntlid), the sum of its series over
/// queues and namespaces; and the connection count.
fn totals(samples: &[Sample]) -> (ByController, Option<f64>) {
    let mut ctrls = ByController::new();
    let mut connections = None;
    for s in samples {
        let field: Option<fn(&mut Totals) -> &mut f64> = match (s.name.as_str(), s.label("op")) {
            ("numio_io_queues", _) => Some(|t| &mut t.io_queues),
            ("numio_commands_total", "read") => Some(|t| &mut t.reads),
            ("numio_commands_total", "write") => Some(|t| &mut t.writes),
            ("numio_commands_total", _) => Some(|t| &mut t.other),
            ("numio_bytes_total", "read") => Some(|t| &mut t.read_bytes),
            ("numio_bytes_total", "write") => Some(|t| &mut t.written_bytes),
            ("numio_errors_total", _) => Some(|t| &mut t.errors),
            ("numio_digest_failures_total", _) => Some(|t| &mut t.digests),
            ("numio_command_latency_seconds_sum", _) => Some(|t| &mut t.latency_sum_s),
            ("numio_command_latency_seconds_count", _) => Some(|t| &mut t.latency_count),
            ("numio_connections", _) => {
                connections = Some(s.value);
                None
            }
            _ => None,
        };
        if let Some(field) = field {
            let cntlid = s.label("cntlid").parse().unwrap_or(0);
            let key = (s.label("subsystem").into(), s.label("host").into(), cntlid);
            *field(ctrls.entry(key).or_default()) += s.value;
        }
    }
    (ctrls, connections)
}

/// The table `numio serve --stats` prints for the metrics text `text`.
pub fn render(text: &str) -> String {
    let samples: Vec<Sample> = text.lines().filter_map(parse_line).collect();
    let (ctrls, connections) = totals(&samples);
    let mut out = String::new();
    if let Some(n) = connections {
        out.push_str(&format!("connections: {n}\n"));
    }
    out.push_str(&format!(
        "{:<32} {:<44} {:>6} {:>4} {:>10} {:>10} {:>10} {:>10} {:>8} {:>7} {:>7} {:>9}\n",
        "subsystem",
        "host",
        "cntlid",
        "ioq",
        "reads",
        "writes",
        "read",
        "written",
        "other",
        "errors",
        "digest",
        "lat avg"
    ));
    for ((subsys, host, cntlid), t) in &ctrls {
        out.push_str(&format!(
            "{subsys:<32} {host:<44} {cntlid:>6} {:>4} {:>10} {:>10} {:>10} {:>10} {:>8} {:>7} {:>7} {:>9}\n",
            t.io_queues,
            t.reads,
            t.writes,
            bytes(t.read_bytes as u64),
            bytes(t.written_bytes as u64),
            t.other,
            t.errors,
            t.digests,
            mean_latency(t)
        ));
    }
    if ctrls.is_empty() {
        out.push_str("(no host connected)\n");
    }
    out.push_str(&refusals(&samples));
    for s in samples
        .iter()
        .filter(|s| s.name == "numio_namespace_size_bytes")
    {
        out.push_str(&format!(
            "namespace {} nsid {} {} {}\n",
            s.label("subsystem"),
            s.label("nsid"),
            s.label("backing"),
            bytes(s.value as u64)
        ));
    }
    for s in samples.iter().filter(|s| s.name == "numio_port_ana_state") {
        out.push_str(&format!(
            "port {} {} ANA {}\n",
            s.label("port"),
            s.label("addr"),
            s.label("state")
        ));
    }
    out
}

/// The mean command latency: "12.3us", or "-" before any command.
fn mean_latency(t: &Totals) -> String {
    if t.latency_count == 0.0 {
        return "-".into();
    }
    format!("{:.1}us", t.latency_sum_s / t.latency_count * 1e6)
}

/// "refused: REASON N, ... (auth failures N)" for the reasons counted, or
/// "refused: none".
fn refusals(samples: &[Sample]) -> String {
    let counted: Vec<String> = samples
        .iter()
        .filter(|s| s.name == "numio_refused_total" && s.value > 0.0)
        .map(|s| format!("{} {}", s.label("reason"), s.value))
        .collect();
    let auth = samples
        .iter()
        .find(|s| s.name == "numio_auth_failures_total")
        .map_or(0.0, |s| s.value);
    if counted.is_empty() {
        return "refused: none\n".into();
    }
    format!("refused: {} (auth failures {auth})\n", counted.join(", "))
}

/// The metrics text of the endpoint at `addr` (`GET /metrics`); an
/// answer other than 200 is an error naming it.
pub fn fetch(addr: SocketAddr) -> Result<String, ServeError> {
    let (code, body) = nvmf::metrics_http::get(addr, "/metrics")?;
    if code != 200 {
        return Err(ServeError::ScrapeStatus { addr, code, body });
    }
    Ok(body)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One controller's queues add up into one row; the refusals, the
    /// namespace and the port follow.
    #[test]
    fn a_controller_is_one_row_over_its_queues() {
        let text = r#"# TYPE numio_connections gauge
numio_connections 2
numio_io_queues{subsystem="nqn.s",host="nqn.h",cntlid="1"} 1
numio_commands_total{subsystem="nqn.s",host="nqn.h",cntlid="1",qid="1",op="read"} 3
numio_commands_total{subsystem="nqn.s",host="nqn.h",cntlid="1",qid="2",op="read"} 4
numio_bytes_total{subsystem="nqn.s",host="nqn.h",cntlid="1",qid="1",op="read"} 2048
numio_command_latency_seconds_sum{subsystem="nqn.s",host="nqn.h",cntlid="1"} 0.000070
numio_command_latency_seconds_count{subsystem="nqn.s",host="nqn.h",cntlid="1"} 7
numio_refused_total{reason="host_not_allowed"} 1
numio_auth_failures_total 0
numio_namespace_size_bytes{subsystem="nqn.s",nsid="1",backing="mem:1M"} 1048576
numio_port_ana_state{port="1",addr="127.0.0.1:4420",state="optimized"} 1
"#;
        let out = render(text);
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines[0], "connections: 2");
        let row: Vec<&str> = lines[2].split_whitespace().collect();
        assert_eq!(
            row,
            [
                "nqn.s", "nqn.h", "1", "1", "7", "0", "2.0", "KiB", "0", "B", "0", "0", "0",
                "10.0us"
            ]
        );
        assert_eq!(lines[3], "refused: host_not_allowed 1 (auth failures 0)");
        assert_eq!(lines[4], "namespace nqn.s nsid 1 mem:1M 1.0 MiB");
        assert_eq!(lines[5], "port 1 127.0.0.1:4420 ANA optimized");
        assert!(render("").contains("(no host connected)\nrefused: none\n"));
    }
}
