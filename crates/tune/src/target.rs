//! From the names a user writes to the controllers whose settings change:
//! `nvme0` or `/dev/nvme0` (a controller), `/dev/nvme0n1`, `ng0n1`, a
//! partition or a path device `nvme0c1n1` (a namespace: its controller),
//! a multipath head (every controller of its paths). Resolved against a
//! [`Topology`] (the live machine's, or a snapshot's for `show --root`).

use topology::Topology;

pub use crate::controller::Controller;
use crate::error::TuneError;

/// What the names resolved to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    /// The controllers, in the order named, without repeats.
    pub controllers: Vec<Controller>,
    /// Fabrics controllers a namespace also reaches, left out by
    /// [`resolve_tunable`]: `(controller, the name that reached it)`.
    pub skipped_fabrics: Vec<(Controller, String)>,
}

impl Resolved {
    /// A line per fabrics controller [`resolve_tunable`] left out:
    /// `/dev/nvme1n1: leaving out nvme3 (tcp): a fabrics controller has no
    /// interrupts`.
    pub fn skipped_notes(&self) -> Vec<String> {
        self.skipped_fabrics
            .iter()
            .map(|(c, via)| {
                format!(
                    "{via}: leaving out {} ({}): a fabrics controller has no interrupts",
                    c.name,
                    c.transport.name()
                )
            })
            .collect()
    }
}

/// Resolves `inputs` to controllers, fabrics ones included (for `show`);
/// no inputs means every controller.
pub fn resolve(topo: &Topology, inputs: &[String]) -> Result<Resolved, TuneError> {
    let mut controllers: Vec<Controller> = Vec::new();
    if inputs.is_empty() {
        controllers = topo
            .controllers
            .iter()
            .map(Controller::from_topology)
            .collect();
    }
    for input in inputs {
        for c in lookup(topo, input)?.1 {
            push_new(&mut controllers, c);
        }
    }
    Ok(Resolved {
        controllers,
        skipped_fabrics: Vec::new(),
    })
}

/// Resolves `inputs` to the PCIe controllers whose coalescing can change
/// (for `set`, `off` and the sweep). A fabrics controller named as such is
/// an error; one a namespace also reaches is left out and listed in
/// [`Resolved::skipped_fabrics`]; a namespace reached only through fabrics
/// controllers is an error.
pub fn resolve_tunable(topo: &Topology, inputs: &[String]) -> Result<Resolved, TuneError> {
    if inputs.is_empty() {
        return Err(TuneError::NoTargets);
    }
    let mut out = Resolved {
        controllers: Vec::new(),
        skipped_fabrics: Vec::new(),
    };
    for input in inputs {
        let (named_controller, found) = lookup(topo, input)?;
        let (fabrics, pcie): (Vec<Controller>, Vec<Controller>) =
            found.into_iter().partition(Controller::is_fabrics);
        if let Some(f) = fabrics
            .first()
            .filter(|_| named_controller || pcie.is_empty())
        {
            return Err(TuneError::Fabrics {
                input: input.clone(),
                name: f.name.clone(),
                transport: f.transport.name().to_string(),
            });
        }
        for c in pcie {
            push_new(&mut out.controllers, c);
        }
        for f in fabrics {
            if !out.skipped_fabrics.iter().any(|(s, _)| s.name == f.name) {
                out.skipped_fabrics.push((f, input.clone()));
            }
        }
    }
    Ok(out)
}

/// The PCIe controllers of each namespace a sweep runs I/O on, in target
/// order (a multipath head: all its paths'). A target that is a controller
/// is [`TuneError::NotNamespace`] (I/O needs a namespace); one that is no
/// NVMe namespace is refused by name. A fabrics path a namespace also has
/// is left out, and `note` hears of it, as each target is resolved.
pub fn namespace_controllers(
    topo: &Topology,
    targets: &[String],
    note: &mut dyn FnMut(String),
) -> Result<Vec<Vec<Controller>>, TuneError> {
    let mut out = Vec::with_capacity(targets.len());
    for t in targets {
        let name = t.trim().strip_prefix("/dev/").unwrap_or(t.trim());
        if topo.controller(name).is_some() {
            return Err(TuneError::NotNamespace {
                input: t.clone(),
                name: name.to_string(),
            });
        }
        let resolved = resolve_tunable(topo, std::slice::from_ref(t))?;
        for (f, _) in &resolved.skipped_fabrics {
            note(format!(
                "{t}: {} is an NVMe/{} path without interrupts of its own; the sweep sets its PCIe paths",
                f.name,
                f.transport.name()
            ));
        }
        out.push(resolved.controllers);
    }
    Ok(out)
}

fn push_new(list: &mut Vec<Controller>, c: Controller) {
    if !list.iter().any(|have| have.name == c.name) {
        list.push(c);
    }
}

/// One input: whether it named a controller, and the controllers.
fn lookup(topo: &Topology, input: &str) -> Result<(bool, Vec<Controller>), TuneError> {
    let name = input.trim().strip_prefix("/dev/").unwrap_or(input.trim());
    if let Some(c) = topo.controller(name) {
        return Ok((true, vec![Controller::from_topology(c)]));
    }
    if let Some(dev) = topo.find_device(name) {
        let found: Vec<Controller> = dev
            .controllers
            .iter()
            .map(|c| Controller::from_topology(c))
            .collect();
        if !found.is_empty() {
            return Ok((false, found));
        }
    }
    let names: Vec<&str> = topo.controllers.iter().map(|c| c.name.as_str()).collect();
    let known = if names.is_empty() {
        "this machine has no NVMe controller".to_string()
    } else {
        format!("this machine has {}", names.join(", "))
    };
    Err(TuneError::UnknownTarget {
        input: input.to_string(),
        known,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(name: &str) -> Topology {
        let root = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/fixtures/sysfs")
            .join(name);
        Topology::discover(&root).expect("fixture")
    }

    fn names(r: &Resolved) -> Vec<&str> {
        r.controllers.iter().map(|c| c.name.as_str()).collect()
    }

    #[test]
    fn controllers_and_namespaces_resolve_to_their_controllers() {
        let t = fixture("vm-two-socket");
        let all = resolve(&t, &[]).unwrap();
        assert!(all.controllers.len() >= 2, "{:?}", names(&all));
        let first = all.controllers[0].name.clone();
        for input in [first.clone(), format!("/dev/{first}")] {
            assert_eq!(
                names(&resolve_tunable(&t, &[input]).unwrap()),
                [first.as_str()]
            );
        }
        // A multipath head reaches every controller of its paths.
        let head = t
            .subsystems
            .iter()
            .flat_map(|s| &s.namespaces)
            .find(|n| n.paths.len() > 1)
            .expect("the two-socket guest has a 2-path namespace");
        let r = resolve_tunable(&t, &[format!("/dev/{}", head.block_device)]).unwrap();
        let mut want: Vec<&str> = head.paths.iter().map(|p| p.controller.as_str()).collect();
        want.sort_unstable();
        let mut got = names(&r);
        got.sort_unstable();
        assert_eq!(got, want);
        // Named twice: listed once.
        let twice = resolve_tunable(&t, &[first.clone(), first.clone()]).unwrap();
        assert_eq!(twice.controllers.len(), 1);
    }

    #[test]
    fn vectors_are_the_io_queue_irqs() {
        let t = fixture("vm-two-socket");
        let c = t
            .controllers
            .iter()
            .find(|c| c.irqs.len() > 1)
            .expect("queue IRQs");
        let ctrl = Controller::from_topology(c);
        assert!(
            !ctrl.vectors.contains(&0),
            "the admin queue is not coalesced"
        );
        assert_eq!(
            ctrl.vectors.len(),
            c.irqs.iter().filter(|i| !i.name.ends_with("q0")).count()
        );
    }

    #[test]
    fn unknown_names_say_what_there_is() {
        let t = fixture("vm-two-socket");
        let e = resolve_tunable(&t, &["nvme99".to_string()])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("`nvme99`") && e.contains("this machine has nvme0"),
            "{e}"
        );
        let none = fixture("no-nvme");
        let e = resolve(&none, &["/dev/nvme0".to_string()])
            .unwrap_err()
            .to_string();
        assert!(e.contains("no NVMe controller"), "{e}");
        assert!(matches!(
            resolve_tunable(&t, &[]),
            Err(TuneError::NoTargets)
        ));
    }

    #[test]
    fn fabrics_controllers_have_no_interrupts() {
        let t = fixture("2node-multipath-tcp");
        let tcp = t
            .controllers
            .iter()
            .find(|c| c.transport == topology::Transport::Tcp)
            .expect("a tcp controller");
        let e = resolve_tunable(&t, std::slice::from_ref(&tcp.name))
            .unwrap_err()
            .to_string();
        assert!(e.contains("a fabrics controller has no interrupts"), "{e}");
        // `show` lists it.
        let shown = resolve(&t, std::slice::from_ref(&tcp.name)).unwrap();
        assert!(shown.controllers[0].is_fabrics());
    }

    #[test]
    fn a_sweep_names_namespaces_not_controllers() {
        let t = fixture("vm-two-socket");
        let first = t.controllers[0].name.clone();
        let e = namespace_controllers(&t, &[format!("/dev/{first}")], &mut |_| {})
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            format!("/dev/{first} is a controller: the sweep runs I/O, so name its namespaces (e.g. /dev/{first}n1)")
        );
        let ns = t
            .subsystems
            .iter()
            .flat_map(|s| &s.namespaces)
            .next()
            .expect("a namespace");
        let got =
            namespace_controllers(&t, &[format!("/dev/{}", ns.block_device)], &mut |_| {}).unwrap();
        assert_eq!(got.len(), 1);
        assert!(!got[0].is_empty());
    }
}
