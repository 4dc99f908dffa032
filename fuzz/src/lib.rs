//! What the fuzz targets share: a host's side of the wire as bytes
//! ([`wire`]), the targets the fuzzers run against and the connections
//! they drive ([`harness`]), and the `auth` target's host operations
//! ([`auth_ops`]) and the session that runs them ([`auth_session`]).
//!
//! The targets live in `fuzz_targets/`; each one is a few lines of glue
//! over this crate.
#![deny(missing_docs)]

pub mod auth_ops;
pub mod auth_session;
pub mod harness;
pub mod wire;
