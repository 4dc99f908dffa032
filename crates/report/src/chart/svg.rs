//! A minimal SVG writer: the few shapes the charts use, with escaped text
//! and coordinates rounded to 0.1 px so output is stable across platforms.

use std::fmt::Write as _;

/// Font stack of every label (DejaVu Sans ships with most Linux systems).
pub const FONT: &str = "DejaVu Sans, Liberation Sans, Arial, sans-serif";

/// Text anchor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Anchor {
    /// Left edge at x.
    Start,
    /// Centred on x.
    Middle,
    /// Right edge at x.
    End,
}

impl Anchor {
    fn as_str(self) -> &'static str {
        match self {
            Anchor::Start => "start",
            Anchor::Middle => "middle",
            Anchor::End => "end",
        }
    }
}

/// An SVG document being written.
#[derive(Debug, Clone)]
pub struct Svg {
    body: String,
    width: f64,
    height: f64,
}

/// Escapes text for XML; control characters, which XML 1.0 does not
/// allow (a model string read from a device may hold them), become `?`.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            c if c.is_control() => out.push('?'),
            c => out.push(c),
        }
    }
    out
}

impl Svg {
    /// An empty document of `width` × `height` px on a white background.
    pub fn new(width: f64, height: f64) -> Self {
        let mut svg = Svg {
            body: String::new(),
            width,
            height,
        };
        svg.rect(0.0, 0.0, width, height, "#ffffff", None);
        svg
    }

    /// A filled rectangle, optionally stroked.
    pub fn rect(&mut self, x: f64, y: f64, w: f64, h: f64, fill: &str, stroke: Option<&str>) {
        let stroke = stroke.map_or(String::new(), |s| format!(" stroke=\"{s}\""));
        let _ = writeln!(
            self.body,
            "<rect x=\"{x:.1}\" y=\"{y:.1}\" width=\"{w:.1}\" height=\"{h:.1}\" fill=\"{fill}\"{stroke}/>"
        );
    }

    /// A straight line; `dash` draws it dashed.
    pub fn line(&mut self, from: (f64, f64), to: (f64, f64), stroke: &str, width: f64, dash: bool) {
        let dash = if dash {
            " stroke-dasharray=\"4 3\""
        } else {
            ""
        };
        let ((x1, y1), (x2, y2)) = (from, to);
        let _ = writeln!(
            self.body,
            "<line x1=\"{x1:.1}\" y1=\"{y1:.1}\" x2=\"{x2:.1}\" y2=\"{y2:.1}\" stroke=\"{stroke}\" stroke-width=\"{width:.1}\"{dash}/>"
        );
    }

    /// An open polyline through `points`.
    pub fn polyline(&mut self, points: &[(f64, f64)], stroke: &str, width: f64) {
        let pts: Vec<String> = points
            .iter()
            .map(|(x, y)| format!("{x:.1},{y:.1}"))
            .collect();
        let _ = writeln!(
            self.body,
            "<polyline points=\"{}\" fill=\"none\" stroke=\"{stroke}\" stroke-width=\"{width:.1}\"/>",
            pts.join(" ")
        );
    }

    /// A filled circle.
    pub fn circle(&mut self, cx: f64, cy: f64, r: f64, fill: &str) {
        let _ = writeln!(
            self.body,
            "<circle cx=\"{cx:.1}\" cy=\"{cy:.1}\" r=\"{r:.1}\" fill=\"{fill}\"/>"
        );
    }

    /// An unfilled circle.
    pub fn ring(&mut self, cx: f64, cy: f64, r: f64, stroke: &str) {
        let _ = writeln!(
            self.body,
            "<circle cx=\"{cx:.1}\" cy=\"{cy:.1}\" r=\"{r:.1}\" fill=\"none\" stroke=\"{stroke}\" stroke-width=\"1.5\"/>"
        );
    }

    /// Text at (x, y) (baseline), `size` px, optionally bold and rotated −90°.
    pub fn text(
        &mut self,
        x: f64,
        y: f64,
        size: f64,
        anchor: Anchor,
        text: &str,
        style: TextStyle,
    ) {
        let weight = if style.bold {
            " font-weight=\"bold\""
        } else {
            ""
        };
        let rotate = if style.vertical {
            format!(" transform=\"rotate(-90 {x:.1} {y:.1})\"")
        } else {
            String::new()
        };
        let _ = writeln!(
            self.body,
            "<text x=\"{x:.1}\" y=\"{y:.1}\" font-size=\"{size:.1}\" text-anchor=\"{}\" fill=\"{}\"{weight}{rotate}>{}</text>",
            anchor.as_str(),
            style.color,
            escape(text)
        );
    }

    /// A rectangle with rounded corners (`radius`), a fill and a stroke of
    /// `stroke_width` px.
    pub fn rounded_rect(
        &mut self,
        bounds: (f64, f64, f64, f64),
        radius: f64,
        fill: &str,
        stroke: &str,
        stroke_width: f64,
    ) {
        let (x, y, w, h) = bounds;
        let _ = writeln!(
            self.body,
            "<rect x=\"{x:.1}\" y=\"{y:.1}\" width=\"{w:.1}\" height=\"{h:.1}\" rx=\"{radius:.1}\" fill=\"{fill}\" stroke=\"{stroke}\" stroke-width=\"{stroke_width:.1}\"/>"
        );
    }

    /// An open polyline through `points` of `width` px, dashed when `dash`.
    pub fn path_line(&mut self, points: &[(f64, f64)], stroke: &str, width: f64, dash: bool) {
        let pts: Vec<String> = points
            .iter()
            .map(|(x, y)| format!("{x:.1},{y:.1}"))
            .collect();
        let dash = if dash {
            " stroke-dasharray=\"6 4\""
        } else {
            ""
        };
        let _ = writeln!(
            self.body,
            "<polyline points=\"{}\" fill=\"none\" stroke=\"{stroke}\" stroke-width=\"{width:.1}\" stroke-linejoin=\"round\"{dash}/>",
            pts.join(" ")
        );
    }

    /// An XML comment (escaped), e.g. to name the part drawn next.
    pub fn comment(&mut self, text: &str) {
        let _ = writeln!(self.body, "<!-- {} -->", escape(text).replace("--", "- -"));
    }

    /// The finished document.
    pub fn finish(self) -> String {
        format!(
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w:.0}\" height=\"{h:.0}\" viewBox=\"0 0 {w:.0} {h:.0}\" font-family=\"{FONT}\">\n{}</svg>\n",
            self.body,
            w = self.width,
            h = self.height
        )
    }
}

/// How text is drawn.
#[derive(Debug, Clone, Copy)]
pub struct TextStyle {
    /// Fill colour.
    pub color: &'static str,
    /// Bold.
    pub bold: bool,
    /// Rotated −90° (axis titles).
    pub vertical: bool,
}

impl TextStyle {
    /// Dark grey, regular, horizontal.
    pub const PLAIN: TextStyle = TextStyle {
        color: "#222222",
        bold: false,
        vertical: false,
    };
    /// Dark grey, bold.
    pub const BOLD: TextStyle = TextStyle {
        color: "#111111",
        bold: true,
        vertical: false,
    };
    /// Dark grey, rotated.
    pub const VERTICAL: TextStyle = TextStyle {
        color: "#222222",
        bold: false,
        vertical: true,
    };
}
