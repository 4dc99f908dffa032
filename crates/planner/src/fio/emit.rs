//! [`to_job_file`]: a placement as a fio job file.
//!
//! `[global]` holds the workload options the first target uses (where they
//! differ from fio's defaults); each section holds what differs from
//! `[global]`, then `filename`, the CPUs and the memory policy. CPUs are
//! written so that fio pins every job exactly as planned:
//! - all jobs of a target on one set → `cpus_allowed=SET`,
//!   `cpus_allowed_policy=shared`;
//! - one CPU per job → `cpus_allowed_policy=split` over the target's set,
//!   or over the jobs' CPUs, whichever fio's split (indexed by the job's
//!   *global* number) maps onto exactly the planned CPUs;
//! - otherwise, or where the jobs' memory policies differ, one section per
//!   job (`name.0`, `name.1`, …).

use std::fmt::Write as _;

use topology::CpuId;

use super::fio_split;
use super::options::fio_default_workload;
use super::units::{format_size, format_time};
use crate::placement::{JobPlacement, MemPolicy, Placement, TargetPlacement};
use crate::workload::{Distribution, Workload};
use topology::CpuList;

/// One option line with the key it is compared by (empty: nothing to write).
type Line = (&'static str, String);

/// Flags that go to `[global]` only when every target agrees on them.
const FLAGS: [&str; 6] = [
    "group_reporting",
    "thread",
    "hipri",
    "fixedbufs",
    "registerfiles",
    "sqthread_poll",
];

fn workload_lines(w: &Workload) -> Vec<Line> {
    let bs = if w.bs_min_bytes == w.bs_max_bytes {
        format!("bs={}", format_size(w.bs_min_bytes))
    } else {
        format!(
            "bsrange={}-{}",
            format_size(w.bs_min_bytes),
            format_size(w.bs_max_bytes)
        )
    };
    let opt = |v: Option<u64>| v.map_or("0".to_string(), |n| n.to_string());
    vec![
        ("rw", format!("rw={}", w.rw.fio_name())),
        ("rwmixread", format!("rwmixread={}", w.rwmixread)),
        ("bs", bs),
        ("iodepth", format!("iodepth={}", w.iodepth)),
        ("numjobs", format!("numjobs={}", w.numjobs)),
        (
            "size",
            format!("size={}", w.size_bytes.map_or("100%".into(), format_size)),
        ),
        ("offset", format!("offset={}", format_size(w.offset_bytes))),
        (
            "runtime",
            format!("runtime={}", format_time(w.runtime_ns.unwrap_or(0))),
        ),
        (
            "ramp_time",
            format!("ramp_time={}", format_time(w.ramp_time_ns)),
        ),
        (
            "time_based",
            format!("time_based={}", u8::from(w.time_based)),
        ),
        ("number_ios", format!("number_ios={}", opt(w.number_ios))),
        ("rate_iops", format!("rate_iops={}", opt(w.rate_iops))),
        (
            "random_distribution",
            format!(
                "random_distribution={}",
                distribution(w.random_distribution)
            ),
        ),
        ("randseed", format!("randseed={}", w.randseed)),
        (
            "norandommap",
            format!("norandommap={}", u8::from(w.norandommap)),
        ),
        ("direct", format!("direct={}", u8::from(w.direct))),
    ]
}

fn distribution(d: Distribution) -> String {
    match d {
        Distribution::Uniform => "random".into(),
        Distribution::Zipf(t) => format!("zipf:{t}"),
    }
}

/// fio's engine for a numio backend (`None`: numio's default, io_uring).
fn engine_line(t: &TargetPlacement) -> String {
    if let Some(e) = &t.options.ioengine {
        return format!("ioengine={e}");
    }
    let engine = match t.backend.as_deref() {
        None | Some("uring") => "io_uring",
        Some("passthru") => "io_uring_cmd",
        Some("sync") => "psync",
        // Both measure the tool rather than the device.
        Some("null") | Some("nop") => "null",
        Some(_) => "psync",
    };
    format!("ioengine={engine}")
}

fn shared_lines(t: &TargetPlacement) -> Vec<Line> {
    let mut lines = workload_lines(&t.workload);
    lines.push(("ioengine", engine_line(t)));
    let flag = |name: &'static str, on: bool| {
        (
            name,
            if on {
                name.to_string()
            } else {
                format!("{name}=0")
            },
        )
    };
    lines.push(flag("group_reporting", t.options.group_reporting));
    lines.push(flag("thread", t.options.thread));
    let o = &t.options;
    for (name, v) in [
        ("hipri", o.hipri),
        ("fixedbufs", o.fixedbufs),
        ("registerfiles", o.registerfiles),
        ("sqthread_poll", o.sqthread_poll),
    ] {
        // Unset: nothing (the engine's default), so it never reaches [global].
        lines.push((name, v.map_or(String::new(), |on| flag(name, on).1)));
    }
    lines
}

fn defaults() -> Vec<Line> {
    let mut lines = workload_lines(&fio_default_workload());
    lines.push(("ioengine", "ioengine=psync".into()));
    lines.push(("group_reporting", "group_reporting=0".into()));
    lines.push(("thread", "thread=0".into()));
    for name in ["hipri", "fixedbufs", "registerfiles", "sqthread_poll"] {
        lines.push((name, String::new()));
    }
    lines
}

/// Writes `placement` as a fio job file.
pub fn to_job_file(placement: &Placement) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "; numio plan, policy {}: {} target(s). `fio --parse-only FILE` checks it.",
        placement.policy,
        placement.targets.len()
    );
    for w in &placement.warnings {
        let _ = writeln!(out, "; warning: {}", one_line(w));
    }
    let Some(first) = placement.targets.first() else {
        return out;
    };
    let fio_defaults = defaults();
    let mut global: Vec<Line> = shared_lines(first);
    // Flags go to [global] only when every target has them.
    for key in FLAGS {
        let all = placement
            .targets
            .iter()
            .all(|t| value_of(&shared_lines(t), key) == value_of(&global, key));
        if !all {
            global.retain(|(k, _)| *k != key);
        }
    }
    global.retain(|(k, line)| value_of(&fio_defaults, k).as_deref() != Some(line.as_str()));
    let prefer_jobs_cpus = !whole_sets_work(placement);
    if prefer_jobs_cpus {
        out.push_str(
            "; cpus_allowed lists the CPUs the jobs run on; the rest of each target's CPUs (in its\n\
             ; comment) stay free. fio's split numbers jobs across all sections, so a list with the\n\
             ; SMT siblings would move some sections' jobs onto the siblings.\n",
        );
    }
    out.push_str("\n[global]\n");
    for (_, line) in &global {
        let _ = writeln!(out, "{line}");
    }
    let mut effective = fio_defaults.clone();
    for (k, line) in &global {
        effective.retain(|(ek, _)| ek != k);
        effective.push((k, line.clone()));
    }
    let mut first_job = 0usize;
    for t in &placement.targets {
        section(&mut out, t, &effective, first_job, prefer_jobs_cpus);
        first_job += t.jobs.len();
    }
    out
}

fn value_of(lines: &[Line], key: &str) -> Option<String> {
    lines
        .iter()
        .find(|(k, _)| *k == key)
        .map(|(_, l)| l.clone())
}

fn one_line(s: &str) -> String {
    s.replace('\n', " ")
}

/// How fio should be told a target's CPUs.
enum Cpus {
    None,
    Shared(Vec<CpuId>),
    Split(Vec<CpuId>),
    NumaNodes(String),
    PerJob,
}

/// Whether fio's split over `set` gives every job of `t` exactly its CPU.
fn split_exact(t: &TargetPlacement, set: &[CpuId], first_job: usize) -> bool {
    !set.is_empty()
        && t.jobs
            .iter()
            .enumerate()
            .all(|(i, j)| j.cpus.len() == 1 && fio_split(set, first_job + i) == Some(j.cpus[0]))
}

/// Whether every split-pinned target can be written over its whole CPU set
/// (siblings included); if not, the file lists the jobs' CPUs for all of
/// them, so that sections look alike.
fn whole_sets_work(placement: &Placement) -> bool {
    let mut first_job = 0;
    let mut ok = true;
    for t in &placement.targets {
        if let Cpus::Split(_) = cpus_form(t, first_job, false) {
            ok &= split_exact(t, &t.cpus, first_job);
        }
        first_job += t.jobs.len();
    }
    ok
}

fn cpus_form(t: &TargetPlacement, first_job: usize, prefer_jobs_cpus: bool) -> Cpus {
    let jobs = &t.jobs;
    if jobs.iter().all(|j| j.cpus.is_empty()) {
        return Cpus::None;
    }
    if mem_line(jobs).is_none() {
        // One numa_mem_policy per section: jobs bound apart need their own.
        return Cpus::PerJob;
    }
    let sorted = |v: &[CpuId]| {
        let mut s = v.to_vec();
        s.sort_unstable();
        s.dedup();
        s
    };
    let first = sorted(&jobs[0].cpus);
    if jobs.iter().all(|j| sorted(&j.cpus) == first) {
        if let Some(nodes) = &t.options.numa_cpu_nodes {
            if first == sorted(&t.cpus) {
                return Cpus::NumaNodes(nodes.clone());
            }
        }
        if jobs.len() > 1 || first.len() > 1 || t.cpus.is_empty() || sorted(&t.cpus) == first {
            return Cpus::Shared(first);
        }
    }
    let union = crate::placement::union(jobs);
    let sets = if prefer_jobs_cpus {
        [union, sorted(&t.cpus)]
    } else {
        [sorted(&t.cpus), union]
    };
    for set in sets {
        if split_exact(t, &set, first_job) {
            return Cpus::Split(set);
        }
    }
    Cpus::PerJob
}

fn mem_line(jobs: &[JobPlacement]) -> Option<String> {
    let first = &jobs.first()?.mem;
    if jobs.iter().any(|j| &j.mem != first) {
        return None;
    }
    Some(mem_text(first))
}

fn mem_text(m: &MemPolicy) -> String {
    match m {
        MemPolicy::Default => "numa_mem_policy=default".into(),
        MemPolicy::Local => "numa_mem_policy=local".into(),
        MemPolicy::Bind(nodes) => {
            format!("numa_mem_policy=bind:{}", CpuList::of_nodes(nodes))
        }
    }
}

/// The path fio opens: a bare NVMe name (`nvme0n1`, `ng0n1`) gets `/dev/`;
/// colons are escaped as fio requires.
fn escape_filename(path: &str) -> String {
    let full = if !path.contains('/') && crate::resolve::is_nvme_name(path) {
        format!("/dev/{path}")
    } else {
        path.to_string()
    };
    full.replace(':', "\\:")
}

fn section_name(t: &TargetPlacement) -> String {
    let name: String = t
        .job_name()
        .chars()
        .map(|c| {
            if c == '[' || c == ']' || c.is_control() {
                '_'
            } else {
                c
            }
        })
        .collect();
    if name == "global" {
        "global-job".into()
    } else {
        name
    }
}

fn section(
    out: &mut String,
    t: &TargetPlacement,
    global: &[Line],
    first_job: usize,
    prefer_jobs_cpus: bool,
) {
    let form = cpus_form(t, first_job, prefer_jobs_cpus);
    if let Cpus::PerJob = form {
        return per_job_sections(out, t, global);
    }
    let _ = write!(
        out,
        "\n; {}: node {}",
        t.path,
        t.node.map_or("unknown".into(), |n| n.0.to_string())
    );
    if !t.cpus.is_empty() {
        let _ = write!(out, ", CPUs {}", CpuList::of(&t.cpus));
    }
    out.push('\n');
    for n in &t.notes {
        let _ = writeln!(out, "; {}", one_line(n));
    }
    let _ = writeln!(out, "[{}]", section_name(t));
    head_lines(out, t, global);
    match form {
        Cpus::None | Cpus::PerJob => {}
        Cpus::Shared(set) => {
            let _ = writeln!(
                out,
                "cpus_allowed={}\ncpus_allowed_policy=shared",
                CpuList::of(&set)
            );
        }
        Cpus::Split(set) => {
            let _ = writeln!(
                out,
                "cpus_allowed={}\ncpus_allowed_policy=split",
                CpuList::of(&set)
            );
        }
        Cpus::NumaNodes(nodes) => {
            let _ = writeln!(out, "numa_cpu_nodes={nodes}");
        }
    }
    tail_lines(out, t);
}

/// Options that differ from `[global]`, then filename.
fn head_lines(out: &mut String, t: &TargetPlacement, global: &[Line]) {
    for (k, line) in shared_lines(t) {
        if !line.is_empty() && value_of(global, k).as_deref() != Some(line.as_str()) {
            let _ = writeln!(out, "{line}");
        }
    }
    if let Some(d) = &t.options.description {
        let _ = writeln!(out, "description={}", one_line(d));
    }
    let _ = writeln!(out, "filename={}", escape_filename(&t.path));
}

/// Memory policy and the ordering flags.
fn tail_lines(out: &mut String, t: &TargetPlacement) {
    if let Some(m) = mem_line(&t.jobs) {
        if m != "numa_mem_policy=default" {
            let _ = writeln!(out, "{m}");
        }
    }
    if t.options.new_group {
        out.push_str("new_group\n");
    }
    if t.options.stonewall {
        out.push_str("stonewall\n");
    }
    if let Some(w) = &t.options.wait_for {
        let _ = writeln!(out, "wait_for={w}");
    }
}

fn per_job_sections(out: &mut String, t: &TargetPlacement, global: &[Line]) {
    let _ = writeln!(
        out,
        "\n; {}: one section per job (fio's split cannot express these CPUs)",
        t.path
    );
    for (i, job) in t.jobs.iter().enumerate() {
        let mut one = t.clone();
        one.workload.numjobs = 1;
        one.jobs = vec![job.clone()];
        one.options.new_group = t.options.new_group && i == 0;
        one.options.stonewall = t.options.stonewall && i == 0;
        let _ = writeln!(out, "[{}.{i}]", section_name(t));
        head_lines(out, &one, global);
        if !job.cpus.is_empty() {
            let _ = writeln!(
                out,
                "cpus_allowed={}\ncpus_allowed_policy=shared",
                CpuList::of(&job.cpus)
            );
        }
        tail_lines(out, &one);
    }
}

/// fio command-line options (`--key=value`) running one target alone, for
/// [`crate::numactl`]: every option that differs from fio's defaults.
pub(crate) fn command_line_options(t: &TargetPlacement) -> Vec<String> {
    let defaults = defaults();
    let mut args = vec![format!("--name={}", section_name(t))];
    args.push(format!("--filename={}", escape_filename(&t.path)));
    for (k, line) in shared_lines(t) {
        if !line.is_empty() && value_of(&defaults, k).as_deref() != Some(line.as_str()) {
            args.push(format!("--{line}"));
        }
    }
    args
}
