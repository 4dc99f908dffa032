//! `numio serve` exports a block device only when nothing on it can be
//! lost: the checks `numio bench` makes before a write (a partition table,
//! a filesystem or other signature libblkid recognises, a mount, a holder
//! such as device-mapper or md), because every host that connects may
//! write. `--force` exports it anyway. Files and `mem:` namespaces pass:
//! the user named them for this.

use std::path::Path;

use nvmf::config::{Backing, TargetConfig};

/// Refuses a block-device namespace of `cfg` that holds anything, naming it
/// and the fix; with `force`, returns the warnings to print instead.
pub fn check_namespaces(cfg: &TargetConfig, force: bool) -> anyhow::Result<Vec<String>> {
    let mut warnings = Vec::new();
    for ns in cfg.subsystems.iter().flat_map(|s| &s.namespaces) {
        let Ok(Backing::Path(path)) = Backing::parse(&ns.backing) else {
            continue;
        };
        if !is_block_device(&path) {
            continue;
        }
        let text = path.to_string_lossy();
        let info =
            engine::target::inspect(&text).map_err(|e| anyhow::anyhow!("namespace {text}: {e}"))?;
        let what = match engine::target::check_write_safety(&info) {
            Ok(()) => continue,
            Err(engine::EngineError::Unsafe { what, .. }) => what,
            Err(e) => return Err(anyhow::anyhow!("namespace {text}: {e}")),
        };
        if !force {
            anyhow::bail!(
                "refusing to export {text}: it holds {what}, and every host that connects may write to it; export a device that holds nothing, or pass --force to export it anyway"
            );
        }
        warnings.push(format!(
            "exporting {text} although it holds {what} (--force)"
        ));
    }
    Ok(warnings)
}

fn is_block_device(path: &Path) -> bool {
    use std::os::unix::fs::FileTypeExt;
    std::fs::metadata(path).is_ok_and(|m| m.file_type().is_block_device())
}
