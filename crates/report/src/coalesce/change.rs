//! What `numio coalesce set`, `off` and `restore` say: each controller's
//! value now and before (decoded as nvme-cli decodes it), where the
//! originals are kept or how to undo a `--persist`, and what a restore put
//! back or could not.

use std::path::Path;

use tune::guard::Kept;
use tune::restore::RestoreReport;
use tune::setting::describe;
use tune::IrqCoalescing;

/// `nvme0: now …; was …`, a line per controller (stdout of `set` and
/// `off`); `before` holds each one's raw value before, in order.
pub fn changed(kept: &[Kept], before: &[u32]) -> String {
    let mut out = String::new();
    for (k, &was) in kept.iter().zip(before) {
        let now = k.value_raw.map_or("unknown".to_string(), |raw| {
            describe(IrqCoalescing::decode(raw))
        });
        out.push_str(&format!(
            "{}: now {now}; was {}\n",
            k.controller.name,
            describe(IrqCoalescing::decode(was))
        ));
    }
    out
}

/// What `set` and `off` add on stderr: with `persist`, the commands that
/// undo it; else where the originals are recorded, when one changed.
pub fn change_note(kept: &[Kept], persist: bool, journal: &Path) -> Option<String> {
    if persist {
        Some(format!(
            "--persist: numio will not put these back (no record kept); to undo: {}",
            tune::change::undo_commands(kept).join("; ")
        ))
    } else if kept.iter().any(|k| k.value_raw != Some(k.original_raw)) {
        Some(format!(
            "the originals are recorded in {}: `numio coalesce restore` puts them back",
            journal.display()
        ))
    } else {
        None
    }
}

/// A line per record put back (stdout of `restore`).
pub fn restored(report: &RestoreReport) -> String {
    let mut out = String::new();
    for r in &report.restored {
        let renamed = if r.name_now != r.record.name {
            format!(" (was {} when changed)", r.record.name)
        } else {
            String::new()
        };
        out.push_str(&format!(
            "{}{renamed}: back to {} (the original; changed by `{}`, pid {})\n",
            r.name_now,
            describe(IrqCoalescing::decode(r.record.original_raw)),
            r.record.command,
            r.record.pid
        ));
    }
    out
}

/// The stderr lines of the records `restore` could not put back (none
/// when it put back all): one error each, then where they stay.
pub fn not_restored(report: &RestoreReport, journal: &Path) -> Vec<String> {
    if report.failed.is_empty() {
        return Vec::new();
    }
    let mut lines: Vec<String> = report
        .failed
        .iter()
        .map(|(record, why)| {
            format!(
                "error: {} ({}, serial {}): not put back: {why}",
                record.name, record.address, record.serial
            )
        })
        .collect();
    lines.push(format!(
        "the records that were not put back stay in {}: run `numio coalesce restore` again once the cause is fixed",
        journal.display()
    ));
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kept(name: &str, original_raw: u32, value_raw: u32) -> Kept {
        Kept {
            controller: tune::memory::controller(name, 1),
            original_raw,
            value_raw: Some(value_raw),
        }
    }

    #[test]
    fn a_change_says_now_and_was_and_how_it_is_undone() {
        let k = [kept("nvme0", 0, 0x0109)];
        assert_eq!(
            changed(&k, &[0]),
            "nvme0: now an interrupt per 10 completions (THR 9) or after 100 µs (TIME 1), whichever comes first (raw 0x0109); was off: an interrupt per completion (raw 0x0000)\n"
        );
        let j = Path::new("/run/numio/coalesce.json");
        assert_eq!(
            change_note(&k, false, j).unwrap(),
            "the originals are recorded in /run/numio/coalesce.json: `numio coalesce restore` puts them back"
        );
        assert_eq!(
            change_note(&k, true, j).unwrap(),
            "--persist: numio will not put these back (no record kept); to undo: numio coalesce off nvme0 --persist"
        );
        assert_eq!(change_note(&[kept("nvme0", 0, 0)], false, j), None);
    }
}
