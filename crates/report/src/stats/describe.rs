//! Descriptive statistics of one sample: mean, median, min, max, sample
//! standard deviation, coefficient of variation; and outliers by the
//! modified z-score over the median absolute deviation (Iglewicz & Hoaglin).

use serde::{Deserialize, Serialize};

/// Summary of one sample.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Number of values.
    pub n: usize,
    /// Arithmetic mean.
    pub mean: f64,
    /// Median (mean of the two middle values when `n` is even).
    pub median: f64,
    /// Smallest value.
    pub min: f64,
    /// Largest value.
    pub max: f64,
    /// Sample standard deviation (divisor `n − 1`; 0 when `n = 1`).
    pub stdev: f64,
    /// Coefficient of variation, `stdev / |mean| × 100`; `None` with one
    /// value, or when the mean is 0 and the values differ (no meaning there).
    pub cv_pct: Option<f64>,
}

/// Summarizes `values`; `None` when there are none.
pub fn summarize(values: &[f64]) -> Option<Summary> {
    if values.is_empty() {
        return None;
    }
    let n = values.len();
    let mean = mean(values);
    let stdev = stdev(values);
    let cv_pct = if n < 2 {
        None
    } else if stdev == 0.0 {
        Some(0.0)
    } else if mean == 0.0 {
        None
    } else {
        Some(stdev / mean.abs() * 100.0)
    };
    Some(Summary {
        n,
        mean,
        median: median(values),
        min: values.iter().copied().fold(f64::INFINITY, f64::min),
        max: values.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        stdev,
        cv_pct,
    })
}

/// Arithmetic mean; 0 for an empty slice.
pub fn mean(values: &[f64]) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    values.iter().sum::<f64>() / values.len() as f64
}

/// Sample variance (divisor `n − 1`); 0 when `n < 2`.
pub fn variance(values: &[f64]) -> f64 {
    if values.len() < 2 {
        return 0.0;
    }
    let m = mean(values);
    values.iter().map(|v| (v - m) * (v - m)).sum::<f64>() / (values.len() - 1) as f64
}

/// Sample standard deviation (divisor `n − 1`); 0 when `n < 2`.
pub fn stdev(values: &[f64]) -> f64 {
    variance(values).sqrt()
}

/// Median; 0 for an empty slice.
pub fn median(values: &[f64]) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let mid = sorted.len() / 2;
    if sorted.len() % 2 == 0 {
        (sorted[mid - 1] + sorted[mid]) / 2.0
    } else {
        sorted[mid]
    }
}

/// Median absolute deviation from the median (unscaled).
pub fn mad(values: &[f64]) -> f64 {
    let m = median(values);
    let deviations: Vec<f64> = values.iter().map(|v| (v - m).abs()).collect();
    median(&deviations)
}

/// Threshold on |modified z-score| above which a value is an outlier
/// (Iglewicz & Hoaglin, 1993).
pub const OUTLIER_Z: f64 = 3.5;

/// Modified z-scores: `0.6745 (xᵢ − median) / MAD`.
///
/// When the MAD is 0 (more than half the values equal) it falls back to the
/// mean absolute deviation: `(xᵢ − median) / (1.253314 × MeanAD)`. When that
/// is 0 too, every value is the median and every score is 0.
pub fn modified_z_scores(values: &[f64]) -> Vec<f64> {
    let m = median(values);
    let mad = mad(values);
    if mad > 0.0 {
        return values.iter().map(|v| 0.6745 * (v - m) / mad).collect();
    }
    let mean_ad = mean(&values.iter().map(|v| (v - m).abs()).collect::<Vec<_>>());
    if mean_ad > 0.0 {
        values
            .iter()
            .map(|v| (v - m) / (1.253_314 * mean_ad))
            .collect()
    } else {
        vec![0.0; values.len()]
    }
}

/// One value that stands out.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Outlier {
    /// Position of the value in the input.
    pub index: usize,
    /// The value.
    pub value: f64,
    /// Its modified z-score.
    pub z: f64,
}

/// Values whose |modified z-score| exceeds [`OUTLIER_Z`]. Needs at least
/// three values; fewer give none.
pub fn outliers(values: &[f64]) -> Vec<Outlier> {
    if values.len() < 3 {
        return Vec::new();
    }
    modified_z_scores(values)
        .into_iter()
        .enumerate()
        .filter(|(_, z)| z.abs() > OUTLIER_Z)
        .map(|(index, z)| Outlier {
            index,
            value: values[index],
            z,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(got: f64, want: f64, tol: f64) {
        assert!((got - want).abs() <= tol, "got {got}, want {want} (±{tol})");
    }

    #[test]
    fn summary_of_known_sample() {
        // 2 4 4 4 5 5 7 9: mean 5, sample variance 32/7.
        let s = summarize(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]).unwrap();
        assert_eq!(s.n, 8);
        close(s.mean, 5.0, 1e-12);
        close(s.median, 4.5, 1e-12);
        close(s.min, 2.0, 0.0);
        close(s.max, 9.0, 0.0);
        close(s.stdev, (32.0f64 / 7.0).sqrt(), 1e-12);
        close(
            s.cv_pct.unwrap(),
            (32.0f64 / 7.0).sqrt() / 5.0 * 100.0,
            1e-10,
        );
    }

    #[test]
    fn summary_of_constant_and_single_and_empty() {
        let s = summarize(&[7.0, 7.0, 7.0]).unwrap();
        assert_eq!((s.stdev, s.cv_pct), (0.0, Some(0.0)));
        let one = summarize(&[3.0]).unwrap();
        assert_eq!((one.median, one.stdev, one.cv_pct), (3.0, 0.0, None));
        assert!(summarize(&[]).is_none());
        // Mean 0 with spread: the CV has no meaning.
        assert_eq!(summarize(&[-1.0, 1.0]).unwrap().cv_pct, None);
    }

    #[test]
    fn median_odd_even_unsorted() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), 2.5);
    }

    #[test]
    fn mad_and_modified_z_known_answer() {
        // median 3, |dev| = 2 1 0 1 97 → MAD 1; z(100) = 0.6745 × 97.
        let v = [1.0, 2.0, 3.0, 4.0, 100.0];
        assert_eq!(mad(&v), 1.0);
        let z = modified_z_scores(&v);
        close(z[4], 0.6745 * 97.0, 1e-12);
        close(z[0], -1.349, 1e-12);
        let out = outliers(&v);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].index, 4);
    }

    #[test]
    fn outlier_threshold_is_strict_3_5() {
        // MAD 1, median 0: z = 0.6745 x; 5.19 → 3.50066 (out), 5.18 → 3.49391 (in).
        let base = [-2.0, -1.0, -1.0, 0.0, 1.0, 1.0];
        let mut with_out = base.to_vec();
        with_out.push(5.19);
        let mut with_in = base.to_vec();
        with_in.push(5.18);
        assert_eq!(outliers(&with_out).len(), 1);
        assert!(outliers(&with_in).is_empty());
    }

    #[test]
    fn zero_mad_falls_back_to_mean_absolute_deviation() {
        // Four equal values and one off: MAD = 0, MeanAD = 10 / 5 = 2.
        let v = [5.0, 5.0, 5.0, 5.0, 15.0];
        let z = modified_z_scores(&v);
        close(z[4], 10.0 / (1.253_314 * 2.0), 1e-12);
        assert_eq!(outliers(&v).len(), 1);
        assert!(outliers(&[5.0; 6]).is_empty());
        assert!(modified_z_scores(&[5.0; 4]).iter().all(|z| *z == 0.0));
    }
}
