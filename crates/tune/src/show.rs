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
