//! Block device geometry and the NVMe namespace id, by ioctl on an open
//! device (`BLKGETSIZE64`, `BLKSSZGET`, `NVME_IOCTL_ID`), and the kernel's
//! exclusive claim of a block device ([`open_exclusive`]).

use std::ffi::c_void;
use std::io;
use std::os::fd::AsFd;

use rustix::ioctl::{self, Ioctl, IoctlOutput, Opcode};

/// `BLKGETSIZE64`: `_IOR(0x12, 114, size_t)`; the kernel writes a `u64`.
const BLKGETSIZE64: Opcode = ioctl::opcode::read::<usize>(0x12, 114);
/// `NVME_IOCTL_ID`: `_IO('N', 0x40)`; the namespace id is the return value.
const NVME_IOCTL_ID: Opcode = ioctl::opcode::none(b'N', 0x40);

/// Size of the block device open at `fd`, in bytes.
pub fn size_bytes(fd: impl AsFd) -> io::Result<u64> {
    // SAFETY: BLKGETSIZE64 is a getter: the kernel writes one u64 (whatever
    // size_t is) into the Getter's own buffer, which outlives the call, and
    // touches nothing else.
    unsafe {
        let get = ioctl::Getter::<BLKGETSIZE64, u64>::new();
        ioctl::ioctl(fd, get)
    }
    .map_err(io::Error::from)
}

/// Logical block size of the block device open at `fd`, in bytes.
pub fn logical_block_size(fd: impl AsFd) -> io::Result<u32> {
    rustix::fs::ioctl_blksszget(fd).map_err(io::Error::from)
}

/// Namespace id of the NVMe block device or generic character device
/// (`/dev/ngXnY`) open at `fd`. An error for anything else (`ENOTTY`).
pub fn nvme_namespace_id(fd: impl AsFd) -> io::Result<u32> {
    // SAFETY: NVME_IOCTL_ID takes no argument: ReturnValue passes a null
    // pointer the driver never dereferences, and the answer is the return
    // value, so no user memory is read or written.
    let nsid =
        unsafe { ioctl::ioctl(fd, ReturnValue::<NVME_IOCTL_ID>) }.map_err(io::Error::from)?;
    u32::try_from(nsid).ok().filter(|&n| n > 0).ok_or_else(|| {
        io::Error::other(format!("NVME_IOCTL_ID returned {nsid}, not a namespace id"))
    })
}

/// An ioctl without argument whose answer is its (non-negative) return
/// value.
struct ReturnValue<const OPCODE: Opcode>;

// SAFETY: the opcode takes no argument (`as_ptr` is null and never used) and
// its output is the return value alone; nothing in user space is written,
// so it is not mutating.
unsafe impl<const OPCODE: Opcode> Ioctl for ReturnValue<OPCODE> {
    type Output = IoctlOutput;

    const IS_MUTATING: bool = false;

    fn opcode(&self) -> Opcode {
        OPCODE
    }

    fn as_ptr(&mut self) -> *mut c_void {
        std::ptr::null_mut()
    }

    unsafe fn output_from_ptr(out: IoctlOutput, _: *mut c_void) -> rustix::io::Result<IoctlOutput> {
        Ok(out)
    }
}

/// Opens the block device at `path` exclusively (`O_EXCL` without
/// `O_CREAT`): the kernel refuses with `EBUSY` while anything claims it (a
/// mount in any mount namespace, md, dm, swap, another exclusive opener),
/// and nothing can claim it while the returned file stays open. (On a file
/// that is no block device `O_EXCL` means nothing: it opens.)
pub fn open_exclusive(path: &std::path::Path) -> io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_EXCL | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn opcodes_match_the_kernel_headers() {
        #[cfg(target_pointer_width = "64")]
        assert_eq!(BLKGETSIZE64 as u64, 0x8008_1272);
        assert_eq!(NVME_IOCTL_ID as u64, 0x4e40);
    }

    #[test]
    fn a_regular_file_is_not_a_block_device() {
        let f = std::fs::File::open(concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml"))
            .expect("open the manifest");
        for e in [
            size_bytes(&f).map(|_| ()).expect_err("not a block device"),
            logical_block_size(&f)
                .map(|_| ())
                .expect_err("not a block device"),
            nvme_namespace_id(&f).map(|_| ()).expect_err("not NVMe"),
        ] {
            assert_eq!(
                e.raw_os_error(),
                Some(rustix::io::Errno::NOTTY.raw_os_error()),
                "{e}"
            );
        }
    }
}
