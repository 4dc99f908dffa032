//! The OS calls the engine, the NVMe/TCP target and `tune` make, each in
//! one place: the calling thread's CPU affinity ([`affinity`]), a block
//! device's size, logical block size and NVMe namespace id ([`block`]), the
//! signatures on a device by libblkid's probing API ([`blkid`]), files kept
//! where other users may write, made new and never opened through a symlink
//! ([`file`]), NVMe admin commands without data (Get and Set Features)
//! through a controller's character device ([`nvme_admin`]), the kernel's
//! NVMe over Fabrics host connect and controller delete ([`fabrics`]), the interface
//! holding an address ([`net`]), NUMA binding of a mapping ([`memory`]),
//! child processes tied to their parent and stopped with SIGTERM
//! ([`process`]),
//! a PCI function through VFIO for the user-space NVMe driver ([`vfio`]:
//! container, group, BAR0, IOMMU-mapped DMA memory), RDMA verbs and the
//! RDMA CM through the system's rdma-core ([`rdma`], on bindings generated
//! once from rdma-core's headers and committed), and the
//! io_uring boundary ([`uring`]: the ring set-up fallback chain, entering
//! through the registered ring fd, typed SQE views).
//!
//! Libraries that only some features need (libblkid, rdma-core) are opened
//! at run time when first asked for ([`dylib`]), so numio builds with no
//! system headers, cmake or libclang and starts without them.
//!
//! A leaf below `engine`, `nvmf` and `tune` (it depends on rustix, libc
//! and the io-uring crate), so none carries its own
//! copy of an ioctl number, a `cpu_set_t` loop or a ring set-up chain.
//! Reading `/sys` and `/proc` is not here: that is `topology`'s job. rustix
//! covers affinity and `BLKSSZGET`; the three ioctls it has no wrapper for
//! go through its typed `ioctl`, and the io_uring calls neither rustix nor
//! the io-uring crate can make as the hot path needs them go through
//! `libc::syscall`, each with a `// SAFETY:` line.
#![deny(missing_docs)]

pub mod affinity;
pub mod blkid;
pub mod block;
pub mod dylib;
pub mod fabrics;
pub mod file;
pub mod memory;
pub mod net;
pub mod nvme_admin;
pub mod process;
pub mod rdma;
pub mod uring;
pub mod vfio;
