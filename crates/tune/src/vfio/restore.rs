//! Giving a controller back: from a [`super::Binding`], from `numio vfio
//! unbind`, and after a crash from the records whose owner is dead
//! ([`restore_recorded`], `numio vfio restore`).

use std::path::Path;

use topology::pci::VFIO_PCI;

use super::record::{Owner, VfioJournal, VfioRecord};
use super::sysfs::{self, vfio_err, wait_for, BIND_WAIT};
use crate::error::TuneError;

/// Whether the process `owner` still runs under `root` (same pid, same
/// start time).
pub fn alive(root: &Path, owner: Owner) -> bool {
    owner.start_ticks.is_some()
        && topology::counters::process_start_ticks(root, owner.pid) == owner.start_ticks
}

/// Moves `addr` off vfio-pci to what `record` says it had (driver,
/// `driver_override`), waits for that driver (and for nvme, its
/// controller), puts the hugepages back and removes the record.
pub fn give_back_record(
    root: &Path,
    journal: &VfioJournal,
    record: &VfioRecord,
) -> Result<(), TuneError> {
    let file_lock = journal.lock_waiting(BIND_WAIT)?;
    let addr = record.address.as_str();
    if record.rebound {
        move_back(
            root,
            addr,
            record.driver_override.as_deref(),
            record.driver.as_deref(),
        )?;
    }
    let others = journal.records()?;
    for p in &record.hugepages {
        let shared = others.iter().any(|r| {
            r.address != addr
                && r.hugepages
                    .iter()
                    .any(|o| o.node == p.node && o.size_kib == p.size_kib)
        });
        if !shared {
            sysfs::set_hugepages(root, p.node, p.size_kib, p.original, addr)?;
        }
    }
    journal.remove(&file_lock, addr)
}

/// Restores `driver_override`, unbinds from vfio-pci, probes, and waits
/// until `driver` has the device (nvme: and its controller is there).
pub(crate) fn move_back(
    root: &Path,
    addr: &str,
    driver_override: Option<&str>,
    driver: Option<&str>,
) -> Result<(), TuneError> {
    let f = sysfs::function(root, addr)?;
    sysfs::set_override(root, addr, driver_override)?;
    if f.on_vfio() {
        sysfs::unbind(root, addr)?;
    }
    if f.driver.is_none() || f.on_vfio() {
        sysfs::probe(root, addr)?;
    }
    let Some(driver) = driver else {
        return Ok(());
    };
    wait_for(addr, &format!("{driver} taking it back"), None, || {
        let f = sysfs::function(root, addr)?;
        Ok(f.driver.as_deref() == Some(driver) && (driver != "nvme" || !f.controllers.is_empty()))
    })
}

/// `numio vfio unbind ADDR`: gives `addr` back to its recorded driver, or
/// to nvme when it is on vfio-pci without a record. Refused while a live
/// numio owns its record, or a process holds its group device. Returns
/// the driver it went to.
pub fn unbind_address(root: &Path, journal: &VfioJournal, addr: &str) -> Result<String, TuneError> {
    let f = super::checks::nvme_function(root, addr)?;
    let record = journal.record_of(addr)?;
    if let Some(owner) = record.as_ref().and_then(|r| r.owner) {
        if alive(root, owner) {
            return Err(vfio_err(
                addr,
                format!("numio (pid {}) holds it and gives it back when it ends; wait for it, or stop it", owner.pid),
            ));
        }
    }
    if let Some(g) = f.iommu_group {
        let devs = [format!("/dev/vfio/{g}"), format!("/dev/vfio/noiommu-{g}")];
        if let Some(h) = topology::pci::open_by(root, |p| devs.iter().any(|d| d == p))?.first() {
            return Err(vfio_err(
                addr,
                format!(
                    "{} is open in {} (pid {}): end it first",
                    h.path, h.command, h.pid
                ),
            ));
        }
    }
    match record {
        Some(r) => {
            give_back_record(root, journal, &r)?;
            Ok(r.driver.unwrap_or_else(|| "no driver".to_string()))
        }
        None if f.driver.as_deref() == Some(VFIO_PCI) => {
            let _lock = journal.lock_waiting(BIND_WAIT)?;
            let keep = f.driver_override.as_deref().filter(|o| *o != VFIO_PCI);
            move_back(root, addr, keep, Some("nvme"))?;
            Ok("nvme".to_string())
        }
        None => Err(vfio_err(
            addr,
            format!(
                "is not on vfio-pci (its driver is {}) and numio recorded nothing for it: nothing to give back",
                f.driver.as_deref().unwrap_or("none")
            ),
        )),
    }
}

/// What [`restore_recorded`] did.
#[derive(Debug, Default)]
pub struct RestoreReport {
    /// Records given back and removed.
    pub restored: Vec<VfioRecord>,
    /// Records left alone, with why (a live owner; bound until unbind).
    pub skipped: Vec<(VfioRecord, String)>,
    /// Records that could not be given back, with why; they stay.
    pub failed: Vec<(VfioRecord, String)>,
}

/// Gives back every recorded controller whose owner process is dead
/// (after `kill -9` or a crash); with `all`, also those `numio vfio bind`
/// keeps until unbind. A live owner's record is always left to it.
pub fn restore_recorded(
    root: &Path,
    journal: &VfioJournal,
    all: bool,
) -> Result<RestoreReport, TuneError> {
    let mut report = RestoreReport::default();
    for record in journal.records()? {
        let skip = match record.owner {
            Some(o) if alive(root, o) => Some(format!("numio (pid {}) holds it", o.pid)),
            None if !all => Some(
                "bound by `numio vfio bind` until `numio vfio unbind` (or `restore --all`)"
                    .to_string(),
            ),
            _ => None,
        };
        if let Some(why) = skip {
            report.skipped.push((record, why));
            continue;
        }
        match give_back_record(root, journal, &record) {
            Ok(()) => report.restored.push(record),
            Err(e) => report.failed.push((record, e.to_string())),
        }
    }
    Ok(report)
}
