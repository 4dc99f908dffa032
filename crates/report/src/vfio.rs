//! The human view of `numio vfio status` (`tune::vfio::status`): the
//! IOMMU, the VFIO modules, a line per NVMe controller, the hugepages;
//! and what `bind`, `unbind` and `restore` did.

use std::path::Path;

use tune::vfio::status::{DeviceStatus, Status};
use tune::vfio::{BoundDevice, RestoreReport, Unbound};

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

/// A line per controller `numio vfio bind` left on vfio-pci.
pub fn bound(devices: &[BoundDevice]) -> String {
    devices
        .iter()
        .map(|b| {
            format!(
                "{}: {} ({}){}\n",
                b.addr,
                if b.owned {
                    "bound to vfio-pci"
                } else {
                    "on vfio-pci already"
                },
                b.group_dev.display(),
                if b.noiommu { "; no-IOMMU mode" } else { "" }
            )
        })
        .collect()
}

/// The line of a controller `numio vfio unbind` gave back.
pub fn unbound(u: &Unbound) -> String {
    let ctrls = if u.controllers.is_empty() {
        String::new()
    } else {
        format!(" ({})", u.controllers.join(", "))
    };
    format!("{}: back on {}{ctrls}\n", u.addr, u.driver)
}

/// What `numio vfio restore` gave back and left alone (stdout), or that
/// `journal` holds nothing.
pub fn restored(report: &RestoreReport, journal: &Path) -> String {
    let mut out = String::new();
    for r in &report.restored {
        out.push_str(&format!(
            "{}: back on {} (left by `{}`)\n",
            r.address,
            r.driver.as_deref().unwrap_or("no driver"),
            r.command
        ));
    }
    for (r, why) in &report.skipped {
        out.push_str(&format!("{}: left alone: {why}\n", r.address));
    }
    if out.is_empty() {
        out = format!("nothing to restore: no record in {}\n", journal.display());
    }
    out
}

/// A stderr line per record `numio vfio restore` could not give back
/// (it then exits 2).
pub fn not_restored(report: &RestoreReport) -> Vec<String> {
    report
        .failed
        .iter()
        .map(|(r, why)| format!("{}: not given back: {why}", r.address))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bind_and_unbind_say_where_each_controller_is() {
        let b = BoundDevice {
            addr: "0000:02:00.0".into(),
            owned: true,
            group_dev: "/dev/vfio/12".into(),
            noiommu: false,
        };
        let n = BoundDevice {
            owned: false,
            noiommu: true,
            group_dev: "/dev/vfio/noiommu-3".into(),
            ..b.clone()
        };
        assert_eq!(
            bound(&[b, n]),
            "0000:02:00.0: bound to vfio-pci (/dev/vfio/12)\n0000:02:00.0: on vfio-pci already (/dev/vfio/noiommu-3); no-IOMMU mode\n"
        );
        let mut u = Unbound {
            addr: "0000:02:00.0".into(),
            driver: "nvme".into(),
            controllers: vec![],
        };
        assert_eq!(unbound(&u), "0000:02:00.0: back on nvme\n");
        u.controllers = vec!["nvme0".into(), "nvme1".into()];
        assert_eq!(unbound(&u), "0000:02:00.0: back on nvme (nvme0, nvme1)\n");
        let none = restored(&RestoreReport::default(), Path::new("/run/numio/vfio.json"));
        assert_eq!(
            none,
            "nothing to restore: no record in /run/numio/vfio.json\n"
        );
    }
}
