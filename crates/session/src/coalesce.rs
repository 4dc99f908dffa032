//! `numio coalesce sweep`'s points (a threshold on the first D drives,
//! [`points`]) and what happens around each run: before the
//! engine runs a point, a `tune` guard over the controllers of the point's
//! drives (the first D targets) records their originals in the state file
//! and sets the point's value on all of them or none; after the run, ended
//! or failed, it puts the originals back and drops the records. Drives not
//! in use keep their own value throughout, and between runs every
//! controller holds its original. After `kill -9` in the middle of a run
//! the records stay for `numio coalesce restore`; a second Ctrl-C /
//! SIGTERM puts them back before it exits. A [`Runner`] around
//! [`LocalRunner`]: the schedule, its interleaving, settlement and
//! Ctrl-C handling stay the session's.

use std::sync::atomic::AtomicBool;

use engine::{RunOptions, RunResult};
use report::coalesce::{CoalesceSweep, Verdict, DEVICES_AXIS, THRESHOLD_AXIS};
use report::ResultSet;
use tune::{Access, CoalesceGuard, Controller, Journal};

use crate::schedule::BoxError;
use crate::{Event, LiveArm, LocalRunner, RunInfo, Runner};

/// One point: a threshold (0: off) on the first `devices` targets at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Point {
    /// Aggregation threshold, raw (0-based: an interrupt per N + 1
    /// completions); 0 is coalescing off.
    pub threshold: u8,
    /// Drives busy at once: the first `devices` targets.
    pub devices: usize,
}

impl Point {
    /// `threshold=3 devices=2`: the arm's label.
    pub fn label(&self) -> String {
        format!(
            "{THRESHOLD_AXIS}={} {DEVICES_AXIS}={}",
            self.threshold, self.devices
        )
    }
}

/// A comma-separated list of distinct values, each read by `one`; `flag`
/// and `example` name it in errors.
/// Every point, threshold fastest: for each device count, each threshold.
pub fn points(thresholds: &[u8], devices: &[usize]) -> Vec<Point> {
    devices
        .iter()
        .flat_map(|&d| {
            thresholds.iter().map(move |&t| Point {
                threshold: t,
                devices: d,
            })
        })
        .collect()
}

/// Every controller once, in target order.
pub fn all(controllers: &[Vec<Controller>]) -> Vec<Controller> {
    let mut out: Vec<Controller> = Vec::new();
    for c in controllers.iter().flatten() {
        if !out.iter().any(|o| o.name == c.name) {
            out.push(c.clone());
        }
    }
    out
}

/// Runs each point on this machine's engine with its coalescing value set.
pub struct CoalesceRunner<'a> {
    /// Opens the controllers (`/dev/nvmeN`; in-memory ones in tests).
    pub access: &'a dyn Access,
    /// The state file of originals.
    pub journal: Journal,
    /// The command recorded with the originals.
    pub command: String,
    /// The point of each arm, by schedule index.
    pub points: Vec<Point>,
    /// The controllers of each target, in target order.
    pub controllers: Vec<Vec<Controller>>,
    /// Aggregation time of every threshold above 0, µs.
    pub time_us: u32,
}

impl CoalesceRunner<'_> {
    /// Records the originals of `point`'s controllers and sets its value.
    fn set(&self, point: Point) -> Result<CoalesceGuard, BoxError> {
        let drives = point.devices.min(self.controllers.len());
        let on = all(&self.controllers[..drives]);
        let value = if point.threshold == 0 {
            tune::OFF
        } else {
            tune::setting(point.threshold, self.time_us)?
        };
        let mut guard = CoalesceGuard::begin(&on, self.access, &self.journal, &self.command)?;
        guard.apply(value)?;
        let names: Vec<&str> = on.iter().map(|c| c.name.as_str()).collect();
        // The line a test waits for before it signals or kills a sweep.
        eprintln!(
            "numio: coalesce: point {} starts: {} on {}",
            point.label(),
            describe(point.threshold, self.time_us),
            names.join(", ")
        );
        Ok(guard)
    }
}

/// `threshold 3 (an interrupt per 4 completions or 100 µs)` or `off`.
pub fn describe(threshold: u8, time_us: u32) -> String {
    if threshold == 0 {
        "off".to_string()
    } else {
        format!(
            "threshold {threshold} (an interrupt per {} completions or {time_us} µs)",
            u32::from(threshold) + 1
        )
    }
}

impl Runner for CoalesceRunner<'_> {
    fn run(
        &mut self,
        arm: &LiveArm,
        opts: &RunOptions,
        run: RunInfo,
        interrupt: &AtomicBool,
        observer: &mut dyn FnMut(&Event<'_>),
    ) -> Result<RunResult, BoxError> {
        let point = *self
            .points
            .get(run.arm)
            .ok_or_else(|| format!("no point for arm {} ({})", run.arm, arm.label))?;
        let guard = self.set(point)?;
        // A second Ctrl-C / SIGTERM exits at once: the hook puts the
        // originals back first.
        let restorer = guard.restorer();
        let hook = crate::interrupt::undo_on_second_signal(move || restorer.restore());
        let result = LocalRunner.run(arm, opts, run, interrupt, observer);
        let restored = guard.restore();
        drop(hook);
        match (result, restored) {
            (Ok(r), Ok(())) => Ok(r),
            (Ok(_), Err(e)) => Err(e.into()),
            (Err(e), Ok(())) => {
                Err(format!("{e} (the controllers' values are back as they were)").into())
            }
            (Err(e), Err(r)) => Err(format!("{e}; and then: {r}").into()),
        }
    }
}

/// Sets a threshold (0: off) with a time in µs on the named controllers
/// and keeps it on record; says what it did.
pub type Apply<'a, E> = dyn FnMut(&[String], u8, u32) -> Result<String, E> + 'a;

/// What `--apply` did (in the JSON as `applied`).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Applied {
    /// The device count whose recommendation was applied.
    pub devices: usize,
    /// The controllers set.
    pub controllers: Vec<String>,
    /// The threshold set (0: off).
    pub threshold: u8,
    /// Its aggregation time, µs (0: off).
    pub time_us: u32,
    /// What was done, in a sentence.
    pub note: String,
}

impl Applied {
    /// `threshold 3 with time 100 µs on nvme0, nvme1 (the recommendation
    /// for 2 devices, the most this sweep ran): NOTE`.
    pub fn sentence(&self) -> String {
        let what = if self.threshold == 0 {
            "coalescing off".to_string()
        } else {
            format!("threshold {} with time {} µs", self.threshold, self.time_us)
        };
        format!(
            "{what} on {} (the recommendation for {} devices, the most this sweep ran): {}",
            self.controllers.join(", "),
            self.devices,
            self.note
        )
    }
}

/// What `--apply` came to.
#[derive(Debug, Clone, PartialEq)]
pub enum ApplyOutcome {
    /// The recommendation was set.
    Applied(Applied),
    /// Nothing was set, for this reason (a sentence).
    Skipped(&'static str),
    /// The widest table has no recommendation (nothing measured there).
    NotMeasured,
}

/// `--apply`: the recommendation of the most drives the sweep ran, set on
/// their controllers by `apply` (which keeps the record of originals);
/// nothing on a sweep that was not `clean` (cut short, or with failed
/// runs).
pub fn apply_recommendation<E>(
    sweep: &CoalesceSweep,
    clean: bool,
    apply: &mut Apply<'_, E>,
) -> Result<ApplyOutcome, E> {
    if !clean {
        return Ok(ApplyOutcome::Skipped(
            "the sweep was interrupted or some runs failed; run it again",
        ));
    }
    let Some(table) = sweep.widest() else {
        return Ok(ApplyOutcome::Skipped("no point was measured"));
    };
    let rec = &table.recommendation;
    if rec.verdict == Verdict::NotMeasured {
        return Ok(ApplyOutcome::NotMeasured);
    }
    let note = apply(&table.controllers, rec.threshold, rec.time_us)?;
    Ok(ApplyOutcome::Applied(Applied {
        devices: table.devices,
        controllers: table.controllers.clone(),
        threshold: rec.threshold,
        time_us: rec.time_us,
        note,
    }))
}

/// The `--json` document of a coalescing sweep: the analysis (tables,
/// recommendations), what `--apply` did, and the result set with every
/// run.
pub fn json(
    sweep: &CoalesceSweep,
    applied: Option<&Applied>,
    set: &ResultSet,
) -> serde_json::Value {
    serde_json::json!({
        "schema": "numio-coalesce-sweep",
        "schema_version": 1,
        "coalesce": sweep,
        "applied": applied,
        "results": set,
    })
}

#[cfg(test)]
#[path = "coalesce_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "coalesce_apply_tests.rs"]
mod apply_tests;
