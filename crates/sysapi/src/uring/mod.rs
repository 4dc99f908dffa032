//! The io_uring boundary: every `unsafe` numio needs to drive a ring
//! beyond what the io-uring crate offers safely, each with what makes it
//! hold.
//!
//! - [`setup`]: the one ring set-up fallback chain (task-run flags, SQPOLL,
//!   IOPOLL, CQ size), each refused flag dropped with a note. Safe: it only
//!   calls the crate's builder.
//! - [`enter`]: `io_uring_enter` through the registered ring fd, which the
//!   crate cannot keep across calls (its module doc says why): two raw
//!   system calls.
//! - [`sqe`]: typed views of the kernel's SQEs ([`Sqe`], and [`NvmeSqe`]
//!   carrying [`NvmeUringCmd`]), their offsets asserted against the kernel
//!   headers; converting the crate's entries to and from them is the one
//!   `unsafe` there (a transmute between two layouts of the same struct).
//!
//! What stays with the caller: an SQE names a buffer the kernel reads or
//! writes until the completion arrives. Pushing one (the crate's `push`, an
//! `unsafe fn`) is where the caller promises that, which is why the
//! engine's `Backend::queue` is an `unsafe fn`.
//!
//! No second mapping of the SQ ring: writing SQEs in place (a `DirectSq`
//! that mapped the ring again) measured no gain over the crate's
//! `push_multiple` on `bench/nop.sh` (median ratio 1.00 over 11 paired
//! runs), so the crate's queue is the only one.

pub mod enter;
pub mod setup;
pub mod sqe;

pub use enter::Enter;
pub use setup::{build_ring, BuiltRing, RingSpec, TaskRun};
pub use sqe::{NvmeSqe, NvmeUringCmd, Sqe, SqeHead, SqeView, NVME_URING_CMD_IO};
