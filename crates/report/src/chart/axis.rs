//! Axis scales: linear with "nice" ticks (1, 2, 5 × 10ᵏ), base-10
//! logarithmic with decade ticks, and the "nines" scale of latency
//! percentiles (position = −log10(1 − p/100)).

/// A linear range with ticks.
#[derive(Debug, Clone, PartialEq)]
pub struct Linear {
    /// Bottom of the range.
    pub min: f64,
    /// Top of the range.
    pub max: f64,
    /// Tick values inside the range.
    pub ticks: Vec<f64>,
}

/// A step of 1, 2 or 5 × 10ᵏ near `span / target`.
pub fn nice_step(span: f64, target: usize) -> f64 {
    let raw = span / target.max(1) as f64;
    let mag = 10f64.powf(raw.log10().floor());
    let norm = raw / mag;
    let nice = if norm < 1.5 {
        1.0
    } else if norm < 3.0 {
        2.0
    } else if norm < 7.0 {
        5.0
    } else {
        10.0
    };
    nice * mag
}

/// A nice linear range covering `lo..=hi` with about `target` ticks. A flat
/// range is widened by 5 % of its value (or by 1 around 0).
pub fn linear(lo: f64, hi: f64, target: usize) -> Linear {
    let (mut lo, mut hi) = (lo.min(hi), lo.max(hi));
    if hi - lo <= f64::EPSILON * hi.abs().max(1.0) {
        let pad = if hi == 0.0 { 1.0 } else { hi.abs() * 0.05 };
        lo -= pad;
        hi += pad;
    }
    let step = nice_step(hi - lo, target);
    let min = (lo / step).floor() * step;
    let max = (hi / step).ceil() * step;
    let count = ((max - min) / step).round() as usize;
    let ticks = (0..=count).map(|i| min + step * i as f64).collect();
    Linear { min, max, ticks }
}

/// Maps `v` in `min..=max` to `from..=to`.
pub fn map(v: f64, min: f64, max: f64, from: f64, to: f64) -> f64 {
    if max == min {
        return (from + to) / 2.0;
    }
    from + (v - min) / (max - min) * (to - from)
}

/// Decade ticks (powers of ten) covering `lo..=hi`, both > 0.
pub fn decades(lo: f64, hi: f64) -> (f64, f64, Vec<f64>) {
    let low = lo.max(f64::MIN_POSITIVE).log10().floor();
    let mut high = hi.max(f64::MIN_POSITIVE).log10().ceil();
    if high <= low {
        high = low + 1.0;
    }
    let ticks = (low as i32..=high as i32).map(|e| 10f64.powi(e)).collect();
    (10f64.powf(low), 10f64.powf(high), ticks)
}

/// Ticks of a log axis from [`decades`]: the decades, plus 2× and 5× each
/// decade when the range spans at most two decades.
pub fn log_ticks(min: f64, max: f64, decade_ticks: &[f64]) -> Vec<f64> {
    if max / min > 100.0 + 1e-9 {
        return decade_ticks.to_vec();
    }
    let mut out: Vec<f64> = decade_ticks
        .iter()
        .flat_map(|d| [*d, d * 2.0, d * 5.0])
        .filter(|t| *t <= max * (1.0 + 1e-9))
        .collect();
    out.sort_by(f64::total_cmp);
    out
}

/// Position of percentile `p` (0 ≤ p < 100) on the nines scale.
pub fn nines(p: f64) -> f64 {
    -(1.0 - p / 100.0).log10()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nice_linear_ranges() {
        let r = linear(812_000.0, 838_000.0, 5);
        assert_eq!((r.min, r.max), (810_000.0, 840_000.0));
        assert_eq!(r.ticks.len(), 7);
        let flat = linear(100.0, 100.0, 4);
        assert!(flat.min < 100.0 && flat.max > 100.0);
        assert_eq!(nice_step(7.0, 5), 1.0);
        assert_eq!(nice_step(12.0, 5), 2.0);
    }

    #[test]
    fn decades_and_nines() {
        assert_eq!(
            decades(12.0, 950.0),
            (10.0, 1000.0, vec![10.0, 100.0, 1000.0])
        );
        assert_eq!(
            log_ticks(10.0, 1000.0, &[10.0, 100.0, 1000.0]),
            vec![10.0, 20.0, 50.0, 100.0, 200.0, 500.0, 1000.0]
        );
        assert_eq!(log_ticks(1.0, 1e4, &[1.0, 10.0, 100.0, 1e3, 1e4]).len(), 5);
        assert!((nines(99.0) - 2.0).abs() < 1e-12);
        assert!((nines(99.9) - 3.0).abs() < 1e-9);
        assert_eq!(map(5.0, 0.0, 10.0, 100.0, 200.0), 150.0);
    }
}
