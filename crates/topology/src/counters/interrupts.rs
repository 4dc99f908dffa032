//! `/proc/interrupts`: every numbered IRQ line's count per CPU, and which
//! lines are an NVMe controller's queue vectors.

use serde::{Deserialize, Serialize};

use crate::error::ParseError;
use crate::model::CpuId;
use crate::parse::{nvme_numbers, parse_interrupts};

/// One numbered IRQ line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IrqCounts {
    /// IRQ number.
    pub irq: u32,
    /// The action's name, the last word of the line (`nvme0q3`; of a
    /// vector shared by two queues, `nvme0q0, nvme0q1`, the last one).
    pub name: String,
    /// Count per CPU column of [`InterruptCounts::cpus`].
    pub counts: Vec<u64>,
}

/// Every numbered IRQ line of one reading of `/proc/interrupts`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct InterruptCounts {
    /// The CPU of each count column, from the header (online CPUs only: a
    /// machine with CPU 5 offline has no `CPU5` column).
    pub cpus: Vec<CpuId>,
    /// The numbered lines, in file order (`NMI:`, `LOC:`, `IPI0:`, `Err:`
    /// and the like are not counted per line).
    pub lines: Vec<IrqCounts>,
}

/// Parses a `/proc/interrupts` text: the header's CPU columns and every
/// numbered line (x86 `PCI-MSIX-…  3-edge  nvme0q3`, older `PCI-MSI
/// 524291-edge` and `IR-PCI-MSI`, arm64 `ITS-MSI 16387 Edge`, ppc64
/// `XIVE-IRQ … Edge`, with the counts first and the action name last).
///
/// Errors: no header, or a numbered line without a count for every column.
pub fn parse_interrupt_counts(text: &str) -> Result<InterruptCounts, ParseError> {
    let (cpus, lines) = parse_interrupts(text, |_| true)?;
    Ok(InterruptCounts {
        cpus: cpus.into_iter().map(CpuId).collect(),
        lines: lines
            .into_iter()
            .map(|l| IrqCounts {
                irq: l.irq,
                name: l.name,
                counts: l.counts,
            })
            .collect(),
    })
}

/// The controller (`nvme3`) whose queue vector an IRQ line is named for
/// (`nvme3q0`: the admin queue, `nvme3q5`: I/O queue 5); `None` for other
/// lines. The rule discovery uses to give each controller its IRQs.
pub fn queue_controller(name: &str) -> Option<String> {
    nvme_numbers(name, "nvme", "q").map(|n| format!("nvme{}", n[0]))
}

impl InterruptCounts {
    /// The IRQ numbers of `controller`'s queue vectors (admin and I/O),
    /// ascending.
    pub fn controller_irqs(&self, controller: &str) -> Vec<u32> {
        let mut irqs: Vec<u32> = self
            .lines
            .iter()
            .filter(|l| queue_controller(&l.name).as_deref() == Some(controller))
            .map(|l| l.irq)
            .collect();
        irqs.sort_unstable();
        irqs
    }
}
