//! `numio serve` exports a block device only when nothing on it can be
//! lost: the checks `numio bench` makes before a write (a partition table,
//! a filesystem or other signature libblkid recognises, a mount, a holder
//! such as device-mapper or md), because every host that connects may
//! write. `--force` exports it anyway. Files and `mem:` namespaces pass:
//! the user named them for this. Start-up checks every namespace; a SIGHUP
//! reload checks each one it adds ([`admit`]), under the same `--force`.

use std::path::Path;

use nvmf::config::{Backing, NamespaceConfig, TargetConfig};

/// Refuses a block-device namespace of `cfg` that holds anything, naming it
/// and the fix; with `force`, returns the warnings to print instead.
pub fn check_namespaces(cfg: &TargetConfig, force: bool) -> anyhow::Result<Vec<String>> {
    let mut warnings = Vec::new();
    for ns in cfg.subsystems.iter().flat_map(|s| &s.namespaces) {
        warnings.extend(check(ns, force).map_err(anyhow::Error::msg)?);
    }
    Ok(warnings)
}

/// The check of one namespace a reload adds: `Err(why)` (with the fix)
/// keeps it out; a `--force` warning is logged here.
pub fn admit(ns: &NamespaceConfig, force: bool) -> Result<(), String> {
    for w in check(ns, force)? {
        nvmf::log::warn("export_forced", format_args!("{w}"), &[]);
    }
    Ok(())
}

/// `Ok(Some(warning))` for a device that holds something under `force`,
/// `Ok(None)` for one that holds nothing (or no block device), else why
/// not, with the fix.
fn check(ns: &NamespaceConfig, force: bool) -> Result<Option<String>, String> {
    let Ok(Backing::Path(path)) = Backing::parse(&ns.backing) else {
        return Ok(None);
    };
    if !is_block_device(&path) {
        return Ok(None);
    }
    let text = path.to_string_lossy();
    let info = engine::target::inspect(&text).map_err(|e| format!("namespace {text}: {e}"))?;
    let what = match engine::target::check_write_safety(&info) {
        Ok(()) => return Ok(None),
        Err(engine::EngineError::Unsafe { what, .. }) => what,
        Err(e) => return Err(format!("namespace {text}: {e}")),
    };
    if !force {
        return Err(format!(
            "refusing to export {text}: it holds {what}, and every host that connects may write to it; export a device that holds nothing, or pass --force to export it anyway"
        ));
    }
    Ok(Some(format!(
        "exporting {text} although it holds {what} (--force)"
    )))
}

fn is_block_device(path: &Path) -> bool {
    use std::os::unix::fs::FileTypeExt;
    std::fs::metadata(path).is_ok_and(|m| m.file_type().is_block_device())
}

