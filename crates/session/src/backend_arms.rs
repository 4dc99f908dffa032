//! `backend=` arms of a comparison: one NVMe drive reached by several
//! backends, each its own way. `vfio` drives the controller with numio's
//! own driver (`pci:ADDR/NSID`), `passthru` the namespace's generic device
//! (`/dev/ngXnY`), `uring` and `sync` its block device (`/dev/nvmeXnY`).
//! The drive is named once, in any of these forms; each arm's target is
//! derived from the topology while the kernel owns the drive
//! ([`arm_target`]). A `vfio` run has the controller bound to vfio-pci for
//! that run and given back before the next ([`BackendRunner`]), so the
//! arms interleave A B A B … on one drive.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use engine::backend::vfio::target::PciAddressError;
use engine::{BackendKind, RunOptions, RunResult};
use topology::Topology;

use crate::schedule::BoxError;
use crate::{Event, LiveArm, LocalRunner, RunInfo, Runner};

/// Why a `backend=` arm cannot reach its drive.
#[derive(Debug, thiserror::Error)]
pub enum BackendArmError {
    /// A `pci:` target's address does not parse.
    #[error(transparent)]
    Address(#[from] PciAddressError),
    /// The kernel shows no (such) namespace of the controller.
    #[error("{target}: the kernel shows no namespace{} of the controller {addr}; backend= arms need the drive on the nvme driver when compare starts (numio vfio unbind {addr})", nsid.map_or(String::new(), |n| format!(" {n}")))]
    NoNamespace {
        /// The target as given.
        target: String,
        /// The namespace asked for.
        nsid: Option<u32>,
        /// The controller's PCI address.
        addr: String,
    },
    /// The target is no NVMe namespace of this machine.
    #[error("{target}: not an NVMe namespace of this machine; backend= arms take one drive as pci:ADDR[/NSID], /dev/nvmeXnY or /dev/ngXnY")]
    NotANamespace {
        /// The target as given.
        target: String,
    },
    /// The namespace is not behind one PCIe controller.
    #[error("{target}: a namespace with several paths, or of a fabrics controller; backend= arms need a namespace of one PCIe controller")]
    NotOnePcie {
        /// The target as given.
        target: String,
    },
    /// The namespace has no generic device for the passthru arm.
    #[error("{target}: namespace {nsid} of {addr} has no generic device (/dev/ngXnY, Linux ≥ 5.13) for the passthru arm")]
    NoGeneric {
        /// The target as given.
        target: String,
        /// The namespace.
        nsid: u32,
        /// The controller's PCI address.
        addr: String,
    },
    /// No topology to find the drive in.
    #[error("backend= arms need this machine's topology")]
    NoTopology,
    /// The arm names no backend of the engine's.
    #[error("backend={name}: {source}")]
    Backend {
        /// The name given.
        name: String,
        /// The engine's reason.
        #[source]
        source: engine::EngineError,
    },
    /// A kernel arm's device node did not come back after a `vfio` run.
    #[error("{path} did not come back within {} s after the controller was given back to the kernel; `numio vfio status` shows where it is", wait.as_secs())]
    DeviceGone {
        /// The device node.
        path: String,
        /// How long it was waited for.
        wait: Duration,
    },
}

/// A namespace as the backends reach it: its controller's PCI address,
/// its nsid, its block device and its generic device.
struct Drive {
    addr: String,
    nsid: u32,
    block: String,
    generic: Option<String>,
}

/// The namespace of drive `target` (`pci:ADDR[/NSID]`, `/dev/nvmeXnY`,
/// `/dev/ngXnY` or `nvmeXnY`) as `topo` knows it.
fn drive(target: &str, topo: &Topology) -> Result<Drive, BackendArmError> {
    let pcie = |ctrl: &str| {
        topo.controllers
            .iter()
            .find(|c| c.name == ctrl && c.transport == topology::Transport::Pcie)
            .map(|c| c.address.clone())
    };
    let namespaces = topo.subsystems.iter().flat_map(|s| s.namespaces.iter());
    // The one controller of a namespace: its own, or that of its only path
    // (a head over one path, as native multipath shows a single drive).
    let ctrl_of = |n: &topology::Namespace| -> Option<String> {
        match (&n.controller, n.paths.as_slice()) {
            (Some(c), _) => Some(c.clone()),
            (None, [p]) => Some(p.controller.clone()),
            _ => None,
        }
    };
    let of = |addr: String, ns: &topology::Namespace| Drive {
        addr,
        nsid: ns.nsid,
        block: ns.block_device.clone(),
        generic: ns.generic_device.clone(),
    };
    if let Some(parsed) = engine::backend::vfio::target::parse(target) {
        let (addr, nsid) = parsed?;
        let mut of_ctrl: Vec<_> = namespaces
            .filter(|n| {
                ctrl_of(n)
                    .as_deref()
                    .and_then(pcie)
                    .is_some_and(|a| a == addr)
            })
            .collect();
        of_ctrl.sort_by_key(|n| n.nsid);
        let ns = match nsid {
            Some(id) => of_ctrl.into_iter().find(|n| n.nsid == id),
            None => of_ctrl.into_iter().next(),
        };
        return match ns {
            Some(ns) => Ok(of(addr, ns)),
            None => Err(BackendArmError::NoNamespace {
                target: target.to_string(),
                nsid,
                addr,
            }),
        };
    }
    let name = target.strip_prefix("/dev/").unwrap_or(target);
    let ns = namespaces
        .clone()
        .find(|n| n.block_device == name || n.generic_device.as_deref() == Some(name))
        .ok_or_else(|| BackendArmError::NotANamespace {
            target: target.to_string(),
        })?;
    match ctrl_of(ns).as_deref().and_then(pcie) {
        Some(addr) => Ok(of(addr, ns)),
        None => Err(BackendArmError::NotOnePcie {
            target: target.to_string(),
        }),
    }
}

/// The target of the `backend` arm for drive `target`.
pub fn arm_target(target: &str, backend: &str, topo: &Topology) -> Result<String, BackendArmError> {
    let d = drive(target, topo)?;
    Ok(match backend {
        "vfio" => format!("pci:{}/{}", d.addr, d.nsid),
        "passthru" => match d.generic {
            Some(ng) => format!("/dev/{ng}"),
            None => {
                return Err(BackendArmError::NoGeneric {
                    target: target.to_string(),
                    nsid: d.nsid,
                    addr: d.addr,
                })
            }
        },
        _ => format!("/dev/{}", d.block),
    })
}

/// The engine backend a `backend=` arm names.
pub fn kind(name: &str) -> Result<BackendKind, BackendArmError> {
    name.parse::<BackendKind>()
        .map_err(|source| BackendArmError::Backend {
            name: name.to_string(),
            source,
        })
}

/// What gives a `vfio` run's controllers back to the kernel.
pub type GiveBack = Box<dyn FnOnce() -> Result<(), BoxError>>;

/// Runs each arm on this machine ([`LocalRunner`]); a `vfio` arm's
/// controllers go to vfio-pci for its run only, through `take` (the
/// caller's binding, which knows `--force-unbind` and the signals), and
/// a kernel arm waits for its device nodes to come back first.
pub struct BackendRunner<'a> {
    /// Binds the controllers of a `vfio` run's targets.
    pub take: &'a mut dyn FnMut(&[String]) -> Result<GiveBack, BoxError>,
}

impl Runner for BackendRunner<'_> {
    fn run(
        &mut self,
        arm: &LiveArm,
        opts: &RunOptions,
        run: RunInfo,
        interrupt: &AtomicBool,
        observer: &mut dyn FnMut(&Event<'_>),
    ) -> Result<RunResult, BoxError> {
        let give_back = if opts.backend == BackendKind::Vfio {
            let targets: Vec<String> = arm
                .placement
                .targets
                .iter()
                .map(|t| t.path.clone())
                .collect();
            Some((self.take)(&targets)?)
        } else {
            wait_for_paths(&arm.placement, interrupt)?;
            None
        };
        let result = LocalRunner.run(arm, opts, run, interrupt, observer);
        if let Some(give_back) = give_back {
            give_back()?;
        }
        result
    }
}

/// How long a kernel arm waits for its device nodes after a `vfio` run gave
/// the controller back (the nvme driver adds namespaces, then their
/// generic devices, after the controller).
const DEVICE_WAIT: Duration = Duration::from_secs(15);

/// Waits until every target of `placement` under `/dev` exists (the event:
/// the kernel made its node), for at most [`DEVICE_WAIT`].
fn wait_for_paths(
    placement: &planner::Placement,
    interrupt: &AtomicBool,
) -> Result<(), BackendArmError> {
    let until = Instant::now() + DEVICE_WAIT;
    for t in placement
        .targets
        .iter()
        .filter(|t| t.path.starts_with("/dev/"))
    {
        while !Path::new(&t.path).exists() {
            if Instant::now() > until || interrupt.load(Ordering::Relaxed) {
                return Err(BackendArmError::DeviceGone {
                    path: t.path.clone(),
                    wait: DEVICE_WAIT,
                });
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn topo() -> Topology {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/fixtures/sysfs/one-node-1nvme");
        Topology::discover(&root).expect("fixture")
    }

    #[test]
    fn each_backend_reaches_the_drive_its_own_way() {
        let t = topo();
        let addr = t.controllers[0].address.clone();
        for drive in [
            format!("pci:{addr}"),
            format!("pci:{addr}/1"),
            "/dev/nvme0n1".to_string(),
            "/dev/ng0n1".to_string(),
            "nvme0n1".to_string(),
        ] {
            let got: Vec<String> = ["vfio", "passthru", "uring", "sync"]
                .iter()
                .map(|b| arm_target(&drive, b, &t).unwrap_or_else(|e| panic!("{drive}: {e:#}")))
                .collect();
            assert_eq!(
                got,
                [
                    format!("pci:{addr}/1"),
                    "/dev/ng0n1".into(),
                    "/dev/nvme0n1".into(),
                    "/dev/nvme0n1".into()
                ],
                "{drive}"
            );
        }
    }

    #[test]
    fn what_is_not_one_pcie_namespace_is_refused_by_name() {
        let t = topo();
        let addr = t.controllers[0].address.clone();
        let e = format!(
            "{:#}",
            arm_target(&format!("pci:{addr}/5"), "uring", &t).unwrap_err()
        );
        assert!(
            e.contains("no namespace 5") && e.contains("numio vfio unbind"),
            "{e}"
        );
        let e = format!("{:#}", arm_target("/tmp/file", "vfio", &t).unwrap_err());
        assert!(e.contains("not an NVMe namespace of this machine"), "{e}");
        let e = format!(
            "{:#}",
            arm_target("pci:0000:99:00.0", "vfio", &t).unwrap_err()
        );
        assert!(e.contains("0000:99:00.0"), "{e}");
        assert!(kind("vfio").is_ok() && kind("floppy").is_err());
    }
}
