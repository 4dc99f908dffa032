//! The NVMe/TCP and NVMe/RDMA target (`numio serve`).
//!
//! - [`rdma_queue::RdmaQueue`] lays the NVMe/RDMA binding over a
//!   [`queue::Connection`]: keyed SGLs become RDMA READ and WRITE, the
//!   response a SEND; [`rdma`] is its RDMA CM listener and the thread that
//!   drives each RDMA queue over `sysapi::rdma`.
//!
//! - [`queue::Connection`] is one connection as a pure state machine
//!   (bytes in, bytes out, storage operations out, their completions in);
//!   each command's life is an explicit [`request::RequestState`], moved by
//!   `lifecycle.rs` and changed in one place ([`request::Requests::set_state`],
//!   which also counts requests per state). R2T flow is in `transfer.rs`.
//! - The handlers ([`fabrics`], [`admin`], [`io`]) take a
//!   [`command::Ctx`] and return a [`command::Outcome`]; the connection
//!   applies it. [`auth`] runs DH-HMAC-CHAP for queues whose host must
//!   authenticate; its exponentiations run on [`dh_pool`]'s workers, never
//!   on a reactor.
//! - [`subsystem::Target`] holds what the queues of a controller share
//!   (registers, the controller registry), which only Connect and admin
//!   commands lock; [`namespace`] and [`config`] are below it.
//!   [`admission`] decides which sockets hold connection slots (the oldest
//!   without a Connect makes room), [`ctrl_slots`] which controllers hold
//!   `max_controllers` slots (only authenticated ones).
//! - [`reactor::Server`] runs one reactor thread per CPU, each owning its
//!   connections and one io_uring that carries their socket receives and
//!   sends, the wake-up for new connections and the storage I/O of file and
//!   block device namespaces ([`ring`] sets it up; the loop, `event_loop.rs`,
//!   is private to the crate). An unfinished TLS handshake's steps run on
//!   [`tls_pool`]'s workers; the reactor keeps the socket.
//! - `numio serve` around the server: [`config_file`] reads `--config`
//!   (off the signal-answering thread, within a timeout), [`sighup`] runs
//!   a reload and logs what it changed.

pub mod admin;
pub mod admission;
pub mod ana;
pub mod auth;
pub mod backoff;
pub mod buf;
pub mod command;
pub mod config;
pub mod config_file;
pub mod counters;
pub mod ctrl_slots;
pub mod dh_pool;
pub mod error;
mod event_loop;
pub mod fabrics;
pub mod io;
mod ledger;
mod lifecycle;
pub mod log_limit;
pub mod metrics;
pub mod namespace;
pub mod ns_set;
pub mod port;
pub mod queue;
pub mod ram;
pub mod rdma;
pub mod rdma_queue;
pub mod reactor;
pub mod reload;
pub mod request;
pub mod ring;
pub mod sighup;
pub mod splice;
pub mod startup;
pub mod storage;
pub mod subsystem;
pub mod tls_pool;
mod transfer;
pub mod unauthenticated;
mod wake;
