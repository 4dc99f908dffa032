//! The human views of `numio multipath`: per multipath namespace, the
//! paths × CPU nodes table (each path's controller, node, distance from
//! each node, ANA state) and the path each node's I/O takes
//! ([`render`]), and what `--probe` saw ([`render_probe`]).

use std::fmt::Write;

use topology::multipath::probe::NodeProbe;
use topology::multipath::{HeadAudit, IoPolicy, NodeRoute, RouteSource, Verdict};

/// The human table of one head.
pub fn render(h: &HeadAudit) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "/dev/{} ({}): iopolicy {}{}",
        h.block_device,
        h.subsystem,
        h.iopolicy,
        if h.policy.is_none() {
            " (not modelled by numio: each path's node is shown, no choice)"
        } else {
            ""
        }
    );
    let _ = writeln!(out, "  {}", source_line(h));
    let mut rows = vec![header(h)];
    for (i, p) in h.paths.iter().enumerate() {
        let mut row = vec![
            p.device.clone(),
            p.controller.clone(),
            node_text(p.node),
            p.ana_state.clone(),
        ];
        let numa = h.policy == Some(IoPolicy::Numa);
        row.extend(h.routes.iter().map(|r| cell(r, i, numa)));
        rows.push(row);
    }
    out += &table(&rows);
    for r in &h.routes {
        let _ = writeln!(out, "  {}", route_line(h, r));
    }
    out
}

fn source_line(h: &HeadAudit) -> String {
    let has_model = h.routes.iter().any(|r| r.source == RouteSource::Model);
    let has_kernel = h.routes.iter().any(|r| r.source == RouteSource::Kernel);
    let model = "numio's model of drivers/nvme/host/multipath.c";
    match (has_kernel, has_model) {
        (true, false) => "path per node: the kernel's word (numa_nodes)".to_string(),
        (true, true) => format!("path per node: the kernel's word (numa_nodes) where it has chosen; {model} for the nodes it has not (no I/O from them yet)"),
        _ if h.kernel_reports && h.policy != Some(IoPolicy::Numa) => format!("path per node: {model} (the kernel reports numa_nodes under iopolicy numa only)"),
        _ if h.kernel_reports => format!("path per node: {model} (the kernel has chosen for no node yet: no I/O since the paths last changed)"),
        _ => format!("path per node: {model} (this kernel does not report its choice: per-path numa_nodes needs Linux 6.15)"),
    }
}

fn header(h: &HeadAudit) -> Vec<String> {
    let mut row: Vec<String> = ["path", "controller", "node", "ana"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    row.extend(h.routes.iter().map(|r| format!("from node {}", r.node)));
    row
}

fn node_text(n: topology::DeviceNode) -> String {
    match n.node() {
        Some(n) => n.to_string(),
        None => "-1".to_string(),
    }
}

/// `21`, `? (kernel 10) <- taken`, `10 tie`; the distance the kernel
/// compares only under `numa` (the other policies compare none).
fn cell(r: &NodeRoute, i: usize, numa: bool) -> String {
    let mut s = match r.distances[i] {
        Some(d) if d == r.kernel_distances[i] || !numa => d.to_string(),
        Some(d) => format!("{d} (kernel {})", r.kernel_distances[i]),
        None if !numa => "?".to_string(),
        None => format!("? (kernel {})", r.kernel_distances[i]),
    };
    if r.taken.contains(&i) && decided(r) {
        s += " <- taken";
    } else if r.taken.contains(&i) || r.ties.contains(&i) {
        s += " tie";
    }
    s
}

/// Whether the path a node's I/O takes is known: the kernel reports it
/// (`numa_nodes`), or numio's model of the kernel has no tie to break. In
/// a tie the kernel takes the first of its list, an order sysfs does not
/// show, so numio names no path as taken (issue 39: the published
/// powerpc case, where the kernel took the other one).
fn decided(r: &NodeRoute) -> bool {
    r.source == RouteSource::Kernel || r.ties.is_empty()
}

fn route_line(h: &HeadAudit, r: &NodeRoute) -> String {
    let names: Vec<&str> = r
        .taken
        .iter()
        .map(|&i| h.paths[i].device.as_str())
        .collect();
    let ties: Vec<&str> = r.ties.iter().map(|&i| h.paths[i].device.as_str()).collect();
    let what = match r.verdict {
        Verdict::Nearest => "a nearest path".to_string(),
        Verdict::MayNotBeNearest => format!(
            "a nearest path, but it ties with {} (not nearest): the first of the kernel's list wins",
            ties.join(", ")
        ),
        Verdict::NotNearest => "NOT only the nearest path".to_string(),
        Verdict::UnknownNode if !ties.is_empty() => format!(
            "a path of unknown node (-1, which the kernel counts as local); it ties with {}: the first of the kernel's list wins",
            ties.join(", ")
        ),
        Verdict::UnknownNode => {
            "a path of unknown node (-1, which the kernel counts as local)".to_string()
        }
        Verdict::NoPath => "no usable path".to_string(),
    };
    let nearest = r
        .nearest_distance
        .map_or(String::new(), |d| format!(" (nearest known distance {d})"));
    if !decided(r) {
        let all: Vec<&str> = names.iter().chain(&ties).copied().collect();
        let far = match r.verdict {
            Verdict::MayNotBeNearest | Verdict::UnknownNode => "; it may not be the nearest path",
            _ => "",
        };
        return format!(
            "node {}: tie between {}, decided by the kernel's list order, which sysfs does not show (`numio multipath --probe` shows which){far}{nearest}",
            r.node,
            all.join(" and ")
        );
    }
    format!(
        "node {}: {} -> {what}{nearest}",
        r.node,
        if names.is_empty() {
            "-".to_string()
        } else {
            names.join(" + ")
        }
    )
}

/// Left-aligned columns, two spaces apart, indented by two.
pub fn table(rows: &[Vec<String>]) -> String {
    let cols = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..cols)
        .map(|c| {
            rows.iter()
                .filter_map(|r| r.get(c))
                .map(String::len)
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for r in rows {
        let line: Vec<String> = r
            .iter()
            .enumerate()
            .map(|(c, v)| format!("{v:<w$}", w = widths[c]))
            .collect();
        let _ = writeln!(out, "  {}", line.join("  ").trim_end());
    }
    out
}

/// The human lines of a probe.
pub fn render_probe(h: &HeadAudit, probes: &[NodeProbe]) -> String {
    let mut out = format!(
        "  probe (O_DIRECT reads of /dev/{} from each node's CPUs; read I/Os per path):\n",
        h.block_device
    );
    for p in probes {
        let counts: Vec<String> = p
            .paths
            .iter()
            .map(|d| format!("{} {} ({} KiB)", d.device, d.read_ios, d.read_bytes >> 10))
            .collect();
        let verdict = match (p.agrees, &p.tie_went_to) {
            (Some(true), Some(path)) => {
                format!("the tie went to {path}, first in the kernel's list (probe order)")
            }
            (Some(true), None) => "as the audit says".to_string(),
            (Some(false), _) => {
                "DISAGREES with the audit: a finding (the kernel's state differs from the model)"
                    .to_string()
            }
            (None, _) => "nothing to compare".to_string(),
        };
        let carried = if p.carried_by.is_empty() {
            "no path (the reads never reached a path device)".to_string()
        } else {
            p.carried_by.join(" + ")
        };
        let _ = writeln!(
            out,
            "  node {} (cpus {}): read {} KiB: {}; carried by {carried}: {verdict}",
            p.node,
            p.cpus
                .iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join(","),
            p.bytes_read >> 10,
            counts.join(", ")
        );
    }
    out
}

/// `numio multipath`'s output: per head the table (and with `probed` the
/// probe's lines), or as JSON (`heads`, each audit with its probe).
pub fn output(heads: &[HeadAudit], probes: &[Vec<NodeProbe>], probed: bool, json: bool) -> String {
    if json {
        #[derive(serde::Serialize)]
        struct HeadDoc<'a> {
            #[serde(flatten)]
            audit: &'a HeadAudit,
            #[serde(skip_serializing_if = "<[NodeProbe]>::is_empty")]
            probe: &'a [NodeProbe],
        }
        let heads: Vec<HeadDoc<'_>> = heads
            .iter()
            .zip(probes)
            .map(|(audit, probe)| HeadDoc { audit, probe })
            .collect();
        let doc = serde_json::json!({ "heads": heads });
        return serde_json::to_string_pretty(&doc).expect("an audit always serializes") + "\n";
    }
    let mut out = String::new();
    for (h, p) in heads.iter().zip(probes) {
        out += &render(h);
        if probed {
            out += &render_probe(h, p);
        }
    }
    if heads.is_empty() {
        out += "no multipath namespace (native NVMe multipath off, or no shared namespace)\n";
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    use std::path::PathBuf;
    use topology::multipath::audit;
    use topology::Topology;

    fn fixture(name: &str) -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/fixtures/sysfs")
            .join(name)
    }

    #[test]
    fn the_published_case_table_names_the_far_path_and_the_tie() {
        let topo = Topology::load(&fixture("vm-mp-memoryless")).unwrap();
        let text = render(&audit(&topo)[0]);
        assert!(
            text.starts_with("/dev/nvme0n1 (nvme-subsys0): iopolicy numa\n"),
            "{text}"
        );
        assert!(text.contains("numio's model"), "{text}");
        // Node 0 ranks both paths equal: the kernel's list order decides,
        // and on the published machine it took nvme0c1n1, so numio must not
        // name nvme0c0n1 as taken (issue 39).
        assert!(
            text.contains(
                "nvme0c0n1  nvme0       -1    optimized  ? (kernel 10) tie  ? (kernel 10) <- taken"
            ),
            "{text}"
        );
        assert!(
            text.contains("nvme0c1n1  nvme1       0     optimized  10 tie"),
            "{text}"
        );
        assert!(text.contains("node 0: tie between nvme0c0n1 and nvme0c1n1, decided by the kernel's list order, which sysfs does not show (`numio multipath --probe` shows which); it may not be the nearest path"), "{text}");
        assert!(text.contains("node 1: nvme0c0n1 -> a path of unknown node (-1, which the kernel counts as local) (nearest known distance 21)"), "{text}");
    }

    #[test]
    fn round_robin_takes_every_path() {
        let topo = Topology::load(&fixture("2node-multipath-tcp")).unwrap();
        let text = render(&audit(&topo)[0]);
        assert!(text.contains("node 0: nvme0c0n1 + nvme0c1n1 -> NOT only the nearest path (nearest known distance 10)"), "{text}");
    }
}
