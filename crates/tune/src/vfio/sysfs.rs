//! The writes that move a PCI function between drivers (`driver_override`,
//! `driver/unbind`, `drivers_probe`), a hugepage pool's `nr_hugepages`,
//! and bounded waits for the kernel to finish. Every read goes through
//! `topology::pci`.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use topology::pci::{PciFunction, DEVICES_DIR};

use crate::error::TuneError;

/// How long the kernel gets to bind or unbind a driver.
pub const BIND_WAIT: Duration = Duration::from_secs(10);
const POLL: Duration = Duration::from_millis(10);

/// The error of `device` with `why`.
pub(crate) fn vfio_err(device: &str, why: impl Into<String>) -> TuneError {
    TuneError::Vfio {
        device: device.to_string(),
        why: why.into(),
    }
}

/// Writes `text` to the sysfs attribute `rel` under `root`.
pub(crate) fn write_attr(
    root: &Path,
    rel: &str,
    text: &str,
    device: &str,
) -> Result<(), TuneError> {
    let path = root.join(rel);
    let written = std::fs::OpenOptions::new()
        .write(true)
        .truncate(true)
        .open(&path)
        .and_then(|mut f| f.write_all(text.as_bytes()));
    written.map_err(|e| {
        let fix = match e.raw_os_error() {
            // EPERM, EACCES.
            Some(1 | 13) => ": run as root (moving a device between drivers needs CAP_SYS_ADMIN)",
            _ => "",
        };
        vfio_err(
            device,
            format!("writing `{}` to {}: {e}{fix}", text.trim(), path.display()),
        )
    })
}

/// The function `addr` now; an error when it is gone.
pub(crate) fn function(root: &Path, addr: &str) -> Result<PciFunction, TuneError> {
    topology::pci::pci_function(root, addr)?.ok_or_else(|| {
        vfio_err(
            addr,
            "the PCI function is gone (removed?); check `lspci -D` and `dmesg`",
        )
    })
}

/// Sets `addr`'s `driver_override` (`None` clears it).
pub(crate) fn set_override(root: &Path, addr: &str, to: Option<&str>) -> Result<(), TuneError> {
    let rel = format!("{DEVICES_DIR}/{addr}/driver_override");
    write_attr(root, &rel, &format!("{}\n", to.unwrap_or("")), addr)
}

/// Unbinds `addr` from its driver, if it has one.
pub(crate) fn unbind(root: &Path, addr: &str) -> Result<(), TuneError> {
    if function(root, addr)?.driver.is_none() {
        return Ok(());
    }
    let rel = format!("{DEVICES_DIR}/{addr}/driver/unbind");
    write_attr(root, &rel, addr, addr)
}

/// Asks the PCI bus to find `addr` a driver (`drivers_probe`).
pub(crate) fn probe(root: &Path, addr: &str) -> Result<(), TuneError> {
    write_attr(root, "sys/bus/pci/drivers_probe", addr, addr)
}

/// Polls `done` until it holds, for at most [`BIND_WAIT`]; stops early
/// when `stop` is set. The error says what was awaited.
pub(crate) fn wait_for(
    device: &str,
    what: &str,
    stop: Option<&AtomicBool>,
    mut done: impl FnMut() -> Result<bool, TuneError>,
) -> Result<(), TuneError> {
    let until = Instant::now() + BIND_WAIT;
    loop {
        if done()? {
            return Ok(());
        }
        if stop.is_some_and(|s| s.load(Ordering::Relaxed)) {
            return Err(TuneError::Interrupted {
                name: device.to_string(),
            });
        }
        if Instant::now() >= until {
            return Err(vfio_err(
                device,
                format!(
                    "{what} did not happen within {} s; see `dmesg`",
                    BIND_WAIT.as_secs()
                ),
            ));
        }
        std::thread::sleep(POLL);
    }
}

/// The VFIO group device of group `group` under `root`
/// (`dev/vfio/N`, or `dev/vfio/noiommu-N`).
pub(crate) fn group_dev(root: &Path, group: u32, noiommu: bool) -> PathBuf {
    let name = if noiommu {
        format!("noiommu-{group}")
    } else {
        group.to_string()
    };
    root.join("dev/vfio").join(name)
}

/// Writes `pages` to a hugepage pool and reads back what the kernel
/// reserved.
pub(crate) fn set_hugepages(
    root: &Path,
    node: u32,
    size_kib: u64,
    pages: u64,
    device: &str,
) -> Result<u64, TuneError> {
    let rel = topology::pci::NodeHugepages::nr_path(node, size_kib);
    write_attr(root, &rel, &format!("{pages}\n"), device)?;
    Ok(topology::pci::hugepages(root)?
        .into_iter()
        .find(|h| h.node == node && h.size_kib == size_kib)
        .map_or(0, |h| h.total))
}
