//! Reports: repeat statistics, A/B comparison, result files and exporters
//! (text table, JSON, CSV, SVG/PNG charts).
//!
//! The crate is pure: it takes runs as values (from the engine or from a
//! saved file) and returns numbers, verdicts and bytes. Running the engine is
//! the binary's job; [`stats`] holds the methods, each named (median, MAD,
//! modified z-score, Welch, Fieller, bootstrap).
#![deny(missing_docs)]

pub mod stats;
