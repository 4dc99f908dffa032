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
//! A `New` request waits while the target's buffer budget has no room for
//! its data (`plan_transfer` retries it every tick). An authentication
//! command whose DH work runs off the reactor waits in `AwaitingAuth` and
//! goes back to `ReadyToExecute` (to run again) when the work is done.
//! `Connection::advance` in `queue.rs` decides where a request goes next;
//! [`Requests::set_state`] is the one place a state changes: it
//! debug-asserts that the transition is one of the arrows above (or a
//! teardown to `Free` of a request waiting for host data or an event) and
//! keeps the count of requests in each state ([`StateCounts`]), which the
//! connection reads instead of scanning its requests, and tests and
//! metrics read as they are.

use std::time::Instant;

use nvme_spec::{Sqe, Status};

use super::buf::AlignedBuf;
use super::storage::StorageOp;

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
    /// (0x7F) resolved by their type: Connect and Authentication Send carry
    /// data to the controller, Authentication Receive from it.
    pub fn of(sqe: &Sqe) -> Self {
        if sqe.opcode == nvme_spec::command::admin::FABRICS {
            return match sqe.fctype() {
                nvme_spec::fabrics::FCTYPE_CONNECT | nvme_spec::auth::FCTYPE_AUTH_SEND => {
                    Xfer::HostToCtrl
                }
                nvme_spec::auth::FCTYPE_AUTH_RECEIVE => Xfer::CtrlToHost,
                _ => Xfer::None,
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
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
    /// An authentication command waits for its DH-HMAC-CHAP work, which
    /// runs off the reactor (`dh_pool`); it runs again when that is done.
    AwaitingAuth,
    /// A storage operation is queued for or in flight on the reactor's
    /// io_uring; the kernel owns the data buffer until its completion.
    Executing,
    /// Ran (or failed before running); its data and response are to be sent.
    Completed,
}

impl RequestState {
    /// Every state, in the order [`StateCounts`] keeps them.
    pub const ALL: [RequestState; 8] = [
        RequestState::Free,
        RequestState::New,
        RequestState::AwaitingH2CData,
        RequestState::ReadyToExecute,
        RequestState::AwaitingEvent,
        RequestState::AwaitingAuth,
        RequestState::Executing,
        RequestState::Completed,
    ];

    fn index(self) -> usize {
        self as usize
    }

    /// Whether a request may go from this state to `next`: the arrows of
    /// the diagram above, and teardown (`Connection::release`) of a request
    /// waiting for host data, an event or (still `New`) room in the
    /// target's buffer budget. A request `Executing` is never
    /// torn down: the kernel owns its buffer.
    pub fn may_become(self, next: RequestState) -> bool {
        use RequestState::*;
        matches!(
            (self, next),
            (Free, New)
                | (New, AwaitingH2CData | ReadyToExecute | Completed | Free)
                | (AwaitingH2CData, ReadyToExecute | Free)
                | (
                    ReadyToExecute,
                    AwaitingEvent | AwaitingAuth | Executing | Completed
                )
                | (AwaitingEvent, Completed | Free)
                | (AwaitingAuth, ReadyToExecute | Free)
                | (Executing, Completed)
                | (Completed, Free)
        )
    }
}

/// How many requests of a connection are in each state.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StateCounts([u32; 8]);

impl StateCounts {
    /// Requests in `state`.
    pub fn get(&self, state: RequestState) -> u32 {
        self.0[state.index()]
    }

    /// Requests in any state but `Free`.
    pub fn busy(&self) -> u32 {
        self.0.iter().sum::<u32>() - self.get(RequestState::Free)
    }
}

/// One slot: a command and its data buffer. Slot index = transfer tag.
#[derive(Debug)]
pub struct Request {
    /// State: changed only by [`Requests::set_state`].
    state: RequestState,
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
    /// It waited (or waits) for room in the target's buffer budget.
    pub waited_for_buffer: bool,
    /// Data buffer: page-aligned, reused, grows to the largest transfer
    /// seen (up to a retention limit).
    pub buf: AlignedBuf,
    /// Completion status.
    pub status: Status,
    /// Completion dwords 0 (low half) and 1 (high half).
    pub result: u64,
    /// Bytes of `buf` to return for a controller-to-host command.
    pub out_len: u32,
    /// A read of a RAM namespace: its data is there, not in `buf`, and
    /// goes to the host from there ([`super::splice`]).
    pub ram: Option<RamData>,
    /// The storage operation while `Executing`.
    pub storage: Option<StorageOp>,
    /// How far a command that runs as several storage operations in turn
    /// has got: bytes deallocated (Dataset Management), namespaces flushed
    /// (a Flush of every namespace).
    pub storage_progress: u64,
    /// When the receive that brought its capsule arrived.
    pub arrived: Instant,
}

/// Where a RAM read's data is: `out_len` bytes of a RAM namespace of the
/// connection's subsystem.
#[derive(Debug, Clone, Copy)]
pub struct RamData(pub *const u8);

// SAFETY: a read-only address in a RAM namespace's mapping, which its
// subsystem keeps for as long as a controller of it exists (the namespace
// set never drops a namespace); the connection holding it holds its
// controller until it is released.
unsafe impl Send for RamData {}

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
            waited_for_buffer: false,
            buf: AlignedBuf::new(),
            status: Status::SUCCESS,
            result: 0,
            out_len: 0,
            ram: None,
            storage: None,
            storage_progress: 0,
            arrived: Instant::now(),
        }
    }

    /// Its state.
    pub fn state(&self) -> RequestState {
        self.state
    }

    /// True unless Free.
    pub fn busy(&self) -> bool {
        self.state != RequestState::Free
    }
}

/// A connection's request slots, with the count of requests per state.
#[derive(Debug)]
pub struct Requests {
    slots: Box<[Request]>,
    counts: StateCounts,
}

impl Requests {
    /// `depth` free slots.
    pub fn new(depth: usize) -> Self {
        let mut counts = StateCounts::default();
        counts.0[RequestState::Free.index()] = depth as u32;
        Self {
            slots: (0..depth).map(|_| Request::new()).collect(),
            counts,
        }
    }

    /// Slots.
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    /// True when there are no slots.
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// Requests per state.
    pub fn counts(&self) -> &StateCounts {
        &self.counts
    }

    /// Every slot.
    pub fn iter(&self) -> impl Iterator<Item = &Request> {
        self.slots.iter()
    }

    /// The first slot in `state`.
    pub fn first_in(&self, state: RequestState) -> Option<usize> {
        self.slots.iter().position(|r| r.state == state)
    }

    /// The first free slot among the first `depth`.
    pub fn first_free(&self, depth: usize) -> Option<usize> {
        self.slots[..depth].iter().position(|r| !r.busy())
    }

    /// Moves request `slot` to `next`: the one place a request's state
    /// changes. Debug builds assert the transition is legal
    /// ([`RequestState::may_become`]).
    pub fn set_state(&mut self, slot: usize, next: RequestState) {
        let r = &mut self.slots[slot];
        debug_assert!(
            r.state.may_become(next),
            "request {slot}: {:?} may not become {next:?}",
            r.state
        );
        self.counts.0[r.state.index()] -= 1;
        self.counts.0[next.index()] += 1;
        r.state = next;
    }
}

impl std::ops::Index<usize> for Requests {
    type Output = Request;
    fn index(&self, slot: usize) -> &Request {
        &self.slots[slot]
    }
}

impl std::ops::IndexMut<usize> for Requests {
    /// A request's fields; its state stays [`Requests::set_state`]'s.
    fn index_mut(&mut self, slot: usize) -> &mut Request {
        &mut self.slots[slot]
    }
}

impl Default for Request {
    fn default() -> Self {
        Self::new()
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

    #[test]
    fn set_state_counts_requests_per_state() {
        use RequestState::*;
        let mut r = Requests::new(4);
        assert_eq!((r.counts().get(Free), r.counts().busy()), (4, 0));
        r.set_state(1, New);
        r.set_state(1, ReadyToExecute);
        r.set_state(1, Executing);
        r.set_state(2, New);
        r.set_state(2, AwaitingH2CData);
        let c = *r.counts();
        assert_eq!(
            (c.get(Free), c.get(Executing), c.get(AwaitingH2CData)),
            (2, 1, 1)
        );
        assert_eq!(c.busy(), 2);
        r.set_state(1, Completed);
        r.set_state(1, Free);
        assert_eq!((r.counts().get(Free), r.counts().get(Executing)), (3, 0));
        assert_eq!(r[1].state(), Free);
    }

    #[test]
    fn only_the_diagrams_transitions_are_legal() {
        use RequestState::*;
        let legal = RequestState::ALL
            .iter()
            .flat_map(|&a| RequestState::ALL.iter().map(move |&b| (a, b)))
            .filter(|&(a, b)| a.may_become(b))
            .count();
        assert_eq!(legal, 17);
        assert!(
            AwaitingAuth.may_become(ReadyToExecute) && AwaitingAuth.may_become(Free),
            "a command waiting for DH work runs again, or is torn down"
        );
        assert!(
            New.may_become(Free),
            "a command waiting for buffer space is torn down"
        );
        assert!(!Executing.may_become(Free), "the kernel owns its buffer");
        assert!(!Free.may_become(Completed));
        assert!(!Completed.may_become(New));
    }

    #[test]
    #[cfg(debug_assertions)]
    #[should_panic(expected = "may not become")]
    fn an_illegal_transition_is_caught() {
        let mut r = Requests::new(1);
        r.set_state(0, RequestState::Executing);
    }
}
