//! [`Controller`]: one NVMe controller as `tune` knows it, the leaf every
//! other module of the crate names.

use serde::{Deserialize, Serialize};
use topology::Transport;

/// One NVMe controller as `tune` knows it: who it is (name, PCI address,
/// serial: the name can change across a reset or a reboot, the other two
/// cannot), where it sits, and its I/O queue interrupt vectors.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Controller {
    /// Kernel name (`nvme0`): its character device is `/dev/nvme0`.
    pub name: String,
    /// Transport (`pcie`, `tcp`, ...).
    pub transport: Transport,
    /// PCI address (`0000:01:00.0`), or the fabric address.
    pub address: String,
    /// Serial number.
    pub serial: String,
    /// Model string.
    pub model: String,
    /// NUMA node, when the kernel knows it.
    pub node: Option<u32>,
    /// Interrupt vectors of its I/O queues (`nvme0q1` .. in
    /// `/proc/interrupts`: queue N uses vector N), ascending; empty when
    /// the IRQs were not seen.
    pub vectors: Vec<u16>,
}

impl Controller {
    /// The controller as discovery saw it.
    pub fn from_topology(c: &topology::Controller) -> Controller {
        let mut vectors: Vec<u16> = c
            .irqs
            .iter()
            .filter_map(|irq| queue_number(&irq.name))
            .filter(|&q| q > 0)
            .filter_map(|q| u16::try_from(q).ok())
            .collect();
        vectors.sort_unstable();
        vectors.dedup();
        Controller {
            name: c.name.clone(),
            transport: c.transport,
            address: c.address.clone(),
            serial: c.serial.clone(),
            model: c.model.clone(),
            node: c.numa_node.node().map(|n| n.0),
            vectors,
        }
    }

    /// Whether it is a fabrics controller (no interrupts of its own).
    pub fn is_fabrics(&self) -> bool {
        self.transport != Transport::Pcie
    }

    /// Whether `other` is the same device (PCI address and serial), under
    /// whatever name.
    pub fn same_device(&self, address: &str, serial: &str) -> bool {
        self.address == address && self.serial == serial
    }
}

/// `nvme3q7` → 7.
fn queue_number(irq_name: &str) -> Option<u32> {
    topology::parse::nvme_numbers(irq_name, "nvme", "q").and_then(|n| n.get(1).copied())
}
