//! Memory placement: binding a fresh mapping's pages to one NUMA node (or
//! preferring it), asking which node a page landed on, and 2 MiB hugepage
//! mappings.

use std::io;
use std::ptr::NonNull;

/// The hugepage size [`map_hugepages`] maps.
pub const HUGEPAGE_BYTES: usize = 2 << 20;

/// `MPOL_PREFERRED` of `include/uapi/linux/mempolicy.h`.
const MPOL_PREFERRED: libc::c_long = 1;
/// `MPOL_BIND` of `include/uapi/linux/mempolicy.h`.
const MPOL_BIND: libc::c_long = 2;
/// get_mempolicy: return the node of the page at `addr`.
const MPOL_F_NODE: libc::c_ulong = 1;
/// get_mempolicy: `addr` names a page of the caller's.
const MPOL_F_ADDR: libc::c_ulong = 1 << 1;
/// `MPOL_MF_MOVE`: move pages already faulted in.
const MPOL_MF_MOVE: libc::c_ulong = 1 << 1;

/// Binds the pages of `addr..addr + len` to NUMA node `node` with
/// mbind(2), moving any already faulted in.
///
/// # Safety
///
/// `addr..addr + len` must be a page-aligned mapping the caller owns: its
/// pages may move to another node (their contents stay).
pub unsafe fn mbind(addr: *mut u8, len: usize, node: u32) -> io::Result<()> {
    // SAFETY: forwarded contract.
    unsafe { set_policy(addr, len, node, MPOL_BIND, MPOL_MF_MOVE) }
}

/// Asks for the pages of `addr..addr + len` to come from node `node`,
/// falling back to other nodes when it has none (not yet faulted pages
/// only). For hugetlb mappings, whose pages were reserved from the whole
/// machine's pool at mmap: a strict bind could then fault with no page on
/// that node (SIGBUS), a preference cannot.
///
/// # Safety
///
/// As [`mbind`].
pub unsafe fn prefer_node(addr: *mut u8, len: usize, node: u32) -> io::Result<()> {
    // SAFETY: forwarded contract.
    unsafe { set_policy(addr, len, node, MPOL_PREFERRED, 0) }
}

/// A fresh private mapping of `len` bytes (a multiple of
/// [`HUGEPAGE_BYTES`]) on 2 MiB hugepages, zeroed: the pages come from
/// `node` where it has them free, else from another node (they were
/// reserved from the whole machine's pool at mmap, so a strict bind could
/// fault with no page on the node, a preference cannot). Fails (ENOMEM)
/// when the pool has too few free. The caller owns the mapping and
/// unmaps it with `munmap(ptr, len)`.
pub fn map_hugepages(len: usize, node: Option<u32>) -> io::Result<NonNull<u8>> {
    debug_assert!(len > 0 && len % HUGEPAGE_BYTES == 0);
    // SAFETY: a fresh private hugetlb mapping; nothing else refers to it.
    // Its pages are reserved now (mmap fails when the pool is short), so
    // touching them below cannot fault.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_HUGETLB | libc::MAP_HUGE_2MB,
            -1,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        return Err(io::Error::last_os_error());
    }
    let ptr = NonNull::new(p.cast::<u8>()).ok_or_else(|| io::Error::other("mmap returned null"))?;
    if let Some(n) = node {
        // Best effort: a preference that fails leaves the default.
        // SAFETY: our fresh mapping, not yet handed out or faulted.
        let _ = unsafe { prefer_node(ptr.as_ptr(), len, n) };
    }
    // SAFETY: the mapping is `len` long, writable and ours; its pages are
    // reserved.
    unsafe { std::ptr::write_bytes(ptr.as_ptr(), 0, len) };
    Ok(ptr)
}

/// The node of the (faulted-in) page at `addr` of this process.
pub fn node_of(addr: *const u8) -> io::Result<u32> {
    // The kernel only looks the address up: pass it as a number.
    let addr = addr as usize;
    let mut node: libc::c_int = -1;
    // SAFETY: get_mempolicy writes one int to `node`; with a null mask
    // pointer it writes no mask; `addr` is only looked up, not accessed.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_get_mempolicy,
            &mut node as *mut libc::c_int,
            std::ptr::null_mut::<libc::c_ulong>(),
            0 as libc::c_ulong,
            addr,
            MPOL_F_NODE | MPOL_F_ADDR,
        )
    };
    if rc == 0 && node >= 0 {
        Ok(node as u32)
    } else {
        Err(io::Error::last_os_error())
    }
}

/// The physical address of the (faulted-in) byte at `addr` of this
/// process, from `/proc/self/pagemap`: what a device addresses when no
/// IOMMU translates (VFIO's no-IOMMU mode). Needs CAP_SYS_ADMIN (without
/// it the kernel reports frame 0, refused here by name). The page must not
/// move while a device uses the address: hugetlb pages do not.
pub fn physical_address(addr: *const u8) -> io::Result<u64> {
    use std::os::unix::fs::FileExt;
    const PAGE: u64 = 4096;
    let va = addr as u64;
    let f = std::fs::File::open("/proc/self/pagemap")?;
    let mut e = [0u8; 8];
    f.read_exact_at(&mut e, va / PAGE * 8)?;
    let e = u64::from_le_bytes(e);
    if e & 1 << 63 == 0 {
        return Err(io::Error::other(format!(
            "page at {va:#x} is not present (touch it first)"
        )));
    }
    let pfn = e & ((1 << 55) - 1);
    if pfn == 0 {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            "/proc/self/pagemap hides physical addresses without CAP_SYS_ADMIN: run as root",
        ));
    }
    Ok(pfn * PAGE + va % PAGE)
}

/// # Safety
///
/// As [`mbind`].
unsafe fn set_policy(
    addr: *mut u8,
    len: usize,
    node: u32,
    mode: libc::c_long,
    flags: libc::c_ulong,
) -> io::Result<()> {
    if node >= 1024 {
        return Err(io::Error::from_raw_os_error(libc::EINVAL));
    }
    let mut mask = [0u64; 16];
    mask[(node / 64) as usize] |= 1u64 << (node % 64);
    let maxnode = (mask.len() * 64) as libc::c_ulong;
    // SAFETY: the caller owns the range (this fn's contract); the mask
    // outlives the call.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_mbind,
            addr,
            len,
            mode,
            mask.as_ptr(),
            maxnode,
            flags,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_touched_page_has_a_physical_address_for_root_only() {
        let v = vec![7u8; 8192];
        let p = &v[4100] as *const u8;
        match physical_address(p) {
            // Same offset in the page as the virtual address.
            Ok(pa) => assert_eq!(pa % 4096, p as u64 % 4096),
            Err(e) => assert_eq!(e.kind(), io::ErrorKind::PermissionDenied, "{e}"),
        }
    }
}
