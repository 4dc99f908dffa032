//! Reports: repeat statistics, A/B comparison, result files and exporters
//! (text table, JSON, CSV, SVG/PNG charts).
//!
//! The crate is pure: it takes runs as values (from the engine or from a
//! saved file) and returns numbers, verdicts and bytes. Running the engine is
//! the binary's job; [`stats`] holds the methods, each named (median, MAD,
//! modified z-score, Welch, Fieller, bootstrap).
#![deny(missing_docs)]

pub mod stats;

pub mod analysis;
pub mod chart;
pub mod compare;
pub mod error;
pub mod export;
pub mod file;
pub mod format;
pub mod model;
pub mod repeat;

pub use analysis::{analyze, Analysis};
pub use error::ReportError;
pub use export::{CsvExporter, Exporter, JsonExporter, SvgExporter, TextExporter};
pub use model::{Arm, LatencyPoint, ResultSet, RunRecord, SetKind, TargetMetrics};
pub mod arm;
pub mod from_engine;
