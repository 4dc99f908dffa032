//! `numio serve --port-cpus LIST` (one per `--listen`, or `port_cpus` in
//! the TOML) and the start-up words for where each port's reactors run;
//! the placement itself (a port on its NIC's node) is
//! `planner::reactors`.

use planner::reactors::PortNode;
use topology::CpuList;

/// Parses each `--port-cpus` value (the kernel's CPU list format), one per
/// `--listen`, in order.
pub fn parse_flags(values: &[String], listeners: usize) -> anyhow::Result<Vec<Vec<usize>>> {
    anyhow::ensure!(
        values.len() <= listeners,
        "--port-cpus given {} times for {listeners} listener(s): give one per --listen, in the same order",
        values.len()
    );
    values
        .iter()
        .map(|v| {
            let list = CpuList::parse(v).map_err(|e| anyhow::anyhow!("--port-cpus {v:?}: {e}"))?;
            anyhow::ensure!(!list.is_empty(), "--port-cpus {v:?} names no CPU");
            Ok(list.ids().iter().map(|&c| c as usize).collect())
        })
        .collect()
}

/// The start-up words for port `i` served by `cpus`.
pub fn describe(cpus: &[usize], placed: Option<&PortNode>) -> String {
    match placed {
        Some(PortNode {
            interface: Some(i),
            node: Some(n),
            ..
        }) => format!("reactors on CPUs {cpus:?} (NUMA node {n} of {i})"),
        _ => format!("reactors on CPUs {cpus:?}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn start_up_words_name_the_nic_and_its_node() {
        let placed = PortNode {
            addr: "10.0.0.1:4420".parse().unwrap(),
            interface: Some("ens1".into()),
            node: Some(topology::NodeId(1)),
        };
        assert_eq!(
            describe(&[2, 3], Some(&placed)),
            "reactors on CPUs [2, 3] (NUMA node 1 of ens1)"
        );
        assert_eq!(describe(&[0], None), "reactors on CPUs [0]");
    }

    #[test]
    fn port_cpus_flags_are_one_list_per_listener() {
        assert_eq!(
            parse_flags(&["0-1".into(), "4,6".into()], 2).unwrap(),
            [vec![0, 1], vec![4, 6]]
        );
        let e = parse_flags(&["0".into(), "1".into()], 1)
            .unwrap_err()
            .to_string();
        assert!(e.contains("one per --listen"), "{e}");
        let e = parse_flags(&["x".into()], 1).unwrap_err().to_string();
        assert!(e.contains("--port-cpus \"x\""), "{e}");
    }
}
