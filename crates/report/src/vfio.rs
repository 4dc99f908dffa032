//! The human view of `numio vfio status` (`tune::vfio::status`): the
//! IOMMU, the VFIO modules, a line per NVMe controller, the hugepages.

use tune::vfio::status::{DeviceStatus, Status};

/// The text form.
pub fn render(s: &Status) -> String {
    let mut out = format!(
        "IOMMU: {}\n",
        if s.iommu {
            "on"
        } else if s.modules.noiommu_enabled {
            "off (VFIO's no-IOMMU mode is enabled)"
        } else {
            "off (vfio bind needs --allow-noiommu)"
        }
    );
    let missing = s.modules.missing();
    out.push_str(&if missing.is_empty() {
        "VFIO modules: loaded\n".to_string()
    } else {
        format!(
            "VFIO modules: {} not loaded (numio vfio bind loads vfio-pci)\n",
            missing.join(", ")
        )
    });
    for d in &s.devices {
        out.push_str(&device_line(d));
    }
    if s.devices.is_empty() {
        out.push_str("no NVMe controller on the PCI bus\n");
    }
    for h in &s.hugepages {
        out.push_str(&format!(
            "hugepages: node {} {} KiB: {} reserved, {} free\n",
            h.node, h.size_kib, h.total, h.free
        ));
    }
    out
}

fn device_line(d: &DeviceStatus) -> String {
    let f = &d.function;
    let node = f.numa_node.map_or("-".to_string(), |n| n.to_string());
    let group = match f.iommu_group {
        None => "no IOMMU group".to_string(),
        Some(g) if f.group_peers.is_empty() => format!("group {g}"),
        Some(g) => {
            let peers: Vec<String> = f
                .group_peers
                .iter()
                .map(|m| format!("{} on {}", m.address, m.driver.as_deref().unwrap_or("none")))
                .collect();
            format!("group {g} with {}", peers.join(", "))
        }
    };
    let mut line = format!(
        "{}  node {node}  {}  {group}",
        f.address,
        f.driver.as_deref().unwrap_or("no driver")
    );
    if !f.controllers.is_empty() {
        line.push_str(&format!("  {}", f.controllers.join(",")));
        if !f.block_devices.is_empty() {
            line.push_str(&format!(": {}", f.block_devices.join(",")));
        }
    }
    if let Some(dev) = &d.group_dev {
        let holders: Vec<String> = d
            .held_by
            .iter()
            .map(|h| format!("{} (pid {})", h.command, h.pid))
            .collect();
        line.push_str(&format!(
            "  {dev} held by {}",
            if holders.is_empty() {
                "nobody".to_string()
            } else {
                holders.join(", ")
            }
        ));
    }
    if let Some(r) = &d.record {
        let by = match r.owner {
            Some(o) => format!("by `{}` (pid {})", r.command, o.pid),
            None => "until `numio vfio unbind`".to_string(),
        };
        line.push_str(&format!(
            "  recorded {by}, was {}",
            r.driver.as_deref().unwrap_or("unbound")
        ));
    }
    line.push('\n');
    line
}
