//! `numio precondition`'s runner: every drive at once, each on its own
//! node's CPUs (bench's local placement, [`crate::bench::plan`]), first a
//! sequential fill (128 KiB writes over `--fill` capacities, SNIA's 2x by
//! default, in passes of one capacity), then the measured workload
//! (randwrite 4k unless the workload flags say otherwise) in rounds of
//! `--round`, until each drive's steady-state test holds over its last
//! window ([`report::steady`]) or `--rounds` run out. A drive that is done
//! leaves the later rounds, so each stops within one round of its
//! verdict. Writes go through the engine's write safety like every numio
//! write (refused on anything blkid recognises, a mount or a holder
//! without `--force-write`). At the end each drive's record is saved
//! ([`crate::precondition_state`]) for later runs to note.

use std::sync::atomic::AtomicBool;

use engine::{EngineError, RunOptions, RunResult};
use planner::flags::{parse_duration_ns, FlagError, Placing, WorkloadFlags};
use planner::{Placement, RwMode};
use report::precondition::{Drive, FillPass, Outcome, Precondition, Round, Verdict};
use report::steady::{check_last, Criterion, SteadyError, SNIA_WINDOW};

use crate::bench::{BenchAsk, BenchError};
use crate::event::RunInfo;
use crate::precondition_state::{self as state, Record};
use crate::settle::Settlements;

/// Block size of the fill's sequential writes (SNIA's 128 KiB).
pub const FILL_BS_BYTES: u64 = 128 << 10;
/// I/Os in flight of the fill's one job per drive.
pub const FILL_IODEPTH: u32 = 32;
/// Most rounds `--rounds` takes.
pub const ROUNDS_LIMIT: u32 = 10_000;
/// Most capacities `--fill` takes.
pub const FILL_LIMIT: f64 = 100.0;

/// What the user asked of a preconditioning run, as given.
#[derive(Debug, Clone, Copy)]
pub struct PreconditionAsk<'a> {
    /// The drives (block devices or files).
    pub targets: &'a [String],
    /// `--numa`, `--cpus`, `--cpus-for`.
    pub placing: &'a Placing,
    /// The measured workload's flags (`--runtime` is refused: rounds are
    /// `--round` long).
    pub workload: &'a WorkloadFlags,
    /// `--fill`: `2x`, `1.5x`, `0`.
    pub fill: &'a str,
    /// `--round`: a duration.
    pub round: &'a str,
    /// `--rounds`.
    pub rounds_max: u32,
    /// `--steady`: `snia`, `iops:P%`, `iops_slope:P%`.
    pub steady: &'a str,
    /// The command line, for the file.
    pub command: &'a str,
    /// Where the drives' records go (`None`:
    /// [`state::default_dir`]).
    pub state_dir: Option<&'a std::path::Path>,
}

/// Why a preconditioning run could not be made or run.
#[derive(Debug, thiserror::Error)]
pub enum PreconditionError {
    /// No targets.
    #[error("name the drives to precondition: numio precondition /dev/nvme0n1 [/dev/nvme1n1 ...] (it overwrites them)")]
    NoTargets,
    /// `--fill` is no multiple.
    #[error("--fill {given}: give the capacities to write sequentially first, such as 2x (SNIA's), 1.5x, or 0 to skip the fill (at most {FILL_LIMIT}x)")]
    Fill {
        /// As given.
        given: String,
    },
    /// `--rounds` out of range.
    #[error("--rounds {given}: give {window} to {ROUNDS_LIMIT} rounds (the test needs a window of {window})")]
    Rounds {
        /// As given.
        given: u32,
        /// Rounds in a window.
        window: usize,
    },
    /// `--runtime` given.
    #[error("--runtime {given}: a precondition round's length is --round (default 60s), and the rounds' number --rounds")]
    RuntimeGiven {
        /// As given.
        given: String,
    },
    /// `--round` could not be read.
    #[error(transparent)]
    Round(#[from] FlagError),
    /// `--steady` could not be read.
    #[error(transparent)]
    Steady(#[from] SteadyError),
    /// The plan (targets, workload, placement).
    #[error(transparent)]
    Plan(#[from] BenchError),
    /// A drive could not be inspected.
    #[error("inspecting {path}")]
    Inspect {
        /// The drive.
        path: String,
        /// Why.
        #[source]
        source: EngineError,
    },
    /// A phase's run failed (a refused write among them).
    #[error("{phase}")]
    Run {
        /// The fill pass or round, in words.
        phase: String,
        /// Why.
        #[source]
        source: EngineError,
    },
    /// A drive's record could not be saved.
    #[error(transparent)]
    State(#[from] state::StateError),
}

/// The numbers of a run, checked.
struct Spec {
    fill: f64,
    round_ns: u64,
    criterion: Criterion,
}

fn spec(ask: &PreconditionAsk<'_>) -> Result<Spec, PreconditionError> {
    if ask.targets.is_empty() {
        return Err(PreconditionError::NoTargets);
    }
    if let Some(given) = &ask.workload.runtime {
        return Err(PreconditionError::RuntimeGiven {
            given: given.clone(),
        });
    }
    let fill_err = || PreconditionError::Fill {
        given: ask.fill.to_string(),
    };
    let text = ask.fill.trim();
    let fill: f64 = text
        .strip_suffix('x')
        .unwrap_or(text)
        .parse()
        .map_err(|_| fill_err())?;
    if !(0.0..=FILL_LIMIT).contains(&fill) {
        return Err(fill_err());
    }
    if !(SNIA_WINDOW as u32..=ROUNDS_LIMIT).contains(&ask.rounds_max) {
        return Err(PreconditionError::Rounds {
            given: ask.rounds_max,
            window: SNIA_WINDOW,
        });
    }
    Ok(Spec {
        fill,
        round_ns: parse_duration_ns("round", ask.round)?,
        criterion: ask.steady.parse()?,
    })
}

/// Runs the preconditioning `ask` describes with the engine options `opts`
/// until every drive has its verdict (or `interrupt` is set); `say` hears
/// a line per fill pass and per round.
pub fn run(
    ask: &PreconditionAsk<'_>,
    opts: &RunOptions,
    interrupt: &AtomicBool,
    say: &mut dyn FnMut(String),
) -> Result<Precondition, PreconditionError> {
    let spec = spec(ask)?;
    let started_unix_s = tune::journal::now_unix_s();
    let mut flags = ask.workload.clone();
    flags.rw.get_or_insert(RwMode::RandWrite);
    flags.runtime = Some(ask.round.to_string());
    let bench = BenchAsk {
        targets: ask.targets,
        plan: None,
        fio_args: &[],
        ignore_unknown: false,
        sections: &[],
        placing: ask.placing,
        workload: &flags,
        name: None,
    };
    let mut opts = opts.clone();
    let placement = crate::bench::plan(&bench, &mut opts, false, say)?;
    for w in &placement.warnings {
        say(format!("warning: {w}"));
    }
    let mut drives = drives(&placement)?;
    let mut p = Precondition {
        schema: report::precondition::SCHEMA.into(),
        schema_version: report::precondition::SCHEMA_VERSION,
        command: ask.command.to_string(),
        started_unix_s,
        criterion: spec.criterion,
        window_rounds: SNIA_WINDOW as u32,
        round_ns: spec.round_ns,
        rounds_max: ask.rounds_max,
        fill_multiple: spec.fill,
        fill_bs_bytes: FILL_BS_BYTES,
        interrupted: false,
        drives: Vec::new(),
    };
    p.interrupted = fill(&placement, &mut drives, spec.fill, &opts, interrupt, say)?;
    if !p.interrupted {
        p.interrupted = rounds(&placement, &mut drives, &p, &opts, interrupt, say)?;
    }
    p.drives = drives;
    if !p.interrupted {
        let dir = ask.state_dir.map(Into::into).or_else(state::default_dir);
        record(&p, dir.ok_or(state::StateError::NoStateDir)?.as_path())?;
    }
    Ok(p)
}

/// Each drive as the plan placed it, with its size and identity; no
/// rounds yet, and a verdict that says so until one is reached.
fn drives(placement: &Placement) -> Result<Vec<Drive>, PreconditionError> {
    placement
        .targets
        .iter()
        .map(|t| {
            let info =
                engine::targets::inspect(&t.path).map_err(|source| PreconditionError::Inspect {
                    path: t.path.clone(),
                    source,
                })?;
            Ok(Drive {
                path: t.path.clone(),
                identity: state::identity(&t.path, info.size_bytes),
                node: t.node,
                cpus: t.jobs.iter().flat_map(|j| j.cpus.iter().copied()).collect(),
                size_bytes: info.size_bytes,
                workload: t.workload.clone(),
                fill: Vec::new(),
                rounds: Vec::new(),
                verdict: Verdict::of(Outcome::Interrupted, SNIA_WINDOW, 0, None),
            })
        })
        .collect()
}

/// The fill's passes, every drive at once: pass k writes
/// `min(1, fill − k)` of each capacity sequentially from offset 0, one job
/// per drive on its first job's CPUs. Whether an interrupt cut it short.
fn fill(
    measured: &Placement,
    drives: &mut [Drive],
    fill: f64,
    opts: &RunOptions,
    interrupt: &AtomicBool,
    say: &mut dyn FnMut(String),
) -> Result<bool, PreconditionError> {
    let passes = fill.ceil() as usize;
    for k in 0..passes {
        let share = (fill - k as f64).min(1.0);
        let mut plan = measured.clone();
        for (t, d) in plan.targets.iter_mut().zip(drives.iter()) {
            let bytes = (d.size_bytes as f64 * share) as u64 / FILL_BS_BYTES * FILL_BS_BYTES;
            let w = &mut t.workload;
            (w.rw, w.bs_min_bytes, w.bs_max_bytes) = (RwMode::Write, FILL_BS_BYTES, FILL_BS_BYTES);
            (w.iodepth, w.numjobs, w.offset_bytes) = (FILL_IODEPTH, 1, 0);
            (w.time_based, w.runtime_ns, w.ramp_time_ns) = (false, None, 0);
            (w.number_ios, w.rate_iops) = (None, None);
            w.size_bytes = (share < 1.0).then_some(bytes.max(FILL_BS_BYTES));
            t.jobs.truncate(1);
        }
        say(format!(
            "fill pass {} of {passes}: sequential 128 KiB writes over {:.0} % of each drive",
            k + 1,
            share * 100.0
        ));
        let run = RunInfo {
            seq: k + 1,
            total: passes,
            ..RunInfo::SINGLE
        };
        let phase = format!("fill pass {} of {passes}", k + 1);
        let result = run_phase(&plan, opts, run, interrupt, phase)?;
        if result.interrupted {
            return Ok(true);
        }
        for (d, t) in drives.iter_mut().zip(&result.targets) {
            d.fill.push(FillPass {
                bytes: t.write.bytes,
                runtime_ns: t.runtime_ns,
                bandwidth_bytes_per_s: t.write.bandwidth_bytes_per_s,
            });
        }
    }
    Ok(false)
}

fn run_phase(
    plan: &Placement,
    opts: &RunOptions,
    run: RunInfo,
    interrupt: &AtomicBool,
    phase: String,
) -> Result<RunResult, PreconditionError> {
    crate::run_once(plan, opts, run, interrupt, &mut |_| {})
        .map_err(|source| PreconditionError::Run { phase, source })
}

/// The measured rounds: every undecided drive at once, until each has its
/// verdict. The first round's io_uring task-run trial settles the later
/// rounds' mode. Whether an interrupt cut them short (the round it cut is
/// left out).
fn rounds(
    measured: &Placement,
    drives: &mut [Drive],
    p: &Precondition,
    opts: &RunOptions,
    interrupt: &AtomicBool,
    say: &mut dyn FnMut(String),
) -> Result<bool, PreconditionError> {
    let mut settle = Settlements::new(1);
    let mut done = vec![false; drives.len()];
    for n in 1..=p.rounds_max {
        let mut plan = measured.clone();
        plan.targets = (measured.targets.iter().zip(&done))
            .filter(|(_, d)| !**d)
            .map(|(t, _)| t.clone())
            .collect();
        if plan.targets.is_empty() {
            break;
        }
        let ran_with = settle.options(0, opts);
        let run = RunInfo {
            seq: n as usize,
            total: p.rounds_max as usize,
            round: n as usize - 1,
            ..RunInfo::SINGLE
        };
        let result = run_phase(&plan, &ran_with, run, interrupt, format!("round {n}"))?;
        if result.interrupted {
            for (d, _) in drives.iter_mut().zip(&done).filter(|(_, d)| !**d) {
                let iops: Vec<f64> = d.rounds.iter().map(|r| r.iops).collect();
                let check = check_last(p.criterion, &iops, SNIA_WINDOW);
                d.verdict = Verdict::of(Outcome::Interrupted, SNIA_WINDOW, iops.len(), check);
            }
            return Ok(true);
        }
        settle.record(0, &ran_with, &result);
        for t in &result.targets {
            let Some(i) = drives.iter().position(|d| d.path == t.path) else {
                continue;
            };
            let d = &mut drives[i];
            d.rounds.push(Round {
                round: n,
                iops: t.total.iops,
                bandwidth_bytes_per_s: t.total.bandwidth_bytes_per_s,
                lat_p99_ns: t.total.latency.lat.at(99.0),
                runtime_ns: t.runtime_ns,
                errors: t.errors.iter().map(|e| e.count).sum(),
            });
            let iops: Vec<f64> = d.rounds.iter().map(|r| r.iops).collect();
            let verdict = Verdict::after_round(p.criterion, SNIA_WINDOW, &iops, p.rounds_max);
            let word = match verdict.as_ref().map(|v| v.outcome) {
                Some(Outcome::Steady) => "  steady",
                Some(_) => "  NOT steady by the round limit",
                None => "",
            };
            say(format!(
                "round {n}: {} {} IOPS{word}",
                d.path,
                report::format::si(t.total.iops)
            ));
            if let Some(v) = verdict {
                d.verdict = v;
                done[i] = true;
            }
        }
    }
    Ok(false)
}

/// Saves each drive's record for later runs' notes.
fn record(p: &Precondition, dir: &std::path::Path) -> Result<(), PreconditionError> {
    let now = tune::journal::now_unix_s();
    for d in &p.drives {
        state::save(
            dir,
            &Record {
                identity: d.identity.clone(),
                path: d.path.clone(),
                size_bytes: d.size_bytes,
                preconditioned_unix_s: now,
                fill_multiple: p.fill_multiple,
                steady: d.verdict.outcome == Outcome::Steady,
                written_since_unix_s: None,
            },
        )?;
    }
    Ok(())
}

#[cfg(test)]
#[path = "precondition_tests.rs"]
mod tests;
