//! Namespaces: multipath heads, private namespaces, paths and block queues.

use std::collections::BTreeSet;

use crate::model::{BlockQueue, CpuId, HwQueue, Namespace, NamespacePath, NodeId};
use crate::parse::{
    nvme_numbers, parse_bool, parse_list, parse_node_list, parse_num, parse_scheduler,
};
use crate::reader::Reader;
use crate::relpath::join;

/// Sector size of the block layer's `size` attribute.
const SECTOR_BYTES: u64 = 512;

/// A multipath head (`nvme-subsysN/nvmeXnY`) with its paths.
///
/// `paths` are the path devices (`nvmeXcYnZ`, as name and directory) found
/// as children of the subsystem's controllers: that is where the kernel puts
/// them on every version (the head's `multipath/` links exist only from
/// Linux 6.14 on), so they are read from there.
pub fn read_head(
    r: &mut Reader,
    dir: &str,
    name: &str,
    generics: &BTreeSet<String>,
    paths: &[(String, String)],
) -> Namespace {
    let mut ns = read_common(r, dir, name, generics);
    let Some(head) = nvme_numbers(name, "nvme", "n") else {
        return ns;
    };
    let mut mine: Vec<(Vec<u32>, &String, &String)> = paths
        .iter()
        .filter_map(|(device, path_dir)| {
            let n = nvme_numbers(device, "nvme", "cn")?;
            (n[0] == head[0] && n[2] == head[1]).then_some((n, device, path_dir))
        })
        .collect();
    mine.sort();
    for (numbers, device, path_dir) in mine {
        let ana_state = r.read_trimmed(&join(path_dir, "ana_state"));
        let numa_nodes = r
            .parse(&join(path_dir, "numa_nodes"), parse_node_list)
            .map(|v| v.into_iter().map(NodeId).collect());
        // Read, not only tested: a snapshot must hold the file to replay it.
        let depth = r.read_trimmed(&join(path_dir, "queue_depth"));
        let queue_depth_attr = depth.is_some();
        let queue_depth = depth.and_then(|v| v.parse().ok());
        let hw_queues = read_hw_queues(r, path_dir);
        let scheduler = r.parse(&join(path_dir, "queue/scheduler"), parse_scheduler);
        ns.paths.push(NamespacePath {
            device: device.clone(),
            controller: format!("nvme{}", numbers[1]),
            ana_state,
            numa_nodes,
            queue_depth,
            queue_depth_attr,
            hw_queues,
            scheduler,
        });
    }
    ns
}

/// A namespace without multipath, a child of its controller.
pub fn read_private(
    r: &mut Reader,
    dir: &str,
    name: &str,
    controller: &str,
    generics: &BTreeSet<String>,
) -> Namespace {
    let mut ns = read_common(r, dir, name, generics);
    ns.controller = Some(controller.to_string());
    ns
}

fn read_common(r: &mut Reader, dir: &str, name: &str, generics: &BTreeSet<String>) -> Namespace {
    let generic = name.replacen("nvme", "ng", 1);
    let sectors = r.parse(&join(dir, "size"), parse_num::<u64>).unwrap_or(0);
    Namespace {
        block_device: name.to_string(),
        generic_device: generics.contains(&generic).then_some(generic),
        nsid: read_nsid(r, dir, name),
        size_bytes: sectors.saturating_mul(SECTOR_BYTES),
        logical_block_size: r
            .parse(&join(dir, "queue/logical_block_size"), parse_num::<u32>)
            .unwrap_or(0),
        queue: read_queue(r, dir),
        paths: Vec::new(),
        controller: None,
    }
}

/// `nsid`; on kernels before 4.5, which write none, the `Y` of the name
/// `nvmeXnY` (they name a namespace by its nsid); 0 when unreadable.
fn read_nsid(r: &mut Reader, dir: &str, name: &str) -> u32 {
    let file = join(dir, "nsid");
    if let Some(nsid) = r.parse(&file, parse_num::<u32>) {
        return nsid;
    }
    if r.unreadable.iter().any(|u| u.path == file) {
        return 0;
    }
    nvme_numbers(name, "nvme", "n").map_or(0, |n| n[1])
}

fn read_queue(r: &mut Reader, dir: &str) -> BlockQueue {
    let q = join(dir, "queue");
    BlockQueue {
        scheduler: r.parse(&join(&q, "scheduler"), parse_scheduler),
        nr_requests: r.parse(&join(&q, "nr_requests"), parse_num::<u32>),
        io_poll: r.parse(&join(&q, "io_poll"), parse_bool),
        rq_affinity: r.parse(&join(&q, "rq_affinity"), parse_num::<u32>),
        nomerges: r.parse(&join(&q, "nomerges"), parse_num::<u32>),
        iostats: r.parse(&join(&q, "iostats"), parse_bool),
        write_cache: r.read_trimmed(&join(&q, "write_cache")),
        hw_queues: read_hw_queues(r, dir),
    }
}

fn read_hw_queues(r: &mut Reader, dir: &str) -> Vec<HwQueue> {
    let mq = join(dir, "mq");
    let mut indexes: Vec<u32> = r
        .list(&mq)
        .unwrap_or_default()
        .iter()
        .filter_map(|e| e.parse().ok())
        .collect();
    indexes.sort_unstable();
    indexes
        .into_iter()
        .map(|index| {
            let cpus = r
                .parse(&format!("{mq}/{index}/cpu_list"), parse_list)
                .unwrap_or_default();
            HwQueue {
                index,
                cpus: cpus.into_iter().map(CpuId).collect(),
            }
        })
        .collect()
}
