//! Number and count formatting shared by the text exporter, verdicts and
//! charts.

use crate::model::Metric;

/// Integer part with thousands separators: `1234567.8` → `1,234,568`.
pub fn grouped(value: f64) -> String {
    if !value.is_finite() {
        return "-".to_string();
    }
    let rounded = value.round();
    let digits = format!("{:.0}", rounded.abs());
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    if rounded < 0.0 {
        out.insert(0, '-');
    }
    out
}

/// Microseconds from nanoseconds with one decimal: `12345.0` → `12.3`.
pub fn micros(ns: f64) -> String {
    format!("{:.1}", ns / 1000.0)
}

/// A value of `metric` with its unit: `812,345 IOPS`, `95.1 µs`.
pub fn metric_value(metric: Metric, value: f64) -> String {
    match metric {
        Metric::Iops => format!("{} IOPS", grouped(value)),
        Metric::LatMean | Metric::LatP99 => format!("{} µs", micros(value)),
        Metric::CpuPerIo | Metric::BusyCpuPerIo | Metric::MachineCpuPerIo => {
            format!("{} µs", metric_number(metric, value))
        }
        Metric::CpuHeadroom => format!("{value:.1} %"),
        Metric::InterruptsPerIo | Metric::CtxSwitchesPerIo | Metric::MachineCtxSwitchesPerIo => {
            metric_number(metric, value)
        }
    }
}

/// A value of `metric` without its unit, as in tables.
pub fn metric_number(metric: Metric, value: f64) -> String {
    match metric {
        Metric::Iops => grouped(value),
        Metric::LatMean | Metric::LatP99 => micros(value),
        Metric::CpuPerIo | Metric::BusyCpuPerIo | Metric::MachineCpuPerIo => {
            format!("{:.2}", value / 1000.0)
        }
        Metric::CpuHeadroom => format!("{value:.1}"),
        Metric::InterruptsPerIo | Metric::CtxSwitchesPerIo | Metric::MachineCtxSwitchesPerIo => {
            format!("{value:.3}")
        }
    }
}

/// Signed percentage with one decimal: `+3.1`, `-0.4`, `+0.0`.
pub fn signed_pct(value: f64) -> String {
    let v = if value.abs() < 0.05 { 0.0 } else { value };
    format!("{v:+.1}")
}

/// Optional coefficient of variation: two decimals below 1 % (`0.02 %`),
/// one above (`1.6 %`), or `n/a`.
pub fn cv(value: Option<f64>) -> String {
    match value {
        None => "n/a".to_string(),
        Some(v) if v < 0.995 => format!("{v:.2} %"),
        Some(v) => format!("{v:.1} %"),
    }
}

/// `1 run`, `5 runs`.
pub fn runs(n: usize) -> String {
    if n == 1 {
        "1 run".to_string()
    } else {
        format!("{n} runs")
    }
}

/// A value with its metric's name: `771,400 IOPS`, `mean latency 82.9 µs`.
pub fn named_value(metric: Metric, value: f64) -> String {
    match metric {
        Metric::Iops => metric_value(metric, value),
        _ => format!("{} {}", metric.name(), metric_value(metric, value)),
    }
}

// The units people read in bench's and serve's reports and the live
// progress line: SI counts, binary (IEC) bytes and bandwidths, latencies
// with their unit.

/// `1.23M`, `512.3k`, `999`.
pub fn si(x: f64) -> String {
    if x >= 1e9 {
        format!("{:.2}G", x / 1e9)
    } else if x >= 1e6 {
        format!("{:.2}M", x / 1e6)
    } else if x >= 1e3 {
        format!("{:.1}k", x / 1e3)
    } else {
        format!("{x:.0}")
    }
}

/// `2.00 GiB/s`, `512.0 MiB/s`.
pub fn bandwidth(bytes_per_s: f64) -> String {
    let g = 1024.0 * 1024.0 * 1024.0;
    if bytes_per_s >= g {
        format!("{:.2} GiB/s", bytes_per_s / g)
    } else {
        format!("{:.1} MiB/s", bytes_per_s / (1024.0 * 1024.0))
    }
}

/// `850ns`, `12.3µs`, `4.56ms`, `1.20s`.
pub fn latency(ns: f64) -> String {
    if ns >= 1e9 {
        format!("{:.2}s", ns / 1e9)
    } else if ns >= 1e6 {
        format!("{:.2}ms", ns / 1e6)
    } else if ns >= 1e3 {
        format!("{:.1}µs", ns / 1e3)
    } else {
        format!("{ns:.0}ns")
    }
}

/// `b` bytes in binary units: "512 B", "4.0 KiB", "1.5 GiB".
pub fn bytes(b: u64) -> String {
    const UNITS: [&str; 5] = ["KiB", "MiB", "GiB", "TiB", "PiB"];
    if b < 1024 {
        return format!("{b} B");
    }
    let mut v = b as f64 / 1024.0;
    let mut unit = 0;
    while v >= 1024.0 && unit + 1 < UNITS.len() {
        v /= 1024.0;
        unit += 1;
    }
    format!("{v:.1} {}", UNITS[unit])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grouping_and_signs() {
        assert_eq!(grouped(1_234_567.8), "1,234,568");
        assert_eq!(grouped(999.4), "999");
        assert_eq!(grouped(-1000.0), "-1,000");
        assert_eq!(grouped(f64::NAN), "-");
        assert_eq!(signed_pct(3.12), "+3.1");
        assert_eq!(signed_pct(-0.04), "+0.0");
        assert_eq!(micros(12_345.0), "12.3");
        assert_eq!(cv(None), "n/a");
        assert_eq!(cv(Some(0.019)), "0.02 %");
        assert_eq!(cv(Some(1.64)), "1.6 %");
        assert_eq!(
            named_value(Metric::LatMean, 82_900.0),
            "mean latency 82.9 µs"
        );
    }

    #[test]
    fn units_people_read() {
        assert_eq!(si(512_300.0), "512.3k");
        assert_eq!(si(1_234_567.0), "1.23M");
        assert_eq!(bandwidth(2.0 * 1024.0 * 1024.0 * 1024.0), "2.00 GiB/s");
        assert_eq!(latency(850.0), "850ns");
        assert_eq!(latency(12_345.0), "12.3µs");
        assert_eq!(
            (bytes(512), bytes(4096), bytes(3 << 29)),
            ("512 B".into(), "4.0 KiB".into(), "1.5 GiB".into())
        );
    }
}
