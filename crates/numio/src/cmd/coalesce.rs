//! `numio coalesce`: NVMe interrupt coalescing (Feature 0x08). `show`
//! (the default) reads it, `set` and `off` change it on every named
//! controller or on none, `restore` puts back what a state file recorded,
//! `sweep` (`coalesce_sweep`) measures thresholds and recommends one.
//! Glue over the `tune` crate, which keeps the restore promise.

use clap::Subcommand;
use session::interrupt::{self, Notice};
use topology::Topology;
use tune::guard::Kept;
use tune::setting::{describe, set_flags};
use tune::{CoalesceGuard, DevAccess, IrqCoalescing, Journal};

pub use super::coalesce_show::ShowArgs;

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
        None => super::coalesce_show::run(args.show),
        Some(Action::Show(show)) => super::coalesce_show::run(show),
        Some(Action::Set(set)) => {
            let threshold = tune::parse_threshold(&set.threshold)?;
            let time_us = tune::parse_time_us(&set.time)?;
            let value = tune::setting(threshold, time_us)?;
            if threshold > 0 && time_us == 0 {
                eprintln!(
                    "numio: warning: --time 0 means no delay: the controller raises every interrupt at once and coalesces nothing; give a time such as 100us"
                );
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

/// What the signal thread says while values change.
fn on_signal(notice: Notice) {
    match notice {
        Notice::Stopping { signal } => eprintln!(
            "numio: {}: stopping; what changed is put back (again to exit at once, still putting it back)",
            signal_name(signal)
        ),
        Notice::Exiting { .. } => {
            eprintln!("numio: interrupted again: putting back what changed, then exiting")
        }
    }
}

fn signal_name(signal: i32) -> &'static str {
    if signal == libc::SIGTERM {
        "SIGTERM"
    } else {
        "Ctrl-C"
    }
}

/// `set` and `off`: every controller or none, the originals recorded.
fn change(
    targets: &[String],
    value: IrqCoalescing,
    persist: bool,
    command: &str,
) -> anyhow::Result<i32> {
    let topo = Topology::load(std::path::Path::new("/"))?;
    let resolved = tune::resolve_tunable(&topo, targets)?;
    for (c, via) in &resolved.skipped_fabrics {
        eprintln!(
            "numio: {via}: leaving out {} ({}): a fabrics controller has no interrupts",
            c.name,
            c.transport.name()
        );
    }
    let journal = Journal::default_location()?;
    interrupt::install(on_signal)?;
    let mut guard = CoalesceGuard::begin(
        &resolved.controllers,
        &DevAccess::default(),
        &journal,
        command,
    )?;
    guard.watch(interrupt::flag());
    let restorer = guard.restorer();
    let _hook = interrupt::on_second_signal(move || {
        if let Err(e) = restorer.restore() {
            eprintln!("numio: {e}");
        }
    });
    let before = guard.before();
    if let Err(e) = guard.apply(value) {
        if let Some(code) = interrupt::exit_code() {
            drop(guard);
            eprintln!("numio: {e}");
            return Ok(code);
        }
        return Err(e.into());
    }
    let kept = if persist {
        guard.persist()?
    } else {
        guard.keep()?
    };
    print_changed(&kept, &before);
    if persist {
        eprintln!(
            "numio: --persist: numio will not put these back (no record kept); to undo: {}",
            undo_commands(&kept).join("; ")
        );
    } else if kept.iter().any(|k| k.value_raw != Some(k.original_raw)) {
        eprintln!(
            "numio: the originals are recorded in {}: `numio coalesce restore` puts them back",
            journal.path().display()
        );
    }
    Ok(0)
}

fn print_changed(kept: &[Kept], before: &[u32]) {
    let mut out = String::new();
    for (k, &was) in kept.iter().zip(before) {
        let now = k.value_raw.map_or("unknown".to_string(), |raw| {
            describe(IrqCoalescing::decode(raw))
        });
        out.push_str(&format!(
            "{}: now {now}; was {}\n",
            k.controller.name,
            describe(IrqCoalescing::decode(was))
        ));
    }
    let _ = super::topo::print_stdout(&out);
}

/// The commands that put the originals back, grouped by original value:
/// `numio coalesce off nvme0 nvme1 --persist`.
fn undo_commands(kept: &[Kept]) -> Vec<String> {
    let mut groups: Vec<(u32, Vec<&str>)> = Vec::new();
    for k in kept {
        match groups.iter_mut().find(|(raw, _)| *raw == k.original_raw) {
            Some((_, names)) => names.push(&k.controller.name),
            None => groups.push((k.original_raw, vec![&k.controller.name])),
        }
    }
    groups
        .into_iter()
        .map(|(raw, names)| {
            let value = IrqCoalescing::decode(raw);
            if value == tune::OFF {
                format!("numio coalesce off {} --persist", names.join(" "))
            } else {
                format!(
                    "numio coalesce set {} {} --persist",
                    names.join(" "),
                    set_flags(value)
                )
            }
        })
        .collect()
}

/// `numio coalesce restore`.
fn restore() -> anyhow::Result<i32> {
    let journal = Journal::default_location()?;
    if journal.records()?.is_empty() {
        eprintln!(
            "numio: nothing to restore: no record in {}",
            journal.path().display()
        );
        return Ok(0);
    }
    let topo = Topology::load(std::path::Path::new("/"))?;
    let report = tune::restore::restore_recorded(&journal, &topo, &DevAccess::default())?;
    let mut out = String::new();
    for r in &report.restored {
        let renamed = if r.name_now != r.record.name {
            format!(" (was {} when changed)", r.record.name)
        } else {
            String::new()
        };
        out.push_str(&format!(
            "{}{renamed}: back to {} (the original; changed by `{}`, pid {})\n",
            r.name_now,
            describe(IrqCoalescing::decode(r.record.original_raw)),
            r.record.command,
            r.record.pid
        ));
    }
    super::topo::print_stdout(&out)?;
    if report.failed.is_empty() {
        return Ok(0);
    }
    for (record, why) in &report.failed {
        eprintln!(
            "numio: error: {} ({}, serial {}): not put back: {why}",
            record.name, record.address, record.serial
        );
    }
    eprintln!(
        "numio: the records that were not put back stay in {}: run `numio coalesce restore` again once the cause is fixed",
        journal.path().display()
    );
    Ok(2)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kept(name: &str, original_raw: u32) -> Kept {
        Kept {
            controller: tune::memory::controller(name, 1),
            original_raw,
            value_raw: Some(0x0109),
        }
    }

    #[test]
    fn undo_commands_put_each_original_back_for_good() {
        let k = [kept("nvme0", 0), kept("nvme1", 0x0203), kept("nvme2", 0)];
        assert_eq!(
            undo_commands(&k),
            [
                "numio coalesce off nvme0 nvme2 --persist",
                "numio coalesce set nvme1 --threshold 3 --time 200us --persist"
            ]
        );
    }
}
