//! Drift over run order: Kendall's tau between run order and value
//! (the Mann–Kendall trend test), with the exact two-sided p-value from the
//! distribution of inversions over all orderings (Mahonian numbers), so it is
//! right for the handful of runs a benchmark has.

use serde::{Deserialize, Serialize};

/// A monotone trend test of values in run order.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Trend {
    /// Number of values.
    pub n: usize,
    /// Mann–Kendall S: concordant minus discordant pairs (ties count 0).
    pub s: i64,
    /// Kendall's tau-a, `S / (n (n − 1) / 2)`, in −1 ..= 1.
    pub tau: f64,
    /// Exact two-sided p-value of |S| under no trend (all orderings equally
    /// likely; ties make it conservative).
    pub p_value: f64,
}

/// Probability of each inversion count 0 ..= n(n−1)/2 over the n! orderings.
fn inversion_distribution(n: usize) -> Vec<f64> {
    let mut dist = vec![1.0];
    for k in 1..=n {
        // Adding the k-th element adds 0 ..= k−1 inversions, each equally likely.
        let mut next = vec![0.0; dist.len() + k - 1];
        for (i, p) in dist.iter().enumerate() {
            for slot in next.iter_mut().skip(i).take(k) {
                *slot += p / k as f64;
            }
        }
        dist = next;
    }
    dist
}

/// Mann–Kendall test of `values` (in run order); `None` with fewer than 3
/// values or more than 200 (the exact distribution gets costly).
pub fn trend(values: &[f64]) -> Option<Trend> {
    let n = values.len();
    if !(3..=200).contains(&n) {
        return None;
    }
    let mut s: i64 = 0;
    for i in 0..n {
        for j in i + 1..n {
            s += match values[j].partial_cmp(&values[i]) {
                Some(std::cmp::Ordering::Greater) => 1,
                Some(std::cmp::Ordering::Less) => -1,
                _ => 0,
            };
        }
    }
    let pairs = (n * (n - 1) / 2) as i64;
    // S = pairs − 2 × inversions for untied data: |S| ≥ |s| ⇔ inversions far from the middle.
    let dist = inversion_distribution(n);
    let p_value: f64 = dist
        .iter()
        .enumerate()
        .filter(|(inv, _)| (pairs - 2 * *inv as i64).abs() >= s.abs())
        .map(|(_, p)| p)
        .sum();
    Some(Trend {
        n,
        s,
        tau: s as f64 / pairs as f64,
        p_value: p_value.min(1.0),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(got: f64, want: f64, tol: f64) {
        assert!((got - want).abs() <= tol, "got {got}, want {want} (±{tol})");
    }

    #[test]
    fn mahonian_numbers() {
        // Inversions of 4 elements: 1 3 5 6 5 3 1 out of 24.
        let d: Vec<f64> = inversion_distribution(4).iter().map(|p| p * 24.0).collect();
        let want = [1.0, 3.0, 5.0, 6.0, 5.0, 3.0, 1.0];
        for (g, w) in d.iter().zip(want) {
            close(*g, w, 1e-12);
        }
    }

    #[test]
    fn monotone_runs_have_the_exact_extreme_p() {
        // n = 5 increasing: S = 10, tau = 1, p = 2 / 5! = 1/60.
        let t = trend(&[10.0, 16.0, 32.0, 54.0, 70.0]).unwrap();
        assert_eq!((t.s, t.tau), (10, 1.0));
        close(t.p_value, 2.0 / 120.0, 1e-12);
        let down = trend(&[5.0, 4.0, 3.0, 2.0, 1.0]).unwrap();
        assert_eq!(down.tau, -1.0);
        close(down.p_value, 2.0 / 120.0, 1e-12);
    }

    #[test]
    fn no_trend_and_ties_and_limits() {
        // S = 0: every ordering is at least as extreme.
        let flat = trend(&[2.0, 4.0, 1.0, 3.0]).unwrap();
        assert_eq!(flat.s, 0);
        close(flat.p_value, 1.0, 1e-12);
        assert_eq!(trend(&[7.0; 6]).unwrap().s, 0);
        assert!(trend(&[1.0, 2.0]).is_none());
        // One swap from monotone (n = 5): S = 8, P(|S| ≥ 8) = 2 × (1 + 4) / 120.
        let t = trend(&[1.0, 3.0, 2.0, 4.0, 5.0]).unwrap();
        assert_eq!(t.s, 8);
        close(t.p_value, 10.0 / 120.0, 1e-12);
    }
}
