//! fio's value syntax: sizes (`4k`, `1m`, `1g`, `4KiB`, `1.5g`), times
//! (`30s`, `1h`, `100ms`, plain numbers in the option's default unit),
//! booleans and ranges (`4k-64k`). Sizes use fio's default `kb_base=1024`.

/// Parses a size in bytes: a number with an optional fio suffix
/// (`k`/`m`/`g`/`t`/`p`, optionally followed by `b` or `ib`, any case).
pub fn parse_size_bytes(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, suffix) = t.split_at(split);
    if num.is_empty() {
        return Err(format!("`{text}` is not a size (try 4k, 1m, 1g)"));
    }
    let shift = match suffix.to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        "t" | "tb" | "tib" => 40,
        "p" | "pb" | "pib" => 50,
        _ => {
            return Err(format!(
                "`{text}`: unknown size suffix `{suffix}` (use k, m, g, t or p)"
            ))
        }
    };
    let unit = 1u64 << shift;
    if let Some((whole, frac)) = num.split_once('.') {
        let whole: u64 = whole.parse().unwrap_or(0);
        let digits = frac.len().min(9) as u32;
        let frac: u64 = frac[..digits as usize]
            .parse()
            .map_err(|_| format!("`{text}` is not a size"))?;
        let scale = 10u64.pow(digits);
        let bytes = whole
            .checked_mul(unit)
            .and_then(|w| {
                w.checked_add(
                    u64::try_from(u128::from(frac) * u128::from(unit) / u128::from(scale)).ok()?,
                )
            })
            .ok_or_else(|| format!("`{text}` is too large"))?;
        return Ok(bytes);
    }
    num.parse::<u64>()
        .map_err(|_| format!("`{text}` is not a size"))?
        .checked_mul(unit)
        .ok_or_else(|| format!("`{text}` is too large"))
}

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
pub fn parse_time_ns(text: &str, default_unit_ns: u64) -> Result<u64, String> {
    let t = text.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, suffix) = t.split_at(split);
    if num.is_empty() {
        return Err(format!("`{text}` is not a time (try 30s, 100ms, 1h)"));
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
            return Err(format!(
                "`{text}`: unknown time suffix `{suffix}` (use us, ms, s, m or h)"
            ))
        }
    };
    num.parse::<u64>()
        .map_err(|_| format!("`{text}` is not a time"))?
        .checked_mul(unit)
        .ok_or_else(|| format!("`{text}` is too long"))
}

/// Formats nanoseconds in the largest fio unit that divides them: `30s`,
/// `100ms`, `1500us` (fio keeps times in microseconds).
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
pub fn parse_bool(value: Option<&str>) -> Result<bool, String> {
    match value.map(|v| v.trim().to_ascii_lowercase()) {
        None => Ok(true),
        Some(v) => match v.as_str() {
            "" | "1" | "true" | "yes" | "on" => Ok(true),
            "0" | "false" | "no" | "off" => Ok(false),
            _ => Err(format!("`{v}` is not a boolean (use 1 or 0)")),
        },
    }
}

/// Parses an unsigned integer, accepting fio's size suffixes (`iodepth=1k`
/// is 1024, as fio reads it).
pub fn parse_count(text: &str) -> Result<u64, String> {
    parse_size_bytes(text).map_err(|_| format!("`{text}` is not a whole number"))
}

/// Parses a size range `4k-64k` (or a single size, giving `(n, n)`).
pub fn parse_size_range(text: &str) -> Result<(u64, u64), String> {
    let (lo, hi) = match text.split_once('-') {
        Some((a, b)) => (parse_size_bytes(a)?, parse_size_bytes(b)?),
        None => {
            let n = parse_size_bytes(text)?;
            (n, n)
        }
    };
    if lo == 0 || hi < lo {
        return Err(format!("`{text}`: a block size range needs 0 < min <= max"));
    }
    Ok((lo, hi))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size_bytes("4k").unwrap(), 4096);
        assert_eq!(parse_size_bytes("4KiB").unwrap(), 4096);
        assert_eq!(parse_size_bytes("1m").unwrap(), 1 << 20);
        assert_eq!(parse_size_bytes("1G").unwrap(), 1 << 30);
        assert_eq!(parse_size_bytes("1.5g").unwrap(), 3 << 29);
        assert_eq!(parse_size_bytes("512").unwrap(), 512);
        assert!(parse_size_bytes("4q").unwrap_err().contains("suffix"));
        assert!(parse_size_bytes("k").is_err());
        assert_eq!(format_size(4096), "4k");
        assert_eq!(format_size(1536), "1536");
        assert_eq!(format_size(3 << 29), "1536m");
        assert_eq!(parse_size_range("4k-64k").unwrap(), (4096, 65536));
        assert!(parse_size_range("64k-4k").is_err());
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
}
