//! The kernel's CPU list format (`0-3,8,10-11`), parsed and printed in one
//! place for the whole workspace.
//!
//! The kernel writes it in `cpulist`, `online`, `local_cpulist`,
//! `thread_siblings_list`, `effective_affinity_list` and (with `, `
//! separators) `mq/N/cpu_list`; node lists (`node/online`, `numa_nodes`) use
//! the same format. Users write it in `--cpus`, `--cpus-for` and fio's
//! `cpus_allowed`. A [`CpuList`] is always ascending and without repeats, so
//! printing it gives the compact form and parsing that gives it back.
//!
//! The kernel also writes the same sets as hex masks (`cpumap`,
//! `local_cpus`, `thread_siblings`, `smp_affinity`): comma-separated 32-bit
//! words, most significant first (`00000000,0000ffff`), as wide as the
//! kernel's CPU count; older kernels write only those.
//! [`CpuList::parse_mask`] reads them.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::model::{CpuId, NodeId};

/// Upper bound (exclusive) on a number in a list, against a corrupt file or
/// a typo such as `0-4294967295` expanding to billions of entries.
pub const LIST_MAX: u32 = 1 << 16;

/// What a list numbers, for error messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListOf {
    /// Logical CPUs.
    Cpus,
    /// NUMA nodes.
    Nodes,
}

impl ListOf {
    fn list(self) -> &'static str {
        match self {
            ListOf::Cpus => "CPU list",
            ListOf::Nodes => "node list",
        }
    }

    fn noun(self) -> &'static str {
        match self {
            ListOf::Cpus => "CPU",
            ListOf::Nodes => "node",
        }
    }

    fn number(self) -> &'static str {
        match self {
            ListOf::Cpus => "CPU number",
            ListOf::Nodes => "node number",
        }
    }
}

/// Why a list does not parse; each names the bad part and the whole list.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CpuListError {
    /// A part is not a number or a range of two numbers.
    #[error("`{part}` in {} `{list}` is not a {}", .of.list(), .of.number())]
    NotANumber {
        /// CPUs or nodes.
        of: ListOf,
        /// The bad part.
        part: String,
        /// The whole list.
        list: String,
    },
    /// A range whose end is below its start (`3-1`).
    #[error("range `{part}` in {} `{list}` runs backwards; write it low-high", .of.list())]
    Backwards {
        /// CPUs or nodes.
        of: ListOf,
        /// The bad range.
        part: String,
        /// The whole list.
        list: String,
    },
    /// A number at or past [`LIST_MAX`].
    #[error("`{part}` in {} `{list}` goes past {}, the largest number numio accepts", .of.list(), LIST_MAX - 1)]
    TooLarge {
        /// CPUs or nodes.
        of: ListOf,
        /// The bad part.
        part: String,
        /// The whole list.
        list: String,
    },
    /// Nothing between two commas (`1,,2`).
    #[error("empty entry in {} `{list}`", .of.list())]
    EmptyEntry {
        /// CPUs or nodes.
        of: ListOf,
        /// The whole list.
        list: String,
    },
    /// A word of a hex mask that is not 1 to 8 hex digits.
    #[error("`{word}` in {} mask `{mask}` is not a 32-bit hex word (the kernel writes masks as comma-separated words of up to 8 hex digits)", .of.noun())]
    BadMaskWord {
        /// CPUs or nodes.
        of: ListOf,
        /// The bad word.
        word: String,
        /// The whole mask.
        mask: String,
    },
    /// A mask with a bit set at or past [`LIST_MAX`].
    #[error("{} mask `{mask}` sets bit {bit}, past {}, the largest number numio accepts", .of.noun(), LIST_MAX - 1)]
    MaskTooWide {
        /// CPUs or nodes.
        of: ListOf,
        /// The highest bit set.
        bit: u64,
        /// The whole mask.
        mask: String,
    },
}

/// Surrounding whitespace and NUL bytes off: some kernels end attributes
/// with `\n\0`.
pub(crate) fn trim_attr(text: &str) -> &str {
    text.trim_matches(|c: char| c.is_whitespace() || c == '\0')
}

/// A set of CPU (or node) numbers in the kernel's list format: ascending,
/// without repeats. Serialized as its text (`"0-3,8"`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(into = "String", try_from = "String")]
pub struct CpuList {
    ids: Vec<u32>,
}

impl CpuList {
    /// The empty list.
    pub fn new() -> CpuList {
        CpuList::default()
    }

    /// A list of `ids` in any order, repeats dropped.
    pub fn from_ids(ids: impl IntoIterator<Item = u32>) -> CpuList {
        let mut ids: Vec<u32> = ids.into_iter().collect();
        ids.sort_unstable();
        ids.dedup();
        CpuList { ids }
    }

    /// The list of `cpus`.
    pub fn of(cpus: &[CpuId]) -> CpuList {
        CpuList::from_ids(cpus.iter().map(|c| c.0))
    }

    /// The list of `nodes`.
    pub fn of_nodes(nodes: &[NodeId]) -> CpuList {
        CpuList::from_ids(nodes.iter().map(|n| n.0))
    }

    /// Parses a CPU list (`0-3,8`, `0, 1, 48` as `mq/N/cpu_list` writes it,
    /// surrounding whitespace and a trailing `\0` allowed). An empty or blank
    /// text is the empty list, as the kernel writes for a node without CPUs.
    pub fn parse(text: &str) -> Result<CpuList, CpuListError> {
        CpuList::parse_of(text, ListOf::Cpus)
    }

    /// [`CpuList::parse`] of a node list (its errors say "node").
    pub fn parse_nodes(text: &str) -> Result<CpuList, CpuListError> {
        CpuList::parse_of(text, ListOf::Nodes)
    }

    /// [`CpuList::parse`] with errors worded for `of`.
    pub fn parse_of(text: &str, of: ListOf) -> Result<CpuList, CpuListError> {
        let whole = trim_attr(text);
        let mut ids = Vec::new();
        if whole.is_empty() {
            return Ok(CpuList { ids });
        }
        for part in whole.split(',').map(str::trim) {
            if part.is_empty() {
                return Err(CpuListError::EmptyEntry {
                    of,
                    list: whole.to_string(),
                });
            }
            let number = |s: &str| parse_number(s, part, whole, of);
            let (lo, hi) = match part.split_once('-') {
                Some((a, b)) => (number(a)?, number(b)?),
                None => {
                    let v = number(part)?;
                    (v, v)
                }
            };
            if hi < lo {
                return Err(CpuListError::Backwards {
                    of,
                    part: part.to_string(),
                    list: whole.to_string(),
                });
            }
            ids.extend(lo..=hi);
        }
        Ok(CpuList::from_ids(ids))
    }

    /// Parses a hex mask as the kernel writes it (`cpumap`, `local_cpus`,
    /// `thread_siblings`, `smp_affinity`): comma-separated words of up to 8
    /// hex digits, most significant first, any number of words
    /// (`ff`, `00000000,00000f0f`); bit N set means N is in the set.
    /// Surrounding whitespace and a trailing `\0` are allowed; an empty
    /// text is the empty set.
    pub fn parse_mask(text: &str, of: ListOf) -> Result<CpuList, CpuListError> {
        let whole = trim_attr(text);
        let mut ids = Vec::new();
        if whole.is_empty() {
            return Ok(CpuList { ids });
        }
        let words: Vec<&str> = whole.split(',').collect();
        for (rank, word) in words.iter().rev().enumerate() {
            let w = word.trim();
            let hex = (1..=8).contains(&w.len()) && w.bytes().all(|b| b.is_ascii_hexdigit());
            let value = u32::from_str_radix(w, 16).ok().filter(|_| hex);
            let Some(value) = value else {
                return Err(CpuListError::BadMaskWord {
                    of,
                    word: w.to_string(),
                    mask: whole.to_string(),
                });
            };
            let base = rank as u64 * 32;
            if value != 0 && base + u64::from(31 - value.leading_zeros()) >= u64::from(LIST_MAX) {
                return Err(CpuListError::MaskTooWide {
                    of,
                    bit: base + u64::from(31 - value.leading_zeros()),
                    mask: whole.to_string(),
                });
            }
            let bits = (0..32u32).filter(|b| value & (1 << b) != 0);
            ids.extend(bits.map(|b| base as u32 + b));
        }
        Ok(CpuList::from_ids(ids))
    }

    /// The numbers, ascending.
    pub fn ids(&self) -> &[u32] {
        &self.ids
    }

    /// The numbers as CPUs, ascending.
    pub fn cpus(&self) -> Vec<CpuId> {
        self.ids.iter().copied().map(CpuId).collect()
    }

    /// The numbers as nodes, ascending.
    pub fn nodes(&self) -> Vec<NodeId> {
        self.ids.iter().copied().map(NodeId).collect()
    }

    /// How many numbers the list holds.
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    /// Whether the list is empty.
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// Whether `id` is in the list.
    pub fn contains(&self, id: u32) -> bool {
        self.ids.binary_search(&id).is_ok()
    }
}

fn parse_number(s: &str, part: &str, whole: &str, of: ListOf) -> Result<u32, CpuListError> {
    let s = s.trim();
    let digits = !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if !digits {
        return Err(CpuListError::NotANumber {
            of,
            part: part.to_string(),
            list: whole.to_string(),
        });
    }
    match s.parse::<u32>() {
        Ok(v) if v < LIST_MAX => Ok(v),
        _ => Err(CpuListError::TooLarge {
            of,
            part: part.to_string(),
            list: whole.to_string(),
        }),
    }
}

/// The compact form: ranges of two or more consecutive numbers as `a-b`,
/// others alone, comma-separated (`0-3,8,10-11`); empty for the empty list.
impl fmt::Display for CpuList {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut i = 0;
        let mut first = true;
        while i < self.ids.len() {
            let start = self.ids[i];
            let mut end = start;
            while i + 1 < self.ids.len() && self.ids[i + 1] == end + 1 {
                i += 1;
                end = self.ids[i];
            }
            if !first {
                f.write_str(",")?;
            }
            first = false;
            if end == start {
                write!(f, "{start}")?;
            } else {
                write!(f, "{start}-{end}")?;
            }
            i += 1;
        }
        Ok(())
    }
}

impl FromStr for CpuList {
    type Err = CpuListError;

    fn from_str(s: &str) -> Result<CpuList, CpuListError> {
        CpuList::parse(s)
    }
}

impl From<CpuList> for String {
    fn from(list: CpuList) -> String {
        list.to_string()
    }
}

impl TryFrom<String> for CpuList {
    type Error = CpuListError;

    fn try_from(text: String) -> Result<CpuList, CpuListError> {
        CpuList::parse(&text)
    }
}

impl From<&[CpuId]> for CpuList {
    fn from(cpus: &[CpuId]) -> CpuList {
        CpuList::of(cpus)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn parses_ranges_singletons_and_mq_style() {
        let ids = |t: &str| CpuList::parse(t).unwrap().ids().to_vec();
        assert_eq!(ids("0-3,8,10-11\n"), vec![0, 1, 2, 3, 8, 10, 11]);
        assert_eq!(ids("0, 48, 1"), vec![0, 1, 48]);
        assert_eq!(ids(" 7 , 2-3"), vec![2, 3, 7]);
        assert_eq!(ids("3,1-3,2"), vec![1, 2, 3], "repeats dropped");
        assert_eq!(ids("\n"), Vec::<u32>::new());
        assert_eq!(
            ids("5\n\0"),
            vec![5],
            "a trailing NUL as some attributes end"
        );
    }

    #[test]
    fn errors_name_the_part_and_the_list() {
        let err = |t: &str| CpuList::parse(t).unwrap_err().to_string();
        assert_eq!(
            err("3-1"),
            "range `3-1` in CPU list `3-1` runs backwards; write it low-high"
        );
        assert_eq!(err("0-3,x"), "`x` in CPU list `0-3,x` is not a CPU number");
        assert_eq!(err("1,,2"), "empty entry in CPU list `1,,2`");
        assert_eq!(
            err("0-7:2"),
            "`0-7:2` in CPU list `0-7:2` is not a CPU number"
        );
        assert_eq!(err("-1"), "`-1` in CPU list `-1` is not a CPU number");
        assert_eq!(
            err("0-4294967295"),
            "`0-4294967295` in CPU list `0-4294967295` goes past 65535, the largest number numio accepts"
        );
        assert_eq!(err("99999999999"), "`99999999999` in CPU list `99999999999` goes past 65535, the largest number numio accepts");
        assert_eq!(
            CpuList::parse_nodes("zero").unwrap_err().to_string(),
            "`zero` in node list `zero` is not a node number"
        );
    }

    #[test]
    fn prints_compactly() {
        let p = |v: &[u32]| CpuList::from_ids(v.iter().copied()).to_string();
        assert_eq!(p(&[0, 1, 2, 3, 8, 10, 11]), "0-3,8,10-11");
        assert_eq!(p(&[0, 1, 2, 3, 112, 113, 114, 115]), "0-3,112-115");
        assert_eq!(p(&[3, 1, 2, 9, 1]), "1-3,9");
        assert_eq!(p(&[5]), "5");
        assert_eq!(p(&[4, 5]), "4-5");
        assert_eq!(p(&[]), "");
        assert_eq!(
            CpuList::of(&[CpuId(2), CpuId(0)]).cpus(),
            vec![CpuId(0), CpuId(2)]
        );
        assert!(CpuList::parse("0-3").unwrap().contains(2));
        let json = serde_json::to_string(&CpuList::parse("0-3,8").unwrap()).unwrap();
        assert_eq!(json, "\"0-3,8\"");
        assert_eq!(
            serde_json::from_str::<CpuList>(&json).unwrap(),
            CpuList::parse("0-3,8").unwrap()
        );
        assert!(serde_json::from_str::<CpuList>("\"3-1\"").is_err());
    }

    #[test]
    fn masks_of_any_width() {
        let ids = |t: &str| CpuList::parse_mask(t, ListOf::Cpus).unwrap().ids().to_vec();
        assert_eq!(ids("ff\n"), (0..8).collect::<Vec<_>>());
        assert_eq!(ids("00000000,00000f0f\n\0"), vec![0, 1, 2, 3, 8, 9, 10, 11]);
        assert_eq!(ids("1,00000000,00000001"), vec![0, 64]);
        assert_eq!(ids("80000000,00000000"), vec![63]);
        assert_eq!(ids("00000000\n"), Vec::<u32>::new());
        assert_eq!(ids(""), Vec::<u32>::new());
        // 2048 words: the widest mask numio accepts (65536 CPUs).
        let mut wide = vec!["00000000"; 2048];
        wide[0] = "80000000";
        assert_eq!(ids(&wide.join(",")), vec![LIST_MAX - 1]);
        let err = |t: &str| {
            CpuList::parse_mask(t, ListOf::Cpus)
                .unwrap_err()
                .to_string()
        };
        assert_eq!(
            err("ff,xyz"),
            "`xyz` in CPU mask `ff,xyz` is not a 32-bit hex word (the kernel writes masks as comma-separated words of up to 8 hex digits)"
        );
        assert!(err("123456789").contains("not a 32-bit hex word"));
        assert!(err("ff,,ff").contains("``"));
        wide[0] = "1";
        wide.push("00000000");
        assert_eq!(
            err(&wide.join(",")),
            format!(
                "CPU mask `{}` sets bit 65536, past 65535, the largest number numio accepts",
                wide.join(",")
            )
        );
    }

    proptest! {
        /// A mask printed from a set parses back to it.
        #[test]
        fn masks_round_trip(ids in proptest::collection::vec(0..2048u32, 0..100)) {
            let list = CpuList::from_ids(ids);
            let words = list.ids().last().map_or(1, |&m| m / 32 + 1);
            let text: Vec<String> = (0..words).rev().map(|w| {
                let v = list.ids().iter().filter(|&&i| i / 32 == w).fold(0u32, |v, &i| v | 1 << (i % 32));
                format!("{v:08x}")
            }).collect();
            prop_assert_eq!(CpuList::parse_mask(&text.join(","), ListOf::Cpus), Ok(list));
        }

        /// parse(print(x)) == x for any set of numbers below LIST_MAX.
        #[test]
        fn print_then_parse_round_trips(ids in proptest::collection::vec(0..LIST_MAX, 0..200)) {
            let list = CpuList::from_ids(ids);
            let text = list.to_string();
            prop_assert_eq!(CpuList::parse(&text), Ok(list.clone()));
            prop_assert!(list.ids().windows(2).all(|w| w[0] < w[1]), "ascending, no repeats");
        }

        /// Dense runs (the common case: whole nodes) round-trip too, and
        /// their text is one range per run.
        #[test]
        fn runs_round_trip(runs in proptest::collection::vec((0..LIST_MAX - 600, 1u32..500), 1..6)) {
            let list = CpuList::from_ids(runs.iter().flat_map(|&(lo, n)| lo..lo + n));
            let text = list.to_string();
            prop_assert_eq!(CpuList::parse(&text), Ok(list.clone()));
            prop_assert!(text.split(',').count() <= runs.len());
        }

        /// Printing the parse of any text that parses gives its canonical
        /// form, which parses to the same list.
        #[test]
        fn parse_then_print_is_canonical(parts in proptest::collection::vec((0u32..3000, 0u32..40), 1..10), sep in prop::sample::select(vec![",", ", "])) {
            let text: Vec<String> = parts.iter().map(|&(lo, n)| if n == 0 { lo.to_string() } else { format!("{lo}-{}", lo + n) }).collect();
            let list = CpuList::parse(&text.join(sep)).expect("ascending ranges parse");
            prop_assert_eq!(CpuList::parse(&list.to_string()), Ok(list.clone()));
        }
    }
}
