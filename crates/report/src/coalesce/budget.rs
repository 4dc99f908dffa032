//! A coalescing sweep's latency budgets as the user writes them
//! (`--max-latency p99.99=2ms`, repeatable or comma-separated), and the
//! percentiles every run of the sweep measures ([`percentiles`]).

use super::{LatencyBudget, PERCENTILES};

/// What every budget error suggests.
const FIX: &str = "give a percentile and a time, such as p99.99=2ms or p99=500us";

/// Why a `--max-latency` value was refused; each names the value.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum BudgetError {
    /// No `=` between the percentile and the time.
    #[error("--max-latency {word}: no `=`; {}", FIX)]
    NoEquals {
        /// The budget as written.
        word: String,
    },
    /// Not `pN` with 0 < N < 100.
    #[error("--max-latency {word}: `{percentile}` is not a percentile between p0 and p100 (exclusive); {}", FIX)]
    Percentile {
        /// The budget as written.
        word: String,
        /// The percentile part as written.
        percentile: String,
    },
    /// A bare number: no unit.
    #[error("--max-latency {word}: `{time}` has no unit; {}", FIX)]
    NoUnit {
        /// The budget as written.
        word: String,
        /// The time part as written.
        time: String,
    },
    /// Not a time, or 0.
    #[error("--max-latency {word}: `{time}` is not a time above 0; {}", FIX)]
    Time {
        /// The budget as written.
        word: String,
        /// The time part as written.
        time: String,
    },
    /// Two budgets of one percentile.
    #[error("--max-latency {word}: p{percentile} is given twice; give one budget per percentile")]
    Twice {
        /// The second budget as written.
        word: String,
        /// Its percentile.
        percentile: f64,
    },
}

impl LatencyBudget {
    /// Parses one budget: `p99.99=2ms`.
    pub fn parse(word: &str) -> Result<LatencyBudget, BudgetError> {
        let (p, t) = word.split_once('=').ok_or_else(|| BudgetError::NoEquals {
            word: word.to_string(),
        })?;
        let percentile: f64 = p
            .trim()
            .strip_prefix('p')
            .and_then(|n| n.parse().ok())
            .filter(|v: &f64| *v > 0.0 && *v < 100.0)
            .ok_or_else(|| BudgetError::Percentile {
                word: word.to_string(),
                percentile: p.to_string(),
            })?;
        let t = t.trim();
        if t.chars().all(|c| c.is_ascii_digit()) {
            return Err(BudgetError::NoUnit {
                word: word.to_string(),
                time: t.to_string(),
            });
        }
        let max_ns = planner::fio::units::parse_time_ns(t, 1)
            .ok()
            .filter(|&ns| ns > 0)
            .ok_or_else(|| BudgetError::Time {
                word: word.to_string(),
                time: t.to_string(),
            })?;
        Ok(LatencyBudget {
            percentile,
            max_ns: max_ns as f64,
        })
    }

    /// Parses `--max-latency` as given (repeatable, or comma-separated):
    /// one budget per percentile.
    pub fn parse_list(texts: &[String]) -> Result<Vec<LatencyBudget>, BudgetError> {
        let mut out: Vec<LatencyBudget> = Vec::new();
        for word in texts.iter().flat_map(|t| t.split(',')).map(str::trim) {
            let b = LatencyBudget::parse(word)?;
            if out.iter().any(|o| o.percentile == b.percentile) {
                return Err(BudgetError::Twice {
                    word: word.to_string(),
                    percentile: b.percentile,
                });
            }
            out.push(b);
        }
        Ok(out)
    }
}

/// The percentiles every run measures: the engine's, the table's
/// ([`PERCENTILES`]) and the budgets', ascending, each once.
pub fn percentiles(engine: &[f64], budgets: &[LatencyBudget]) -> Vec<f64> {
    let mut v: Vec<f64> = engine
        .iter()
        .copied()
        .chain(PERCENTILES)
        .chain(budgets.iter().map(|b| b.percentile))
        .collect();
    v.sort_by(f64::total_cmp);
    v.dedup();
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    fn budgets(v: &[&str]) -> Result<Vec<LatencyBudget>, BudgetError> {
        LatencyBudget::parse_list(&v.iter().map(|x| x.to_string()).collect::<Vec<_>>())
    }

    #[test]
    fn latency_budgets_name_a_percentile_and_a_time() {
        let b = budgets(&["p99.99=2ms", "p99=500us"]).unwrap();
        assert_eq!(b.len(), 2);
        assert_eq!((b[0].percentile, b[0].max_ns), (99.99, 2e6));
        assert_eq!((b[1].percentile, b[1].max_ns), (99.0, 500e3));
        assert_eq!(budgets(&["p50=1ms,p95=2ms"]).unwrap().len(), 2);
        let err = |t: &str| budgets(&[t]).unwrap_err().to_string();
        assert!(err("p99.99").contains("no `=`"), "{}", err("p99.99"));
        assert!(
            err("p100=1ms").contains("not a percentile"),
            "{}",
            err("p100=1ms")
        );
        assert!(err("99=1ms").contains("not a percentile"));
        assert!(err("p99=2").contains("has no unit"));
        assert!(err("p99=2x").contains("not a time above 0"));
        assert!(err("p99=1ms,p99=2ms").contains("given twice"));
    }

    #[test]
    fn runs_measure_the_engines_the_tables_and_the_budgets_percentiles() {
        let budget = LatencyBudget {
            percentile: 99.9,
            max_ns: 1e6,
        };
        assert_eq!(
            percentiles(&[50.0, 99.0], &[budget]),
            [50.0, 95.0, 99.0, 99.9, 99.99]
        );
    }
}
