//! The shared flag tables: one workload section in the help of `plan`,
//! `bench` and `compare`, the old spellings as aliases, fio's units
//! through the planner's parser, and errors that name the flag.

use super::*;
use clap::{CommandFactory, Parser};
use planner::flags::{parse_bs, parse_duration_ns, parse_size};
use planner::overrides::WorkloadField;
use planner::Distribution;

#[derive(Debug, Parser)]
struct Workload {
    #[command(flatten)]
    w: WorkloadArgs,
}

fn parse(argv: &[&str]) -> anyhow::Result<planner::Workload> {
    let argv = std::iter::once("numio").chain(argv.iter().copied());
    Workload::try_parse_from(argv)?.w.workload()
}

fn err(argv: &[&str]) -> String {
    format!("{:#}", parse(argv).unwrap_err())
}

#[test]
fn sizes_and_ranges_use_fio_units() {
    assert_eq!(parse_size("size", "4k").unwrap(), 4096);
    assert_eq!(parse_size("size", "1GiB").unwrap(), 1 << 30);
    assert_eq!(parse_size("size", "1.5k").unwrap(), 1536);
    assert_eq!(parse_bs("4k-64k").unwrap(), (4096, 65536));
    assert_eq!(parse_bs("1.5k").unwrap(), (1536, 1536));
    assert!(parse_bs("0").is_err());
    let e = parse_size("size", "-1").unwrap_err().to_string();
    assert_eq!(e, "--size=-1: must not be negative");
    let e = parse_size("offset", "4x").unwrap_err().to_string();
    assert_eq!(
        e,
        "--offset=4x: unknown size suffix `x` (use k, m, g, t or p)"
    );
    let e = parse_bs("64k-4k").unwrap_err().to_string();
    assert!(
        e.starts_with("--bs=64k-4k: a block size range needs 0 < min <= max"),
        "{e}"
    );
}

#[test]
fn durations() {
    assert_eq!(parse_duration_ns("runtime", "10").unwrap(), 10_000_000_000);
    assert_eq!(parse_duration_ns("runtime", "500ms").unwrap(), 500_000_000);
    assert_eq!(parse_duration_ns("runtime", "2m").unwrap(), 120_000_000_000);
    let e = parse_duration_ns("runtime", "-5").unwrap_err().to_string();
    assert!(e.contains("--runtime=-5") && e.contains("negative"), "{e}");
    let e = parse_duration_ns("ramp-time", "3x")
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with("--ramp-time=3x: unknown time suffix `x`"),
        "{e}"
    );
}

#[test]
fn workload_errors_name_the_flag() {
    assert!(err(&["--iodepth", "0"]).contains("--iodepth=0"));
    assert!(err(&["--numjobs", "-1"]).contains("--numjobs=-1: must be at least 1"));
    // Issue #16: --jobs had no upper bound (10000 took 8 GB and crashed).
    let e = err(&["--jobs", "10000"]);
    assert!(
        e.contains("--numjobs=10000: must be at least 1 and at most 4096 jobs per target"),
        "{e}"
    );
    let e = err(&["--iodepth", "1000000"]);
    assert!(
        e.contains("--iodepth=1000000: must be at least 1 and at most 65536"),
        "{e}"
    );
    let rw = err(&["--rw", "randomread"]);
    assert!(rw.contains("'randomread' for '--rw <MODE>'"), "{rw}");
    let w = parse(&[
        "--rw",
        "randrw",
        "--random-distribution",
        "zipf:1.2",
        "--iodepth",
        "8",
    ])
    .unwrap();
    assert_eq!(w.random_distribution, Distribution::Zipf(1.2));
    assert_eq!((w.rw, w.iodepth), (RwMode::RandRw, 8));
    let e = err(&["--random-distribution", "zipf:1.2", "--randommap"]);
    assert!(
        e.contains("--randommap with --random-distribution=zipf:1.2"),
        "{e}"
    );
    let e = err(&["--random-distribution", "pareto:0.3"]);
    assert!(
        e.contains("--random-distribution=pareto:0.3") && e.contains("not implemented"),
        "{e}"
    );
    assert!(err(&["--zipf", "1"]).contains("--zipf=1: θ 1: zipf needs θ > 0 and θ ≠ 1"));
}

/// `plan` said `--ramp-time`, `--zipf` and `--jobs` where `bench` said
/// `--ramp`, `--random-distribution` and `--jobs`: every spelling works,
/// and fio's own (underscores) too.
#[test]
fn old_spellings_and_fio_underscores_are_aliases() {
    let ramp = |flag: &str| parse(&[flag, "2s"]).unwrap().ramp_time_ns;
    for flag in ["--ramp-time", "--ramp", "--ramp_time"] {
        assert_eq!(ramp(flag), 2_000_000_000, "{flag}");
    }
    for flag in ["--numjobs", "--jobs"] {
        assert_eq!(parse(&[flag, "3"]).unwrap().numjobs, 3, "{flag}");
    }
    let zipf = parse(&["--zipf", "1.2"]).unwrap();
    let dist = parse(&["--random_distribution", "zipf:1.2"]).unwrap();
    assert_eq!(zipf.random_distribution, Distribution::Zipf(1.2));
    assert_eq!(zipf, dist);
    let w = parse(&["--rate_iops", "5", "--number_ios", "7", "--rw", "readwrite"]).unwrap();
    assert_eq!(
        (w.rate_iops, w.number_ios, w.rw),
        (Some(5), Some(7), RwMode::ReadWrite)
    );
    let both =
        Workload::try_parse_from(["numio", "--zipf", "1.2", "--random-distribution", "zipf"]);
    assert!(both
        .unwrap_err()
        .to_string()
        .contains("cannot be used with"));
}

#[test]
fn defaults_are_numio_s_main_job() {
    assert_eq!(parse(&[]).unwrap(), planner::Workload::default());
}

#[test]
fn percentiles() {
    assert_eq!(
        parse_percentiles("99.99,50,99").unwrap(),
        vec![50.0, 99.0, 99.99]
    );
    assert!(parse_percentiles("101").is_err());
}

/// One table of backends: every engine backend has its value, named alike.
#[test]
fn the_backend_values_are_the_engine_s() {
    for kind in engine::BackendKind::ALL {
        let arg = BackendArg::from_str(kind.name(), false)
            .unwrap_or_else(|e| panic!("{}: {e}", kind.name()));
        assert_eq!(engine::BackendKind::from(arg), kind);
    }
    assert_eq!(
        BackendArg::value_variants().len(),
        engine::BackendKind::ALL.len()
    );
}

/// The "Workload" section of a subcommand's --help: its heading and the
/// indented lines under it, up to the next heading.
fn workload_section(sub: &str) -> String {
    let mut cli = crate::Cli::command();
    let help = cli
        .find_subcommand_mut(sub)
        .expect("subcommand")
        .render_long_help()
        .to_string();
    let mut lines = help
        .lines()
        .skip_while(|l| *l != "Workload (fio's names and units):");
    let heading = lines.next().expect("a workload section");
    let body = lines.take_while(|l| l.is_empty() || l.starts_with(' '));
    let text = std::iter::once(heading)
        .chain(body)
        .collect::<Vec<_>>()
        .join("\n");
    text.trim_end().to_string()
}

#[test]
fn plan_bench_and_compare_show_one_workload_section() {
    let bench = workload_section("bench");
    for flag in [
        "--rw <MODE>",
        "--numjobs <N>",
        "--ramp-time <TIME>",
        "--random-distribution <DIST>",
    ] {
        assert!(bench.contains(flag), "{flag} in {bench}");
    }
    assert!(bench.contains("[alias: --ramp]"), "{bench}");
    assert!(
        !bench.contains("--zipf"),
        "the old plan spelling stays hidden: {bench}"
    );
    assert_eq!(workload_section("plan"), bench);
    assert_eq!(workload_section("compare"), bench);
}

/// The fields `--LONG` given alone sets.
fn cli_fields(long: &str) -> Vec<WorkloadField> {
    let cmd = Workload::command();
    let a = cmd
        .get_arguments()
        .find(|a| a.get_long() == Some(long))
        .unwrap();
    let value = match a.get_action().takes_values() {
        false => None,
        true => Some(match long {
            "rw" => "randwrite",
            "bs" => "8k",
            "runtime" | "ramp-time" => "1s",
            "size" | "offset" => "4k",
            "random-distribution" => "zipf",
            "direct" => "0",
            "zipf" => "1.2",
            _ => "2",
        }),
    };
    let flag = format!("--{long}");
    let mut argv = vec!["numio", flag.as_str()];
    argv.extend(value);
    Workload::try_parse_from(argv)
        .unwrap_or_else(|e| panic!("{flag}: {e}"))
        .w
        .flags()
        .given_fields()
}

/// Every workload flag sets a field that applies over a plan or a job file
/// (`given_fields`, `planner::overrides`), or is named here as another
/// spelling of one that does: a new flag cannot be silently ignored over a
/// plan (issue 39).
#[test]
fn every_workload_flag_applies_over_a_plan() {
    let spellings = [
        ("zipf", "random-distribution"),
        ("direct", "buffered"),
        ("time_based", ""),
    ];
    let cmd = Workload::command();
    for a in cmd.get_arguments() {
        let Some(long) = a.get_long() else { continue };
        if long == "help" {
            continue;
        }
        let name = spellings
            .iter()
            .find(|(s, _)| *s == long)
            .map_or(long, |(_, n)| n);
        assert!(
            name.is_empty() || cli_fields(long).iter().any(|f| f.name() == name),
            "--{long} sets no WorkloadField in given_fields(): it would be ignored over a plan"
        );
    }
    let cli =
        Workload::try_parse_from(["numio", "--iodepth", "4", "--zipf", "1.2", "--direct", "0"])
            .unwrap();
    assert_eq!(
        cli.w.given(),
        ["iodepth", "random-distribution", "buffered"]
    );
    let mut plan = planner::Placement {
        targets: vec![planner::TargetPlacement {
            path: "/dev/x".into(),
            ..Default::default()
        }],
        ..Default::default()
    };
    let cli = Workload::try_parse_from(["numio", "--iodepth", "4", "--bs", "8k-16k"]).unwrap();
    let changed = cli.w.apply_over(&mut plan, "the plan p.json").unwrap();
    let w = &plan.targets[0].workload;
    assert_eq!(w.iodepth, 4);
    assert_eq!((w.bs_min_bytes, w.bs_max_bytes), (8192, 16384));
    assert!(
        changed.iter().any(|(path, c)| path == "/dev/x"
            && c.starts_with("from the command line over the plan p.json: bs=8192-16384 (was ")),
        "{changed:?}"
    );
}

/// `--numa`'s values are the planner's names (a fleet sweep passes
/// `--numa=NAME` on to each host's bench by the planner's name).
#[test]
fn numa_values_are_the_planners_names() {
    use clap::ValueEnum;
    for v in NumaArg::value_variants() {
        let clap_name = v.to_possible_value().unwrap().get_name().to_string();
        assert_eq!(clap_name, planner::flags::Numa::from(*v).name());
    }
    assert_eq!(NumaArg::from_str("remote", false), Ok(NumaArg::Remote));
}
