//! [`CoalesceGuard`]: the one way numio changes coalescing. It records
//! the originals before anything changes, applies one value to all its
//! controllers or to none, and puts back the values it found when it is
//! restored, dropped, or told to by the signal thread ([`Restorer`]).
//!
//! ```text
//! begin(ctrls)  lock the state file; read each value; record each original
//! apply(v)      set v on each controller in turn; one refuses → the ones
//!               this call changed are put back, the error names it
//! restore()     put back the values begin found; drop the records begin made
//! keep()        leave the values; keep the records (`numio coalesce set`)
//! persist()     leave the values; drop the records (`set --persist`)
//! drop          restore() unless already closed
//! ```

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use nvme_spec::features::{fid, IrqCoalescing};

use crate::admin::{Access, Admin};
use crate::controller::Controller;
use crate::error::TuneError;
use crate::journal::{now_unix_s, Journal, JournalLock, Record};
use crate::state::read_value;

const FEATURE: u8 = fid::IRQ_COALESCE;

/// Records originals, applies one value to every controller or none, and
/// restores on [`CoalesceGuard::restore`], on drop and through its
/// [`Restorer`].
pub struct CoalesceGuard {
    inner: Arc<Mutex<Inner>>,
}

/// Puts back what a [`CoalesceGuard`] changed, from any thread (the signal
/// thread's exit hook); does nothing once the guard is closed.
#[derive(Clone)]
pub struct Restorer {
    inner: Arc<Mutex<Inner>>,
}

/// A controller whose new value stays ([`CoalesceGuard::keep`],
/// [`CoalesceGuard::persist`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Kept {
    /// The controller.
    pub controller: Controller,
    /// Its value before numio first changed it (the state file's record,
    /// else the value the guard found).
    pub original_raw: u32,
    /// Its value now, as far as numio knows (`None` after an OS error).
    pub value_raw: Option<u32>,
}

struct Entry {
    ctrl: Controller,
    admin: Box<dyn Admin>,
    /// The value when the guard began: what restore puts back.
    before_raw: u32,
    /// What the controller holds, as far as known (`None` after an OS
    /// error in the middle of a Set Features).
    known_raw: Option<u32>,
    /// Whether this guard wrote the controller's record.
    owns_record: bool,
}

struct Inner {
    journal: Journal,
    lock: Option<JournalLock>,
    entries: Vec<Entry>,
    closed: bool,
    stop: Option<&'static AtomicBool>,
}

fn lock(inner: &Mutex<Inner>) -> MutexGuard<'_, Inner> {
    inner.lock().unwrap_or_else(PoisonError::into_inner)
}

fn set_what(raw: u32) -> String {
    format!("Set Features 0x08 (interrupt coalescing) = {raw:#06x}")
}

impl CoalesceGuard {
    /// Opens `ctrls` through `access`, takes the state file's lock, reads
    /// each value and records it as the original (unless a record exists:
    /// the first wins) with `command` (`numio coalesce sweep`). Nothing
    /// changes yet. Errors: no controllers, a fabrics one, another numio
    /// holding the lock, a controller that cannot be opened or read (not
    /// root, gone), the state file.
    pub fn begin(
        ctrls: &[Controller],
        access: &dyn Access,
        journal: &Journal,
        command: &str,
    ) -> Result<CoalesceGuard, TuneError> {
        if ctrls.is_empty() {
            return Err(TuneError::NoTargets);
        }
        if let Some(f) = ctrls.iter().find(|c| c.is_fabrics()) {
            return Err(TuneError::Fabrics {
                input: f.name.clone(),
                name: f.name.clone(),
                transport: f.transport.name().to_string(),
            });
        }
        // Opened first: without permission the error says "run as root"
        // before the state directory is touched.
        let mut admins = Vec::with_capacity(ctrls.len());
        for ctrl in ctrls {
            admins.push(
                access
                    .open(ctrl)
                    .map_err(|e| TuneError::admin(ctrl, "opening the controller", e))?,
            );
        }
        // Read under the lock: no other numio changes a value meanwhile.
        let file_lock = journal.lock()?;
        let mut entries = Vec::with_capacity(ctrls.len());
        for (ctrl, mut admin) in ctrls.iter().zip(admins) {
            let before_raw = read_value(admin.as_mut(), ctrl)?;
            entries.push(Entry {
                ctrl: ctrl.clone(),
                admin,
                before_raw,
                known_raw: Some(before_raw),
                owns_record: false,
            });
        }
        let mut inner = Inner {
            journal: journal.clone(),
            lock: Some(file_lock),
            entries,
            closed: false,
            stop: None,
        };
        if let Err(e) = inner.record_originals(command) {
            // Nothing changed: only the records this guard wrote go.
            let _ = inner.close_without_restore(|e| e.owns_record);
            return Err(e);
        }
        Ok(CoalesceGuard {
            inner: Arc::new(Mutex::new(inner)),
        })
    }

    /// Stops [`CoalesceGuard::apply`] between two controllers once `flag`
    /// is set (the session's Ctrl-C flag): what the call changed is put
    /// back and it returns [`TuneError::Interrupted`].
    pub fn watch(&mut self, flag: &'static AtomicBool) {
        lock(&self.inner).stop = Some(flag);
    }

    /// Sets `value` on every controller, in order, or on none: when one
    /// refuses (or the watched flag is set), the controllers this call
    /// changed get their previous value back, and the error names the
    /// controller, the NVMe status and what became of the others.
    pub fn apply(&mut self, value: IrqCoalescing) -> Result<(), TuneError> {
        lock(&self.inner).apply(value.encode())
    }

    /// Reads every controller's value now (Get Features 0x08), in order.
    pub fn read_back(&mut self) -> Result<Vec<u32>, TuneError> {
        let mut inner = lock(&self.inner);
        if inner.closed {
            return Err(TuneError::Closed);
        }
        inner
            .entries
            .iter_mut()
            .map(|e| read_value(e.admin.as_mut(), &e.ctrl))
            .collect()
    }

    /// The controllers, in order.
    pub fn controllers(&self) -> Vec<Controller> {
        lock(&self.inner)
            .entries
            .iter()
            .map(|e| e.ctrl.clone())
            .collect()
    }

    /// The values found by [`CoalesceGuard::begin`], in order: what
    /// restore puts back.
    pub fn before(&self) -> Vec<u32> {
        lock(&self.inner)
            .entries
            .iter()
            .map(|e| e.before_raw)
            .collect()
    }

    /// A handle that restores from another thread.
    pub fn restorer(&self) -> Restorer {
        Restorer {
            inner: Arc::clone(&self.inner),
        }
    }

    /// Puts back the values [`CoalesceGuard::begin`] found and drops the
    /// records it made. A controller that cannot be put back keeps its
    /// record ([`TuneError::NotRestored`] names it).
    pub fn restore(self) -> Result<(), TuneError> {
        self.restorer().restore()
    }

    /// Leaves the new values and their records (`numio coalesce restore`
    /// undoes them); drops the record of a controller that holds its
    /// recorded original now (nothing to put back: `off` on a controller
    /// that was off, or a `set` back to the original).
    pub fn keep(self) -> Result<Vec<Kept>, TuneError> {
        let mut inner = lock(&self.inner);
        let kept = inner.kept()?;
        let back: Vec<String> = kept
            .iter()
            .filter(|k| k.value_raw == Some(k.original_raw))
            .map(|k| k.controller.name.clone())
            .collect();
        inner.close_without_restore(|e| back.contains(&e.ctrl.name))?;
        Ok(kept)
    }

    /// Leaves the new values and drops every record of these controllers
    /// (`--persist`): numio will not put them back. The [`Kept`] values say
    /// what would.
    pub fn persist(self) -> Result<Vec<Kept>, TuneError> {
        let mut inner = lock(&self.inner);
        let kept = inner.kept()?;
        inner.close_without_restore(|_| true)?;
        Ok(kept)
    }
}

impl Drop for CoalesceGuard {
    /// Restores unless closed; a failure is printed (the records stay, so
    /// `numio coalesce restore` can retry).
    fn drop(&mut self) {
        if let Err(e) = self.restorer().restore() {
            eprintln!("numio: {e}");
        }
    }
}

impl Restorer {
    /// Puts back what the guard changed and closes it; `Ok` when it was
    /// closed already.
    pub fn restore(&self) -> Result<(), TuneError> {
        let mut inner = lock(&self.inner);
        if inner.closed {
            return Ok(());
        }
        let result = inner.restore_all();
        inner.closed = true;
        inner.lock = None;
        result
    }
}

impl Inner {
    fn record_originals(&mut self, command: &str) -> Result<(), TuneError> {
        let file_lock = self.lock.as_ref().ok_or(TuneError::Closed)?;
        for e in &mut self.entries {
            let record = Record {
                name: e.ctrl.name.clone(),
                address: e.ctrl.address.clone(),
                serial: e.ctrl.serial.clone(),
                feature: FEATURE,
                original_raw: e.before_raw,
                pid: std::process::id(),
                command: command.to_string(),
                since_unix_s: now_unix_s(),
            };
            e.owns_record = self.journal.record_original(file_lock, record)?;
        }
        Ok(())
    }

    fn apply(&mut self, raw: u32) -> Result<(), TuneError> {
        if self.closed {
            return Err(TuneError::Closed);
        }
        // (index, value before this call) of each controller changed.
        let mut changed: Vec<(usize, Option<u32>)> = Vec::new();
        for i in 0..self.entries.len() {
            if self.stopped() {
                let name = self.entries[i].ctrl.name.clone();
                return Err(self.undo(changed, TuneError::Interrupted { name }));
            }
            let e = &mut self.entries[i];
            let previous = e.known_raw;
            match e.admin.set_features(FEATURE, raw, false) {
                Ok(()) => {
                    e.known_raw = Some(raw);
                    changed.push((i, previous));
                }
                Err(err) => {
                    // A status means the controller kept its value; an OS
                    // error leaves it unknown.
                    if err.status().is_none() {
                        e.known_raw = None;
                        changed.push((i, previous));
                    }
                    let cause = TuneError::admin(&e.ctrl, &set_what(raw), err);
                    return Err(self.undo(changed, cause));
                }
            }
        }
        if self.stopped() {
            let name = self
                .entries
                .last()
                .map_or(String::new(), |e| e.ctrl.name.clone());
            return Err(self.undo(changed, TuneError::Interrupted { name }));
        }
        Ok(())
    }

    fn stopped(&self) -> bool {
        self.stop.is_some_and(|f| f.load(Ordering::Relaxed))
    }

    /// Puts the `changed` controllers back to their value before the call
    /// (to the guard's first value where that is unknown) and wraps `cause`
    /// with what became of them.
    fn undo(&mut self, changed: Vec<(usize, Option<u32>)>, cause: TuneError) -> TuneError {
        let mut back = Vec::new();
        let mut failed = Vec::new();
        for (i, previous) in changed.into_iter().rev() {
            let e = &mut self.entries[i];
            if e.known_raw.is_some() && e.known_raw == previous {
                continue;
            }
            let target = previous.unwrap_or(e.before_raw);
            match e.admin.set_features(FEATURE, target, false) {
                Ok(()) => {
                    e.known_raw = Some(target);
                    back.push(e.ctrl.name.clone());
                }
                Err(err) => failed.push(format!("{} ({err})", e.ctrl.name)),
            }
        }
        back.reverse();
        let mut others = if back.is_empty() {
            "no other controller was changed".to_string()
        } else {
            format!("put back as they were: {}", back.join(", "))
        };
        if !failed.is_empty() {
            others.push_str(&format!(
                "; could not put back {}: `numio coalesce restore` puts back the recorded originals",
                failed.join(", ")
            ));
        }
        TuneError::Apply {
            source: Box::new(cause),
            others,
        }
    }

    fn restore_all(&mut self) -> Result<(), TuneError> {
        let mut failed = Vec::new();
        for e in &mut self.entries {
            if e.known_raw != Some(e.before_raw) {
                match e.admin.set_features(FEATURE, e.before_raw, false) {
                    Ok(()) => e.known_raw = Some(e.before_raw),
                    Err(err) => {
                        let err = TuneError::admin(&e.ctrl, &set_what(e.before_raw), err);
                        failed.push(format!("{}: {err}", e.ctrl.name));
                        continue;
                    }
                }
            }
            if e.owns_record {
                if let Some(l) = self.lock.as_ref() {
                    if let Err(err) =
                        self.journal
                            .remove(l, &e.ctrl.address, &e.ctrl.serial, FEATURE)
                    {
                        failed.push(format!("{}: {err}", e.ctrl.name));
                    }
                }
            }
        }
        if failed.is_empty() {
            Ok(())
        } else {
            Err(TuneError::NotRestored {
                failed: failed.join("; "),
                path: self.journal.path(),
            })
        }
    }

    fn kept(&self) -> Result<Vec<Kept>, TuneError> {
        if self.closed {
            return Err(TuneError::Closed);
        }
        let records = self.journal.records()?;
        Ok(self
            .entries
            .iter()
            .map(|e| Kept {
                controller: e.ctrl.clone(),
                original_raw: records
                    .iter()
                    .find(|r| r.is_of(&e.ctrl.address, &e.ctrl.serial, FEATURE))
                    .map_or(e.before_raw, |r| r.original_raw),
                value_raw: e.known_raw,
            })
            .collect())
    }

    /// Closes without touching the controllers; drops the records of the
    /// entries `drop_record` picks. The first journal error is returned
    /// (every pick is still tried).
    fn close_without_restore(
        &mut self,
        drop_record: impl Fn(&Entry) -> bool,
    ) -> Result<(), TuneError> {
        let mut first_err = None;
        if let Some(l) = self.lock.as_ref() {
            for e in self.entries.iter().filter(|e| drop_record(e)) {
                if let Err(err) = self
                    .journal
                    .remove(l, &e.ctrl.address, &e.ctrl.serial, FEATURE)
                {
                    first_err.get_or_insert(err);
                }
            }
        }
        self.closed = true;
        self.lock = None;
        first_err.map_or(Ok(()), Err)
    }
}
