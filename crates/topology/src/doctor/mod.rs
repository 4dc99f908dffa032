//! `doctor`: findings over a [`Topology`], each with a severity, the
//! evidence (file and value) and the fix.
//!
//! Pure over the model, so it is tested on fixtures. The checks:
//!
//! | code | severity | when |
//! | --- | --- | --- |
//! | `controller-node-unknown` | error (PCIe, or a fabric path of a multipath namespace); info (single-path fabric) | `numa_node = -1` on a multi-node machine |
//! | `multipath-path-not-nearest` | warning | a CPU node's I/O to a multipath namespace goes, or may go on a tie, through a path that is not a nearest one (a path of `numa_node` -1, which the kernel counts as local; round-robin or queue-depth over paths on several nodes), as [`crate::multipath`] models the kernel or as the kernel's `numa_nodes` say |
//! | `iopolicy-not-numa` | warning | a subsystem's controllers sit on different nodes and its iopolicy is not `numa` |
//! | `irq-remote-node` | warning | queue IRQs fire on another node than the controller and than the CPUs they serve |
//! | `scheduler-not-none` | warning | an NVMe block device (or multipath path device) has an I/O scheduler |
//! | `no-poll-queues` | info | `nvme.poll_queues = 0`: polled I/O impossible |
//! | `node-without-cpus` / `node-without-memory` | warning | a node holding NVMe controllers has no online CPUs / no memory |
//! | `cpus-offline` | warning | some CPUs are offline |
//! | `controller-not-live` | warning | a controller's state is not `live` |
//! | `unreadable-files` | info | discovery could not read some files |
//! | `distance-table-mismatch` | warning | a node's distance row does not have one entry per node |
//! | `distance-table-missing` | info | no node has a distance row, on a multi-node machine |
//! | `cpu-node-not-listed` | warning | CPUs belong to a node that is not among the online nodes |
//! | `cpus-not-in-node-lists` | warning | online CPUs that no node lists |
//! | `controller-node-not-online` | warning | a controller reports a node that is not among the online nodes |
//! | `node-lists-overlap` | warning | several nodes list the same CPUs (a firmware bug; discovery keeps each on the node its `cpuN/nodeM` link names) |
//! | `cpu-online-missing`, `node-online-missing`, `cpu-lists-missing` | info | an older kernel's sysfs: discovery derived the list it lacks |
//! | `nvme-subsystems-missing`, `nvme-misc-class` | info | an NVMe layout of a kernel before 4.15 / 4.1 |
//! | `irq-coalescing-off` | info | two or more PCIe drives on one node coalesce no interrupts (THR 0 or TIME 0) while their I/O queue IRQs average two or more per CPU; only with [`LiveFacts`] (the values live in the controllers, not in sysfs: `numio doctor` reads them on a live root as root; a snapshot says nothing) |
//! | `iommu-off` | info | no IOMMU is on: numio's vfio backend needs one (or `--allow-noiommu`); only with [`LiveFacts::vfio`] |
//! | `vfio-modules-missing` | info | vfio, vfio_iommu_type1 or vfio_pci is not loaded; likewise |
//! | `no-hugepages` | info | no node has 2 MiB hugepages reserved; likewise |
//! | `vfio-device-unheld` | warning | an NVMe controller is on vfio-pci and no process holds its VFIO group: the kernel cannot use it and nothing else does |
//!
//! Every finding cites the file discovery actually read (a controller's
//! `numa_node` or its PCI device's).

use std::collections::BTreeMap;
use std::fmt::Write;

use serde::{Deserialize, Serialize};

use crate::model::{Topology, SCHEMA_VERSION};

mod checks;
mod coalesce;
mod consistency;
mod multipath;
mod vfio;

/// How bad a finding is. Ordered: `Info < Warning < Error`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Worth knowing; nothing is wrong.
    Info,
    /// Costs performance or hides a problem.
    Warning,
    /// Makes NUMA placement wrong; `numio doctor` exits 1.
    Error,
}

impl Severity {
    /// Lower-case name (`error`).
    pub fn name(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Warning => "warning",
            Severity::Error => "error",
        }
    }
}

/// A file and the value read from it (or derived from it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Evidence {
    /// Absolute path on the machine (`/sys/class/nvme/nvme0/numa_node`).
    pub path: String,
    /// The value seen.
    pub value: String,
}

/// One finding.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Finding {
    /// Severity.
    pub severity: Severity,
    /// Stable identifier of the check (`controller-node-unknown`).
    pub code: String,
    /// What it is about (`nvme0`, `nvme-subsys0`, `node 2`, `cpus`).
    pub subject: String,
    /// What is wrong and why it matters.
    pub message: String,
    /// Files and values that show it.
    pub evidence: Vec<Evidence>,
    /// How to fix it.
    pub fix: String,
}

/// The JSON document of `numio doctor --json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Report {
    /// [`SCHEMA_VERSION`].
    pub schema_version: u32,
    /// Findings, most severe first.
    pub findings: Vec<Finding>,
    /// Number of findings of severity error.
    pub errors: usize,
    /// Number of warnings.
    pub warnings: usize,
    /// Number of infos.
    pub infos: usize,
}

/// What the checks may know beyond the model: values that live in the
/// devices and that the caller read (topology reads files only). Empty for
/// a snapshot.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LiveFacts {
    /// Each PCIe controller's interrupt coalescing (Feature 0x08, completion
    /// dword 0 of Get Features), by name; a controller not read is absent.
    pub coalescing_raw: BTreeMap<String, u32>,
    /// The IOMMU, VFIO modules, hugepages and unheld vfio-pci devices
    /// ([`crate::pci::vfio_facts`]); `None`: not read (a snapshot).
    pub vfio: Option<crate::pci::VfioFacts>,
}

impl Report {
    /// Diagnoses `t`.
    pub fn new(t: &Topology) -> Report {
        Report::with_live(t, &LiveFacts::default())
    }

    /// Diagnoses `t` with what the caller read from the devices.
    pub fn with_live(t: &Topology, live: &LiveFacts) -> Report {
        let findings = diagnose_with(t, live);
        let count = |s: Severity| findings.iter().filter(|f| f.severity == s).count();
        Report {
            schema_version: SCHEMA_VERSION,
            errors: count(Severity::Error),
            warnings: count(Severity::Warning),
            infos: count(Severity::Info),
            findings,
        }
    }

    /// Exit status of `numio doctor`: 1 when any finding is an error.
    pub fn exit_code(&self) -> i32 {
        i32::from(self.errors > 0)
    }
}

/// Every finding, most severe first (stable within a severity).
pub fn diagnose(t: &Topology) -> Vec<Finding> {
    diagnose_with(t, &LiveFacts::default())
}

/// [`diagnose`] with what the caller read from the devices.
pub fn diagnose_with(t: &Topology, live: &LiveFacts) -> Vec<Finding> {
    let mut out = Vec::new();
    checks::controller_node_unknown(t, &mut out);
    checks::iopolicy_not_numa(t, &mut out);
    checks::irq_remote_node(t, &mut out);
    checks::scheduler_not_none(t, &mut out);
    checks::no_poll_queues(t, &mut out);
    checks::nodes_without_cpus_or_memory(t, &mut out);
    checks::cpus_offline(t, &mut out);
    checks::controller_not_live(t, &mut out);
    checks::unreadable_files(t, &mut out);
    consistency::distance_rows(t, &mut out);
    consistency::cpu_nodes(t, &mut out);
    consistency::discovery_notes(t, &mut out);
    coalesce::irq_coalescing_off(t, live, &mut out);
    vfio::findings(live, &mut out);
    multipath::path_not_nearest(t, &mut out);
    out.sort_by_key(|f| std::cmp::Reverse(f.severity));
    out
}

/// The human form of a report.
pub fn render(report: &Report) -> String {
    let mut out = String::new();
    for f in &report.findings {
        let _ = writeln!(out, "{:<7} {}: {}", f.severity.name(), f.subject, f.message);
        for e in &f.evidence {
            let value = if e.value.is_empty() {
                "(empty)"
            } else {
                e.value.as_str()
            };
            let _ = writeln!(out, "        evidence: {} = {value}", e.path);
        }
        let _ = writeln!(out, "        fix: {}", f.fix);
    }
    if report.findings.is_empty() {
        let _ = writeln!(
            out,
            "no findings: NUMA, multipath, IRQ and queue settings look right"
        );
    }
    let _ = writeln!(
        out,
        "summary: {} error(s), {} warning(s), {} info",
        report.errors, report.warnings, report.infos
    );
    out
}
