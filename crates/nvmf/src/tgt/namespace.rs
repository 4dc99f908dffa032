//! Namespaces: a file descriptor plus geometry and identifiers.
//!
//! `mem:SIZE` is plain memory ([`RamRegion`]: huge pages where the machine
//! has them) served synchronously with copies on the reactor. A path is a regular file or a block device,
//! opened with `O_DIRECT` and served asynchronously on the owning reactor's
//! io_uring from page-aligned request buffers; where the filesystem refuses
//! `O_DIRECT` (or the `buffered` option asks) it goes through the page cache
//! instead, still on the ring, and start-up says so. Every access is
//! positional, so a namespace is shared by every reactor without a lock; the
//! kernel orders overlapping writes as it does for any file. Flush is
//! `fdatasync` (the target reports a volatile write cache).

use std::fs::{File, OpenOptions};
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::fs::{FileExt, FileTypeExt, OpenOptionsExt};
use std::sync::atomic::{AtomicU64, Ordering};

use super::buf::AlignedBuf;
use super::config::{Backing, NamespaceConfig, DEFAULT_BLOCK_SIZE_BYTES};
use super::error::TargetError;
use super::ram::RamRegion;

/// How a namespace's blocks are reached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Access {
    /// RAM (`mem:`), synchronous copies on the reactor.
    Memory,
    /// `O_DIRECT` through the reactor's io_uring.
    Direct,
    /// Page cache through the reactor's io_uring, and why.
    Buffered {
        /// Why not `O_DIRECT`.
        why: String,
    },
}

/// One namespace.
#[derive(Debug)]
pub struct Namespace {
    /// Namespace id (1-based).
    pub nsid: u32,
    /// What backs it, as the user wrote it.
    pub spec: String,
    file: File,
    /// Size in bytes; changes when the backing file or device is resized
    /// (see [`Namespace::refresh_size`]).
    size_bytes: AtomicU64,
    /// NGUID.
    pub nguid: [u8; 16],
    /// UUID (version 8, derived from the subsystem NQN and nsid).
    pub uuid: [u8; 16],
    /// Direct, buffered or RAM.
    pub access: Access,
    block_device: bool,
    lba_bytes: u64,
    /// A RAM namespace's memory (`file` is then an empty memfd, for the
    /// descriptor the API hands out).
    ram: Option<RamRegion>,
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

fn memory_file(size_bytes: u64) -> std::io::Result<File> {
    let fd = rustix::fs::memfd_create(c"numio-ns", rustix::fs::MemfdFlags::CLOEXEC)?;
    let f = File::from(fd);
    f.set_len(size_bytes)?;
    Ok(f)
}

fn open_rw(path: &std::path::Path, direct: bool) -> std::io::Result<File> {
    let mut o = OpenOptions::new();
    o.read(true).write(true);
    if direct {
        o.custom_flags(libc::O_DIRECT);
    }
    o.open(path)
}

/// Opens `path` with `O_DIRECT` (unless `buffered`); also says whether it
/// is a block device and, if so, its logical block size.
fn open_path(
    path: &std::path::Path,
    buffered: bool,
) -> std::io::Result<(File, Access, Option<u32>)> {
    let (f, access) = if buffered {
        let why = "the buffered option".to_string();
        (open_rw(path, false)?, Access::Buffered { why })
    } else {
        match open_rw(path, true) {
            Ok(f) => (f, Access::Direct),
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {
                let why = format!("the filesystem refuses O_DIRECT ({e})");
                (open_rw(path, false)?, Access::Buffered { why })
            }
            Err(e) => Err(e)?,
        }
    };
    let device_lbs = if f.metadata()?.file_type().is_block_device() {
        Some(sysapi::block::logical_block_size(&f)?)
    } else {
        None
    };
    Ok((f, access, device_lbs))
}

/// Checks that an `O_DIRECT` read of one `lba_bytes` block is accepted (a
/// device or filesystem with a coarser alignment refuses it); else reopens
/// `path` buffered and says why.
fn check_direct(
    path: &std::path::Path,
    f: File,
    lba_bytes: u64,
) -> std::io::Result<(File, Access)> {
    let mut probe = AlignedBuf::new();
    probe.set_len_zeroed(lba_bytes as usize);
    match f.read_at(&mut probe, 0) {
        Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {
            let why = format!("O_DIRECT {lba_bytes}-byte reads refused ({e})");
            Ok((open_rw(path, false)?, Access::Buffered { why }))
        }
        _ => Ok((f, Access::Direct)),
    }
}

impl Namespace {
    /// Opens or creates the backing of namespace `nsid` of subsystem `nqn`.
    pub fn open(nqn: &str, nsid: u32, cfg: &NamespaceConfig) -> Result<Self, TargetError> {
        let spec = cfg.backing.as_str();
        let berr = |source| TargetError::Backing {
            path: spec.to_string(),
            source,
        };
        let asked = cfg.block_size.map(u64::from);
        let mut ram = None;
        let (file, size_bytes, access, block_device, lba_bytes) = match Backing::parse(spec)? {
            Backing::Memory { size_bytes } => (
                {
                    let len = usize::try_from(size_bytes)
                        .map_err(|_| berr(std::io::ErrorKind::OutOfMemory.into()))?;
                    ram = Some(RamRegion::new(len).map_err(berr)?);
                    memory_file(0).map_err(berr)?
                },
                size_bytes,
                Access::Memory,
                false,
                asked.unwrap_or(DEFAULT_BLOCK_SIZE_BYTES as u64),
            ),
            Backing::Path(p) => {
                let (f, access, device_lbs) = open_path(&p, cfg.buffered).map_err(berr)?;
                let lba_bytes = match (asked, device_lbs) {
                    (Some(b), Some(d)) if b < d as u64 => {
                        return Err(TargetError::BlockSize {
                            path: spec.to_string(),
                            block_bytes: b as u32,
                            device_bytes: d,
                        })
                    }
                    (Some(b), _) => b,
                    (None, Some(d)) => d as u64,
                    (None, None) => DEFAULT_BLOCK_SIZE_BYTES as u64,
                };
                let (f, access) = match access {
                    Access::Direct => check_direct(&p, f, lba_bytes).map_err(berr)?,
                    other => (f, other),
                };
                let size = backing_size(&f, device_lbs.is_some()).map_err(berr)?;
                (f, size, access, device_lbs.is_some(), lba_bytes)
            }
        };
        if size_bytes == 0 || size_bytes % lba_bytes != 0 {
            return Err(TargetError::BackingSize {
                path: spec.to_string(),
                size_bytes,
                block_bytes: lba_bytes,
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
            size_bytes: AtomicU64::new(size_bytes),
            nguid,
            uuid,
            access,
            block_device,
            lba_bytes,
            ram,
        })
    }

    /// Size in bytes.
    pub fn size_bytes(&self) -> u64 {
        self.size_bytes.load(Ordering::Relaxed)
    }

    /// Re-reads the size of a file or block device backing; returns the new
    /// size when it changed. A size that is not a whole number of blocks is
    /// rounded down; RAM namespaces never change.
    pub fn refresh_size(&self) -> std::io::Result<Option<u64>> {
        if self.is_memory() {
            return Ok(None);
        }
        let now = backing_size(&self.file, self.block_device)?;
        let now = now / self.lba_bytes * self.lba_bytes;
        let before = self.size_bytes.swap(now, Ordering::Relaxed);
        Ok((before != now).then_some(now))
    }

    /// Bytes per logical block.
    pub fn lba_bytes(&self) -> u64 {
        self.lba_bytes
    }

    /// log2 of the logical block size (LBADS of Identify Namespace).
    pub fn lbads(&self) -> u8 {
        self.lba_bytes.trailing_zeros() as u8
    }

    /// Size in logical blocks.
    pub fn blocks(&self) -> u64 {
        self.size_bytes() / self.lba_bytes()
    }

    /// True when `nlb` blocks from `slba` lie inside the namespace.
    pub fn in_range(&self, slba: u64, nlb: u64) -> bool {
        slba.checked_add(nlb)
            .is_some_and(|end| end <= self.blocks())
    }

    /// True for RAM namespaces, which are served synchronously; others go
    /// through the reactor's io_uring.
    pub fn is_memory(&self) -> bool {
        self.access == Access::Memory
    }

    /// The descriptor io_uring operations name (owned by this namespace,
    /// which the target keeps open for as long as it runs).
    pub fn raw_fd(&self) -> RawFd {
        self.file.as_raw_fd()
    }

    /// How the blocks are reached, for start-up.
    pub fn describe_access(&self) -> String {
        match &self.access {
            Access::Memory => self.ram.as_ref().map_or("RAM", RamRegion::describe).into(),
            Access::Direct => "O_DIRECT via io_uring".into(),
            Access::Buffered { why } => format!("buffered via io_uring ({why})"),
        }
    }

    /// Reads `buf.len()` bytes at block `slba`, blocking (tests, shutdown
    /// and the fallback path; the reactor uses io_uring). Bounces through an
    /// aligned buffer when the descriptor is `O_DIRECT`.
    pub fn read(&self, slba: u64, buf: &mut [u8]) -> std::io::Result<()> {
        let off = slba * self.lba_bytes();
        if let Some(r) = &self.ram {
            return r.read(off, buf);
        }
        if self.access != Access::Direct {
            return self.file.read_exact_at(buf, off);
        }
        let mut b = AlignedBuf::new();
        b.set_len_stale(buf.len());
        self.file.read_exact_at(&mut b, off)?;
        buf.copy_from_slice(&b);
        Ok(())
    }

    /// Where the `len` bytes at block `slba` of a RAM namespace are (a read
    /// that leaves them there: [`super::splice`]); an error for other
    /// namespaces. The memory lives as long as the namespace.
    pub fn ram_source(&self, slba: u64, len: usize) -> std::io::Result<*const u8> {
        match &self.ram {
            Some(r) => r.source(slba * self.lba_bytes(), len),
            None => Err(std::io::Error::new(
                std::io::ErrorKind::Unsupported,
                "not a RAM namespace: its data is read with io_uring",
            )),
        }
    }

    /// Writes `buf` at block `slba`, blocking (see [`Namespace::read`]).
    pub fn write(&self, slba: u64, buf: &[u8]) -> std::io::Result<()> {
        let off = slba * self.lba_bytes();
        if let Some(r) = &self.ram {
            return r.write(off, buf);
        }
        if self.access != Access::Direct {
            return self.file.write_all_at(buf, off);
        }
        let mut b = AlignedBuf::new();
        b.assign(buf);
        self.file.write_all_at(&b, off)
    }

    /// Makes written data durable.
    pub fn flush(&self) -> std::io::Result<()> {
        self.file.sync_data()
    }

    /// The `fallocate` mode that zeroes a range of this namespace: hole
    /// punching on files and RAM, a zero-range on block devices (blocks
    /// read back as zero).
    pub fn zero_mode(&self) -> i32 {
        if self.block_device {
            libc::FALLOC_FL_ZERO_RANGE | libc::FALLOC_FL_KEEP_SIZE
        } else {
            libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE
        }
    }

    /// Zeroes `nlb` blocks at `slba`, blocking: `fallocate` with
    /// [`zero_mode`](Self::zero_mode), else writes zeroes.
    pub fn zero(&self, slba: u64, nlb: u64) -> std::io::Result<()> {
        let off = slba * self.lba_bytes();
        let len = nlb * self.lba_bytes();
        if let Some(r) = &self.ram {
            let len = usize::try_from(len).map_err(|_| std::io::ErrorKind::InvalidInput)?;
            return r.zero(off, len);
        }
        // SAFETY: fallocate only reads its integer arguments; the fd is owned
        // by self.file for the duration of the call.
        let rc = unsafe {
            libc::fallocate(
                self.file.as_raw_fd(),
                self.zero_mode(),
                off as i64,
                len as i64,
            )
        };
        if rc == 0 {
            return Ok(());
        }
        self.write_zeroes(off, len)
    }

    /// Writes `len` zero bytes at byte `off`, blocking: the fallback where
    /// the filesystem or device refuses the zeroing `fallocate`.
    pub fn write_zeroes(&self, off: u64, len: u64) -> std::io::Result<()> {
        let mut zeros = AlignedBuf::new();
        zeros.set_len_zeroed(len.min(1 << 20) as usize);
        let mut done = 0u64;
        while done < len {
            let n = (len - done).min(zeros.len() as u64) as usize;
            self.file.write_all_at(&zeros[..n], off + done)?;
            done += n as u64;
        }
        Ok(())
    }
}

/// Size in bytes of a namespace's backing: a block device's capacity or a
/// file's length.
fn backing_size(f: &File, block_device: bool) -> std::io::Result<u64> {
    if block_device {
        sysapi::block::size_bytes(f)
    } else {
        Ok(f.metadata()?.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_namespace_read_write_zero() {
        let ns = Namespace::open("nqn.t", 1, &NamespaceConfig::new("mem:1M")).unwrap();
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
        let other = Namespace::open("nqn.t", 2, &NamespaceConfig::new("mem:1M")).unwrap();
        assert_ne!(ns.nguid, other.nguid);
        assert_eq!(ns.uuid[6] >> 4, 8);
    }

    #[test]
    fn block_size_option_sets_the_lba_size() {
        let mut cfg = NamespaceConfig::new("mem:1M");
        cfg.block_size = Some(4096);
        let ns = Namespace::open("nqn.t", 1, &cfg).unwrap();
        assert_eq!((ns.lba_bytes(), ns.lbads(), ns.blocks()), (4096, 12, 256));
        assert!(ns.in_range(255, 1) && !ns.in_range(256, 1));
        ns.write(1, &[0x44; 4096]).unwrap();
        let mut b = vec![0u8; 8192];
        ns.read(0, &mut b).unwrap();
        assert_eq!(
            (&b[..4096], &b[4096..]),
            (&[0u8; 4096][..], &[0x44u8; 4096][..])
        );
        ns.zero(1, 1).unwrap();
        ns.read(1, &mut b[..4096]).unwrap();
        assert_eq!(&b[..4096], &[0u8; 4096]);
        let path = std::env::temp_dir().join(format!("numio-ns4k-{}", std::process::id()));
        std::fs::write(&path, vec![0u8; 4096 * 3 + 512]).unwrap();
        let mut cfg = NamespaceConfig::new(path.to_str().unwrap());
        cfg.block_size = Some(4096);
        let e = Namespace::open("nqn.t", 1, &cfg).unwrap_err();
        assert!(e.to_string().contains("multiple of its 4096-byte"), "{e}");
        std::fs::write(&path, vec![0u8; 4096 * 3]).unwrap();
        let ns = Namespace::open("nqn.t", 1, &cfg).unwrap();
        assert_eq!((ns.blocks(), ns.lbads()), (3, 12));
        std::fs::remove_file(&path).unwrap();
    }

    #[test]
    fn file_namespace_direct_buffered_and_errors() {
        let path = std::env::temp_dir().join(format!("numio-ns-{}", std::process::id()));
        std::fs::write(&path, vec![0u8; 8192]).unwrap();
        let spec = path.to_str().unwrap().to_string();
        let ns = Namespace::open("nqn.t", 1, &NamespaceConfig::new(&spec)).unwrap();
        assert_eq!(ns.blocks(), 16);
        assert!(!ns.is_memory());
        // /tmp on this kernel accepts O_DIRECT; an older tmpfs falls back.
        assert!(
            matches!(ns.access, Access::Direct | Access::Buffered { .. }),
            "{:?}",
            ns.access
        );
        // Unaligned caller buffers work through the bounce path.
        let data: Vec<u8> = (0..1024u32).map(|i| i as u8).collect();
        ns.write(3, &data).unwrap();
        let mut back = vec![0u8; 1024];
        ns.read(3, &mut back).unwrap();
        assert_eq!(back, data);
        ns.zero(3, 1).unwrap();
        ns.read(3, &mut back).unwrap();
        assert_eq!(&back[..512], &[0; 512]);
        assert_eq!(&back[512..], &data[512..]);
        let mut cfg = NamespaceConfig::new(&spec);
        cfg.buffered = true;
        let b = Namespace::open("nqn.t", 1, &cfg).unwrap();
        assert!(
            b.describe_access().starts_with("buffered"),
            "{}",
            b.describe_access()
        );
        std::fs::write(&path, vec![0u8; 100]).unwrap();
        let e = Namespace::open("nqn.t", 1, &NamespaceConfig::new(&spec)).unwrap_err();
        assert!(e.to_string().contains("multiple of its 512-byte"), "{e}");
        std::fs::remove_file(&path).unwrap();
        let e = Namespace::open("nqn.t", 1, &NamespaceConfig::new(&spec)).unwrap_err();
        assert!(e.to_string().contains("numio-ns"), "{e}");
    }
}
