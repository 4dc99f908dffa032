//! fio's value syntax: sizes (`4k`, `1m`, `1g`, `4KiB`, `1.5g`), times
//! (`30s`, `1h`, `100ms`, plain numbers in the option's default unit),
//! booleans and ranges (`4k-64k`). Sizes use fio's default `kb_base=1024`.
//! One parser for job files and for numio's own flags (`--bs 1.5k`).

pub use nvme_spec::units::{parse_size_bytes, UnitError};

/// Formats bytes in the largest binary unit that divides them: `4k`, `1m`.
pub fn format_size(bytes: u64) -> String {
    for (shift, suffix) in [(50, "p"), (40, "t"), (30, "g"), (20, "m"), (10, "k")] {
        let unit = 1u64 << shift;
        if bytes >= unit && bytes % unit == 0 {
            return format!("{}{suffix}", bytes / unit);
        }
    }
    bytes.to_string()
}

/// Parses a time in nanoseconds; a bare number is in `default_unit_ns`
/// (seconds for fio's `runtime` and `ramp_time`). Suffixes: `ns`, `us`,
/// `ms`, `s`, `m`, `h`, `d`.
pub fn parse_time_ns(text: &str, default_unit_ns: u64) -> Result<u64, UnitError> {
    let t = text.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, suffix) = t.split_at(split);
    if num.is_empty() {
        return Err(UnitError::new(text, "not a time (try 30s, 100ms, 1h)"));
    }
    let unit: u64 = match suffix.to_ascii_lowercase().as_str() {
        "" => default_unit_ns,
        "ns" => 1,
        "us" | "usec" => 1_000,
        "ms" | "msec" => 1_000_000,
        "s" | "sec" => 1_000_000_000,
        "m" | "min" => 60_000_000_000,
        "h" => 3_600_000_000_000,
        "d" => 86_400_000_000_000,
        _ => {
            return Err(UnitError::new(
                text,
                format!("unknown time suffix `{suffix}` (use us, ms, s, m or h)"),
            ))
        }
    };
    num.parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(unit))
        .ok_or_else(|| UnitError::new(text, "too long"))
}

/// Formats nanoseconds in the largest fio unit that divides them: `30s`,
/// `100ms`, `1500us` (fio keeps times in microseconds: nanoseconds below
/// one microsecond round up).
pub fn format_time(ns: u64) -> String {
    if ns == 0 {
        return "0".into();
    }
    for (unit, suffix) in [
        (3_600_000_000_000u64, "h"),
        (60_000_000_000, "m"),
        (1_000_000_000, "s"),
        (1_000_000, "ms"),
    ] {
        if ns % unit == 0 {
            return format!("{}{suffix}", ns / unit);
        }
    }
    format!("{}us", ns.div_ceil(1_000))
}

/// Parses an fio boolean: a bare key, `1`/`0`, `true`/`false`, `yes`/`no`,
/// `on`/`off`.
pub fn parse_bool(value: Option<&str>) -> Result<bool, UnitError> {
    match value.map(|v| v.trim().to_ascii_lowercase()) {
        None => Ok(true),
        Some(v) => match v.as_str() {
            "" | "1" | "true" | "yes" | "on" => Ok(true),
            "0" | "false" | "no" | "off" => Ok(false),
            _ => Err(UnitError::new(&v, "not a boolean (use 1 or 0)")),
        },
    }
}

/// Parses an unsigned integer, accepting fio's size suffixes (`iodepth=1k`
/// is 1024, as fio reads it).
pub fn parse_count(text: &str) -> Result<u64, UnitError> {
    parse_size_bytes(text).map_err(|_| UnitError::new(text, "not a whole number"))
}

/// Parses a size range `4k-64k` (or a single size, giving `(n, n)`).
pub fn parse_size_range(text: &str) -> Result<(u64, u64), UnitError> {
    let (lo, hi) = match text.split_once('-') {
        Some((a, b)) => (parse_size_bytes(a)?, parse_size_bytes(b)?),
        None => {
            let n = parse_size_bytes(text)?;
            (n, n)
        }
    };
    if lo == 0 || hi < lo {
        return Err(UnitError::new(
            text,
            "a block size range needs 0 < min <= max (e.g. 4k or 4k-64k)",
        ));
    }
    Ok((lo, hi))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size_bytes("4k").unwrap(), 4096);
        assert_eq!(parse_size_bytes("4KiB").unwrap(), 4096);
        assert_eq!(parse_size_bytes("1m").unwrap(), 1 << 20);
        assert_eq!(parse_size_bytes("1G").unwrap(), 1 << 30);
        assert_eq!(parse_size_bytes("1.5g").unwrap(), 3 << 29);
        assert_eq!(parse_size_bytes("1.5k").unwrap(), 1536);
        assert_eq!(parse_size_bytes(".5k").unwrap(), 512);
        assert_eq!(parse_size_bytes("512").unwrap(), 512);
        assert!(parse_size_bytes("4q")
            .unwrap_err()
            .reason
            .contains("suffix `q`"));
        assert!(parse_size_bytes("k").is_err());
        assert!(parse_size_bytes(".").is_err());
        assert!(parse_size_bytes("1.2.3k").is_err());
        assert!(parse_size_bytes("-1").is_err());
        assert_eq!(format_size(4096), "4k");
        assert_eq!(format_size(1536), "1536");
        assert_eq!(format_size(3 << 29), "1536m");
        assert_eq!(parse_size_range("4k-64k").unwrap(), (4096, 65536));
        assert!(parse_size_range("64k-4k").is_err());
    }

    /// A whole part past u64 was read as 0 and its fraction kept
    /// (`99999999999999999999.5k` parsed as 512).
    #[test]
    fn an_overflowing_whole_part_is_too_large_not_zero() {
        let e = parse_size_bytes("99999999999999999999.5k").unwrap_err();
        assert_eq!(e.reason, "too large");
        assert_eq!(parse_size_bytes("16384p").unwrap_err().reason, "too large");
        assert_eq!(
            e.to_string(),
            "`99999999999999999999.5k`: too large",
            "the value is named once"
        );
    }

    #[test]
    fn times() {
        let s = 1_000_000_000;
        assert_eq!(parse_time_ns("30", s).unwrap(), 30 * s);
        assert_eq!(parse_time_ns("30s", s).unwrap(), 30 * s);
        assert_eq!(parse_time_ns("1h", s).unwrap(), 3600 * s);
        assert_eq!(parse_time_ns("100ms", s).unwrap(), 100_000_000);
        assert_eq!(parse_time_ns("2m", s).unwrap(), 120 * s);
        assert!(parse_time_ns("3x", s).is_err());
        assert_eq!(
            parse_time_ns("99999999999h", s).unwrap_err().reason,
            "too long"
        );
        assert_eq!(format_time(30 * s), "30s");
        assert_eq!(format_time(120 * s), "2m");
        assert_eq!(format_time(100_000_000), "100ms");
        assert_eq!(format_time(1_500_000), "1500us");
    }

    #[test]
    fn booleans() {
        assert!(parse_bool(None).unwrap());
        assert!(!parse_bool(Some("0")).unwrap());
        assert!(parse_bool(Some("maybe")).is_err());
    }

    /// The binary suffixes and their spellings, as fio reads them.
    fn suffix() -> impl Strategy<Value = (u32, String)> {
        (0usize..6, 0usize..3, any::<bool>()).prop_map(|(i, form, upper)| {
            let (shift, letter) = [
                (0, ""),
                (10, "k"),
                (20, "m"),
                (30, "g"),
                (40, "t"),
                (50, "p"),
            ][i];
            let tail = match (letter, form) {
                ("", 0) => "",
                ("", _) => "b",
                (_, 0) => "",
                (_, 1) => "b",
                _ => "ib",
            };
            let s = format!("{letter}{tail}");
            (shift, if upper { s.to_uppercase() } else { s })
        })
    }

    proptest! {
        #[test]
        fn sizes_round_trip(bytes in any::<u64>()) {
            prop_assert_eq!(parse_size_bytes(&format_size(bytes)), Ok(bytes));
        }

        #[test]
        fn size_ranges_round_trip(lo in 1u64..1 << 40, extra in 0u64..1 << 40) {
            let hi = lo + extra;
            let text = format!("{}-{}", format_size(lo), format_size(hi));
            prop_assert_eq!(parse_size_range(&text), Ok((lo, hi)));
        }

        #[test]
        fn every_suffix_spelling_scales(n in 0u64..1 << 13, (shift, sfx) in suffix()) {
            prop_assert_eq!(parse_size_bytes(&format!("{n}{sfx}")), Ok(n << shift));
        }

        /// `W.F<suffix>` is W units plus F/10^digits of one, rounded down.
        #[test]
        fn fractions_scale_and_round_down(
            whole in 0u64..1 << 13,
            frac in "[0-9]{1,9}",
            (shift, sfx) in suffix(),
        ) {
            let unit = 1u128 << shift;
            let want = u128::from(whole) * unit
                + frac.parse::<u128>().unwrap() * unit / 10u128.pow(frac.len() as u32);
            let got = parse_size_bytes(&format!("{whole}.{frac}{sfx}"));
            prop_assert_eq!(got, Ok(u64::try_from(want).unwrap()));
        }

        /// fio keeps microseconds: whole microseconds round-trip exactly.
        #[test]
        fn times_round_trip(us in 0u64..u64::MAX / 1_000) {
            let ns = us * 1_000;
            prop_assert_eq!(parse_time_ns(&format_time(ns), 1_000_000_000), Ok(ns));
        }

        #[test]
        fn garbage_is_refused_not_misread(text in "[^0-9]*") {
            prop_assert!(parse_size_bytes(&text).is_err());
            prop_assert!(parse_time_ns(&text, 1).is_err());
        }
    }
}
