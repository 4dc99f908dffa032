//! The NVMe/TCP host: the protocol once, without I/O, for every driver.
//!
//! - [`HostQueue`] (`queue.rs`) is one queue (one connection) as a state
//!   machine: commands in, bytes out; bytes in, completions out. Its
//!   buffers are sized at start-up from a [`QueueConfig`]; command data
//!   stays in the caller's memory, reached by command id through
//!   [`DataBuffers`]. Its send buffer (`tx.rs`) holds framed bytes and,
//!   for a transport that sends vectored, references to write data left
//!   in those buffers until the socket takes it.
//! - [`Controller`] (`controller.rs`) is what the queues of one controller
//!   share: the host's identity, the subsystem, the controller id and its
//!   limits. Each queue has its own transport below it, so several paths
//!   or a TLS layer fit under the same state machine.
//! - `command.rs` builds the SQEs a host sends (Connect, Property Get/Set,
//!   Identify, Set Features, Get Log Page, Keep Alive, Read, Write).
//! - `multipath.rs` decides which of several paths of one namespace an
//!   I/O takes ([`PathSelector`] under an [`IoPolicy`]: numa, round-robin,
//!   queue-depth; ANA-aware) and what a path status says; the engine's
//!   multipath tcp backend drives the connections.
//! - [`rdma`] is the NVMe/RDMA host: a queue as an RDMA connection
//!   (capsules by SEND, data by the target's RDMA READ/WRITE of keyed
//!   SGLs) and a controller's set-up over it; the engine's rdma backend
//!   drives it.
//! - [`Initiator`] (`initiator.rs`) is a blocking socket driver over one
//!   queue, for the target's tests and for setting controllers up; the
//!   engine's `tcp` backend drives a queue the initiator connected from its
//!   own non-blocking, allocation-free loop.

pub mod auth;
mod buffers;
pub mod command;
pub mod controller;
pub mod error;
pub mod identity;
pub mod initiator;
pub mod multipath;
pub mod queue;
pub mod rdma;
pub mod stream;
mod tx;

pub use auth::{HostSecrets, Negotiated};
pub use controller::{Controller, ControllerLimits};
pub use error::{HostError, InitiatorError};
pub use identity::ResolvedHost;
pub use initiator::{Completion, Initiator, InitiatorOptions};
pub use multipath::{IoPolicy, PathSelector, PathView, UnknownIoPolicy};
pub use queue::{DataBuffers, HostCompletion, HostQueue, QueueConfig, QueuePhase, Transfer};
pub use stream::Stream;
