//! One worker's thread, start to end: pin it, open the target, allocate
//! NUMA-local buffers, build its backend from its [`BackendSpec`], pass
//! the start barrier, run the measured loop, hand back what it measured.

use std::os::fd::AsRawFd;

use super::build;
use super::control::{Control, StartGate};
use super::resources::{Ran, Resources};
use super::spec::{BackendSpec, JobOutput, JobSpec};
use super::trial;
use crate::error::EngineError;
use crate::gen::Rng;
use crate::progress::WorkerProgress;
use crate::sys::NodeBuffer;
use crate::targets;

/// The body of worker thread `spec`: on failure it aborts the run, and it
/// always marks its progress finished.
pub(super) fn worker_main(
    spec: &JobSpec,
    ctl: &Control,
    progress: &WorkerProgress,
) -> Result<JobOutput, EngineError> {
    let r = setup_and_run(spec, ctl, progress);
    if r.is_err() {
        ctl.abort();
    }
    progress.finish();
    r
}

fn setup_and_run(
    spec: &JobSpec,
    ctl: &Control,
    progress: &WorkerProgress,
) -> Result<JobOutput, EngineError> {
    let mut gate = StartGate::new(ctl);
    let mut notes = Vec::new();
    if !spec.cpus.is_empty() {
        if let Err(e) = sysapi::affinity::pin_current_thread(&spec.cpus) {
            notes.push(format!(
                "job {} of {}: pinning to CPUs {:?} failed ({e}); unpinned",
                spec.job, spec.path, spec.cpus
            ));
        }
    }
    let w = &spec.workload;
    // An NVMe/TCP target is a connection, not a file.
    let file = if spec.backend.opens_file() {
        Some(targets::open(&spec.path, w.rw.writes(), w.direct)?)
    } else {
        None
    };
    let slot_bytes = (w.bs_max_bytes as usize).div_ceil(4096) * 4096;
    let depth = w.iodepth as usize;
    // numio's own NVMe driver maps the buffers into the IOMMU: on
    // hugepages where there are, in few large entries.
    let (buf, note) = if spec.backend.wants_hugepages() {
        NodeBuffer::new_hugepages(slot_bytes * depth, spec.node)
    } else {
        NodeBuffer::new(slot_bytes * depth, spec.node)
    }
    .map_err(|source| EngineError::Buffers {
        bytes: slot_bytes * depth,
        source,
    })?;
    notes.extend(note);
    if spec.verify.is_none() {
        fill_random(&buf, w.randseed ^ u64::from(spec.job));
    }
    let res = Resources {
        spec,
        fd: file.as_ref().map_or(-1, |f| f.as_raw_fd()),
        buf: &buf,
        slot_bytes,
        ctl,
        progress,
    };
    let (ran, trial) = build_and_run(&res, &mut gate)?;
    let multipath = ran.multipath;
    // The backend (and its ring) is gone; now the file and buffers may go.
    drop(file);
    notes.extend(ran.notes);
    let mut features = ran.features;
    if buf.hugepages() {
        features.push("buffers on 2 MiB hugepages".into());
    }
    Ok(JobOutput {
        out: ran.out,
        buffer_node: buf.node(),
        features,
        notes,
        trial,
        multipath,
    })
}

/// The node a multipath worker's numa policy looks for: its first CPU's,
/// else its buffers'.
fn worker_node(spec: &super::spec::JobSpec) -> Option<u32> {
    spec.cpus
        .first()
        .and_then(|&c| {
            let root = std::path::Path::new(targets::SYS_ROOT);
            topology::host::cpu_node(root, topology::CpuId(c))
                .ok()
                .flatten()
        })
        .map(|n| n.0)
        .or(spec.node)
}

/// Builds the job's backend by its own constructor and runs the measured
/// loop on it; a uring job may first settle its task-run mode by a trial
/// (returned beside the run).
fn build_and_run(
    res: &Resources<'_>,
    gate: &mut StartGate<'_>,
) -> Result<(Ran, Option<results::TaskrunTrial>), EngineError> {
    let s = res.setup();
    let mut trial = None;
    let ran = match &res.spec.backend {
        BackendSpec::Null => res.run(build::null(&s), gate)?,
        BackendSpec::Sync => res.run(build::sync(&s), gate)?,
        BackendSpec::Uring(uring) => {
            let (uring, settled) = trial::settle(uring, res)?;
            trial = settled;
            res.run(build::uring(&s, &uring, false)?, gate)?
        }
        BackendSpec::Nop(uring) => res.run(build::uring(&s, uring, true)?, gate)?,
        BackendSpec::Passthru { ns, uring } => res.run(build::passthru(&s, *ns, uring)?, gate)?,
        BackendSpec::Tcp {
            target,
            lba_bytes,
            opts,
        } if !target.portals.is_empty() => {
            let node = worker_node(res.spec);
            res.run(
                build::tcp_multipath(&s, target, *lba_bytes, opts, node)?,
                gate,
            )?
        }
        BackendSpec::Tcp {
            target,
            lba_bytes,
            opts,
        } => res.run(build::tcp(&s, target, *lba_bytes, opts)?, gate)?,
        BackendSpec::Rdma {
            target,
            lba_bytes,
            opts,
        } => {
            let node = worker_node(res.spec);
            res.run(build::rdma(&s, target, *lba_bytes, opts, node)?, gate)?
        }
        BackendSpec::Vfio {
            ns,
            lba_bytes,
            opts,
        } => {
            let node = res.spec.node.or(ns.node);
            res.run(build::vfio(&s, ns, *lba_bytes, opts, node)?, gate)?
        }
    };
    Ok((ran, trial))
}

/// Fills the buffers with incompressible bytes so written data is not all
/// zeroes (which zram and some SSDs would short-cut).
fn fill_random(buf: &NodeBuffer, seed: u64) {
    let mut rng = Rng::new(seed);
    // SAFETY: the buffer is ours and no I/O has been issued from it yet.
    let words =
        unsafe { std::slice::from_raw_parts_mut(buf.as_ptr().cast::<u64>(), buf.len_bytes() / 8) };
    for w in words {
        *w = rng.next_u64();
    }
}
