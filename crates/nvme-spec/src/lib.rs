//! NVMe and NVMe/TCP wire formats.
//!
//! This crate owns the byte layouts that cross a wire or a device boundary:
//! submission and completion queue entries, status codes, Identify data,
//! feature encodings (0x08 interrupt coalescing) and NVMe/TCP PDU headers.
//! It performs no I/O, so every layout is tested on bytes, and every wire
//! struct carries a compile-time size assertion.
#![deny(missing_docs)]
