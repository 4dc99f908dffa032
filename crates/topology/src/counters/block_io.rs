//! `/sys/block/DEV/stat`: a block device's I/O counters since it appeared
//! (Documentation/block/stat.rst). A multipath path device (`nvme0c1n1`)
//! is a hidden disk with its own counters: the I/O the head sent through
//! that path.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::device::reader;
use crate::error::{ParseError, TopologyError};

/// The counters numio uses from a block device's `stat`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct BlockIo {
    /// Reads completed.
    pub read_ios: u64,
    /// Sectors (512 bytes) read.
    pub read_sectors: u64,
    /// Writes completed.
    pub write_ios: u64,
    /// Sectors (512 bytes) written.
    pub write_sectors: u64,
}

impl BlockIo {
    /// `self − earlier`, field by field (a counter that went back counts 0).
    pub fn since(&self, earlier: &BlockIo) -> BlockIo {
        BlockIo {
            read_ios: self.read_ios.saturating_sub(earlier.read_ios),
            read_sectors: self.read_sectors.saturating_sub(earlier.read_sectors),
            write_ios: self.write_ios.saturating_sub(earlier.write_ios),
            write_sectors: self.write_sectors.saturating_sub(earlier.write_sectors),
        }
    }
}

/// Parses a `stat` text: at least the first 7 numbers (read I/Os, merges,
/// sectors, ticks; write I/Os, merges, sectors); later kernels add more.
pub fn parse_block_stat(text: &str) -> Result<BlockIo, ParseError> {
    let numbers: Vec<u64> = text
        .trim_matches(|c: char| c.is_whitespace() || c == '\0')
        .split_whitespace()
        .map(|w| {
            w.parse().map_err(|_| ParseError::BlockStatWord {
                word: w.to_string(),
            })
        })
        .collect::<Result<_, _>>()?;
    if numbers.len() < 7 {
        return Err(ParseError::BlockStatShort {
            found: numbers.len(),
        });
    }
    Ok(BlockIo {
        read_ios: numbers[0],
        read_sectors: numbers[2],
        write_ios: numbers[4],
        write_sectors: numbers[6],
    })
}

/// Reads `sys/block/DEVICE/stat` under `root`.
///
/// Errors: the file missing (no such block device) or unparsable.
pub fn block_io(root: &Path, device: &str) -> Result<BlockIo, TopologyError> {
    let mut r = reader(root)?;
    let rel = format!("sys/block/{device}/stat");
    let text = r.read(&rel).ok_or_else(|| TopologyError::MissingRequired {
        path: r.abs(&rel),
        root: r.abs(""),
        what: "the block device's I/O counters",
    })?;
    parse_block_stat(&text).map_err(|source| TopologyError::Unparsable {
        path: r.abs(&rel),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_kernels_layout() {
        // 6.x: 17 fields; 2.6: 11 fields; trailing newline and NUL.
        let six = "    1234        0    98765      100      7        0       56     3    0   200   300   0 0 0 0 0 0\n";
        let io = parse_block_stat(six).unwrap();
        assert_eq!(
            (io.read_ios, io.read_sectors, io.write_ios, io.write_sectors),
            (1234, 98765, 7, 56)
        );
        let old = "1 2 3 4 5 6 7 8 9 10 11\n\0";
        assert_eq!(parse_block_stat(old).unwrap().write_sectors, 7);
        let e = parse_block_stat("1 2 3").unwrap_err();
        assert_eq!(e, ParseError::BlockStatShort { found: 3 });
        assert_eq!(e.to_string(), "3 numbers, at least 7 expected");
        let e = parse_block_stat("1 x 3 4 5 6 7").unwrap_err();
        assert_eq!(e, ParseError::BlockStatWord { word: "x".into() });
        assert_eq!(e.to_string(), "`x` is not a number");
    }

    #[test]
    fn reads_a_path_device_under_a_root_and_subtracts() {
        let root = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/fixtures/sysfs/vm-mp-memoryless");
        let dir = tempdir_with_stat("0 0 0 0 0 0 0 0 0 0 0");
        let later = BlockIo {
            read_ios: 5,
            read_sectors: 40,
            ..BlockIo::default()
        };
        assert_eq!(
            later.since(&block_io(&dir, "nvme1c0n1").unwrap()).read_ios,
            5
        );
        assert!(matches!(
            block_io(&root, "nvme9c9n9"),
            Err(TopologyError::MissingRequired { .. })
        ));
        let _ = std::fs::remove_dir_all(&dir);
    }

    fn tempdir_with_stat(text: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("numio-block-io-{}", std::process::id()));
        let stat = dir.join("sys/block/nvme1c0n1");
        std::fs::create_dir_all(&stat).unwrap();
        std::fs::write(stat.join("stat"), text).unwrap();
        dir
    }
}
