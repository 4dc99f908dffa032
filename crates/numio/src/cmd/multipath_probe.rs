//! `numio multipath --probe`: proof of each node's path without tracing.
//! From each node's CPUs (the thread pinned there), a short read-only
//! O_DIRECT read of the head device, with every path device's I/O counters
//! (`/sys/block/PATH/stat`, read through topology) sampled before and
//! after: the path whose counters moved carried that node's I/O. Never
//! writes.

use std::fmt::Write;
use std::fs::OpenOptions;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use serde::Serialize;
use topology::counters::{block_io, BlockIo};
use topology::multipath::{HeadAudit, IoPolicy, NodeRoute};
use topology::Topology;

/// Bytes per read: large enough to be few, small enough for any device.
const CHUNK_BYTES: usize = 128 << 10;
/// O_DIRECT alignment numio assumes (covers 512 B and 4 KiB sectors).
const ALIGN_BYTES: usize = 4096;
/// Longest a node's read may take before the probe stops reading.
const NODE_TIME_MAX: Duration = Duration::from_secs(5);
/// Share of a node's read sectors a path must carry to count as carrying it
/// (the rest is other I/O on the machine that happened meanwhile).
const CARRY_SHARE_PCT: u64 = 10;

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

/// Probes every CPU node of `h`, `bytes` each.
pub fn probe(
    root: &Path,
    topo: &Topology,
    h: &HeadAudit,
    bytes: u64,
) -> anyhow::Result<Vec<NodeProbe>> {
    let dev = Path::new("/dev").join(&h.block_device);
    let mut out = Vec::new();
    for r in &h.routes {
        let cpus: Vec<u32> = topo
            .nodes
            .iter()
            .find(|n| n.id == r.node)
            .map(|n| n.cpus.iter().map(|c| c.0).collect())
            .unwrap_or_default();
        let before = sample(root, h)?;
        let bytes_read = read_pinned(&dev, &cpus, bytes)
            .with_context(|| format!("probing {} from node {}", dev.display(), r.node))?;
        let after = sample(root, h)?;
        let paths: Vec<PathDelta> = h
            .paths
            .iter()
            .zip(before.iter().zip(&after))
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
        let agrees = agreement(h, r, &carried_by);
        let tie_went_to = tie_went_to(h, r, &carried_by);
        out.push(NodeProbe {
            node: r.node.0,
            cpus,
            bytes_read,
            paths,
            carried_by,
            agrees,
            tie_went_to,
        });
    }
    Ok(out)
}

fn sample(root: &Path, h: &HeadAudit) -> anyhow::Result<Vec<BlockIo>> {
    h.paths
        .iter()
        .map(|p| block_io(root, &p.device).map_err(anyhow::Error::from))
        .collect()
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

/// Pins this thread to `cpus` (in a scoped thread, so the caller keeps its
/// affinity) and reads up to `bytes` of `dev` with O_DIRECT, read-only.
fn read_pinned(dev: &Path, cpus: &[u32], bytes: u64) -> anyhow::Result<u64> {
    if cpus.is_empty() {
        bail!("the node has no CPUs to read from");
    }
    std::thread::scope(|s| {
        s.spawn(|| -> anyhow::Result<u64> {
            sysapi::affinity::pin_current_thread(cpus)
                .with_context(|| format!("pinning the probe thread to CPUs {cpus:?}"))?;
            read_direct(dev, bytes)
        })
        .join()
        .map_err(|_| anyhow::anyhow!("the probe thread panicked"))?
    })
}

fn read_direct(dev: &Path, bytes: u64) -> anyhow::Result<u64> {
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECT)
        .open(dev)
        .with_context(|| {
            format!(
                "opening {} read-only with O_DIRECT (the probe needs read access to the device: run as root)",
                dev.display()
            )
        })?;
    let meta = file
        .metadata()
        .with_context(|| format!("stat {}", dev.display()))?;
    let size = if meta.is_file() {
        meta.len()
    } else {
        sysapi::block::size_bytes(&file)
            .with_context(|| format!("reading the size of {}", dev.display()))?
    };
    let end = bytes.min(size) / ALIGN_BYTES as u64 * ALIGN_BYTES as u64;
    let mut buf = vec![0u8; CHUNK_BYTES + ALIGN_BYTES];
    let start = buf.as_ptr().align_offset(ALIGN_BYTES);
    let chunk = &mut buf[start..start + CHUNK_BYTES];
    let deadline = Instant::now() + NODE_TIME_MAX;
    let mut done = 0u64;
    while done < end && Instant::now() < deadline {
        let len = (end - done).min(CHUNK_BYTES as u64) as usize;
        let n = file
            .read_at(&mut chunk[..len], done)
            .with_context(|| format!("reading {} at byte {done}", dev.display()))?;
        if n == 0 {
            break;
        }
        done += n as u64;
    }
    Ok(done)
}

/// The human lines of a probe.
pub fn render(h: &HeadAudit, probes: &[NodeProbe]) -> String {
    let mut out = format!(
        "  probe (O_DIRECT reads of /dev/{} from each node's CPUs; read I/Os per path):\n",
        h.block_device
    );
    for p in probes {
        let counts: Vec<String> = p
            .paths
            .iter()
            .map(|d| format!("{} {} ({} KiB)", d.device, d.read_ios, d.read_bytes >> 10))
            .collect();
        let verdict = match (p.agrees, &p.tie_went_to) {
            (Some(true), Some(path)) => {
                format!("the tie went to {path}, first in the kernel's list (probe order)")
            }
            (Some(true), None) => "as the audit says".to_string(),
            (Some(false), _) => {
                "DISAGREES with the audit: a finding (the kernel's state differs from the model)"
                    .to_string()
            }
            (None, _) => "nothing to compare".to_string(),
        };
        let carried = if p.carried_by.is_empty() {
            "no path (the reads never reached a path device)".to_string()
        } else {
            p.carried_by.join(" + ")
        };
        let _ = writeln!(
            out,
            "  node {} (cpus {}): read {} KiB: {}; carried by {carried}: {verdict}",
            p.node,
            p.cpus
                .iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join(","),
            p.bytes_read >> 10,
            counts.join(", ")
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let h = topology::multipath::audit(&topo).remove(0);
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

    #[test]
    fn reads_a_regular_file_bounded_by_size_and_never_writes() {
        // Beside the test binary (target/): a disk file system that takes
        // O_DIRECT, unlike a tmpfs /tmp.
        let exe = std::env::current_exe().unwrap();
        let dir = exe
            .parent()
            .unwrap()
            .join(format!("numio-probe-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("disk");
        std::fs::write(&file, vec![7u8; 3 * CHUNK_BYTES]).unwrap();
        assert_eq!(read_direct(&file, 1 << 30).unwrap(), 3 * CHUNK_BYTES as u64);
        assert_eq!(
            read_direct(&file, 200 << 10).unwrap(),
            200 << 10,
            "bounded by the ask"
        );
        assert_eq!(std::fs::read(&file).unwrap(), vec![7u8; 3 * CHUNK_BYTES]);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
