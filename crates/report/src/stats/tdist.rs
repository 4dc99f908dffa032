//! Student's t distribution: CDF and quantile, from `statrs`.
//!
//! Method (statrs' `StudentsT`): the CDF through the regularized incomplete
//! beta function `I_x(a, b)`, the quantile through its inverse. Both take
//! any degrees of freedom above 0, including Welch's fractional ones. The
//! tests pin the values against published tables and scipy, so a change of
//! library or version that moves a value shows up here.

use statrs::distribution::{ContinuousCDF, StudentsT};

/// Natural logarithm of the gamma function for `x > 0`.
pub fn ln_gamma(x: f64) -> f64 {
    assert!(x > 0.0, "ln_gamma needs x > 0, got {x}");
    statrs::function::gamma::ln_gamma(x)
}

/// Regularized incomplete beta function `I_x(a, b)` for `0 ≤ x ≤ 1`, `a, b > 0`.
pub fn incomplete_beta(x: f64, a: f64, b: f64) -> f64 {
    assert!(
        (0.0..=1.0).contains(&x),
        "incomplete_beta needs 0 ≤ x ≤ 1, got {x}"
    );
    assert!(a > 0.0 && b > 0.0, "incomplete_beta needs a, b > 0");
    statrs::function::beta::beta_reg(a, b, x)
}

/// The standard t distribution with `df` degrees of freedom.
fn standard_t(df: f64, what: &str) -> StudentsT {
    assert!(df > 0.0, "{what} needs df > 0, got {df}");
    StudentsT::new(0.0, 1.0, df).expect("location 0, scale 1 and df > 0 are valid")
}

/// Cumulative distribution function of Student's t with `df > 0` degrees of freedom.
pub fn t_cdf(t: f64, df: f64) -> f64 {
    standard_t(df, "t_cdf").cdf(t)
}

/// Quantile (inverse CDF) of Student's t: the `t` with `t_cdf(t, df) = p`.
pub fn t_quantile(p: f64, df: f64) -> f64 {
    assert!(p > 0.0 && p < 1.0, "t_quantile needs 0 < p < 1, got {p}");
    standard_t(df, "t_quantile").inverse_cdf(p)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(got: f64, want: f64, tol: f64) {
        assert!((got - want).abs() <= tol, "got {got}, want {want} (±{tol})");
    }

    #[test]
    fn ln_gamma_matches_factorials_and_half() {
        close(ln_gamma(1.0), 0.0, 1e-13);
        close(ln_gamma(5.0), 24f64.ln(), 1e-12);
        close(ln_gamma(0.5), std::f64::consts::PI.sqrt().ln(), 1e-12);
        close(ln_gamma(101.0), 363.739_375_555_563_5, 1e-9);
    }

    #[test]
    fn incomplete_beta_known_values() {
        // I_x(1, 1) = x; I_x(a, 1) = x^a; I_0.5(a, a) = 0.5.
        close(incomplete_beta(0.3, 1.0, 1.0), 0.3, 1e-14);
        close(incomplete_beta(0.7, 3.0, 1.0), 0.343, 1e-13);
        close(incomplete_beta(0.5, 4.5, 4.5), 0.5, 1e-13);
    }

    #[test]
    fn t_cdf_cauchy_and_symmetry() {
        // df = 1 is the Cauchy distribution: F(t) = 1/2 + atan(t)/π.
        for t in [-3.0, -0.5, 0.0, 1.0, 7.0] {
            let want = 0.5 + f64::atan(t) / std::f64::consts::PI;
            close(t_cdf(t, 1.0), want, 1e-13);
        }
        close(t_cdf(-1.3, 4.2) + t_cdf(1.3, 4.2), 1.0, 1e-14);
    }

    #[test]
    fn t_quantile_matches_published_table() {
        // Two-sided 95 % critical values from standard t tables.
        let table = [
            (1.0, 12.706_204_736),
            (2.0, 4.302_652_730),
            (3.0, 3.182_446_305),
            (5.0, 2.570_581_836),
            (10.0, 2.228_138_852),
            (30.0, 2.042_272_456),
            (1000.0, 1.962_339_081),
        ];
        for (df, want) in table {
            close(t_quantile(0.975, df), want, 1e-8);
        }
        close(t_quantile(0.025, 10.0), -2.228_138_852, 1e-8);
        close(t_quantile(0.995, 4.0), 4.604_094_871, 1e-8);
    }

    #[test]
    fn fractional_df_matches_scipy() {
        // scipy.stats.t.ppf(0.975, df), t.cdf and scipy.special.betainc.
        let ppf = [
            (1.439_422_909_786_198_6, 6.384_399_578_552_688),
            (2.5, 3.574_654_842_003_681_7),
            (4.5, 2.658_912_347_204_403_4),
            (7.25, 2.348_194_849_105_371),
            (24.9885, 2.059_586_613_834_978_3),
        ];
        for (df, want) in ppf {
            close(t_quantile(0.975, df), want, 1e-8);
        }
        close(
            t_cdf(-2.455_356_398_286_006, 24.988_529_290_231_416),
            0.010_689_000_731_433_496,
            1e-12,
        );
        close(
            incomplete_beta(0.3, 2.5, 0.5),
            0.018_927_124_071_945_658,
            1e-13,
        );
        close(incomplete_beta(0.9, 10.0, 3.0), 0.889_130_022_255, 1e-11);
    }

    #[test]
    fn t_quantile_fractional_df_inverts_cdf() {
        for df in [1.5, 2.7, 7.25, 24.9] {
            for p in [0.6, 0.9, 0.975, 0.999] {
                close(t_cdf(t_quantile(p, df), df), p, 1e-11);
            }
        }
    }
}
