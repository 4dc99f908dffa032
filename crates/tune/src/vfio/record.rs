//! `vfio.json`: what numio changed to hand a controller to vfio-pci (its
//! original driver and `driver_override`, the hugepages it reserved) and
//! who holds it, written before anything changes and removed once the
//! controller is back. Beside `coalesce.json` in the same state
//! directory, with its own lock (`vfio.lock`).

use serde::{Deserialize, Serialize};

use crate::error::TuneError;
use crate::journal::{check_schema, journal_err, Journal, JournalLock, Names, SCHEMA_VERSION};

const NAMES: Names = Names {
    file: "vfio.json",
    lock: "vfio.lock",
    tmp: "vfio.json.tmp",
    what: "VFIO bindings",
};

/// The process that holds a bound controller and gives it back at exit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Owner {
    /// Its pid.
    pub pid: u32,
    /// Its start time in clock ticks after boot (`/proc/PID/stat` field
    /// 22): with the pid, which process it is. `None` when unreadable.
    pub start_ticks: Option<u64>,
}

/// One node's hugepage pool as it was before numio reserved pages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct HugepagesRecord {
    /// The node.
    pub node: u32,
    /// The page size in KiB.
    pub size_kib: u64,
    /// `nr_hugepages` before numio first changed it.
    pub original: u64,
    /// What numio wrote.
    pub reserved: u64,
}

/// One controller numio handed to vfio-pci.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VfioRecord {
    /// Its PCI address (`0000:02:00.0`).
    pub address: String,
    /// Its driver before (`nvme`); `None` when it had none.
    pub driver: Option<String>,
    /// Its `driver_override` before; `None` when unset.
    pub driver_override: Option<String>,
    /// Whether numio moved it to vfio-pci (false: it was there already and
    /// only hugepages were reserved).
    pub rebound: bool,
    /// The hugepage pools numio changed for it.
    pub hugepages: Vec<HugepagesRecord>,
    /// Who gives it back at exit; `None`: bound until `numio vfio unbind`.
    pub owner: Option<Owner>,
    /// What was running (`numio bench --backend vfio`).
    pub command: String,
    /// When, in seconds since the Unix epoch.
    pub since_unix_s: u64,
}

#[derive(Debug, Serialize, Deserialize)]
struct StateFile {
    schema_version: u32,
    records: Vec<VfioRecord>,
}

/// The VFIO state file in a state directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VfioJournal {
    journal: Journal,
}

impl VfioJournal {
    /// `vfio.json` in [`Journal::default_location`]'s directory.
    pub fn default_location() -> Result<VfioJournal, TuneError> {
        Ok(VfioJournal::beside(&Journal::default_location()?))
    }

    /// `vfio.json` in the directory `dir`.
    pub fn at(dir: impl Into<std::path::PathBuf>) -> VfioJournal {
        VfioJournal::beside(&Journal::at(dir))
    }

    /// `vfio.json` beside `journal`'s file.
    pub fn beside(journal: &Journal) -> VfioJournal {
        VfioJournal {
            journal: journal.beside(NAMES),
        }
    }

    /// The state file.
    pub fn path(&self) -> std::path::PathBuf {
        self.journal.path()
    }

    /// The records; none when there is no file.
    pub fn records(&self) -> Result<Vec<VfioRecord>, TuneError> {
        let Some(text) = self.journal.read_text()? else {
            return Ok(Vec::new());
        };
        let path = self.path();
        let file: StateFile = serde_json::from_str(&text).map_err(|e| {
            journal_err(
                &path,
                format!("cannot parse it ({e}); it names the drivers numio must give controllers back to: rebind them by hand (driver_override, drivers_probe) and remove it"),
            )
        })?;
        check_schema(&path, file.schema_version)?;
        Ok(file.records)
    }

    /// The record of `address`, if any.
    pub fn record_of(&self, address: &str) -> Result<Option<VfioRecord>, TuneError> {
        Ok(self.records()?.into_iter().find(|r| r.address == address))
    }

    /// The exclusive lock beside the file; [`TuneError::Busy`] when another
    /// numio holds it.
    pub fn lock(&self) -> Result<JournalLock, TuneError> {
        self.journal.lock()
    }

    /// The lock, retried until `bound` while another numio holds it (its
    /// bind or give-back takes seconds).
    pub fn lock_waiting(&self, bound: std::time::Duration) -> Result<JournalLock, TuneError> {
        let until = std::time::Instant::now() + bound;
        loop {
            match self.lock() {
                Err(TuneError::Busy { .. }) if std::time::Instant::now() < until => {
                    std::thread::sleep(std::time::Duration::from_millis(20));
                }
                other => return other,
            }
        }
    }

    /// Writes `record`, replacing the record of the same address.
    pub fn put(&self, _lock: &JournalLock, record: VfioRecord) -> Result<(), TuneError> {
        let mut records = self.records()?;
        records.retain(|r| r.address != record.address);
        records.push(record);
        self.write(records)
    }

    /// Drops the record of `address`.
    pub fn remove(&self, _lock: &JournalLock, address: &str) -> Result<(), TuneError> {
        let mut records = self.records()?;
        let before = records.len();
        records.retain(|r| r.address != address);
        if records.len() == before {
            return Ok(());
        }
        self.write(records)
    }

    fn write(&self, records: Vec<VfioRecord>) -> Result<(), TuneError> {
        if records.is_empty() {
            return self.journal.write_text(None);
        }
        let text = serde_json::to_string_pretty(&StateFile {
            schema_version: SCHEMA_VERSION,
            records,
        })
        .map_err(|e| journal_err(&self.path(), e))?;
        self.journal.write_text(Some(&text))
    }
}
