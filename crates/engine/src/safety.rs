//! Write safety: a write workload on a block device that holds a partition
//! table, a filesystem or volume signature, a mount or a holder (dm, md,
//! loop) is refused unless the user passes `--force-write`.
//!
//! [`judge`] is a function of values: the device's facts from `topology`
//! (partitions, holders), the mount table (`topology::host::mounts`),
//! what libblkid's probe found (`sysapi::blkid`, the library of `blkid -p`
//! and `wipefs`, which knows every signature util-linux knows) and the
//! device's first bytes ([`read_head`]) for the few signatures an older
//! libblkid lacks (bcachefs before util-linux 2.39), so it is tested on
//! fixtures.

use std::io::Read;

use sysapi::blkid::Signature;
use topology::device::{BlockDevice, DevNum};
use topology::host::{mount_of, Mount};

/// Bytes of the device start that are probed for signatures.
pub const PROBE_BYTES: usize = 1 << 20;

/// What on the block device `path` (number `dev`, facts `device`) is worth
/// keeping, in words, or `None` when nothing is: a partition table, a
/// holder, a mounted filesystem (the device's or a partition's), a
/// signature libblkid found (`probed`), or a known signature in `head`,
/// checked in that order.
pub fn judge(
    path: &str,
    dev: Option<DevNum>,
    device: Option<&BlockDevice>,
    mounts: &[Mount],
    probed: Option<&Signature>,
    head: &[u8],
) -> Option<String> {
    let mut devs: Vec<(String, DevNum)> = dev.map(|d| (path.to_string(), d)).into_iter().collect();
    if let Some(d) = device {
        if !d.partitions.is_empty() {
            let names: Vec<&str> = d.partitions.iter().map(|p| p.name.as_str()).collect();
            return Some(format!(
                "a partition table (partitions {})",
                names.join(", ")
            ));
        }
        if !d.holders.is_empty() {
            return Some(format!("holders using it ({})", d.holders.join(", ")));
        }
        devs.extend(
            d.partitions
                .iter()
                .filter_map(|p| Some((format!("/dev/{}", p.name), p.dev?))),
        );
    }
    for (name, dev) in &devs {
        if let Some(m) = mount_of(mounts, *dev) {
            return Some(format!(
                "a mounted filesystem ({name} on {})",
                m.mount_point
            ));
        }
    }
    if let Some(sig) = probed {
        return Some(format!("a {sig} signature"));
    }
    probe_signature(head).map(|sig| format!("a {sig} signature"))
}

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

    fn fixture() -> std::path::PathBuf {
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/fixtures/sysfs/2node-blockstack")
    }

    /// The facts and device number of `name` in the fixture.
    fn facts(name: &str) -> (DevNum, BlockDevice) {
        let root = fixture();
        let text = std::fs::read_to_string(root.join(format!("sys/class/block/{name}/dev")))
            .expect("dev file");
        let dev = DevNum::parse(&text).expect("MAJ:MIN");
        (
            dev,
            topology::device::block_device(&root, dev).expect("facts"),
        )
    }

    #[test]
    fn partitions_holders_and_mounts_are_refused_in_that_order() {
        let mounts = topology::host::mounts(&fixture()).expect("mountinfo");
        let blank = vec![0u8; PROBE_BYTES];
        let verdict = |name: &str| {
            let (dev, d) = facts(name);
            judge(
                &format!("/dev/{name}"),
                Some(dev),
                Some(&d),
                &mounts,
                None,
                &blank,
            )
        };
        assert_eq!(
            verdict("nvme0n1").as_deref(),
            Some("a partition table (partitions nvme0n1p1, nvme0n1p2)")
        );
        assert_eq!(
            verdict("nvme1n1").as_deref(),
            Some("holders using it (dm-0)")
        );
        assert_eq!(
            verdict("nvme0n1p2").as_deref(),
            Some("holders using it (dm-1)")
        );
        assert_eq!(
            verdict("nvme0n1p1").as_deref(),
            Some("a mounted filesystem (/dev/nvme0n1p1 on /)")
        );
        assert_eq!(
            verdict("dm-0").as_deref(),
            Some("a mounted filesystem (/dev/dm-0 on /data)")
        );
        let (dev, d) = facts("md0");
        assert_eq!(
            judge("/dev/md0", Some(dev), Some(&d), &[], None, &blank),
            None,
            "unmounted, blank"
        );
        let mut ext4 = blank.clone();
        ext4[1080..1082].copy_from_slice(&[0x53, 0xef]);
        assert_eq!(
            judge("/dev/md0", Some(dev), Some(&d), &[], None, &ext4).as_deref(),
            Some("a ext2/3/4 filesystem signature")
        );
        // No sysfs facts: the device's own mount and signature still count.
        assert_eq!(
            judge("/dev/x", Some(facts("dm-1").0), None, &mounts, None, &blank).as_deref(),
            Some("a mounted filesystem (/dev/x on /span)")
        );
        assert_eq!(judge("/dev/x", None, None, &mounts, None, &blank), None);
        let minix = Signature::Superblock {
            type_name: "minix".into(),
            usage: Some("filesystem".into()),
        };
        assert_eq!(
            judge("/dev/x", None, None, &[], Some(&minix), &blank).as_deref(),
            Some("a minix filesystem signature"),
            "what libblkid finds is refused (issue #16)"
        );
    }
}
