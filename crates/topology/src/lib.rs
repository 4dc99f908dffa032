//! Topology discovery.
//!
//! `Topology::discover(root)` reads a sysfs/procfs tree under `root` (`/` for
//! the live machine or a directory holding a snapshot) and returns plain data:
//! NUMA nodes, CPUs, NVMe controllers, subsystems, namespaces, paths, queue
//! and IRQ maps. It never writes, and takes every OS input as a path, so it is
//! tested on fixtures captured from real and emulated machines.
//!
//! Discovery goes through a reader that records every file, directory and
//! symlink it touches ([`Recording`]), so a snapshot ([`snapshot`]) holds
//! exactly what was read and replays to the same model. [`doctor`] turns a
//! model into findings; [`render`] prints the human tree; [`lookup`] answers
//! "which namespace, controllers and nodes is this block device".
//!
//! Module map: `discover/` (nodes and CPUs, IRQs, NVMe controllers,
//! subsystems and namespaces), `reader` (the recording reader) over `source`
//! (a directory or an in-memory snapshot), `parse` (sysfs text formats).
#![deny(missing_docs)]

pub mod cpulist;
mod discover;
pub mod doctor;
pub mod error;
pub mod lookup;
pub mod model;
pub mod parse;
mod reader;
mod recording;
mod relpath;
pub mod render;
pub mod snapshot;
mod source;

pub use cpulist::{CpuList, CpuListError};
pub use error::TopologyError;
pub use model::*;
pub use snapshot::{Manifest, Recording, Root};
