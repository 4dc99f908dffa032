//! Placement planner.
//!
//! `Topology + Workload → Placement`: which CPUs and which memory policy each
//! job of each target gets. Pure and deterministic; also reads and writes fio
//! job files and numactl command lines.
#![deny(missing_docs)]

pub mod placement;
pub mod workload;

pub use placement::{JobPlacement, MemPolicy, Placement, TargetPlacement};
pub use workload::{Distribution, RwMode, Workload};
