//! Device settings numio changes, and the promise to put them back.
//!
//! Two settings: a controller's driver ([`vfio`]: handed to vfio-pci for
//! numio's user-space driver, and given back, with the hugepages it
//! needs), and NVMe Interrupt Coalescing (Feature 0x08) of PCIe
//! controllers, read and written with Get/Set Features through the
//! controller's character device (`/dev/nvme0`), beside each I/O queue
//! vector's Coalescing Disable bit (Feature 0x09, read only). This crate
//! owns everything between the user's names and the admin commands:
//!
//! - [`controller`]: who a controller is (name, PCI address, serial) and
//!   its I/O queue interrupt vectors.
//! - [`target`]: `nvme0`, `/dev/nvme0`, `/dev/nvme0n1`, a multipath head
//!   (all its path controllers) → the [`Controller`]s, from a
//!   [`topology::Topology`]; a fabrics controller is refused (it has no
//!   interrupts).
//! - [`state`]: what a controller has now (value, supported capabilities,
//!   per-vector Coalescing Disable).
//! - [`journal`]: the state file of originals.
//! - [`guard`]: [`CoalesceGuard`], which records, applies all-or-none and
//!   restores.
//! - [`restore`]: puts back what a state file recorded, after a crash.
//! - [`change`]: `numio coalesce set` / `off` and a sweep's `--apply`,
//!   through the guard, and the commands that undo them.
//! - [`connect`]: the kernel's fabrics host connecting, waiting for the
//!   namespace and disconnecting, each connection in [`connections`]'
//!   journal.
//!
//! # The restore promise
//! Before numio changes a controller's value it writes the ORIGINAL value
//! to a state file ([`journal::Journal::default_location`]:
//! `/run/numio/coalesce.json` as root, else
//! `$XDG_RUNTIME_DIR/numio/coalesce.json`, or `$NUMIO_STATE_DIR`), keyed by
//! the controller's name, PCI address and serial; the first record wins, so
//! a later change never overwrites the original. A [`CoalesceGuard`] puts
//! back the values it found on [`CoalesceGuard::restore`], on drop (normal
//! end, error, panic unwinding) and from the signal thread through its
//! [`Restorer`] (a second Ctrl-C exits at once, after the restorer ran). If
//! one controller of several refuses a value, the ones already changed are
//! put back before the error is returned. After `kill -9` the record stays
//! and [`restore::restore_recorded`] (`numio coalesce restore`) puts the
//! originals back. While numio changes values it holds an exclusive lock
//! beside the state file, so two numio processes never interleave.
//!
//! # Shape
//! The hardware sits behind two small traits, [`Admin`] (Get/Set Features
//! on one open controller) and [`Access`] (opening one), so the journal,
//! rollback and restore logic is tested on [`memory::MemoryController`]s;
//! [`DevAccess`] is the real one over `sysapi::nvme_admin`, proven in the
//! VM lab (`tests/vm/tests/coalesce/`) with nvme-cli as the independent
//! reader.
#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub mod admin;
pub mod change;
pub mod connect;
pub mod connections;
pub mod controller;
pub mod error;
pub mod guard;
#[cfg(test)]
mod guard_tests;
pub mod journal;
pub mod live;
pub mod memory;
pub mod restore;
pub mod setting;
pub mod show;
pub mod state;
pub mod target;
pub mod vfio;

pub use admin::{Access, Admin, AdminError, DevAccess};
pub use controller::Controller;
pub use error::TuneError;
pub use guard::{CoalesceGuard, Kept, Restorer};
pub use journal::{Journal, Record};
pub use nvme_spec::features::IrqCoalescing;
pub use setting::{parse_delay_us, parse_threshold, parse_thresholds, parse_time_us, setting, OFF};
pub use target::{resolve, resolve_tunable, Resolved};
