//! VFIO: a PCI function handed to user space by the kernel's `vfio-pci`
//! driver, behind the type-1 IOMMU (`/dev/vfio/vfio` container, the
//! function's group `/dev/vfio/N`). This is the `unsafe` boundary of numio's
//! user-space NVMe driver: the VFIO ioctls (struct layouts from rust-vmm's
//! `vfio-bindings`; the ioctl numbers are `_IO(';', 100 + n)` from
//! `include/uapi/linux/vfio.h`), BAR0 mapped for register and doorbell
//! access ([`Bar`]), and memory the device reads and writes ([`DmaMem`]:
//! anonymous pages bound to a NUMA node, locked, and mapped into the IOMMU at
//! a bus address the caller chooses).
//!
//! In VFIO's no-IOMMU mode nothing translates the device's addresses: a
//! [`DmaMem`] is then one 2 MiB hugepage (physically contiguous, and a
//! page that does not move) whose bus address is its physical address
//! ([`crate::memory::physical_address`]), and the caller addresses other
//! memory it lends the device page by page, physically, too.
//!
//! What is left to the caller is the NVMe protocol over these: register
//! values, queue entries and PRPs, all plain integers. Every access to
//! device-visible memory is volatile and bounds-checked, so callers need no
//! `unsafe` except [`Container::map_dma`] of memory they own (the device may
//! write it until it is unmapped).

use std::ffi::CString;
use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::path::Path;
use std::ptr::NonNull;
use std::sync::Arc;

use vfio_bindings::bindings::vfio::{
    vfio_group_status, vfio_iommu_type1_dma_map, vfio_iommu_type1_dma_unmap, vfio_region_info,
    VFIO_TYPE1v2_IOMMU, VFIO_API_VERSION, VFIO_BASE, VFIO_DMA_MAP_FLAG_READ,
    VFIO_DMA_MAP_FLAG_WRITE, VFIO_GROUP_FLAGS_VIABLE, VFIO_NOIOMMU_IOMMU,
    VFIO_PCI_BAR0_REGION_INDEX, VFIO_PCI_CONFIG_REGION_INDEX, VFIO_REGION_INFO_FLAG_MMAP,
    VFIO_TYPE, VFIO_TYPE1_IOMMU,
};

/// `_IO(VFIO_TYPE, VFIO_BASE + nr)`: VFIO's ioctls carry no size or direction.
const fn vfio_io(nr: u32) -> libc::c_ulong {
    ((VFIO_TYPE as u32) << 8 | (VFIO_BASE + nr)) as libc::c_ulong
}
const GET_API_VERSION: libc::c_ulong = vfio_io(0);
const CHECK_EXTENSION: libc::c_ulong = vfio_io(1);
const SET_IOMMU: libc::c_ulong = vfio_io(2);
const GROUP_GET_STATUS: libc::c_ulong = vfio_io(3);
const GROUP_SET_CONTAINER: libc::c_ulong = vfio_io(4);
const GROUP_GET_DEVICE_FD: libc::c_ulong = vfio_io(6);
const DEVICE_GET_REGION_INFO: libc::c_ulong = vfio_io(8);
const IOMMU_MAP_DMA: libc::c_ulong = vfio_io(13);
const IOMMU_UNMAP_DMA: libc::c_ulong = vfio_io(14);

/// The container device.
pub const CONTAINER: &str = "/dev/vfio/vfio";

/// PCI Command register offset in config space, and its bits.
const PCI_COMMAND: u64 = 0x04;
const PCI_COMMAND_MEMORY: u16 = 1 << 1;
const PCI_COMMAND_MASTER: u16 = 1 << 2;

fn ioctl_arg(fd: RawFd, req: libc::c_ulong, arg: libc::c_ulong) -> io::Result<i32> {
    // SAFETY: `req` is one of VFIO's argument-by-value ioctls (API version,
    // extension check, set IOMMU type): the kernel reads no memory of ours.
    let r = unsafe { libc::ioctl(fd, req as _, arg) };
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

fn ioctl_ptr<T>(fd: RawFd, req: libc::c_ulong, arg: *mut T) -> io::Result<i32> {
    // SAFETY: each caller passes the struct the ioctl `req` is defined with
    // (argsz set to its size), valid for the call; the kernel reads and
    // writes at most argsz bytes of it.
    let r = unsafe { libc::ioctl(fd, req as _, arg) };
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

fn argsz<T>() -> u32 {
    std::mem::size_of::<T>() as u32
}

/// A VFIO container with its IOMMU set: where DMA mappings live.
#[derive(Debug)]
pub struct Container {
    fd: OwnedFd,
    noiommu: bool,
}

/// Size of the hugepage a [`DmaMem`] is in no-IOMMU mode.
pub const NOIOMMU_PIECE: usize = crate::memory::HUGEPAGE_BYTES;

impl Container {
    /// Whether this is VFIO's no-IOMMU mode: no mappings, the device
    /// addresses physical memory.
    pub fn noiommu(&self) -> bool {
        self.noiommu
    }

    /// Maps `len` bytes at `vaddr` into the IOMMU at bus address `iova`, for
    /// the device to read and write (pins the pages).
    ///
    /// # Safety
    ///
    /// `vaddr..vaddr + len` must be memory of this process that stays mapped
    /// until [`Container::unmap_dma`] of the same range (or the container
    /// is closed), and whose contents the caller lets the device change at
    /// any time until then.
    pub unsafe fn map_dma(&self, vaddr: *mut u8, len: usize, iova: u64) -> io::Result<()> {
        if self.noiommu {
            return Err(io::Error::other("no-IOMMU mode maps no DMA"));
        }
        let mut m = vfio_iommu_type1_dma_map {
            argsz: argsz::<vfio_iommu_type1_dma_map>(),
            flags: VFIO_DMA_MAP_FLAG_READ | VFIO_DMA_MAP_FLAG_WRITE,
            vaddr: vaddr as u64,
            iova,
            size: len as u64,
        };
        ioctl_ptr(self.fd.as_raw_fd(), IOMMU_MAP_DMA, &mut m).map(drop)
    }

    /// Removes the IOMMU mapping of `len` bytes at bus address `iova`.
    pub fn unmap_dma(&self, iova: u64, len: usize) -> io::Result<()> {
        let mut m = vfio_iommu_type1_dma_unmap {
            argsz: argsz::<vfio_iommu_type1_dma_unmap>(),
            flags: 0,
            iova,
            size: len as u64,
            ..Default::default()
        };
        ioctl_ptr(self.fd.as_raw_fd(), IOMMU_UNMAP_DMA, &mut m).map(drop)
    }
}

/// Why a device could not be opened, in words a user can act on.
#[derive(Debug)]
pub struct OpenError {
    /// What was being done.
    pub step: String,
    /// The OS error.
    pub source: io::Error,
}

impl std::fmt::Display for OpenError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.step, self.source)?;
        if matches!(self.source.raw_os_error(), Some(libc::EACCES | libc::EPERM)) {
            write!(
                f,
                " (run numio as root, or give this user the VFIO group device (e.g. `chown USER /dev/vfio/N`) and a locked-memory limit (`ulimit -l`) that covers the queues and buffers)"
            )?;
        }
        Ok(())
    }
}

impl std::error::Error for OpenError {}

fn step<T>(what: impl Into<String>, r: io::Result<T>) -> Result<T, OpenError> {
    r.map_err(|source| OpenError {
        step: what.into(),
        source,
    })
}

/// One PCI function opened through VFIO: its container (shared with the
/// DMA memory mapped for it), its group, its device fd and BAR0.
#[derive(Debug)]
pub struct Device {
    /// The container its DMA mappings go to.
    pub container: Arc<Container>,
    /// Register BAR.
    pub bar0: Bar,
    device: OwnedFd,
    // Kept open for the device's lifetime: closing the group detaches the
    // container.
    _group: File,
}

impl Device {
    /// Opens PCI function `addr` (e.g. `0000:02:00.0`) of the VFIO group
    /// device `group` (`/dev/vfio/N`, or `/dev/vfio/noiommu-N` when
    /// `noiommu`), sets the type-1 IOMMU (no-IOMMU mode when `noiommu`),
    /// maps BAR0 and enables memory decoding and bus mastering.
    pub fn open(group: &Path, addr: &str, noiommu: bool) -> Result<Device, OpenError> {
        let rw = |p: &Path| OpenOptions::new().read(true).write(true).open(p);
        let container = step(
            format!("opening {CONTAINER} (is the vfio module loaded?)"),
            rw(Path::new(CONTAINER)),
        )?;
        let cfd = container.as_raw_fd();
        let v = step("VFIO_GET_API_VERSION", ioctl_arg(cfd, GET_API_VERSION, 0))?;
        if v != VFIO_API_VERSION as i32 {
            return step(
                "VFIO_GET_API_VERSION",
                Err(io::Error::other(format!(
                    "version {v}, numio speaks {VFIO_API_VERSION}"
                ))),
            );
        }
        let iommu = if noiommu {
            VFIO_NOIOMMU_IOMMU
        } else if ioctl_arg(cfd, CHECK_EXTENSION, VFIO_TYPE1v2_IOMMU.into()).unwrap_or(0) > 0 {
            VFIO_TYPE1v2_IOMMU
        } else {
            VFIO_TYPE1_IOMMU
        };
        if ioctl_arg(cfd, CHECK_EXTENSION, iommu.into()).unwrap_or(0) <= 0 {
            let what = if noiommu {
                "support for no-IOMMU mode (the kernel needs CONFIG_VFIO_NOIOMMU and `modprobe vfio enable_unsafe_noiommu_mode=1`)"
            } else {
                "type-1 IOMMU (load vfio_iommu_type1 and boot with the IOMMU on, e.g. intel_iommu=on)"
            };
            return step(
                "VFIO_CHECK_EXTENSION",
                Err(io::Error::other(format!("the kernel offers no {what}"))),
            );
        }
        let group_file = step(format!("opening {}", group.display()), rw(group))?;
        let gfd = group_file.as_raw_fd();
        let mut status = vfio_group_status {
            argsz: argsz::<vfio_group_status>(),
            flags: 0,
        };
        step(
            "VFIO_GROUP_GET_STATUS",
            ioctl_ptr(gfd, GROUP_GET_STATUS, &mut status),
        )?;
        if status.flags & VFIO_GROUP_FLAGS_VIABLE == 0 {
            return step(
                format!("IOMMU group {}", group.display()),
                Err(io::Error::other(
                    "not viable: every device of the group must be bound to vfio-pci (or unbound)",
                )),
            );
        }
        let mut c = cfd;
        step(
            "VFIO_GROUP_SET_CONTAINER",
            ioctl_ptr(gfd, GROUP_SET_CONTAINER, &mut c),
        )?;
        ioctl_arg(cfd, SET_IOMMU, iommu.into()).map_err(|source| {
            let hint = if source.raw_os_error() == Some(libc::EPERM) && !noiommu {
                ": the kernel refuses the type-1 IOMMU on a machine without interrupt remapping; numio's driver polls and uses no interrupts, so `modprobe vfio_iommu_type1 allow_unsafe_interrupts=1` is enough for it (that lets every VFIO device's MSIs through unchecked: leave it off where VMs get devices)"
            } else {
                ""
            };
            OpenError {
                step: format!("VFIO_SET_IOMMU{hint}"),
                source,
            }
        })?;
        let name = CString::new(addr).map_err(|_| OpenError {
            step: format!("PCI address {addr:?}"),
            source: io::ErrorKind::InvalidInput.into(),
        })?;
        let dfd = step(
            format!("VFIO_GROUP_GET_DEVICE_FD {addr}"),
            ioctl_ptr(gfd, GROUP_GET_DEVICE_FD, name.as_ptr().cast_mut()),
        )?;
        // SAFETY: the ioctl returned a new fd that nothing else owns.
        let device = unsafe { OwnedFd::from_raw_fd(dfd) };
        let bar_info = step(
            "VFIO_DEVICE_GET_REGION_INFO (BAR0)",
            region_info(device.as_raw_fd(), VFIO_PCI_BAR0_REGION_INDEX),
        )?;
        if bar_info.flags & VFIO_REGION_INFO_FLAG_MMAP == 0 || bar_info.size < 0x2000 {
            return step(
                "BAR0",
                Err(io::Error::other(format!(
                    "not mappable or too small ({} bytes, flags {:#x}): not an NVMe controller's register BAR",
                    bar_info.size, bar_info.flags
                ))),
            );
        }
        let bar0 = step(
            "mapping BAR0",
            Bar::map(device.as_raw_fd(), bar_info.offset, bar_info.size as usize),
        )?;
        step(
            "enabling memory decoding and bus mastering (PCI Command register)",
            enable_bus_master(device.as_raw_fd()),
        )?;
        Ok(Device {
            container: Arc::new(Container {
                fd: container.into(),
                noiommu,
            }),
            bar0,
            device,
            _group: group_file,
        })
    }

    /// The device fd (for config space access by the caller, if needed).
    pub fn fd(&self) -> RawFd {
        self.device.as_raw_fd()
    }
}

fn region_info(fd: RawFd, index: u32) -> io::Result<vfio_region_info> {
    let mut r = vfio_region_info {
        argsz: argsz::<vfio_region_info>(),
        index,
        ..Default::default()
    };
    ioctl_ptr(fd, DEVICE_GET_REGION_INFO, &mut r)?;
    Ok(r)
}

fn enable_bus_master(fd: RawFd) -> io::Result<()> {
    let cfg = region_info(fd, VFIO_PCI_CONFIG_REGION_INDEX)?;
    let at = (cfg.offset + PCI_COMMAND) as libc::off_t;
    let mut v = [0u8; 2];
    // SAFETY: reads 2 bytes into `v` from the device fd's config region.
    let n = unsafe { libc::pread(fd, v.as_mut_ptr().cast(), 2, at) };
    if n != 2 {
        return Err(io::Error::last_os_error());
    }
    let cmd = u16::from_le_bytes(v) | PCI_COMMAND_MEMORY | PCI_COMMAND_MASTER;
    let b = cmd.to_le_bytes();
    // SAFETY: writes the 2 bytes of `b` to the config region.
    let n = unsafe { libc::pwrite(fd, b.as_ptr().cast(), 2, at) };
    if n != 2 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// A device's memory-mapped BAR: 32- and 64-bit volatile register access,
/// bounds-checked.
#[derive(Debug)]
pub struct Bar {
    ptr: NonNull<u8>,
    len: usize,
}

// SAFETY: the mapping is device memory shared by design; each access is a
// single volatile load or store, and the mapping lives as long as `Bar`.
unsafe impl Send for Bar {}
// SAFETY: as for Send; concurrent accesses go to distinct registers (each
// worker rings its own doorbells) or are serialised by the caller.
unsafe impl Sync for Bar {}

impl Bar {
    fn map(fd: RawFd, offset: u64, len: usize) -> io::Result<Bar> {
        // SAFETY: a fresh shared mapping of the device fd's region; the
        // kernel checks offset and length against the BAR.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd,
                offset as libc::off_t,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(Bar {
            ptr: NonNull::new(p.cast()).ok_or_else(|| io::Error::other("mmap returned null"))?,
            len,
        })
    }

    fn at<T>(&self, off: usize) -> *mut T {
        assert!(
            off % std::mem::size_of::<T>() == 0 && off + std::mem::size_of::<T>() <= self.len,
            "register offset {off:#x} outside BAR0 ({} bytes)",
            self.len
        );
        self.ptr.as_ptr().wrapping_add(off).cast()
    }

    /// Reads the 32-bit register at byte offset `off`.
    pub fn read32(&self, off: usize) -> u32 {
        // SAFETY: aligned and inside the mapping (checked by `at`).
        unsafe { self.at::<u32>(off).read_volatile() }
    }

    /// Writes the 32-bit register at byte offset `off`.
    pub fn write32(&self, off: usize, v: u32) {
        // SAFETY: aligned and inside the mapping (checked by `at`).
        unsafe { self.at::<u32>(off).write_volatile(v) }
    }

    /// Reads the 64-bit register at `off` (two 32-bit reads, low first, as
    /// the NVMe spec allows and as every controller supports).
    pub fn read64(&self, off: usize) -> u64 {
        u64::from(self.read32(off)) | u64::from(self.read32(off + 4)) << 32
    }

    /// Writes the 64-bit register at `off` (two 32-bit writes, low first).
    pub fn write64(&self, off: usize, v: u64) {
        self.write32(off, v as u32);
        self.write32(off + 4, (v >> 32) as u32);
    }

    /// Rings a doorbell: orders every earlier store to DMA memory (queue
    /// entries) before the register write that tells the device to read
    /// them.
    #[inline]
    pub fn ring(&self, off: usize, v: u32) {
        store_fence();
        self.write32(off, v);
    }
}

impl Drop for Bar {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly the mapping `map` made; no access follows.
        unsafe { libc::munmap(self.ptr.as_ptr().cast(), self.len) };
    }
}

/// Orders earlier stores before later ones as the device sees them.
#[inline]
pub fn store_fence() {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: sfence has no operands and is available on every x86_64.
    unsafe {
        std::arch::x86_64::_mm_sfence()
    };
    #[cfg(not(target_arch = "x86_64"))]
    std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
}

/// Orders a load of a completion's phase before the loads of its other
/// fields.
#[inline]
pub fn load_fence() {
    std::sync::atomic::fence(std::sync::atomic::Ordering::Acquire);
}

/// Memory the device reads and writes: anonymous pages, bound to a NUMA
/// node, zeroed, and mapped into the container's IOMMU at `iova`
/// (unmapped and freed on drop); in no-IOMMU mode one 2 MiB hugepage,
/// preferring the node, at its physical address. Volatile, bounds-checked
/// access.
#[derive(Debug)]
pub struct DmaMem {
    ptr: NonNull<u8>,
    len: usize,
    iova: u64,
    container: Arc<Container>,
}

// SAFETY: owned memory; the owner (one worker) is the only CPU-side user.
unsafe impl Send for DmaMem {}

impl DmaMem {
    /// `len` bytes (rounded up to 4 KiB) on `node` (when given: mbind,
    /// falling back to the default policy), mapped at bus address `iova`.
    /// In no-IOMMU mode: a hugepage (`len` at most 2 MiB) at its physical
    /// address (`iova` unused).
    pub fn new(
        container: &Arc<Container>,
        len: usize,
        node: Option<u32>,
        iova: u64,
    ) -> io::Result<DmaMem> {
        if container.noiommu {
            return DmaMem::physical(container, len, node);
        }
        let len = len.div_ceil(4096) * 4096;
        // SAFETY: a fresh private anonymous mapping.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let ptr = NonNull::new(p.cast::<u8>()).ok_or_else(|| io::Error::other("mmap null"))?;
        if let Some(n) = node {
            // Best effort: a machine without that node keeps the default.
            // SAFETY: our fresh mapping, not yet handed out.
            let _ = unsafe { crate::memory::mbind(ptr.as_ptr(), len, n) };
        }
        // SAFETY: touching our own fresh mapping (places the pages on the
        // node now, not at the device's first access).
        unsafe { std::ptr::write_bytes(ptr.as_ptr(), 0, len) };
        // SAFETY: the memory is ours and lives until drop, which unmaps
        // the IOVA range before freeing it.
        if let Err(e) = unsafe { container.map_dma(ptr.as_ptr(), len, iova) } {
            // SAFETY: our fresh mapping, never handed out.
            unsafe { libc::munmap(ptr.as_ptr().cast(), len) };
            return Err(io::Error::new(
                e.kind(),
                format!("mapping it into the IOMMU: {e} (locked memory limit? `ulimit -l`)"),
            ));
        }
        Ok(DmaMem {
            ptr,
            len,
            iova,
            container: container.clone(),
        })
    }

    fn physical(container: &Arc<Container>, len: usize, node: Option<u32>) -> io::Result<DmaMem> {
        if len > NOIOMMU_PIECE {
            return Err(io::Error::other(format!(
                "no-IOMMU mode: one piece of queue memory is at most a 2 MiB hugepage ({len} bytes asked)"
            )));
        }
        let len = NOIOMMU_PIECE;
        let ptr = crate::memory::map_hugepages(len, node).map_err(|e| {
            io::Error::other(format!(
                "no-IOMMU mode keeps queues on 2 MiB hugepages, and none is free ({e}): reserve them, e.g. `numio vfio bind --allow-noiommu --hugepages 32 ADDR`"
            ))
        })?;
        match crate::memory::physical_address(ptr.as_ptr()) {
            Ok(iova) => Ok(DmaMem {
                ptr,
                len,
                iova,
                container: container.clone(),
            }),
            Err(e) => {
                // SAFETY: our mapping, never handed out.
                unsafe { libc::munmap(ptr.as_ptr().cast(), len) };
                Err(e)
            }
        }
    }

    /// Bus address of byte 0.
    pub fn iova(&self) -> u64 {
        self.iova
    }

    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether it is empty (never: at least one page).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn at<T>(&self, off: usize) -> *mut T {
        assert!(
            off % std::mem::size_of::<T>() == 0 && off + std::mem::size_of::<T>() <= self.len,
            "offset {off:#x} outside DMA memory of {} bytes",
            self.len
        );
        self.ptr.as_ptr().wrapping_add(off).cast()
    }

    /// Volatile read of the u16 at `off`.
    #[inline]
    pub fn read16(&self, off: usize) -> u16 {
        // SAFETY: aligned and inside our mapping (checked by `at`).
        unsafe { self.at::<u16>(off).read_volatile() }
    }

    /// Volatile read of the u32 at `off`.
    #[inline]
    pub fn read32(&self, off: usize) -> u32 {
        // SAFETY: aligned and inside our mapping (checked by `at`).
        unsafe { self.at::<u32>(off).read_volatile() }
    }

    /// Volatile write of the u64 at `off`.
    #[inline]
    pub fn write64(&self, off: usize, v: u64) {
        // SAFETY: aligned and inside our mapping (checked by `at`).
        unsafe { self.at::<u64>(off).write_volatile(v) }
    }

    /// Writes eight u64 (one 64-byte queue entry) at `off`.
    #[inline]
    pub fn write_entry(&self, off: usize, e: &[u64; 8]) {
        let p = self.at::<[u64; 8]>(off);
        // SAFETY: inside our mapping and 8-byte aligned (checked by `at`
        // for the 64-byte type's size; `off` is a multiple of 64).
        unsafe { p.write_volatile(*e) }
    }

    /// Copies `out.len()` bytes from `off` (data the device wrote).
    pub fn read_bytes(&self, off: usize, out: &mut [u8]) {
        assert!(off + out.len() <= self.len, "read outside DMA memory");
        for (i, b) in out.iter_mut().enumerate() {
            // SAFETY: inside our mapping (asserted above).
            *b = unsafe { self.ptr.as_ptr().add(off + i).read_volatile() };
        }
    }

    /// Zeroes `len` bytes from `off`.
    pub fn zero(&self, off: usize, len: usize) {
        assert!(off + len <= self.len, "zeroing outside DMA memory");
        for i in 0..len {
            // SAFETY: inside our mapping (asserted above).
            unsafe { self.ptr.as_ptr().add(off + i).write_volatile(0) };
        }
    }
}

impl Drop for DmaMem {
    fn drop(&mut self) {
        if !self.container.noiommu {
            let _ = self.container.unmap_dma(self.iova, self.len);
        }
        // SAFETY: unmaps exactly our mapping; no access follows.
        unsafe { libc::munmap(self.ptr.as_ptr().cast(), self.len) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ioctl_numbers_are_the_kernels() {
        // include/uapi/linux/vfio.h: VFIO_TYPE ';' (0x3b), VFIO_BASE 100.
        assert_eq!(GET_API_VERSION, 0x3b64);
        assert_eq!(GROUP_GET_DEVICE_FD, 0x3b6a);
        assert_eq!(DEVICE_GET_REGION_INFO, 0x3b6c);
        assert_eq!(IOMMU_MAP_DMA, 0x3b71);
        assert_eq!(IOMMU_UNMAP_DMA, 0x3b72);
    }

    #[test]
    fn a_refused_open_names_root_and_the_group_device() {
        let e = OpenError {
            step: "opening /dev/vfio/7".into(),
            source: io::Error::from_raw_os_error(libc::EACCES),
        }
        .to_string();
        assert!(
            e.starts_with("opening /dev/vfio/7: Permission denied")
                && e.contains("as root")
                && e.contains("chown USER /dev/vfio/N"),
            "{e}"
        );
        let e = OpenError {
            step: "opening /dev/vfio/7".into(),
            source: io::Error::from_raw_os_error(libc::ENOENT),
        }
        .to_string();
        assert!(!e.contains("as root"), "{e}");
    }

    #[test]
    fn a_missing_group_names_the_step() {
        let e = Device::open(Path::new("/nonexistent/vfio/7"), "0000:00:00.0", false)
            .expect_err("no such group");
        // Either the container is missing here, or the group is.
        assert!(
            e.step.contains("/dev/vfio/vfio") || e.step.contains("/nonexistent/vfio/7"),
            "{e}"
        );
    }
}
