//! The picture's title, its legend and the list of doctor's findings
//! (numbered as the markers on the parts). Each measures and draws in one
//! pass: given no SVG it only returns the height it needs.

use topology::doctor::Finding;
use topology::Topology;

use super::style::{self, Palette, LINE, TEXT};
use crate::chart::svg::{Anchor, Svg, TextStyle};

/// Height of the title band.
pub const TITLE_H: f64 = 58.0;

/// Lines of a finding at most.
const FINDING_LINES: usize = 3;

/// The title and the one-line summary under it.
pub fn title(svg: &mut Svg, t: &Topology, findings: &[Finding], label: &str, width: f64) {
    let (e, w, i) = count(findings);
    let online = t.cpus.iter().filter(|c| c.online).count();
    let namespaces: usize = t.subsystems.iter().map(|s| s.namespaces.len()).sum();
    let summary = format!(
        "{} NUMA node(s) · {} CPUs ({online} online) · {} NVMe controller(s) · {namespaces} namespace(s) · doctor: {e} error(s), {w} warning(s), {i} info",
        t.nodes.len(),
        t.cpus.len(),
        t.controllers.len()
    );
    let head = style::fit(&format!("numio topo — {label}"), width - 40.0, 18.0);
    svg.text(
        width / 2.0,
        28.0,
        18.0,
        Anchor::Middle,
        &head,
        TextStyle::BOLD,
    );
    let summary = style::fit(&summary, width - 40.0, 12.0);
    svg.text(
        width / 2.0,
        48.0,
        12.0,
        Anchor::Middle,
        &summary,
        TextStyle::PLAIN,
    );
}

fn count(findings: &[Finding]) -> (usize, usize, usize) {
    use topology::doctor::Severity;
    let n = |s: Severity| findings.iter().filter(|f| f.severity == s).count();
    (n(Severity::Error), n(Severity::Warning), n(Severity::Info))
}

enum Swatch {
    Box(Palette),
    Line(&'static str, bool),
    Dot(&'static str),
}

const ITEMS: [(Swatch, &str); 12] = [
    (
        Swatch::Box(style::NODE),
        "NUMA node: cores, CPUs (+SMT siblings), memory",
    ),
    (Swatch::Box(style::PCI), "PCI root complex"),
    (Swatch::Box(style::PCIE_CTRL), "PCIe NVMe controller"),
    (
        Swatch::Box(style::FABRIC_CTRL),
        "fabric controller (NVMe/TCP, RDMA, FC)",
    ),
    (
        Swatch::Box(style::UNKNOWN_CTRL),
        "controller of numa_node -1",
    ),
    (Swatch::Box(style::HEAD), "multipath head (namespace)"),
    (Swatch::Line(style::PATH_OK, false), "path, ANA optimized"),
    (Swatch::Line(style::PATH_OK, true), "path, non-optimized"),
    (
        Swatch::Line(style::PATH_IDLE, true),
        "path the kernel sends no I/O",
    ),
    (
        Swatch::Line(style::PATH_FAR, false),
        "path a node's I/O takes, not nearest",
    ),
    (Swatch::Dot("#c0392b"), "doctor finding: error"),
    (Swatch::Dot("#e67e22"), "warning (blue: info)"),
];

/// The legend from `top`, wrapped to `width`; returns its height.
pub fn legend(mut svg: Option<&mut Svg>, top: f64, width: f64) -> f64 {
    let left = style::MARGIN;
    let (mut x, mut y) = (left, top + 14.0);
    if let Some(svg) = svg.as_deref_mut() {
        svg.text(left, y, 12.0, Anchor::Start, "Legend", TextStyle::BOLD);
    }
    y += LINE + 4.0;
    for (swatch, label) in &ITEMS {
        let w = 30.0 + style::text_width(label, TEXT) + 18.0;
        if x + w > width - style::MARGIN && x > left {
            x = left;
            y += LINE + 4.0;
        }
        if let Some(svg) = svg.as_deref_mut() {
            match swatch {
                Swatch::Box(p) => {
                    svg.rounded_rect((x, y - 10.0, 22.0, 12.0), 2.0, p.fill, p.stroke, 1.2)
                }
                Swatch::Line(c, dash) => {
                    svg.path_line(&[(x, y - 4.0), (x + 22.0, y - 4.0)], c, 2.0, *dash)
                }
                Swatch::Dot(c) => svg.circle(x + 11.0, y - 4.0, 6.0, c),
            }
            svg.text(x + 30.0, y, TEXT, Anchor::Start, label, TextStyle::PLAIN);
        }
        x += w;
    }
    y + 8.0 - top
}

/// The numbered findings from `top`, wrapped to `width`; returns their
/// height.
pub fn findings(mut svg: Option<&mut Svg>, list: &[Finding], top: f64, width: f64) -> f64 {
    let left = style::MARGIN;
    let mut y = top + 14.0;
    let heading = if list.is_empty() {
        "Doctor: no findings (NUMA, multipath, IRQ and queue settings look right)"
    } else {
        "Doctor's findings (numbers as marked on the parts; `numio doctor` has the evidence and the fix)"
    };
    if let Some(svg) = svg.as_deref_mut() {
        svg.text(left, y, 12.0, Anchor::Start, heading, TextStyle::BOLD);
    }
    for (i, f) in list.iter().enumerate() {
        y += LINE + 4.0;
        let text = format!(
            "{} {} · {}: {}",
            f.severity.name(),
            f.code,
            f.subject,
            f.message
        );
        let mut lines = style::wrap(&text, width - 2.0 * style::MARGIN - 22.0, TEXT);
        if lines.len() > FINDING_LINES {
            lines.truncate(FINDING_LINES);
            let last = format!("{} …", lines[FINDING_LINES - 1]);
            lines[FINDING_LINES - 1] = last;
        }
        if let Some(svg) = svg.as_deref_mut() {
            let color = style::severity_color(f.severity);
            svg.circle(left + 7.0, y - 4.0, 7.0, color);
            let number = TextStyle {
                color: "#ffffff",
                bold: true,
                vertical: false,
            };
            svg.text(
                left + 7.0,
                y - 0.5,
                9.0,
                Anchor::Middle,
                &(i + 1).to_string(),
                number,
            );
        }
        for (k, line) in lines.iter().enumerate() {
            if let Some(svg) = svg.as_deref_mut() {
                svg.text(
                    left + 22.0,
                    y + k as f64 * LINE,
                    TEXT,
                    Anchor::Start,
                    line,
                    TextStyle::PLAIN,
                );
            }
        }
        y += (lines.len().max(1) - 1) as f64 * LINE;
    }
    y + 10.0 - top
}
