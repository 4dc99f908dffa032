//! The words of the picture: a node's CPUs with SMT siblings grouped and
//! long runs collapsed, a controller's lines, a fabric address and its NIC.

use topology::render::{decimal_size, gib};
use topology::{Controller, CpuId, CpuList, Node, Topology, Transport};

/// `0-55,112-167` as the picture writes it: `0–55, 112–167`.
pub fn cpu_ranges(cpus: &[CpuId]) -> String {
    if cpus.is_empty() {
        return "none".to_string();
    }
    CpuList::of(cpus)
        .to_string()
        .replace('-', "–")
        .replace(',', ", ")
}

/// The lines about a node's CPUs: cores and threads per package, then
/// `CPU 0–55 (+SMT 224–279)` (first thread of each core, then the other
/// siblings), then offline CPUs.
pub fn node_cpu_lines(t: &Topology, node: &Node) -> Vec<String> {
    let online: Vec<&topology::Cpu> = t
        .cpus
        .iter()
        .filter(|c| c.online && node.cpus.contains(&c.id))
        .collect();
    let mut lines = Vec::new();
    if online.is_empty() {
        lines.push("no online CPUs".to_string());
    } else {
        let first = |c: &topology::Cpu| c.siblings.first().is_none_or(|s| *s == c.id);
        let cores: Vec<CpuId> = online.iter().filter(|c| first(c)).map(|c| c.id).collect();
        let smt: Vec<CpuId> = online.iter().filter(|c| !first(c)).map(|c| c.id).collect();
        let mut packages: Vec<u32> = online.iter().filter_map(|c| c.package).collect();
        packages.sort_unstable();
        packages.dedup();
        let package = match packages.as_slice() {
            [] => String::new(),
            [p] => format!("package {p}: "),
            many => format!("{} packages: ", many.len()),
        };
        let threads = online.len() as f64 / cores.len().max(1) as f64;
        let threads = match threads {
            1.0 => "1 thread".to_string(),
            t if t.fract() == 0.0 => format!("{t:.0} threads"),
            t => format!("{t:.1} threads"),
        };
        let core_count = match cores.len() {
            1 => "1 core".to_string(),
            n => format!("{n} cores"),
        };
        lines.push(format!("{package}{core_count} × {threads}"));
        let mut cpu = format!("CPU {}", cpu_ranges(&cores));
        if !smt.is_empty() {
            cpu.push_str(&format!(" (+SMT {})", cpu_ranges(&smt)));
        }
        lines.push(cpu);
    }
    let offline: Vec<CpuId> = t
        .cpus
        .iter()
        .filter(|c| !c.online && c.node == Some(node.id))
        .map(|c| c.id)
        .collect();
    if !offline.is_empty() {
        lines.push(format!("offline CPU {}", cpu_ranges(&offline)));
    }
    lines
}

/// The node's memory and distances, for its title band.
pub fn node_memory(node: &Node) -> String {
    if node.memory_bytes == 0 {
        "no memory".to_string()
    } else {
        gib(node.memory_bytes)
    }
}

/// One `key=value` of a fabric address (`traddr=…,trsvcid=…,src_addr=…`).
pub fn address_field<'a>(address: &'a str, key: &str) -> Option<&'a str> {
    address.split(',').find_map(|kv| {
        let (k, v) = kv.trim().split_once('=')?;
        (k == key && !v.is_empty()).then_some(v)
    })
}

/// The NIC side of a fabric controller as its address names it: the
/// interface (`host_iface`, Linux 5.14+) and the local address
/// (`src_addr`); `None` where the address names neither.
pub fn nic(c: &Controller) -> Option<String> {
    if c.transport == Transport::Pcie {
        return None;
    }
    let iface = address_field(&c.address, "host_iface");
    let src = address_field(&c.address, "src_addr");
    match (iface, src) {
        (Some(i), Some(s)) => Some(format!("NIC {i} ({s})")),
        (Some(i), None) => Some(format!("NIC {i}")),
        (None, Some(s)) => Some(format!("NIC at {s}")),
        (None, None) => None,
    }
}

/// The controller's title: name and where it sits (BDF, or transport and
/// remote address).
pub fn controller_title(c: &Controller) -> String {
    if c.transport == Transport::Pcie {
        return format!("{}  {}", c.name, c.address);
    }
    let remote = match (
        address_field(&c.address, "traddr"),
        address_field(&c.address, "trsvcid"),
    ) {
        (Some(a), Some(p)) => format!("{a}:{p}"),
        (Some(a), None) => a.to_string(),
        _ => c.address.clone(),
    };
    format!("{}  {} {remote}", c.name, c.transport.name())
}

/// The controller's plain lines below its title: model and firmware,
/// serial and queues (and state when not live), the NIC, then each
/// namespace it exposes (a path of a multipath head names its head).
pub fn controller_lines(t: &Topology, c: &Controller) -> Vec<String> {
    let mut lines = Vec::new();
    let model = if c.model.is_empty() { "NVMe" } else { &c.model };
    if c.firmware.is_empty() {
        lines.push(model.to_string());
    } else {
        lines.push(format!("{model} · fw {}", c.firmware));
    }
    let mut id = format!("SN {} · {} I/O queues", c.serial, c.queue_count);
    if !c.state.is_empty() && c.state != "live" {
        id.push_str(&format!(" · {}", c.state));
    }
    lines.push(id);
    lines.extend(nic(c));
    for ns in t.subsystems.iter().flat_map(|s| &s.namespaces) {
        let size = decimal_size(ns.size_bytes);
        if let Some(p) = ns.paths.iter().find(|p| p.controller == c.name) {
            let ana = p.ana_state.as_deref().unwrap_or("no ANA");
            lines.push(format!("{} → {} {size} ({ana})", p.device, ns.block_device));
        } else if ns.controller.as_deref() == Some(c.name.as_str()) {
            lines.push(format!(
                "{} {size} · {} B blocks",
                ns.block_device, ns.logical_block_size
            ));
        }
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_ranges_use_en_dashes() {
        let cpus: Vec<CpuId> = [0, 1, 2, 3, 8].into_iter().map(CpuId).collect();
        assert_eq!(cpu_ranges(&cpus), "0–3, 8");
        assert_eq!(cpu_ranges(&[]), "none");
    }

    #[test]
    fn fabric_address_fields_and_nic() {
        let a = "traddr=192.168.100.10,trsvcid=4420,src_addr=192.168.100.1";
        assert_eq!(address_field(a, "traddr"), Some("192.168.100.10"));
        assert_eq!(address_field(a, "host_iface"), None);
        let a = "traddr=10.0.0.2,trsvcid=4420,host_iface=ens1f0";
        assert_eq!(address_field(a, "host_iface"), Some("ens1f0"));
    }
}
