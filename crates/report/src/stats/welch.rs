//! Welch's unequal-variances t-test, the Welch–Satterthwaite degrees of
//! freedom, the confidence interval of the difference of means, and
//! Fieller's interval for the ratio of the means (the percentage difference).

use serde::{Deserialize, Serialize};

use super::describe::{mean, variance};
use super::tdist::{t_cdf, t_quantile};
use super::StatsError;

/// Result of Welch's t-test of `mean(a) − mean(b)`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Welch {
    /// Mean of `a`.
    pub mean_a: f64,
    /// Mean of `b`.
    pub mean_b: f64,
    /// `mean_a − mean_b`.
    pub diff: f64,
    /// Standard error of the difference, `√(s²a/na + s²b/nb)`.
    pub se: f64,
    /// The t statistic, `diff / se`.
    pub t: f64,
    /// Welch–Satterthwaite degrees of freedom.
    pub df: f64,
    /// Two-sided p-value.
    pub p_value: f64,
    /// Confidence level of the intervals (e.g. 0.95).
    pub confidence: f64,
    /// Lower end of the interval of `diff`.
    pub diff_low: f64,
    /// Upper end of the interval of `diff`.
    pub diff_high: f64,
    /// Fieller's interval of `mean_a / mean_b − 1` in percent; `None` when
    /// `mean_b` cannot be told apart from 0 (the interval is unbounded).
    pub pct_ci: Option<(f64, f64)>,
}

/// Welch–Satterthwaite degrees of freedom from `s²/n` of each arm and `n`.
pub fn welch_satterthwaite_df(va_over_n: f64, na: usize, vb_over_n: f64, nb: usize) -> f64 {
    let num = (va_over_n + vb_over_n).powi(2);
    let den = va_over_n.powi(2) / (na as f64 - 1.0) + vb_over_n.powi(2) / (nb as f64 - 1.0);
    num / den
}

/// Welch's t-test of `a` against `b` at `confidence` (e.g. 0.95).
///
/// Errors: fewer than two values in an arm ([`StatsError::TooFew`]), or no
/// spread in either arm ([`StatsError::ZeroVariance`]: the difference is then
/// exact and there is nothing to test).
pub fn welch(a: &[f64], b: &[f64], confidence: f64) -> Result<Welch, StatsError> {
    assert!(
        confidence > 0.0 && confidence < 1.0,
        "confidence must be in (0, 1)"
    );
    super::check_two_arms(a, b)?;
    let (mean_a, mean_b) = (mean(a), mean(b));
    let va = variance(a) / a.len() as f64;
    let vb = variance(b) / b.len() as f64;
    let se = (va + vb).sqrt();
    if se == 0.0 {
        return Err(StatsError::ZeroVariance);
    }
    let diff = mean_a - mean_b;
    let t = diff / se;
    let df = welch_satterthwaite_df(va, a.len(), vb, b.len());
    let p_value = (2.0 * (1.0 - t_cdf(t.abs(), df))).clamp(0.0, 1.0);
    let t_crit = t_quantile(0.5 + confidence / 2.0, df);
    Ok(Welch {
        mean_a,
        mean_b,
        diff,
        se,
        t,
        df,
        p_value,
        confidence,
        diff_low: diff - t_crit * se,
        diff_high: diff + t_crit * se,
        pct_ci: fieller_pct(mean_a, va, mean_b, vb, t_crit),
    })
}

/// Fieller's interval for `ρ = μa / μb` from independent means, returned as
/// `(ρ − 1) × 100` percent. Solves `(x̄a − ρ x̄b)² ≤ t² (va + ρ² vb)` where
/// `va`, `vb` are the variances of the means. `None` when `g = t² vb / x̄b² ≥ 1`.
pub fn fieller_pct(mean_a: f64, va: f64, mean_b: f64, vb: f64, t_crit: f64) -> Option<(f64, f64)> {
    let t2 = t_crit * t_crit;
    let qa = mean_b * mean_b - t2 * vb;
    if qa <= 0.0 {
        return None;
    }
    let qb = -2.0 * mean_a * mean_b;
    let qc = mean_a * mean_a - t2 * va;
    let disc = qb * qb - 4.0 * qa * qc;
    if disc < 0.0 {
        return None;
    }
    let root = disc.sqrt();
    let low = (-qb - root) / (2.0 * qa);
    let high = (-qb + root) / (2.0 * qa);
    Some(((low - 1.0) * 100.0, (high - 1.0) * 100.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(got: f64, want: f64, tol: f64) {
        assert!((got - want).abs() <= tol, "got {got}, want {want} (±{tol})");
    }

    // Reference values computed with SciPy 1.x:
    // scipy.stats.ttest_ind(a, b, equal_var=False) and t.ppf.
    const A1: [f64; 15] = [
        27.5, 21.0, 19.0, 23.6, 17.0, 17.9, 16.9, 20.1, 21.9, 22.6, 23.1, 19.6, 19.0, 21.7, 21.4,
    ];
    const A2: [f64; 15] = [
        27.1, 22.0, 20.8, 23.4, 23.4, 23.5, 25.8, 22.0, 24.8, 20.2, 21.9, 22.1, 22.9, 20.5, 24.4,
    ];

    #[test]
    fn welch_textbook_example() {
        let w = welch(&A1, &A2, 0.95).unwrap();
        close(w.t, WANT_T, 1e-9);
        close(w.df, WANT_DF, 1e-9);
        close(w.p_value, WANT_P, 1e-9);
        close(w.diff_low, WANT_LOW, 1e-8);
        close(w.diff_high, WANT_HIGH, 1e-8);
    }

    const WANT_T: f64 = -2.455_356_398_286_006;
    const WANT_DF: f64 = 24.988_529_290_231_416;
    const WANT_P: f64 = 0.021_378_001_462_866_992;
    const WANT_LOW: f64 = -3.984_096_267_140_929;
    const WANT_HIGH: f64 = -0.349_237_066_192_406_9;

    #[test]
    fn welch_small_unequal_arms() {
        // a = 100 102 98, b = 90 95 (SciPy: t 2.72352, df 1.43942, p 0.158328).
        let w = welch(&[100.0, 102.0, 98.0], &[90.0, 95.0], 0.95).unwrap();
        close(w.t, 2.723_523_897_009_610_7, 1e-9);
        close(w.df, 1.439_422_909_786_198_6, 1e-9);
        close(w.p_value, 0.158_328_359_440_114_9, 1e-8);
        close(w.diff_low, -10.081_265_540_471_293, 1e-6);
        close(w.diff_high, 25.081_265_540_471_293, 1e-6);
    }

    #[test]
    fn welch_df_formula_by_hand() {
        // va = 4/4 = 1, vb = 9/9 = 1: df = 4 / (1/3 + 1/8) = 96/11.
        close(welch_satterthwaite_df(1.0, 4, 1.0, 9), 96.0 / 11.0, 1e-12);
        // Equal n and variances: df = 2n − 2.
        close(welch_satterthwaite_df(0.5, 6, 0.5, 6), 10.0, 1e-12);
    }

    #[test]
    fn welch_zero_variance_and_too_few() {
        assert_eq!(
            welch(&[5.0, 5.0], &[5.0, 5.0], 0.95),
            Err(StatsError::ZeroVariance)
        );
        assert_eq!(
            welch(&[5.0, 5.0], &[4.0, 4.0], 0.95),
            Err(StatsError::ZeroVariance)
        );
        assert_eq!(
            welch(&[5.0], &[4.0, 4.1], 0.95),
            Err(StatsError::TooFew {
                arm: "a",
                need: 2,
                got: 1
            })
        );
        assert_eq!(
            welch(&[5.0, f64::NAN], &[4.0, 4.1], 0.95),
            Err(StatsError::NonFinite { arm: "a" })
        );
        // One arm constant, the other not: a valid test with df = nb − 1.
        let w = welch(&[10.0, 10.0, 10.0], &[8.0, 9.0, 10.0], 0.95).unwrap();
        close(w.df, 2.0, 1e-12);
        assert!(w.p_value.is_finite());
    }

    #[test]
    fn fieller_with_exact_denominator_is_scaled_diff_ci() {
        // vb = 0: ρ ∈ (x̄a ± t √va) / x̄b.
        let (low, high) = fieller_pct(103.0, 1.0, 100.0, 0.0, 2.0).unwrap();
        close(low, 1.0, 1e-9);
        close(high, 5.0, 1e-9);
    }

    #[test]
    fn fieller_ends_solve_the_pivot() {
        let (ma, va, mb, vb, t) = (103.0, 1.5, 100.0, 2.0, 2.3);
        let (low, high) = fieller_pct(ma, va, mb, vb, t).unwrap();
        for pct in [low, high] {
            let rho = 1.0 + pct / 100.0;
            let pivot = (ma - rho * mb) / (va + rho * rho * vb).sqrt();
            close(pivot.abs(), t, 1e-9);
        }
        assert!(low < 3.0 && 3.0 < high);
        // Denominator indistinguishable from 0: unbounded.
        assert_eq!(fieller_pct(1.0, 1.0, 0.5, 1.0, 2.0), None);
    }

    #[test]
    fn welch_pct_ci_contains_point_estimate() {
        let w = welch(&A1, &A2, 0.95).unwrap();
        let (low, high) = w.pct_ci.unwrap();
        let pct = (w.mean_a / w.mean_b - 1.0) * 100.0;
        assert!(low < pct && pct < high, "{low} < {pct} < {high}");
        assert!(high < 0.0, "significant difference: CI excludes 0");
    }
}
