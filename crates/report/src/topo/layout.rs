//! Where every box of the machine picture goes: NUMA nodes in a grid of
//! columns inside the machine, PCI roots (or a fabric's group) inside each
//! node, controllers in a grid inside those, multipath heads in a band
//! below, and the path lines routed through the gutters between columns.
//! Pure arithmetic over the model; the drawing module paints the result.

use topology::doctor::Finding;
use topology::{Controller, DeviceNode, Topology, Transport};

use super::labels;
use super::marks::{marks_on, Part};
use super::style::{self, Palette, CTRL_W, GAP, HEADER, LINE, PAD, TEXT};

/// A rectangle.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Rect {
    /// Left.
    pub x: f64,
    /// Top.
    pub y: f64,
    /// Width.
    pub w: f64,
    /// Height.
    pub h: f64,
}

impl Rect {
    /// Right edge.
    pub fn right(&self) -> f64 {
        self.x + self.w
    }
    /// Bottom edge.
    pub fn bottom(&self) -> f64 {
        self.y + self.h
    }
    fn shift(&mut self, dx: f64, dy: f64) {
        self.x += dx;
        self.y += dy;
    }
}

/// One NVMe controller's box.
#[derive(Debug, Clone)]
pub struct CtrlBox<'a> {
    /// The controller.
    pub ctrl: &'a Controller,
    /// Where.
    pub rect: Rect,
    /// Plain lines below the title.
    pub lines: Vec<String>,
    /// Findings marked on it.
    pub marks: Vec<usize>,
    /// Its colours.
    pub palette: Palette,
}

/// A PCI root complex (or a fabric transport) holding controllers.
#[derive(Debug, Clone)]
pub struct Group<'a> {
    /// Title (`PCI root pci0000:00`, `NVMe/TCP`).
    pub title: String,
    /// Where.
    pub rect: Rect,
    /// Its controllers.
    pub ctrls: Vec<CtrlBox<'a>>,
}

/// A NUMA node's box (or the box of controllers of no known node).
#[derive(Debug, Clone)]
pub struct NodeBox<'a> {
    /// Title (`NUMA node 0`).
    pub title: String,
    /// Right of the title (memory).
    pub memory: String,
    /// CPU lines, wrapped.
    pub lines: Vec<String>,
    /// Where.
    pub rect: Rect,
    /// PCI roots and fabric groups.
    pub groups: Vec<Group<'a>>,
    /// Findings marked on it.
    pub marks: Vec<usize>,
    /// Its colours.
    pub palette: Palette,
}

/// A line of text with its colour.
#[derive(Debug, Clone)]
pub struct Line {
    /// The text.
    pub text: String,
    /// Its colour.
    pub color: &'static str,
}

/// A multipath head's box.
#[derive(Debug, Clone)]
pub struct HeadBox {
    /// Head block device.
    pub name: String,
    /// Lines below the title.
    pub lines: Vec<Line>,
    /// Where.
    pub rect: Rect,
    /// Findings marked on it.
    pub marks: Vec<usize>,
}

/// A path line from a controller to its head.
#[derive(Debug, Clone)]
pub struct Link {
    /// Path device (`nvme0c1n1`).
    pub device: String,
    /// The polyline.
    pub points: Vec<(f64, f64)>,
    /// Colour.
    pub color: &'static str,
    /// Dashed (non-optimized, or no I/O).
    pub dash: bool,
}

/// The whole picture's geometry.
#[derive(Debug, Clone)]
pub struct Layout<'a> {
    /// The machine's box.
    pub machine: Rect,
    /// Findings marked on the machine as a whole.
    pub machine_marks: Vec<usize>,
    /// Node boxes.
    pub nodes: Vec<NodeBox<'a>>,
    /// Multipath heads.
    pub heads: Vec<HeadBox>,
    /// Path lines.
    pub links: Vec<Link>,
    /// Width of the picture.
    pub width: f64,
    /// Lowest point drawn so far (the legend goes below).
    pub bottom: f64,
}

/// Height of a box with a title and `lines` body lines.
pub fn box_height(lines: usize, marks: bool) -> f64 {
    6.0 + LINE * (1 + lines + usize::from(marks)) as f64 + 6.0
}

fn ctrl_box<'a>(
    t: &Topology,
    findings: &[Finding],
    c: &'a Controller,
    unknown: bool,
) -> CtrlBox<'a> {
    let marks = marks_on(t, findings, &Part::Controller(c.name.clone()));
    let palette = if unknown {
        style::UNKNOWN_CTRL
    } else if c.transport == Transport::Pcie {
        style::PCIE_CTRL
    } else {
        style::FABRIC_CTRL
    };
    let lines: Vec<String> = labels::controller_lines(t, c)
        .iter()
        .map(|l| style::fit(l, CTRL_W - 2.0 * PAD, TEXT))
        .collect();
    let h = box_height(lines.len(), !marks.is_empty());
    CtrlBox {
        ctrl: c,
        rect: Rect {
            w: CTRL_W,
            h,
            ..Rect::default()
        },
        lines,
        marks,
        palette,
    }
}

/// Controllers side by side in a node: one column up to 8, two up to 24,
/// three beyond.
fn ctrl_columns(count: usize) -> usize {
    match count {
        0..=8 => 1,
        9..=24 => 2,
        _ => 3,
    }
}

/// A group's box at the origin, its controllers placed in `cols` columns.
fn group_box<'a>(title: String, mut ctrls: Vec<CtrlBox<'a>>, cols: usize) -> Group<'a> {
    let mut y = HEADER;
    for row in ctrls.chunks_mut(cols) {
        let h = row.iter().map(|c| c.rect.h).fold(0.0, f64::max);
        for (i, c) in row.iter_mut().enumerate() {
            c.rect.x = PAD + i as f64 * (CTRL_W + GAP);
            c.rect.y = y;
        }
        y += h + GAP;
    }
    let w = 2.0 * PAD + cols as f64 * CTRL_W + (cols - 1) as f64 * GAP;
    Group {
        title,
        rect: Rect {
            w,
            h: y - GAP + PAD,
            ..Rect::default()
        },
        ctrls,
    }
}

/// The controllers of one node (or of none) grouped by PCI root, fabric
/// controllers by transport.
fn groups_of<'a>(
    t: &Topology,
    findings: &[Finding],
    ctrls: &[&'a Controller],
    unknown: bool,
) -> Vec<Group<'a>> {
    let cols = ctrl_columns(ctrls.len());
    let mut keys: Vec<String> = Vec::new();
    let key = |c: &Controller| match (c.transport, c.pci_path.first()) {
        (Transport::Pcie, Some(root)) => format!("PCI root {root}"),
        (Transport::Pcie, None) => "PCIe".to_string(),
        (other, _) => format!("NVMe/{}", other.name().to_uppercase()),
    };
    for c in ctrls {
        let k = key(c);
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    keys.into_iter()
        .map(|k| {
            let members = ctrls
                .iter()
                .filter(|c| key(c) == k)
                .map(|c| ctrl_box(t, findings, c, unknown))
                .collect();
            group_box(k, members, cols)
        })
        .collect()
}

/// A node's box at the origin: title band, CPU lines, then its groups.
fn node_box<'a>(
    t: &'a Topology,
    findings: &[Finding],
    node: Option<&topology::Node>,
) -> NodeBox<'a> {
    let (title, memory, raw_lines, marks, palette, ctrls) = match node {
        Some(n) => (
            format!("NUMA node {}", n.id),
            labels::node_memory(n),
            labels::node_cpu_lines(t, n),
            marks_on(t, findings, &Part::Node(n.id)),
            style::NODE,
            t.controllers
                .iter()
                .filter(|c| c.numa_node == DeviceNode::Known(n.id))
                .collect::<Vec<_>>(),
        ),
        None => (
            homeless_title(t).to_string(),
            String::new(),
            vec![homeless_line(t).to_string()],
            Vec::new(),
            style::UNKNOWN,
            homeless(t),
        ),
    };
    let mut groups = groups_of(t, findings, &ctrls, node.is_none());
    let inner = groups
        .iter()
        .map(|g| g.rect.w)
        .fold(style::NODE_MIN_W - 2.0 * PAD, f64::max);
    let lines: Vec<String> = raw_lines
        .iter()
        .flat_map(|l| style::wrap(l, inner, TEXT))
        .collect();
    let mut y = HEADER + 4.0 + LINE * (lines.len() + usize::from(!marks.is_empty())) as f64 + GAP;
    for g in &mut groups {
        g.rect.w = inner;
        shift_group(g, PAD, y);
        y += g.rect.h + GAP;
    }
    NodeBox {
        title,
        memory,
        lines,
        rect: Rect {
            w: inner + 2.0 * PAD,
            h: y - GAP + PAD,
            ..Rect::default()
        },
        groups,
        marks,
        palette,
    }
}

/// Title of the box of controllers of no online node.
fn homeless_title(t: &Topology) -> &'static str {
    if homeless(t)
        .iter()
        .all(|c| c.numa_node == DeviceNode::Unknown)
    {
        "no NUMA node (numa_node -1)"
    } else {
        "no online NUMA node"
    }
}

/// The line under that title.
fn homeless_line(t: &Topology) -> &'static str {
    if homeless(t)
        .iter()
        .all(|c| c.numa_node == DeviceNode::Unknown)
    {
        "the kernel does not know where these sit"
    } else {
        "numa_node is -1 or names a node that is not online"
    }
}

/// Controllers whose node is -1 or not among the online nodes.
pub fn homeless(t: &Topology) -> Vec<&Controller> {
    t.controllers
        .iter()
        .filter(|c| c.numa_node.node().is_none_or(|n| t.node(n).is_none()))
        .collect()
}

fn shift_group(g: &mut Group<'_>, dx: f64, dy: f64) {
    g.rect.shift(dx, dy);
    for c in &mut g.ctrls {
        c.rect.shift(dx, dy);
    }
}

fn shift_node(n: &mut NodeBox<'_>, dx: f64, dy: f64) {
    n.rect.shift(dx, dy);
    for g in &mut n.groups {
        shift_group(g, dx, dy);
    }
}

/// Lays the machine out (nodes and controllers; [`Layout::heads`] and
/// [`Layout::links`] empty); its top is at `top`.
pub fn build<'a>(t: &'a Topology, findings: &[Finding], top: f64) -> Layout<'a> {
    let mut nodes: Vec<NodeBox<'a>> = t
        .nodes
        .iter()
        .map(|n| node_box(t, findings, Some(n)))
        .collect();
    if !homeless(t).is_empty() {
        nodes.push(node_box(t, findings, None));
    }
    let machine = place_nodes(&mut nodes, top);
    let machine_marks = marks_on(t, findings, &Part::Machine);
    Layout {
        machine,
        machine_marks,
        nodes,
        heads: Vec::new(),
        links: Vec::new(),
        width: style::MIN_WIDTH.max(machine.right() + style::MARGIN),
        bottom: machine.bottom(),
    }
}

/// Places node boxes in a grid of uniform columns inside the machine box
/// (the gutter right of each column carries its path lines); returns the
/// machine's box.
fn place_nodes(nodes: &mut [NodeBox<'_>], top: f64) -> Rect {
    let per_row = style::NODES_PER_ROW.min(nodes.len()).max(1);
    let mut col_w = vec![0.0f64; per_row];
    for (i, n) in nodes.iter().enumerate() {
        col_w[i % per_row] = col_w[i % per_row].max(n.rect.w);
    }
    let left = style::MARGIN + PAD;
    let mut y = top + HEADER + PAD;
    for row in nodes.chunks_mut(per_row) {
        let mut x = left;
        let h = row.iter().map(|n| n.rect.h).fold(0.0, f64::max);
        for (i, n) in row.iter_mut().enumerate() {
            n.rect.w = col_w[i];
            for g in &mut n.groups {
                g.rect.w = col_w[i] - 2.0 * PAD;
            }
            shift_node(n, x, y);
            x += col_w[i] + style::COL_GAP;
        }
        y += h + GAP;
    }
    let w = col_w.iter().sum::<f64>() + per_row as f64 * style::COL_GAP + PAD;
    Rect {
        x: style::MARGIN,
        y: top,
        w,
        h: y - GAP + PAD - top,
    }
}
