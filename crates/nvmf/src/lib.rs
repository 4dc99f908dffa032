//! NVMe over TCP: a thread-per-core target (`numio serve`) and a user-space
//! initiator.
//!
//! Shape: [`queue::Connection`] is one NVMe/TCP connection as a pure state
//! machine (bytes in, bytes out, storage operations out, completions in),
//! with each command's life an explicit [`request::RequestState`].
//! [`reactor::Server`] runs one reactor thread per CPU, each owning its
//! connections and one io_uring that carries their socket receives and
//! sends, the wake-up for new connections and the `O_DIRECT` storage I/O of
//! file and block device namespaces ([`ring`] sets it up; the loop is
//! private to the crate). [`subsystem::Target`] holds what the queues of a
//! controller share (registers, the controller registry), which only
//! Connect and admin commands lock. [`initiator::Initiator`] is a blocking
//! host used by tests and, later, the engine's NVMe/TCP backend.
#![deny(missing_docs)]

pub mod admin;
pub mod buf;
pub mod config;
pub mod error;
mod event_loop;
pub mod fabrics;
pub mod host;
pub mod io;
pub mod namespace;
pub mod numa;
pub mod queue;
pub mod reactor;
pub mod request;
pub mod ring;
pub mod subsystem;
mod transfer;

pub use config::{Limits, TargetConfig};
pub use error::{ConfigError, TargetError};
pub use host::{Initiator, InitiatorError, InitiatorOptions};
pub use reactor::Server;
