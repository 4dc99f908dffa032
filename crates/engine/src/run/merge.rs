//! Merging: the workers' statistics into one result per target and one for
//! the run, with the environment they ran in.

use planner::{Placement, TargetPlacement};
use results::intervals::{flag_anomalies, merge as merge_intervals};
use results::{
    AnomalyRule, CpuUsage, Environment, IntervalResult, IoStats, MismatchKind, MismatchRange,
    PhaseIo, RawHistograms, RunResult, TargetResult, VerifyResult, WorkerResult,
    RESULT_SCHEMA_VERSION,
};
use topology::CpuId;

use super::checks::CheckedTarget;
use super::options::RunOptions;
use super::spec::{JobOutput, JobSpec};
use crate::env;
use crate::stats::{Dir, WorkerStats};
use crate::worker::WorkerInterval;

/// The run's result from every worker's output (in spec order), started
/// at `started_unix_s`. Process CPU usage and interruption are the caller's
/// to fill in.
pub(super) fn merge(
    placement: &Placement,
    opts: &RunOptions,
    checked: &[CheckedTarget],
    specs: &[JobSpec],
    outputs: Vec<JobOutput>,
    started_unix_s: u64,
) -> RunResult {
    let pcts = &opts.percentiles;
    // Job files name each target's backend: one shared by all is the run's.
    let backend = match specs.first() {
        Some(s) if specs.iter().all(|t| t.backend.kind() == s.backend.kind()) => s.backend.kind(),
        _ => opts.backend,
    };
    let mut environment = env::capture(backend);
    environment.started_unix_s = started_unix_s;
    let mut all = WorkerStats::new();
    let mut targets = Vec::new();
    for (ti, t) in placement.targets.iter().enumerate() {
        let (tr, stats) = merge_target(ti, t, opts, specs, &outputs, &mut environment);
        environment
            .targets
            .push(checked[ti].info.environment(t.node, t.workload.direct));
        all.merge(&stats);
        targets.push(tr);
    }
    let run_ns = targets.iter().map(|t| t.runtime_ns).max().unwrap_or(0);
    let mut all_cpu = CpuUsage::default();
    for t in &targets {
        all_cpu.add(&t.cpu_usage);
    }
    environment.cpus_used.sort();
    let sets: Vec<&[IntervalResult]> = targets.iter().map(|t| t.intervals.as_slice()).collect();
    let mut intervals = merge_intervals(&sets, pcts);
    flag_anomalies(&mut intervals, opts.interval_ns, &AnomalyRule::default());
    RunResult {
        schema_version: RESULT_SCHEMA_VERSION,
        environment,
        policy: placement.policy.clone(),
        read: all.io_stats(Some(Dir::Read), run_ns, pcts),
        write: all.io_stats(Some(Dir::Write), run_ns, pcts),
        total: all.io_stats(None, run_ns, pcts),
        cpu_usage: all_cpu,
        process_cpu_usage: CpuUsage::default(),
        errors: all.errno_counts(),
        runtime_ns: run_ns,
        interrupted: false,
        counters: None,
        interval_ns: opts.interval_ns,
        setup_io: PhaseIo::sum(targets.iter().filter_map(|t| t.setup_io.as_ref())),
        ramp_io: PhaseIo::sum(targets.iter().filter_map(|t| t.ramp_io.as_ref())),
        intervals,
        targets,
    }
}

/// Merges the workers of target `ti` and records what they saw in `env`.
fn merge_target(
    ti: usize,
    t: &TargetPlacement,
    opts: &RunOptions,
    specs: &[JobSpec],
    outputs: &[JobOutput],
    env: &mut Environment,
) -> (TargetResult, WorkerStats) {
    let pcts = &opts.percentiles;
    let mut stats = WorkerStats::new();
    let mut cpu = CpuUsage::default();
    let mut workers = Vec::new();
    let mut runtime_ns = 0;
    let mut worker_intervals = Vec::new();
    for (spec, o) in specs.iter().zip(outputs).filter(|(s, _)| s.target == ti) {
        worker_intervals.push(o.out.intervals.iter().map(as_result).collect::<Vec<_>>());
        stats.merge(&o.out.stats);
        cpu.add(&o.out.cpu_usage);
        runtime_ns = runtime_ns.max(o.out.runtime_ns);
        workers.push(worker_result(spec, o));
        push_new(&mut env.notes, o.notes.iter().cloned());
        push_new(&mut env.uring_features, o.features.iter().cloned());
        push_new(&mut env.cpus_used, spec.cpus.iter().copied().map(CpuId));
    }
    let sets: Vec<&[IntervalResult]> = worker_intervals.iter().map(Vec::as_slice).collect();
    let mut intervals = merge_intervals(&sets, pcts);
    flag_anomalies(&mut intervals, opts.interval_ns, &AnomalyRule::default());
    let mine = || {
        specs
            .iter()
            .zip(outputs)
            .filter(move |(s, _)| s.target == ti)
    };
    let result = TargetResult {
        path: t.path.clone(),
        label: opts.labels.get(&t.path).cloned(),
        node: t.node,
        workload: t.workload.clone(),
        runtime_ns,
        read: stats.io_stats(Some(Dir::Read), runtime_ns, pcts),
        write: stats.io_stats(Some(Dir::Write), runtime_ns, pcts),
        total: stats.io_stats(None, runtime_ns, pcts),
        cpu_usage: cpu,
        errors: stats.errno_counts(),
        workers,
        histograms: stats.raw_histograms(),
        verify: verify_result(ti, t, specs, outputs),
        multipath: multipath_result(ti, specs, outputs),
        intervals,
        setup_io: PhaseIo::sum(mine().filter_map(|(_, o)| o.trial.as_ref().map(|t| &t.io))),
        ramp_io: PhaseIo::sum(mine().filter_map(|(_, o)| o.out.ramp.as_ref())),
    };
    (result, stats)
}

/// The per-path counts of target `ti`'s workers, summed by portal.
fn multipath_result(
    ti: usize,
    specs: &[JobSpec],
    outputs: &[JobOutput],
) -> Option<results::MultipathResult> {
    let mut merged: Option<results::MultipathResult> = None;
    for (_, o) in specs.iter().zip(outputs).filter(|(s, _)| s.target == ti) {
        if let Some(m) = &o.multipath {
            match &mut merged {
                Some(all) => all.add(m),
                None => merged = Some(m.clone()),
            }
        }
    }
    merged
}

/// What the verifying workers of target `ti` found, merged: counts per
/// kind, and ranges in offset order with adjacent ones of a kind joined.
fn verify_result(
    ti: usize,
    t: &TargetPlacement,
    specs: &[JobSpec],
    outputs: &[JobOutput],
) -> Option<VerifyResult> {
    let mut merged: Option<VerifyResult> = None;
    for (spec, o) in specs.iter().zip(outputs).filter(|(s, _)| s.target == ti) {
        let (Some(key), Some(log)) = (&spec.verify, &o.out.verify) else {
            continue;
        };
        let r = merged.get_or_insert_with(|| VerifyResult {
            written: t.workload.rw.writes().then_some(key.write),
            expected: (t.workload.rw != planner::RwMode::Write
                && t.workload.rw != planner::RwMode::RandWrite)
                .then_some(key.expect)
                .flatten(),
            ..VerifyResult::default()
        });
        r.checked_blocks += log.checked_blocks;
        for (kind, n) in MismatchKind::ALL.iter().zip(log.mismatched) {
            if n > 0 {
                *r.mismatched_blocks.entry(*kind).or_default() += n;
            }
        }
        r.ranges.extend_from_slice(&log.ranges);
        r.ranges_dropped += log.dropped;
        if log.stale_blocks > 0 {
            r.stale_blocks += log.stale_blocks;
            let g = r.stale_generation.get_or_insert(0);
            *g = (*g).max(log.stale_generation);
        }
        if r.written.is_some() {
            let w = r.sequence_window.get_or_insert(0);
            *w = (*w).max(log.sequence_window);
        }
    }
    let mut r = merged?;
    r.ranges.sort_by_key(|g| (g.offset_bytes, g.kind));
    let mut joined: Vec<MismatchRange> = Vec::with_capacity(r.ranges.len());
    for g in r.ranges.drain(..) {
        match joined.last_mut() {
            Some(last)
                if last.kind == g.kind && last.offset_bytes + last.len_bytes >= g.offset_bytes =>
            {
                let end = (g.offset_bytes + g.len_bytes).max(last.offset_bytes + last.len_bytes);
                last.len_bytes = end - last.offset_bytes;
            }
            _ => joined.push(g),
        }
    }
    r.ranges = joined;
    Some(r)
}

/// The record of one worker.
fn worker_result(spec: &JobSpec, o: &JobOutput) -> WorkerResult {
    WorkerResult {
        job: spec.job,
        cpu: spec.cpus.first().copied().map(CpuId),
        buffer_node: o.buffer_node.map(topology::NodeId),
        read_ops: o.out.stats.ops[0],
        write_ops: o.out.stats.ops[1],
        bytes: o.out.stats.bytes[0] + o.out.stats.bytes[1],
        error_count: o.out.stats.error_count(),
        cpu_usage: o.out.cpu_usage,
        taskrun_trial: o.trial.clone(),
        ramp: o.out.ramp,
    }
}

/// One worker's interval in the result's form, for [`merge_intervals`]
/// (which reads only its counts, CPU and per-direction histograms).
fn as_result(w: &WorkerInterval) -> IntervalResult {
    let io = |d: usize| IoStats {
        ops: w.ops[d],
        bytes: w.bytes[d],
        ..IoStats::default()
    };
    IntervalResult {
        index: w.index,
        start_ns: w.start_ns,
        end_ns: w.end_ns,
        read: io(0),
        write: io(1),
        errors: w.errors,
        cpu_usage: w.cpu_usage,
        histograms: RawHistograms {
            read: w.hist[0].clone(),
            write: w.hist[1].clone(),
            ..RawHistograms::default()
        },
        ..IntervalResult::default()
    }
}

/// Appends the items of `items` that `v` does not hold yet.
fn push_new<T: PartialEq>(v: &mut Vec<T>, items: impl Iterator<Item = T>) {
    for i in items {
        if !v.contains(&i) {
            v.push(i);
        }
    }
}
