//! Topology discovery.
//!
//! `Topology::discover(root)` reads a sysfs/procfs tree under `root` (`/` for
//! the live machine or a directory holding a snapshot) and returns plain data:
//! NUMA nodes, CPUs, NVMe controllers, subsystems, namespaces, paths, queue
//! and IRQ maps. It never writes, and takes every OS input as a path, so it is
//! tested on fixtures captured from real and emulated machines.
#![deny(missing_docs)]

pub mod model;

pub use model::*;
