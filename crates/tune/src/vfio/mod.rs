//! Handing an NVMe controller to vfio-pci for numio's user-space driver,
//! and giving it back.
//!
//! [`Binding::take`] checks that the PCI function is an NVMe controller,
//! that its IOMMU group can go to VFIO (or that no-IOMMU mode is allowed
//! and possible), and that nothing uses its namespaces (a mount, a holder,
//! swap, an open device, a signature; `--force-unbind` overrides); records the
//! original driver, `driver_override` and hugepage pools in `vfio.json`
//! ([`VfioJournal`], beside `coalesce.json`, under an exclusive lock)
//! BEFORE it changes anything; then moves the device (`driver_override`,
//! unbind, `drivers_probe`) and waits, bounded, for vfio-pci and the group
//! device. The device goes back on [`Binding::give_back`], on drop, from
//! the signal thread ([`BindingRestorer`]), and after a crash through
//! [`restore_recorded`] (`numio vfio restore`), which finds the records
//! whose owner (pid and start time) is dead. [`Binding::keep`] leaves it
//! bound for `numio vfio bind`; [`unbind_address`] gives it back.
//! [`bind`] and [`unbind`] do so for the addresses `numio vfio` names.
//!
//! Every read goes through `topology::pci`, so all of it is tested on fake
//! sysfs trees where a thread plays the kernel; the VM lab
//! (`tests/vm/tests/iommu/`) proves it against Linux.

mod bind;
mod binding;
mod checks;
pub mod record;
mod restore;
pub mod status;
mod sysfs;
#[cfg(test)]
mod tests;

pub use bind::{bind, parse_address, parse_addresses, unbind, Bound, BoundDevice, Unbound};
pub use binding::{Binding, BindingRestorer, TakeOptions, HUGEPAGE_KIB};
pub use checks::NOIOMMU_RISK;
pub use record::{HugepagesRecord, Owner, VfioJournal, VfioRecord};
pub use restore::{alive, give_back_record, restore_recorded, unbind_address, RestoreReport};
pub use sysfs::BIND_WAIT;
