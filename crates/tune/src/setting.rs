//! The values a user asks for: `--threshold N` (the raw, 0-based
//! Aggregation Threshold: N + 1 completions per interrupt) and `--time T`
//! (the Aggregation Time, in 100 µs steps up to 25.5 ms), and how
//! nvme-cli prints them.

use nvme_spec::features::IrqCoalescing;

use crate::error::TuneError;

/// No coalescing: an interrupt per completion (THR 0, TIME 0), the value
/// Linux leaves on every controller.
pub const OFF: IrqCoalescing = IrqCoalescing {
    time_100us: 0,
    thr_zero_based: 0,
};

/// Largest aggregation time: 255 × 100 µs.
pub const MAX_TIME_US: u32 = 25_500;

/// Parses `--threshold`: the raw 0-based Aggregation Threshold, 0..=255.
pub fn parse_threshold(text: &str) -> Result<u8, TuneError> {
    let bad = |why: &str| TuneError::Threshold {
        input: text.to_string(),
        why: why.to_string(),
    };
    let n: u64 = text.trim().parse().map_err(|_| bad("not a whole number"))?;
    u8::try_from(n).map_err(|_| bad("above 255, the largest the 8-bit field holds"))
}

/// Parses `--time`: `100us` (or `100µs`), `0.2ms`, or a bare number of µs;
/// a multiple of 100 µs, at most 25.5 ms. Returns µs.
pub fn parse_time_us(text: &str) -> Result<u32, TuneError> {
    let bad = |why: &str| TuneError::Time {
        input: text.to_string(),
        why: why.to_string(),
    };
    let t = text.trim();
    let (number, ms) = if let Some(n) = t.strip_suffix("ms") {
        (n, true)
    } else if let Some(n) = t.strip_suffix("us").or_else(|| t.strip_suffix("µs")) {
        (n, false)
    } else {
        (t, false)
    };
    let (whole, frac) = number.trim().split_once('.').unwrap_or((number.trim(), ""));
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if !digits(whole) || !(frac.is_empty() || digits(frac)) {
        return Err(bad(
            "expected a number with an optional unit: 100us, 0.2ms or 100",
        ));
    }
    // Exact: µs as an integer, never through a float.
    let scale_digits = if ms { 3 } else { 0 };
    let frac = frac.trim_end_matches('0');
    if frac.len() > scale_digits {
        return Err(bad("not a whole number of µs"));
    }
    let too_long = || bad("above 25.5 ms, the largest the 8-bit field in 100 µs units holds");
    let whole: u64 = whole.parse().map_err(|_| too_long())?;
    let frac_us: u64 = if frac.is_empty() {
        0
    } else {
        frac.parse::<u64>().map_err(|_| too_long())? * 10u64.pow((scale_digits - frac.len()) as u32)
    };
    let us = whole
        .checked_mul(if ms { 1000 } else { 1 })
        .and_then(|w| w.checked_add(frac_us))
        .ok_or_else(too_long)?;
    if us > u64::from(MAX_TIME_US) {
        return Err(too_long());
    }
    if us % 100 != 0 {
        return Err(bad(
            "not a multiple of 100 µs (the field counts 100 µs steps)",
        ));
    }
    Ok(us as u32)
}

/// Parses `numio coalesce set`'s `--threshold` and `--time` into the
/// value to set.
pub fn parse_set(threshold: &str, time: &str) -> Result<IrqCoalescing, TuneError> {
    let threshold = parse_threshold(threshold)?;
    let time_us = parse_time_us(time)?;
    setting(threshold, time_us)
}

/// What to warn of before setting `value`: a threshold with TIME 0, which
/// coalesces nothing.
pub fn warning(value: IrqCoalescing) -> Option<&'static str> {
    (value.thr_zero_based > 0 && value.time_100us == 0).then_some(
        "--time 0 means no delay: the controller raises every interrupt at once and coalesces nothing; give a time such as 100us",
    )
}

/// Reads a comma-separated list of distinct values of `flag`, each with
/// `one`; `example` is the list an error suggests (`0,3,9`). An empty
/// value or a repeated one is a [`TuneError::ListEmpty`] or
/// [`TuneError::ListRepeated`], naming the whole input.
pub fn parse_list<T: PartialEq + Copy, E: From<TuneError>>(
    flag: &'static str,
    text: &str,
    example: &'static str,
    one: impl Fn(&str) -> Result<T, E>,
) -> Result<Vec<T>, E> {
    let mut out = Vec::new();
    for word in text.split(',').map(str::trim) {
        if word.is_empty() {
            return Err(TuneError::ListEmpty {
                flag,
                text: text.to_string(),
                example,
            }
            .into());
        }
        let v = one(word)?;
        if out.contains(&v) {
            return Err(TuneError::ListRepeated {
                flag,
                text: text.to_string(),
                word: word.to_string(),
            }
            .into());
        }
        out.push(v);
    }
    Ok(out)
}

/// Thresholds a sweep runs ([`parse_thresholds`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Thresholds {
    /// Raw thresholds, ascending, 0 (off) among them.
    pub values: Vec<u8>,
    /// Whether 0 was added (the user's list lacked it).
    pub added_off: bool,
}

/// Parses a sweep's `--threshold 0,1,3,5,9`: raw thresholds 0..=255 (each
/// read as [`parse_threshold`] reads one), ascending; 0 (off, the baseline
/// every recommendation is measured against) is added when missing, and
/// [`Thresholds::added_off`] says so.
pub fn parse_thresholds(text: &str) -> Result<Thresholds, TuneError> {
    let mut values = parse_list("--threshold", text, "0,3,9", parse_threshold)?;
    let added_off = !values.contains(&0);
    if added_off {
        values.push(0);
    }
    values.sort_unstable();
    Ok(Thresholds { values, added_off })
}

/// Parses a sweep's `--time`: as [`parse_time_us`], and not 0 (no delay
/// coalesces nothing: [`TuneError::NoDelay`]).
pub fn parse_delay_us(text: &str) -> Result<u32, TuneError> {
    let us = parse_time_us(text)?;
    if us == 0 {
        return Err(TuneError::NoDelay {
            input: text.to_string(),
        });
    }
    Ok(us)
}

/// The value for a raw threshold and a time in µs (already checked by the
/// parsers; checked again here).
pub fn setting(threshold: u8, time_us: u32) -> Result<IrqCoalescing, TuneError> {
    if time_us > MAX_TIME_US || time_us % 100 != 0 {
        return Err(TuneError::Time {
            input: format!("{time_us}us"),
            why: "not a multiple of 100 µs up to 25.5 ms".to_string(),
        });
    }
    Ok(IrqCoalescing {
        time_100us: (time_us / 100) as u8,
        thr_zero_based: threshold,
    })
}

/// Whether `value` coalesces anything: a threshold above one completion
/// and a time above 0 (TIME 0 means "no delay": the specification's
/// controller then raises every interrupt at once).
pub fn coalesces(value: IrqCoalescing) -> bool {
    value.thr_zero_based > 0 && value.time_100us > 0
}

/// nvme-cli's decoding (THR + 1 completions, TIME × 100 µs) in words:
/// `an interrupt per 10 completions (THR 9) or after 100 µs (TIME 1),
/// whichever comes first (raw 0x0109)`.
pub fn describe(value: IrqCoalescing) -> String {
    let raw = value.encode();
    if value == OFF {
        return format!("off: an interrupt per completion (raw {raw:#06x})");
    }
    if value.time_100us == 0 {
        return format!(
            "THR {} (an interrupt per {} completions) but TIME 0 (no delay): an interrupt per completion (raw {raw:#06x})",
            value.thr_zero_based,
            value.threshold()
        );
    }
    let completions = value.threshold();
    let per = if completions == 1 {
        "completion".to_string()
    } else {
        format!("{completions} completions")
    };
    format!(
        "an interrupt per {per} (THR {}) or after {} µs (TIME {}), whichever comes first (raw {raw:#06x})",
        value.thr_zero_based,
        value.time_us(),
        value.time_100us
    )
}

/// The `numio coalesce set` flags that set `value` again.
pub fn set_flags(value: IrqCoalescing) -> String {
    format!(
        "--threshold {} --time {}us",
        value.thr_zero_based,
        value.time_us()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thresholds_are_raw_and_at_most_255() {
        assert_eq!(parse_threshold("0").unwrap(), 0);
        assert_eq!(parse_threshold("255").unwrap(), 255);
        let e = parse_threshold("256").unwrap_err().to_string();
        assert!(e.contains("--threshold 256") && e.contains("255"), "{e}");
        assert!(parse_threshold("-1").is_err());
        assert!(parse_threshold("3.5").is_err());
        assert!(parse_threshold("").is_err());
    }

    #[test]
    fn times_in_us_ms_or_bare() {
        assert_eq!(parse_time_us("100us").unwrap(), 100);
        assert_eq!(parse_time_us("100µs").unwrap(), 100);
        assert_eq!(parse_time_us("0.2ms").unwrap(), 200);
        assert_eq!(parse_time_us("25.5ms").unwrap(), 25_500);
        assert_eq!(parse_time_us("25500").unwrap(), 25_500);
        assert_eq!(parse_time_us("0").unwrap(), 0);
        assert_eq!(parse_time_us("1.000ms").unwrap(), 1000);
    }

    #[test]
    fn times_off_the_grid_or_too_long_are_refused_with_the_reason() {
        for (input, why) in [
            ("25.6ms", "above 25.5 ms"),
            ("25600us", "above 25.5 ms"),
            ("99999999999999999999", "above 25.5 ms"),
            ("150us", "multiple of 100"),
            ("0.25ms", "multiple of 100"),
            ("0.0001ms", "whole number of µs"),
            ("fast", "expected a number"),
            ("1s", "expected a number"),
            ("", "expected a number"),
        ] {
            let e = parse_time_us(input).expect_err(input).to_string();
            assert!(
                e.contains(why) && e.contains(&format!("--time {input}")),
                "{input}: {e}"
            );
        }
    }

    #[test]
    fn settings_encode_as_nvme_cli_writes_them() {
        let v = setting(9, 100).unwrap();
        assert_eq!(v.encode(), 0x0109);
        assert_eq!(
            describe(v),
            "an interrupt per 10 completions (THR 9) or after 100 µs (TIME 1), whichever comes first (raw 0x0109)"
        );
        assert!(coalesces(v));
        assert!(!coalesces(setting(9, 0).unwrap()), "TIME 0 is no delay");
        assert!(
            !coalesces(setting(0, 100).unwrap()),
            "THR 0 is one completion"
        );
        assert!(describe(setting(9, 0).unwrap()).contains("an interrupt per completion"));
        assert_eq!(set_flags(v), "--threshold 9 --time 100us");
        assert_eq!(
            describe(OFF),
            "off: an interrupt per completion (raw 0x0000)"
        );
        assert!(setting(0, 150).is_err());
        assert_eq!(parse_set("9", "100us").unwrap(), v);
        assert!(warning(parse_set("9", "0").unwrap()).is_some_and(|w| w.starts_with("--time 0")));
        assert_eq!(warning(v), None);
        assert_eq!(warning(OFF), None);
    }

    #[test]
    fn thresholds_are_sorted_with_off_added_and_bad_ones_named() {
        let t = |text: &str| parse_thresholds(text).map(|t| (t.values, t.added_off));
        assert_eq!(t("0,1,3,5,9").unwrap(), (vec![0, 1, 3, 5, 9], false));
        assert_eq!(t("9, 3").unwrap(), (vec![0, 3, 9], true));
        let err = |text: &str| t(text).unwrap_err().to_string();
        assert!(
            err("0,256").contains("--threshold 256: above 255"),
            "{}",
            err("0,256")
        );
        assert!(err("0,x").contains("--threshold x: not a whole number"));
        assert!(err("3,3").contains("3 is repeated"));
        assert!(err("0,,3").contains("an empty value"));
    }

    #[test]
    fn sweep_times_are_100_us_steps_up_to_25_5_ms() {
        assert_eq!(parse_delay_us("100us").unwrap(), 100);
        assert_eq!(parse_delay_us("0.2ms").unwrap(), 200);
        assert_eq!(parse_delay_us("300").unwrap(), 300);
        assert_eq!(parse_delay_us("25.5ms").unwrap(), 25_500);
        let err = |t: &str| parse_delay_us(t).unwrap_err().to_string();
        assert!(
            err("150us").contains("not a multiple of 100 µs"),
            "{}",
            err("150us")
        );
        assert!(err("25.6ms").contains("above 25.5 ms"), "{}", err("25.6ms"));
        assert!(err("0").contains("0 means no delay"));
        assert!(
            err("fast").contains("--time fast: expected a number"),
            "{}",
            err("fast")
        );
    }
}
