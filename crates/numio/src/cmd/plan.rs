//! `numio plan`: place jobs on CPUs and print the plan as a numio plan file,
//! a fio job file, numactl command lines, JSON or a table.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use planner::fio::units::{parse_size_bytes, parse_size_range, parse_time_ns};
use planner::fio::{load_job_file, ParseOptions};
use planner::{
    DeviceBacking, Distribution, Placement, PlanRequest, Policy, RwMode, TargetDevice, TargetSpec,
    Workload,
};
use topology::Topology;

/// Output formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// A table for people.
    Text,
    /// A plan file that `numio bench --plan FILE` runs unchanged.
    Numio,
    /// A fio job file.
    Fio,
    /// One numactl command line per target.
    Numactl,
    /// The placement as JSON.
    Json,
}

/// Placement policies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum PolicyArg {
    /// CPUs of each target's NUMA node, cores shared evenly, SMT siblings last.
    Local,
    /// All CPUs round-robin, ignoring locality.
    Spread,
    /// No pinning.
    None,
}

/// Flags of `numio plan`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Targets: /dev/nvme0n1, nvme0n1, /dev/ng0n1, partitions, files.
    #[arg(value_name = "TARGET")]
    pub targets: Vec<String>,
    /// Plan a fio job file instead of TARGETs (its filename, cpus_allowed, … are kept).
    #[arg(long, value_name = "JOB.fio", conflicts_with = "targets")]
    pub fio: Option<PathBuf>,
    /// With --fio: `auto` places jobs that have no CPUs with the local policy.
    #[arg(long, value_name = "auto|off", default_value = "off")]
    pub numa: String,
    /// With --fio: skip unsupported fio options with a warning.
    #[arg(long)]
    pub ignore_unknown: bool,
    /// With --fio: use only this section (repeatable).
    #[arg(long, value_name = "NAME")]
    pub section: Vec<String>,
    /// Placement policy.
    #[arg(long, value_enum, default_value = "local")]
    pub policy: PolicyArg,
    /// Explicit CPUs of a target, e.g. `nvme0n1=0-3,112-115` (repeatable; implies explicit placement).
    #[arg(long, value_name = "TARGET=LIST")]
    pub cpus_for: Vec<String>,
    /// Output format.
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,
    /// Also save the plan file (`--format numio`) to FILE, for `numio bench --plan FILE`.
    #[arg(long, value_name = "FILE")]
    pub save: Option<PathBuf>,
    /// Write the output to FILE instead of stdout.
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Topology source: a sysfs/procfs root, a `.tar.gz` snapshot, or a `numio topo --json` file.
    #[arg(long, value_name = "DIR|FILE", default_value = "/")]
    pub root: PathBuf,
    /// fio rw: read, write, randread, randwrite, rw, randrw.
    #[arg(long, default_value = "randread")]
    pub rw: String,
    /// Block size or range (4k, 4k-64k).
    #[arg(long, default_value = "4k")]
    pub bs: String,
    /// I/Os in flight per job.
    #[arg(long, default_value_t = 64)]
    pub iodepth: u32,
    /// Jobs per target.
    #[arg(long, default_value_t = 1)]
    pub jobs: u32,
    /// Measured run time (30s, 1h, 100ms; bare: seconds).
    #[arg(long, default_value = "10s")]
    pub runtime: String,
    /// Warm-up time, not measured.
    #[arg(long, default_value = "0")]
    pub ramp_time: String,
    /// Bytes per job (default: the whole target).
    #[arg(long)]
    pub size: Option<String>,
    /// Start offset.
    #[arg(long, default_value = "0")]
    pub offset: String,
    /// Read percentage of mixed modes.
    #[arg(long, default_value_t = 50)]
    pub rwmixread: u8,
    /// IOPS cap per job.
    #[arg(long)]
    pub rate_iops: Option<u64>,
    /// Zipf θ of random offsets (default: uniform).
    #[arg(long)]
    pub zipf: Option<f64>,
    /// Buffered I/O instead of O_DIRECT.
    #[arg(long)]
    pub buffered: bool,
    /// numio backend of every target: uring, passthru, sync, null.
    #[arg(long)]
    pub backend: Option<String>,
}

/// Runs `numio plan`.
pub fn run(args: Args) -> anyhow::Result<i32> {
    let placement = placement(&args)?;
    for w in &placement.warnings {
        eprintln!("numio: warning: {w}");
    }
    if let Some(path) = &args.save {
        placement.save(path)?;
        eprintln!(
            "numio: saved the plan to {}; run it with `numio bench --plan {}`",
            path.display(),
            path.display()
        );
    }
    let text = render(&placement, args.format);
    match &args.output {
        Some(path) => {
            std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))?
        }
        None => print!("{text}"),
    }
    Ok(0)
}

/// The plan `args` ask for: from TARGETs and a policy, or from a fio job file.
pub fn placement(args: &Args) -> anyhow::Result<Placement> {
    let topo = read_topology(&args.root)?;
    match &args.fio {
        Some(path) => from_fio(args, path, &topo),
        None => Ok(planner::plan(&topo, &request(args, &topo)?)?),
    }
}

/// The placement in `format`.
pub fn render(placement: &Placement, format: Format) -> String {
    match format {
        Format::Text => text_table(placement),
        Format::Numio => placement.to_plan_file(),
        Format::Fio => planner::fio::to_job_file(placement),
        Format::Numactl => planner::numactl::to_numactl(placement),
        Format::Json => {
            let mut s =
                serde_json::to_string_pretty(placement).expect("a placement always serializes");
            s.push('\n');
            s
        }
    }
}

/// Reads the topology from a root directory, a snapshot or a JSON model.
pub fn read_topology(root: &Path) -> anyhow::Result<Topology> {
    if root.extension().is_some_and(|e| e == "json") {
        let text =
            std::fs::read_to_string(root).with_context(|| format!("reading {}", root.display()))?;
        return serde_json::from_str(&text)
            .with_context(|| format!("{}: not a `numio topo --json` topology", root.display()));
    }
    Ok(Topology::load(root)?)
}

fn from_fio(args: &Args, path: &Path, topo: &Topology) -> anyhow::Result<Placement> {
    let numa_auto = match args.numa.as_str() {
        "auto" => true,
        "off" => false,
        other => bail!("--numa {other}: use `auto` or `off`"),
    };
    let opts = ParseOptions {
        ignore_unknown: args.ignore_unknown,
        sections: args.section.clone(),
    };
    let job = load_job_file(path, &opts)?;
    Ok(job.to_placement(topo, numa_auto)?)
}

/// The TARGETs, or every NVMe namespace of the topology when none are named.
fn targets(args: &Args, topo: &Topology) -> anyhow::Result<Vec<String>> {
    if !args.targets.is_empty() {
        return Ok(args.targets.clone());
    }
    let mut all: Vec<String> = Vec::new();
    for ns in topo.subsystems.iter().flat_map(|s| &s.namespaces) {
        let path = format!("/dev/{}", ns.block_device);
        if !all.contains(&path) {
            all.push(path);
        }
    }
    if all.is_empty() {
        bail!("no targets and no NVMe namespace in the topology: name devices or files, e.g. `numio plan /dev/nvme0n1`, or pass --fio JOB.fio");
    }
    Ok(all)
}

/// `--cpus-for TARGET=LIST` values (shared with `numio bench`).
pub fn parse_cpus_for(items: &[String]) -> anyhow::Result<Vec<(String, Vec<topology::CpuId>)>> {
    let mut lists = Vec::new();
    for item in items {
        let Some((target, list)) = item.split_once('=') else {
            bail!("--cpus-for {item}: write TARGET=LIST, e.g. nvme0n1=0-3,112-115");
        };
        let cpus = planner::cpuset::parse_cpu_list(list)
            .map_err(|e| anyhow::anyhow!("--cpus-for {item}: {e}"))?;
        lists.push((target.to_string(), cpus));
    }
    Ok(lists)
}

fn request(args: &Args, topo: &Topology) -> anyhow::Result<PlanRequest> {
    let targets = targets(args, topo)?;
    let policy = if args.cpus_for.is_empty() {
        match args.policy {
            PolicyArg::Local => Policy::Local,
            PolicyArg::Spread => Policy::Spread,
            PolicyArg::None => Policy::None,
        }
    } else {
        if args.policy != PolicyArg::Local {
            bail!("--cpus-for places targets explicitly; drop --policy");
        }
        Policy::Explicit(parse_cpus_for(&args.cpus_for)?)
    };
    let mut specs = target_specs(&args.root, &targets);
    for s in &mut specs {
        s.backend = args.backend.clone();
    }
    Ok(PlanRequest {
        targets: specs,
        workload: workload(args)?,
        policy,
    })
}

/// The targets as the planner takes them: on the live machine (`root` is
/// `/`), each with what topology finds under it ([`target_device`]);
/// elsewhere (a snapshot or fixture) by name alone. Shared with `numio bench`.
pub fn target_specs(root: &Path, targets: &[String]) -> Vec<TargetSpec> {
    targets
        .iter()
        .map(|t| TargetSpec {
            device: target_device(root, t),
            ..TargetSpec::new(t.clone())
        })
        .collect()
}

/// What is under `target` on the live machine, for the planner: the kernel
/// name behind a `/dev` link such as `/dev/disk/by-id/nvme-…` (`nvme0n1`);
/// for a file, or a device-mapper / md / loop device, the NVMe namespaces
/// (and other disks) beneath it, from topology's device stack. `None` where
/// the name says it all (`/dev/nvme0n1`, `/dev/ng0n1`, partitions), for a
/// snapshot or fixture root, an `nvme-tcp://` target, or a path that cannot
/// be stat'ed.
pub fn target_device(root: &Path, target: &str) -> Option<TargetDevice> {
    use topology::device::{stat_path, PathDevice};
    if root != Path::new("/") || target.starts_with("nvme-tcp://") {
        return None;
    }
    let path = Path::new(target);
    match stat_path(path).ok()? {
        PathDevice::Block(dev) => {
            let stack = topology::device::block_stack(root, dev).ok()?;
            if stack.is_plain_nvme() {
                return link_name(path).map(TargetDevice::Name);
            }
            Some(TargetDevice::Stack(backing(&stack, stack.describe())))
        }
        PathDevice::File { on } if on.is_anonymous() => Some(TargetDevice::Stack(DeviceBacking {
            via: format!("a file on a filesystem without a block device (device {on}: tmpfs, btrfs, overlay, NFS, ...)"),
            namespaces: Vec::new(),
            others: Vec::new(),
        })),
        PathDevice::File { on } => {
            let stack = topology::device::block_stack(root, on).ok()?;
            let via = format!("a file on {}", stack.describe());
            Some(TargetDevice::Stack(backing(&stack, via)))
        }
        PathDevice::Char(_) | PathDevice::Other => link_name(path).map(TargetDevice::Name),
    }
}

fn backing(stack: &topology::device::DeviceStack, via: String) -> DeviceBacking {
    DeviceBacking {
        via,
        namespaces: stack
            .namespaces
            .iter()
            .map(|n| n.block_device.clone())
            .collect(),
        others: stack.others.clone(),
    }
}

/// The kernel name behind a `/dev` link (`/dev/disk/by-id/nvme-…` →
/// `nvme0n1`); `None` for a path that is not such a link.
fn link_name(path: &Path) -> Option<String> {
    if !path.starts_with("/dev/") || !path.symlink_metadata().ok()?.file_type().is_symlink() {
        return None;
    }
    let real = std::fs::canonicalize(path).ok()?;
    real.strip_prefix("/dev")
        .ok()
        .filter(|rest| rest.components().count() == 1)
        .map(|rest| rest.to_string_lossy().into_owned())
}

fn workload(a: &Args) -> anyhow::Result<Workload> {
    let Some(rw) = RwMode::from_fio_name(&a.rw) else {
        bail!(
            "--rw {}: use read, write, randread, randwrite, rw or randrw",
            a.rw
        );
    };
    let (bs_min_bytes, bs_max_bytes) =
        parse_size_range(&a.bs).map_err(|e| anyhow::anyhow!("--bs: {e}"))?;
    let secs = 1_000_000_000;
    let runtime_ns =
        parse_time_ns(&a.runtime, secs).map_err(|e| anyhow::anyhow!("--runtime: {e}"))?;
    let size_bytes = match &a.size {
        Some(s) => Some(parse_size_bytes(s).map_err(|e| anyhow::anyhow!("--size: {e}"))?),
        None => None,
    };
    if a.jobs == 0 || a.iodepth == 0 || a.rwmixread > 100 {
        bail!("--jobs and --iodepth must be at least 1, --rwmixread at most 100");
    }
    let random_distribution = match a.zipf {
        Some(t) if t > 0.0 && t != 1.0 && t.is_finite() => Distribution::Zipf(t),
        Some(t) => bail!("--zipf {t}: θ must be > 0 and ≠ 1"),
        None => Distribution::Uniform,
    };
    Ok(Workload {
        rw,
        rwmixread: a.rwmixread,
        bs_min_bytes,
        bs_max_bytes,
        iodepth: a.iodepth,
        numjobs: a.jobs,
        size_bytes,
        offset_bytes: parse_size_bytes(&a.offset).map_err(|e| anyhow::anyhow!("--offset: {e}"))?,
        runtime_ns: (runtime_ns > 0).then_some(runtime_ns),
        ramp_time_ns: parse_time_ns(&a.ramp_time, secs)
            .map_err(|e| anyhow::anyhow!("--ramp-time: {e}"))?,
        rate_iops: a.rate_iops,
        random_distribution,
        direct: !a.buffered,
        ..Workload::default()
    })
}

fn text_table(p: &Placement) -> String {
    use topology::CpuList;
    let mut out = format!("policy {}\n", p.policy);
    out.push_str(&format!(
        "{:<20} {:>5} {:<24} {:<8} JOB CPUS\n",
        "TARGET", "NODE", "CPUS", "MEMORY"
    ));
    for t in &p.targets {
        let node = t.node.map_or("?".to_string(), |n| n.0.to_string());
        let same = t.jobs.len() > 1 && t.jobs.iter().all(|j| j.cpus == t.jobs[0].cpus);
        let jobs: Vec<String> = t
            .jobs
            .iter()
            .map(|j| {
                if j.cpus.is_empty() {
                    "-".to_string()
                } else {
                    CpuList::of(&j.cpus).to_string()
                }
            })
            .collect();
        let mem = match t.jobs.first().map(|j| &j.mem) {
            Some(planner::MemPolicy::Local) => "local".to_string(),
            Some(planner::MemPolicy::Bind(n)) => format!(
                "bind:{}",
                n.iter()
                    .map(|x| x.0.to_string())
                    .collect::<Vec<_>>()
                    .join(",")
            ),
            _ => "default".to_string(),
        };
        let cpus = if t.cpus.is_empty() {
            "-".to_string()
        } else {
            CpuList::of(&t.cpus).to_string()
        };
        out.push_str(&format!(
            "{:<20} {:>5} {:<24} {:<8} {}\n",
            t.path,
            node,
            cpus,
            mem,
            if same {
                format!("{} jobs, each on {}", t.jobs.len(), jobs[0])
            } else {
                jobs.join(" ")
            }
        ));
        for n in &t.notes {
            out.push_str(&format!("  note: {n}\n"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: Args,
    }

    fn repo(rel: &str) -> String {
        format!("{}/../../{rel}", env!("CARGO_MANIFEST_DIR"))
    }

    fn plan_text(argv: &[&str]) -> anyhow::Result<String> {
        let mut full = vec!["plan".to_string()];
        full.extend(argv.iter().map(|s| s.to_string()));
        let args = Cli::try_parse_from(full)?.args;
        Ok(render(&placement(&args)?, args.format))
    }

    fn sixteen(extra: &[&str]) -> anyhow::Result<String> {
        let root = repo("tests/fixtures/sysfs/2s-448cpu-16nvme");
        let drives: Vec<String> = (0..16).map(|i| format!("/dev/nvme{i}n1")).collect();
        let mut argv: Vec<&str> = vec!["--root", &root, "--jobs", "4"];
        argv.extend(drives.iter().map(String::as_str));
        argv.extend(extra);
        plan_text(&argv)
    }

    #[test]
    fn sixteen_drives_in_every_format() {
        let text = sixteen(&[]).unwrap();
        let line = text
            .lines()
            .find(|l| l.starts_with("/dev/nvme15n1"))
            .unwrap();
        let cols: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(cols[1..4], ["0", "60-63,172-175", "local"], "{text}");
        let fio = sixteen(&["--format", "fio"]).unwrap();
        assert!(
            fio.contains("; /dev/nvme1n1: node 0, CPUs 4-7,116-119\n[nvme1n1]"),
            "{fio}"
        );
        assert!(
            fio.contains("cpus_allowed=60-63\ncpus_allowed_policy=split"),
            "{fio}"
        );
        let numactl = sixteen(&["--format", "numactl"]).unwrap();
        assert!(numactl
            .contains("numactl --physcpubind=4-7,116-119 --localalloc -- fio --name=nvme1n1"));
        let plan = sixteen(&["--format", "numio"]).unwrap();
        let back = Placement::from_plan_file(&plan, Path::new("plan.json")).unwrap();
        assert_eq!(back.targets.len(), 16);
        let json = sixteen(&["--format", "json"]).unwrap();
        let value: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(value["policy"], "local");
    }

    #[test]
    fn explicit_cpus_and_fio_input() {
        let root = repo("tests/fixtures/sysfs/2s-448cpu-16nvme");
        let fio = plan_text(&[
            "--root",
            &root,
            "/dev/nvme0n1",
            "--cpus-for",
            "nvme0n1=200-201",
            "--jobs",
            "2",
            "--format",
            "fio",
        ])
        .unwrap();
        assert!(
            fio.contains("cpus_allowed=200-201\ncpus_allowed_policy=split"),
            "{fio}"
        );
        let err = plan_text(&[
            "--root",
            &root,
            "/dev/nvme0n1",
            "--cpus-for",
            "nvme0n1=1",
            "--policy",
            "spread",
        ])
        .unwrap_err();
        assert!(err.to_string().contains("drop --policy"), "{err}");
        let job = repo("tests/fixtures/fio/vendor-16.fio");
        let fio = plan_text(&["--root", &root, "--fio", &job, "--format", "fio"]).unwrap();
        assert!(
            fio.contains("[drive1]") && fio.contains("cpus_allowed=4-7,116-119"),
            "{fio}"
        );
    }

    #[test]
    fn bad_flags_say_what_to_write() {
        let root = repo("tests/fixtures/sysfs/one-node-1nvme");
        let err = |argv: &[&str]| plan_text(argv).unwrap_err().to_string();
        assert!(
            err(&["--root", &root, "/dev/nvme0n1", "--rw", "bogus"]).contains("use read, write")
        );
        assert!(err(&["--root", &root, "/dev/nvme0n1", "--bs", "4q"]).contains("--bs"));
        let none = repo("tests/fixtures/sysfs/no-nvme");
        assert!(err(&["--root", &none]).contains("no targets"));
        let all = plan_text(&["--root", &root]).unwrap();
        assert!(all.contains("/dev/nvme0n1"), "{all}");
        assert!(err(&["--root", &root, "x", "--cpus-for", "x"]).contains("TARGET=LIST"));
        assert!(err(&["--root", "/nonexistent", "x"]).contains("/nonexistent"));
    }
}
