//! `numio sweep AXIS=VALUES [AXIS=VALUES] [TARGETS] [bench workload flags]`:
//! one bench plan per point (the planner's local policy places the jobs),
//! run as a session schedule with one arm per point (`--repeat` rounds,
//! interleaved), then analysed by `report::sweep` (efficiency, knee,
//! saturation, CPU headroom) and printed as a table, JSON or a chart.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use clap::ValueEnum;
use planner::{PlanRequest, Policy};
use session::{interrupt, LiveArm, Schedule};
use topology::Topology;

use super::display::{Display, Runs};
use super::engine_args::EngineArgs;
use super::flags::{RwArg, WorkloadArgs};

/// The axes a sweep can vary.
pub const AXES: [&str; 6] = ["jobs", "iodepth", "bs", "devices", "rw", "rwmixread"];

/// Points above which a grid needs `--force`.
pub const MAX_POINTS: usize = 1000;

/// Flags of `numio sweep`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Axes (`jobs=1,2,4`, `iodepth=1,4,16,64`, `bs=4k,64k`,
    /// `devices=1,2,4`, `rw=randread,randwrite`, `rwmixread=50,70`; two
    /// make a grid), then the targets (none: as `numio bench`).
    #[arg(required = true, value_name = "AXIS=VALUES|TARGET")]
    pub words: Vec<String>,
    /// Runs per point, interleaved over the points.
    #[arg(long, default_value_t = 1, value_name = "N")]
    pub repeat: usize,
    /// Scaling efficiency below which a step is the knee.
    #[arg(long, default_value_t = report::sweep::DEFAULT_KNEE_EFFICIENCY, value_name = "FRACTION")]
    pub knee: f64,
    /// Print the sweep as JSON.
    #[arg(long)]
    pub json: bool,
    /// Write the chart (IOPS with error bars and the ideal line, CPU
    /// headroom) as SVG.
    #[arg(long, value_name = "FILE.svg")]
    pub chart: Option<PathBuf>,
    /// Run a grid of more than 1,000 points.
    #[arg(long)]
    pub force: bool,
    #[command(flatten)]
    pub workload: WorkloadArgs,
    #[command(flatten)]
    pub engine: EngineArgs,
}

/// One axis and its values as written.
#[derive(Debug, Clone, PartialEq)]
pub struct Axis {
    /// Its name, one of [`AXES`].
    pub name: String,
    /// The values, in order.
    pub values: Vec<String>,
}

/// Splits the words into axes and targets; errors name the word and the fix.
pub fn parse_words(words: &[String]) -> anyhow::Result<(Vec<Axis>, Vec<String>)> {
    let (mut axes, mut targets) = (Vec::<Axis>::new(), Vec::new());
    for w in words {
        let Some((name, list)) = w.split_once('=').filter(|(n, _)| !n.contains('/')) else {
            targets.push(w.clone());
            continue;
        };
        if !AXES.contains(&name) {
            bail!(
                "{w}: unknown axis `{name}`; the axes are {}",
                AXES.join(", ")
            );
        }
        let values: Vec<String> = list.split(',').map(str::trim).map(String::from).collect();
        if values.iter().any(String::is_empty) {
            bail!("{w}: an empty value; give a list such as {name}=1,2,4");
        }
        if let Some(v) = values
            .iter()
            .enumerate()
            .find(|(i, v)| values[..*i].contains(v))
        {
            bail!("{w}: {} is repeated; give each value once", v.1);
        }
        if axes.iter().any(|a| a.name == name) {
            bail!("{w}: axis {name} is given twice; give one list");
        }
        axes.push(Axis {
            name: name.to_string(),
            values,
        });
    }
    match axes.len() {
        0 => bail!(
            "no axis: give one such as jobs=1,2,4 (axes: {})",
            AXES.join(", ")
        ),
        1 | 2 => Ok((axes, targets)),
        n => bail!("{n} axes: a sweep has one, or two for a grid"),
    }
}

/// The workload flags with `axis` set to `value` (all but `devices`).
fn apply(w: &mut WorkloadArgs, axis: &str, value: &str) -> anyhow::Result<()> {
    let num = |v: &str| -> anyhow::Result<i64> {
        v.parse()
            .with_context(|| format!("{axis}={v}: not a whole number"))
    };
    match axis {
        "jobs" => w.numjobs = num(value)?,
        "iodepth" => w.iodepth = num(value)?,
        "bs" => w.bs = value.to_string(),
        "rwmixread" => {
            w.rwmixread = value
                .parse()
                .ok()
                .filter(|p| *p <= 100)
                .with_context(|| format!("rwmixread={value}: give a percentage 0-100"))?
        }
        "rw" => {
            w.rw = RwArg::from_str(value, true).map_err(|_| {
                anyhow::anyhow!("rw={value}: give read, write, randread, randwrite, rw or randrw")
            })?
        }
        _ => {}
    }
    Ok(())
}

/// A point's position on the chart's x axis: the number itself for numeric
/// axes (bs in bytes), else its place in the list.
fn x_of(axis: &str, value: &str, index: usize) -> f64 {
    match axis {
        "bs" => super::flags::parse_bs(value).map_or(index as f64, |(lo, _)| lo as f64),
        "rw" => index as f64,
        _ => value.parse().unwrap_or(index as f64),
    }
}

/// Every point of the grid: `(label, [value per axis])`, first axis fastest.
fn points(axes: &[Axis]) -> Vec<(String, Vec<(usize, String)>)> {
    let second: Vec<Option<(usize, &String)>> = match axes.get(1) {
        Some(a) => a.values.iter().enumerate().map(Some).collect(),
        None => vec![None],
    };
    let mut out = Vec::new();
    for s in &second {
        for (i, v) in axes[0].values.iter().enumerate() {
            let mut label = format!("{}={v}", axes[0].name);
            let mut values = vec![(i, v.clone())];
            if let Some((j, sv)) = s {
                label.push_str(&format!(" {}={sv}", axes[1].name));
                values.push((*j, (*sv).clone()));
            }
            out.push((label, values));
        }
    }
    out
}

/// Runs `numio sweep`.
pub fn run(args: Args) -> anyhow::Result<i32> {
    interrupt::install(super::display::on_signal)?;
    anyhow::ensure!(
        args.repeat >= 1,
        "--repeat {}: give 1 or more runs",
        args.repeat
    );
    anyhow::ensure!(
        args.knee > 0.0 && args.knee <= 1.0,
        "--knee {}: give a fraction in (0, 1], such as 0.8",
        args.knee
    );
    let (axes, given) = parse_words(&args.words)?;
    let grid = points(&axes);
    if grid.len() > MAX_POINTS && !args.force {
        bail!(
            "{} points: more than {MAX_POINTS}; narrow the axes or add --force",
            grid.len()
        );
    }
    let opts = args.engine.run_options()?;
    let topo = Topology::discover(Path::new("/")).map_err(|e| anyhow::anyhow!("{e}"))?;
    let base = args.workload.workload()?;
    let (targets, labels) = super::bench::choose_targets(&given, Some(&topo), &base)?;
    let mut arms = Vec::with_capacity(grid.len());
    for (label, values) in &grid {
        let mut o = opts.clone();
        o.labels = labels.clone();
        let placement = point_placement(&args.workload, &axes, values, &targets, &topo)
            .with_context(|| format!("point {label}"))?;
        for warn in &placement.warnings {
            eprintln!("numio: {label}: warning: {warn}");
        }
        arms.push(LiveArm {
            label: label.clone(),
            spec: label.clone(),
            placement,
            opts: o,
            settle_group: 0,
        });
    }
    let mut schedule = Schedule {
        arms,
        rounds: args.repeat,
    };
    schedule.group_by_targets();
    let labels: Vec<String> = schedule.arms.iter().map(|a| a.label.clone()).collect();
    let mut display = Display::new(
        args.engine.progress_mode(args.json),
        Runs::Compare {
            labels,
            rounds: args.repeat,
        },
    );
    let outcome = schedule.run(interrupt::flag(), &mut |e| display.event(e))?;
    if outcome.interrupted.is_some() {
        eprintln!(
            "numio: sweep interrupted: reporting the {} runs completed",
            outcome.completed()
        );
    }
    let sweeps = analyse(&axes, &outcome.arms, args.knee);
    print(&sweeps, &outcome.arms, args.json)?;
    if let Some(path) = &args.chart {
        write_chart(&sweeps, path)?;
    }
    let code = i32::from(outcome.failed_runs > 0);
    Ok(interrupt::exit_code().unwrap_or(code))
}

/// The plan of one point: the workload flags with the point's values, on
/// its targets (the first `devices`), placed by the local policy.
fn point_placement(
    flags: &WorkloadArgs,
    axes: &[Axis],
    values: &[(usize, String)],
    targets: &[String],
    topo: &Topology,
) -> anyhow::Result<planner::Placement> {
    let mut w = flags.clone();
    let mut use_targets = targets.to_vec();
    for (axis, (_, v)) in axes.iter().zip(values) {
        if axis.name == "devices" {
            let n: usize = v
                .parse()
                .ok()
                .filter(|n| *n >= 1)
                .with_context(|| format!("devices={v}: give a count of 1 or more"))?;
            anyhow::ensure!(
                n <= targets.len(),
                "devices={n}: only {} targets given ({}); name more targets",
                targets.len(),
                targets.join(", ")
            );
            use_targets.truncate(n);
        } else {
            apply(&mut w, &axis.name, v)?;
        }
    }
    let request = PlanRequest {
        targets: session::targets::target_specs(Path::new("/"), &use_targets),
        workload: w.workload()?,
        policy: Policy::Local,
    };
    Ok(planner::plan(topo, &request)?)
}

/// One analysis per value of the second axis (one in all without it).
fn analyse(axes: &[Axis], arms: &[report::Arm], knee: f64) -> Vec<report::sweep::Sweep> {
    let first = &axes[0];
    let xs: Vec<f64> = first
        .values
        .iter()
        .enumerate()
        .map(|(i, v)| x_of(&first.name, v, i))
        .collect();
    arms.chunks(first.values.len())
        .map(|chunk| report::sweep::analyze(&first.name, &xs, chunk, knee))
        .collect()
}

fn print(sweeps: &[report::sweep::Sweep], arms: &[report::Arm], json: bool) -> anyhow::Result<()> {
    if json {
        let value = serde_json::json!({
            "schema": "numio-sweep",
            "schema_version": 1,
            "sweeps": sweeps,
            "results": report::ResultSet::new(report::SetKind::Repeat, super::report::command_line(), super::report::now_unix_s(), arms.to_vec()),
        });
        println!("{}", serde_json::to_string_pretty(&value)?);
    } else {
        for s in sweeps {
            println!("{}", report::sweep::table(s));
        }
    }
    Ok(())
}

fn write_chart(sweeps: &[report::sweep::Sweep], path: &Path) -> anyhow::Result<()> {
    for (i, s) in sweeps.iter().enumerate() {
        let file = if sweeps.len() == 1 {
            path.to_path_buf()
        } else {
            let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("sweep");
            path.with_file_name(format!("{stem}-{}.svg", i + 1))
        };
        let title = format!("numio sweep: IOPS and CPU headroom against {}", s.axis);
        std::fs::write(&file, report::sweep::svg(s, &title))
            .with_context(|| format!("writing {}", file.display()))?;
        eprintln!("numio: chart written to {}", file.display());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(w: &[&str]) -> Vec<String> {
        w.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn axes_and_targets_are_told_apart_and_bad_axes_named() {
        let (axes, targets) =
            parse_words(&words(&["jobs=1,2", "/dev/nvme0n1", "iodepth=4,16"])).unwrap();
        assert_eq!(axes.len(), 2);
        assert_eq!(axes[1].values, ["4", "16"]);
        assert_eq!(targets, ["/dev/nvme0n1"]);
        let err = |w: &[&str]| parse_words(&words(w)).unwrap_err().to_string();
        assert!(err(&["cores=1,2"]).contains("unknown axis `cores`"));
        assert!(err(&["jobs=1,,2"]).contains("empty value"));
        assert!(err(&["jobs=1,2,1"]).contains("1 is repeated"));
        assert!(err(&["jobs=1", "jobs=2"]).contains("given twice"));
        assert!(err(&["/tmp/x"]).contains("no axis"));
        assert!(err(&["jobs=1", "bs=4k", "rw=read"]).contains("3 axes"));
    }

    #[test]
    fn a_grid_runs_the_first_axis_fastest() {
        let (axes, _) = parse_words(&words(&["jobs=1,2", "bs=4k,64k"])).unwrap();
        let labels: Vec<String> = points(&axes).into_iter().map(|(l, _)| l).collect();
        assert_eq!(
            labels,
            [
                "jobs=1 bs=4k",
                "jobs=2 bs=4k",
                "jobs=1 bs=64k",
                "jobs=2 bs=64k"
            ]
        );
        assert_eq!(x_of("bs", "64k", 1), 65536.0);
        assert_eq!(x_of("rw", "randread", 1), 1.0);
    }
}
