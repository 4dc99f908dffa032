//! Pure statistics, each named by its method: descriptive summaries,
//! outliers by modified z-score over the MAD, Welch's t-test with
//! Welch–Satterthwaite degrees of freedom, Fieller's ratio interval, a seeded
//! percentile bootstrap, Mann–Kendall drift over run order, and the Student
//! t distribution they rest on.

pub mod bootstrap;
pub mod describe;
pub mod tdist;
pub mod trend;
pub mod welch;

pub use bootstrap::{bootstrap, Bootstrap};
pub use describe::{mad, median, modified_z_scores, outliers, summarize, Outlier, Summary};
pub use tdist::{t_cdf, t_quantile};
pub use trend::{trend, Trend};
pub use welch::{welch, Welch};

/// Why a statistic could not be computed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StatsError {
    /// An arm has too few values.
    #[error(
        "arm {arm} has {got} value(s); this needs at least {need}: run more repeats (--repeat)"
    )]
    TooFew {
        /// Which arm (`a` or `b`).
        arm: &'static str,
        /// Values needed.
        need: usize,
        /// Values given.
        got: usize,
    },
    /// No spread in either arm: the difference is exact.
    #[error("every run of each arm gave the same value: the difference is exact, there is no spread to test")]
    ZeroVariance,
    /// A value is NaN or infinite.
    #[error("arm {arm} has a value that is not a finite number")]
    NonFinite {
        /// Which arm.
        arm: &'static str,
    },
}

/// Both arms of a two-sample statistic have at least two values, all finite.
pub(crate) fn check_two_arms(a: &[f64], b: &[f64]) -> Result<(), StatsError> {
    for (arm, values) in [("a", a), ("b", b)] {
        if values.len() < 2 {
            return Err(StatsError::TooFew {
                arm,
                need: 2,
                got: values.len(),
            });
        }
        if values.iter().any(|v| !v.is_finite()) {
            return Err(StatsError::NonFinite { arm });
        }
    }
    Ok(())
}
