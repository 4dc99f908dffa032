//! Write safety: a write workload on a block device that holds a partition
//! table, a filesystem or volume signature, a mount or a holder (dm, md,
//! loop) is refused unless the user passes `--force-write`.

use std::io::Read;
use std::path::Path;

use crate::error::EngineError;
use crate::target::TargetInfo;

/// Bytes of the device start that are probed for signatures.
pub const PROBE_BYTES: usize = 1 << 20;

/// Refuses `info` (a block device) when it holds anything worth keeping.
pub fn check_writable(info: &TargetInfo) -> Result<(), EngineError> {
    let refuse = |what: String| EngineError::Unsafe {
        path: info.path.clone(),
        what,
    };
    let mut devs = vec![(info.path.clone(), info.rdev)];
    if let Some(dir) = &info.sysfs_dir {
        let parts = partitions(dir);
        if !parts.is_empty() {
            let names: Vec<&str> = parts.iter().map(|(n, _)| n.as_str()).collect();
            return Err(refuse(format!(
                "a partition table (partitions {})",
                names.join(", ")
            )));
        }
        let holders = list_dir(&dir.join("holders"));
        if !holders.is_empty() {
            return Err(refuse(format!("holders using it ({})", holders.join(", "))));
        }
        devs.extend(parts.into_iter().map(|(n, d)| (format!("/dev/{n}"), d)));
    }
    if let Ok(mi) = std::fs::read_to_string("/proc/self/mountinfo") {
        for (name, dev) in &devs {
            if let Some(mp) = mount_point(&mi, libc::major(*dev), libc::minor(*dev)) {
                return Err(refuse(format!("a mounted filesystem ({name} on {mp})")));
            }
        }
    }
    let mut head = vec![0u8; PROBE_BYTES];
    let n = std::fs::File::open(&info.path)
        .and_then(|mut f| read_full(&mut f, &mut head))
        .map_err(|source| EngineError::Inspect {
            path: info.path.clone(),
            source,
        })?;
    if let Some(sig) = probe_signature(&head[..n]) {
        return Err(refuse(format!("a {sig} signature")));
    }
    Ok(())
}

fn read_full(f: &mut std::fs::File, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match f.read(&mut buf[n..])? {
            0 => break,
            k => n += k,
        }
    }
    Ok(n)
}

fn list_dir(p: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(p)
        .map(|d| {
            d.flatten()
                .filter_map(|e| e.file_name().into_string().ok())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// Partitions of a block device sysfs dir: (name, device number).
fn partitions(dir: &Path) -> Vec<(String, u64)> {
    list_dir(dir)
        .into_iter()
        .filter(|n| dir.join(n).join("partition").exists())
        .filter_map(|n| {
            let dev = std::fs::read_to_string(dir.join(&n).join("dev")).ok()?;
            let (ma, mi) = dev.trim().split_once(':')?;
            Some((n, libc::makedev(ma.parse().ok()?, mi.parse().ok()?)))
        })
        .collect()
}

/// The mount point of device `major:minor` in a mountinfo text, if mounted.
pub fn mount_point(mountinfo: &str, major: u32, minor: u32) -> Option<String> {
    let want = format!("{major}:{minor}");
    mountinfo.lines().find_map(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        (f.len() > 4 && f[2] == want).then(|| f[4].to_string())
    })
}

/// The name of the first known partition-table, filesystem or volume
/// signature found in the start of a device.
pub fn probe_signature(head: &[u8]) -> Option<&'static str> {
    let at = |off: usize, magic: &[u8]| head.get(off..off + magic.len()) == Some(magic);
    const CHECKS: &[(usize, &[u8], &str)] = &[
        (512, b"EFI PART", "GPT partition table"),
        (4096, b"EFI PART", "GPT partition table (4K sectors)"),
        (1080, &[0x53, 0xef], "ext2/3/4 filesystem"),
        (0, b"XFSB", "XFS filesystem"),
        (65600, b"_BHRfS_M", "btrfs filesystem"),
        (0, b"LUKS\xba\xbe", "LUKS volume"),
        (512, b"LABELONE", "LVM2 physical volume"),
        (4086, b"SWAPSPACE2", "swap area"),
        (4086, b"SWAP-SPACE", "swap area"),
        (1024, &[0x10, 0x20, 0xf5, 0xf2], "F2FS filesystem"),
        (0, b"hsqs", "squashfs filesystem"),
        (3, b"NTFS    ", "NTFS filesystem"),
        (32769, b"CD001", "ISO 9660 filesystem"),
        (0, &[0xa9, 0x2b, 0x4e, 0xfc], "md RAID (v1.1)"),
        (4096, &[0xfc, 0x4e, 0x2b, 0xa9], "md RAID (v1.2)"),
        (1030, &[0x44, 0x1d, 0x5e, 0x7b], "bcachefs filesystem"),
    ];
    for (off, magic, name) in CHECKS {
        if at(*off, magic) {
            return Some(name);
        }
    }
    if at(510, &[0x55, 0xaa]) {
        if at(54, b"FAT") || at(82, b"FAT32") {
            return Some("FAT filesystem");
        }
        // An MBR: at least one partition entry with a type byte.
        if (0..4).any(|i| head.get(446 + 16 * i + 4).is_some_and(|&t| t != 0)) {
            return Some("MBR partition table");
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_signatures() {
        let mut h = vec![0u8; PROBE_BYTES];
        assert_eq!(probe_signature(&h), None);
        h[1080] = 0x53;
        h[1081] = 0xef;
        assert_eq!(probe_signature(&h), Some("ext2/3/4 filesystem"));
        let mut h = vec![0u8; PROBE_BYTES];
        h[512..520].copy_from_slice(b"EFI PART");
        assert_eq!(probe_signature(&h), Some("GPT partition table"));
        let mut h = vec![0u8; PROBE_BYTES];
        h[510] = 0x55;
        h[511] = 0xaa;
        assert_eq!(
            probe_signature(&h),
            None,
            "boot signature without partitions"
        );
        h[446 + 4] = 0x83;
        assert_eq!(probe_signature(&h), Some("MBR partition table"));
        let mut h = vec![0u8; PROBE_BYTES];
        h[65600..65608].copy_from_slice(b"_BHRfS_M");
        assert_eq!(probe_signature(&h), Some("btrfs filesystem"));
        assert_eq!(probe_signature(&h[..1000]), None, "short reads are fine");
    }

    #[test]
    fn finds_mounts() {
        let mi = "22 1 259:1 / / rw,relatime shared:1 - ext4 /dev/nvme0n1p1 rw\n\
                  23 22 7:0 / /mnt/x rw - xfs /dev/loop0 rw\n";
        assert_eq!(mount_point(mi, 7, 0).as_deref(), Some("/mnt/x"));
        assert_eq!(mount_point(mi, 259, 1).as_deref(), Some("/"));
        assert_eq!(mount_point(mi, 7, 1), None);
    }
}
