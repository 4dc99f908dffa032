//! Memory placement: binding a fresh mapping's pages to one NUMA node.

use std::io;

/// `MPOL_BIND` of `include/uapi/linux/mempolicy.h`.
const MPOL_BIND: libc::c_long = 2;
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
            MPOL_BIND,
            mask.as_ptr(),
            maxnode,
            MPOL_MF_MOVE,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}
