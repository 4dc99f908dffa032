//! What `numio multipath --probe` saw, and what it means: each node's
//! read, every path's read counters over it, the paths that carried it and
//! whether that is what the audit says. Pure over counter samples; the
//! reads themselves are `session::multipath_probe`'s.

use serde::Serialize;

use super::{HeadAudit, IoPolicy, NodeRoute};
use crate::counters::BlockIo;

/// Share of a node's read sectors a path must carry to count as carrying it
/// (the rest is other I/O on the machine that happened meanwhile).
pub const CARRY_SHARE_PCT: u64 = 10;

/// What one node's read showed.
#[derive(Debug, Clone, Serialize)]
pub struct NodeProbe {
    /// The CPU node the read ran on.
    pub node: u32,
    /// Its CPUs the thread was pinned to.
    pub cpus: Vec<u32>,
    /// Bytes the probe read.
    pub bytes_read: u64,
    /// Each path's read counters over the read, in the audit's path order.
    pub paths: Vec<PathDelta>,
    /// Paths that carried at least 10 % of the sectors read.
    pub carried_by: Vec<String>,
    /// Whether that is what the audit says (`None`: nothing to compare,
    /// e.g. a policy numio does not model).
    pub agrees: Option<bool>,
    /// On a `numa` tie, which of the tied paths the kernel's list put first
    /// (the one that carried the I/O).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tie_went_to: Option<String>,
}

/// One path's counters over a node's read.
#[derive(Debug, Clone, Serialize)]
pub struct PathDelta {
    /// Path device.
    pub device: String,
    /// Reads completed on it.
    pub read_ios: u64,
    /// Bytes read through it.
    pub read_bytes: u64,
}

impl NodeProbe {
    /// What node route `r` of `h` read (`bytes_read` from `cpus`), from its
    /// paths' counters `before` and `after` (in `h`'s path order).
    pub fn from_counters(
        h: &HeadAudit,
        r: &NodeRoute,
        cpus: Vec<u32>,
        bytes_read: u64,
        before: &[BlockIo],
        after: &[BlockIo],
    ) -> NodeProbe {
        let paths: Vec<PathDelta> = h
            .paths
            .iter()
            .zip(before.iter().zip(after))
            .map(|(p, (b, a))| {
                let d = a.since(b);
                PathDelta {
                    device: p.device.clone(),
                    read_ios: d.read_ios,
                    read_bytes: d.read_sectors * 512,
                }
            })
            .collect();
        let carried_by = carriers(&paths);
        NodeProbe {
            node: r.node.0,
            cpus,
            bytes_read,
            agrees: agreement(h, r, &carried_by),
            tie_went_to: tie_went_to(h, r, &carried_by),
            paths,
            carried_by,
        }
    }
}

/// Paths that carried at least [`CARRY_SHARE_PCT`] of the bytes read.
fn carriers(paths: &[PathDelta]) -> Vec<String> {
    let total: u64 = paths.iter().map(|p| p.read_bytes).sum();
    paths
        .iter()
        .filter(|p| p.read_bytes > 0 && p.read_bytes * 100 >= total * CARRY_SHARE_PCT)
        .map(|p| p.device.clone())
        .collect()
}

/// Whether the carriers are the paths the audit says the node takes. On a
/// `numa` tie the audit cannot know the head's list order (sysfs does not
/// show it before 6.15): any one of the tied paths agrees, and the probe
/// says which ([`NodeProbe::tie_went_to`]).
fn agreement(h: &HeadAudit, r: &NodeRoute, carried: &[String]) -> Option<bool> {
    h.policy?;
    let name = |i: &usize| h.paths[*i].device.as_str();
    let taken: Vec<&str> = r.taken.iter().map(name).collect();
    Some(match h.policy {
        // Queue-depth picks by load: a light read may use fewer paths.
        Some(IoPolicy::QueueDepth) => {
            !carried.is_empty() && carried.iter().all(|c| taken.contains(&c.as_str()))
        }
        Some(IoPolicy::Numa) => {
            let tied: Vec<&str> = r.taken.iter().chain(&r.ties).map(name).collect();
            carried.len() == 1 && tied.contains(&carried[0].as_str())
        }
        _ => carried.len() == taken.len() && taken.iter().all(|t| carried.iter().any(|c| c == t)),
    })
}

/// On a `numa` tie, the tied path the probe saw carry the I/O.
fn tie_went_to(h: &HeadAudit, r: &NodeRoute, carried: &[String]) -> Option<String> {
    if r.ties.is_empty() || carried.len() != 1 {
        return None;
    }
    r.taken
        .iter()
        .chain(&r.ties)
        .map(|&i| &h.paths[i].device)
        .find(|d| **d == carried[0])
        .cloned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Topology;

    fn delta(device: &str, read_bytes: u64) -> PathDelta {
        PathDelta {
            device: device.to_string(),
            read_ios: read_bytes / 4096,
            read_bytes,
        }
    }

    #[test]
    fn a_path_carries_a_node_when_it_has_a_tenth_of_the_bytes() {
        let paths = [delta("a", 4 << 20), delta("b", 64 << 10), delta("c", 0)];
        assert_eq!(carriers(&paths), ["a"]);
        let paths = [delta("a", 2 << 20), delta("b", 2 << 20)];
        assert_eq!(carriers(&paths), ["a", "b"]);
        assert!(carriers(&[delta("a", 0)]).is_empty());
    }

    #[test]
    fn agreement_with_the_published_case_audit() {
        let root = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/fixtures/sysfs/vm-mp-memoryless");
        let topo = Topology::load(&root).unwrap();
        let h = super::super::audit(&topo).remove(0);
        let r = &h.routes[0];
        let one = |d: &str| vec![d.to_string()];
        assert_eq!(agreement(&h, r, &one("nvme0c0n1")), Some(true));
        assert_eq!(
            tie_went_to(&h, r, &one("nvme0c0n1")).as_deref(),
            Some("nvme0c0n1")
        );
        // Node 0 ties: the kernel's list order (probe order, which 6.1 does
        // not show) decides; the lab has seen it go either way.
        assert_eq!(agreement(&h, r, &one("nvme0c1n1")), Some(true));
        assert_eq!(
            tie_went_to(&h, r, &one("nvme0c1n1")).as_deref(),
            Some("nvme0c1n1")
        );
        assert_eq!(agreement(&h, r, &[]), Some(false));
        let both = one("nvme0c0n1")
            .into_iter()
            .chain(one("nvme0c1n1"))
            .collect::<Vec<_>>();
        assert_eq!(agreement(&h, r, &both), Some(false));
        // Node 1 has no tie: only the -1 path agrees.
        let r1 = &h.routes[1];
        assert_eq!(agreement(&h, r1, &one("nvme0c1n1")), Some(false));
        assert_eq!(tie_went_to(&h, r1, &one("nvme0c0n1")), None);
    }

    fn io(read_sectors: u64) -> BlockIo {
        BlockIo {
            read_ios: read_sectors / 8,
            read_sectors,
            ..BlockIo::default()
        }
    }

    /// The published case: node 0's paths tie, and whichever carried its
    /// read is the kernel's choice; node 1 takes the -1 path, and a read
    /// through the other one disagrees with the audit.
    #[test]
    fn carriers_agreement_and_the_tie() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/fixtures/sysfs/vm-mp-memoryless");
        let t = Topology::load(&root).unwrap();
        let h = &super::super::audit(&t)[0];
        let before = vec![io(0), io(0)];
        let node = |n: u32| h.routes.iter().find(|r| r.node.0 == n).unwrap();
        // Node 0: all of it through the second path, a trickle (under 10 %)
        // through the first.
        let p =
            NodeProbe::from_counters(h, node(0), vec![0], 4 << 20, &before, &[io(50), io(8192)]);
        assert_eq!(p.carried_by, [h.paths[1].device.clone()]);
        assert_eq!(p.agrees, Some(true));
        assert_eq!(p.tie_went_to.as_deref(), Some(h.paths[1].device.as_str()));
        assert_eq!(p.paths[1].read_bytes, 8192 * 512);
        let far = h
            .paths
            .iter()
            .position(|p| p.node == crate::DeviceNode::Unknown)
            .unwrap();
        let near = 1 - far;
        let mut after = vec![io(0), io(0)];
        after[near] = io(8192);
        let p = NodeProbe::from_counters(h, node(1), vec![1], 4 << 20, &before, &after);
        assert_eq!(p.agrees, Some(false), "{p:?}");
        assert_eq!(p.tie_went_to, None);
    }
}
