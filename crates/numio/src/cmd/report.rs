//! `numio report`: reprints a saved result file (single run, repeat set or
//! comparison) and exports it as CSV, JSON or a chart.

use std::path::PathBuf;

use anyhow::Context;

/// Flags of `numio report`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Result file written by `numio bench --save` or `numio compare --save`.
    pub file: PathBuf,
    /// Print the result set (with its analysis) as JSON instead of text.
    #[arg(long)]
    pub json: bool,
    /// Write a row per run per target as CSV to this file (`-`: standard output).
    #[arg(long, value_name = "OUT.csv")]
    pub csv: Option<PathBuf>,
    /// Draw the chart to this file: `.svg`, or `.png` (rasterized).
    #[arg(long, value_name = "OUT.svg|OUT.png", value_parser = parse_chart)]
    pub chart: Option<PathBuf>,
    /// Print the runs in fio's `--output-format=json` layout (one job per
    /// target of each run; each run a group) for fio-plot and fio parsers.
    #[arg(long, conflicts_with = "json")]
    pub fio_json: bool,
    /// With --fio-json: one job per run from its total, as fio's
    /// group_reporting prints.
    #[arg(long, requires = "fio_json")]
    pub group_reporting: bool,
    /// Every interval per target; --csv, --chart: the intervals'.
    #[arg(long, conflicts_with_all = ["json", "fio_json"])]
    pub intervals: bool,
}

/// Most runs `--repeat` asks for (as `numio compare --repeat`).
impl Args {
    /// Whether an export (JSON, fio JSON, CSV, chart) is asked for rather
    /// than the text the run printed.
    pub fn exports(&self) -> bool {
        self.json || self.fio_json || self.csv.is_some() || self.chart.is_some()
    }
}

pub const MAX_REPEAT: usize = 1000;

/// `--repeat N`: 1 to [`MAX_REPEAT`].
pub(crate) fn parse_repeat(text: &str) -> Result<usize, String> {
    match text.trim().parse::<usize>() {
        Ok(n) if (1..=MAX_REPEAT).contains(&n) => Ok(n),
        _ => Err(format!("--repeat={text}: give 1 to {MAX_REPEAT} runs")),
    }
}

use report::chart::parse_chart_path as parse_chart;

/// Runs `numio report`.
pub fn run(args: Args) -> anyhow::Result<i32> {
    let set = report::file::load(&args.file)?;
    if args.intervals {
        let (csv, chart) = (args.csv.as_deref(), args.chart.as_deref());
        let say = &mut |line| eprintln!("numio: {line}");
        report::intervals::output(&set, &args.file, csv, chart, &mut std::io::stdout(), say)?;
        return Ok(0);
    }
    if args.fio_json {
        let text = report::export::fio_json::from_set(&set, args.group_reporting)
            .with_context(|| format!("converting {} to fio's JSON", args.file.display()))?;
        super::topo::print_stdout(&text)?;
        return export_extras(&set, args.csv.as_deref(), args.chart.as_deref()).map(|()| 0);
    }
    finish(
        &set,
        None,
        args.csv.as_deref(),
        args.chart.as_deref(),
        args.json,
    )?;
    Ok(0)
}

/// Writes the CSV and the chart when asked (`report::output::extras`).
pub fn export_extras(
    set: &report::ResultSet,
    csv: Option<&std::path::Path>,
    chart: Option<&std::path::Path>,
) -> anyhow::Result<()> {
    let mut say = |line: String| eprintln!("numio: {line}");
    report::output::extras(set, csv, chart, &mut std::io::stdout().lock(), &mut say)?;
    Ok(())
}

/// The command line as typed, for the `command` field of result files.
pub fn command_line() -> String {
    std::env::args().collect::<Vec<_>>().join(" ")
}

pub use tune::journal::now_unix_s;

/// `--repeat`, `--save`, `--csv` and `--chart` of `numio bench`, to flatten
/// into its `Args` (`#[command(flatten)] pub repeat: RepeatArgs`).
#[derive(Debug, Clone, clap::Args)]
pub struct RepeatArgs {
    /// Run the same plan N times (each with its ramp) and report mean, median,
    /// min, max, stdev and CV of IOPS and latency over the runs, with outliers.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = parse_repeat)]
    pub repeat: usize,
    /// `--save`, `--csv`, `--chart`.
    #[command(flatten)]
    pub export: ExportArgs,
}

/// The result set of one arm's runs, made now by this command line: a
/// repeat set with several runs, a single one with one.
pub fn one_arm_set(arm: report::Arm) -> report::ResultSet {
    report::ResultSet::of_one_arm(arm, command_line(), now_unix_s())
}

/// Where a result set goes besides the terminal (`numio bench --repeat` and
/// `numio compare`).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct ExportArgs {
    /// Save every run to this JSON result file (reprint with `numio report`).
    #[arg(long, value_name = "FILE.json")]
    pub save: Option<PathBuf>,
    /// Write a row per run per target as CSV (`-`: standard output).
    #[arg(long, value_name = "OUT.csv")]
    pub csv: Option<PathBuf>,
    /// Draw IOPS per run, stdev % per target and latency percentiles (.svg or .png).
    #[arg(long, value_name = "OUT.svg|OUT.png", value_parser = parse_chart)]
    pub chart: Option<PathBuf>,
}

impl ExportArgs {
    /// Whether any output besides the terminal is asked for.
    pub fn any(&self) -> bool {
        self.save.is_some() || self.csv.is_some() || self.chart.is_some()
    }
    /// [`finish`] with these outputs: prints `set` (JSON with `json`),
    /// saves it, writes the CSV and the chart.
    pub fn finish(&self, set: &report::ResultSet, json: bool) -> anyhow::Result<()> {
        finish(
            set,
            self.save.as_deref(),
            self.csv.as_deref(),
            self.chart.as_deref(),
            json,
        )
    }
}

impl RepeatArgs {
    /// Whether any of these flags asks for the repeat path.
    pub fn wanted(&self) -> bool {
        self.repeat > 1 || self.export.any()
    }
}

/// Prints `set` (text, or JSON with `json`) unless the CSV goes to standard
/// output, then saves it and writes the CSV and the chart when asked
/// (`report::output::write`).
pub fn finish(
    set: &report::ResultSet,
    save: Option<&std::path::Path>,
    csv: Option<&std::path::Path>,
    chart: Option<&std::path::Path>,
    json: bool,
) -> anyhow::Result<()> {
    let out = report::output::SetOutputs {
        json,
        save,
        csv,
        chart,
    };
    let mut say = |line: String| eprintln!("numio: {line}");
    report::output::write(set, out, &mut std::io::stdout().lock(), &mut say)?;
    Ok(())
}
