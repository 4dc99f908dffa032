//! Sizes, colours and the text metrics of the machine picture: one place
//! for the look, below every drawing module.

use topology::doctor::Severity;

/// Outer margin of the picture.
pub const MARGIN: f64 = 20.0;
/// Padding inside a box.
pub const PAD: f64 = 10.0;
/// Gap between boxes side by side (also the lanes of path lines).
pub const COL_GAP: f64 = 40.0;
/// Gap between boxes stacked.
pub const GAP: f64 = 8.0;
/// Width of a controller box.
pub const CTRL_W: f64 = 290.0;
/// Least width of a NUMA node box.
pub const NODE_MIN_W: f64 = 320.0;
/// Width of a multipath head box.
pub const HEAD_W: f64 = 400.0;
/// Font size of body text.
pub const TEXT: f64 = 11.0;
/// Line height of body text.
pub const LINE: f64 = 15.0;
/// Height of a box's title band.
pub const HEADER: f64 = 22.0;
/// Node boxes per row.
pub const NODES_PER_ROW: usize = 4;
/// Least width of the picture (room for the legend and the findings).
pub const MIN_WIDTH: f64 = 980.0;

/// Colours of one kind of box.
#[derive(Debug, Clone, Copy)]
pub struct Palette {
    /// Fill.
    pub fill: &'static str,
    /// Outline and title band.
    pub stroke: &'static str,
}

/// The machine's outer box.
pub const MACHINE: Palette = Palette {
    fill: "#fafafa",
    stroke: "#555555",
};
/// A NUMA node (lstopo's green).
pub const NODE: Palette = Palette {
    fill: "#eef6ea",
    stroke: "#5b8f4a",
};
/// The box of controllers whose node the kernel does not know (-1).
pub const UNKNOWN: Palette = Palette {
    fill: "#fdecea",
    stroke: "#c0392b",
};
/// A PCI root complex.
pub const PCI: Palette = Palette {
    fill: "#f2f2f2",
    stroke: "#9a9a9a",
};
/// A PCIe NVMe controller.
pub const PCIE_CTRL: Palette = Palette {
    fill: "#e4edf8",
    stroke: "#4a6fa5",
};
/// A fabric (NVMe/TCP, RDMA, FC, loop) controller.
pub const FABRIC_CTRL: Palette = Palette {
    fill: "#efe6f8",
    stroke: "#7a4aa5",
};
/// A controller of node -1.
pub const UNKNOWN_CTRL: Palette = Palette {
    fill: "#f8d4cf",
    stroke: "#c0392b",
};
/// A multipath head.
pub const HEAD: Palette = Palette {
    fill: "#fff6dc",
    stroke: "#b8860b",
};
/// A path the kernel may use (ANA optimized or non-optimized).
pub const PATH_OK: &str = "#2c7fb8";
/// A path the kernel sends no I/O to.
pub const PATH_IDLE: &str = "#a0a0a0";
/// A path some node's I/O takes although it is not a nearest one.
pub const PATH_FAR: &str = "#e67e22";
/// Body text.
pub const INK: &str = "#222222";
/// Secondary text.
pub const MUTED: &str = "#555555";

/// Colour of a finding's marker.
pub fn severity_color(s: Severity) -> &'static str {
    match s {
        Severity::Error => "#c0392b",
        Severity::Warning => "#e67e22",
        Severity::Info => "#2e86c1",
    }
}

/// Estimated width in px of `text` at `size` px (DejaVu Sans averages
/// about 0.6 em per character of these labels; a slight overestimate
/// keeps text inside its box).
pub fn text_width(text: &str, size: f64) -> f64 {
    text.chars().count() as f64 * size * 0.6
}

/// `text` cut with `…` so it fits `width` px at `size` px.
pub fn fit(text: &str, width: f64, size: f64) -> String {
    let max = (width / (size * 0.6)).floor().max(1.0) as usize;
    if text.chars().count() <= max {
        return text.to_string();
    }
    let kept: String = text.chars().take(max.saturating_sub(1)).collect();
    format!("{}…", kept.trim_end())
}

/// `text` wrapped at spaces (or at `sep` inside a long word list) into
/// lines of at most `width` px at `size` px; a word longer than a line is
/// cut by [`fit`].
pub fn wrap(text: &str, width: f64, size: f64) -> Vec<String> {
    let max = (width / (size * 0.6)).floor().max(1.0) as usize;
    let mut lines: Vec<String> = Vec::new();
    let mut line = String::new();
    for word in text.split(' ').filter(|w| !w.is_empty()) {
        let needed = line.chars().count() + word.chars().count() + usize::from(!line.is_empty());
        if needed > max && !line.is_empty() {
            lines.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    if !line.is_empty() {
        lines.push(line);
    }
    lines.into_iter().map(|l| fit(&l, width, size)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fit_cuts_with_an_ellipsis_and_keeps_short_text() {
        assert_eq!(fit("nvme0", 100.0, 10.0), "nvme0");
        let cut = fit("SAMSUNG MZWLO3T8HCLS-00A07 fw 2.1.8", 60.0, 10.0);
        assert_eq!(cut, "SAMSUNG M…");
        assert!(text_width(&cut, 10.0) <= 60.0);
    }

    #[test]
    fn wrap_breaks_at_spaces_within_the_width() {
        let lines = wrap("one two three four five six", 60.0, 10.0);
        assert_eq!(lines, ["one two", "three four", "five six"]);
        assert!(lines.iter().all(|l| text_width(l, 10.0) <= 60.0));
    }
}
