//! The human view of one bench run (`numio bench`, and `numio report` of
//! a `numio bench --json` file): the report per target and in total. The
//! JSON carries everything it shows; `tests/golden.rs` holds it to a
//! golden file.

use std::fmt::Write;

use planner::Placement;
use results::{IoStats, LatencySummary, RunResult, TargetResult};

use crate::format::{bandwidth, latency, si};

fn workload_line(t: &TargetResult) -> String {
    let w = &t.workload;
    let bs = if w.bs_min_bytes == w.bs_max_bytes {
        format!("{}", w.bs_min_bytes)
    } else {
        format!("{}-{}", w.bs_min_bytes, w.bs_max_bytes)
    };
    let mut s = format!(
        "{} bs={bs} iodepth={} jobs={} {}",
        w.rw.fio_name(),
        w.iodepth,
        t.workers.len(),
        if w.direct { "direct" } else { "buffered" }
    );
    if w.rw.writes() && w.rw != planner::RwMode::Write && w.rw != planner::RwMode::RandWrite {
        let _ = write!(s, " rwmixread={}", w.rwmixread);
    }
    s
}

fn lat_line(out: &mut String, name: &str, l: &LatencySummary) {
    if l.samples == 0 {
        return;
    }
    let _ = write!(
        out,
        "      {name:<4} min {:>8}  mean {:>8}  stdev {:>8}  max {:>8}\n           ",
        latency(l.min_ns as f64),
        latency(l.mean_ns),
        latency(l.stdev_ns),
        latency(l.max_ns as f64)
    );
    for p in &l.percentiles {
        let _ = write!(out, " p{}={}", p.percentile, latency(p.latency_ns as f64));
    }
    out.push('\n');
}

fn io_block(out: &mut String, name: &str, s: &IoStats) {
    if s.ops == 0 {
        return;
    }
    let _ = writeln!(
        out,
        "  {name:<6} IOPS {:>8}  BW {:>12}  ({} I/Os, {:.2} GiB)",
        si(s.iops),
        bandwidth(s.bandwidth_bytes_per_s),
        s.ops,
        s.bytes as f64 / (1u64 << 30) as f64
    );
    lat_line(out, "slat", &s.latency.slat);
    lat_line(out, "clat", &s.latency.clat);
    lat_line(out, "lat", &s.latency.lat);
}

fn target_block(
    out: &mut String,
    r: &RunResult,
    t: &TargetResult,
    placement: &Placement,
    verbose: bool,
) {
    let _ = writeln!(out, "\ntarget {}", t.path);
    if let Some(l) = &t.label {
        let _ = writeln!(out, "  ({l})");
    }
    let cpus: Vec<String> = t
        .workers
        .iter()
        .map(|w| w.cpu.map_or("-".into(), |c| c.0.to_string()))
        .collect();
    let node = t.node.map_or("unknown".into(), |n| n.0.to_string());
    let _ = writeln!(
        out,
        "  {}  node {node}  CPUs {}  measured {:.2}s",
        workload_line(t),
        cpus.join(","),
        t.runtime_ns as f64 / 1e9
    );
    if let Some(pt) = placement.targets.iter().find(|p| p.path == t.path) {
        for n in &pt.notes {
            let _ = writeln!(out, "  note: {n}");
        }
    }
    crate::intervals::phase_lines(out, "  ", t.setup_io.as_ref(), t.ramp_io.as_ref());
    crate::intervals::summary_lines(out, "  ", &t.intervals, r.interval_ns);
    if verbose {
        for w in &t.workers {
            if let Some(tr) = &w.taskrun_trial {
                let _ = writeln!(out, "  {}", trial_line(w.job, tr));
            }
        }
    }
    io_block(out, "read", &t.read);
    io_block(out, "write", &t.write);
    let c = &t.cpu_usage;
    let _ = writeln!(
        out,
        "  cpu    usr {:.1}%  sys {:.1}%  ctx {} voluntary / {} involuntary  ({} IOPS per CPU-second)",
        c.user_percent(),
        c.system_percent(),
        c.voluntary_ctx_switches,
        c.involuntary_ctx_switches,
        si(per_cpu_s(t.total.ops, c.user_ns + c.system_ns))
    );
    if let Some(i) = r.targets.iter().position(|x| x.path == t.path) {
        per_io_line(out, r, i);
    }
    errors_line(out, &t.errors);
    if let Some(v) = &t.verify {
        verify_lines(out, v);
    }
    if let Some(m) = &t.multipath {
        path_lines(out, m);
    }
}

/// A multipath target's paths: what each carried and what happened to it.
fn path_lines(out: &mut String, m: &results::MultipathResult) {
    let _ = writeln!(out, "  multipath  iopolicy {}", m.policy);
    for p in &m.paths {
        let _ = writeln!(
            out,
            "    path {:<22} {:<14} ios {:>10}  {:>9.3} GiB  retries {}  failovers {}  reconnects {}  state changes {}",
            p.portal,
            p.state,
            p.ios,
            p.bytes as f64 / (1u64 << 30) as f64,
            p.retries,
            p.failovers,
            p.reconnects,
            p.state_changes
        );
    }
}

/// Ranges of mismatched blocks the text report lists (all are in --json).
const RANGES_SHOWN: usize = 10;

/// What verify found: blocks checked, mismatches by kind, and where (the
/// first [`RANGES_SHOWN`] ranges).
pub fn verify_lines(out: &mut String, v: &results::VerifyResult) {
    let gen =
        |s: Option<results::VerifyStamp>| s.map_or("any".to_string(), |s| s.generation.to_string());
    let _ = write!(out, "  verify {} blocks of 512 B checked", v.checked_blocks);
    if let Some(w) = v.written {
        let _ = write!(out, ", wrote generation {}", w.generation);
    }
    if v.checked_blocks > 0 {
        let _ = write!(out, ", expected generation {}", gen(v.expected));
    }
    if v.stale_blocks > 0 {
        let _ = write!(
            out,
            ", {} written after the saved state (generation {}: the state is stale, not a lost write)",
            v.stale_blocks,
            v.stale_generation.map_or("?".to_string(), |g| g.to_string())
        );
    }
    let bad = v.mismatched_total();
    if bad == 0 {
        let _ = writeln!(out, ", no mismatch");
        return;
    }
    let kinds: Vec<String> = v
        .mismatched_blocks
        .iter()
        .map(|(k, n)| format!("{n} {}", k.describe()))
        .collect();
    let _ = writeln!(out, ", {bad} mismatched: {}", kinds.join(", "));
    for r in v.ranges.iter().take(RANGES_SHOWN) {
        let _ = writeln!(
            out,
            "    {:#x}..{:#x} ({} B) {}",
            r.offset_bytes,
            r.offset_bytes + r.len_bytes,
            r.len_bytes,
            r.kind.name()
        );
    }
    let more = v.ranges.len().saturating_sub(RANGES_SHOWN) as u64 + v.ranges_dropped;
    if more > 0 {
        let _ = writeln!(out, "    ... and {more} more ranges (all in --json)");
    }
}

/// One target's costs per I/O: its controllers' interrupts (and on which
/// CPUs), its workers' context switches and CPU time.
fn per_io_line(out: &mut String, r: &RunResult, i: usize) {
    let p = r.target_per_io(i);
    let counted = r
        .counters
        .as_ref()
        .and_then(|c| c.targets.iter().find(|x| x.path == r.targets[i].path));
    let ints = match (p.interrupts, counted) {
        (Some(v), Some(c)) => {
            let cpus: Vec<String> = c
                .interrupts_per_cpu
                .iter()
                .map(|(cpu, n)| format!("CPU{} {}", cpu.0, si(*n as f64)))
                .collect();
            let on = if cpus.is_empty() {
                String::new()
            } else {
                format!(" on {}", cpus.join(", "))
            };
            format!("interrupts {} ({}{on})", small(v), c.controllers.join("+"))
        }
        // numio's own driver creates its completion queues with
        // interrupts off and polls them.
        _ if r.environment.backend == "vfio" => "interrupts none (polled)".to_string(),
        (_, Some(c)) if c.controllers.is_empty() => {
            "interrupts n/a (not on a PCIe NVMe controller)".to_string()
        }
        _ => "interrupts n/a (no queue IRQ lines: NVMe over fabrics)".to_string(),
    };
    // A polling backend's busy waiting is CPU, but not the I/O's cost.
    let busy = match (p.worker_busy_cpu_ns, p.worker_cpu_ns) {
        (Some(b), Some(c)) if b < c => {
            format!(" (busy {:.2} µs: empty polls excluded)", b / 1000.0)
        }
        _ => String::new(),
    };
    let _ = writeln!(
        out,
        "  per I/O {ints}  ctx switches {}  CPU {}{busy}",
        opt(p.worker_ctx_switches, small),
        opt(p.worker_cpu_ns, |v| format!("{:.2} µs", v / 1000.0)),
    );
}

/// A per-I/O count with three significant digits: `0.984`, `0.0000150`.
fn small(v: f64) -> String {
    if v == 0.0 || !v.is_finite() {
        return format!("{v}");
    }
    let decimals = ((-v.abs().log10()).ceil().max(0.0) as usize + 2).max(3);
    format!("{v:.decimals$}")
}

fn opt(v: Option<f64>, f: impl Fn(f64) -> String) -> String {
    v.map_or_else(|| "n/a".to_string(), f)
}

/// The machine over the measured time: CPU headroom (in total and per
/// node) and what one I/O cost it, from /proc.
fn machine_block(out: &mut String, r: &RunResult) {
    let Some(c) = &r.counters else {
        let _ = writeln!(
            out,
            "
machine: not measured (/proc/stat unreadable)"
        );
        return;
    };
    let p = r.per_io();
    let nodes: Vec<String> = c
        .nodes
        .iter()
        .filter_map(|n| Some(format!("node {} {:.1}%", n.node.0, n.cpu.headroom_pct()?)))
        .collect();
    let nodes = if nodes.len() > 1 {
        format!(" ({})", nodes.join(", "))
    } else {
        String::new()
    };
    let _ = writeln!(
        out,
        "
machine over {:.2}s ({} CPUs): CPU headroom {}{nodes}",
        c.window_ns as f64 / 1e9,
        c.online_cpus,
        opt(p.cpu_headroom_pct, |v| format!("{v:.1}%")),
    );
    let ns = |v: u64| {
        v as f64 / c.window_ns.max(1) as f64 * 1e9 / r.total.iops.max(f64::MIN_POSITIVE) / 1000.0
    };
    let _ = writeln!(
        out,
        "  per I/O interrupts {}  ctx switches {} (workers {})  CPU {} (usr {:.2} sys {:.2} irq {:.2} softirq {:.2} µs)",
        opt(p.interrupts, small),
        opt(p.machine_ctx_switches, small),
        opt(p.worker_ctx_switches, small),
        opt(p.machine_cpu_ns, |v| format!("{:.2} µs", v / 1000.0)),
        ns(c.cpu.user_ns + c.cpu.nice_ns),
        ns(c.cpu.system_ns),
        ns(c.cpu.irq_ns),
        ns(c.cpu.softirq_ns),
    );
}

fn per_cpu_s(ops: u64, cpu_ns: u64) -> f64 {
    if cpu_ns == 0 {
        0.0
    } else {
        ops as f64 * 1e9 / cpu_ns as f64
    }
}

fn errors_line(out: &mut String, errors: &[results::ErrnoCount]) {
    if errors.is_empty() {
        let _ = writeln!(out, "  errors none");
    } else {
        let e: Vec<String> = errors
            .iter()
            .map(|e| format!("{} × {}", e.count, e.name))
            .collect();
        let _ = writeln!(out, "  errors {}", e.join(", "));
    }
}

/// Says that the run stopped early and what the numbers cover.
fn interrupted_line(r: &RunResult) -> String {
    let planned = r
        .targets
        .iter()
        .filter_map(|t| t.workload.runtime_ns)
        .max()
        .map_or(String::new(), |p| {
            format!(" of {:.2}s planned", p as f64 / 1e9)
        });
    format!(
        "interrupted: stopped early after {:.2}s measured{planned}; every number below covers the time measured",
        r.runtime_ns as f64 / 1e9
    )
}

/// How a task-run trial settled a job's io_uring set-up (`-v`; the JSON
/// result's `taskrun_trial` holds the same).
pub fn trial_line(job: u32, t: &results::TaskrunTrial) -> String {
    format!(
        "job {job}: io_uring task-run mode {}, chosen by a {} ms trial \
         (DEFER_TASKRUN {:.0} IOPS, COOP_TASKRUN {:.0} IOPS); --uring-setup defer or coop fixes it",
        t.chosen.taskrun_flag().unwrap_or("?"),
        t.trial_ns / 1_000_000,
        t.defer_taskrun_iops,
        t.coop_taskrun_iops
    )
}

/// The final report; `verbose` adds how set-up choices were made.
pub fn render(r: &RunResult, placement: &Placement, verbose: bool) -> String {
    let env = &r.environment;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "numio bench: {} backend, policy {}, kernel {}, {} ({} CPUs)",
        env.backend, r.policy, env.kernel, env.cpu_model, env.online_cpus
    );
    if r.interrupted {
        let _ = writeln!(out, "{}", interrupted_line(r));
    }
    if !env.uring_features.is_empty() {
        // The set-up line of the backend: io_uring's flags, or numio's
        // own driver's queues.
        let label = if env.backend == "vfio" {
            "driver"
        } else {
            "io_uring"
        };
        let _ = writeln!(out, "{label}: {}", env.uring_features.join(", "));
    }
    for n in &env.notes {
        let _ = writeln!(out, "note: {n}");
    }
    for t in &r.targets {
        target_block(&mut out, r, t, placement, verbose);
    }
    let p = &r.process_cpu_usage;
    let _ = writeln!(
        out,
        "\nprocess CPU (workers + io_uring worker threads): usr {:.2}s  sys {:.2}s  ({} IOPS per CPU-second)",
        p.user_ns as f64 / 1e9,
        p.system_ns as f64 / 1e9,
        si(per_cpu_s(r.total.ops, p.user_ns + p.system_ns))
    );
    machine_block(&mut out, r);
    if r.targets.len() > 1 {
        let _ = writeln!(out, "\ntotal ({} targets)", r.targets.len());
        io_block(&mut out, "read", &r.read);
        io_block(&mut out, "write", &r.write);
        let _ = writeln!(out, "  IOPS per CPU-second {}", si(r.iops_per_cpu_s()));
        crate::intervals::summary_lines(&mut out, "  ", &r.intervals, r.interval_ns);
        errors_line(&mut out, &r.errors);
    }
    out
}

/// The report `numio bench` printed, from its `--json` text (one run, or
/// one per stonewall group), without the planner's notes, which the JSON
/// does not keep; `None` when the text is no bench JSON this numio reads
/// (`numio report` then names what it is).
pub fn reprint(json: &str) -> Option<String> {
    let runs: Vec<RunResult> = serde_json::from_str::<RunResult>(json)
        .map(|r| vec![r])
        .or_else(|_| serde_json::from_str(json))
        .ok()?;
    let newest = results::RESULT_SCHEMA_VERSION;
    if runs.is_empty()
        || runs
            .iter()
            .any(|r| r.schema_version == 0 || r.schema_version > newest)
    {
        return None;
    }
    let mut out = String::new();
    for (i, r) in runs.iter().enumerate() {
        if runs.len() > 1 {
            let _ = writeln!(out, "group {} of {} (stonewall)", i + 1, runs.len());
        }
        let placement = Placement {
            policy: r.policy.clone(),
            ..Placement::default()
        };
        out.push_str(&render(r, &placement, false));
    }
    Some(out)
}
