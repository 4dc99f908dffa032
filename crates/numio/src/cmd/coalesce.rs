//! `numio coalesce`: NVMe interrupt coalescing (Feature 0x08). `show`
//! (the default: `tune::show` reads, `report::coalesce::show` prints),
//! `set` and `off` (`tune::change`, every named controller or none),
//! `restore` (`tune::restore`), `sweep` (`coalesce_sweep`). Glue over the
//! `tune` crate, which keeps the restore promise.

use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::Subcommand;
use report::coalesce::{change as say, show as view};
use session::interrupt::{self, Undoing};
use tune::change::{Change, Changed};
use tune::{DevAccess, IrqCoalescing, Journal};

/// Flags of `numio coalesce`.
#[derive(Debug, clap::Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct Args {
    /// What to do; none: `show`.
    #[command(subcommand)]
    pub action: Option<Action>,
    /// `show`'s flags, for a bare `numio coalesce`.
    #[command(flatten)]
    pub show: ShowArgs,
}

/// The actions of `numio coalesce`.
#[derive(Debug, Subcommand)]
pub enum Action {
    /// Each controller's coalescing, decoded as nvme-cli decodes it (THR +
    /// 1 completions, TIME × 100 µs), whether it can change and be saved,
    /// and each I/O vector's Coalescing Disable bit (the default action).
    Show(ShowArgs),
    /// Set coalescing on every named controller or on none; the originals
    /// are recorded first and `numio coalesce restore` puts them back.
    Set(SetArgs),
    /// Turn coalescing off (THR 0, TIME 0: an interrupt per completion) on
    /// every named controller or on none; recorded like `set`.
    Off(OffArgs),
    /// Put back every original a state file recorded (after `set`, `off`,
    /// a crash or `kill -9`).
    Restore,
    /// Sweep thresholds × drives busy at once with a bench workload:
    /// tables, a recommendation with its evidence, charts; every original
    /// is put back (`--apply` then sets the recommendation, kept on record).
    Sweep(Box<super::coalesce_sweep::SweepArgs>),
}

/// Flags of `numio coalesce show` (also those of a bare `numio coalesce`).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct ShowArgs {
    /// Controllers (`nvme0`, `/dev/nvme0`) or namespaces (`/dev/nvme0n1`;
    /// a multipath head means all its controllers); none: every controller.
    #[arg(value_name = "CTRL|NS")]
    pub targets: Vec<String>,
    /// Print JSON (schema: docs/readme/coalesce.md).
    #[arg(long)]
    pub json: bool,
    /// Read this sysfs/procfs root instead of `/` (a directory or a
    /// `.tar.gz` snapshot made by `numio topo --save`): controllers are
    /// listed, live values are not read.
    #[arg(long, value_name = "DIR|FILE.tar.gz", default_value = "/")]
    pub root: PathBuf,
}

/// Flags of `numio coalesce set`.
#[derive(Debug, clap::Args)]
pub struct SetArgs {
    /// Controllers (`nvme0`, `/dev/nvme0`) or namespaces (`/dev/nvme0n1`;
    /// a multipath head means all its controllers).
    #[arg(value_name = "CTRL|NS", required = true)]
    pub targets: Vec<String>,
    /// Aggregation threshold, raw and 0-based: 0..=255, an interrupt per
    /// N + 1 completions.
    #[arg(long, value_name = "N", required = true)]
    pub threshold: String,
    /// Aggregation time: `100us`, `0.2ms` or a bare number of µs; a
    /// multiple of 100 µs up to 25.5 ms.
    #[arg(long, value_name = "T", required = true)]
    pub time: String,
    /// Leave the value for good: drop the records, so `numio coalesce
    /// restore` will not put it back (the command that would is printed).
    #[arg(long)]
    pub persist: bool,
}

/// Flags of `numio coalesce off`.
#[derive(Debug, clap::Args)]
pub struct OffArgs {
    /// Controllers (`nvme0`, `/dev/nvme0`) or namespaces (`/dev/nvme0n1`;
    /// a multipath head means all its controllers).
    #[arg(value_name = "CTRL|NS", required = true)]
    pub targets: Vec<String>,
    /// Leave it off for good: drop the records (see `set --persist`).
    #[arg(long)]
    pub persist: bool,
}

/// Runs `numio coalesce`.
pub fn run(args: Args) -> anyhow::Result<i32> {
    match args.action {
        None => show(args.show),
        Some(Action::Show(a)) => show(a),
        Some(Action::Set(set)) => {
            let value = tune::setting::parse_set(&set.threshold, &set.time)?;
            if let Some(w) = tune::setting::warning(value) {
                eprintln!("numio: warning: {w}");
            }
            change(&set.targets, value, set.persist, "numio coalesce set")
        }
        Some(Action::Off(off)) => {
            change(&off.targets, tune::OFF, off.persist, "numio coalesce off")
        }
        Some(Action::Restore) => restore(),
        Some(Action::Sweep(sweep)) => super::coalesce_sweep::run(*sweep),
    }
}

/// `numio coalesce show`.
fn show(args: ShowArgs) -> anyhow::Result<i32> {
    let shown = tune::show::gather(&args.root, &args.targets, &DevAccess::default())?;
    let text = if args.json {
        let json = view::to_json(&shown.rows, &shown.pending);
        serde_json::to_string_pretty(&json).context("serializing")? + "\n"
    } else {
        view::render(&shown.rows)
    };
    super::topo::print_stdout(&text)?;
    view::notes(&shown)
        .iter()
        .for_each(|n| eprintln!("numio: {n}"));
    Ok(if shown.failed().is_empty() { 0 } else { 2 })
}

/// `set` and `off`: every controller or none, the originals recorded.
fn change(
    targets: &[String],
    value: IrqCoalescing,
    persist: bool,
    command: &str,
) -> anyhow::Result<i32> {
    let topo = topology::Topology::load(Path::new("/"))?;
    let resolved = tune::resolve_tunable(&topo, targets)?;
    resolved
        .skipped_notes()
        .iter()
        .for_each(|n| eprintln!("numio: {n}"));
    let journal = Journal::default_location()?;
    interrupt::install(|n| eprint!("{}", n.line(Undoing::Coalescing)))?;
    let stop = Some(interrupt::flag());
    let c = Change {
        controllers: &resolved.controllers,
        value,
        persist,
        command,
        stop,
    };
    let hook = |r: tune::Restorer| interrupt::undo_on_second_signal(move || r.restore());
    match tune::change::change(&c, &DevAccess::default(), &journal, hook)? {
        Changed::Kept { kept, before } => {
            let _ = super::topo::print_stdout(&say::changed(&kept, &before));
            if let Some(note) = say::change_note(&kept, persist, &journal.path()) {
                eprintln!("numio: {note}");
            }
            Ok(0)
        }
        Changed::Interrupted(e) => {
            eprintln!("numio: {e}");
            Ok(interrupt::exit_code().unwrap_or(2))
        }
    }
}

/// `numio coalesce restore`.
fn restore() -> anyhow::Result<i32> {
    let journal = Journal::default_location()?;
    let access = DevAccess::default();
    let Some(report) = tune::restore::restore_all(&journal, Path::new("/"), &access)? else {
        let path = journal.path();
        eprintln!("numio: nothing to restore: no record in {}", path.display());
        return Ok(0);
    };
    super::topo::print_stdout(&say::restored(&report))?;
    let failed = say::not_restored(&report, &journal.path());
    failed.iter().for_each(|n| eprintln!("numio: {n}"));
    Ok(if failed.is_empty() { 0 } else { 2 })
}
