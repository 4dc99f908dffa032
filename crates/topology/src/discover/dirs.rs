//! The directories of CPUs and NUMA nodes, and listing their numbered
//! entries (`cpu0`, `node1`).

use crate::reader::Reader;

/// `/sys/devices/system/cpu`, relative to the root.
pub const CPU_DIR: &str = "sys/devices/system/cpu";

/// `/sys/devices/system/node`, relative to the root.
pub const NODE_DIR: &str = "sys/devices/system/node";

/// The numbers N of the `{prefix}N` entries of directory `dir`, ascending.
pub fn numbered_dirs(r: &mut Reader, dir: &str, prefix: &str) -> Vec<u32> {
    let mut ids: Vec<u32> = r
        .list(dir)
        .unwrap_or_default()
        .iter()
        .filter_map(|e| {
            let n = e.strip_prefix(prefix)?;
            let digits = !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit());
            n.parse().ok().filter(|_| digits)
        })
        .collect();
    ids.sort_unstable();
    ids
}
