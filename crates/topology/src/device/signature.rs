//! Signatures at the start of a block device: the partition tables,
//! filesystems and volumes worth keeping that a write (`engine::safety`)
//! or taking the controller away (`tune::vfio`) must not destroy unasked.
//! [`probe_signature`] is a function of bytes; [`read_head`] reads them.

use std::io::Read;

/// Bytes of the device start that are probed for signatures.
pub const PROBE_BYTES: usize = 1 << 20;

/// The first [`PROBE_BYTES`] of the device `path` (fewer when it is smaller).
pub fn read_head(path: &str) -> std::io::Result<Vec<u8>> {
    let mut head = vec![0u8; PROBE_BYTES];
    let n = std::fs::File::open(path).and_then(|mut f| read_full(&mut f, &mut head))?;
    head.truncate(n);
    Ok(head)
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
}
