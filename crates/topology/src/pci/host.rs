//! The machine's side of VFIO, each over a root: whether an IOMMU is on,
//! which VFIO modules are loaded, hugepages per node, the swap areas,
//! which processes hold a file open (`/proc/PID/fd` links), and what
//! names a block device by path (loop backing files, nvmet and LIO
//! exports in configfs).

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::device::reader;
use crate::discover::dirs::{numbered_dirs, NODE_DIR};
use crate::error::TopologyError;
use crate::parse::parse_num;
use crate::relpath::join;

/// Whether an IOMMU is on: `sys/class/iommu` or `sys/kernel/iommu_groups`
/// is non-empty.
pub fn iommu_enabled(root: &Path) -> Result<bool, TopologyError> {
    let mut r = reader(root)?;
    let mut any = |dir: &str| r.list(dir).is_some_and(|v| !v.is_empty());
    Ok(any("sys/class/iommu") || any("sys/kernel/iommu_groups"))
}

/// Which VFIO modules are loaded (`sys/module/NAME`; a built-in one has a
/// directory too when it has parameters).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct VfioModules {
    /// `vfio`.
    pub vfio: bool,
    /// `vfio_pci` (or its driver registered: `sys/bus/pci/drivers/vfio-pci`).
    pub vfio_pci: bool,
    /// `vfio_iommu_type1`.
    pub vfio_iommu_type1: bool,
    /// Whether `vfio` was built with no-IOMMU support
    /// (`parameters/enable_unsafe_noiommu_mode` exists).
    pub noiommu_supported: bool,
    /// Whether no-IOMMU mode is enabled (that parameter reads `Y`).
    pub noiommu_enabled: bool,
}

impl VfioModules {
    /// The names of the modules missing, in load order.
    pub fn missing(&self) -> Vec<&'static str> {
        [
            (self.vfio, "vfio"),
            (self.vfio_iommu_type1, "vfio_iommu_type1"),
            (self.vfio_pci, "vfio_pci"),
        ]
        .into_iter()
        .filter(|(loaded, _)| !loaded)
        .map(|(_, name)| name)
        .collect()
    }
}

/// The VFIO modules under `root`.
pub fn vfio_modules(root: &Path) -> Result<VfioModules, TopologyError> {
    let mut r = reader(root)?;
    let param = "sys/module/vfio/parameters/enable_unsafe_noiommu_mode";
    let noiommu = r.read_trimmed(param);
    Ok(VfioModules {
        vfio: r.exists("sys/module/vfio"),
        vfio_pci: r.exists("sys/module/vfio_pci") || r.exists("sys/bus/pci/drivers/vfio-pci"),
        vfio_iommu_type1: r.exists("sys/module/vfio_iommu_type1"),
        noiommu_supported: noiommu.is_some(),
        noiommu_enabled: noiommu.is_some_and(|v| v == "Y" || v == "1"),
    })
}

/// One node's pool of one hugepage size.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeHugepages {
    /// The node.
    pub node: u32,
    /// The page size in KiB (2048, 1048576).
    pub size_kib: u64,
    /// `nr_hugepages`: pages reserved.
    pub total: u64,
    /// `free_hugepages`.
    pub free: u64,
}

impl NodeHugepages {
    /// The `nr_hugepages` file of this pool, relative to the root.
    pub fn nr_path(node: u32, size_kib: u64) -> String {
        format!("{NODE_DIR}/node{node}/hugepages/hugepages-{size_kib}kB/nr_hugepages")
    }
}

/// Every node's hugepage pools (`nodeN/hugepages/hugepages-SIZEkB`), by
/// node then size; none on a machine without nodes in sysfs.
pub fn hugepages(root: &Path) -> Result<Vec<NodeHugepages>, TopologyError> {
    let mut r = reader(root)?;
    let mut out = Vec::new();
    for node in numbered_dirs(&mut r, NODE_DIR, "node") {
        let dir = format!("{NODE_DIR}/node{node}/hugepages");
        let mut sizes: Vec<u64> = r
            .list(&dir)
            .unwrap_or_default()
            .iter()
            .filter_map(|n| {
                n.strip_prefix("hugepages-")?
                    .strip_suffix("kB")?
                    .parse()
                    .ok()
            })
            .collect();
        sizes.sort_unstable();
        for size_kib in sizes {
            let pool = join(&dir, &format!("hugepages-{size_kib}kB"));
            out.push(NodeHugepages {
                node,
                size_kib,
                total: r
                    .parse(&join(&pool, "nr_hugepages"), parse_num::<u64>)
                    .unwrap_or(0),
                free: r
                    .parse(&join(&pool, "free_hugepages"), parse_num::<u64>)
                    .unwrap_or(0),
            });
        }
    }
    Ok(out)
}

/// The swap areas in use (`proc/swaps`' first column: `/dev/nvme0n1p2`).
pub fn swaps(root: &Path) -> Result<Vec<String>, TopologyError> {
    let mut r = reader(root)?;
    Ok(r.read("proc/swaps")
        .unwrap_or_default()
        .lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().next())
        .map(|f| f.replace("\\040", " "))
        .collect())
}

/// Something that stacks on a block device by its path, which no holder
/// link, mount or open file shows: a loop device over it, an nvmet or LIO
/// export of it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PathUser {
    /// Who, in words: `loop0`, `nvmet subsystem NQN namespace 1`, `LIO
    /// backstore iblock_0/disk1`.
    pub user: String,
    /// The path it names (`/dev/nvme0n1`).
    pub path: String,
}

/// Loop devices and their backing files
/// (`sys/block/loopN/loop/backing_file`; a detached one has none).
pub fn loop_backings(root: &Path) -> Result<Vec<PathUser>, TopologyError> {
    let mut r = reader(root)?;
    let mut out = Vec::new();
    for name in r.list("sys/block").unwrap_or_default() {
        if !name.starts_with("loop") {
            continue;
        }
        if let Some(path) = r.read_trimmed(&format!("sys/block/{name}/loop/backing_file")) {
            out.push(PathUser { user: name, path });
        }
    }
    Ok(out)
}

/// Block devices the kernel's targets export, from configfs: nvmet
/// (`sys/kernel/config/nvmet/subsystems/NQN/namespaces/N/device_path`)
/// and LIO (`sys/kernel/config/target/core/HBA/DEV/udev_path`).
pub fn configfs_exports(root: &Path) -> Result<Vec<PathUser>, TopologyError> {
    let mut r = reader(root)?;
    let mut out = Vec::new();
    let subsystems = "sys/kernel/config/nvmet/subsystems";
    for nqn in r.list(subsystems).unwrap_or_default() {
        let nss = format!("{subsystems}/{nqn}/namespaces");
        for ns in r.list(&nss).unwrap_or_default() {
            if let Some(path) = r.read_trimmed(&format!("{nss}/{ns}/device_path")) {
                out.push(PathUser {
                    user: format!("nvmet subsystem {nqn} namespace {ns}"),
                    path,
                });
            }
        }
    }
    let core = "sys/kernel/config/target/core";
    for hba in r.list(core).unwrap_or_default() {
        for dev in r.list(&format!("{core}/{hba}")).unwrap_or_default() {
            let Some(path) = r.read_trimmed(&format!("{core}/{hba}/{dev}/udev_path")) else {
                continue;
            };
            if !path.is_empty() {
                out.push(PathUser {
                    user: format!("LIO backstore {hba}/{dev}"),
                    path,
                });
            }
        }
    }
    Ok(out)
}

/// A process holding a file open.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Holder {
    /// Its pid.
    pub pid: u32,
    /// Its command name (`proc/PID/comm`).
    pub command: String,
    /// The file (the fd link's target: `/dev/vfio/12`).
    pub path: String,
}

/// The processes under `root` with a file descriptor whose link target
/// `wanted` accepts (`/proc/PID/fd/N`), one [`Holder`] per process and
/// file, by pid. Processes whose fds cannot be read (another user's, as
/// non-root; ended meanwhile) are left out.
pub fn open_by(root: &Path, wanted: impl Fn(&str) -> bool) -> Result<Vec<Holder>, TopologyError> {
    let mut r = reader(root)?;
    let mut out: Vec<Holder> = Vec::new();
    for pid in numbered_dirs(&mut r, "proc", "") {
        let fd_dir = format!("proc/{pid}/fd");
        // Listing another user's fds fails: not an error here.
        let Ok(fds) = std::fs::read_dir(root.join(&fd_dir)) else {
            continue;
        };
        let mut paths: Vec<String> = fds
            .filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
            .map(|t| t.to_string_lossy().into_owned())
            .filter(|t| wanted(t))
            .collect();
        paths.sort();
        paths.dedup();
        if paths.is_empty() {
            continue;
        }
        let command = r
            .read_trimmed(&format!("proc/{pid}/comm"))
            .unwrap_or_default();
        out.extend(paths.into_iter().map(|path| Holder {
            pid,
            command: command.clone(),
            path,
        }));
    }
    Ok(out)
}

/// What `doctor` checks for numio's VFIO backend, read from a root.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct VfioFacts {
    /// Whether an IOMMU is on ([`iommu_enabled`]).
    pub iommu: bool,
    /// The VFIO modules.
    pub modules: VfioModules,
    /// Hugepage pools per node.
    pub hugepages: Vec<NodeHugepages>,
    /// Functions on vfio-pci whose group device (`/dev/vfio/N`,
    /// `/dev/vfio/noiommu-N`) or VFIO cdev no process holds open:
    /// (address, group device).
    pub unheld: Vec<(String, String)>,
}

/// The VFIO facts of the machine under `root`.
pub fn vfio_facts(root: &Path) -> Result<VfioFacts, TopologyError> {
    let mut candidates = Vec::new();
    for addr in super::nvme_functions(root)? {
        let Some(f) = super::pci_function(root, &addr)? else {
            continue;
        };
        if !f.on_vfio() {
            continue;
        }
        let mut devs: Vec<String> = f
            .iommu_group
            .map(|g| vec![format!("/dev/vfio/{g}"), format!("/dev/vfio/noiommu-{g}")])
            .unwrap_or_default();
        devs.extend(f.vfio_cdev.map(|c| format!("/dev/vfio/devices/{c}")));
        candidates.push((addr, devs));
    }
    let all: Vec<String> = candidates.iter().flat_map(|(_, d)| d.clone()).collect();
    let held = if all.is_empty() {
        Vec::new()
    } else {
        open_by(root, |p| all.iter().any(|d| d == p))?
    };
    let unheld = candidates
        .into_iter()
        .filter(|(_, devs)| !held.iter().any(|h| devs.contains(&h.path)))
        .map(|(addr, devs)| (addr, devs.into_iter().next().unwrap_or_default()))
        .collect();
    Ok(VfioFacts {
        iommu: iommu_enabled(root)?,
        modules: vfio_modules(root)?,
        hugepages: hugepages(root)?,
        unheld,
    })
}
