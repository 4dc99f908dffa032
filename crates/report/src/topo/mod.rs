//! The machine drawn for storage (`numio topo --svg` / `--png`): as
//! lstopo draws a machine, but around the NVMe drives.
//!
//! Each NUMA node is a box with its cores and CPUs (the first thread of
//! each core, then its SMT siblings: `CPU 0–55 (+SMT 224–279)`, long runs
//! collapsed) and memory; under it the PCI root complexes with each NVMe
//! controller at its place (BDF, model, serial, queues, namespaces), and
//! fabric controllers with the NIC their address names. Controllers the
//! kernel puts on no node (`numa_node` -1) get a box and colour of their
//! own. Multipath namespaces are heads in a band below the machine, with a
//! line from every controller of their paths (dashed for non-optimized,
//! grey for a path without I/O, orange for a path some node's I/O takes
//! though it is not a nearest one, as [`topology::multipath`] models the
//! kernel). Doctor's findings are numbered markers on the parts they
//! concern and listed below with the legend.
//!
//! The SVG is written by [`crate::chart::svg`] (escaped text, coordinates
//! to 0.1 px, so the output is stable and golden-tested); PNG is the same
//! SVG rasterized by resvg ([`crate::chart::png`]).
//!
//! Module map: `style` (sizes, colours, text fitting) ← `labels` (the
//! words) ← `marks` (findings → parts) ← `layout` (boxes) ← `heads` (heads
//! and path lines) ← `draw` (painting) and `legend` (title, legend,
//! findings list); this file puts them together.

mod draw;
mod heads;
mod labels;
mod layout;
mod legend;
mod marks;
mod style;

use std::path::Path;

use topology::doctor::Finding;
use topology::Topology;

use crate::chart::svg::Svg;
use crate::ReportError;

pub use labels::cpu_ranges;

/// Renders `t` with doctor's `findings` (in the report's order: the
/// markers are their 1-based numbers) as an SVG document titled `label`
/// (the machine or the snapshot it came from).
pub fn render_svg(t: &Topology, findings: &[Finding], label: &str) -> String {
    let mut l = layout::build(t, findings, legend::TITLE_H);
    heads::place(t, findings, &mut l);
    let width = l.width;
    let legend_top = l.bottom + style::GAP * 2.0;
    let legend_h = legend::legend(None, legend_top, width);
    let findings_top = legend_top + legend_h;
    let findings_h = legend::findings(None, findings, findings_top, width);
    let height = findings_top + findings_h + style::MARGIN;
    let mut svg = Svg::new(width, height);
    legend::title(&mut svg, t, findings, label, width);
    draw::layout(&mut svg, findings, &l, &machine_title(t));
    legend::legend(Some(&mut svg), legend_top, width);
    legend::findings(Some(&mut svg), findings, findings_top, width);
    svg.finish()
}

fn machine_title(t: &Topology) -> String {
    let memory: u64 = t.nodes.iter().map(|n| n.memory_bytes).sum();
    format!("Machine ({})", topology::render::gib(memory))
}

/// Writes the picture of `t` to `path`: PNG when `png`, else SVG.
pub fn write(
    t: &Topology,
    findings: &[Finding],
    label: &str,
    path: &Path,
    png: bool,
) -> Result<(), ReportError> {
    let svg = render_svg(t, findings, label);
    let bytes = if png {
        crate::chart::png::svg_to_png(&svg, path)?
    } else {
        svg.into_bytes()
    };
    std::fs::write(path, bytes).map_err(|source| ReportError::Write {
        path: path.to_path_buf(),
        source,
    })
}
