//! `numio coalesce restore`: puts back every original a state file
//! recorded (after `kill -9`, a crash, or a plain `set`), finding each
//! controller by PCI address and serial under whatever name it has now.

use nvme_spec::features::fid;
use topology::Topology;

use crate::admin::Access;
use crate::controller::Controller;
use crate::error::TuneError;
use crate::journal::{Journal, Record};
use crate::state::read_value;

/// One record put back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Restored {
    /// The record (now removed from the state file).
    pub record: Record,
    /// The controller's name now (another than the record's after a
    /// rename).
    pub name_now: String,
}

/// What [`restore_recorded`] did.
#[derive(Debug, Default)]
pub struct RestoreReport {
    /// Records put back and removed.
    pub restored: Vec<Restored>,
    /// Records that stay, with why.
    pub failed: Vec<(Record, RestoreError)>,
}

/// Why one record could not be put back (it stays in the state file).
#[derive(Debug, thiserror::Error)]
pub enum RestoreError {
    /// A feature this numio does not restore (a newer numio wrote it).
    #[error("feature {feature:#04x} is not one this numio restores; restore it with the numio that wrote it")]
    UnknownFeature {
        /// The feature id.
        feature: u8,
    },
    /// No controller with the record's address and serial now.
    #[error("no controller at {address} with serial {serial} now (removed?); the record stays until it is back")]
    NoController {
        /// The PCI address recorded.
        address: String,
        /// The serial recorded.
        serial: String,
    },
    /// Opening the controller, or the Set or Get Features, failed.
    #[error(transparent)]
    Admin(#[from] TuneError),
    /// The controller took the value but reads back another.
    #[error(
        "{name} reads {now:#06x} after Set Features 0x08 (interrupt coalescing) = {original:#06x}"
    )]
    ReadsBack {
        /// The controller's name now.
        name: String,
        /// What it reads.
        now: u32,
        /// The original that was set.
        original: u32,
    },
}

/// `numio coalesce restore`: [`restore_recorded`] on the machine under
/// `root`; `None` when `journal` holds no record (the machine is not
/// read).
pub fn restore_all(
    journal: &Journal,
    root: &std::path::Path,
    access: &dyn Access,
) -> Result<Option<RestoreReport>, TuneError> {
    if journal.records()?.is_empty() {
        return Ok(None);
    }
    let topo = Topology::load(root)?;
    restore_recorded(journal, &topo, access).map(Some)
}

/// Puts back each record of `journal` on the controller of `topo` with the
/// record's address and serial, checks it reads back, and removes the
/// record. A record whose controller is missing or refuses stays (listed
/// in [`RestoreReport::failed`]). Errors: the lock (a running numio holds
/// it) or the state file.
pub fn restore_recorded(
    journal: &Journal,
    topo: &Topology,
    access: &dyn Access,
) -> Result<RestoreReport, TuneError> {
    let file_lock = journal.lock()?;
    let mut report = RestoreReport::default();
    for record in journal.records()? {
        match put_back(&record, topo, access) {
            Ok(name_now) => {
                journal.remove(&file_lock, &record.address, &record.serial, record.feature)?;
                report.restored.push(Restored { record, name_now });
            }
            Err(why) => report.failed.push((record, why)),
        }
    }
    Ok(report)
}

/// Sets `record`'s original on its controller and reads it back; the
/// controller's name now, or why not.
fn put_back(record: &Record, topo: &Topology, access: &dyn Access) -> Result<String, RestoreError> {
    if record.feature != fid::IRQ_COALESCE {
        return Err(RestoreError::UnknownFeature {
            feature: record.feature,
        });
    }
    let ctrl = topo
        .controllers
        .iter()
        .find(|c| c.address == record.address && c.serial == record.serial)
        .map(Controller::from_topology)
        .ok_or_else(|| RestoreError::NoController {
            address: record.address.clone(),
            serial: record.serial.clone(),
        })?;
    let what = format!(
        "Set Features 0x08 (interrupt coalescing) = {:#06x}",
        record.original_raw
    );
    let mut admin = access
        .open(&ctrl)
        .map_err(|e| TuneError::admin(&ctrl, "opening the controller", e))?;
    admin
        .set_features(fid::IRQ_COALESCE, record.original_raw, false)
        .map_err(|e| TuneError::admin(&ctrl, &what, e))?;
    let now = read_value(admin.as_mut(), &ctrl)?;
    if now != record.original_raw {
        return Err(RestoreError::ReadsBack {
            name: ctrl.name,
            now,
            original: record.original_raw,
        });
    }
    Ok(ctrl.name)
}
