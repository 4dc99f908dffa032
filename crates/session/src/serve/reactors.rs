//! Where `numio serve`'s reactors run, on this machine: the CPUs named
//! (`--cpus`, `--port-cpus`, or the configuration's), checked against
//! those this process may run on; else each port on its NIC's node; else
//! the backing devices' node ([`place`]). The choices themselves are
//! `planner::reactors`' (tested on fixtures); this module reads the live
//! machine for them and words the result for the start-up lines
//! ([`describe`]).

use std::path::Path;

use nvmf::config::TargetConfig;
use nvmf::reactor::DEFAULT_REACTORS;
use planner::reactors::PortNode;
use topology::NodeId;

use super::config::parse_cpus;
use super::error::ServeError;
use super::options::ServeOptions;

/// Where [`place`] put the reactors, for the start-up lines.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Placement {
    /// The backing devices' node, when the reactors follow the backings.
    pub node: Option<NodeId>,
    /// Each port's interface and node, when ports follow their NICs.
    pub ports: Vec<PortNode>,
}

/// Sets `cfg`'s reactor CPUs: `--port-cpus` over the configuration's;
/// with none named, each port on its NIC's node, else the backings' node;
/// CPUs named are refused where this process may not run on them.
pub fn place(cfg: &mut TargetConfig, opts: &ServeOptions) -> Result<Placement, ServeError> {
    let mut placement = Placement::default();
    let allowed =
        sysapi::affinity::allowed_cpus().map_err(|source| ServeError::AllowedCpus { source })?;
    if !opts.port_cpus.is_empty() {
        cfg.port_cpus = parse_port_flags(&opts.port_cpus, cfg.listen.len())?;
    }
    if cfg.cpus.is_empty() && cfg.port_cpus.is_empty() {
        (cfg.port_cpus, placement.ports) =
            planner::reactors::by_interface(Path::new("/"), &cfg.listen, &allowed, |ip| {
                sysapi::net::interface_of(ip).ok().flatten()
            });
    }
    if cfg.cpus.is_empty() && cfg.port_cpus.is_empty() {
        (cfg.cpus, placement.node) = local_cpus(cfg, &allowed);
    } else {
        let named_by = match (opts.cpus.is_some(), opts.port_cpus.is_empty()) {
            (true, _) => "--cpus",
            (false, false) => "--port-cpus",
            _ if !cfg.cpus.is_empty() => "cpus in --config",
            _ => "port_cpus",
        };
        check_cpus(&cfg.reactor_cpus(), &allowed, named_by)?;
    }
    Ok(placement)
}

/// Parses each `--port-cpus` value (the kernel's CPU list format), one per
/// `--listen`, in order.
pub fn parse_port_flags(
    values: &[String],
    listeners: usize,
) -> Result<Vec<Vec<usize>>, ServeError> {
    if values.len() > listeners {
        return Err(ServeError::PortCpusCount {
            given: values.len(),
            listeners,
        });
    }
    values
        .iter()
        .map(|v| parse_cpus("--port-cpus", v))
        .collect()
}

/// Refuses reactor CPUs (`named_by` says where they were given) this
/// process may not run on.
fn check_cpus(cpus: &[usize], allowed: &[u32], named_by: &'static str) -> Result<(), ServeError> {
    planner::reactors::check_allowed(cpus, allowed)
        .map_err(|source| ServeError::CpusNotAllowed { named_by, source })
}

/// Reactor CPUs for a configuration that names none
/// ([`planner::reactors::for_backings`] on this machine): the backing
/// devices' shared node, at most [`DEFAULT_REACTORS`], among the CPUs
/// this process may use (`allowed`); RAM has no node.
fn local_cpus(cfg: &TargetConfig, allowed: &[u32]) -> (Vec<usize>, Option<NodeId>) {
    let backings: Vec<&Path> = cfg
        .subsystems
        .iter()
        .flat_map(|s| &s.namespaces)
        .filter(|n| !n.backing.starts_with("mem:"))
        .map(|n| Path::new(&n.backing))
        .collect();
    planner::reactors::for_backings(Path::new("/"), &backings, allowed, DEFAULT_REACTORS)
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
            parse_port_flags(&["0-1".into(), "4,6".into()], 2).unwrap(),
            [vec![0, 1], vec![4, 6]]
        );
        let e = parse_port_flags(&["0".into(), "1".into()], 1)
            .unwrap_err()
            .to_string();
        assert!(e.contains("one per --listen"), "{e}");
        let e = parse_port_flags(&["x".into()], 1).unwrap_err().to_string();
        assert!(e.contains("--port-cpus \"x\""), "{e}");
    }

    #[test]
    fn cpus_this_process_may_not_use_are_refused_by_where_they_were_named() {
        assert!(check_cpus(&[0, 2], &[0, 1, 2, 3], "--cpus").is_ok());
        let e = check_cpus(&[1, 9], &[0, 1, 2, 3], "cpus in --config").unwrap_err();
        let source = std::error::Error::source(&e).map(ToString::to_string);
        assert_eq!(
            format!("{e}: {}", source.unwrap_or_default()),
            "cpus in --config: CPU 9 is not one this process may run on (allowed: 0-3); pick CPUs from `numio topo`"
        );
    }
}
