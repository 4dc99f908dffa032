//! The OS calls the engine and the NVMe/TCP target both make, each in one
//! place as a safe function: the calling thread's CPU affinity
//! ([`affinity`]), and a block device's size, logical block size and NVMe
//! namespace id ([`block`]), the signatures on a device by libblkid's
//! probing API ([`blkid`]), and files kept where other users may write,
//! made new and never opened through a symlink ([`file`]).
//!
//! A leaf below `engine` and `nvmf` (it depends on rustix and the system's
//! libblkid alone), so
//! neither carries its own copy of an ioctl number or a `cpu_set_t` loop.
//! Reading `/sys` and `/proc` is not here: that is `topology`'s job.
//! rustix covers affinity and `BLKSSZGET`; the two ioctls it has no wrapper
//! for go through its typed `ioctl` with a `// SAFETY:` line each.
#![deny(missing_docs)]

pub mod affinity;
pub mod blkid;
pub mod block;
pub mod file;
