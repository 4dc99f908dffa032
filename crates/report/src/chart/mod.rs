//! Charts of a result set, as SVG (and PNG through [`png`]): total IOPS of
//! every run in execution order per arm, run-to-run deviation (stdev % of
//! IOPS) per target and arm, and latency percentile curves per arm on log
//! scales. Every panel has a title, axis titles with units and a legend.

pub mod axis;
mod panels;
pub mod png;
pub mod svg;

use crate::analysis::Analysis;
use crate::model::ResultSet;
use svg::{Anchor, Svg, TextStyle};

/// Width of a chart in px.
pub const WIDTH: f64 = 960.0;
/// Height of one panel in px.
pub const PANEL_HEIGHT: f64 = 300.0;
/// Height of the title band in px.
const TITLE_HEIGHT: f64 = 56.0;
/// Colours of the arms, in order.
pub const COLORS: [&str; 4] = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd"];

/// The plot area of one panel.
#[derive(Debug, Clone, Copy)]
pub struct Frame {
    /// Left edge.
    pub x: f64,
    /// Top edge.
    pub y: f64,
    /// Width.
    pub w: f64,
    /// Height.
    pub h: f64,
}

impl Frame {
    fn panel(index: usize) -> Frame {
        let top = TITLE_HEIGHT + PANEL_HEIGHT * index as f64;
        Frame {
            x: 100.0,
            y: top + 36.0,
            w: WIDTH - 100.0 - 190.0,
            h: PANEL_HEIGHT - 36.0 - 58.0,
        }
    }
    /// Bottom edge.
    pub fn bottom(&self) -> f64 {
        self.y + self.h
    }
    /// Right edge.
    pub fn right(&self) -> f64 {
        self.x + self.w
    }
}

/// Colour of arm `index`.
pub fn color(index: usize) -> &'static str {
    COLORS[index % COLORS.len()]
}

/// Renders the chart of `set` as an SVG document.
pub fn render_svg(set: &ResultSet, analysis: &Analysis) -> String {
    let mut svg = Svg::new(WIDTH, TITLE_HEIGHT + 3.0 * PANEL_HEIGHT);
    let labels: Vec<&str> = set.arms.iter().map(|a| a.label.as_str()).collect();
    let title = match labels.as_slice() {
        [a, b, ..] => format!("numio compare: {a} vs {b}"),
        [a] => format!(
            "numio: {a}, {}",
            crate::format::runs(set.arms[0].runs.len())
        ),
        [] => "numio: no runs".to_string(),
    };
    svg.text(
        WIDTH / 2.0,
        26.0,
        18.0,
        Anchor::Middle,
        &title,
        TextStyle::BOLD,
    );
    let subtitle = match &analysis.comparison {
        Some(c) => c
            .metrics
            .first()
            .map(|m| m.verdict.clone())
            .unwrap_or_default(),
        None => set.command.clone(),
    };
    svg.text(
        WIDTH / 2.0,
        46.0,
        12.0,
        Anchor::Middle,
        &subtitle,
        TextStyle::PLAIN,
    );
    panels::iops_per_run(&mut svg, Frame::panel(0), set, analysis);
    panels::deviation_bars(&mut svg, Frame::panel(1), analysis);
    panels::latency_curves(&mut svg, Frame::panel(2), set);
    svg.finish()
}

/// Draws a legend of `labels` to the right of `frame`.
pub(crate) fn legend(svg: &mut Svg, frame: Frame, labels: &[&str]) {
    let x = frame.right() + 16.0;
    for (i, label) in labels.iter().enumerate() {
        let y = frame.y + 10.0 + 20.0 * i as f64;
        svg.rect(x, y - 9.0, 14.0, 10.0, color(i), None);
        svg.text(x + 20.0, y, 12.0, Anchor::Start, label, TextStyle::PLAIN);
    }
}

/// Draws a panel's title, axis titles and box.
pub(crate) fn frame_titles(svg: &mut Svg, frame: Frame, title: &str, x_title: &str, y_title: &str) {
    svg.text(
        frame.x + frame.w / 2.0,
        frame.y - 14.0,
        14.0,
        Anchor::Middle,
        title,
        TextStyle::BOLD,
    );
    svg.text(
        frame.x + frame.w / 2.0,
        frame.bottom() + 42.0,
        12.0,
        Anchor::Middle,
        x_title,
        TextStyle::PLAIN,
    );
    let (vx, vy) = (frame.x - 74.0, frame.y + frame.h / 2.0);
    svg.text(vx, vy, 12.0, Anchor::Middle, y_title, TextStyle::VERTICAL);
    svg.rect(frame.x, frame.y, frame.w, frame.h, "none", Some("#888888"));
}

/// `--chart FILE`: a `.svg` or `.png` file (the format follows the name).
pub fn parse_chart_path(text: &str) -> Result<std::path::PathBuf, crate::ReportError> {
    let path = std::path::PathBuf::from(text);
    match path.extension().and_then(|e| e.to_str()) {
        Some(e) if e.eq_ignore_ascii_case("svg") || e.eq_ignore_ascii_case("png") => Ok(path),
        _ => Err(crate::ReportError::Invalid {
            what: format!("--chart={text}"),
            reason: "write a chart to a .svg or .png file (the name says the format)".into(),
        }),
    }
}

/// Writes the chart of `set` to `path`: PNG when it ends in `.png`, SVG
/// when it ends in `.svg` (another name is refused). A sweep set gets the sweep's chart
/// (one file per curve of a grid: `STEM-1.EXT`, …), a coalescing sweep its own.
pub fn write_chart(
    set: &ResultSet,
    analysis: &Analysis,
    path: &std::path::Path,
) -> Result<(), crate::ReportError> {
    let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
    let is_png = ext.eq_ignore_ascii_case("png");
    if !is_png && !ext.eq_ignore_ascii_case("svg") {
        return Err(crate::ReportError::Invalid {
            what: path.display().to_string(),
            reason: "a chart is written as .svg or .png (the name says the format); rename it"
                .into(),
        });
    }
    if let Some(c) = &analysis.coalesce {
        return crate::coalesce::chart::write(c, path);
    }
    if !analysis.sweeps.is_empty() {
        crate::sweep::chart::write(&analysis.sweeps, path)?;
        return Ok(());
    }
    let svg = render_svg(set, analysis);
    let bytes = if is_png {
        png::svg_to_png(&svg, path)?
    } else {
        svg.into_bytes()
    };
    std::fs::write(path, bytes).map_err(|source| crate::ReportError::Write {
        path: path.to_path_buf(),
        source,
    })
}
