//! Everything computed from a result set: repeat statistics of each arm and,
//! for two arms, their comparison (for three, each later arm against the
//! first); for a sweep, its curves (for a
//! coalescing sweep, its tables and recommendations). Exporters read this,
//! never the raw runs alone, so every output tells the same story.

use serde::{Deserialize, Serialize};

use crate::coalesce::CoalesceSweep;
use crate::compare::{compare, Comparison};
use crate::model::{ResultSet, SetKind};
use crate::repeat::{arm_stats, ArmStats};
use crate::sweep::{analyze_set, Sweep};

/// Statistics of a result set.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Analysis {
    /// Repeat statistics per arm (arms without runs are left out).
    pub arms: Vec<ArmStats>,
    /// The comparison of the first two arms, when there are two with runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comparison: Option<Comparison>,
    /// A comparison of three arms (`numio compare --c`): the third arm
    /// against the first, as `comparison` is the second against the first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub more_comparisons: Vec<Comparison>,
    /// The curves of a sweep set (one per value of a grid's second axis);
    /// empty for a coalescing sweep, which has [`Analysis::coalesce`].
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sweeps: Vec<Sweep>,
    /// A coalescing sweep's tables and recommendations.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub coalesce: Option<CoalesceSweep>,
}

impl Analysis {
    /// Every warning, each once, in order.
    pub fn warnings(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        let all: Vec<String> = match &self.comparison {
            Some(c) => c
                .warnings
                .iter()
                .chain(self.more_comparisons.iter().flat_map(|m| &m.warnings))
                .cloned()
                .collect(),
            None => self.arms.iter().flat_map(|a| a.warnings.clone()).collect(),
        };
        for w in all {
            if !out.contains(&w) {
                out.push(w);
            }
        }
        out
    }
}

/// Analyses `set`.
pub fn analyze(set: &ResultSet) -> Analysis {
    let arms = set.arms.iter().filter_map(arm_stats).collect();
    let comparison = match set.arms.as_slice() {
        _ if set.kind == SetKind::Sweep => None,
        [a, b, ..] => compare(a, b),
        _ => None,
    };
    let more_comparisons = match set.arms.as_slice() {
        _ if set.kind != SetKind::Compare => Vec::new(),
        [a, _, rest @ ..] => rest.iter().filter_map(|c| compare(a, c)).collect(),
        _ => Vec::new(),
    };
    let coalesce = crate::coalesce::analyze(set);
    Analysis {
        arms,
        comparison,
        more_comparisons,
        sweeps: if coalesce.is_some() {
            Vec::new()
        } else {
            analyze_set(set)
        },
        coalesce,
    }
}
