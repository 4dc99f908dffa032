//! Reports: merging worker statistics, repeat statistics, A/B comparison and
//! exporters (table, JSON, CSV, SVG).
#![deny(missing_docs)]
