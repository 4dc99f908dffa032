//! The task-run trial: which of DEFER_TASKRUN and COOP_TASKRUN serves a
//! target faster, settled by measuring it before the run.
//!
//! Which mode wins depends on where a target's completions come from, not
//! on the kernel alone: reads punted to io-wq (zram) want DEFER_TASKRUN,
//! which wakes the waiter once per batch instead of once per completion,
//! while completions from a helper thread on the same CPU (a loop device's
//! kworker and ksoftirqd) ran up to a fifth faster with COOP_TASKRUN on
//! this project's test machine. So the worker runs its own workload on each
//! for four 100 ms slices (DEFER, COOP, COOP, DEFER, so a drift cancels),
//! keeps the faster, and says so in a note.

use results::{PhaseIo, TaskrunTrial, UringSetup};

use super::build;
use super::resources::Resources;
use super::spec::JobSpec;
use crate::backend::UringOptions;
use crate::error::EngineError;
use crate::progress::WorkerProgress;
use crate::worker::LoopLimits;

/// Length of one slice of the trial; the trial runs four.
const TRIAL_SLICE_NS: u64 = 100_000_000;

/// The set-up a uring job runs with: `uring` as asked, or where a trial
/// applies ([`applies`]) and the kernel grants both modes, the faster one,
/// with the trial (the result's `taskrun_trial`; a set-up choice, not a
/// note on every run).
pub(super) fn settle(
    uring: &UringOptions,
    r: &Resources<'_>,
) -> Result<(UringOptions, Option<TaskrunTrial>), EngineError> {
    let mut uring = uring.clone();
    if !applies(r.spec, &uring) {
        return Ok((uring, None));
    }
    let Some(t) = run_trial(&uring, r)? else {
        return Ok((uring, None));
    };
    uring.setup = t.chosen;
    Ok((uring, Some(t)))
}

/// Whether an `auto` io_uring set-up is settled by a trial: I/O on a ring
/// of our own (not NOP, SQPOLL or IOPOLL, where task work does not decide
/// the rate), no verify pattern (the trial's writes would break it), no
/// rate cap (the rates would tie), only in a time-based run: a benchmark,
/// where 0.4 s more of the same reads is what the user asked for anyway (a
/// run bounded by size or I/O count gets exactly those I/Os, and the usual
/// fallback chain), only for workloads that do not write (a write is never
/// issued unasked: preconditioning, endurance and write-amplification work
/// count every one), and only with O_DIRECT (buffered, the trial would
/// warm the page cache for the measured run). The reads it does issue are
/// reported as the run's set-up I/O.
fn applies(spec: &JobSpec, uring: &UringOptions) -> bool {
    let w = &spec.workload;
    uring.setup == UringSetup::Auto
        && uring.sqpoll_idle_ms.is_none()
        && !uring.iopoll
        && spec.verify.is_none()
        && spec.limits.rate_iops.is_none()
        && w.time_based
        && !w.rw.writes()
        && w.direct
}

/// Runs the trial's four slices. Where the kernel does not grant both
/// modes there is nothing to choose: `None`, and the usual fallback chain
/// decides.
fn run_trial(uring: &UringOptions, r: &Resources<'_>) -> Result<Option<TaskrunTrial>, EngineError> {
    let order = [
        UringSetup::DeferTaskrun,
        UringSetup::CoopTaskrun,
        UringSetup::CoopTaskrun,
        UringSetup::DeferTaskrun,
    ];
    let mut ops = [0u64; 2];
    let mut ns = [0u64; 2];
    let mut io = PhaseIo::default();
    // Where the kernel refuses one of the two there is nothing to choose
    // between: known before any I/O, so a trial never issues I/O it does
    // not report.
    for setup in [UringSetup::DeferTaskrun, UringSetup::CoopTaskrun] {
        if !granted(uring, setup, r)? {
            return Ok(None);
        }
    }
    for (slice, setup) in order.into_iter().enumerate() {
        let Some((slice_io, slice_ns)) = run_slice(uring, setup, slice, r)? else {
            // Granted a moment ago: refused now only if the kernel's limits
            // changed under us; the I/O so far is still the set-up's.
            return Ok(None);
        };
        let slice_ops = slice_io.reads + slice_io.writes;
        io.add(&PhaseIo {
            time_ns: io.time_ns + slice_io.time_ns,
            ..slice_io
        });
        let i = usize::from(setup == UringSetup::CoopTaskrun);
        ops[i] += slice_ops;
        ns[i] += slice_ns;
    }
    let rate = |i: usize| ops[i] as f64 * 1e9 / ns[i].max(1) as f64;
    let (defer, coop) = (rate(0), rate(1));
    Ok(Some(TaskrunTrial {
        chosen: if coop > defer {
            UringSetup::CoopTaskrun
        } else {
            UringSetup::DeferTaskrun
        },
        defer_taskrun_iops: defer,
        coop_taskrun_iops: coop,
        trial_ns: order.len() as u64 * TRIAL_SLICE_NS,
        io,
    }))
}

/// Whether the kernel grants a ring set up as `setup` (one made and
/// dropped, no I/O).
fn granted(
    uring: &UringOptions,
    setup: UringSetup,
    r: &Resources<'_>,
) -> Result<bool, EngineError> {
    let opts = UringOptions {
        setup,
        ..uring.clone()
    };
    let b = build::trial_uring(&r.setup(), &opts)?;
    Ok(b.features
        .iter()
        .any(|f| Some(f.as_str()) == setup.taskrun_flag()))
}

/// One slice (`slice`-th) of the trial on a ring set up as `setup`: the
/// I/Os it completed and the time it measured, or `None` where the kernel
/// did not grant `setup`.
fn run_slice(
    uring: &UringOptions,
    setup: UringSetup,
    slice: usize,
    r: &Resources<'_>,
) -> Result<Option<(PhaseIo, u64)>, EngineError> {
    let w = &r.spec.workload;
    // Each slice draws its own offsets, none of them the measured run's.
    let mut tw = w.clone();
    tw.randseed = w.randseed ^ 0x7472_6961_6c00_0000 ^ (slice as u64 + 1);
    let opts = UringOptions {
        setup,
        ..uring.clone()
    };
    let b = build::trial_uring(&r.setup(), &opts)?;
    if !b
        .features
        .iter()
        .any(|f| Some(f.as_str()) == setup.taskrun_flag())
    {
        return Ok(None);
    }
    let limits = LoopLimits {
        ramp_ns: 0,
        runtime_ns: Some(TRIAL_SLICE_NS),
        max_ios: u64::MAX,
        max_bytes: u64::MAX,
        rate_iops: None,
        batch_complete_min: r.spec.limits.batch_complete_min,
        interval_ns: None,
    };
    let progress = WorkerProgress::default();
    let out = r
        .worker_loop(b.backend, &tw, None, limits, &progress)
        .run()
        .map_err(|e| r.backend_error("I/O loop (task-run trial)", e))?;
    if let Some(e) = out.failure {
        return Err(r.backend_error("I/O loop (task-run trial)", e));
    }
    let io = PhaseIo {
        reads: out.stats.ops[0],
        writes: out.stats.ops[1],
        bytes: out.stats.bytes[0] + out.stats.bytes[1],
        errors: out.stats.error_count(),
        time_ns: out.runtime_ns,
    };
    Ok(Some((io, out.runtime_ns)))
}
