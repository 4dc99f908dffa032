//! What `numio coalesce show` reads: each controller's interrupt
//! coalescing (or why it was not read), and the records of state files
//! numio has not put back. `report::coalesce::show` prints them.

use std::path::PathBuf;

use crate::state::CoalesceState;
use crate::{Access, Controller, Journal, Record};

/// What one controller shows.
#[derive(Debug, Clone)]
pub enum Reading {
    /// A fabrics controller: no interrupts.
    Fabrics,
    /// Not read (a snapshot root).
    NotRead(String),
    /// Read.
    Read(CoalesceState),
    /// Reading failed.
    Failed(String),
}

/// Reads `c`'s coalescing through `access`; `live` is false for a
/// snapshot root, where the value (which lives in the controller) is not
/// read.
pub fn read(c: &Controller, live: bool, access: &dyn Access) -> Reading {
    if c.is_fabrics() {
        return Reading::Fabrics;
    }
    if !live {
        return Reading::NotRead(
            "not read: --root is a snapshot, and the value lives in the controller (run `numio coalesce show` on the machine)".to_string(),
        );
    }
    let mut admin = match access.open(c) {
        Ok(a) => a,
        Err(e) => {
            return Reading::Failed(
                crate::TuneError::admin(c, "opening the controller", e).to_string(),
            )
        }
    };
    match crate::state::read_state(admin.as_mut(), c) {
        Ok(s) => Reading::Read(s),
        Err(e) => Reading::Failed(e.to_string()),
    }
}

/// The records of every visible state file, and the files that could not
/// be read.
pub fn pending_records() -> (Vec<(PathBuf, Record)>, Vec<String>) {
    let mut records = Vec::new();
    let mut errors = Vec::new();
    for j in Journal::visible() {
        match j.records() {
            Ok(rs) => records.extend(rs.into_iter().map(|r| (j.path(), r))),
            // Root's, where a user may not read it: nothing to say.
            Err(_) if j == Journal::system() && sysapi::file::effective_uid() != 0 => {}
            Err(e) => errors.push(e.to_string()),
        }
    }
    (records, errors)
}

/// What `numio coalesce show` found: each controller's reading, and the
/// records a state file holds ([`pending_records`], live only).
#[derive(Debug, Clone)]
pub struct Shown {
    /// Each controller named (every one when none was), with its reading.
    pub rows: Vec<(Controller, Reading)>,
    /// Records numio has not put back, with their state file.
    pub pending: Vec<(PathBuf, Record)>,
    /// State files that could not be read.
    pub journal_errors: Vec<String>,
}

impl Shown {
    /// `nvme0: why` for each controller whose reading failed.
    pub fn failed(&self) -> Vec<String> {
        self.rows
            .iter()
            .filter_map(|(c, r)| match r {
                Reading::Failed(e) => Some(format!("{}: {e}", c.name)),
                _ => None,
            })
            .collect()
    }
}

/// Reads the controllers `targets` name under `root` (every one when
/// none) through `access`. Another root than `/` is a snapshot: neither
/// the values (which live in the controllers) nor the state files are
/// read.
pub fn gather(
    root: &std::path::Path,
    targets: &[String],
    access: &dyn Access,
) -> Result<Shown, crate::TuneError> {
    let topo = topology::Topology::load(root)?;
    let live = root == std::path::Path::new("/");
    let resolved = crate::resolve(&topo, targets)?;
    let rows = resolved
        .controllers
        .into_iter()
        .map(|c| {
            let reading = read(&c, live, access);
            (c, reading)
        })
        .collect();
    let (pending, journal_errors) = if live {
        pending_records()
    } else {
        (Vec::new(), Vec::new())
    };
    Ok(Shown {
        rows,
        pending,
        journal_errors,
    })
}
