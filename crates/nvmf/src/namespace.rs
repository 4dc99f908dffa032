//! Namespaces: a file descriptor plus geometry and identifiers.
//!
//! `mem:SIZE` is a `memfd` (RAM, punchable), a path is a regular file or a
//! block device. All access is positional (`pread`/`pwrite` on `&File`), so a
//! namespace is shared by every reactor without a lock; the kernel orders
//! overlapping writes as it does for any file. Writes go through the page
//! cache and Flush is `fdatasync` (the target reports a volatile write cache).

use std::fs::{File, OpenOptions};
use std::os::fd::{AsRawFd, FromRawFd};
use std::os::unix::fs::{FileExt, FileTypeExt};

use crate::config::Backing;
use crate::error::TargetError;

/// Logical block size served (512 bytes; LBADS 9).
pub const BLOCK_SIZE_BYTES: u64 = 512;
/// log2 of [`BLOCK_SIZE_BYTES`].
pub const LBADS: u8 = 9;

/// One namespace.
#[derive(Debug)]
pub struct Namespace {
    /// Namespace id (1-based).
    pub nsid: u32,
    /// What backs it, as the user wrote it.
    pub spec: String,
    file: File,
    size_bytes: u64,
    /// NGUID.
    pub nguid: [u8; 16],
    /// UUID (version 8, derived from the subsystem NQN and nsid).
    pub uuid: [u8; 16],
    punch_ok: bool,
}

fn fnv128(parts: &[&[u8]], salt: u8) -> [u8; 16] {
    let mut h: u128 = 0x6c62_272e_07bb_0142_62b8_2175_6295_c58d ^ salt as u128;
    for p in parts {
        for &b in *p {
            h ^= b as u128;
            h = h.wrapping_mul(0x0000_0000_0100_0000_0000_0000_0000_013B);
        }
        h ^= 0xFF;
    }
    h.to_be_bytes()
}

impl Namespace {
    /// Opens or creates the backing of namespace `nsid` of subsystem `nqn`.
    pub fn open(nqn: &str, nsid: u32, backing: &Backing, spec: &str) -> Result<Self, TargetError> {
        let berr = |source| TargetError::Backing {
            path: spec.to_string(),
            source,
        };
        let (file, size_bytes, punch_ok) = match backing {
            Backing::Memory { size_bytes } => {
                let name = c"numio-ns";
                // SAFETY: name is a valid NUL-terminated string; the returned fd
                // is checked and then owned by exactly one File.
                let fd = unsafe { libc::memfd_create(name.as_ptr(), libc::MFD_CLOEXEC) };
                if fd < 0 {
                    return Err(berr(std::io::Error::last_os_error()));
                }
                // SAFETY: fd was just created and is owned by nobody else.
                let f = unsafe { File::from_raw_fd(fd) };
                f.set_len(*size_bytes).map_err(berr)?;
                (f, *size_bytes, true)
            }
            Backing::Path(p) => {
                let f = OpenOptions::new()
                    .read(true)
                    .write(true)
                    .open(p)
                    .map_err(berr)?;
                let meta = f.metadata().map_err(berr)?;
                let size = if meta.file_type().is_block_device() {
                    block_device_size(&f).map_err(berr)?
                } else {
                    meta.len()
                };
                (f, size, !meta.file_type().is_block_device())
            }
        };
        if size_bytes == 0 || size_bytes % BLOCK_SIZE_BYTES != 0 {
            return Err(TargetError::BackingSize {
                path: spec.to_string(),
                size_bytes,
            });
        }
        let nsid_b = nsid.to_le_bytes();
        let nguid = fnv128(&[nqn.as_bytes(), &nsid_b], 1);
        let mut uuid = fnv128(&[nqn.as_bytes(), &nsid_b], 2);
        uuid[6] = (uuid[6] & 0x0F) | 0x80; // version 8
        uuid[8] = (uuid[8] & 0x3F) | 0x80; // RFC 4122 variant
        Ok(Self {
            nsid,
            spec: spec.to_string(),
            file,
            size_bytes,
            nguid,
            uuid,
            punch_ok,
        })
    }

    /// Size in bytes.
    pub fn size_bytes(&self) -> u64 {
        self.size_bytes
    }

    /// Size in logical blocks.
    pub fn blocks(&self) -> u64 {
        self.size_bytes / BLOCK_SIZE_BYTES
    }

    /// True when `nlb` blocks from `slba` lie inside the namespace.
    pub fn in_range(&self, slba: u64, nlb: u64) -> bool {
        slba.checked_add(nlb)
            .is_some_and(|end| end <= self.blocks())
    }

    /// Reads `buf.len()` bytes at block `slba`.
    pub fn read(&self, slba: u64, buf: &mut [u8]) -> std::io::Result<()> {
        self.file.read_exact_at(buf, slba * BLOCK_SIZE_BYTES)
    }

    /// Writes `buf` at block `slba`.
    pub fn write(&self, slba: u64, buf: &[u8]) -> std::io::Result<()> {
        self.file.write_all_at(buf, slba * BLOCK_SIZE_BYTES)
    }

    /// Makes written data durable.
    pub fn flush(&self) -> std::io::Result<()> {
        self.file.sync_data()
    }

    /// Zeroes `nlb` blocks at `slba`: hole punching where the backing
    /// supports it (blocks read back as zero), else writes zeroes.
    pub fn zero(&self, slba: u64, nlb: u64) -> std::io::Result<()> {
        let off = slba * BLOCK_SIZE_BYTES;
        let len = nlb * BLOCK_SIZE_BYTES;
        if self.punch_ok {
            let mode = libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE;
            // SAFETY: fallocate only reads its integer arguments; the fd is
            // owned by self.file for the duration of the call.
            let rc =
                unsafe { libc::fallocate(self.file.as_raw_fd(), mode, off as i64, len as i64) };
            if rc == 0 {
                return Ok(());
            }
        }
        let zeros = vec![0u8; len.min(1 << 20) as usize];
        let mut done = 0u64;
        while done < len {
            let n = (len - done).min(zeros.len() as u64) as usize;
            self.file.write_all_at(&zeros[..n], off + done)?;
            done += n as u64;
        }
        Ok(())
    }
}

fn block_device_size(f: &File) -> std::io::Result<u64> {
    const BLKGETSIZE64: libc::c_ulong = 0x8008_1272;
    let mut size: u64 = 0;
    // SAFETY: BLKGETSIZE64 writes one u64 through the pointer, which points
    // at a live local for the duration of the call.
    let rc = unsafe { libc::ioctl(f.as_raw_fd(), BLKGETSIZE64, &mut size as *mut u64) };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(size)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_namespace_read_write_zero() {
        let ns = Namespace::open(
            "nqn.t",
            1,
            &Backing::Memory {
                size_bytes: 1 << 20,
            },
            "mem:1M",
        )
        .unwrap();
        assert_eq!(ns.blocks(), 2048);
        assert!(ns.in_range(2047, 1));
        assert!(!ns.in_range(2047, 2));
        assert!(!ns.in_range(u64::MAX, 2));
        ns.write(10, &[0xAB; 1024]).unwrap();
        let mut b = [0u8; 1024];
        ns.read(10, &mut b).unwrap();
        assert_eq!(b, [0xAB; 1024]);
        ns.zero(10, 1).unwrap();
        ns.read(10, &mut b).unwrap();
        assert_eq!(&b[..512], &[0; 512]);
        assert_eq!(&b[512..], &[0xAB; 512]);
        ns.flush().unwrap();
        let other = Namespace::open(
            "nqn.t",
            2,
            &Backing::Memory {
                size_bytes: 1 << 20,
            },
            "mem:1M",
        )
        .unwrap();
        assert_ne!(ns.nguid, other.nguid);
        assert_eq!(ns.uuid[6] >> 4, 8);
    }

    #[test]
    fn file_namespace_and_errors() {
        let dir = std::env::temp_dir().join(format!("numio-ns-{}", std::process::id()));
        std::fs::write(&dir, vec![0u8; 8192]).unwrap();
        let ns = Namespace::open("nqn.t", 1, &Backing::Path(dir.clone()), "file").unwrap();
        assert_eq!(ns.blocks(), 16);
        std::fs::write(&dir, vec![0u8; 100]).unwrap();
        let e = Namespace::open("nqn.t", 1, &Backing::Path(dir.clone()), "file").unwrap_err();
        assert!(e.to_string().contains("multiple of 512"), "{e}");
        std::fs::remove_file(&dir).unwrap();
        let e = Namespace::open("nqn.t", 1, &Backing::Path(dir.clone()), "missing").unwrap_err();
        assert!(e.to_string().contains("missing"), "{e}");
    }
}
