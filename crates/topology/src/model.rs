//! The topology model: plain, serializable data produced by discovery.
//!
//! The JSON form of [`Topology`] is a versioned public schema
//! ([`SCHEMA_VERSION`]); change it only together with the README.

use serde::{Deserialize, Serialize};

/// Version of the JSON schema of [`Topology`] and of snapshots.
pub const SCHEMA_VERSION: u32 = 1;

/// A NUMA node number as the kernel numbers it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct NodeId(pub u32);

/// A logical CPU number as the kernel numbers it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct CpuId(pub u32);

/// The NUMA node of a device exactly as the kernel reports it.
///
/// The kernel writes `-1` when it does not know; that is kept as
/// [`DeviceNode::Unknown`] and never mapped to node 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DeviceNode {
    /// The device sits on this node.
    Known(NodeId),
    /// The kernel reported -1 (or nothing).
    Unknown,
}

impl DeviceNode {
    /// The node, if known.
    pub fn node(self) -> Option<NodeId> {
        match self {
            DeviceNode::Known(n) => Some(n),
            DeviceNode::Unknown => None,
        }
    }
}

/// The whole machine as discovery saw it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Topology {
    /// [`SCHEMA_VERSION`] of this document.
    pub schema_version: u32,
    /// Online NUMA nodes, ascending.
    pub nodes: Vec<Node>,
    /// Every CPU the kernel knows (online and offline), ascending.
    pub cpus: Vec<Cpu>,
    /// NVMe controllers, by name (`nvme0`, `nvme1`, ...).
    pub controllers: Vec<Controller>,
    /// NVMe subsystems with their namespaces.
    pub subsystems: Vec<Subsystem>,
    /// NVMe driver module parameters, when readable.
    pub nvme_params: NvmeParams,
    /// Files that existed but could not be read or parsed (path and reason).
    pub unreadable: Vec<Unreadable>,
    /// CPU of each count column of `/proc/interrupts`, in column order
    /// (the order of [`QueueIrq::per_cpu_counts`]).
    #[serde(default)]
    pub interrupt_cpus: Vec<CpuId>,
    /// What discovery read instead of a file older kernels do not write,
    /// and which of two contradicting files it believed; empty on a
    /// current kernel with a consistent sysfs. `numio doctor` reports each.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<DiscoveryNote>,
}

/// Something discovery could not read as today's kernels write it: a file
/// missing on older kernels (and what numio read instead), or files that
/// contradict each other (and which one numio believed). Never silent: each
/// becomes a `numio doctor` finding with the same code.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DiscoveryNote {
    /// Stable identifier (`cpu-online-missing`, `node-lists-overlap`, ...).
    pub code: String,
    /// The file (or directory) concerned, relative to the root.
    pub path: String,
    /// What that file holds (`missing`, `0-7`).
    pub value: String,
    /// What was missing or inconsistent, which kernel feature that is, and
    /// what numio did instead.
    pub message: String,
}

/// One NUMA node.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Node {
    /// Node number.
    pub id: NodeId,
    /// CPUs of this node (from `nodeN/cpulist`).
    pub cpus: Vec<CpuId>,
    /// Total memory of the node in bytes (`nodeN/meminfo` MemTotal).
    pub memory_bytes: u64,
    /// Distances to every online node, in the order of `nodes`.
    pub distances: Vec<u32>,
}

/// One logical CPU.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cpu {
    /// CPU number.
    pub id: CpuId,
    /// Whether the CPU is online.
    pub online: bool,
    /// Physical package (socket) id; `None` when offline or not reported.
    pub package: Option<u32>,
    /// Core id within the package; `None` when offline or not reported.
    pub core: Option<u32>,
    /// SMT siblings including this CPU, ascending.
    pub siblings: Vec<CpuId>,
    /// NUMA node of the CPU, when it belongs to one.
    pub node: Option<NodeId>,
}

/// NVMe transport of a controller.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Transport {
    /// PCI Express.
    Pcie,
    /// NVMe/TCP.
    Tcp,
    /// NVMe/RDMA.
    Rdma,
    /// NVMe/FC.
    Fc,
    /// The nvmet loop transport.
    Loop,
    /// Anything else the kernel reports.
    Other,
}

impl Transport {
    /// The kernel's name (`pcie`, `tcp`, ...).
    pub fn name(self) -> &'static str {
        match self {
            Transport::Pcie => "pcie",
            Transport::Tcp => "tcp",
            Transport::Rdma => "rdma",
            Transport::Fc => "fc",
            Transport::Loop => "loop",
            Transport::Other => "other",
        }
    }
}

/// One NVMe controller (`/sys/class/nvme/nvmeX`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Controller {
    /// Kernel name, e.g. `nvme0`.
    pub name: String,
    /// Transport.
    pub transport: Transport,
    /// PCI BDF (`0000:81:00.0`) or the fabric address string.
    pub address: String,
    /// Model string, trimmed.
    pub model: String,
    /// Serial number, trimmed.
    pub serial: String,
    /// Firmware revision, trimmed.
    pub firmware: String,
    /// Controller state (`live`, `resetting`, ...).
    pub state: String,
    /// Controller id (cntlid), when reported.
    pub cntlid: Option<u32>,
    /// NUMA node exactly as the kernel reports it.
    pub numa_node: DeviceNode,
    /// The file `numa_node` was read from, relative to the root
    /// (`sys/class/nvme/nvme0/numa_node`, or `sys/class/nvme/nvme0/device/numa_node`
    /// where the controller has no attribute of its own); empty when neither exists.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub numa_node_file: String,
    /// PCI path from the host bridge down to the device (BDFs), PCIe only.
    pub pci_path: Vec<String>,
    /// The PCI device's `local_cpulist`, PCIe only.
    pub local_cpus: Vec<CpuId>,
    /// Subsystem this controller belongs to (`nvme-subsysN`).
    pub subsystem: Option<String>,
    /// Number of I/O queues (from the IRQs or the hardware queues seen).
    pub queue_count: u32,
    /// Queue interrupts of this controller.
    pub irqs: Vec<QueueIrq>,
}

/// One NVMe queue interrupt (`nvme0q3` in `/proc/interrupts`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct QueueIrq {
    /// IRQ number.
    pub irq: u32,
    /// Queue name, e.g. `nvme0q3`.
    pub name: String,
    /// `effective_affinity_list` of the IRQ (its `smp_affinity_list` where
    /// the kernel reports no effective affinity).
    pub effective_affinity: Vec<CpuId>,
    /// Interrupt count on each CPU, in CPU order of `/proc/interrupts`.
    pub per_cpu_counts: Vec<u64>,
}

/// One NVMe subsystem (`/sys/class/nvme-subsystem/nvme-subsysN`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Subsystem {
    /// Kernel name, e.g. `nvme-subsys0`.
    pub name: String,
    /// Subsystem NQN.
    pub nqn: String,
    /// Multipath I/O policy (`numa`, `round-robin`, `queue-depth`), when reported.
    pub iopolicy: Option<String>,
    /// Controllers of the subsystem, by name.
    pub controllers: Vec<String>,
    /// Namespaces (head devices) of the subsystem.
    pub namespaces: Vec<Namespace>,
    /// Set on a kernel without NVMe subsystems (before Linux 4.15, no
    /// `/sys/class/nvme-subsystem`): a stand-in named after its one
    /// controller (`nvme0`) that holds the controller's namespaces.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub stand_in: bool,
}

/// One namespace as its head block device (`nvmeXnY`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Namespace {
    /// Head block device, e.g. `nvme0n1`.
    pub block_device: String,
    /// Generic character device, e.g. `ng0n1`, when present.
    pub generic_device: Option<String>,
    /// Namespace id.
    pub nsid: u32,
    /// Size in bytes.
    pub size_bytes: u64,
    /// Logical block size in bytes.
    pub logical_block_size: u32,
    /// Block queue settings of the head device.
    pub queue: BlockQueue,
    /// Multipath paths (`nvmeXcYnZ`); empty for a namespace without multipath.
    pub paths: Vec<NamespacePath>,
    /// The controller owning a namespace without multipath (native multipath
    /// off: the block device is a child of the controller); `None` for a
    /// multipath head, whose controllers are those of its `paths`.
    #[serde(default)]
    pub controller: Option<String>,
}

/// One path of a multipath namespace.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NamespacePath {
    /// Path device, e.g. `nvme0c1n1`.
    pub device: String,
    /// Controller of the path.
    pub controller: String,
    /// ANA state (`optimized`, ...), when reported.
    pub ana_state: Option<String>,
    /// `numa_nodes` of the path, when reported (Linux 6.15+): the nodes
    /// whose I/O the kernel's `numa` iopolicy currently sends through this
    /// path (empty under another iopolicy, and for a node that has issued
    /// no I/O since the paths last changed).
    pub numa_nodes: Option<Vec<NodeId>>,
    /// `queue_depth` of the path, when reported (Linux 6.15+, a number only
    /// under the `queue-depth` iopolicy): I/Os in flight on the path.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue_depth: Option<u32>,
    /// Whether the kernel writes the per-path `queue_depth` attribute at all
    /// (Linux 6.15+; empty under another iopolicy): such a kernel has the
    /// `queue-depth` iopolicy.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub queue_depth_attr: bool,
    /// Hardware queue → CPUs of the path device (`mq/N/cpu_list`).
    #[serde(default)]
    pub hw_queues: Vec<HwQueue>,
    /// Active I/O scheduler of the path device (the head of a multipath
    /// namespace is bio-based and always reports `none`; this is the one
    /// requests go through).
    #[serde(default)]
    pub scheduler: Option<String>,
}

/// Block queue settings (`/sys/block/X/queue`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct BlockQueue {
    /// Active I/O scheduler (the bracketed one).
    pub scheduler: Option<String>,
    /// `nr_requests`.
    pub nr_requests: Option<u32>,
    /// `io_poll`.
    pub io_poll: Option<bool>,
    /// `rq_affinity`.
    pub rq_affinity: Option<u32>,
    /// `nomerges`.
    pub nomerges: Option<u32>,
    /// `iostats`.
    pub iostats: Option<bool>,
    /// `write_cache` (`write back` / `write through`).
    pub write_cache: Option<String>,
    /// Hardware queue → CPUs (`mq/N/cpu_list`), by queue number.
    pub hw_queues: Vec<HwQueue>,
}

/// One blk-mq hardware queue.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HwQueue {
    /// Queue number.
    pub index: u32,
    /// CPUs mapped to it.
    pub cpus: Vec<CpuId>,
}

/// NVMe driver module parameters.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct NvmeParams {
    /// `nvme.poll_queues`.
    pub poll_queues: Option<u32>,
    /// `nvme_core.iopolicy`.
    pub iopolicy: Option<String>,
    /// `nvme_core.multipath`.
    pub multipath: Option<bool>,
}

/// A file that exists but could not be read or parsed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Unreadable {
    /// Path relative to the root.
    pub path: String,
    /// Why.
    pub reason: String,
}

impl std::fmt::Display for NodeId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.0)
    }
}

impl std::fmt::Display for CpuId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.0)
    }
}

impl std::fmt::Display for DeviceNode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DeviceNode::Known(n) => write!(f, "{n}"),
            DeviceNode::Unknown => f.write_str("unknown (-1)"),
        }
    }
}
