//! What to set, per device count, with the numbers that say why.
//!
//! The rule, named: among the thresholds whose latency keeps every budget
//! (`--max-latency`), take the best mean IOPS; recommend the **smallest
//! threshold whose mean IOPS lies within the best's 95 % Student-t
//! interval** (mean − half width; with one run per point, no interval: the
//! best itself). Leave coalescing off when that is threshold 0, when the
//! threshold found does not beat off beyond off's own interval and by at
//! least [`MIN_GAIN_PCT`] (a single drive, or drives the CPU keeps up
//! with), when every threshold counted 0 interrupts per I/O (polled I/O:
//! nothing to save), or when no threshold keeps the latency budget.

use serde::{Deserialize, Serialize};

use super::{raw_value, RowMetrics, ThresholdRow};
use crate::format::{grouped, micros, signed_pct};

/// The least IOPS gain over off, percent, that makes a threshold worth
/// setting (below it, the added latency buys nothing measurable).
pub const MIN_GAIN_PCT: f64 = 2.0;

/// What the recommendation is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Set [`Recommendation::threshold`].
    Coalesce,
    /// Leave it off: no threshold beats off by more than the noise.
    NoGain,
    /// Leave it off: every threshold took 0 interrupts per I/O (polled
    /// I/O), so coalescing has nothing to save.
    Polled,
    /// Leave it off: no threshold keeps the latency budget.
    OverBudget,
    /// Nothing measured (an interrupted sweep).
    NotMeasured,
}

/// The recommendation of one device count.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Recommendation {
    /// What it is.
    pub verdict: Verdict,
    /// The threshold to set (0: leave coalescing off).
    pub threshold: u8,
    /// Its aggregation time, µs (0 when off).
    pub time_us: u32,
    /// The Feature 0x08 value (THR | TIME << 8; 0 when off).
    pub raw: u32,
    /// The recommendation in one sentence.
    pub summary: String,
    /// The numbers behind it, a sentence each.
    pub evidence: Vec<String>,
}

impl Recommendation {
    fn off(verdict: Verdict, summary: String, evidence: Vec<String>) -> Recommendation {
        Recommendation {
            verdict,
            threshold: 0,
            time_us: 0,
            raw: 0,
            summary,
            evidence,
        }
    }

    /// Whether it says to leave coalescing off.
    pub fn is_off(&self) -> bool {
        self.threshold == 0
    }
}

/// `406,000 ± 3,000 IOPS` (no interval with one run).
fn iops(m: &RowMetrics) -> String {
    match m.iops_ci95 {
        Some(ci) => format!("{} ± {} IOPS", grouped(m.iops), grouped(ci)),
        None => format!("{} IOPS", grouped(m.iops)),
    }
}

/// `threshold 3` or `off`.
pub fn name(threshold: u8) -> String {
    if threshold == 0 {
        "off".to_string()
    } else {
        format!("threshold {threshold}")
    }
}

/// The recommendation of one device count's rows (ascending thresholds),
/// by the rule in the module doc.
pub fn recommend(rows: &[ThresholdRow], time_us: u32) -> Recommendation {
    if rows.is_empty() {
        return Recommendation::off(
            Verdict::NotMeasured,
            "no threshold measured: nothing to recommend".into(),
            vec![],
        );
    }
    if rows.iter().all(|r| r.total.interrupts_per_io == Some(0.0)) {
        return Recommendation::off(
            Verdict::Polled,
            "leave it off: the I/O is polled (0 interrupts per I/O at every threshold), so coalescing has nothing to save".into(),
            vec![format!(
                "interrupts per I/O: 0 at {}",
                rows.iter().map(|r| name(r.threshold)).collect::<Vec<_>>().join(", ")
            )],
        );
    }
    let within: Vec<&ThresholdRow> = rows.iter().filter(|r| r.within_budget()).collect();
    let Some(best) = within
        .iter()
        .copied()
        .max_by(|a, b| a.total.iops.total_cmp(&b.total.iops))
    else {
        return over_budget(rows);
    };
    let floor = best.total.iops - best.total.iops_ci95.unwrap_or(0.0);
    let chosen = within
        .iter()
        .copied()
        .filter(|r| r.total.iops >= floor)
        .min_by_key(|r| r.threshold)
        .unwrap_or(best);
    let mut evidence = vec![best_sentence(chosen, best, floor)];
    evidence.extend(budget_sentence(rows));
    let off = rows.iter().find(|r| r.threshold == 0);
    if let Some(off) = off {
        evidence.extend(off_sentences(off, chosen, rows));
    }
    if let Some(summary) = no_gain(rows, chosen, best, off) {
        return Recommendation::off(Verdict::NoGain, summary, evidence);
    }
    if rows.iter().all(|r| r.total.runs < 2) {
        evidence.push(
            "one run per threshold: no interval, so only the best counts; --repeat 3 gives each threshold its 95 % interval".into(),
        );
    }
    Recommendation {
        verdict: Verdict::Coalesce,
        threshold: chosen.threshold,
        time_us,
        raw: raw_value(chosen.threshold, time_us),
        summary: format!(
            "threshold {} (an interrupt per {} completions, or {time_us} µs after the first)",
            chosen.threshold,
            u32::from(chosen.threshold) + 1
        ),
        evidence,
    }
}

/// Why the chosen threshold is not worth setting, if it is not: it is
/// off, or it does not beat off (kept within budget) beyond off's interval
/// and by [`MIN_GAIN_PCT`].
fn no_gain(
    rows: &[ThresholdRow],
    chosen: &ThresholdRow,
    best: &ThresholdRow,
    off: Option<&ThresholdRow>,
) -> Option<String> {
    if chosen.threshold == 0 {
        let faster_over_budget = rows
            .iter()
            .any(|r| r.threshold > 0 && !r.within_budget() && r.total.iops > chosen.total.iops);
        return Some(if best.threshold == 0 && faster_over_budget {
            "leave it off: the thresholds that measured more IOPS than off exceed the latency budget".to_string()
        } else if best.threshold == 0 {
            "leave it off: no threshold measured more IOPS than off".to_string()
        } else {
            format!(
                "leave it off: off's IOPS lie within the 95 % interval of the best ({})",
                name(best.threshold)
            )
        });
    }
    let off = off.filter(|o| o.within_budget())?;
    let gain = (chosen.total.iops / off.total.iops - 1.0) * 100.0;
    let off_hi = off.total.iops + off.total.iops_ci95.unwrap_or(0.0);
    (gain < MIN_GAIN_PCT || chosen.total.iops <= off_hi).then(|| {
        format!(
            "leave it off: {} adds {} % IOPS over off, within off's interval or under {MIN_GAIN_PCT} %",
            name(chosen.threshold),
            signed_pct(gain)
        )
    })
}

fn best_sentence(chosen: &ThresholdRow, best: &ThresholdRow, floor: f64) -> String {
    if chosen.threshold == best.threshold {
        format!(
            "IOPS: the best is {}: {}",
            name(best.threshold),
            iops(&best.total)
        )
    } else {
        format!(
            "IOPS: the best is {} ({}); {} has {}, within its 95 % interval (≥ {}), and is the smallest that is",
            name(best.threshold),
            iops(&best.total),
            name(chosen.threshold),
            iops(&chosen.total),
            grouped(floor)
        )
    }
}

/// What the budget cut, if any budget was given.
fn budget_sentence(rows: &[ThresholdRow]) -> Option<String> {
    let budgets: Vec<String> = rows
        .first()?
        .budgets
        .iter()
        .map(|b| b.budget.describe())
        .collect();
    if budgets.is_empty() {
        return None;
    }
    let over: Vec<String> = rows
        .iter()
        .filter(|r| !r.within_budget())
        .map(|r| format!("{} ({})", name(r.threshold), measured(r)))
        .collect();
    Some(if over.is_empty() {
        format!(
            "latency budget {}: every threshold keeps it",
            budgets.join(", ")
        )
    } else {
        format!(
            "latency budget {}: {} {} it and {} left out",
            budgets.join(", "),
            over.join(", "),
            if over.len() == 1 { "exceeds" } else { "exceed" },
            if over.len() == 1 { "is" } else { "are" }
        )
    })
}

/// `p99.99 2,400.0 µs` for each budget of `r`.
fn measured(r: &ThresholdRow) -> String {
    r.budgets
        .iter()
        .map(|b| match b.measured_ns {
            Some(v) => format!("p{} {} µs", b.budget.percentile, micros(v)),
            None => format!("p{} not measured", b.budget.percentile),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Off against the chosen threshold: IOPS, interrupts and latency.
fn off_sentences(off: &ThresholdRow, chosen: &ThresholdRow, rows: &[ThresholdRow]) -> Vec<String> {
    if chosen.threshold == 0 {
        return vec![each_against_off(off, rows)];
    }
    let (o, c) = (&off.total, &chosen.total);
    let mut out = vec![format!(
        "against off ({}): {} IOPS ({} %)",
        iops(o),
        grouped(c.iops),
        signed_pct((c.iops / o.iops - 1.0) * 100.0)
    )];
    if let (Some(a), Some(b)) = (o.interrupts_per_io, c.interrupts_per_io) {
        out.push(format!(
            "interrupts per I/O: {a:.3} off, {b:.3} at {}",
            name(chosen.threshold)
        ));
    }
    if let (Some(a), Some(b)) = (o.cpu_ns_per_io, c.cpu_ns_per_io) {
        out.push(format!(
            "machine CPU per I/O: {:.2} µs off, {:.2} µs at {}",
            a / 1000.0,
            b / 1000.0,
            name(chosen.threshold)
        ));
    }
    let lat: Vec<String> = [
        ("p95", o.lat_p95_ns, c.lat_p95_ns),
        ("p99.99", o.lat_p9999_ns, c.lat_p9999_ns),
    ]
    .iter()
    .filter_map(|&(p, a, b)| Some(format!("{p} {} → {} µs", micros(a?), micros(b?))))
    .collect();
    if !lat.is_empty() {
        out.push(format!(
            "clat off → {}: {}",
            name(chosen.threshold),
            lat.join(", ")
        ));
    }
    out
}

/// Every other threshold against off: IOPS, and interrupts and CPU per
/// I/O where counted (`threshold 9: 15,860 IOPS (-0.5 %), 0.094
/// interrupts/IO, 31.13 µs CPU/IO`).
fn each_against_off(off: &ThresholdRow, rows: &[ThresholdRow]) -> String {
    let o = &off.total;
    let mut parts = Vec::new();
    for r in rows.iter().filter(|r| r.threshold > 0) {
        let mut p = format!(
            "{}: {} IOPS ({} %)",
            name(r.threshold),
            grouped(r.total.iops),
            signed_pct((r.total.iops / o.iops - 1.0) * 100.0)
        );
        if let Some(v) = r.total.interrupts_per_io {
            p.push_str(&format!(", {v:.3} interrupts/IO"));
        }
        if let Some(v) = r.total.cpu_ns_per_io {
            p.push_str(&format!(", {:.2} µs CPU/IO", v / 1000.0));
        }
        parts.push(p);
    }
    let mut head = format!("against off ({}", iops(o));
    if let Some(v) = o.interrupts_per_io {
        head.push_str(&format!(", {v:.3} interrupts/IO"));
    }
    if let Some(v) = o.cpu_ns_per_io {
        head.push_str(&format!(", {:.2} µs CPU/IO", v / 1000.0));
    }
    format!("{head}): {}", parts.join("; "))
}

/// Every threshold misses a budget: leave it off, with the least latency seen.
fn over_budget(rows: &[ThresholdRow]) -> Recommendation {
    let lines: Vec<String> = rows
        .iter()
        .map(|r| format!("{}: {}", name(r.threshold), measured(r)))
        .collect();
    let budgets: Vec<String> = rows[0]
        .budgets
        .iter()
        .map(|b| b.budget.describe())
        .collect();
    Recommendation::off(
        Verdict::OverBudget,
        format!(
            "leave it off: no threshold keeps the latency budget {} (off included); relax --max-latency to choose among them",
            budgets.join(", ")
        ),
        lines,
    )
}

/// What a device count's rows say besides the recommendation: how
/// interrupts per I/O move from off to the largest threshold.
pub fn findings(rows: &[ThresholdRow]) -> Vec<String> {
    let (Some(off), Some(top)) = (
        rows.iter().find(|r| r.threshold == 0),
        rows.iter()
            .filter(|r| r.threshold > 0)
            .max_by_key(|r| r.threshold),
    ) else {
        return Vec::new();
    };
    let (Some(a), Some(b)) = (off.total.interrupts_per_io, top.total.interrupts_per_io) else {
        return vec!["interrupts per I/O: not counted (no NVMe queue interrupt lines in /proc/interrupts for these controllers)".into()];
    };
    if a == 0.0 {
        return vec!["interrupts per I/O: 0 with coalescing off (polled I/O)".into()];
    }
    let share = b / a * 100.0;
    let sentence = if b < a {
        let fewer = if b > 0.0 {
            format!(" ({:.1}× fewer)", a / b)
        } else {
            String::new()
        };
        format!(
            "interrupts per I/O fall from {a:.3} (off) to {b:.3} at threshold {}: {share:.0} % of off's{fewer}",
            top.threshold
        )
    } else {
        format!(
            "interrupts per I/O do not fall: {a:.3} (off), {b:.3} at threshold {} ({share:.0} % of off's): the controllers may not coalesce",
            top.threshold
        )
    };
    vec![sentence]
}
