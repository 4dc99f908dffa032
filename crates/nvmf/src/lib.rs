//! NVMe over TCP and over RDMA, both ends.
//!
//! - [`target`]: a thread-per-core NVMe/TCP target (`numio serve`):
//!   reactors, connections as state machines, subsystems and namespaces;
//!   NVMe/RDMA queues run the same connection state machine under the RDMA
//!   binding (`tgt::rdma_queue`), one thread per queue (`tgt::rdma`).
//! - [`host`]: the host protocol once, as a queue state machine without
//!   I/O ([`host::HostQueue`]); the engine's `tcp` backend drives it from
//!   its own non-blocking loop, and [`host::Initiator`] is a blocking socket
//!   driver over it for the target's tests and for set-up.
//! - [`log`]: the target's log lines, in text, logfmt or JSON, at a level,
//!   journald's priorities where the stream is the journal.
//!
//! The target's configuration, namespaces and reactor are also at the crate
//! root (`nvmf::config`, `nvmf::namespace`, `nvmf::reactor`): the paths
//! `numio serve` names.
#![deny(missing_docs)]

/// Payload (read data on the target, write data on the host) shorter than
/// this is copied into the output rather than handed to the socket from
/// where it lies: an iovec of its own costs the kernel more than a copy
/// this small.
pub const SPLICE_MIN_BYTES: usize = 1024;

/// `a, b or c`: the names an error offers, from the enum's own list (so a
/// new variant is offered without editing the message).
pub(crate) fn one_of<T: std::fmt::Display>(names: impl IntoIterator<Item = T>) -> String {
    let names: Vec<String> = names.into_iter().map(|n| n.to_string()).collect();
    match names.split_last() {
        None => String::new(),
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
    }
}

pub mod auth;
pub mod host;
pub mod log;
pub mod metrics_http;
pub mod sd_notify;
pub mod serve_child;
pub mod tgt;
pub mod tls;

pub use host::{HostSecrets, Initiator, InitiatorError, InitiatorOptions};
pub use tgt::config::{Limits, TargetConfig};
pub use tgt::error::{ConfigError, TargetError};
pub use tgt::reactor::Server;
pub use tgt::{config, namespace, reactor};
