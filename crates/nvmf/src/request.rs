//! One command's life on a queue, as an explicit state machine.
//!
//! ```text
//! Free ──capsule──► New ──┬─(host data still to come)──► AwaitingH2CData ─┐
//!                          │                                                │
//!                          └────────────────► ReadyToExecute ◄─(all data)───┘
//!                                                   │
//!                ┌──────────────────┬───────────────┼──────────────┐
//!                ▼                  ▼               ▼              │
//!         AwaitingEvent (AER)   Executing ──(CQE)──► Completed ◄───┘
//!                               (storage I/O            │
//!                                on the ring)           ▼
//!                                             (C2HData,) response ──► Free
//! ```
//! `Connection::advance` in `queue.rs` is the one place that moves a request
//! from one state to the next.

use nvme_spec::{Sqe, Status};

use crate::buf::AlignedBuf;
use crate::io::StorageOp;

/// Which way a command moves data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Xfer {
    /// No data.
    None,
    /// Host to controller (write-like).
    HostToCtrl,
    /// Controller to host (read-like).
    CtrlToHost,
}

impl Xfer {
    /// From an opcode's data transfer bits (1:0), with fabrics commands
    /// (0x7F) resolved by their type: only Connect carries data.
    pub fn of(sqe: &Sqe) -> Self {
        if sqe.opcode == nvme_spec::command::admin::FABRICS {
            return if sqe.fctype() == nvme_spec::fabrics::FCTYPE_CONNECT {
                Xfer::HostToCtrl
            } else {
                Xfer::None
            };
        }
        match sqe.opcode & 3 {
            1 => Xfer::HostToCtrl,
            2 => Xfer::CtrlToHost,
            _ => Xfer::None,
        }
    }
}

/// State of one slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RequestState {
    /// Unused.
    Free,
    /// Capsule received; transfer not yet decided.
    New,
    /// R2Ts are out; H2CData PDUs are arriving (more R2Ts follow as they
    /// are answered).
    AwaitingH2CData,
    /// All data in; the command can run.
    ReadyToExecute,
    /// Held until an asynchronous event occurs (AER).
    AwaitingEvent,
    /// A storage operation is queued for or in flight on the reactor's
    /// io_uring; the kernel owns the data buffer until its completion.
    Executing,
    /// Ran (or failed before running); its data and response are to be sent.
    Completed,
}

/// One slot: a command and its data buffer. Slot index = transfer tag.
#[derive(Debug)]
pub struct Request {
    /// State.
    pub state: RequestState,
    /// The command.
    pub sqe: Sqe,
    /// Direction.
    pub xfer: Xfer,
    /// Data length from the SGL.
    pub len_bytes: u32,
    /// Bytes of host data received so far.
    pub received_bytes: u32,
    /// Bytes of the transfer asked for by R2Ts sent so far.
    pub r2t_sent_bytes: u32,
    /// True when the data arrived in the capsule.
    pub in_capsule: bool,
    /// A data digest failed; the command completes with a transport error.
    pub digest_failed: bool,
    /// Data buffer: page-aligned, reused, grows to the largest transfer
    /// seen (up to a retention limit).
    pub buf: AlignedBuf,
    /// Completion status.
    pub status: Status,
    /// Completion dwords 0 (low half) and 1 (high half).
    pub result: u64,
    /// Bytes of `buf` to return for a controller-to-host command.
    pub out_len: u32,
    /// The storage operation while `Executing`.
    pub storage: Option<StorageOp>,
    /// How far a command that runs as several storage operations in turn
    /// has got: bytes deallocated (Dataset Management), namespaces flushed
    /// (a Flush of every namespace).
    pub storage_progress: u64,
}

impl Request {
    /// A free slot.
    pub fn new() -> Self {
        Self {
            state: RequestState::Free,
            sqe: Sqe::default(),
            xfer: Xfer::None,
            len_bytes: 0,
            received_bytes: 0,
            r2t_sent_bytes: 0,
            in_capsule: false,
            digest_failed: false,
            buf: AlignedBuf::new(),
            status: Status::SUCCESS,
            result: 0,
            out_len: 0,
            storage: None,
            storage_progress: 0,
        }
    }

    /// True unless Free.
    pub fn busy(&self) -> bool {
        self.state != RequestState::Free
    }
}

impl Default for Request {
    fn default() -> Self {
        Self::new()
    }
}

/// How a handler finished.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Done: status and completion dword 0 (data, if any, in the buffer).
    Done {
        /// Status.
        status: Status,
        /// Dwords 0 and 1.
        result: u64,
        /// Bytes of data to return.
        out_len: u32,
    },
    /// Completed later (AER).
    Deferred,
    /// A storage operation was queued; its completion finishes the command.
    Submitted,
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
        Outcome::Done {
            status,
            result: 0,
            out_len: 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nvme_spec::command::{admin, io};

    #[test]
    fn transfer_direction_from_opcode() {
        let mk = |opcode, nsid| Sqe {
            opcode,
            nsid,
            ..Default::default()
        };
        assert_eq!(Xfer::of(&mk(io::WRITE, 1)), Xfer::HostToCtrl);
        assert_eq!(Xfer::of(&mk(io::READ, 1)), Xfer::CtrlToHost);
        assert_eq!(Xfer::of(&mk(io::FLUSH, 1)), Xfer::None);
        assert_eq!(Xfer::of(&mk(io::DSM, 1)), Xfer::HostToCtrl);
        assert_eq!(Xfer::of(&mk(admin::IDENTIFY, 0)), Xfer::CtrlToHost);
        assert_eq!(Xfer::of(&mk(admin::FABRICS, 1)), Xfer::HostToCtrl);
        assert_eq!(Xfer::of(&mk(admin::FABRICS, 4)), Xfer::None);
        assert!(!Request::new().busy());
    }
}
