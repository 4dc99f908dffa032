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
//! - [`sq`]: [`DirectSq`], the submission queue mapped a second time so
//!   SQEs are written in place; it checks every position it hands out
//!   against the kernel's head, so its API is safe.
//!
//! What stays with the caller: an SQE names a buffer the kernel reads or
//! writes until the completion arrives. Publishing one ([`DirectSq::publish`]
//! or the crate's `push`) is where the caller promises that, which is why
//! the engine's `Backend::queue` is an `unsafe fn`.

pub mod enter;
pub mod setup;
pub mod sq;
pub mod sqe;

pub use enter::Enter;
pub use setup::{build_ring, BuiltRing, RingSpec, TaskRun};
pub use sq::DirectSq;
pub use sqe::{NvmeSqe, NvmeUringCmd, Sqe, SqeHead, SqeView, NVME_URING_CMD_IO};
