//! Steady-state criteria over a series of per-round values (IOPS), as pure
//! functions: SNIA's Solid State Performance Test Specification's and
//! fio's `steadystate=` (`iops`, `iops_slope`).
//!
//! * **SNIA** (PTS 2.0, "steady state"): over a measurement window of five
//!   consecutive rounds, the data excursion `max(y) − min(y)` is no more
//!   than 20 % of the window's mean, and the excursion of the least-squares
//!   line fitted to the window (its value at the last round minus its
//!   value at the first: `|slope| × (rounds − 1)`) is no more than 10 % of
//!   the mean.
//! * **fio `iops:L`** (steadystate.c, `steadystate_deviation`): every value
//!   of the window lies within `L` of the window's mean; `L%` is a share
//!   of the mean. fio's test is strict: the largest deviation `< L`.
//! * **fio `iops_slope:L`** (`steadystate_slope`): the least-squares slope
//!   (per sample; here per round) is below `L`; `L%`: `100 × |slope| /
//!   mean < L`. fio's samples are one per second over `ss_dur`; numio's
//!   are one per round over the window.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// Rounds of SNIA's measurement window (and numio's window for fio's
/// criteria).
pub const SNIA_WINDOW: usize = 5;
/// SNIA's limit on the data excursion, a share of the window's mean.
pub const SNIA_DATA_EXCURSION: f64 = 0.20;
/// SNIA's limit on the fitted line's excursion, a share of the mean.
pub const SNIA_SLOPE_EXCURSION: f64 = 0.10;

/// A limit of fio's criteria: a share of the mean (`10%`) or an absolute
/// value in the series' unit (`2000` IOPS).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Limit {
    /// Percent of the window's mean.
    Percent(f64),
    /// In the series' own unit.
    Absolute(f64),
}

/// Which steady-state test decides (`--steady`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind", content = "limit")]
pub enum Criterion {
    /// SNIA PTS: data excursion ≤ 20 % and fitted excursion ≤ 10 % of the mean.
    Snia,
    /// fio's `iops:L`: every value within `L` of the mean.
    Iops(Limit),
    /// fio's `iops_slope:L`: the least-squares slope below `L`.
    IopsSlope(Limit),
}

/// Why a `--steady` value was refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SteadyError {
    /// Not one of the three forms.
    #[error("--steady {given}: give snia, iops:P% or iops_slope:P% (fio's steadystate= names; P a percent of the mean, or an absolute IOPS without %)")]
    Unknown {
        /// The value given.
        given: String,
    },
    /// A limit that is no positive number.
    #[error(
        "--steady {given}: the limit must be a positive number, e.g. iops:10% or iops_slope:0.5%"
    )]
    BadLimit {
        /// The value given.
        given: String,
    },
}

impl FromStr for Criterion {
    type Err = SteadyError;
    fn from_str(text: &str) -> Result<Criterion, SteadyError> {
        let given = text.trim();
        if given == "snia" {
            return Ok(Criterion::Snia);
        }
        let (name, limit) = given.split_once(':').ok_or_else(|| SteadyError::Unknown {
            given: given.to_string(),
        })?;
        let bad = || SteadyError::BadLimit {
            given: given.to_string(),
        };
        let (number, pct) = match limit.strip_suffix('%') {
            Some(n) => (n, true),
            None => (limit, false),
        };
        let value: f64 = number.trim().parse().map_err(|_| bad())?;
        if !(value > 0.0 && value.is_finite()) {
            return Err(bad());
        }
        let limit = if pct {
            Limit::Percent(value)
        } else {
            Limit::Absolute(value)
        };
        match name {
            "iops" => Ok(Criterion::Iops(limit)),
            "iops_slope" => Ok(Criterion::IopsSlope(limit)),
            _ => Err(SteadyError::Unknown {
                given: given.to_string(),
            }),
        }
    }
}

impl fmt::Display for Limit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Limit::Percent(p) => write!(f, "{p}%"),
            Limit::Absolute(a) => write!(f, "{a}"),
        }
    }
}

impl fmt::Display for Criterion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Criterion::Snia => write!(f, "snia"),
            Criterion::Iops(l) => write!(f, "iops:{l}"),
            Criterion::IopsSlope(l) => write!(f, "iops_slope:{l}"),
        }
    }
}

/// One window judged: its numbers and whether the criterion holds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WindowCheck {
    /// Mean of the window's values.
    pub mean: f64,
    /// `max − min` of the values.
    pub data_excursion: f64,
    /// Largest `|value − mean|` (fio's deviation).
    pub max_deviation: f64,
    /// Least-squares slope, per round.
    pub slope: f64,
    /// The fitted line's excursion over the window, `|slope| × (n − 1)`.
    pub slope_excursion: f64,
    /// What the criterion compares with its limit (SNIA: the larger of the
    /// two excursions as shares of their limits, ≤ 1 passes; fio: its
    /// criterion in the limit's unit).
    pub measure: f64,
    /// Whether the criterion holds.
    pub met: bool,
}

/// Least-squares slope of `ys` over x = 0, 1, …, n − 1.
pub fn slope(ys: &[f64]) -> f64 {
    let n = ys.len() as f64;
    if ys.len() < 2 {
        return 0.0;
    }
    let mean_x = (n - 1.0) / 2.0;
    let mean_y = ys.iter().sum::<f64>() / n;
    let (mut num, mut den) = (0.0, 0.0);
    for (i, y) in ys.iter().enumerate() {
        let dx = i as f64 - mean_x;
        num += dx * (y - mean_y);
        den += dx * dx;
    }
    num / den
}

/// Judges one window (every value of it) by `criterion`. An empty window,
/// or one whose mean is not positive, never passes.
pub fn check_window(criterion: Criterion, ys: &[f64]) -> WindowCheck {
    let n = ys.len();
    let mean = if n == 0 {
        0.0
    } else {
        ys.iter().sum::<f64>() / n as f64
    };
    let max = ys.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let min = ys.iter().copied().fold(f64::INFINITY, f64::min);
    let data_excursion = if n == 0 { 0.0 } else { max - min };
    let max_deviation = ys.iter().map(|y| (y - mean).abs()).fold(0.0, f64::max);
    let slope = slope(ys);
    let slope_excursion = slope.abs() * n.saturating_sub(1) as f64;
    let usable = n >= 2 && mean > 0.0 && mean.is_finite();
    let share = |v: f64| {
        if mean > 0.0 {
            100.0 * v / mean
        } else {
            f64::INFINITY
        }
    };
    let (measure, met) = match criterion {
        Criterion::Snia => {
            let m = (data_excursion / (SNIA_DATA_EXCURSION * mean))
                .max(slope_excursion / (SNIA_SLOPE_EXCURSION * mean));
            (m, usable && m <= 1.0)
        }
        Criterion::Iops(limit) => fio_test(limit, max_deviation, share(max_deviation), usable),
        Criterion::IopsSlope(limit) => fio_test(limit, slope.abs(), share(slope.abs()), usable),
    };
    WindowCheck {
        mean,
        data_excursion,
        max_deviation,
        slope,
        slope_excursion,
        measure,
        met,
    }
}

/// fio's comparison: the criterion (absolute, or as a percent of the mean)
/// strictly below the limit.
fn fio_test(limit: Limit, absolute: f64, percent: f64, usable: bool) -> (f64, bool) {
    match limit {
        Limit::Absolute(l) => (absolute, usable && absolute < l),
        Limit::Percent(l) => (percent, usable && percent < l),
    }
}

/// The verdict on a series so far: the last `window` values judged, or
/// `None` while fewer have been measured.
pub fn check_last(criterion: Criterion, series: &[f64], window: usize) -> Option<WindowCheck> {
    (window > 0 && series.len() >= window)
        .then(|| check_window(criterion, &series[series.len() - window..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snia(ys: &[f64]) -> WindowCheck {
        check_window(Criterion::Snia, ys)
    }

    #[test]
    fn a_flat_series_is_steady_by_every_criterion() {
        let flat = [1000.0; 5];
        assert!(snia(&flat).met);
        assert!(check_window("iops:1%".parse().unwrap(), &flat).met);
        assert!(check_window("iops_slope:0.1%".parse().unwrap(), &flat).met);
        assert_eq!(snia(&flat).slope, 0.0);
    }

    #[test]
    fn a_rising_series_fails_snias_slope_test_but_not_its_excursion_test() {
        // 100..=118 step 4.5: range 18 (≤ 20 % of the mean 109), but the
        // fitted line rises 18 over the window, 16.5 % > 10 %.
        let rising = [100.0, 104.5, 109.0, 113.5, 118.0];
        let c = snia(&rising);
        assert!((c.slope - 4.5).abs() < 1e-9);
        assert!((c.slope_excursion - 18.0).abs() < 1e-9);
        assert!(c.data_excursion <= 0.2 * c.mean);
        assert!(!c.met);
    }

    #[test]
    fn a_noisy_flat_series_fails_snias_excursion_test_but_not_its_slope_test() {
        // Symmetric noise: slope 0, range 30 % of the mean.
        let noisy = [100.0, 85.0, 115.0, 115.0, 85.0];
        let c = snia(&noisy);
        assert!(c.slope.abs() < 1e-9, "{c:?}");
        assert!(c.slope_excursion < 0.1 * c.mean, "{c:?}");
        assert!(c.data_excursion > 0.2 * c.mean, "{c:?}");
        assert!(!c.met);
    }

    #[test]
    fn snias_limits_are_inclusive() {
        // Range exactly 20 % of the mean 100, slope 0.
        let edge = [90.0, 110.0, 100.0, 110.0, 90.0];
        let c = snia(&edge);
        assert!((c.data_excursion - 20.0).abs() < 1e-9);
        assert!(c.met, "{c:?}");
    }

    #[test]
    fn fios_iops_slope_example() {
        // fio's examples/steadystate.fio: ss=bw_slope:1% ("terminate when
        // bandwidth slope is less than 1% of avg"); on IOPS the same test:
        // slope 1 per sample over a mean of 102 is 0.98 % < 1 %.
        let ys = [100.0, 101.0, 102.0, 103.0, 104.0];
        let c = check_window("iops_slope:1%".parse().unwrap(), &ys);
        assert!((c.measure - 100.0 / 102.0).abs() < 1e-9, "{c:?}");
        assert!(c.met);
        assert!(!check_window("iops_slope:0.9%".parse().unwrap(), &ys).met);
        // Absolute: slope 1 is not strictly below 1.
        assert!(!check_window("iops_slope:1".parse().unwrap(), &ys).met);
        assert!(check_window("iops_slope:1.5".parse().unwrap(), &ys).met);
    }

    #[test]
    fn fios_iops_deviation_example() {
        // ss=iops:10%: every value within 10 % of the mean (100).
        let within = [95.0, 105.0, 100.0, 91.0, 109.0];
        assert!(check_window("iops:10%".parse().unwrap(), &within).met);
        let outside = [95.0, 105.0, 100.0, 89.0, 111.0];
        let c = check_window("iops:10%".parse().unwrap(), &outside);
        assert!((c.max_deviation - 11.0).abs() < 1e-9);
        assert!(!c.met);
    }

    #[test]
    fn the_last_window_is_judged_once_enough_rounds_are_in() {
        let series = [10.0, 500.0, 1000.0, 1000.0, 1000.0, 1000.0, 1000.0];
        assert!(check_last(Criterion::Snia, &series[..4], 5).is_none());
        assert!(!check_last(Criterion::Snia, &series[..5], 5).unwrap().met);
        assert!(check_last(Criterion::Snia, &series, 5).unwrap().met);
    }

    #[test]
    fn an_idle_drive_is_never_steady() {
        assert!(!snia(&[0.0; 5]).met);
        assert!(!check_window("iops:10%".parse().unwrap(), &[0.0; 5]).met);
    }

    #[test]
    fn criteria_parse_and_print_as_fio_names_them() {
        for text in ["snia", "iops:10%", "iops_slope:0.5%", "iops:2000"] {
            let c: Criterion = text.parse().unwrap();
            assert_eq!(c.to_string(), text);
        }
        assert!(matches!(
            "bw:10%".parse::<Criterion>(),
            Err(SteadyError::Unknown { .. })
        ));
        assert!(matches!(
            "iops:-1%".parse::<Criterion>(),
            Err(SteadyError::BadLimit { .. })
        ));
        let e = "iops".parse::<Criterion>().unwrap_err().to_string();
        assert!(e.contains("snia, iops:P% or iops_slope:P%"), "{e}");
    }
}
