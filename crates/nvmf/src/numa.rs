//! The CPUs local to the backing devices' NUMA node: the default reactor
//! placement. Reads sysfs under a given root so it is tested on a fake tree.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// The NUMA node of the block device holding `path` (the device itself, or
/// the device of the filesystem a file lives on), from `sys_root` (normally
/// `/sys`). None for RAM namespaces, unknown nodes (-1) or anything unreadable.
pub fn node_of(sys_root: &Path, path: &Path) -> Option<u32> {
    let meta = std::fs::metadata(path).ok()?;
    let dev = if std::os::unix::fs::FileTypeExt::is_block_device(&meta.file_type()) {
        meta.rdev()
    } else {
        meta.dev()
    };
    let (maj, min) = (libc::major(dev), libc::minor(dev));
    let link = sys_root.join(format!("dev/block/{maj}:{min}"));
    node_of_sysfs_device(&std::fs::canonicalize(link).ok()?)
}

/// Walks from a sysfs device directory up to the first `numa_node` >= 0.
pub fn node_of_sysfs_device(dir: &Path) -> Option<u32> {
    let mut d: Option<&Path> = Some(dir);
    while let Some(p) = d {
        if let Ok(s) = std::fs::read_to_string(p.join("numa_node")) {
            if let Ok(n) = s.trim().parse::<i64>() {
                if n >= 0 {
                    return Some(n as u32);
                }
            }
        }
        if p.file_name().is_some_and(|n| n == "devices") {
            break;
        }
        d = p.parent();
    }
    None
}

/// Parses a kernel CPU list ("0-3,8").
pub fn parse_cpu_list(s: &str) -> Vec<usize> {
    let mut out = Vec::new();
    for part in s.trim().split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => {
                if let (Ok(a), Ok(b)) = (a.parse::<usize>(), b.parse::<usize>()) {
                    out.extend(a..=b.min(a + 4096));
                }
            }
            None => out.extend(part.parse::<usize>().ok()),
        }
    }
    out
}

/// The node shared by the backings that have one, and its CPUs that are in
/// `allowed`, at most `max`. None when no backing has a node, when they
/// disagree, or when no allowed CPU is on it.
pub fn local_cpus(
    sys_root: &Path,
    backings: &[PathBuf],
    allowed: &[usize],
    max: usize,
) -> Option<(u32, Vec<usize>)> {
    let mut nodes: Vec<u32> = backings
        .iter()
        .filter_map(|p| node_of(sys_root, p))
        .collect();
    nodes.dedup();
    let [node] = nodes[..] else { return None };
    let list =
        std::fs::read_to_string(sys_root.join(format!("devices/system/node/node{node}/cpulist")))
            .ok()?;
    let cpus: Vec<usize> = parse_cpu_list(&list)
        .into_iter()
        .filter(|c| allowed.contains(c))
        .take(max)
        .collect();
    (!cpus.is_empty()).then_some((node, cpus))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn walks_up_to_the_first_known_node_and_reads_its_cpus() {
        let root = std::env::temp_dir().join(format!("numio-numa-{}", std::process::id()));
        let pci = root.join("devices/pci0000:80/0000:80:01.0");
        let disk = pci.join("nvme/nvme0/nvme0n1");
        std::fs::create_dir_all(&disk).unwrap();
        std::fs::write(pci.join("numa_node"), "1\n").unwrap();
        std::fs::write(pci.join("nvme/nvme0/numa_node"), "-1\n").unwrap();
        assert_eq!(node_of_sysfs_device(&disk), Some(1));
        assert_eq!(node_of_sysfs_device(&root.join("devices")), None);
        let node1 = root.join("devices/system/node/node1");
        std::fs::create_dir_all(&node1).unwrap();
        std::fs::write(node1.join("cpulist"), "4-7,12\n").unwrap();
        assert_eq!(parse_cpu_list("4-7,12\n"), vec![4, 5, 6, 7, 12]);
        assert_eq!(parse_cpu_list("x,3"), vec![3]);
        // A RAM-only target has no node.
        assert_eq!(local_cpus(&root, &[], &[0, 1], 4), None);
        std::fs::remove_dir_all(&root).unwrap();
    }
}
