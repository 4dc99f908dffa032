//! Placement planner.
//!
//! `Topology + Workload → Placement`: which CPUs and which memory policy each
//! job of each target gets. Pure and deterministic: it reads no file of the
//! OS, only the [`topology::Topology`] value it is given, so every policy is
//! tested on fixtures. The result is plain data that can be printed, saved
//! (a versioned plan file), edited and run; it is also written as a fio job
//! file or numactl command lines, and fio job files are read back into it.
//!
//! Entry points: [`plan`] with a [`PlanRequest`]; [`resolve_target`] for a
//! target's NUMA node; [`Placement::load`] and [`Placement::save`].
#![deny(missing_docs)]

pub mod cpuset;
mod error;
pub mod fio;
mod local;
pub mod numactl;
pub mod placement;
pub(crate) mod plan;
pub mod planfile;
mod request;
pub mod resolve;
pub mod workload;

pub use error::{PlanError, PlanFileError};
pub use placement::{JobOptions, JobPlacement, MemPolicy, Placement, TargetPlacement};
pub use plan::plan;
pub use request::{PlanRequest, Policy, TargetSpec};
pub use resolve::{resolve_target, Resolution};
pub use workload::{Distribution, RwMode, Workload};
