//! `--backend vfio` on controllers the kernel still owns, for bench and
//! compare: `session::vfio_run` binds each `pci:` target's controller for
//! the run and gives it back (at the end, on error, on a signal; after
//! `kill -9`, `numio vfio restore`).

use std::path::Path;

/// The controllers bound for this run; dropping gives them back.
pub struct ForRun(session::vfio_run::ForRun);

impl ForRun {
    /// Nothing bound (another backend).
    pub fn none() -> ForRun {
        ForRun(session::vfio_run::ForRun::none())
    }

    /// Gives every controller back now (drop does it silently).
    pub fn give_back(self) -> anyhow::Result<()> {
        Ok(self.0.give_back()?)
    }
}

/// Binds the controllers of the `pci:` targets among `targets` for a run
/// of `command`.
pub fn take(
    targets: &[String],
    force: bool,
    allow_noiommu: bool,
    command: &str,
) -> anyhow::Result<ForRun> {
    let root = Path::new("/");
    let run = session::vfio_run::ForRun::take(root, targets, force, allow_noiommu, command)?;
    Ok(ForRun(run))
}
