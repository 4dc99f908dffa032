//! fio's `--output-format=json`, written from numio results, so fio-plot,
//! pbench, kbench and people's own fio parsers read numio runs unchanged
//! (`numio bench --output-format fio-json`, `numio report FILE
//! --fio-json`).
//!
//! The layout is fio 3.33's (checked key by key and type by type against
//! JSON real fio printed, `tests/fixtures/fio/fio-3.33-*.json`):
//! `fio version`, `timestamp`, `timestamp_ms`, `time`, `global options`,
//! `jobs[]`. One job per target of each run (numio's jobs of one target
//! merged, as fio's `group_reporting` merges them; `groupid` is the run,
//! fio's stonewall group), or with `group_reporting` one job per run from
//! numio's total. Where numio measures nothing fio's neutral values stand:
//! `bw_*`/`iops_*` interval samples 0 (numio takes none), `short_ios`,
//! `drop_ios`, `majf`, `minf` 0, `sync` zeros, `iodepth_*` maps all 0.0,
//! `latency_target` 0, `latency_percentile` 100.0, no `disk_util` (fio
//! too omits it where it reads no disk stats). `fio version` says
//! `numio-VERSION (fio-3.33 json)`; `time` is UTC.

mod parts;

use serde::Serialize;

pub use parts::{ctime, latency_buckets, Direction, Lat, Ordered, Sync};

/// fio's top-level document.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[allow(missing_docs)]
pub struct FioDocument {
    #[serde(rename = "fio version")]
    pub fio_version: String,
    pub timestamp: u64,
    pub timestamp_ms: u64,
    pub time: String,
    #[serde(rename = "global options")]
    pub global_options: Ordered<String>,
    pub jobs: Vec<FioJob>,
}

/// One entry of fio's `jobs[]`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[allow(missing_docs)]
pub struct FioJob {
    pub jobname: String,
    pub groupid: u64,
    pub error: i64,
    pub eta: u64,
    pub elapsed: u64,
    #[serde(rename = "job options")]
    pub job_options: Ordered<String>,
    pub read: Direction,
    pub write: Direction,
    pub trim: Direction,
    pub sync: Sync,
    pub job_runtime: u64,
    pub usr_cpu: f64,
    pub sys_cpu: f64,
    pub ctx: u64,
    pub majf: u64,
    pub minf: u64,
    pub iodepth_level: Ordered<f64>,
    pub iodepth_submit: Ordered<f64>,
    pub iodepth_complete: Ordered<f64>,
    pub latency_ns: Ordered<f64>,
    pub latency_us: Ordered<f64>,
    pub latency_ms: Ordered<f64>,
    pub latency_depth: u64,
    pub latency_target: u64,
    pub latency_percentile: f64,
    pub latency_window: u64,
}

/// What is fio's one job: a target, or a run's total.
struct Source<'a> {
    name: String,
    path: String,
    workload: &'a planner::Workload,
    read: &'a results::IoStats,
    write: &'a results::IoStats,
    runtime_ns: u64,
    cpu: &'a results::CpuUsage,
    errors: &'a [results::ErrnoCount],
    lat_hex: Vec<&'a str>,
}

fn zeros(keys: &[&str]) -> Ordered<f64> {
    Ordered(keys.iter().map(|k| (k.to_string(), 0.0)).collect())
}

fn job(src: &Source<'_>, groupid: u64, backend: &str) -> FioJob {
    let w = src.workload;
    let mut opts = vec![
        ("name", src.name.clone()),
        ("filename", src.path.clone()),
        ("rw", w.rw.fio_name().to_string()),
        ("bs", w.bs_min_bytes.to_string()),
        ("iodepth", w.iodepth.to_string()),
        ("numjobs", w.numjobs.to_string()),
        ("ioengine", backend.to_string()),
        ("direct", u8::from(w.direct).to_string()),
    ];
    if w.rw.writes() && w.rw.random() || w.rw == planner::RwMode::ReadWrite {
        opts.push(("rwmixread", w.rwmixread.to_string()));
    }
    let hist = parts::merged_histogram(&src.lat_hex);
    let [latency_ns, latency_us, latency_ms] = latency_buckets(hist.as_ref());
    let depths = ["1", "2", "4", "8", "16", "32", ">=64"];
    let submit = ["0", "4", "8", "16", "32", "64", ">=64"];
    FioJob {
        jobname: src.name.clone(),
        groupid,
        error: src.errors.first().map_or(0, |e| i64::from(e.errno)),
        eta: 0,
        elapsed: src.runtime_ns.div_ceil(1_000_000_000),
        job_options: Ordered(opts.into_iter().map(|(k, v)| (k.to_string(), v)).collect()),
        read: Direction::of(src.read, src.runtime_ns),
        write: Direction::of(src.write, src.runtime_ns),
        trim: Direction::none(),
        sync: Sync::none(),
        job_runtime: src.runtime_ns / 1_000_000,
        usr_cpu: src.cpu.user_percent(),
        sys_cpu: src.cpu.system_percent(),
        ctx: src.cpu.voluntary_ctx_switches + src.cpu.involuntary_ctx_switches,
        majf: 0,
        minf: 0,
        iodepth_level: zeros(&depths),
        iodepth_submit: zeros(&submit),
        iodepth_complete: zeros(&submit),
        latency_ns,
        latency_us,
        latency_ms,
        latency_depth: u64::from(w.iodepth),
        latency_target: 0,
        latency_percentile: 100.0,
        latency_window: 0,
    }
}

/// fio's JSON of `runs` (one per stonewall group, in order): one job per
/// target, or with `group_reporting` one per run.
pub fn document(runs: &[results::RunResult], group_reporting: bool) -> FioDocument {
    let started = runs.first().map_or(0, |r| r.environment.started_unix_s);
    let version = runs
        .first()
        .map_or("", |r| r.environment.numio_version.as_str());
    let backend = runs.first().map_or("", |r| r.environment.backend.as_str());
    let mut jobs = Vec::new();
    for (groupid, run) in runs.iter().enumerate() {
        let sources: Vec<Source<'_>> = if group_reporting {
            run.targets
                .first()
                .map(|t| run_source(run, t))
                .into_iter()
                .collect()
        } else {
            run.targets.iter().map(target_source).collect()
        };
        jobs.extend(sources.iter().map(|s| job(s, groupid as u64, backend)));
    }
    FioDocument {
        fio_version: format!("numio-{version} (fio-3.33 json)"),
        timestamp: started,
        timestamp_ms: started * 1000,
        time: ctime(started),
        global_options: Ordered(vec![("ioengine".to_string(), backend.to_string())]),
        jobs,
    }
}

fn target_source(t: &results::TargetResult) -> Source<'_> {
    Source {
        name: t.label.clone().unwrap_or_else(|| t.path.clone()),
        path: t.path.clone(),
        workload: &t.workload,
        read: &t.read,
        write: &t.write,
        runtime_ns: t.runtime_ns,
        cpu: &t.cpu_usage,
        errors: &t.errors,
        lat_hex: vec![t.histograms.lat_hex.as_str()],
    }
}

/// fio's group_reporting: the run's total under the first target's name
/// (fio names the group after its first job), every target's file.
fn run_source<'a>(run: &'a results::RunResult, first: &'a results::TargetResult) -> Source<'a> {
    let paths: Vec<&str> = run.targets.iter().map(|t| t.path.as_str()).collect();
    Source {
        name: first.label.clone().unwrap_or_else(|| first.path.clone()),
        path: paths.join(":"),
        workload: &first.workload,
        read: &run.read,
        write: &run.write,
        runtime_ns: run.runtime_ns,
        cpu: &run.cpu_usage,
        errors: &run.errors,
        lat_hex: run
            .targets
            .iter()
            .map(|t| t.histograms.lat_hex.as_str())
            .collect(),
    }
}

/// The document as fio prints it (pretty JSON and a newline).
pub fn to_string(runs: &[results::RunResult], group_reporting: bool) -> String {
    serde_json::to_string_pretty(&document(runs, group_reporting)).unwrap_or_default() + "\n"
}

/// fio's JSON of a saved result set (`numio report FILE --fio-json`): each
/// run, in the order it ran, is a group; its engine result (`raw`) is
/// what is converted.
pub fn from_set(
    set: &crate::ResultSet,
    group_reporting: bool,
) -> Result<String, crate::ReportError> {
    let mut runs = Vec::new();
    for (arm, run) in set.runs_in_order() {
        let raw = run.raw.clone().ok_or_else(|| crate::ReportError::Invalid {
            what: format!("run {} of arm {}", run.seq, arm.label),
            reason: "the file keeps no engine result (`raw`) to convert to fio's JSON; save runs with `numio bench --save` of this version".into(),
        })?;
        let parsed: results::RunResult =
            serde_json::from_value(raw).map_err(|e| crate::ReportError::Invalid {
                what: format!("run {} of arm {}", run.seq, arm.label),
                reason: format!("its engine result does not read as numio's run schema: {e}"),
            })?;
        runs.push(parsed);
    }
    Ok(to_string(&runs, group_reporting))
}
