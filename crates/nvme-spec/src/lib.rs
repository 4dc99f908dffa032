//! NVMe and NVMe/TCP wire formats.
//!
//! This crate owns the byte layouts that cross a wire or a device boundary:
//! submission and completion queue entries, status codes, Identify data,
//! feature encodings (0x08 interrupt coalescing), log pages, fabrics Connect
//! and properties, and NVMe/TCP PDUs with their CRC32C digests. It performs
//! no I/O, so every layout is tested on bytes, and every wire struct carries
//! a compile-time size assertion. Multi-byte fields are little-endian and are
//! read and written at explicit offsets, never by casting memory.
#![deny(missing_docs)]

pub mod bytes;
pub mod command;
pub mod crc32c;
pub mod fabrics;
pub mod features;
pub mod identify;
pub mod log;
pub mod status;
pub mod tcp;

pub use command::{Cqe, SglDescriptor, Sqe};
pub use status::{Status, StatusCodeType};
