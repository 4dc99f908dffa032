//! Device-level queries: what the kernel says about one block or character
//! device, and what a file or a stacked device (partition, device-mapper,
//! md) sits on, down to its NVMe namespaces and their controllers' nodes.
//!
//! Each query takes the root of a sysfs tree like
//! [`crate::Topology::discover`] does (`/` for this machine, or a fixture or
//! an extracted snapshot) and a device number, and returns plain data. None
//! opens the device itself: a caller with a path stats it ([`stat_path`])
//! and asks about the number it got.
//!
//! - [`block_device`]: a block device's facts by `major:minor`: name, size,
//!   partition of which disk, queue settings, partitions, holders, slaves.
//! - [`generic_device`]: an NVMe generic character device (`/dev/ngXnY`) and
//!   its namespace's block device.
//! - [`nvme_namespace`], [`multipath_head`]: namespace ↔ block device ↔
//!   generic device, nsid, and the controllers I/O goes through with their
//!   nodes.
//! - [`signature`]: the partition table, filesystem or volume signature
//!   at a device's start.
//! - [`block_stack`], [`node_of_path`]: down through partitions and dm/md
//!   slaves to the disks beneath a device or a file, and the NUMA node that
//!   gives ([`StackNode`]: one node, several, unknown, or not NVMe).

use std::fmt;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::{ParseError, TopologyError};
use crate::reader::Reader;
use crate::source::Source;

mod block;
mod nvme;
pub mod signature;
mod stack;

pub use block::{
    block_by_name, block_device, BlockDevice, BlockKind, Partition, PartitionOf, QueueSettings,
};
pub use nvme::{
    controller_identity, generic_device, generic_name, head_name, multipath_head, nvme_namespace,
    ControllerIdentity, ControllerNode, GenericDevice, NvmeDevices,
};
pub use stack::{block_stack, node_of_path, DeviceStack, StackNode};

/// A device number (`major:minor`) as the kernel numbers block and
/// character devices, and as `dev` files and `/proc/self/mountinfo` write it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct DevNum {
    /// Major number (the driver).
    pub major: u32,
    /// Minor number (the device of that driver).
    pub minor: u32,
}

impl DevNum {
    /// `major:minor`.
    pub fn new(major: u32, minor: u32) -> DevNum {
        DevNum { major, minor }
    }

    /// The number of a `dev_t` as `stat(2)` returns it (glibc's encoding,
    /// which Linux shares on every architecture).
    pub fn from_dev_t(dev: u64) -> DevNum {
        DevNum {
            major: (((dev >> 8) & 0xfff) | ((dev >> 32) & 0xffff_f000)) as u32,
            minor: ((dev & 0xff) | ((dev >> 12) & 0xffff_ff00)) as u32,
        }
    }

    /// Parses `259:3` (a `dev` file, a mountinfo field).
    pub fn parse(text: &str) -> Result<DevNum, ParseError> {
        let text = text.trim();
        let bad = || ParseError::NotADevNum {
            text: text.to_string(),
        };
        let (major, minor) = text.split_once(':').ok_or_else(bad)?;
        Ok(DevNum {
            major: major.parse().map_err(|_| bad())?,
            minor: minor.parse().map_err(|_| bad())?,
        })
    }

    /// Whether this is an anonymous device (major 0): the `st_dev` of a
    /// file on tmpfs, overlayfs, btrfs, NFS and other filesystems without
    /// one block device of their own.
    pub fn is_anonymous(self) -> bool {
        self.major == 0
    }
}

impl fmt::Display for DevNum {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.major, self.minor)
    }
}

/// What a path is, by its `stat(2)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PathDevice {
    /// A block device node (its `st_rdev`).
    Block(DevNum),
    /// A character device node (its `st_rdev`).
    Char(DevNum),
    /// A regular file or directory on the filesystem of device `on` (its
    /// `st_dev`; anonymous for tmpfs, btrfs and the like).
    File {
        /// The device the filesystem sits on.
        on: DevNum,
    },
    /// Anything else (a socket, a FIFO).
    Other,
}

/// Stats `path` (following symlinks, as opening it would).
pub fn stat_path(path: &Path) -> std::io::Result<PathDevice> {
    let meta = std::fs::metadata(path)?;
    let kind = meta.file_type();
    Ok(if kind.is_block_device() {
        PathDevice::Block(DevNum::from_dev_t(meta.rdev()))
    } else if kind.is_char_device() {
        PathDevice::Char(DevNum::from_dev_t(meta.rdev()))
    } else if kind.is_file() || kind.is_dir() {
        PathDevice::File {
            on: DevNum::from_dev_t(meta.dev()),
        }
    } else {
        PathDevice::Other
    })
}

/// A reader of the directory `root`, which must exist.
pub(crate) fn reader(root: &Path) -> Result<Reader, TopologyError> {
    if !root.is_dir() {
        return Err(TopologyError::RootMissing {
            path: root.to_path_buf(),
        });
    }
    Ok(Reader::new(
        Source::Dir(root.to_path_buf()),
        Default::default(),
    ))
}

/// The last component of a relative path (`a/b/nvme0n1` → `nvme0n1`).
pub(crate) fn base_name(rel: &str) -> &str {
    rel.rsplit_once('/').map_or(rel, |(_, name)| name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn device_numbers_decode_like_glibc() {
        // glibc's makedev(3).
        let makedev = |major: u64, minor: u64| {
            ((major & 0xfff) << 8)
                | ((major & !0xfff) << 32)
                | (minor & 0xff)
                | ((minor & !0xff) << 12)
        };
        for (major, minor) in [(259, 3), (8, 1), (253, 0), (5000, 2_000_000), (0, 45)] {
            assert_eq!(
                DevNum::from_dev_t(makedev(major, minor)),
                DevNum::new(major as u32, minor as u32)
            );
        }
        assert_eq!(DevNum::from_dev_t(0x10303), DevNum::new(259, 3));
        assert_eq!(DevNum::parse("259:3\n"), Ok(DevNum::new(259, 3)));
        let e = DevNum::parse("259\n").unwrap_err();
        assert_eq!(e, ParseError::NotADevNum { text: "259".into() });
        assert_eq!(e.to_string(), "expected MAJOR:MINOR, found `259`");
        assert_eq!(DevNum::new(7, 0).to_string(), "7:0");
        assert!(DevNum::new(0, 45).is_anonymous());
    }

    #[test]
    fn this_machine_stats() {
        let here = stat_path(Path::new(env!("CARGO_MANIFEST_DIR"))).expect("stat");
        assert!(matches!(here, PathDevice::File { .. }), "{here:?}");
        assert!(matches!(
            stat_path(Path::new("/dev/null")).expect("stat"),
            PathDevice::Char(DevNum { major: 1, minor: 3 })
        ));
    }
}
