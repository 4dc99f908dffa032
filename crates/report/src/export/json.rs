//! JSON: the result set with every run, plus the analysis computed from it
//! (ignored when the file is read back: it is recomputed).

use std::io::Write;

use serde::Serialize;

use super::{io_error, Exporter};
use crate::analysis::{analyze, Analysis};
use crate::error::ReportError;
use crate::model::ResultSet;

/// Pretty JSON, one file per result set.
#[derive(Debug, Clone, Copy, Default)]
pub struct JsonExporter;

#[derive(Serialize)]
struct WithAnalysis<'a> {
    #[serde(flatten)]
    set: &'a ResultSet,
    analysis: Analysis,
}

impl Exporter for JsonExporter {
    fn name(&self) -> &'static str {
        "json"
    }
    fn export(&self, set: &ResultSet, out: &mut dyn Write) -> Result<(), ReportError> {
        let doc = WithAnalysis {
            set,
            analysis: analyze(set),
        };
        serde_json::to_writer_pretty(&mut *out, &doc).map_err(|e| io_error(e.into()))?;
        out.write_all(b"\n").map_err(io_error)
    }
}
