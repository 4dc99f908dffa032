//! Errors of the host: what the queue state machine refuses, and what the
//! blocking [`Initiator`](super::Initiator) adds (sockets, command status).

use nvme_spec::tcp::FatalError;
use nvme_spec::Status;

/// A queue state machine error. A controller's protocol violation fails
/// the queue for good (later calls answer [`HostError::Failed`]); a bad
/// call by the caller leaves it as it was.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HostError {
    /// The controller sent a PDU that does not decode.
    #[error("invalid PDU from the target: {0}")]
    Pdu(FatalError),
    /// The controller ended the connection with a C2HTermReq.
    #[error("the target ended the connection (C2HTermReq fes={fes:#x} fei={fei})")]
    Terminated {
        /// Fatal error status.
        fes: u16,
        /// Fatal error information.
        fei: u32,
    },
    /// A PDU of a type the host does not expect now.
    #[error("unexpected {what}{when}")]
    Unexpected {
        /// The PDU.
        what: &'static str,
        /// Where it came (" before ICResp", " after ICResp").
        when: &'static str,
    },
    /// A PDU named a command id that is not in flight.
    #[error("PDU for command id {cid}, which is not in flight")]
    UnknownCommand {
        /// The command id.
        cid: u16,
    },
    /// C2HData outside the command's read, or for a command that reads
    /// nothing.
    #[error("C2HData for cid {cid} at {offset}+{len} outside its {read_bytes}-byte read")]
    DataOutOfRange {
        /// The command id.
        cid: u16,
        /// Data offset.
        offset: u32,
        /// Data length.
        len: u32,
        /// Bytes the command reads (0: none).
        read_bytes: u32,
    },
    /// C2HData whose data digest is wrong.
    #[error("C2HData data digest mismatch (cid {cid})")]
    DataDigest {
        /// The command id.
        cid: u16,
    },
    /// C2HData with SUCCESS before all of the read's data.
    #[error("C2HData SUCCESS for cid {cid} after {received} of {read_bytes} bytes")]
    EarlySuccess {
        /// The command id.
        cid: u16,
        /// Bytes received with it.
        received: u32,
        /// Bytes the command reads.
        read_bytes: u32,
    },
    /// An R2T for data the command does not send through R2T.
    #[error("R2T for cid {cid} asks {offset}+{len} of a {write_bytes}-byte write sent by R2T")]
    R2tOutOfRange {
        /// The command id.
        cid: u16,
        /// Offset asked.
        offset: u32,
        /// Length asked.
        len: u32,
        /// Bytes the command writes through R2T (0: none).
        write_bytes: u32,
    },
    /// More R2Ts outstanding for one command than MAXR2T allows.
    #[error("R2T for cid {cid} beyond the {max} outstanding that MAXR2T allows")]
    TooManyR2ts {
        /// The command id.
        cid: u16,
        /// R2Ts the host allowed (MAXR2T + 1).
        max: u32,
    },
    /// An earlier error failed the queue.
    #[error("the queue failed earlier")]
    Failed,
    /// A command before ICResp arrived.
    #[error("the queue is not connected yet (no ICResp)")]
    NotReady,
    /// A command id that is already in flight or beyond the queue.
    #[error("command id {cid} is in flight or outside the {entries}-entry queue")]
    BadCommandId {
        /// The command id.
        cid: u16,
        /// Entries of the queue.
        entries: u16,
    },
    /// A transfer larger than the queue's buffers were sized for.
    #[error("a {len}-byte transfer exceeds the queue's {max}-byte limit")]
    TooLarge {
        /// Bytes asked.
        len: u32,
        /// The queue's limit.
        max: u32,
    },
}

/// Errors of the blocking [`Initiator`](super::Initiator).
#[derive(Debug, thiserror::Error)]
pub enum InitiatorError {
    /// Socket failure.
    #[error("NVMe/TCP socket: {0}")]
    Io(#[from] std::io::Error),
    /// The controller broke the protocol.
    #[error("controller sent an invalid PDU: {0}")]
    Protocol(#[from] FatalError),
    /// The controller ended the connection with a C2HTermReq.
    #[error("controller terminated the connection: fes={fes:#x} fei={fei}")]
    Terminated {
        /// Fatal error status.
        fes: u16,
        /// Fatal error information.
        fei: u32,
    },
    /// A command completed with an error status.
    #[error("command {opcode:#04x} failed: {status}")]
    Command {
        /// Opcode.
        opcode: u8,
        /// Status.
        status: Status,
    },
    /// Something unexpected in an otherwise valid exchange.
    #[error("unexpected reply: {0}")]
    Unexpected(String),
    /// DH-HMAC-CHAP failed, or the target asked for it and the host has
    /// no secret.
    #[error("DH-HMAC-CHAP: {0}")]
    Auth(String),
    /// The TLS handshake failed, or TLS was asked for where it cannot run.
    #[error("TLS: {0}")]
    Tls(String),
    /// A library the feature needs cannot be loaded (libssl for TLS): the
    /// text names the package.
    #[error(transparent)]
    Library(#[from] sysapi::dylib::LibraryError),
}

impl From<HostError> for InitiatorError {
    fn from(e: HostError) -> Self {
        match e {
            HostError::Pdu(f) => InitiatorError::Protocol(f),
            HostError::Terminated { fes, fei } => InitiatorError::Terminated { fes, fei },
            other => InitiatorError::Unexpected(other.to_string()),
        }
    }
}
