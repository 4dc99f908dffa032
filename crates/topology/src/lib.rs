//! Topology discovery and device queries: the one reader of `/sys` and
//! `/proc` in the workspace.
//!
//! `Topology::discover(root)` reads a sysfs/procfs tree under `root` (`/` for
//! the live machine or a directory holding a snapshot) and returns plain data:
//! NUMA nodes, CPUs, NVMe controllers, subsystems, namespaces, paths, queue
//! and IRQ maps. It never writes, and takes every OS input as a path, so it is
//! tested on fixtures captured from real and emulated machines.
//!
//! Beside it, queries about one thing, each over a root too: [`device`] (a
//! block device's facts and queue settings, NVMe namespace ↔ block ↔
//! generic device, multipath heads, and what a device or a file sits on,
//! down to its NVMe controllers' node) and [`host`] (the environment record,
//! the mount table, a CPU's node, a node's CPUs). The engine, `numio serve`
//! and the CLI take plain values from these instead of reading `/sys`.
//! [`counters`] samples the machine's CPU time, context switches and
//! interrupts (per IRQ line and CPU) and a process's threads, to be
//! subtracted around a measured interval.
//! [`CpuList`] is the workspace's one parser and printer of the kernel's CPU
//! list format.
//!
//! Discovery goes through a reader that records every file, directory and
//! symlink it touches ([`Recording`]), so a snapshot ([`snapshot`]) holds
//! exactly what was read and replays to the same model. [`doctor`] turns a
//! model into findings; [`render`] prints the human tree; [`lookup`] answers
//! "which namespace, controllers and nodes is this block device";
//! [`multipath`] models the kernel's multipath path choice per CPU node.
//!
//! [`pci`] answers what VFIO needs: a PCI function's driver, IOMMU group
//! and namespaces, the IOMMU, VFIO modules, hugepages and open files.
//!
//! Module map: `discover/` (nodes and CPUs, IRQs, NVMe controllers,
//! subsystems and namespaces), `device/` and `host` (the queries), `reader`
//! (the recording reader) over `source` (a directory or an in-memory
//! snapshot) and `relpath`, `recording` (what a discovery read, below both
//! `discover` and `snapshot`), `parse` (sysfs text formats), `error`
//! (discovery's errors and the parsers' [`ParseError`]).
#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub mod counters;
pub mod cpulist;
pub mod device;
mod discover;
pub mod doctor;
pub mod error;
pub mod host;
pub mod lookup;
pub mod model;
pub mod multipath;
pub mod parse;
pub mod pci;
mod reader;
mod recording;
mod relpath;
pub mod render;
pub mod snapshot;
pub mod source;

pub use cpulist::{CpuList, CpuListError};
pub use error::{ParseError, TopologyError};
pub use model::*;
pub use snapshot::{Manifest, Recording, Root};
