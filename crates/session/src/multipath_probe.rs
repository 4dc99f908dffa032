//! `numio multipath --probe`: proof of each node's path without tracing.
//! From each node's CPUs (the thread pinned there), a short read-only
//! O_DIRECT read of the head device, with every path device's I/O counters
//! (`/sys/block/PATH/stat`, read through topology) sampled before and
//! after: the path whose counters moved carried that node's I/O
//! (`topology::multipath::probe` says which, and whether the audit agrees).
//! Never writes.

use std::fs::OpenOptions;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use topology::counters::{block_io, BlockIo};
use topology::multipath::probe::NodeProbe;
use topology::multipath::HeadAudit;
use topology::Topology;

/// Bytes per read: large enough to be few, small enough for any device.
const CHUNK_BYTES: usize = 128 << 10;
/// O_DIRECT alignment numio assumes (covers 512 B and 4 KiB sectors).
const ALIGN_BYTES: usize = 4096;
/// Longest a node's read may take before the probe stops reading.
const NODE_TIME_MAX: Duration = Duration::from_secs(5);

/// What stopped a probe.
#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    /// A path's counters could not be read.
    #[error("reading the I/O counters of {device}")]
    Counters {
        /// The path device.
        device: String,
        /// Why.
        #[source]
        source: topology::TopologyError,
    },
    /// The node has no CPUs to read from.
    #[error("probing {} from node {node}: the node has no CPUs to read from", dev.display())]
    NoCpus {
        /// The head device.
        dev: PathBuf,
        /// The node.
        node: u32,
    },
    /// A step of the read failed.
    #[error("probing {} from node {node}: {step}", dev.display())]
    Read {
        /// The head device.
        dev: PathBuf,
        /// The node.
        node: u32,
        /// The step.
        step: String,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// The pinned thread panicked.
    #[error("probing {} from node {node}: the probe thread panicked", dev.display())]
    Panicked {
        /// The head device.
        dev: PathBuf,
        /// The node.
        node: u32,
    },
}

/// Probes every CPU node of `h`, `bytes` each, with `h`'s path counters
/// read under `root`.
pub fn probe(
    root: &Path,
    topo: &Topology,
    h: &HeadAudit,
    bytes: u64,
) -> Result<Vec<NodeProbe>, ProbeError> {
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
        let bytes_read = read_pinned(&dev, r.node.0, &cpus, bytes)?;
        let after = sample(root, h)?;
        out.push(NodeProbe::from_counters(
            h, r, cpus, bytes_read, &before, &after,
        ));
    }
    Ok(out)
}

fn sample(root: &Path, h: &HeadAudit) -> Result<Vec<BlockIo>, ProbeError> {
    h.paths
        .iter()
        .map(|p| {
            block_io(root, &p.device).map_err(|source| ProbeError::Counters {
                device: p.device.clone(),
                source,
            })
        })
        .collect()
}

/// Pins this thread to `cpus` (in a scoped thread, so the caller keeps its
/// affinity) and reads up to `bytes` of `dev` with O_DIRECT, read-only.
fn read_pinned(dev: &Path, node: u32, cpus: &[u32], bytes: u64) -> Result<u64, ProbeError> {
    if cpus.is_empty() {
        return Err(ProbeError::NoCpus {
            dev: dev.to_path_buf(),
            node,
        });
    }
    let read = std::thread::scope(|s| {
        s.spawn(|| -> Result<u64, Failed> {
            sysapi::affinity::pin_current_thread(cpus).map_err(|e| Failed {
                step: format!("pinning the probe thread to CPUs {cpus:?}"),
                source: std::io::Error::other(e.to_string()),
            })?;
            read_direct(dev, bytes)
        })
        .join()
    });
    match read {
        Ok(Ok(n)) => Ok(n),
        Ok(Err(Failed { step, source })) => Err(ProbeError::Read {
            dev: dev.to_path_buf(),
            node,
            step,
            source,
        }),
        Err(_) => Err(ProbeError::Panicked {
            dev: dev.to_path_buf(),
            node,
        }),
    }
}

/// A step of [`read_direct`] that failed.
#[derive(Debug)]
struct Failed {
    step: String,
    source: std::io::Error,
}

fn read_direct(dev: &Path, bytes: u64) -> Result<u64, Failed> {
    let at = |step: &str| {
        let step = step.to_string();
        move |source| Failed { step, source }
    };
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECT)
        .open(dev)
        .map_err(at(
            "opening it read-only with O_DIRECT (the probe needs read access to the device: run as root)",
        ))?;
    let meta = file.metadata().map_err(at("stat"))?;
    let size = if meta.is_file() {
        meta.len()
    } else {
        sysapi::block::size_bytes(&file).map_err(at("reading its size"))?
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
            .map_err(at(&format!("reading at byte {done}")))?;
        if n == 0 {
            break;
        }
        done += n as u64;
    }
    Ok(done)
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn a_missing_device_names_the_step_and_the_node() {
        let e = read_pinned(Path::new("/nonexistent/nvme9n1"), 3, &[0], 4096).unwrap_err();
        assert!(matches!(e, ProbeError::Read { node: 3, .. }), "{e:?}");
        assert!(
            e.to_string()
                .contains("probing /nonexistent/nvme9n1 from node 3: opening it read-only"),
            "{e}"
        );
        let e = read_pinned(Path::new("/dev/null"), 1, &[], 4096).unwrap_err();
        assert!(matches!(e, ProbeError::NoCpus { node: 1, .. }), "{e:?}");
    }
}
