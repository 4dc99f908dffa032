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
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RestoreReport {
    /// Records put back and removed.
    pub restored: Vec<Restored>,
    /// Records that stay, with why.
    pub failed: Vec<(Record, String)>,
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
fn put_back(record: &Record, topo: &Topology, access: &dyn Access) -> Result<String, String> {
    if record.feature != fid::IRQ_COALESCE {
        return Err(format!(
            "feature {:#04x} is not one this numio restores; restore it with the numio that wrote it",
            record.feature
        ));
    }
    let ctrl = topo
        .controllers
        .iter()
        .find(|c| c.address == record.address && c.serial == record.serial)
        .map(Controller::from_topology)
        .ok_or_else(|| {
            format!(
                "no controller at {} with serial {} now (removed?); the record stays until it is back",
                record.address, record.serial
            )
        })?;
    let what = format!(
        "Set Features 0x08 (interrupt coalescing) = {:#06x}",
        record.original_raw
    );
    let mut admin = access
        .open(&ctrl)
        .map_err(|e| TuneError::admin(&ctrl, "opening the controller", e).to_string())?;
    admin
        .set_features(fid::IRQ_COALESCE, record.original_raw, false)
        .map_err(|e| TuneError::admin(&ctrl, &what, e).to_string())?;
    let now = read_value(admin.as_mut(), &ctrl).map_err(|e| e.to_string())?;
    if now != record.original_raw {
        return Err(format!("{} reads {now:#06x} after {what}", ctrl.name));
    }
    Ok(ctrl.name)
}
