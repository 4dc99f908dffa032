//! Numbers for people: SI counts, binary bandwidths and latencies with
//! their unit, shared by the reports and the live progress line.

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units() {
        assert_eq!(si(512_300.0), "512.3k");
        assert_eq!(si(1_234_567.0), "1.23M");
        assert_eq!(bandwidth(2.0 * 1024.0 * 1024.0 * 1024.0), "2.00 GiB/s");
        assert_eq!(latency(850.0), "850ns");
        assert_eq!(latency(12_345.0), "12.3µs");
    }
}
