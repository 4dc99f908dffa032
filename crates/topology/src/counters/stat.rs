//! `/proc/stat`: CPU time per CPU and in total, context switches and
//! interrupts of the machine since boot.

use serde::{Deserialize, Serialize};

use super::CpuTimes;
use crate::error::ParseError;
use crate::model::CpuId;

/// What one reading of `/proc/stat` holds.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct StatSample {
    /// The `cpu` line: every CPU together.
    pub total: CpuTimes,
    /// The `cpuN` lines, in file order (online CPUs only: an offline CPU
    /// has no line).
    pub cpus: Vec<(CpuId, CpuTimes)>,
    /// `ctxt`: context switches of every CPU since boot.
    pub context_switches: u64,
    /// The first number of `intr`: interrupts of every kind since boot.
    pub interrupts: u64,
}

/// Parses a `/proc/stat` text. Kernels before 2.6.11 write no steal, and
/// the guest columns came later still: missing columns count 0.
///
/// Errors: no `cpu` line, or a `cpu`, `ctxt` or `intr` line whose numbers
/// do not parse (each error names the line).
pub fn parse_stat(text: &str) -> Result<StatSample, ParseError> {
    let mut out = StatSample::default();
    let mut seen_total = false;
    for (i, line) in text.lines().enumerate() {
        let mut words = line.split_whitespace();
        let Some(key) = words.next() else { continue };
        let bad = |why: ParseError| ParseError::at_line(i + 1, short(line), why);
        match key {
            "cpu" => {
                out.total = cpu_times(words).map_err(bad)?;
                seen_total = true;
            }
            "ctxt" => out.context_switches = first_number(words).map_err(bad)?,
            "intr" => out.interrupts = first_number(words).map_err(bad)?,
            _ => {
                if let Some(n) = key.strip_prefix("cpu") {
                    let cpu: u32 = n.parse().map_err(|_| bad(ParseError::NotACpuNumber))?;
                    out.cpus.push((CpuId(cpu), cpu_times(words).map_err(bad)?));
                }
            }
        }
    }
    if !seen_total {
        return Err(ParseError::NoCpuLine);
    }
    Ok(out)
}

/// The first 80 characters of a line (the `intr` line is thousands long).
fn short(line: &str) -> String {
    match line.char_indices().nth(80) {
        Some((at, _)) => format!("{}…", &line[..at]),
        None => line.to_string(),
    }
}

fn first_number<'a>(mut words: impl Iterator<Item = &'a str>) -> Result<u64, ParseError> {
    let w = words.next().ok_or(ParseError::NoCount)?;
    w.parse().map_err(|_| ParseError::NotACount {
        word: w.to_string(),
    })
}

fn cpu_times<'a>(words: impl Iterator<Item = &'a str>) -> Result<CpuTimes, ParseError> {
    let mut v = [0u64; 8];
    let mut n = 0;
    for w in words.take(v.len()) {
        v[n] = w.parse().map_err(|_| ParseError::NotATickCount {
            word: w.to_string(),
        })?;
        n += 1;
    }
    if n < 4 {
        return Err(ParseError::TooFewCpuColumns { found: n });
    }
    let [user, nice, system, idle, iowait, irq, softirq, steal] = v;
    Ok(CpuTimes {
        user,
        nice,
        system,
        idle,
        iowait,
        irq,
        softirq,
        steal,
    })
}
