//! `Topology::discover`: reading a sysfs/procfs root into the model.

use std::path::Path;

use crate::error::TopologyError;
use crate::model::{NvmeParams, Topology, SCHEMA_VERSION};
use crate::parse::{parse_bool, parse_num};
use crate::reader::Reader;
use crate::recording::{manifest_unreadable, Recording};
use crate::source::Source;

mod cpus;
pub(crate) use cpus::online_cpus;
pub(crate) mod dirs;
mod irq;
mod nodes;
mod nvme;

impl Topology {
    /// Reads the sysfs/procfs tree under `root` (`/` for this machine, or a
    /// snapshot directory).
    ///
    /// A machine without NVMe is not an error; files that exist but cannot be
    /// read are listed in [`Topology::unreadable`]. Errors: `root` missing,
    /// not a sysfs root (the missing file is named), or a snapshot of another
    /// schema version.
    pub fn discover(root: &Path) -> Result<Topology, TopologyError> {
        Self::discover_recorded(root).map(|(topology, _)| topology)
    }

    /// Like [`Topology::discover`], also returning every path it read, for
    /// [`Recording::save`].
    pub fn discover_recorded(root: &Path) -> Result<(Topology, Recording), TopologyError> {
        if !root.exists() {
            return Err(TopologyError::RootMissing {
                path: root.to_path_buf(),
            });
        }
        if !root.is_dir() {
            return Err(TopologyError::NotASnapshot {
                path: root.to_path_buf(),
            });
        }
        discover_source(Source::Dir(root.to_path_buf()))
    }
}

/// Discovery over any source.
pub(crate) fn discover_source(source: Source) -> Result<(Topology, Recording), TopologyError> {
    let preset = manifest_unreadable(&source)?;
    let mut r = Reader::new(source, preset);
    let (nodes, cpus) = cpus::discover(&mut r)?;
    let irqs = irq::discover(&mut r);
    let (controllers, subsystems) = nvme::discover(&mut r, &irqs);
    let nvme_params = read_params(&mut r);
    masks_note(&mut r);
    let mut unreadable = r.unreadable.clone();
    unreadable.sort_by(|a, b| a.path.cmp(&b.path));
    let notes = r.notes.clone();
    let topology = Topology {
        schema_version: SCHEMA_VERSION,
        nodes,
        cpus,
        controllers,
        subsystems,
        nvme_params,
        unreadable,
        interrupt_cpus: irqs.columns,
        notes,
    };
    Ok((topology, Recording::from_reader(r)))
}

/// One note for every CPU list file that was missing and read as a mask.
fn masks_note(r: &mut Reader) {
    let Some(first) = r.masks_read.first().cloned() else {
        return;
    };
    let mut kinds: Vec<&str> = r
        .masks_read
        .iter()
        .map(|p| p.rsplit('/').next().unwrap_or(p))
        .collect();
    kinds.sort_unstable();
    kinds.dedup();
    let message = format!(
        "{} CPU list file(s) are missing: older kernels write these CPU sets only as hex masks; numio read the masks beside them (cpumap, local_cpus, thread_siblings, effective_affinity, smp_affinity) instead",
        r.masks_read.len()
    );
    let value = format!("missing ({})", kinds.join(", "));
    r.note("cpu-lists-missing", &first, value, message);
}

fn read_params(r: &mut Reader) -> NvmeParams {
    NvmeParams {
        poll_queues: r.parse("sys/module/nvme/parameters/poll_queues", parse_num::<u32>),
        iopolicy: r.read_trimmed("sys/module/nvme_core/parameters/iopolicy"),
        multipath: r.parse("sys/module/nvme_core/parameters/multipath", parse_bool),
    }
}
