//! `numio plan`: place jobs on CPUs and print the plan as a numio plan file,
//! a fio job file, numactl command lines, JSON or a table.

use std::path::PathBuf;

use anyhow::Context;
use planner::Placement;

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
    /// node, the default), spread, remote, none; with --fio, auto (or local)
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

/// The plan `args` ask for: [`session::bench::plan_on_root`].
pub fn placement(args: &Args) -> anyhow::Result<Placement> {
    let placing = super::flags::placing(args.numa, None, &args.cpus_for);
    let backend = args.backend.map(|b| engine::BackendKind::from(b).name());
    let ask = session::bench::PlanAsk {
        root: &args.root,
        targets: &args.targets,
        fio: args.fio.as_deref(),
        ignore_unknown: args.ignore_unknown,
        sections: &args.section,
        placing: &placing,
        workload: &args.workload.flags(),
        backend,
    };
    let mut say = |line: String| eprintln!("numio: {line}");
    Ok(session::bench::plan_on_root(&ask, &mut say)?)
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

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;
    use std::path::Path;

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

    /// Issue 40: `--numa remote` puts every drive of socket 0 on socket 1,
    /// in the text view (the node's CPUs, `bind:1`) and the fio export.
    #[test]
    fn sixteen_drives_remote_run_on_the_other_socket() {
        let text = sixteen(&["--numa", "remote"]).unwrap();
        assert!(text.starts_with("policy remote\n"), "{text}");
        let line = text
            .lines()
            .find(|l| l.starts_with("/dev/nvme15n1"))
            .unwrap();
        let cols: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(cols[1..4], ["0", "284-287,396-399", "bind:1"], "{text}");
        assert!(text.contains("  note: remote: jobs on node 1 (distance 21"));
        let fio = sixteen(&["--numa", "remote", "--format", "fio"]).unwrap();
        assert!(
            fio.contains("cpus_allowed=284-287\ncpus_allowed_policy=split\nnuma_mem_policy=bind:1"),
            "{fio}"
        );
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
