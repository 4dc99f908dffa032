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
//! fixtures. The signature probe lives in `topology::device::signature`,
//! shared with `tune::vfio` (which refuses to take a controller whose
//! namespaces hold one).

use sysapi::blkid::Signature;
use topology::device::{BlockDevice, DevNum};
use topology::host::{mount_of, Mount};

pub use topology::device::signature::{probe_signature, read_head, PROBE_BYTES};

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

#[cfg(test)]
mod tests {
    use super::*;

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
