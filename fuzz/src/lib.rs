//! What the fuzz targets share: a host's side of the wire as bytes
//! ([`wire`]) and the targets the fuzzers run against and the connections
//! they drive ([`harness`]).
//!
//! The targets live in `fuzz_targets/`; each one is a few lines of glue
//! over this crate.
#![deny(missing_docs)]

pub mod harness;
pub mod wire;
