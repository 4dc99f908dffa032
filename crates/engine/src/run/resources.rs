//! One worker's resources, owned for its whole run: its spec, its open
//! target and its buffers, and the loop over them on any backend.

use std::os::fd::RawFd;

use super::build::{Built, Setup};
use super::control::{Control, StartGate};
use super::spec::JobSpec;
use crate::backend::Backend;
use crate::error::EngineError;
use crate::gen::IoGen;
use crate::progress::WorkerProgress;
use crate::sys::NodeBuffer;
use crate::worker::{LoopConfig, LoopLimits, LoopOutput, VerifyKey, WorkerLoop};

/// Seed of the verify blocks of a target without a saved verify state.
pub const VERIFY_SEED: u64 = 0x6e75_6d69_6f76_6572;

/// The worker's resources.
pub(super) struct Resources<'a> {
    /// What the worker runs.
    pub spec: &'a JobSpec,
    /// The open target (-1 for tcp).
    pub fd: RawFd,
    /// Its buffers: `depth` slots of `slot_bytes`.
    pub buf: &'a NodeBuffer,
    /// Bytes of one slot.
    pub slot_bytes: usize,
    /// The run's barrier and flags.
    pub ctl: &'a Control,
    /// Where the worker publishes progress.
    pub progress: &'a WorkerProgress,
}

/// What a worker's measured loop left: its output and what its backend
/// set up.
pub(super) struct Ran {
    /// The loop's statistics.
    pub out: LoopOutput,
    /// Set-up features the backend was granted.
    pub features: Vec<String>,
    /// The backend's notes.
    pub notes: Vec<String>,
    /// A multipath backend's per-path counts.
    pub multipath: Option<results::MultipathResult>,
}

impl<'a> Resources<'a> {
    /// What the backend constructors build on.
    pub fn setup(&self) -> Setup<'a> {
        Setup {
            path: &self.spec.path,
            fd: self.fd,
            depth: self.spec.workload.iodepth as usize,
            region: (self.buf.as_ptr(), self.buf.len_bytes()),
            slot_bytes: self.slot_bytes,
        }
    }

    /// This worker's loop over backend `b`, running workload `w` (the job's,
    /// or a trial's) within `limits`, publishing to `progress`.
    pub fn worker_loop<'p, B: Backend>(
        &self,
        b: B,
        w: &planner::Workload,
        verify: Option<VerifyKey>,
        limits: LoopLimits,
        progress: &'p WorkerProgress,
    ) -> WorkerLoop<'p, B>
    where
        'a: 'p,
    {
        let region = &self.spec.region;
        let gen = IoGen::new(
            w,
            region.start_bytes,
            region.len_bytes,
            region.align_bytes,
            self.spec.job,
        );
        let config = LoopConfig {
            depth: w.iodepth as usize,
            buf_base: self.buf.as_ptr(),
            slot_bytes: self.slot_bytes,
            verify,
            limits,
            stop: &self.ctl.stop,
            progress,
        };
        WorkerLoop::new(b, gen, config)
    }

    /// A failure of this worker's backend (`what`: its set-up or loop).
    pub fn backend_error(&self, what: &str, source: std::io::Error) -> EngineError {
        EngineError::Backend {
            backend: self.spec.backend.kind().name(),
            path: self.spec.path.clone(),
            what: what.into(),
            source,
        }
    }

    /// Waits for every worker to be ready, then runs the job's measured
    /// loop on the backend `built`.
    pub fn run<B: Backend>(
        &self,
        built: Built<B>,
        gate: &mut StartGate<'_>,
    ) -> Result<Ran, EngineError> {
        let spec = self.spec;
        let wl = self.worker_loop(
            built.backend,
            &spec.workload,
            spec.verify,
            spec.limits,
            self.progress,
        );
        if !gate.pass() {
            return Err(EngineError::Aborted);
        }
        let out = wl.run().map_err(|e| self.backend_error("I/O loop", e))?;
        let mut notes = built.notes;
        if let Some(e) = &out.failure {
            notes.push(format!(
                "job {} of {}: the I/O loop ended early: {e}; its I/Os in flight count as errors",
                spec.job, spec.path
            ));
        }
        // The loop dropped the backend: the vfio one left its controller's
        // error log after failed I/Os, a multipath one its counts.
        if let Some(end) = &built.end_notes {
            notes.extend(
                end.lock()
                    .map(|mut n| std::mem::take(&mut *n))
                    .unwrap_or_default(),
            );
        }
        let multipath = built
            .paths
            .and_then(|r| r.lock().ok().and_then(|mut g| g.take()));
        Ok(Ran {
            out,
            features: built.features,
            notes,
            multipath,
        })
    }
}
