//! `numio plan`: place jobs on CPUs and print the plan as a numio plan file,
//! a fio job file, numactl command lines, JSON or a table.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use planner::fio::{load_job_file, ParseOptions};
use planner::{Placement, PlanRequest, Policy};
use topology::Topology;

use super::flags::{BackendArg, WorkloadArgs};

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

/// Flags of `numio plan`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Targets: /dev/nvme0n1, nvme0n1, /dev/ng0n1, partitions, files.
    #[arg(value_name = "TARGET")]
    pub targets: Vec<String>,
    /// Plan a fio job file instead of TARGETs (its filename, cpus_allowed, … are kept).
    #[arg(long, value_name = "JOB.fio", conflicts_with = "targets")]
    pub fio: Option<PathBuf>,
    /// Placement, as bench and sweep take it: local (CPUs of each target's
    /// node, the default), spread, none; with --fio, auto (or local)
    /// places the jobs that name no CPUs, none leaves them where the file
    /// says. `--policy` is the older name.
    #[arg(long, value_enum, value_name = "POLICY", alias = "policy")]
    pub numa: Option<super::flags::NumaArg>,
    /// With --fio: skip unsupported fio options with a warning.
    #[arg(long)]
    pub ignore_unknown: bool,
    /// With --fio: use only this section (repeatable).
    #[arg(long, value_name = "NAME")]
    pub section: Vec<String>,
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
    /// numio backend of every target [default: numio bench's --backend].
    #[arg(long, value_enum, value_name = "NAME")]
    pub backend: Option<BackendArg>,
    #[command(flatten)]
    pub workload: WorkloadArgs,
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
        Format::Text => report::plan::text(placement),
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
    use super::flags::NumaArg;
    let numa_auto = match args.numa {
        None | Some(NumaArg::None) => false,
        Some(NumaArg::Auto | NumaArg::Local) => true,
        Some(NumaArg::Spread) => anyhow::bail!("--numa spread with --fio: use auto or none"),
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

/// Refuses a target path (one with a `/`; bare names such as `nvme0n1` are
/// topology's to find; NVMe-oF URLs and `pci:` addresses are resolved
/// through routes and the PCI tree) that does not exist on this machine:
/// the planner would take it for a file on an unknown node.
fn check_paths_exist(targets: &[String]) -> anyhow::Result<()> {
    for t in targets {
        match planner::TargetAddr::parse(t) {
            planner::TargetAddr::Pci(rest) => {
                let addr = rest.split('/').next().unwrap_or(rest);
                let found = topology::pci::parse_address(addr).and_then(|a| {
                    topology::pci::pci_function(Path::new("/"), &a)
                        .ok()
                        .flatten()
                });
                if found.is_none() {
                    bail!("{t}: no PCI function {addr} on this machine; `numio vfio status` lists its NVMe controllers (pci:DDDD:BB:SS.F/NSID)");
                }
                continue;
            }
            planner::TargetAddr::Fabric(..) => continue,
            planner::TargetAddr::Path(_) => {}
        }
        let (here, dev) = (Path::new(t), Path::new("/dev").join(t));
        if !t.contains('/') && !t.is_empty() && !here.exists() && !dev.exists() {
            bail!("{t} is not a device of this machine (no /dev/{t}); `numio topo` lists its NVMe namespaces, or plan for another machine with --root SNAPSHOT");
        }
        if t.contains('/') && std::fs::metadata(t).is_err() {
            bail!("{t} does not exist; name a block device, a file or an NVMe namespace (`numio topo` lists them), or plan for another machine with --root SNAPSHOT");
        }
    }
    Ok(())
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
    if args.root == Path::new("/") {
        check_paths_exist(&targets)?;
    }
    let policy = if args.cpus_for.is_empty() {
        use super::flags::NumaArg;
        match args.numa {
            None | Some(NumaArg::Local | NumaArg::Auto) => Policy::Local,
            Some(NumaArg::Spread) => Policy::Spread,
            Some(NumaArg::None) => Policy::None,
        }
    } else {
        if args.numa.is_some() {
            bail!("--cpus-for places targets explicitly; drop --numa");
        }
        Policy::Explicit(parse_cpus_for(&args.cpus_for)?)
    };
    let mut specs = session::targets::target_specs(&args.root, &targets);
    for s in &mut specs {
        s.backend = args
            .backend
            .map(|b| engine::BackendKind::from(b).name().to_string());
    }
    Ok(PlanRequest {
        targets: specs,
        workload: args.workload.workload()?,
        policy,
    })
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
        assert!(err.to_string().contains("drop --numa"), "{err}");
        let job = repo("tests/fixtures/fio/vendor-16.fio");
        let fio = plan_text(&["--root", &root, "--fio", &job, "--format", "fio"]).unwrap();
        assert!(
            fio.contains("[drive1]") && fio.contains("cpus_allowed=4-7,116-119"),
            "{fio}"
        );
    }

    /// Regression (issue #15): on a kernel without NVMe subsystems the
    /// namespace was "not a namespace of this topology" and planned on
    /// node 0; a job is never shown on "-".
    #[test]
    fn older_kernels_plan_on_the_drives_node_and_never_on_a_dash() {
        for (fixture, target) in [
            ("nvme-no-subsystems", "/dev/nvme1n1"),
            ("nvme-misc-class", "/dev/nvme1n2"),
        ] {
            let root = repo(&format!("tests/fixtures/sysfs/{fixture}"));
            let text = plan_text(&["--root", &root, target, "--jobs", "2"]).unwrap();
            let line = text.lines().find(|l| l.starts_with(target)).unwrap();
            let cols: Vec<&str> = line.split_whitespace().collect();
            assert_eq!(cols[1..4], ["1", "4-5", "local"], "{fixture}: {text}");
            let none = plan_text(&["--root", &root, target, "--policy", "none"]).unwrap();
            assert!(none.contains("any") && !none.contains(" -"), "{none}");
        }
    }

    #[test]
    fn bad_flags_say_what_to_write() {
        let root = repo("tests/fixtures/sysfs/one-node-1nvme");
        let err = |argv: &[&str]| plan_text(argv).unwrap_err().to_string();
        let rw = err(&["--root", &root, "/dev/nvme0n1", "--rw", "bogus"]);
        assert!(
            rw.contains("'bogus' for '--rw <MODE>'")
                && rw.contains("possible values: read, write, randread"),
            "{rw}"
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
