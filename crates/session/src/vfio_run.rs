//! `--backend vfio` on controllers the kernel still owns: each `pci:`
//! target's controller goes to vfio-pci for the run (`tune::vfio::Binding`,
//! which refuses a drive in use unless `--force-unbind`) and comes back to
//! its driver at the end, on error, on Ctrl-C or SIGTERM (a second signal
//! gives it back from the signal thread before numio exits:
//! [`crate::interrupt::on_second_signal`]) and, after `kill -9`, through
//! `numio vfio restore`. A controller already on vfio-pci is used as it
//! is and left there.

use std::path::Path;

use engine::backend::vfio::target::PciAddressError;
use tune::vfio::{Binding, TakeOptions};
use tune::TuneError;

use crate::interrupt::{self, ExitHook};

/// Why the controllers of a run could not be taken or given back.
#[derive(Debug, thiserror::Error)]
pub enum VfioRunError {
    /// A `pci:` target whose address is not one.
    #[error(transparent)]
    Target(#[from] PciAddressError),
    /// A controller whose namespaces are in use.
    #[error("{device} is in use: {found}; numio does not take a drive in use away from the kernel: stop using it, or pass --force-unbind to take it for the run anyway (whatever uses it loses its device until the run ends)")]
    InUse {
        /// The PCI address.
        device: String,
        /// What was found.
        found: String,
    },
    /// Taking a controller failed.
    #[error(transparent)]
    Take(#[from] TuneError),
    /// Giving a controller back failed.
    #[error("giving {addr} back to the kernel")]
    GiveBack {
        /// The PCI address.
        addr: String,
        /// Why.
        source: Box<TuneError>,
    },
}

/// The controllers bound for a run; dropping gives them back.
pub struct ForRun {
    bindings: Vec<Binding>,
    _hook: Option<ExitHook>,
}

impl ForRun {
    /// Nothing bound (another backend).
    pub fn none() -> ForRun {
        ForRun {
            bindings: Vec::new(),
            _hook: None,
        }
    }

    /// Binds, under `root`, the controllers of the `pci:` targets among
    /// `targets` for a run of `command`; all or none.
    pub fn take(
        root: &Path,
        targets: &[String],
        force: bool,
        allow_noiommu: bool,
        command: &str,
    ) -> Result<ForRun, VfioRunError> {
        let mut addrs: Vec<String> = Vec::new();
        for t in targets {
            if let Some(parsed) = engine::backend::vfio::target::parse(t) {
                let (addr, _) = parsed?;
                if !addrs.contains(&addr) {
                    addrs.push(addr);
                }
            }
        }
        if addrs.is_empty() {
            return Ok(ForRun::none());
        }
        let opts = TakeOptions {
            force,
            allow_noiommu,
            stop: Some(interrupt::flag()),
            command: command.to_string(),
            ..TakeOptions::default()
        };
        let mut bindings = Vec::new();
        for addr in &addrs {
            // An error drops the ones already taken: they go back.
            match Binding::take(root, addr, &opts) {
                Ok(b) => bindings.push(b),
                Err(TuneError::InUse { device, found }) => {
                    return Err(VfioRunError::InUse { device, found })
                }
                Err(e) => return Err(e.into()),
            }
        }
        if !bindings.iter().any(Binding::noiommu) {
            load_type1(root);
        }
        let restorers: Vec<_> = bindings.iter().map(Binding::restorer).collect();
        let hook = interrupt::on_second_signal(move || {
            for r in &restorers {
                if let Err(e) = r.restore() {
                    eprintln!("numio: {e}");
                }
            }
        });
        Ok(ForRun {
            bindings,
            _hook: Some(hook),
        })
    }

    /// Gives every controller back now, reporting a failure (drop does
    /// the same silently).
    pub fn give_back(mut self) -> Result<(), VfioRunError> {
        for b in self.bindings.drain(..) {
            let addr = b.addr().to_string();
            b.give_back().map_err(|e| VfioRunError::GiveBack {
                addr,
                source: Box::new(e),
            })?;
        }
        Ok(())
    }
}

/// Loads the type-1 IOMMU driver of VFIO when it is missing (best effort:
/// the driver's open names it when it is still missing).
fn load_type1(root: &Path) {
    let loaded = topology::pci::vfio_modules(root).is_ok_and(|m| m.vfio_iommu_type1);
    if !loaded {
        let _ = std::process::Command::new("modprobe")
            .arg("vfio_iommu_type1")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_that_name_no_controller_bind_nothing() {
        let run = ForRun::take(
            Path::new("/nonexistent"),
            &[
                "/dev/nvme0n1".to_string(),
                "nvme-tcp://10.0.0.1/nqn.x".to_string(),
            ],
            false,
            false,
            "test",
        )
        .unwrap();
        assert!(run.bindings.is_empty());
        run.give_back().unwrap();
        let e = VfioRunError::InUse {
            device: "0000:02:00.0".into(),
            found: "/dev/nvme0n1 is mounted on /".into(),
        }
        .to_string();
        assert!(
            e.contains("--force-unbind to take it for the run anyway"),
            "{e}"
        );
    }
}
