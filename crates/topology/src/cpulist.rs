//! The kernel's CPU list format (`0-3,8,10-11`), parsed and printed in one
//! place for the whole workspace.
//!
//! The kernel writes it in `cpulist`, `online`, `local_cpulist`,
//! `thread_siblings_list`, `effective_affinity_list` and (with `, `
//! separators) `mq/N/cpu_list`; node lists (`node/online`, `numa_nodes`) use
//! the same format. Users write it in `--cpus`, `--cpus-for` and fio's
//! `cpus_allowed`. A [`CpuList`] is always ascending and without repeats, so
//! printing it gives the compact form and parsing that gives it back.

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
        let whole = text.trim_matches(|c: char| c.is_whitespace() || c == '\0');
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

    proptest! {
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
