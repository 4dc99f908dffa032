//! Parsers for the text formats of sysfs and procfs files.
//!
//! Each returns a [`ParseError`] naming what was expected and what was
//! found, so the caller can record the file as unreadable. Each reads the text as any
//! kernel writes it: surrounding whitespace and a trailing `\0` (some
//! kernels end attributes with `\n\0`) are not part of the value.

use crate::cpulist::{trim_attr, CpuList, ListOf};
use crate::error::ParseError;

/// A CPU list file as numbers ([`CpuList::parse`]), for `Reader::parse`.
pub fn parse_list(text: &str) -> Result<Vec<u32>, ParseError> {
    parse_list_of(text, ListOf::Cpus)
}

/// A node list file as numbers ([`CpuList::parse_nodes`]).
pub fn parse_node_list(text: &str) -> Result<Vec<u32>, ParseError> {
    parse_list_of(text, ListOf::Nodes)
}

fn parse_list_of(text: &str, of: ListOf) -> Result<Vec<u32>, ParseError> {
    Ok(CpuList::parse_of(text, of)?.ids().to_vec())
}

/// A CPU mask file (`cpumap`, `local_cpus`, `thread_siblings`,
/// `smp_affinity`) as numbers ([`CpuList::parse_mask`]).
pub fn parse_mask(text: &str) -> Result<Vec<u32>, ParseError> {
    Ok(CpuList::parse_mask(text, ListOf::Cpus)?.ids().to_vec())
}

/// An id the kernel writes as `-1` when it does not know it
/// (`physical_package_id` on s390 and some virtual machines, `core_id`):
/// `None` for any negative value or an empty file.
pub fn parse_id(text: &str) -> Result<Option<u32>, ParseError> {
    if trim_attr(text).is_empty() {
        return Ok(None);
    }
    let v: i64 = parse_num(text)?;
    if v < 0 {
        return Ok(None);
    }
    u32::try_from(v)
        .map(Some)
        .map_err(|_| ParseError::IdTooLarge { value: v })
}

/// `MemTotal` of a `nodeN/meminfo` (`Node 0 MemTotal:  5073112 kB`), in bytes.
pub fn parse_meminfo_total_bytes(text: &str) -> Result<u64, ParseError> {
    parse_meminfo_bytes(text, "MemTotal")
}

/// `MemAvailable` of `/proc/meminfo` (`MemAvailable:  5073112 kB`), in bytes.
pub fn parse_meminfo_available_bytes(text: &str) -> Result<u64, ParseError> {
    parse_meminfo_bytes(text, "MemAvailable")
}

/// The line of a meminfo text whose key ends with `field`, in bytes.
fn parse_meminfo_bytes(text: &str, field: &'static str) -> Result<u64, ParseError> {
    for line in trim_attr(text).lines() {
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        if !key.trim_end().ends_with(field) {
            continue;
        }
        let mut words = value.split_whitespace();
        let kib: u64 = words.next().and_then(|w| w.parse().ok()).ok_or_else(|| {
            ParseError::BadMeminfoLine {
                field,
                line: line.to_string(),
            }
        })?;
        return match words.next() {
            Some("kB") | None => {
                kib.checked_mul(1024)
                    .ok_or_else(|| ParseError::MeminfoOutOfRange {
                        field,
                        line: line.to_string(),
                    })
            }
            Some(unit) => Err(ParseError::UnknownMeminfoUnit {
                unit: unit.to_string(),
                line: line.to_string(),
            }),
        };
    }
    Err(ParseError::NoMeminfoField { field })
}

/// A whitespace-separated row of numbers (`nodeN/distance`).
pub fn parse_u32_row(text: &str) -> Result<Vec<u32>, ParseError> {
    trim_attr(text)
        .split_whitespace()
        .map(parse_num::<u32>)
        .collect()
}

/// The active scheduler of `queue/scheduler`: the bracketed entry, or the
/// only entry (`none` on bio-based devices).
pub fn parse_scheduler(text: &str) -> Result<String, ParseError> {
    let text = trim_attr(text);
    if let Some(start) = text.find('[') {
        let rest = &text[start + 1..];
        let end = rest.find(']').ok_or_else(|| ParseError::UnclosedBracket {
            text: text.to_string(),
        })?;
        return Ok(rest[..end].to_string());
    }
    let mut words = text.split_whitespace();
    match (words.next(), words.next()) {
        (Some(only), None) => Ok(only.to_string()),
        _ => Err(ParseError::NoActiveScheduler {
            text: text.to_string(),
        }),
    }
}

/// A kernel boolean: `0`/`1`, `Y`/`N`.
pub fn parse_bool(text: &str) -> Result<bool, ParseError> {
    match trim_attr(text) {
        "1" | "Y" | "y" => Ok(true),
        "0" | "N" | "n" => Ok(false),
        other => Err(ParseError::NotABool {
            text: other.to_string(),
        }),
    }
}

/// A decimal number.
pub fn parse_num<T: std::str::FromStr>(text: &str) -> Result<T, ParseError> {
    let text = trim_attr(text);
    text.parse().map_err(|_| ParseError::NotANumber {
        text: text.to_string(),
    })
}

/// A file's text without surrounding whitespace and NULs, for attributes
/// kept as strings (`model`, `state`, `transport`).
pub fn parse_text(text: &str) -> String {
    trim_attr(text).to_string()
}

/// One NVMe queue line of `/proc/interrupts`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IrqLine {
    /// IRQ number.
    pub irq: u32,
    /// Last word of the line (`nvme0q3`).
    pub name: String,
    /// Count per CPU column.
    pub counts: Vec<u64>,
}

/// Parses `/proc/interrupts`: the CPU of each column and every numbered IRQ
/// line whose action name satisfies `keep`.
pub fn parse_interrupts(
    text: &str,
    keep: impl Fn(&str) -> bool,
) -> Result<(Vec<u32>, Vec<IrqLine>), ParseError> {
    let mut lines = text.lines();
    let header = lines.next().ok_or(ParseError::Empty)?;
    let cpus = header
        .split_whitespace()
        .map(|w| {
            w.strip_prefix("CPU")
                .and_then(|n| n.parse().ok())
                .ok_or_else(|| ParseError::BadInterruptsHeader {
                    word: w.to_string(),
                })
        })
        .collect::<Result<Vec<u32>, ParseError>>()?;
    let mut out = Vec::new();
    for line in lines {
        let Some((irq, rest)) = line.split_once(':') else {
            continue;
        };
        let Ok(irq) = irq.trim().parse::<u32>() else {
            continue; // NMI:, LOC:, ERR: and friends
        };
        // From the end: the lines are thousands of columns wide on big machines.
        let Some(name) = rest
            .trim_end()
            .rsplit([' ', '\t'])
            .next()
            .filter(|n| !n.is_empty())
        else {
            continue;
        };
        if !keep(name) {
            continue;
        }
        let counts = rest
            .split_whitespace()
            .take(cpus.len())
            .map(|w| w.parse::<u64>())
            .collect::<Result<Vec<u64>, _>>()
            .map_err(|_| ParseError::BadIrqCounts { irq })?;
        if counts.len() != cpus.len() {
            return Err(ParseError::IrqCountsShort {
                irq,
                found: counts.len(),
                expected: cpus.len(),
            });
        }
        out.push(IrqLine {
            irq,
            name: name.to_string(),
            counts,
        });
    }
    Ok((cpus, out))
}

/// Splits an NVMe kernel name into its numbers: `nvme3` → `[3]`,
/// `nvme0n1` → `[0, 1]`, `nvme0c2n1` → `[0, 2, 1]`, `nvme0q4` → `[0, 4]`,
/// checking the letters between them against `shape` (`"n"`, `"cn"`, `"q"`).
pub fn nvme_numbers(name: &str, prefix: &str, shape: &str) -> Option<Vec<u32>> {
    let mut rest = name.strip_prefix(prefix)?;
    let mut nums = Vec::with_capacity(shape.len() + 1);
    let mut letters = shape.chars();
    loop {
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return None;
        }
        nums.push(rest[..digits].parse().ok()?);
        rest = &rest[digits..];
        match letters.next() {
            None => return rest.is_empty().then_some(nums),
            Some(c) => rest = rest.strip_prefix(c)?,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn meminfo_total_in_bytes() {
        let text = "Node 0 MemTotal:        5073112 kB\nNode 0 MemFree:  1 kB\n";
        assert_eq!(parse_meminfo_total_bytes(text).unwrap(), 5073112 * 1024);
        assert!(parse_meminfo_total_bytes("Node 0 MemFree: 1 kB").is_err());
        let proc = "MemTotal:       24000000 kB\nMemFree:  100 kB\nMemAvailable:   23000000 kB\n";
        assert_eq!(
            parse_meminfo_available_bytes(proc).unwrap(),
            23000000 * 1024
        );
        assert!(parse_meminfo_available_bytes("MemTotal: 1 kB\n").is_err());
        assert_eq!(
            parse_meminfo_total_bytes("Node 2 MemTotal: 0 kB").unwrap(),
            0
        );
    }

    /// Regression: `node/online` of older kernels ends `0\n\0` and was
    /// refused as "expected a number, found `0⏎\0`".
    #[test]
    fn values_end_with_newline_and_nul_on_some_kernels() {
        assert_eq!(parse_num::<u32>("7\n\0"), Ok(7));
        assert_eq!(parse_node_list("0\n\0"), Ok(vec![0]));
        assert_eq!(parse_bool("Y\n\0"), Ok(true));
        assert_eq!(parse_u32_row("10 21\n\0"), Ok(vec![10, 21]));
        assert_eq!(parse_scheduler("[none] mq-deadline\n\0").unwrap(), "none");
        assert_eq!(
            parse_mask(",00000000,000000f0\n\0".trim_start_matches(',')),
            Ok(vec![4, 5, 6, 7])
        );
        assert_eq!(parse_text(" live\n\0"), "live");
        assert_eq!(
            parse_meminfo_total_bytes("Node 0 MemTotal: 4 kB\n\0").unwrap(),
            4096
        );
    }

    #[test]
    fn errors_carry_what_was_found() {
        assert_eq!(
            parse_num::<u32>(" x\n"),
            Err(ParseError::NotANumber { text: "x".into() })
        );
        let e = parse_meminfo_total_bytes("Node 0 MemTotal: 4 MB\n").unwrap_err();
        assert_eq!(
            e,
            ParseError::UnknownMeminfoUnit {
                unit: "MB".into(),
                line: "Node 0 MemTotal: 4 MB".into()
            }
        );
        assert_eq!(
            e.to_string(),
            "unknown unit `MB` in `Node 0 MemTotal: 4 MB`"
        );
        assert_eq!(
            parse_id("4294967296"),
            Err(ParseError::IdTooLarge { value: 1 << 32 })
        );
        assert_eq!(
            parse_interrupts("CPU0 CPU1\n 5: 1 2 nvme0q1\n 6: 1\n", |_| true),
            Err(ParseError::IrqCountsShort {
                irq: 6,
                found: 1,
                expected: 2
            })
        );
    }

    #[test]
    fn minus_one_is_an_unknown_id() {
        assert_eq!(parse_id("-1\n"), Ok(None));
        assert_eq!(parse_id("3\n"), Ok(Some(3)));
        assert_eq!(parse_id("\n"), Ok(None), "an empty file says nothing");
        assert!(parse_id("x").is_err());
        assert!(parse_id("4294967296").is_err());
    }

    #[test]
    fn scheduler_is_the_bracketed_one() {
        assert_eq!(
            parse_scheduler("[none] mq-deadline kyber\n").unwrap(),
            "none"
        );
        assert_eq!(
            parse_scheduler("none [mq-deadline]").unwrap(),
            "mq-deadline"
        );
        assert_eq!(parse_scheduler("none\n").unwrap(), "none");
        assert!(parse_scheduler("none kyber").is_err());
    }

    #[test]
    fn interrupts_keep_named_lines_with_counts_per_column() {
        let text = "           CPU0       CPU2\n  \
             0:         44          0   IO-APIC   2-edge      timer\n \
            45:          3          9  PCI-MSIX-0000:01:00.0   1-edge      nvme0q1\n\
            NMI:          0          0   Non-maskable interrupts\n";
        let (cpus, lines) = parse_interrupts(text, |n| n.starts_with("nvme")).unwrap();
        assert_eq!(cpus, vec![0, 2]);
        assert_eq!(
            lines,
            vec![IrqLine {
                irq: 45,
                name: "nvme0q1".into(),
                counts: vec![3, 9]
            }]
        );
    }

    #[test]
    fn nvme_names_split_into_numbers() {
        assert_eq!(nvme_numbers("nvme3", "nvme", ""), Some(vec![3]));
        assert_eq!(nvme_numbers("nvme0n1", "nvme", "n"), Some(vec![0, 1]));
        assert_eq!(nvme_numbers("nvme0c2n1", "nvme", "cn"), Some(vec![0, 2, 1]));
        assert_eq!(nvme_numbers("nvme0q12", "nvme", "q"), Some(vec![0, 12]));
        assert_eq!(nvme_numbers("nvme0n1p1", "nvme", "n"), None);
        assert_eq!(nvme_numbers("nvme-subsys0", "nvme", ""), None);
        assert_eq!(nvme_numbers("ng1n2", "ng", "n"), Some(vec![1, 2]));
    }
}
