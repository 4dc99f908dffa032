//! Sizes as storage tools write them (fio, nvme-cli, numio's flags and
//! configuration): `4096`, `4k`, `1.5m`, `2G`, `4KiB`, binary multiples.
//! The one size parser of the workspace: planner's fio units, numio's
//! flags and the target's `mem:SIZE` all use it.

/// A value that is not what its option takes: the text as given and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnitError {
    /// The value as given.
    pub text: String,
    /// Why it was refused, with what would work (no repeat of the value).
    pub reason: String,
}

impl UnitError {
    /// `text` refused because `reason`.
    pub fn new(text: &str, reason: impl Into<String>) -> UnitError {
        UnitError {
            text: text.to_string(),
            reason: reason.into(),
        }
    }
}

impl std::fmt::Display for UnitError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "`{}`: {}", self.text, self.reason)
    }
}

impl std::error::Error for UnitError {}

/// The job file reader reports values as strings.
impl From<UnitError> for String {
    fn from(e: UnitError) -> String {
        e.to_string()
    }
}

/// Parses a size in bytes: a number with an optional fio suffix
/// (`k`/`m`/`g`/`t`/`p`, optionally followed by `b` or `ib`, any case),
/// with an optional fraction (`1.5k` is 1536; bytes below one are dropped).
pub fn parse_size_bytes(text: &str) -> Result<u64, UnitError> {
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, suffix) = t.split_at(split);
    if num.is_empty() || num == "." {
        return Err(UnitError::new(text, "not a size (try 4k, 1m, 1g)"));
    }
    let shift = match suffix.to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        "t" | "tb" | "tib" => 40,
        "p" | "pb" | "pib" => 50,
        _ => {
            return Err(UnitError::new(
                text,
                format!("unknown size suffix `{suffix}` (use k, m, g, t or p)"),
            ))
        }
    };
    let unit = 1u64 << shift;
    let too_large = || UnitError::new(text, "too large");
    let not_a_size = || UnitError::new(text, "not a size (try 4k, 1m, 1g)");
    let (whole, frac) = num.split_once('.').unwrap_or((num, ""));
    let whole: u64 = match whole {
        "" => 0,
        w => w.parse().map_err(|_| {
            if w.bytes().all(|b| b.is_ascii_digit()) {
                too_large()
            } else {
                not_a_size()
            }
        })?,
    };
    let mut bytes = whole.checked_mul(unit).ok_or_else(too_large)?;
    if !frac.is_empty() {
        if !frac.bytes().all(|b| b.is_ascii_digit()) {
            return Err(not_a_size());
        }
        // Up to 9 digits of fraction count; fio reads them as a double.
        let digits = frac.len().min(9);
        let frac: u64 = frac[..digits].parse().map_err(|_| not_a_size())?;
        let part = u128::from(frac) * u128::from(unit) / 10u128.pow(digits as u32);
        let part = u64::try_from(part).map_err(|_| too_large())?;
        bytes = bytes.checked_add(part).ok_or_else(too_large)?;
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_take_fractions_and_any_case_of_binary_suffixes() {
        assert_eq!(parse_size_bytes("4096").unwrap(), 4096);
        assert_eq!(parse_size_bytes("4k").unwrap(), 4096);
        assert_eq!(parse_size_bytes("4KiB").unwrap(), 4096);
        assert_eq!(parse_size_bytes("1.5G").unwrap(), 3 << 29);
        assert_eq!(parse_size_bytes("2T").unwrap(), 2 << 40);
        assert!(parse_size_bytes("1x")
            .unwrap_err()
            .reason
            .contains("unknown size suffix"));
        assert_eq!(
            parse_size_bytes("99999999999p").unwrap_err().reason,
            "too large"
        );
    }
}
