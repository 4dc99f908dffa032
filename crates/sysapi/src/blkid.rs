//! Signatures on a block device, by libblkid's low-level probing API: the
//! library `blkid -p` and `wipefs` use, which knows every filesystem, RAID,
//! volume and partition-table signature util-linux knows (minix and bfs
//! included, which a hand-written table missed; issue #16).
//!
//! The system's libblkid (util-linux's `libblkid.so.1`, in every Linux
//! distribution's base system) is opened when a probe is first asked for
//! ([`crate::dylib`]): numio builds without its headers, and a machine
//! without it gets an error naming the package, so a write is refused rather
//! than made unchecked. The few calls are declared here, each wrapped once.

use std::ffi::{c_char, c_int, CStr, CString};
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::OnceLock;

/// libblkid's opaque probe.
#[repr(C)]
struct RawProbe {
    _private: [u8; 0],
}

/// `BLKID_SUBLKS_TYPE`: report `TYPE`.
const SUBLKS_TYPE: c_int = 1 << 5;
/// `BLKID_SUBLKS_USAGE`: report `USAGE` (filesystem, raid, crypto, other).
const SUBLKS_USAGE: c_int = 1 << 7;
/// `BLKID_PARTS_MAGIC`: report `PTTYPE` of a partition table.
const PARTS_MAGIC: c_int = 1 << 3;

/// libblkid, by its ABI name.
const LIBBLKID: crate::dylib::Spec = crate::dylib::Spec {
    feature: "The write-safety probe (blkid's signatures)",
    sonames: &[c"libblkid.so.1"],
    debian: "libblkid1",
    rpm: "libblkid",
};

crate::functions! {
    /// The libblkid calls numio makes.
    struct Blkid {
        fn blkid_new_probe_from_filename(filename: *const c_char) -> *mut RawProbe;
        fn blkid_free_probe(pr: *mut RawProbe);
        fn blkid_probe_enable_superblocks(pr: *mut RawProbe, enable: c_int) -> c_int;
        fn blkid_probe_set_superblocks_flags(pr: *mut RawProbe, flags: c_int) -> c_int;
        fn blkid_probe_enable_partitions(pr: *mut RawProbe, enable: c_int) -> c_int;
        fn blkid_probe_set_partitions_flags(pr: *mut RawProbe, flags: c_int) -> c_int;
        fn blkid_do_safeprobe(pr: *mut RawProbe) -> c_int;
        fn blkid_probe_lookup_value(
            pr: *mut RawProbe,
            name: *const c_char,
            data: *mut *const c_char,
            len: *mut usize,
        ) -> c_int;
    }
}

/// libblkid's calls, opened on first use (and the error, each time, when
/// it cannot be).
fn blkid() -> Result<&'static Blkid, crate::dylib::LibraryError> {
    static LIB: OnceLock<Result<Blkid, crate::dylib::LibraryError>> = OnceLock::new();
    LIB.get_or_init(|| {
        let lib = crate::dylib::Library::open(&LIBBLKID)?;
        // SAFETY: the prototypes above are libblkid's (blkid.h, stable
        // since util-linux 2.18); the library is never closed.
        unsafe { Blkid::load(&lib) }
    })
    .as_ref()
    .map_err(Clone::clone)
}

/// What libblkid found at the start (and end, for RAID and GPT backups) of
/// a device.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Signature {
    /// A filesystem, RAID member, crypto or other volume superblock.
    Superblock {
        /// libblkid's `TYPE` (`ext4`, `minix`, `bfs`, `linux_raid_member`).
        type_name: String,
        /// libblkid's `USAGE` (`filesystem`, `raid`, `crypto`, `other`).
        usage: Option<String>,
    },
    /// A partition table.
    PartitionTable {
        /// libblkid's `PTTYPE` (`dos`, `gpt`).
        type_name: String,
    },
    /// More than one signature that contradict each other (libblkid's
    /// "ambivalent" result): something is there either way.
    Ambivalent,
}

impl std::fmt::Display for Signature {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Signature::Superblock { type_name, usage } => match usage.as_deref() {
                Some("filesystem") | None => write!(f, "{type_name} filesystem"),
                Some(usage) => write!(f, "{type_name} ({usage})"),
            },
            Signature::PartitionTable { type_name } => write!(f, "{type_name} partition table"),
            Signature::Ambivalent => write!(f, "several contradicting (libblkid: ambivalent)"),
        }
    }
}

/// A probe, freed on drop.
struct Probe(*mut RawProbe, &'static Blkid);

impl Drop for Probe {
    fn drop(&mut self) {
        // SAFETY: the pointer came from blkid_new_probe_from_filename, is
        // not null, and is freed once, here.
        unsafe { (self.1.blkid_free_probe)(self.0) }
    }
}

impl Probe {
    /// The value `name` the last probe set, if any.
    fn value(&self, name: &CStr) -> Option<String> {
        let mut data: *const c_char = std::ptr::null();
        let mut len = 0usize;
        // SAFETY: the probe is live; `name` is NUL-terminated; libblkid
        // writes a pointer to a NUL-terminated string it owns (valid until
        // the next probe or the free, both after this copy) and its length.
        let rc = unsafe {
            (self.1.blkid_probe_lookup_value)(self.0, name.as_ptr(), &mut data, &mut len)
        };
        if rc != 0 || data.is_null() {
            return None;
        }
        // SAFETY: see above: `data` is a NUL-terminated string of libblkid's.
        Some(
            unsafe { CStr::from_ptr(data) }
                .to_string_lossy()
                .into_owned(),
        )
    }
}

/// Probes `path` (opened read-only by libblkid) for superblocks and
/// partition tables as `blkid -p` does; `None` when it holds neither.
pub fn probe(path: &Path) -> io::Result<Option<Signature>> {
    let name = CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a NUL byte in the path"))?;
    let b = blkid()?;
    // SAFETY: `name` is NUL-terminated and outlives the call; libblkid
    // opens the file itself and returns null with errno set on failure.
    let raw = unsafe { (b.blkid_new_probe_from_filename)(name.as_ptr()) };
    if raw.is_null() {
        return Err(io::Error::last_os_error());
    }
    let pr = Probe(raw, b);
    // SAFETY: the probe is live for these calls; they only set its flags
    // and read the device through the descriptor libblkid opened.
    let rc = unsafe {
        (b.blkid_probe_enable_superblocks)(pr.0, 1);
        (b.blkid_probe_set_superblocks_flags)(pr.0, SUBLKS_TYPE | SUBLKS_USAGE);
        (b.blkid_probe_enable_partitions)(pr.0, 1);
        (b.blkid_probe_set_partitions_flags)(pr.0, PARTS_MAGIC);
        (b.blkid_do_safeprobe)(pr.0)
    };
    match rc {
        0 => {}
        1 => return Ok(None),
        -2 => return Ok(Some(Signature::Ambivalent)),
        _ => {
            return Err(io::Error::other(format!(
                "libblkid could not probe it (blkid_do_safeprobe returned {rc})"
            )))
        }
    }
    if let Some(type_name) = pr.value(c"PTTYPE") {
        return Ok(Some(Signature::PartitionTable { type_name }));
    }
    Ok(pr.value(c"TYPE").map(|type_name| Signature::Superblock {
        type_name,
        usage: pr.value(c"USAGE"),
    }))
}

/// [`probe`] of a device seen only in pieces: an anonymous sparse file of
/// `size_bytes` (a memfd) holding each `(offset, bytes)` of `parts`, zeroes
/// elsewhere. For a namespace numio reads through its own driver (the
/// kernel has no block device for it): its first and last MiB hold every
/// signature libblkid looks for at the start and the end of a device.
pub fn probe_image(size_bytes: u64, parts: &[(u64, &[u8])]) -> io::Result<Option<Signature>> {
    use std::os::fd::AsRawFd;
    use std::os::unix::fs::FileExt;
    let fd = rustix::fs::memfd_create("numio-probe", rustix::fs::MemfdFlags::CLOEXEC)?;
    let f = std::fs::File::from(fd);
    f.set_len(size_bytes)?;
    for (offset, bytes) in parts {
        f.write_all_at(bytes, *offset)?;
    }
    probe(Path::new(&format!("/proc/self/fd/{}", f.as_raw_fd())))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file of `len` zeroes, with `mkfs` run on it; `None` (and a note)
    /// where that mkfs is not installed.
    fn image(tag: &str, mkfs: &str, len: u64) -> Option<std::path::PathBuf> {
        let p = std::env::temp_dir().join(format!("sysapi-blkid-{tag}-{}", std::process::id()));
        std::fs::File::create(&p).unwrap().set_len(len).unwrap();
        match std::process::Command::new(mkfs).arg(&p).output() {
            Ok(out) if out.status.success() => Some(p),
            Ok(out) => panic!("{mkfs}: {}", String::from_utf8_lossy(&out.stderr)),
            Err(_) => {
                eprintln!("skipped: {mkfs} is not installed (util-linux)");
                let _ = std::fs::remove_file(&p);
                None
            }
        }
    }

    /// Issue #16: a minix and a bfs filesystem were overwritten without
    /// --force-write; libblkid knows both.
    #[test]
    fn finds_minix_and_bfs_and_nothing_on_zeroes() {
        for (mkfs, type_name) in [("mkfs.minix", "minix"), ("mkfs.bfs", "bfs")] {
            let Some(p) = image(type_name, mkfs, 8 << 20) else {
                continue;
            };
            let found = probe(&p).expect("probe");
            let _ = std::fs::remove_file(&p);
            assert_eq!(
                found,
                Some(Signature::Superblock {
                    type_name: type_name.into(),
                    usage: Some("filesystem".into())
                })
            );
            assert_eq!(
                found.unwrap().to_string(),
                format!("{type_name} filesystem")
            );
        }
        let p = std::env::temp_dir().join(format!("sysapi-blkid-zero-{}", std::process::id()));
        std::fs::File::create(&p).unwrap().set_len(8 << 20).unwrap();
        assert_eq!(probe(&p).expect("probe"), None);
        let _ = std::fs::remove_file(&p);
        let e = probe(Path::new("/nonexistent/dev")).expect_err("absent");
        assert_eq!(e.kind(), io::ErrorKind::NotFound);
    }

    /// A namespace seen through numio's driver: its first MiB, placed in a
    /// sparse image of the device's size, shows the filesystem; zeroes
    /// (and a large sparse size) show nothing.
    #[test]
    fn an_image_of_the_first_mib_shows_the_filesystem() {
        let Some(p) = image("head", "mkfs.minix", 8 << 20) else {
            return;
        };
        let mut head = vec![0u8; 1 << 20];
        use std::io::Read;
        std::fs::File::open(&p)
            .unwrap()
            .read_exact(&mut head)
            .unwrap();
        let _ = std::fs::remove_file(&p);
        let tail = vec![0u8; 1 << 20];
        let size = 1u64 << 40;
        let found = probe_image(size, &[(0, &head), (size - (1 << 20), &tail)]).expect("probe");
        assert_eq!(
            found.map(|s| s.to_string()),
            Some("minix filesystem".into())
        );
        let blank = probe_image(size, &[(0, &tail)]).expect("probe");
        assert_eq!(blank, None);
    }
}
