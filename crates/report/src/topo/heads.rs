//! Multipath heads in a band below the machine, and each path drawn from
//! its controller to its head: out of the controller's right edge, down
//! the gutter right of its node's column, along a lane of its own below
//! the machine, up into the head. A path that some node's I/O takes
//! although it is not a nearest one (as [`topology::multipath`] models the
//! kernel) is drawn in the warning colour.

use topology::doctor::Finding;
use topology::multipath::{self, HeadAudit, Verdict};
use topology::render::decimal_size;
use topology::Topology;

use super::layout::{box_height, HeadBox, Layout, Line, Link, Rect};
use super::marks::{drawn_heads, marks_on, Part};
use super::style::{self, GAP, HEAD_W, PAD, TEXT};

/// Vertical distance between the lanes of two path lines.
const LANE: f64 = 6.0;

fn route_lines(audit: Option<&HeadAudit>) -> Vec<Line> {
    let Some(a) = audit else {
        return Vec::new();
    };
    a.routes
        .iter()
        .map(|r| {
            let taken: Vec<&str> = r
                .taken
                .iter()
                .map(|&i| a.paths[i].device.as_str())
                .collect();
            let taken = if taken.is_empty() {
                "no path".to_string()
            } else {
                taken.join(", ")
            };
            let color = if r.verdict.is_finding() {
                style::PATH_FAR
            } else {
                style::INK
            };
            Line {
                text: format!("node {} I/O → {taken}: {}", r.node, r.verdict.name()),
                color,
            }
        })
        .collect()
}

/// Path indexes some node's I/O takes with a verdict doctor reports.
fn far_paths(audit: Option<&HeadAudit>) -> Vec<usize> {
    audit.map_or_else(Vec::new, |a| {
        a.routes
            .iter()
            .filter(|r| r.verdict.is_finding() && r.verdict != Verdict::NoPath)
            .flat_map(|r| r.taken.iter().copied())
            .collect()
    })
}

/// A head's lines (subsystem, policy, size, each node's route) and the
/// findings marked on it.
fn head_text(
    t: &Topology,
    findings: &[Finding],
    s: &topology::Subsystem,
    ns: &topology::Namespace,
    audit: Option<&HeadAudit>,
) -> (Vec<Line>, Vec<usize>) {
    let policy = s.iopolicy.as_deref().unwrap_or("numa");
    let mut lines = vec![Line {
        text: format!(
            "{} · iopolicy {policy} · {}",
            s.name,
            decimal_size(ns.size_bytes)
        ),
        color: style::MUTED,
    }];
    lines.extend(route_lines(audit));
    for l in &mut lines {
        l.text = style::fit(&l.text, HEAD_W - 2.0 * PAD, TEXT);
    }
    let marks = marks_on(t, findings, &Part::Head(ns.block_device.clone()));
    (lines, marks)
}

/// Adds the heads and their path lines to `layout`, below the machine.
pub fn place(t: &Topology, findings: &[Finding], layout: &mut Layout<'_>) {
    let heads = drawn_heads(t);
    let audits = multipath::audit(t);
    let paths: usize = heads.iter().map(|(_, ns)| ns.paths.len()).sum();
    let lanes_top = layout.machine.bottom() + 10.0;
    let mut x = style::MARGIN;
    let mut y = lanes_top + paths as f64 * LANE + 14.0;
    let mut row_h: f64 = 0.0;
    let mut lane = 0usize;
    let mut gutter_lanes: Vec<(f64, usize)> = Vec::new();
    for (s, ns) in heads {
        let audit = audits.iter().find(|a| a.block_device == ns.block_device);
        let (lines, marks) = head_text(t, findings, s, ns, audit);
        let h = box_height(lines.len(), !marks.is_empty());
        if x + HEAD_W > layout.width - style::MARGIN && x > style::MARGIN {
            x = style::MARGIN;
            y += row_h + GAP;
            row_h = 0.0;
        }
        let rect = Rect { x, y, w: HEAD_W, h };
        let far = far_paths(audit);
        for (i, p) in ns.paths.iter().enumerate() {
            let Some(from) = ctrl_anchor(layout, &p.controller) else {
                continue;
            };
            let gutter = gutter_x(layout, from.0, &mut gutter_lanes);
            let lane_y = lanes_top + lane as f64 * LANE;
            lane += 1;
            let to_x = x + 24.0 + i as f64 * 22.0;
            let usable = audit
                .and_then(|a| a.paths.get(i))
                .is_some_and(|pi| pi.usable);
            let ana = p.ana_state.as_deref().unwrap_or("optimized");
            let (color, dash) = if far.contains(&i) {
                (style::PATH_FAR, false)
            } else if usable {
                (style::PATH_OK, ana != "optimized")
            } else {
                (style::PATH_IDLE, true)
            };
            layout.links.push(Link {
                device: p.device.clone(),
                points: vec![
                    from,
                    (gutter, from.1),
                    (gutter, lane_y),
                    (to_x, lane_y),
                    (to_x, y),
                ],
                color,
                dash,
            });
        }
        layout.heads.push(HeadBox {
            name: ns.block_device.clone(),
            lines,
            rect,
            marks,
        });
        x += HEAD_W + style::COL_GAP;
        row_h = row_h.max(h);
    }
    if !layout.heads.is_empty() {
        layout.bottom = y + row_h;
    }
}

/// The point a path line leaves controller `name` from.
fn ctrl_anchor(layout: &Layout<'_>, name: &str) -> Option<(f64, f64)> {
    let c = layout
        .nodes
        .iter()
        .flat_map(|n| &n.groups)
        .flat_map(|g| &g.ctrls)
        .find(|c| c.ctrl.name == name)?;
    Some((c.rect.right(), c.rect.y + 12.0))
}

/// The x of the next free lane in the gutter right of the node column
/// holding `x`.
fn gutter_x(layout: &Layout<'_>, x: f64, used: &mut Vec<(f64, usize)>) -> f64 {
    let edge = layout
        .nodes
        .iter()
        .map(|n| n.rect.right())
        .filter(|r| *r >= x)
        .fold(f64::INFINITY, f64::min);
    let edge = if edge.is_finite() { edge } else { x };
    let slot = match used.iter_mut().find(|(e, _)| *e == edge) {
        Some((_, n)) => {
            *n += 1;
            *n
        }
        None => {
            used.push((edge, 0));
            0
        }
    };
    let lanes = ((style::COL_GAP - 8.0) / LANE).floor().max(1.0) as usize;
    edge + 6.0 + (slot % lanes) as f64 * LANE
}
