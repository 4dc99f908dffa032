//! What the fuzz targets share with the seed generator: a host's side of
//! the wire as bytes ([`wire`]), the targets the fuzzers run against and
//! the connections they drive ([`harness`]), the `auth` target's host
//! operations ([`auth_ops`]) and the session that runs them
//! ([`auth_session`]), the `rdma_queue` target's driver and host
//! ([`rdma`]), what the input-reading targets do with an input
//! ([`inputs`]) under a memory and time budget ([`budget`]), and the
//! committed seed corpus ([`seeds`]).
//!
//! The targets live in `fuzz_targets/`; each one is a few lines of glue
//! over this crate, so the seed generator (`examples/seeds.rs`) and the
//! tests here build exactly the byte streams the targets decode.
#![deny(missing_docs)]

pub mod auth_ops;
pub mod auth_session;
pub mod budget;
pub mod harness;
pub mod inputs;
pub mod rdma;
pub mod seeds;
mod seeds_inputs;
mod seeds_rdma;
pub mod wire;
