//! What a command handler sees and what it gives back.
//!
//! The fabrics, admin and I/O handlers each take a [`Ctx`] (the target, the
//! queue's binding, the command with its data buffer) and return an
//! [`Outcome`]: a status to send, a storage operation to start, an event to
//! wait for, or (Connect) the controller the queue is now bound to. The
//! connection applies the outcome; no handler touches the connection.

use std::sync::Arc;

use nvme_spec::tcp::Framing;
use nvme_spec::{Sqe, Status};

use super::request::Request;
use super::storage::StorageOp;
use super::subsystem::{Controller, Target};

/// What a queue is bound to after Connect.
#[derive(Debug)]
pub struct Binding {
    /// Queue id (0: admin).
    pub qid: u16,
    /// Entries of the submission queue (one-based).
    pub sq_entries: u16,
    /// The controller.
    pub ctrl: Arc<Controller>,
}

/// One command as its handler sees it.
#[derive(Debug)]
pub struct Ctx<'a> {
    /// The target: limits, subsystems, the controller registry.
    pub target: &'a Target,
    /// What the queue is bound to (`None` before Connect).
    pub binding: Option<&'a Binding>,
    /// The queue's negotiated framing.
    pub framing: Framing,
    /// The command's slot (its storage operations name it).
    pub slot: u16,
    /// The command and its data buffer: the host's data in, the reply out.
    pub req: &'a mut Request,
    /// Asynchronous Event Requests the queue holds.
    pub events_waiting: usize,
    /// Id of the port the connection came through.
    pub port: u16,
    /// CPU of the reactor serving the connection, where known.
    pub reactor_cpu: Option<usize>,
    /// The queue's DH-HMAC-CHAP state.
    pub auth: &'a mut super::auth::QueueAuth,
    /// The connection's clock (the command's arrival).
    pub now: std::time::Instant,
    /// What its TLS handshake proved (`None` without TLS).
    pub tls: Option<&'a crate::tls::ossl::TlsPeer>,
    /// The socket's source address (`None`: driven without a socket).
    pub source: Option<std::net::IpAddr>,
    /// The reactor's wake-up, for work done off it.
    pub waker: Option<&'a Arc<std::os::fd::OwnedFd>>,
}

impl Ctx<'_> {
    /// The command.
    pub fn sqe(&self) -> Sqe {
        self.req.sqe
    }

    /// The bound controller; handlers past Connect run only on a bound
    /// queue.
    pub fn ctrl(&self) -> &Arc<Controller> {
        &self.binding.expect("the queue is bound").ctrl
    }

    /// Copies `data` into the request buffer (clipped to the SGL length)
    /// and returns success with that many bytes.
    pub fn reply(&mut self, data: &[u8]) -> Outcome {
        let n = data.len().min(self.req.buf.len());
        self.req.buf[..n].copy_from_slice(&data[..n]);
        Outcome::data(n)
    }
}

/// How a handler finished: what the connection does next.
#[derive(Debug)]
pub enum Outcome {
    /// Done: status and completion dwords (data, if any, in the buffer).
    Done {
        /// Status.
        status: Status,
        /// Dwords 0 and 1.
        result: u64,
        /// Bytes of data to return.
        out_len: u32,
    },
    /// Completed later, when an asynchronous event occurs (AER).
    Deferred,
    /// Runs again once the DH-HMAC-CHAP work it started off the reactor is
    /// done ([`super::auth::QueueAuth::resumable`]).
    AwaitingAuth,
    /// Start this storage operation; its completion finishes the command.
    Storage(StorageOp),
    /// Connect succeeded: bind the queue (and take the host's SQ flow
    /// control choice); the command completes with the controller id.
    Connected {
        /// The queue's binding.
        binding: Binding,
        /// CATTR bit 2: the host disabled SQ flow control.
        sq_flow_disabled: bool,
    },
}

impl Outcome {
    /// Success with a result and no data.
    pub fn ok(result: u64) -> Self {
        Outcome::Done {
            status: Status::SUCCESS,
            result,
            out_len: 0,
        }
    }

    /// Success returning `out_len` bytes.
    pub fn data(out_len: usize) -> Self {
        Outcome::Done {
            status: Status::SUCCESS,
            result: 0,
            out_len: out_len as u32,
        }
    }

    /// An error.
    pub fn err(status: Status) -> Self {
        Self::refuse(status, 0)
    }

    /// An error with completion dwords (Connect's IATTR and IPO).
    pub fn refuse(status: Status, result: u64) -> Self {
        Outcome::Done {
            status,
            result,
            out_len: 0,
        }
    }
}
