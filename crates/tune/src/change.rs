//! The changes `numio coalesce` leaves on a machine, each through a
//! [`CoalesceGuard`] so the originals are recorded first: `set` and `off`
//! ([`change`]: every controller or none, kept on record or, with
//! `--persist`, for good, and the commands that would undo it:
//! [`undo_commands`]), a sweep's check before its first run
//! ([`preflight`]) and its `--apply` ([`set_and_keep`]).

use std::sync::atomic::{AtomicBool, Ordering};

use nvme_spec::features::IrqCoalescing;

use crate::admin::Access;
use crate::controller::Controller;
use crate::error::TuneError;
use crate::guard::{CoalesceGuard, Kept, Restorer};
use crate::journal::Journal;
use crate::setting::{set_flags, setting, OFF};

/// What `numio coalesce set` or `off` changes.
#[derive(Debug, Clone)]
pub struct Change<'a> {
    /// The controllers, all or none.
    pub controllers: &'a [Controller],
    /// The value to set.
    pub value: IrqCoalescing,
    /// Drop the records: the value stays for good.
    pub persist: bool,
    /// The command recorded with the originals (`numio coalesce set`).
    pub command: &'a str,
    /// The flag a first SIGINT / SIGTERM sets: applying stops, and what
    /// changed is put back.
    pub stop: Option<&'static AtomicBool>,
}

/// What [`change`] came to.
#[derive(Debug)]
pub enum Changed {
    /// The value stays on every controller.
    Kept {
        /// Each controller, its original and its value now.
        kept: Vec<Kept>,
        /// Each controller's raw value before, in the same order.
        before: Vec<u32>,
    },
    /// A signal stopped the change; everything is back as it was. The
    /// error says where it stopped.
    Interrupted(TuneError),
}

/// Sets `c.value` on every controller of `c` or on none, the originals
/// recorded first in `journal`, and keeps it (on record, or for good with
/// `persist`). `on_restorer` gets the guard's [`Restorer`] before anything
/// changes (a second signal's exit hook puts the originals back through
/// it) and what it returns is held until the change is kept or undone.
pub fn change<H>(
    c: &Change<'_>,
    access: &dyn Access,
    journal: &Journal,
    on_restorer: impl FnOnce(Restorer) -> H,
) -> Result<Changed, TuneError> {
    let mut guard = CoalesceGuard::begin(c.controllers, access, journal, c.command)?;
    if let Some(stop) = c.stop {
        guard.watch(stop);
    }
    let _held = on_restorer(guard.restorer());
    let before = guard.before();
    if let Err(e) = guard.apply(c.value) {
        if c.stop.is_some_and(|s| s.load(Ordering::Relaxed)) {
            drop(guard);
            return Ok(Changed::Interrupted(e));
        }
        return Err(e);
    }
    let kept = if c.persist {
        guard.persist()?
    } else {
        guard.keep()?
    };
    Ok(Changed::Kept { kept, before })
}

/// The commands that put the originals back, grouped by original value:
/// `numio coalesce off nvme0 nvme1 --persist`.
pub fn undo_commands(kept: &[Kept]) -> Vec<String> {
    let mut groups: Vec<(u32, Vec<&str>)> = Vec::new();
    for k in kept {
        match groups.iter_mut().find(|(raw, _)| *raw == k.original_raw) {
            Some((_, names)) => names.push(&k.controller.name),
            None => groups.push((k.original_raw, vec![&k.controller.name])),
        }
    }
    groups
        .into_iter()
        .map(|(raw, names)| {
            let value = IrqCoalescing::decode(raw);
            if value == OFF {
                format!("numio coalesce off {} --persist", names.join(" "))
            } else {
                format!(
                    "numio coalesce set {} {} --persist",
                    names.join(" "),
                    set_flags(value)
                )
            }
        })
        .collect()
}

/// Opens, reads and records every controller, then drops the records:
/// what would stop a sweep's run later (permission, a controller gone,
/// another numio changing settings) stops it now, with nothing changed.
pub fn preflight(
    access: &dyn Access,
    journal: &Journal,
    ctrls: &[Controller],
    command: &str,
) -> Result<(), TuneError> {
    CoalesceGuard::begin(ctrls, access, journal, command)?.restore()
}

/// Sets `threshold` (0: off) with `time_us` on `on` and keeps the value,
/// with the originals on record (`numio coalesce restore` undoes it);
/// says what it did (a sweep's `--apply`).
pub fn set_and_keep(
    access: &dyn Access,
    journal: &Journal,
    on: &[Controller],
    threshold: u8,
    time_us: u32,
    command: &str,
) -> Result<String, TuneError> {
    let value = if threshold == 0 {
        OFF
    } else {
        setting(threshold, time_us)?
    };
    let mut guard = CoalesceGuard::begin(on, access, journal, command)?;
    guard.apply(value)?;
    let kept = guard.keep()?;
    let changed: Vec<String> = kept
        .iter()
        .filter(|k| k.value_raw != Some(k.original_raw))
        .map(|k| format!("{} (was {:#06x})", k.controller.name, k.original_raw))
        .collect();
    Ok(if changed.is_empty() {
        "every controller already held it: nothing to undo".to_string()
    } else {
        format!(
            "changed {}; the originals stay on record in {}: `numio coalesce restore` puts them back",
            changed.join(", "),
            journal.path().display()
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::{MemoryAccess, MemoryController};

    fn kept(name: &str, original_raw: u32) -> Kept {
        Kept {
            controller: crate::memory::controller(name, 1),
            original_raw,
            value_raw: Some(0x0109),
        }
    }

    #[test]
    fn undo_commands_put_each_original_back_for_good() {
        let k = [kept("nvme0", 0), kept("nvme1", 0x0203), kept("nvme2", 0)];
        assert_eq!(
            undo_commands(&k),
            [
                "numio coalesce off nvme0 nvme2 --persist",
                "numio coalesce set nvme1 --threshold 3 --time 200us --persist"
            ]
        );
    }

    fn machine(
        tag: &str,
        n: usize,
    ) -> (
        Vec<Controller>,
        Vec<MemoryController>,
        MemoryAccess,
        Journal,
    ) {
        let dir = std::env::temp_dir().join(format!("tune-change-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let mut access = MemoryAccess::default();
        let (mut ctrls, mut devs) = (Vec::new(), Vec::new());
        for i in 0..n {
            let name = format!("nvme{i}");
            let dev = MemoryController::new(0, 2);
            access = access.with(&name, dev.clone());
            ctrls.push(crate::memory::controller(&name, 2));
            devs.push(dev);
        }
        (ctrls, devs, access, Journal::at(dir))
    }

    #[test]
    fn a_change_is_kept_on_record_and_a_signal_puts_it_back() {
        static STOP: AtomicBool = AtomicBool::new(false);
        let (ctrls, devs, access, journal) = machine("signal", 2);
        let value = setting(9, 100).unwrap();
        let mut c = Change {
            controllers: &ctrls,
            value,
            persist: false,
            command: "numio coalesce set",
            stop: Some(&STOP),
        };
        let mut held = false;
        match change(&c, &access, &journal, |_| held = true).unwrap() {
            Changed::Kept { kept, before } => {
                assert_eq!(before, [0, 0]);
                assert_eq!(kept[1].value_raw, Some(0x0109));
            }
            Changed::Interrupted(e) => panic!("{e}"),
        }
        assert!(held, "the restorer was handed out");
        assert_eq!(journal.records().unwrap().len(), 2, "kept on record");
        // A signal while nvme1 is set: everything goes back.
        devs[1].on_set(|_| STOP.store(true, Ordering::Relaxed));
        c.value = setting(3, 200).unwrap();
        match change(&c, &access, &journal, |_| ()).unwrap() {
            Changed::Interrupted(e) => assert!(e.to_string().starts_with("interrupted"), "{e}"),
            Changed::Kept { .. } => panic!("not interrupted"),
        }
        assert_eq!(devs[0].coalescing(), 0x0109);
        let note = set_and_keep(
            &access,
            &journal,
            &ctrls[..1],
            5,
            100,
            "numio coalesce sweep (--apply)",
        )
        .unwrap();
        assert!(note.starts_with("changed nvme0 (was 0x0000)"), "{note}");
        assert_eq!(devs[0].coalescing(), 0x0105);
        let _ = std::fs::remove_dir_all(journal.dir());
    }
}
