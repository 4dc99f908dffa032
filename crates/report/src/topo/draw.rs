//! Paints a [`Layout`]: the machine, its node boxes with CPU lines, PCI
//! roots and controllers, the multipath heads and path lines, and the
//! numbered markers of doctor's findings on the parts they concern.

use topology::doctor::Finding;

use super::layout::{CtrlBox, Group, HeadBox, Layout, NodeBox, Rect};
use super::style::{self, Palette, HEADER, LINE, PAD, TEXT};
use crate::chart::svg::{Anchor, Svg, TextStyle};

const WHITE_BOLD: TextStyle = TextStyle {
    color: "#ffffff",
    bold: true,
    vertical: false,
};

fn plain(color: &'static str) -> TextStyle {
    TextStyle {
        color,
        bold: false,
        vertical: false,
    }
}

fn bold(color: &'static str) -> TextStyle {
    TextStyle {
        color,
        bold: true,
        vertical: false,
    }
}

fn bounds(r: Rect) -> (f64, f64, f64, f64) {
    (r.x, r.y, r.w, r.h)
}

/// A box with a coloured title band (lstopo's look for nodes and the
/// machine); `right` is written right-aligned in the band.
fn banded_box(svg: &mut Svg, r: Rect, p: Palette, title: &str, right: &str) {
    svg.rounded_rect(bounds(r), 4.0, p.fill, p.stroke, 1.5);
    svg.rounded_rect((r.x, r.y, r.w, HEADER), 4.0, p.stroke, p.stroke, 1.0);
    svg.text(
        r.x + PAD,
        r.y + 15.5,
        13.0,
        Anchor::Start,
        title,
        WHITE_BOLD,
    );
    if !right.is_empty() {
        let room = r.w - 2.0 * PAD - style::text_width(title, 13.0) - PAD;
        let right = style::fit(right, room.max(20.0), 12.0);
        svg.text(
            r.right() - PAD,
            r.y + 15.5,
            12.0,
            Anchor::End,
            &right,
            WHITE_BOLD,
        );
    }
}

/// Numbered markers (and, where they fit, the codes) of `marks` on a line
/// from `x` to `right` with baseline `y`.
pub fn markers(svg: &mut Svg, findings: &[Finding], marks: &[usize], x: f64, y: f64, right: f64) {
    let mut x = x;
    for &n in marks {
        let Some(f) = findings.get(n - 1) else {
            continue;
        };
        let color = style::severity_color(f.severity);
        svg.circle(x + 6.0, y - 4.0, 6.5, color);
        svg.text(
            x + 6.0,
            y - 0.5,
            9.0,
            Anchor::Middle,
            &n.to_string(),
            WHITE_BOLD,
        );
        x += 15.0;
        let room = right - x;
        if style::text_width(&f.code, TEXT) + 8.0 <= room {
            svg.text(x, y, TEXT, Anchor::Start, &f.code, bold(color));
            x += style::text_width(&f.code, TEXT) + 8.0;
        }
    }
}

fn ctrl(svg: &mut Svg, findings: &[Finding], c: &CtrlBox<'_>) {
    let r = c.rect;
    svg.comment(&format!(
        "controller {} serial {}",
        c.ctrl.name, c.ctrl.serial
    ));
    svg.rounded_rect(bounds(r), 3.0, c.palette.fill, c.palette.stroke, 1.2);
    let title = style::fit(
        &super::labels::controller_title(c.ctrl),
        r.w - 2.0 * PAD,
        12.0,
    );
    let mut y = r.y + 6.0 + 11.0;
    svg.text(r.x + PAD, y, 12.0, Anchor::Start, &title, bold(style::INK));
    for line in &c.lines {
        y += LINE;
        svg.text(r.x + PAD, y, TEXT, Anchor::Start, line, plain(style::INK));
    }
    if !c.marks.is_empty() {
        markers(
            svg,
            findings,
            &c.marks,
            r.x + PAD,
            y + LINE,
            r.right() - PAD,
        );
    }
}

fn group(svg: &mut Svg, findings: &[Finding], g: &Group<'_>) {
    let r = g.rect;
    svg.rounded_rect(bounds(r), 3.0, style::PCI.fill, style::PCI.stroke, 1.0);
    let title = style::fit(&g.title, r.w - 2.0 * PAD, TEXT);
    svg.text(
        r.x + PAD,
        r.y + 15.0,
        TEXT,
        Anchor::Start,
        &title,
        bold(style::MUTED),
    );
    for c in &g.ctrls {
        ctrl(svg, findings, c);
    }
}

fn node(svg: &mut Svg, findings: &[Finding], n: &NodeBox<'_>) {
    svg.comment(&n.title);
    banded_box(svg, n.rect, n.palette, &n.title, &n.memory);
    let mut y = n.rect.y + HEADER + 4.0;
    for line in &n.lines {
        y += LINE;
        svg.text(
            n.rect.x + PAD,
            y - 3.0,
            TEXT,
            Anchor::Start,
            line,
            plain(style::INK),
        );
    }
    if !n.marks.is_empty() {
        y += LINE;
        markers(
            svg,
            findings,
            &n.marks,
            n.rect.x + PAD,
            y - 3.0,
            n.rect.right() - PAD,
        );
    }
    for g in &n.groups {
        group(svg, findings, g);
    }
}

fn head(svg: &mut Svg, findings: &[Finding], h: &HeadBox) {
    let r = h.rect;
    svg.comment(&format!("multipath head {}", h.name));
    svg.rounded_rect(bounds(r), 3.0, style::HEAD.fill, style::HEAD.stroke, 1.2);
    let mut y = r.y + 6.0 + 11.0;
    let title = format!("{}  multipath head", h.name);
    svg.text(r.x + PAD, y, 12.0, Anchor::Start, &title, bold(style::INK));
    for line in &h.lines {
        y += LINE;
        svg.text(
            r.x + PAD,
            y,
            TEXT,
            Anchor::Start,
            &line.text,
            plain(line.color),
        );
    }
    if !h.marks.is_empty() {
        markers(
            svg,
            findings,
            &h.marks,
            r.x + PAD,
            y + LINE,
            r.right() - PAD,
        );
    }
}

/// Paints the machine, its parts, the heads and the path lines.
pub fn layout(svg: &mut Svg, findings: &[Finding], l: &Layout<'_>, title: &str) {
    banded_box(svg, l.machine, style::MACHINE, title, "");
    if !l.machine_marks.is_empty() {
        let x = l.machine.x + PAD + style::text_width(title, 13.0) + PAD;
        let right = l.machine.right() - PAD;
        markers_on_band(
            svg,
            findings,
            &l.machine_marks,
            x,
            l.machine.y + 15.5,
            right,
        );
    }
    for n in &l.nodes {
        node(svg, findings, n);
    }
    for h in &l.heads {
        head(svg, findings, h);
    }
    for link in &l.links {
        svg.comment(&format!("path {}", link.device));
        svg.path_line(&link.points, link.color, 2.0, link.dash);
        if let Some(&(x, y)) = link.points.first() {
            svg.circle(x, y, 3.0, link.color);
        }
    }
}

/// Markers on the machine's dark title band: numbers only, in a white
/// ring so they read on the band.
fn markers_on_band(
    svg: &mut Svg,
    findings: &[Finding],
    marks: &[usize],
    x: f64,
    y: f64,
    right: f64,
) {
    let mut x = x;
    for &n in marks {
        let Some(f) = findings.get(n - 1) else {
            continue;
        };
        if x + 14.0 > right {
            break;
        }
        svg.circle(x + 6.0, y - 4.0, 7.0, "#ffffff");
        svg.circle(x + 6.0, y - 4.0, 6.0, style::severity_color(f.severity));
        svg.text(
            x + 6.0,
            y - 0.5,
            9.0,
            Anchor::Middle,
            &n.to_string(),
            WHITE_BOLD,
        );
        x += 17.0;
    }
}
