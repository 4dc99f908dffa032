//! `numio bench --repeat N` (and `--save`, `--csv`, `--chart` of one run):
//! a one-arm session schedule, its events shown on stderr, then the repeat
//! statistics and exports of the result set.

use engine::RunOptions;
use planner::Placement;
use session::{interrupt, LiveArm, Outcome, Schedule};

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
    let label = placement.policy.clone();
    let arm = LiveArm {
        spec: format!("policy={label}"),
        label,
        placement,
        opts,
        settle_group: 0,
    };
    let schedule = Schedule::repeat(arm, args.repeat);
    let mut display = Display::new(progress, Runs::Repeat);
    let outcome = schedule.run(interrupt::flag(), &mut |e| display.event(e))?;
    let Some((arm, failed_runs)) = kept_runs(outcome, args.repeat) else {
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

/// The arm to report and its runs with I/O errors, saying on stderr where
/// an interrupt stopped the runs: a run cut short is left out, unless it is
/// the first (then it is all there is, and it is reported as interrupted).
/// `None` when an interrupt came before any run measured anything.
fn kept_runs(outcome: Outcome, runs: usize) -> Option<(report::Arm, usize)> {
    let completed = outcome.completed();
    let mut failed = outcome.failed_runs;
    let mut arm = outcome.arms.into_iter().next()?;
    let Some(cut) = outcome.interrupted else {
        return Some((arm, failed));
    };
    let seq = cut.run.seq;
    match cut.partial {
        Some(p) if completed == 0 => {
            if runs > 1 {
                eprintln!(
                    "numio: interrupted during run 1 of {runs}: reporting its {:.2}s measured",
                    p.runtime_ns as f64 / 1e9
                );
            }
            failed += usize::from(p.had_errors);
            arm.runs.push(p.record);
        }
        _ if completed == 0 => {
            eprintln!("numio: interrupted before run 1 measured anything: nothing to report");
            return None;
        }
        Some(_) => eprintln!(
            "numio: interrupted during run {seq} of {runs}: it is left out; reporting the {completed} completed runs"
        ),
        None => eprintln!(
            "numio: interrupted before run {seq} of {runs}: reporting the {completed} completed runs"
        ),
    }
    Some((arm, failed))
}
