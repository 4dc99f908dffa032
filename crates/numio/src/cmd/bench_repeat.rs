//! `numio bench --repeat N` (and `--save`, `--csv`, `--chart` of one run):
//! a one-arm session schedule, its events shown on stderr, then the repeat
//! statistics and exports of the result set.

use engine::RunOptions;
use planner::Placement;
use session::{interrupt, Schedule};

use super::super::display::{Display, ProgressMode, Runs};
use super::super::report::{one_arm_set, RepeatArgs};

/// Runs `placement` `args.repeat` times, prints the repeat statistics and
/// writes `--save`, `--csv` and `--chart`; `json` prints the result set as
/// JSON instead of text. The arm is labelled by the placement policy.
/// Returns the exit status: 1 when any run had I/O errors, else 0.
pub fn run(
    args: &RepeatArgs,
    json: bool,
    placement: Placement,
    opts: RunOptions,
    progress: ProgressMode,
) -> anyhow::Result<i32> {
    anyhow::ensure!(
        args.repeat >= 1,
        "--repeat {}: give 1 or more runs",
        args.repeat
    );
    let schedule = Schedule::repeat_plan(placement, opts, args.repeat);
    let mut display = Display::new(progress, Runs::Repeat);
    let outcome = schedule.run(interrupt::flag(), &mut |e| display.event(e))?;
    let kept = outcome.kept_for_repeat(args.repeat);
    if let Some(note) = &kept.note {
        eprintln!("numio: {note}");
    }
    let (Some(arm), failed_runs) = (kept.arm, kept.failed_runs) else {
        return Ok(1);
    };
    let set = one_arm_set(arm);
    args.export.finish(&set, json)?;
    if failed_runs > 0 {
        eprintln!(
            "numio: {failed_runs} of {} runs had I/O errors (see `errors` in the saved JSON, or run once without --repeat for the details)",
            set.arms[0].runs.len()
        );
    }
    Ok(i32::from(failed_runs > 0))
}
