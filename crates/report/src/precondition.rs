//! A preconditioning run (`numio precondition`): its file (schema
//! [`SCHEMA`], what `--json` prints and `--save` writes), the rule that
//! ends a drive's rounds ([`Verdict::after_round`], over [`crate::steady`])
//! and its human view ([`render`], which `numio report FILE` reprints).

use std::fmt::Write as _;

use planner::Workload;
use serde::{Deserialize, Serialize};
use topology::{CpuId, NodeId};

use crate::format::{bandwidth, bytes, latency, si};
use crate::steady::{check_last, Criterion, WindowCheck};

/// The schema name of a preconditioning file.
pub const SCHEMA: &str = "numio-precondition";
/// Its version (1: this layout).
pub const SCHEMA_VERSION: u32 = 1;

/// A whole preconditioning run: every drive, its fill and rounds and verdict.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Precondition {
    /// [`SCHEMA`].
    pub schema: String,
    /// [`SCHEMA_VERSION`].
    pub schema_version: u32,
    /// The command line.
    pub command: String,
    /// Start, seconds since the Unix epoch.
    pub started_unix_s: u64,
    /// The steady-state test.
    pub criterion: Criterion,
    /// Rounds in the window the test judges.
    pub window_rounds: u32,
    /// Planned length of a round, in nanoseconds.
    pub round_ns: u64,
    /// Most rounds per drive.
    pub rounds_max: u32,
    /// Sequential fill before the rounds, in capacities (0: none).
    pub fill_multiple: f64,
    /// Block size of the fill's writes.
    pub fill_bs_bytes: u64,
    /// Stopped early by Ctrl-C or SIGTERM.
    pub interrupted: bool,
    /// Per drive, in the order given.
    pub drives: Vec<Drive>,
}

/// One drive's preconditioning.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Drive {
    /// The target as given.
    pub path: String,
    /// The stable identity its state is kept under (NVMe: subsystem NQN
    /// and namespace id; else the path and size).
    pub identity: String,
    /// Its NUMA node, when known.
    pub node: Option<NodeId>,
    /// The CPUs its jobs ran on.
    pub cpus: Vec<CpuId>,
    /// Its capacity in bytes.
    pub size_bytes: u64,
    /// The measured workload of its rounds.
    pub workload: Workload,
    /// The fill's passes.
    pub fill: Vec<FillPass>,
    /// Every round measured.
    pub rounds: Vec<Round>,
    /// The verdict.
    pub verdict: Verdict,
}

/// One pass of the sequential fill over a drive.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FillPass {
    /// Bytes written.
    pub bytes: u64,
    /// Time it took, in nanoseconds.
    pub runtime_ns: u64,
    /// Bytes per second.
    pub bandwidth_bytes_per_s: f64,
}

/// One measured round of a drive.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Round {
    /// Its number, from 1.
    pub round: u32,
    /// I/Os per second (reads and writes).
    pub iops: f64,
    /// Bytes per second.
    pub bandwidth_bytes_per_s: f64,
    /// 99th percentile of total latency, when measured.
    pub lat_p99_ns: Option<u64>,
    /// Measured time, in nanoseconds.
    pub runtime_ns: u64,
    /// Failed I/Os.
    pub errors: u64,
}

/// How a drive's rounds ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// The criterion held over the window.
    Steady,
    /// The round limit came first.
    NotMet,
    /// Interrupted before either.
    Interrupted,
}

/// The verdict on one drive.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    /// How it ended.
    pub outcome: Outcome,
    /// First and last round of the window judged last (`None`: fewer
    /// rounds than a window).
    pub window: Option<[u32; 2]>,
    /// That window's numbers.
    pub check: Option<WindowCheck>,
}

impl Verdict {
    /// After a round: the verdict on `iops` (one value per round so far)
    /// when the drive is done, steady or out of rounds; `None` to go on.
    pub fn after_round(
        criterion: Criterion,
        window: usize,
        iops: &[f64],
        rounds_max: u32,
    ) -> Option<Verdict> {
        let check = check_last(criterion, iops, window);
        let steady = check.as_ref().is_some_and(|c| c.met);
        if !steady && iops.len() < rounds_max as usize {
            return None;
        }
        Some(Verdict::of(
            if steady {
                Outcome::Steady
            } else {
                Outcome::NotMet
            },
            window,
            iops.len(),
            check,
        ))
    }

    /// A verdict of `outcome` whose last window ends at round `rounds`.
    pub fn of(
        outcome: Outcome,
        window: usize,
        rounds: usize,
        check: Option<WindowCheck>,
    ) -> Verdict {
        let window = (check.is_some() && rounds >= window)
            .then(|| [(rounds + 1 - window) as u32, rounds as u32]);
        Verdict {
            outcome,
            window,
            check,
        }
    }
}

impl Precondition {
    /// Whether every drive reached steady state.
    pub fn all_steady(&self) -> bool {
        self.drives
            .iter()
            .all(|d| d.verdict.outcome == Outcome::Steady)
    }
}

/// The human view of a preconditioning run.
pub fn render(p: &Precondition) -> String {
    let mut out = String::new();
    let fill = if p.fill_multiple > 0.0 {
        format!(
            "fill {}x capacity with sequential {} writes, then ",
            p.fill_multiple,
            bytes(p.fill_bs_bytes)
        )
    } else {
        "no fill, ".to_string()
    };
    let _ = writeln!(
        out,
        "precondition: {fill}rounds of {} (at most {}); steady state by {} over {} rounds",
        latency(p.round_ns as f64),
        p.rounds_max,
        p.criterion,
        p.window_rounds
    );
    for d in &p.drives {
        drive_block(&mut out, p, d);
    }
    if p.interrupted {
        let _ = writeln!(out, "\ninterrupted: the rounds measured are kept; no drive marked preconditioned by an unfinished run");
    }
    out
}

fn drive_block(out: &mut String, p: &Precondition, d: &Drive) {
    let cpus: Vec<String> = d.cpus.iter().map(|c| c.0.to_string()).collect();
    let node = d.node.map_or("unknown".into(), |n| n.0.to_string());
    let _ = writeln!(
        out,
        "\ndrive {}  node {node}  CPUs {}  {}  ({})",
        d.path,
        if cpus.is_empty() {
            "-".into()
        } else {
            cpus.join(",")
        },
        bytes(d.size_bytes),
        d.identity
    );
    for (i, f) in d.fill.iter().enumerate() {
        let _ = writeln!(
            out,
            "  fill pass {}: {} in {:.2}s ({})",
            i + 1,
            bytes(f.bytes),
            f.runtime_ns as f64 / 1e9,
            bandwidth(f.bandwidth_bytes_per_s)
        );
    }
    let w = &d.workload;
    let _ = writeln!(
        out,
        "  rounds: {} {} QD {} x{}",
        w.rw.fio_name(),
        bytes(w.bs_min_bytes),
        w.iodepth,
        w.numjobs
    );
    let _ = writeln!(out, "  round      IOPS    bandwidth        p99");
    let window = d.verdict.window.unwrap_or([0, 0]);
    for r in &d.rounds {
        let mark = if (window[0]..=window[1]).contains(&r.round) {
            "*"
        } else {
            " "
        };
        let p99 = r.lat_p99_ns.map_or("-".into(), |n| latency(n as f64));
        let _ = writeln!(
            out,
            "  {mark}{:>4} {:>9} {:>12} {:>10}{}",
            r.round,
            si(r.iops),
            bandwidth(r.bandwidth_bytes_per_s),
            p99,
            if r.errors > 0 {
                format!("  {} errors", r.errors)
            } else {
                String::new()
            }
        );
    }
    let _ = writeln!(out, "  {}", verdict_line(p, d));
}

/// One line: the verdict, with the window's numbers against the limits.
pub fn verdict_line(p: &Precondition, d: &Drive) -> String {
    let v = &d.verdict;
    let numbers = match (&v.check, v.window) {
        (Some(c), Some([a, b])) => format!(
            "rounds {a}-{b} (*): mean {} IOPS, data excursion {:.1} %, slope excursion {:.1} %, max deviation {:.1} %",
            si(c.mean),
            pct(c.data_excursion, c.mean),
            pct(c.slope_excursion, c.mean),
            pct(c.max_deviation, c.mean)
        ),
        _ => format!("fewer than {} rounds measured", p.window_rounds),
    };
    let limits = match p.criterion {
        Criterion::Snia => "SNIA: data ≤ 20 %, slope ≤ 10 %".to_string(),
        c => format!("fio {c}"),
    };
    match v.outcome {
        Outcome::Steady => format!("steady state in {numbers} ({limits})"),
        Outcome::NotMet => format!(
            "NOT steady after {} rounds (the limit): last window {numbers} ({limits}); run more --rounds or longer --round",
            d.rounds.len()
        ),
        Outcome::Interrupted => format!(
            "NOT decided: interrupted after {} rounds; last window {numbers}",
            d.rounds.len()
        ),
    }
}

fn pct(part: f64, mean: f64) -> f64 {
    if mean > 0.0 {
        100.0 * part / mean
    } else {
        0.0
    }
}

/// Prints `p` to `out` (its JSON with `json`, else [`render`]) and saves
/// its JSON to `save` when given.
pub fn write(
    p: &Precondition,
    json: bool,
    save: Option<&std::path::Path>,
    out: &mut dyn std::io::Write,
) -> Result<(), crate::ReportError> {
    let text = serde_json::to_string_pretty(p).expect("a precondition result serializes") + "\n";
    if let Some(path) = save {
        std::fs::write(path, &text).map_err(|source| crate::ReportError::Write {
            path: path.to_path_buf(),
            source,
        })?;
    }
    let shown = if json { text } else { render(p) };
    out.write_all(shown.as_bytes())
        .map_err(crate::ReportError::stdout)
}

/// The view of `text` when it is a preconditioning file of a version this
/// build reads; `None` for any other file.
pub fn reprint(text: &str) -> Option<String> {
    parse(text).map(|p| render(&p))
}

/// `text` as a preconditioning file of a version this build reads.
pub fn parse(text: &str) -> Option<Precondition> {
    let p: Precondition = serde_json::from_str(text).ok()?;
    (p.schema == SCHEMA && (1..=SCHEMA_VERSION).contains(&p.schema_version)).then_some(p)
}

#[cfg(test)]
#[path = "precondition_tests.rs"]
mod tests;
