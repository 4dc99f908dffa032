//! The fio options numio implements: one table drives parsing, the support
//! table of the README and the tests.

use topology::{CpuId, NodeId};

use super::error::{Location, OptionError};
use super::ini::Entry;
use super::units::{parse_bool, parse_count, parse_size_bytes, parse_size_range, parse_time_ns};
use super::values::{CpusPolicy, EngineMapping, IOENGINES};
use crate::cpuset::{parse_cpu_list, parse_node_list};
use crate::placement::{JobOptions, MemPolicy};
use crate::workload::{Distribution, RwMode, Workload};

/// fio's default `randseed`.
pub const FIO_DEFAULT_RANDSEED: u64 = 0xb189_9bed;
/// fio's limit on jobs (`REAL_MAX_JOBS`).
pub const MAX_JOBS: u64 = crate::workload::JOBS_PER_TARGET_MAX as u64;
/// Largest queue depth numio accepts.
pub const MAX_IODEPTH: u64 = crate::workload::IODEPTH_MAX as u64;

/// A value with where it was written, for errors found later.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Located<T> {
    /// The parsed value.
    pub value: T,
    /// The value as written.
    pub text: String,
    /// Where.
    pub at: Location,
}

/// One fio job section after its options were applied.
#[derive(Debug, Clone, PartialEq)]
pub struct FioJob {
    /// Job name (section name, or `name=`).
    pub name: String,
    /// The section header.
    pub at: Location,
    /// `filename`, unescaped.
    pub filename: Option<String>,
    /// The workload options.
    pub workload: Workload,
    /// `cpus_allowed`.
    pub cpus_allowed: Option<Located<Vec<CpuId>>>,
    /// `cpus_allowed_policy`.
    pub cpus_policy: CpusPolicy,
    /// `numa_cpu_nodes`.
    pub numa_cpu_nodes: Option<Located<Vec<NodeId>>>,
    /// `numa_mem_policy`.
    pub mem: MemPolicy,
    /// Grouping and compatibility options.
    pub options: JobOptions,
    /// numio backend from `ioengine` (fio's default `psync`: `sync`).
    pub backend: String,
    /// `wait_for`, checked against the earlier jobs.
    pub wait_for: Option<Located<String>>,
}

/// fio's defaults for the options numio reads (they differ from numio's own
/// defaults: a job file means what it means to fio).
pub fn fio_default_workload() -> Workload {
    Workload {
        rw: RwMode::Read,
        rwmixread: 50,
        bs_min_bytes: 4096,
        bs_max_bytes: 4096,
        iodepth: 1,
        numjobs: 1,
        size_bytes: None,
        offset_bytes: 0,
        runtime_ns: None,
        ramp_time_ns: 0,
        time_based: false,
        number_ios: None,
        rate_iops: None,
        random_distribution: Distribution::Uniform,
        randseed: FIO_DEFAULT_RANDSEED,
        norandommap: false,
        direct: false,
    }
}

impl FioJob {
    /// A job with fio's defaults.
    pub fn new(name: &str, at: Location) -> Self {
        FioJob {
            name: name.to_string(),
            at,
            filename: None,
            workload: fio_default_workload(),
            cpus_allowed: None,
            cpus_policy: CpusPolicy::Shared,
            numa_cpu_nodes: None,
            mem: MemPolicy::Default,
            options: JobOptions::default(),
            backend: "sync".into(),
            wait_for: None,
        }
    }
}

/// Applies one option; `Err` says why the value was refused.
pub type Apply = fn(&mut FioJob, &Entry, &mut Vec<String>) -> Result<(), OptionError>;

/// One supported fio option.
pub struct OptionSpec {
    /// fio's name.
    pub name: &'static str,
    /// Other names fio accepts.
    pub aliases: &'static [&'static str],
    /// Whether `--key VALUE` takes the next argument on a command line.
    pub takes_value: bool,
    /// What numio does with it (the README's support table).
    pub numio: &'static str,
    /// Parser.
    pub apply: Apply,
}

fn value(e: &Entry) -> Result<&str, OptionError> {
    e.value
        .as_deref()
        .filter(|v| !v.is_empty())
        .ok_or_else(|| OptionError::NoValue { key: e.key.clone() })
}

fn count_in(e: &Entry, min: u64, max: u64) -> Result<u64, OptionError> {
    let n = parse_count(value(e)?)?;
    if n < min || n > max {
        return Err(OptionError::OutOfRange { value: n, min, max });
    }
    Ok(n)
}

fn opt_count(e: &Entry) -> Result<Option<u64>, OptionError> {
    let n = parse_count(value(e)?)?;
    Ok((n > 0).then_some(n))
}

fn rw_mode(v: &str) -> Result<RwMode, OptionError> {
    if let Some(mode) = RwMode::from_fio_name(v) {
        return Ok(mode);
    }
    let value = v.to_string();
    Err(match v {
        "trim" | "randtrim" | "trimwrite" | "randtrimwrite" => OptionError::TrimWorkload { value },
        _ if v.contains(':') => OptionError::OffsetModifier { value },
        _ => OptionError::UnknownRwMode { value },
    })
}

fn block_sizes(e: &Entry) -> Result<(u64, u64), OptionError> {
    let v = value(e)?;
    let mut parts = v.split(',').map(parse_size_range);
    let first = parts.next().expect("split yields one part")?;
    for p in parts {
        if p? != first {
            return Err(OptionError::BlockSizePerDirection {
                value: v.to_string(),
            });
        }
    }
    Ok(first)
}

fn fio_size(e: &Entry) -> Result<Option<u64>, OptionError> {
    let v = value(e)?;
    if let Some(pct) = v.strip_suffix('%') {
        return match pct.trim() {
            "100" => Ok(None),
            other => Err(OptionError::SizePercent {
                percent: other.to_string(),
            }),
        };
    }
    let n = parse_size_bytes(v)?;
    Ok((n > 0).then_some(n))
}

fn time_ns(e: &Entry) -> Result<u64, OptionError> {
    Ok(parse_time_ns(value(e)?, 1_000_000_000)?)
}

fn ioengine(job: &mut FioJob, e: &Entry, warn: &mut Vec<String>) -> Result<(), OptionError> {
    let v = value(e)?;
    let engine =
        IOENGINES
            .iter()
            .find(|i| i.fio == v)
            .ok_or_else(|| OptionError::UnknownIoengine {
                engine: v.to_string(),
            })?;
    if engine.mapping == EngineMapping::Warned {
        warn.push(format!(
            "{}: ioengine={v} runs on numio's {} backend (numio has no {v})",
            e.at, engine.backend
        ));
    }
    job.backend = engine.backend.to_string();
    job.options.ioengine = (engine.mapping != EngineMapping::Same).then(|| v.to_string());
    Ok(())
}

fn mem_policy(v: &str) -> Result<MemPolicy, OptionError> {
    let (mode, nodes) = match v.split_once(':') {
        Some((m, n)) => (m, Some(n)),
        None => (v, None),
    };
    match (mode, nodes) {
        ("default", None) => Ok(MemPolicy::Default),
        ("local", None) => Ok(MemPolicy::Local),
        ("bind", Some(list)) => Ok(MemPolicy::Bind(parse_node_list(list)?)),
        ("bind", None) => Err(OptionError::BindWithoutNodes),
        ("interleave" | "prefer", _) => Err(OptionError::UnsupportedMemPolicy {
            mode: mode.to_string(),
        }),
        _ => Err(OptionError::UnknownMemPolicy {
            value: v.to_string(),
        }),
    }
}

fn filename(v: &str) -> Result<String, OptionError> {
    let mut out = String::new();
    let mut chars = v.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some(':') => out.push(':'),
                Some(other) => {
                    out.push('\\');
                    out.push(other);
                }
                None => out.push('\\'),
            },
            ':' => {
                return Err(OptionError::SeveralFiles {
                    value: v.to_string(),
                })
            }
            _ => out.push(c),
        }
    }
    Ok(out)
}

fn distribution(v: &str) -> Result<Distribution, OptionError> {
    Ok(Distribution::from_fio(v)?)
}

macro_rules! uring_flag {
    ($field:ident) => {
        |j: &mut FioJob, e: &Entry, _: &mut Vec<String>| {
            j.options.$field = Some(parse_bool(e.value.as_deref())?);
            Ok(())
        }
    };
}

macro_rules! flag {
    ($field:ident) => {
        |j: &mut FioJob, e: &Entry, _: &mut Vec<String>| {
            j.options.$field = parse_bool(e.value.as_deref())?;
            Ok(())
        }
    };
}

/// Every fio option numio implements.
pub const OPTIONS: &[OptionSpec] = &[
    OptionSpec { name: "name", aliases: &[], takes_value: true, numio: "job name", apply: |j, e, _| { j.name = value(e)?.to_string(); Ok(()) } },
    OptionSpec { name: "description", aliases: &[], takes_value: true, numio: "kept in the plan", apply: |j, e, _| { j.options.description = Some(value(e)?.to_string()); Ok(()) } },
    OptionSpec { name: "filename", aliases: &[], takes_value: true, numio: "the target (one per job; `\\:` escapes a colon)", apply: |j, e, _| { j.filename = Some(filename(value(e)?)?); Ok(()) } },
    OptionSpec { name: "rw", aliases: &["readwrite"], takes_value: true, numio: "read, write, randread, randwrite, rw, randrw", apply: |j, e, _| { j.workload.rw = rw_mode(value(e)?)?; Ok(()) } },
    OptionSpec { name: "rwmixread", aliases: &[], takes_value: true, numio: "read percentage of mixed modes", apply: |j, e, _| { j.workload.rwmixread = count_in(e, 0, 100)? as u8; Ok(()) } },
    OptionSpec { name: "rwmixwrite", aliases: &[], takes_value: true, numio: "100 − rwmixread", apply: |j, e, _| { j.workload.rwmixread = 100 - count_in(e, 0, 100)? as u8; Ok(()) } },
    OptionSpec { name: "bs", aliases: &["blocksize"], takes_value: true, numio: "block size or range (`4k`, `4k-64k`); one for reads and writes", apply: |j, e, _| { (j.workload.bs_min_bytes, j.workload.bs_max_bytes) = block_sizes(e)?; Ok(()) } },
    OptionSpec { name: "bsrange", aliases: &["blocksize_range"], takes_value: true, numio: "block size range", apply: |j, e, _| { (j.workload.bs_min_bytes, j.workload.bs_max_bytes) = block_sizes(e)?; Ok(()) } },
    OptionSpec { name: "iodepth", aliases: &[], takes_value: true, numio: "I/Os in flight per job", apply: |j, e, _| { j.workload.iodepth = count_in(e, 1, MAX_IODEPTH)? as u32; Ok(()) } },
    OptionSpec { name: "numjobs", aliases: &[], takes_value: true, numio: "jobs per target", apply: |j, e, _| { j.workload.numjobs = count_in(e, 1, MAX_JOBS)? as u32; Ok(()) } },
    OptionSpec { name: "size", aliases: &[], takes_value: true, numio: "bytes per job (`100%`: whole target)", apply: |j, e, _| { j.workload.size_bytes = fio_size(e)?; Ok(()) } },
    OptionSpec { name: "offset", aliases: &[], takes_value: true, numio: "start offset in bytes", apply: |j, e, _| { j.workload.offset_bytes = parse_size_bytes(value(e)?)?; Ok(()) } },
    OptionSpec { name: "runtime", aliases: &["timeout"], takes_value: true, numio: "run time (`30s`, `1h`, `100ms`; bare: seconds; 0: none)", apply: |j, e, _| { let t = time_ns(e)?; j.workload.runtime_ns = (t > 0).then_some(t); Ok(()) } },
    OptionSpec { name: "ramp_time", aliases: &[], takes_value: true, numio: "warm-up, not measured", apply: |j, e, _| { j.workload.ramp_time_ns = time_ns(e)?; Ok(()) } },
    OptionSpec { name: "time_based", aliases: &[], takes_value: false, numio: "run for runtime even after size", apply: |j, e, _| { j.workload.time_based = parse_bool(e.value.as_deref())?; Ok(()) } },
    OptionSpec { name: "number_ios", aliases: &[], takes_value: true, numio: "I/Os per job (0: no limit)", apply: |j, e, _| { j.workload.number_ios = opt_count(e)?; Ok(()) } },
    OptionSpec { name: "rate_iops", aliases: &[], takes_value: true, numio: "IOPS cap per job, one value (0: none)", apply: |j, e, _| { let v = value(e)?; if v.contains(',') { return Err(OptionError::RatePerDirection { value: v.to_string() }); } j.workload.rate_iops = opt_count(e)?; Ok(()) } },
    OptionSpec { name: "random_distribution", aliases: &[], takes_value: true, numio: "random, zipf:θ", apply: |j, e, _| { j.workload.random_distribution = distribution(value(e)?)?; Ok(()) } },
    OptionSpec { name: "randseed", aliases: &[], takes_value: true, numio: "seed of the offset generator", apply: |j, e, _| { let v = value(e)?; j.workload.randseed = v.parse().map_err(|_| OptionError::NotWholeNumber { value: v.to_string() })?; Ok(()) } },
    OptionSpec { name: "norandommap", aliases: &[], takes_value: false, numio: "offsets may repeat", apply: |j, e, _| { j.workload.norandommap = parse_bool(e.value.as_deref())?; Ok(()) } },
    OptionSpec { name: "direct", aliases: &[], takes_value: false, numio: "O_DIRECT", apply: |j, e, _| { j.workload.direct = parse_bool(e.value.as_deref())?; Ok(()) } },
    OptionSpec { name: "buffered", aliases: &[], takes_value: false, numio: "not O_DIRECT", apply: |j, e, _| { j.workload.direct = !parse_bool(e.value.as_deref())?; Ok(()) } },
    OptionSpec { name: "ioengine", aliases: &[], takes_value: true, numio: "backend: io_uring→uring, io_uring_cmd→passthru, psync/sync/pvsync/pvsync2/vsync→sync, null→null, libaio/posixaio→uring (warned)", apply: ioengine },
    OptionSpec { name: "cmd_type", aliases: &[], takes_value: true, numio: "`nvme` only (io_uring_cmd)", apply: |_, e, _| { match value(e)? { "nvme" => Ok(()), v => Err(OptionError::CmdTypeNotNvme { value: v.to_string() }) } } },
    OptionSpec { name: "hipri", aliases: &[], takes_value: false, numio: "io_uring completion polling (IOPOLL)", apply: uring_flag!(hipri) },
    OptionSpec { name: "fixedbufs", aliases: &[], takes_value: false, numio: "io_uring registered buffers", apply: uring_flag!(fixedbufs) },
    OptionSpec { name: "registerfiles", aliases: &[], takes_value: false, numio: "io_uring registered files", apply: uring_flag!(registerfiles) },
    OptionSpec { name: "sqthread_poll", aliases: &[], takes_value: false, numio: "io_uring submission polling (SQPOLL)", apply: uring_flag!(sqthread_poll) },
    OptionSpec { name: "cpus_allowed", aliases: &[], takes_value: true, numio: "CPUs of the job (checked against the topology)", apply: |j, e, _| { let v = value(e)?; j.cpus_allowed = Some(Located { value: parse_cpu_list(v)?, text: v.to_string(), at: e.at.clone() }); Ok(()) } },
    OptionSpec { name: "cpus_allowed_policy", aliases: &[], takes_value: true, numio: "shared, split (fio's global job numbering)", apply: |j, e, _| { let v = value(e)?; j.cpus_policy = CpusPolicy::ALL.into_iter().find(|p| p.fio_name() == v).ok_or_else(|| OptionError::UnknownCpusPolicy { value: v.to_string() })?; Ok(()) } },
    OptionSpec { name: "numa_cpu_nodes", aliases: &[], takes_value: true, numio: "all online CPUs of these nodes", apply: |j, e, _| { let v = value(e)?; let nodes = parse_node_list(v)?; j.numa_cpu_nodes = Some(Located { value: nodes, text: v.to_string(), at: e.at.clone() }); j.options.numa_cpu_nodes = Some(v.to_string()); Ok(()) } },
    OptionSpec { name: "numa_mem_policy", aliases: &[], takes_value: true, numio: "default, local, bind:NODES", apply: |j, e, _| { j.mem = mem_policy(value(e)?)?; Ok(()) } },
    OptionSpec { name: "group_reporting", aliases: &[], takes_value: false, numio: "report each group as one", apply: flag!(group_reporting) },
    OptionSpec { name: "new_group", aliases: &[], takes_value: false, numio: "start a reporting group", apply: flag!(new_group) },
    OptionSpec { name: "stonewall", aliases: &["wait_for_previous"], takes_value: false, numio: "wait for earlier jobs", apply: flag!(stonewall) },
    OptionSpec { name: "wait_for", aliases: &[], takes_value: true, numio: "start after the named earlier job has finished", apply: |j, e, _| { let v = value(e)?; j.wait_for = Some(Located { value: v.to_string(), text: v.to_string(), at: e.at.clone() }); j.options.wait_for = Some(v.to_string()); Ok(()) } },
    OptionSpec { name: "thread", aliases: &[], takes_value: false, numio: "accepted (numio workers are threads)", apply: flag!(thread) },
];

/// The option named `key` (by name or alias).
pub fn find_option(key: &str) -> Option<&'static OptionSpec> {
    OPTIONS
        .iter()
        .find(|o| o.name == key || o.aliases.contains(&key))
}

/// ` (did you mean `x`?)` for a near miss, or empty.
pub fn suggestion(key: &str) -> String {
    let best = OPTIONS
        .iter()
        .flat_map(|o| std::iter::once(o.name).chain(o.aliases.iter().copied()))
        .map(|n| (edit_distance(key, n), n))
        .min();
    match best {
        Some((d, n)) if d <= 2 => format!(" (did you mean `{n}`?)"),
        _ => String::new(),
    }
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1];
        for (j, cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != *cb);
            cur.push(sub.min(prev[j + 1] + 1).min(cur[j] + 1));
        }
        prev = cur;
    }
    prev[b.len()]
}
