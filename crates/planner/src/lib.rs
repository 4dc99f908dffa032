//! Placement planner.
//!
//! `Topology + Workload → Placement`: which CPUs and which memory policy each
//! job of each target gets. Pure and deterministic: it never looks at the
//! running machine, only at the [`topology::Topology`] value it is given (and
//! at the plan or job files it is asked to read), so every policy is tested on
//! fixtures. The result is plain data that can be printed, saved (a versioned
//! plan file), edited and run; it is also written as a fio job file or
//! numactl command lines, and fio job files are read back into it.
//!
//! Entry points:
//! - [`plan`] with a [`PlanRequest`] (policies in [`Policy`]; `local`,
//!   `remote` and `spread` live in their own modules because they have
//!   rules);
//! - [`resolve_target`]: a target's NUMA node from the topology model;
//!   [`resolve_backing`]: a file's or stacked device's, from the NVMe
//!   namespaces the caller found beneath it ([`TargetDevice`]);
//! - [`Placement::load`], [`Placement::save`]: plan files ([`planfile`]);
//! - [`fio`]: job files and fio command lines in ([`fio::load_job_file`],
//!   [`fio::parse_command_line`], [`fio::JobFile::to_placement`]) and out
//!   ([`fio::to_job_file`]);
//! - [`numactl::to_numactl`]: one numactl command line per target.
#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub mod cpuset;
mod error;
pub mod fio;
pub mod flags;
mod local;
pub mod numactl;
pub mod overrides;
pub mod placement;
pub(crate) mod plan;
pub mod planfile;
pub mod reactors;
mod remote;
mod request;
pub mod resolve;
mod spread;
pub mod target_addr;
pub mod workload;

pub use error::{PlacementMismatch, PlanError, PlanFileError, StructureError};
pub use placement::{JobOptions, JobPlacement, MemPolicy, Placement, TargetPlacement};
pub use plan::plan;
pub use request::{PlanRequest, Policy, TargetSpec};
pub use resolve::{
    resolve_backing, resolve_network, resolve_pci, resolve_target, DeviceBacking, NetworkRoute,
    Resolution, TargetDevice,
};
pub use target_addr::{Fabric, TargetAddr};
pub use workload::{Distribution, DistributionError, RwMode, Workload};
