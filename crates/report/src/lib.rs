//! Reports: repeat statistics, A/B comparison, result files and exporters
//! (text table, JSON, CSV, SVG/PNG charts).
//!
//! The crate is pure: it takes runs as values (an engine run's
//! `results::RunResult` through [`from_engine`], or a saved file through
//! [`mod@file`]) and returns numbers, verdicts and bytes. It reads the
//! result model from the `results` crate, not the engine, so it builds
//! without io_uring or the NVMe/TCP host. Running the engine is the `session` crate's
//! job; this crate only fixes the order live arms run in
//! ([`arm::interleave`], which the session follows).
//!
//! The way through:
//! * [`model`]: the result set saved as one JSON file: arms, every run, per
//!   target and total (versioned schema);
//! * [`stats`]: the methods, each named: summary (mean, median, sample stdev,
//!   CV), outliers by modified z-score over the MAD, Student t (from
//!   `statrs`), Welch's t-test with Welch–Satterthwaite df, Fieller's ratio
//!   interval, seeded percentile bootstrap, Mann–Kendall drift over run
//!   order;
//! * [`repeat`] (one arm over its runs) and [`compare`] (two arms, with a
//!   plain verdict), gathered by [`analysis`];
//! * [`sweep`]: a curve of points (one arm each) over an axis: efficiency,
//!   knee, saturation, CPU headroom, its table and chart;
//! * [`coalesce`]: a coalescing sweep (threshold × drives busy at once):
//!   a table per device count, the recommended threshold with its
//!   evidence, its chart;
//! * [`bench`]: the human view of one bench run (what `numio bench` prints
//!   and `numio report` reprints);
//! * [`steady`]: steady-state criteria (SNIA PTS, fio's `iops` and
//!   `iops_slope`) as pure functions; [`precondition`]: a preconditioning
//!   run's file, its per-drive verdicts and its view;
//! * [`export`]: one [`Exporter`] trait, four formats; [`chart`] draws the
//!   SVG (and rasterizes it to PNG); both write numbers through [`mod@format`];
//! * [`topo`]: the machine drawn for storage (`numio topo --svg`/`--png`),
//!   from a `topology::Topology` and its doctor findings.
#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub mod analysis;
pub mod anomalies;
pub mod arm;
pub mod bench;
pub mod chart;
pub mod coalesce;
pub mod compare;
pub mod error;
pub mod export;
pub mod fabric;
pub mod file;
pub mod fleet;
pub mod format;
pub mod from_engine;
pub mod intervals;
pub mod model;
pub mod multipath;
pub mod output;
pub mod plan;
pub mod precondition;
pub mod repeat;
pub mod stats;
pub mod steady;
pub mod sweep;
pub mod topo;
pub mod vfio;

pub use analysis::{analyze, Analysis};
pub use error::ReportError;
pub use export::{CsvExporter, Exporter, JsonExporter, SvgExporter, TextExporter};
pub use model::{
    Arm, FleetSweepSpec, LatencyPoint, ResultSet, RunRecord, SetKind, SweepAxis, SweepGoal,
    SweepSpec, TargetMetrics,
};
