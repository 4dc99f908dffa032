//! What `numio doctor` reads of the live machine beside sysfs: each PCIe
//! controller's interrupt coalescing (Get Features 0x08, through the same
//! admin path `coalesce` uses, read only) and the VFIO facts (IOMMU,
//! modules, hugepages, vfio-pci devices nobody holds).

use std::path::Path;

use topology::doctor::LiveFacts;
use topology::{Topology, Transport};

use crate::Access;

/// The live facts of `topo`, read when `root` is `/`; a controller that
/// cannot be read (not root, gone) is left out, and a snapshot root reads
/// none.
pub fn doctor_facts(topo: &Topology, root: &Path) -> LiveFacts {
    let mut live = LiveFacts::default();
    if root != Path::new("/") {
        return live;
    }
    live.vfio = topology::pci::vfio_facts(root).ok();
    let access = crate::DevAccess::default();
    for c in topo
        .controllers
        .iter()
        .filter(|c| c.transport == Transport::Pcie)
    {
        let ctrl = crate::Controller::from_topology(c);
        let read = access
            .open(&ctrl)
            .map_err(|e| crate::TuneError::admin(&ctrl, "opening the controller", e))
            .and_then(|mut admin| crate::state::read_value(admin.as_mut(), &ctrl));
        if let Ok(raw) = read {
            live.coalescing_raw.insert(c.name.clone(), raw);
        }
    }
    live
}
