//! `backend=` arms of `numio compare`: one NVMe drive through several
//! engine backends, each by its own path to it: `vfio` drives the PCI
//! controller with numio's own driver (`pci:ADDR/NSID`), `passthru` the
//! namespace's generic device (`/dev/ngXnY`), `uring` and `sync` its block
//! device (`/dev/nvmeXnY`). The drive is named once, in any of these forms;
//! each arm's target is derived from the topology while the kernel owns
//! the drive. A `vfio` run binds the controller to vfio-pci for that run
//! and gives it back before the next (see [`BackendRunner`]), so the arms
//! interleave A B A B … on one drive.

use std::sync::atomic::AtomicBool;

use anyhow::{bail, Context};
use engine::{BackendKind, RunOptions};
use results::RunResult;
use session::schedule::BoxError;
use session::{Event, LiveArm, LocalRunner, RunInfo, Runner};
use topology::Topology;

use super::bench::bench_vfio;

/// The namespace of drive `target` (`pci:ADDR[/NSID]`, `/dev/nvmeXnY`,
/// `/dev/ngXnY` or `nvmeXnY`) as `topo` knows it: (PCI address, nsid,
/// block device, generic device).
fn drive(target: &str, topo: &Topology) -> anyhow::Result<(String, u32, String, Option<String>)> {
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
        let Some(ns) = ns else {
            bail!(
                "{target}: the kernel shows no namespace{} of the controller {addr}; backend= arms need the drive on the nvme driver when compare starts (numio vfio unbind {addr})",
                nsid.map_or(String::new(), |n| format!(" {n}"))
            );
        };
        return Ok((
            addr,
            ns.nsid,
            ns.block_device.clone(),
            ns.generic_device.clone(),
        ));
    }
    let name = target.strip_prefix("/dev/").unwrap_or(target);
    let ns = namespaces
        .clone()
        .find(|n| n.block_device == name || n.generic_device.as_deref() == Some(name))
        .with_context(|| {
            format!("{target}: not an NVMe namespace of this machine; backend= arms take one drive as pci:ADDR[/NSID], /dev/nvmeXnY or /dev/ngXnY")
        })?;
    let Some(addr) = ctrl_of(ns).as_deref().and_then(pcie) else {
        bail!(
            "{target}: a namespace with several paths, or of a fabrics controller; backend= arms need a namespace of one PCIe controller"
        );
    };
    Ok((
        addr,
        ns.nsid,
        ns.block_device.clone(),
        ns.generic_device.clone(),
    ))
}

/// The target of the `backend` arm for drive `target`.
pub fn arm_target(target: &str, backend: &str, topo: &Topology) -> anyhow::Result<String> {
    let (addr, nsid, block, generic) = drive(target, topo)?;
    Ok(match backend {
        "vfio" => format!("pci:{addr}/{nsid}"),
        "passthru" => match generic {
            Some(ng) => format!("/dev/{ng}"),
            None => bail!(
                "{target}: namespace {nsid} of {addr} has no generic device (/dev/ngXnY, Linux ≥ 5.13) for the passthru arm"
            ),
        },
        _ => format!("/dev/{block}"),
    })
}

/// The engine backend a `backend=` arm names.
pub fn kind(name: &str) -> anyhow::Result<BackendKind> {
    name.parse::<BackendKind>()
        .map_err(|e| anyhow::anyhow!("backend={name}: {e}"))
}

/// Runs each arm on this machine ([`LocalRunner`]); a `vfio` arm's
/// controllers go to vfio-pci for its run only.
pub struct BackendRunner {
    /// `--force-unbind`.
    pub force_unbind: bool,
    /// `--allow-noiommu`.
    pub allow_noiommu: bool,
}

impl Runner for BackendRunner {
    fn run(
        &mut self,
        arm: &LiveArm,
        opts: &RunOptions,
        run: RunInfo,
        interrupt: &AtomicBool,
        observer: &mut dyn FnMut(&Event<'_>),
    ) -> Result<RunResult, BoxError> {
        let bound = if opts.backend == BackendKind::Vfio {
            let targets: Vec<String> = arm
                .placement
                .targets
                .iter()
                .map(|t| t.path.clone())
                .collect();
            bench_vfio::take(
                &targets,
                self.force_unbind,
                self.allow_noiommu,
                "numio compare",
            )
            .map_err(|e| BoxError::from(format!("{e:#}")))?
        } else {
            wait_for_paths(&arm.placement, interrupt).map_err(BoxError::from)?;
            bench_vfio::ForRun::none()
        };
        let result = LocalRunner.run(arm, opts, run, interrupt, observer);
        bound
            .give_back()
            .map_err(|e| BoxError::from(format!("{e:#}")))?;
        result
    }
}

/// How long a kernel arm waits for its device nodes after a `vfio` run gave
/// the controller back (the nvme driver adds namespaces, then their
/// generic devices, after the controller).
const DEVICE_WAIT: std::time::Duration = std::time::Duration::from_secs(15);

/// Waits until every target of `placement` under `/dev` exists (the event:
/// the kernel made its node), for at most [`DEVICE_WAIT`].
fn wait_for_paths(placement: &planner::Placement, interrupt: &AtomicBool) -> Result<(), String> {
    let until = std::time::Instant::now() + DEVICE_WAIT;
    for t in placement
        .targets
        .iter()
        .filter(|t| t.path.starts_with("/dev/"))
    {
        while !std::path::Path::new(&t.path).exists() {
            if std::time::Instant::now() > until
                || interrupt.load(std::sync::atomic::Ordering::Relaxed)
            {
                return Err(format!(
                    "{} did not come back within {} s after the controller was given back to the kernel; `numio vfio status` shows where it is",
                    t.path,
                    DEVICE_WAIT.as_secs()
                ));
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
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
