//! What `numio serve` may export: a block device only when nothing on it
//! can be lost, by the checks a bench makes before a write
//! ([`crate::targets::check_write_safety`]: a partition table, a filesystem
//! or other signature libblkid recognises, a mount, a holder such as
//! device-mapper or md), because every host that connects may write;
//! `--force-export` exports it anyway. Files and `mem:` namespaces pass:
//! the user named them for this. RAM namespaces (`mem:SIZE`) together must
//! fit in the memory available (`MemAvailable`), or a host's writes end in
//! the OOM killer; `--force-export` serves them anyway. Start-up checks
//! every namespace ([`check_namespaces`]); a SIGHUP reload checks each one
//! it adds ([`admit`]), under the same flag.

use std::path::{Path, PathBuf};

use nvmf::config::{Backing, NamespaceConfig, TargetConfig};

use crate::EngineError;

/// Why a namespace is not exported.
#[derive(Debug, thiserror::Error)]
pub enum ExportRefused {
    /// The device holds something.
    #[error("refusing to export {}: it holds {what}, and every host that connects may write to it; export a device that holds nothing, or pass --force-export to export it anyway", path.display())]
    Holds {
        /// The device.
        path: PathBuf,
        /// What it holds.
        what: String,
    },
    /// The device could not be looked at.
    #[error("namespace {}: {source}", path.display())]
    Inspect {
        /// The device.
        path: PathBuf,
        /// Why.
        #[source]
        source: EngineError,
    },
    /// RAM namespaces together pass the memory available.
    #[error("refusing to serve {}: hosts' writes would run it out of memory (the OOM killer); give smaller mem: sizes, or pass --force-export to serve them anyway", ram_past(*total_bytes, *available_bytes))]
    Memory {
        /// Their sizes together.
        total_bytes: u64,
        /// `MemAvailable`.
        available_bytes: u64,
    },
}

/// "RAM namespaces of 32.0 GiB together, more than the 23.0 GiB this
/// machine has available (MemAvailable in /proc/meminfo)".
fn ram_past(total_bytes: u64, available_bytes: u64) -> String {
    let gib = |b: u64| b as f64 / f64::from(1u32 << 30);
    format!(
        "RAM namespaces of {:.1} GiB together, more than the {:.1} GiB this machine has available (MemAvailable in /proc/meminfo)",
        gib(total_bytes),
        gib(available_bytes)
    )
}

/// Refuses a namespace of `cfg` that holds anything, and RAM namespaces
/// past the memory available; with `force`, the warnings to print instead.
pub fn check_namespaces(cfg: &TargetConfig, force: bool) -> Result<Vec<String>, ExportRefused> {
    let mut warnings = Vec::new();
    for ns in cfg.subsystems.iter().flat_map(|s| &s.namespaces) {
        warnings.extend(check(ns, force)?);
    }
    let available = topology::host::mem_available_bytes(Path::new("/"));
    let ram: Vec<&str> = cfg
        .subsystems
        .iter()
        .flat_map(|s| &s.namespaces)
        .map(|n| n.backing.as_str())
        .collect();
    warnings.extend(check_memory(&ram, available, force)?);
    Ok(warnings)
}

/// Refuses RAM namespaces among `backings` whose sizes together pass
/// `available` bytes (`MemAvailable`); with `force`, the warning instead.
/// `None` available: not checked.
pub fn check_memory(
    backings: &[&str],
    available: Option<u64>,
    force: bool,
) -> Result<Option<String>, ExportRefused> {
    let total: u64 = backings
        .iter()
        .filter_map(|b| match Backing::parse(b) {
            Ok(Backing::Memory { size_bytes }) => Some(size_bytes),
            _ => None,
        })
        .fold(0, u64::saturating_add);
    let Some(available) = available.filter(|a| total > *a) else {
        return Ok(None);
    };
    if !force {
        return Err(ExportRefused::Memory {
            total_bytes: total,
            available_bytes: available,
        });
    }
    Ok(Some(format!(
        "serving {} (--force-export)",
        ram_past(total, available)
    )))
}

/// The check of one namespace a reload adds: an error (with the fix)
/// keeps it out; a `--force-export` warning is logged here.
pub fn admit(ns: &NamespaceConfig, force: bool) -> Result<(), ExportRefused> {
    let available = topology::host::mem_available_bytes(Path::new("/"));
    let memory = check_memory(&[ns.backing.as_str()], available, force)?;
    for w in check(ns, force)?.into_iter().chain(memory) {
        nvmf::log::warn("export_forced", format_args!("{w}"), &[]);
    }
    Ok(())
}

/// `Ok(Some(warning))` for a device that holds something under `force`,
/// `Ok(None)` for one that holds nothing (or no block device).
fn check(ns: &NamespaceConfig, force: bool) -> Result<Option<String>, ExportRefused> {
    let Ok(Backing::Path(path)) = Backing::parse(&ns.backing) else {
        return Ok(None);
    };
    if !is_block_device(&path) {
        return Ok(None);
    }
    let text = path.to_string_lossy();
    let inspect = |source| ExportRefused::Inspect {
        path: path.clone(),
        source,
    };
    let info = crate::targets::inspect(&text).map_err(inspect)?;
    let what = match crate::targets::check_write_safety(&info) {
        Ok(()) => return Ok(None),
        Err(EngineError::Unsafe { what, .. }) => what,
        Err(e) => return Err(inspect(e)),
    };
    if !force {
        return Err(ExportRefused::Holds { path, what });
    }
    Ok(Some(format!(
        "exporting {text} although it holds {what} (--force-export)"
    )))
}

fn is_block_device(path: &Path) -> bool {
    use std::os::unix::fs::FileTypeExt;
    std::fs::metadata(path).is_ok_and(|m| m.file_type().is_block_device())
}

#[cfg(test)]
mod tests {
    use super::*;

    // Regression (issue 38): `serve --ns mem:1T` on a 23 GiB machine
    // started without a word.
    #[test]
    fn ram_namespaces_past_the_memory_available_are_refused_unless_forced() {
        let gib = 1u64 << 30;
        let e = check_memory(&["mem:1T"], Some(23 * gib), false).unwrap_err();
        assert!(
            matches!(e, ExportRefused::Memory { total_bytes, available_bytes } if total_bytes == 1 << 40 && available_bytes == 23 * gib),
            "{e:?}"
        );
        let e = e.to_string();
        assert!(
            e.contains("RAM namespaces of 1024.0 GiB together, more than the 23.0 GiB")
                && e.contains("MemAvailable")
                && e.contains("--force"),
            "{e}"
        );
        // Together: two of 16 GiB pass 23 GiB; files do not count.
        let two = ["mem:16G", "/srv/a.img", "mem:16G"];
        assert!(check_memory(&two, Some(23 * gib), false).is_err());
        assert!(matches!(
            check_memory(&two[..2], Some(23 * gib), false),
            Ok(None)
        ));
        let w = check_memory(&two, Some(23 * gib), true).unwrap().unwrap();
        assert!(w.ends_with("(--force-export)"), "{w}");
        assert!(
            matches!(check_memory(&["mem:1T"], None, false), Ok(None)),
            "unknown: not checked"
        );
    }
}
