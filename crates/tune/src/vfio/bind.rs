//! `numio vfio bind` and `unbind` over [`Binding`] and
//! [`unbind_address`]: the user's addresses read ([`parse_address`]),
//! every controller taken or none ([`bind`]), and each one given back with
//! what it went to ([`unbind`]).

use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;

use super::binding::{Binding, BindingRestorer, TakeOptions};
use super::record::VfioJournal;
use super::restore::unbind_address;
use crate::error::TuneError;

/// The kernel form (`0000:02:00.0`) of a user's PCI address (as `lspci
/// -D` prints it, the short `02:00.0` or `pci:0000:02:00.0`), or
/// [`TuneError::PciAddress`] naming the input.
pub fn parse_address(input: &str) -> Result<String, TuneError> {
    topology::pci::parse_address(input).ok_or_else(|| TuneError::PciAddress {
        input: input.to_string(),
    })
}

/// [`parse_address`] of each input, in order; the first bad one's error.
pub fn parse_addresses(inputs: &[String]) -> Result<Vec<String>, TuneError> {
    inputs.iter().map(|d| parse_address(d)).collect()
}

/// A controller [`bind`] left on vfio-pci.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BoundDevice {
    /// Its PCI address.
    pub addr: String,
    /// Whether numio moved it (false: it was on vfio-pci already).
    pub owned: bool,
    /// Its VFIO group device.
    pub group_dev: PathBuf,
    /// Whether it is in VFIO's no-IOMMU mode.
    pub noiommu: bool,
}

/// What [`bind`] came to.
#[derive(Debug)]
pub enum Bound {
    /// Every controller stays on vfio-pci, on record until unbind.
    Kept(Vec<BoundDevice>),
    /// A signal stopped it: every controller taken went back. The error
    /// is the take it cut short, if it cut one.
    Interrupted(Option<TuneError>),
}

/// Hands every address of `addrs` (kernel form) to vfio-pci under `root`,
/// or none: an error gives back the ones taken, and so does a signal
/// (`opts.stop`). `on_restorer` gets each binding's restorer as it is
/// taken (a second signal's exit hook gives it back through it); what it
/// returns is held until the bindings are kept.
pub fn bind<H>(
    root: &Path,
    addrs: &[String],
    opts: &TakeOptions,
    mut on_restorer: impl FnMut(BindingRestorer) -> H,
) -> Result<Bound, TuneError> {
    let stopped = || opts.stop.is_some_and(|s| s.load(Ordering::Relaxed));
    let mut taken: Vec<Binding> = Vec::new();
    let mut held = Vec::new();
    for addr in addrs {
        // An error drops the ones taken: they go back.
        let b = match Binding::take(root, addr, opts) {
            Ok(b) => b,
            Err(e) if stopped() => {
                drop(taken);
                return Ok(Bound::Interrupted(Some(e)));
            }
            Err(e) => return Err(e),
        };
        held.push(on_restorer(b.restorer()));
        taken.push(b);
        if stopped() {
            return Ok(Bound::Interrupted(None));
        }
    }
    let mut kept = Vec::with_capacity(taken.len());
    for b in taken {
        let device = BoundDevice {
            addr: b.addr().to_string(),
            owned: b.owned(),
            group_dev: b.group_dev(),
            noiommu: b.noiommu(),
        };
        b.keep()?;
        kept.push(device);
    }
    drop(held);
    Ok(Bound::Kept(kept))
}

/// A controller [`unbind`] gave back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unbound {
    /// Its PCI address.
    pub addr: String,
    /// The driver it went to (`nvme`, or `no driver`).
    pub driver: String,
    /// Its NVMe controllers now (`nvme0`), as far as the kernel has made
    /// them.
    pub controllers: Vec<String>,
}

/// `numio vfio unbind ADDR`: [`unbind_address`], and the controllers the
/// function has afterwards.
pub fn unbind(root: &Path, journal: &VfioJournal, addr: &str) -> Result<Unbound, TuneError> {
    let driver = unbind_address(root, journal, addr)?;
    let f = topology::pci::pci_function(root, addr)?;
    Ok(Unbound {
        addr: addr.to_string(),
        driver,
        controllers: f.map(|f| f.controllers).unwrap_or_default(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_are_read_in_every_form_and_others_named() {
        assert_eq!(parse_address("0000:02:00.0").unwrap(), "0000:02:00.0");
        assert_eq!(parse_address("02:00.0").unwrap(), "0000:02:00.0");
        assert_eq!(parse_address("pci:0000:02:00.0").unwrap(), "0000:02:00.0");
        let two = ["02:00.0".to_string(), "x".to_string()];
        assert!(parse_addresses(&two[..1]).is_ok());
        assert!(
            matches!(parse_addresses(&two), Err(TuneError::PciAddress { input }) if input == "x")
        );
        let e = parse_address("nvme0").unwrap_err().to_string();
        assert!(
            e.starts_with("`nvme0` is not a PCI address") && e.contains("lspci -D"),
            "{e}"
        );
    }
}
