//! Backends: the engine's view of a device, split like a hardware queue.
//!
//! A worker owns exactly one backend instance. It [`Backend::queue`]s I/Os
//! (filling submission slots), rings the doorbell once per batch with
//! [`Backend::submit`], and [`Backend::reap`]s completions in batches into a
//! fixed array. `user_data` is always the worker's slot index. The worker loop
//! is generic over the backend type, so the hot path has no dynamic dispatch.
//!
//! `uring`, `nop` and `passthru` are io_uring backends; `sync` is the
//! pread/pwrite reference; `null` does nothing and measures numio; `tcp`
//! speaks NVMe/TCP to a remote namespace from user space, `rdma` NVMe/RDMA
//! through rdma-core; `vfio` is numio's
//! own user-space NVMe driver on a PCI controller bound to vfio-pci.

use std::io;

use crate::stats::Dir;

pub mod null;
pub mod passthru;
pub mod rdma;
pub mod sync;
pub mod tcp;
pub mod uring;
pub mod vfio;

pub use null::NullBackend;
pub use passthru::{NvmeNamespace, PassthruBackend};
pub use rdma::RdmaBackend;
pub use sync::SyncBackend;
pub use tcp::{TcpBackend, TcpOptions};
pub use uring::{UringBackend, UringOptions, UringSetup};
pub use vfio::VfioBackend;

/// One I/O handed to a backend.
#[derive(Debug, Clone, Copy)]
pub struct IoRequest {
    /// Slot index, returned in the completion (a backend that does not
    /// move data returns it as an opaque tag; see [`Backend::moves_data`]).
    pub slot: u32,
    /// Direction.
    pub dir: Dir,
    /// Byte offset in the target.
    pub offset_bytes: u64,
    /// Length in bytes.
    pub len_bytes: u32,
    /// The slot's buffer (`len_bytes` long, inside the worker's registered
    /// region). The backend owns it from `queue` until the completion is reaped.
    pub buf: *mut u8,
}

impl IoRequest {
    /// A request of direction `dir` with every other field zero: what a
    /// backend builds its per-direction SQE templates from.
    pub fn blank(dir: Dir) -> IoRequest {
        IoRequest {
            slot: 0,
            dir,
            offset_bytes: 0,
            len_bytes: 0,
            buf: std::ptr::null_mut(),
        }
    }
}

/// The completion result of an NVMe command that failed with status field
/// `status` (SCT and SC; the DNR and More bits are dropped): a negated
/// [`NVME_STATUS_BASE`](results::NVME_STATUS_BASE) + status, which the
/// worker counts by status name. The fabrics and vfio backends share it.
pub(crate) fn nvme_error_result(status: u16) -> i32 {
    -(crate::result::NVME_STATUS_BASE + i32::from(status & 0x7ff))
}

/// One reaped completion.
#[derive(Debug, Clone, Copy, Default)]
pub struct Completion {
    /// Slot index of the I/O.
    pub slot: u32,
    /// Bytes transferred (≥ 0; 0 from a backend that moves no data), a
    /// negated errno, or (passthru) a negated
    /// [`NVME_STATUS_BASE`](results::NVME_STATUS_BASE) + NVMe status.
    pub result: i32,
}

/// A device queue owned by one worker.
pub trait Backend {
    /// Adds one I/O to the current batch. The caller never has more than the
    /// depth given at construction in flight, so this cannot run out of room.
    ///
    /// # Safety
    ///
    /// `io.buf` must point at `io.len_bytes` bytes that the kernel (or a
    /// peer's data transfer) may read or write from this call until the
    /// completion carrying `io.slot` is reaped, or, if it never is, until
    /// the backend is dropped. Until then the caller neither reads, writes
    /// nor frees that buffer, nor queues it again. A backend that does not
    /// move data ([`Backend::moves_data`] false) ignores `buf`.
    unsafe fn queue(&mut self, io: IoRequest);
    /// Adds `n` copies of `io` to the current batch (a backend that does
    /// not move data gets one tag for a whole batch; see
    /// [`Backend::moves_data`]).
    ///
    /// # Safety
    ///
    /// As for [`Backend::queue`], for each of the `n` I/Os.
    #[inline]
    unsafe fn queue_many(&mut self, io: IoRequest, n: usize) {
        // SAFETY: the caller keeps `io.buf` for each copy (this fn's contract).
        (0..n).for_each(|_| unsafe { self.queue(io) });
    }
    /// Submits the batch queued since the last call. Does not wait.
    fn submit(&mut self) -> io::Result<()>;
    /// Moves completions into `out` and returns how many; waits until at least
    /// `min` (≤ in flight) are available.
    fn reap(&mut self, out: &mut [Completion], min: usize) -> io::Result<usize>;
    /// [`Backend::reap`], handing each completion to `f` as well; a backend
    /// may override it to call `f` straight from its completion queue,
    /// leaving `out` untouched.
    #[inline]
    fn reap_each<F: FnMut(Completion)>(
        &mut self,
        out: &mut [Completion],
        min: usize,
        mut f: F,
    ) -> io::Result<usize> {
        let n = self.reap(out, min)?;
        out[..n].iter().for_each(|&c| f(c));
        Ok(n)
    }
    /// Whether the backend moves data. One that does not (io_uring NOPs)
    /// ignores `IoRequest::offset_bytes` and `buf`, returns `slot` as a tag
    /// the worker chose (not necessarily a slot index), and completes with
    /// result 0 on success; the worker then counts the requested bytes.
    fn moves_data(&self) -> bool {
        true
    }
    /// Nanoseconds spent so far polling an empty completion queue: CPU a
    /// backend that busy-waits for the device (instead of sleeping) burned
    /// without doing I/O work. 0 for backends that sleep.
    fn idle_poll_ns(&self) -> u64 {
        0
    }
}

/// Which backend a run uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BackendKind {
    /// io_uring reads and writes.
    Uring,
    /// pread/pwrite, one at a time: the reference.
    Sync,
    /// No I/O at all: measures numio itself.
    Null,
    /// io_uring NOPs: measures the kernel round trip.
    Nop,
    /// NVMe commands through io_uring passthrough (`IORING_OP_URING_CMD`)
    /// on the namespace's generic character device `/dev/ngXnY`.
    Passthru,
    /// NVMe/TCP from user space: one I/O queue (TCP connection) per worker
    /// to `nvme-tcp://HOST[:PORT]/SUBNQN[/NSID]`.
    Tcp,
    /// numio's own polled NVMe driver over VFIO: one I/O queue pair per
    /// worker on `pci:DDDD:BB:SS.F[/NSID]`.
    Vfio,
    /// NVMe/RDMA from user space: one I/O queue (an RDMA connection) per
    /// worker to `nvme-rdma://HOST[:PORT]/SUBNQN[/NSID]`.
    Rdma,
}

impl BackendKind {
    /// Every backend.
    pub const ALL: [BackendKind; 8] = [
        BackendKind::Uring,
        BackendKind::Sync,
        BackendKind::Null,
        BackendKind::Nop,
        BackendKind::Passthru,
        BackendKind::Tcp,
        BackendKind::Vfio,
        BackendKind::Rdma,
    ];
    /// The name used on the command line and in results.
    pub fn name(self) -> &'static str {
        match self {
            BackendKind::Uring => "uring",
            BackendKind::Sync => "sync",
            BackendKind::Null => "null",
            BackendKind::Nop => "nop",
            BackendKind::Passthru => "passthru",
            BackendKind::Tcp => "tcp",
            BackendKind::Vfio => "vfio",
            BackendKind::Rdma => "rdma",
        }
    }
    /// Whether the backend reads or writes the target at all.
    pub fn touches_data(self) -> bool {
        matches!(
            self,
            BackendKind::Uring
                | BackendKind::Sync
                | BackendKind::Passthru
                | BackendKind::Tcp
                | BackendKind::Vfio
                | BackendKind::Rdma
        )
    }
    /// Whether the backend drives an NVMe generic character device
    /// (`/dev/ngXnY`) rather than a block device or file.
    pub fn needs_nvme_generic(self) -> bool {
        self == BackendKind::Passthru
    }
}

impl std::str::FromStr for BackendKind {
    type Err = crate::EngineError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        BackendKind::ALL
            .into_iter()
            .find(|k| k.name() == s)
            .ok_or_else(|| crate::EngineError::UnknownBackend {
                name: s.to_string(),
            })
    }
}
