//! NVMe queue interrupts (`/proc/interrupts`, `/proc/irq/N`).

use crate::model::{CpuId, QueueIrq};
use crate::parse::{nvme_numbers, parse_interrupts, parse_list};
use crate::reader::Reader;

/// The queue IRQs of every NVMe controller.
#[derive(Debug, Default)]
pub struct NvmeIrqs {
    /// CPU of each count column of `/proc/interrupts`.
    pub columns: Vec<CpuId>,
    /// `(controller instance, queue number, irq)`, in file order.
    pub irqs: Vec<(u32, u32, QueueIrq)>,
}

impl NvmeIrqs {
    /// The IRQs of controller `instance`, ordered by queue number.
    pub fn of_controller(&self, instance: u32) -> Vec<QueueIrq> {
        let mut mine: Vec<&(u32, u32, QueueIrq)> = self
            .irqs
            .iter()
            .filter(|(c, _, _)| *c == instance)
            .collect();
        mine.sort_by_key(|(_, q, _)| *q);
        mine.into_iter().map(|(_, _, irq)| irq.clone()).collect()
    }

    /// How many I/O queue (not admin) IRQs controller `instance` has.
    pub fn io_queue_count(&self, instance: u32) -> u32 {
        self.irqs
            .iter()
            .filter(|(c, q, _)| *c == instance && *q > 0)
            .count() as u32
    }
}

/// Reads `/proc/interrupts` and the effective affinity of each NVMe queue IRQ.
pub fn discover(r: &mut Reader) -> NvmeIrqs {
    const PATH: &str = "proc/interrupts";
    let Some(text) = r.read(PATH) else {
        return NvmeIrqs::default();
    };
    let (columns, lines) =
        match parse_interrupts(&text, |name| nvme_numbers(name, "nvme", "q").is_some()) {
            Ok(parsed) => parsed,
            Err(reason) => {
                r.unreadable.push(crate::model::Unreadable {
                    path: PATH.to_string(),
                    reason: reason.to_string(),
                });
                return NvmeIrqs::default();
            }
        };
    let mut irqs = Vec::with_capacity(lines.len());
    for line in lines {
        let Some(nums) = nvme_numbers(&line.name, "nvme", "q") else {
            continue;
        };
        // Kernels without effective affinity (or architectures that do not
        // report it) have only the requested affinity; old ones only masks.
        let dir = format!("proc/irq/{}", line.irq);
        let effective_affinity = r
            .cpu_set(
                &format!("{dir}/effective_affinity_list"),
                &format!("{dir}/effective_affinity"),
                parse_list,
            )
            .or_else(|| {
                r.cpu_set(
                    &format!("{dir}/smp_affinity_list"),
                    &format!("{dir}/smp_affinity"),
                    parse_list,
                )
            })
            .unwrap_or_default()
            .into_iter()
            .map(CpuId)
            .collect();
        let irq = QueueIrq {
            irq: line.irq,
            name: line.name,
            effective_affinity,
            per_cpu_counts: line.counts,
        };
        irqs.push((nums[0], nums[1], irq));
    }
    NvmeIrqs {
        columns: columns.into_iter().map(CpuId).collect(),
        irqs,
    }
}
