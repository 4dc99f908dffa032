//! PNG output: the SVG chart rasterized with resvg (pure Rust), with the
//! system's fonts for the labels.

use std::path::Path;

use crate::error::ReportError;

/// Scale of the raster relative to the SVG's px (2: sharp on most screens).
pub const SCALE: f32 = 2.0;

/// Whether any system font is installed for the labels (Debian:
/// fonts-dejavu-core).
pub fn system_fonts_available() -> bool {
    let mut db = resvg::usvg::fontdb::Database::new();
    db.load_system_fonts();
    !db.is_empty()
}

/// Rasterizes `svg` to PNG bytes; `path` names the output in errors.
pub fn svg_to_png(svg: &str, path: &Path) -> Result<Vec<u8>, ReportError> {
    let fail = |reason: String| ReportError::Png {
        path: path.to_path_buf(),
        reason,
    };
    let mut options = resvg::usvg::Options::default();
    options.fontdb_mut().load_system_fonts();
    if options.fontdb.is_empty() {
        return Err(fail(
            "no system fonts found for the labels (install fonts-dejavu-core)".to_string(),
        ));
    }
    let tree = resvg::usvg::Tree::from_str(svg, &options).map_err(|e| fail(e.to_string()))?;
    let size = tree
        .size()
        .to_int_size()
        .scale_by(SCALE)
        .ok_or_else(|| fail("empty chart".into()))?;
    let mut pixmap =
        resvg::tiny_skia::Pixmap::new(size.width(), size.height()).ok_or_else(|| {
            fail(format!(
                "cannot allocate {}×{} pixels",
                size.width(),
                size.height()
            ))
        })?;
    let transform = resvg::tiny_skia::Transform::from_scale(SCALE, SCALE);
    resvg::render(&tree, transform, &mut pixmap.as_mut());
    pixmap.encode_png().map_err(|e| fail(e.to_string()))
}
