//! The controllers of `numio coalesce sweep`, through `tune`: each
//! target's controllers (a multipath head: all its paths'), a check before
//! the first run that every one can be opened, read and recorded (not
//! root, gone, another numio changing them: said before anything runs),
//! and `--apply`'s setting, kept on record as `numio coalesce set` keeps
//! it.

use anyhow::bail;
use topology::Topology;
use tune::{Access, CoalesceGuard, Controller, Journal};

/// The controllers of each target, in target order; a target that is a
/// controller (I/O needs a namespace) or no NVMe namespace is refused by
/// name.
pub fn target_controllers(
    topo: &Topology,
    targets: &[String],
) -> anyhow::Result<Vec<Vec<Controller>>> {
    let mut out = Vec::with_capacity(targets.len());
    for t in targets {
        let name = t.trim().strip_prefix("/dev/").unwrap_or(t.trim());
        if topo.controller(name).is_some() {
            bail!(
                "{t} is a controller: the sweep runs I/O, so name its namespaces (e.g. /dev/{name}n1)"
            );
        }
        let resolved = tune::resolve_tunable(topo, std::slice::from_ref(t))?;
        for (f, _) in &resolved.skipped_fabrics {
            eprintln!(
                "numio: {t}: {} is an NVMe/{} path without interrupts of its own; the sweep sets its PCIe paths",
                f.name,
                f.transport.name()
            );
        }
        out.push(resolved.controllers);
    }
    Ok(out)
}

/// Opens, reads and records every controller, then drops the records:
/// what would stop a run later (permission, a controller gone, another
/// numio changing settings) stops the sweep now, with nothing changed.
pub fn preflight(
    access: &dyn Access,
    journal: &Journal,
    ctrls: &[Controller],
    command: &str,
) -> anyhow::Result<()> {
    CoalesceGuard::begin(ctrls, access, journal, command)?.restore()?;
    Ok(())
}

/// Sets `threshold` (0: off) with `time_us` on `on` and keeps the value,
/// with the originals on record (`numio coalesce restore` undoes it);
/// says what it did.
pub fn apply(
    access: &dyn Access,
    journal: &Journal,
    on: &[Controller],
    threshold: u8,
    time_us: u32,
    command: &str,
) -> anyhow::Result<String> {
    let value = if threshold == 0 {
        tune::OFF
    } else {
        tune::setting(threshold, time_us)?
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
