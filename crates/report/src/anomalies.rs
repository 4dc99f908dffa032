//! What repeats and comparisons say of runs whose intervals carry
//! anomaly flags (`results::intervals::flag_anomalies`): runs of one arm
//! that did not see one state of the device, arms that met different ones.

use std::fmt::Write as _;

/// Per run of `arm` that kept intervals: its `seq` and how many of its
/// run's intervals were flagged.
fn flagged_runs(arm: &crate::Arm) -> Vec<(usize, usize)> {
    arm.runs
        .iter()
        .filter_map(|rec| {
            let ivs = rec.raw.as_ref()?.get("intervals")?.as_array()?;
            let n = ivs
                .iter()
                .filter(|i| {
                    i.get("flags")
                        .and_then(|f| f.as_array())
                        .is_some_and(|f| !f.is_empty())
                })
                .count();
            Some((rec.seq, n))
        })
        .collect()
}

/// What `--repeat` says of an arm whose runs' intervals carry anomalies:
/// which runs had them (and, where others had none, that the runs did not
/// see one state of the device).
pub fn arm_warnings(arm: &crate::Arm) -> Vec<String> {
    let runs = flagged_runs(arm);
    let (bad, good): (Vec<_>, Vec<_>) = runs.iter().partition(|(_, n)| *n > 0);
    if bad.is_empty() {
        return Vec::new();
    }
    let list = |v: &[&(usize, usize)]| {
        v.iter()
            .map(|(s, _)| s.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut w = format!(
        "{}: run {} had anomalous intervals (IOPS drops or latency jumps: numio report FILE --intervals shows when)",
        arm.label,
        list(&bad)
    );
    if !good.is_empty() {
        let _ = write!(
            w,
            " and run {} none: the runs did not see one state of the device (precondition it, or lengthen --ramp-time)",
            list(&good)
        );
    }
    vec![w]
}

/// What a comparison says when one arm's runs carry anomalies and the
/// other's none: the verdict compares two states of the device.
pub fn contrast_warning(a: &crate::Arm, b: &crate::Arm) -> Option<String> {
    let count = |arm| flagged_runs(arm).iter().filter(|(_, n)| *n > 0).count();
    let (fa, fb) = (count(a), count(b));
    let (with, without) = match (fa > 0, fb > 0) {
        (true, false) if !flagged_runs(b).is_empty() => (&a.label, &b.label),
        (false, true) if !flagged_runs(a).is_empty() => (&b.label, &a.label),
        _ => return None,
    };
    Some(format!(
        "{with}'s runs carry anomalous intervals and {without}'s none: the arms may have met different states of the device (a cliff, a throttle), not only different settings; numio report FILE --intervals shows when"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use results::{AnomalyKind, IntervalFlag, IntervalResult, RunResult};

    /// A run `seq` with three intervals, `flagged` of them flagged.
    fn run(seq: usize, flagged: usize) -> crate::RunRecord {
        let r = RunResult {
            intervals: (0..3)
                .map(|k| IntervalResult {
                    index: k,
                    flags: if (k as usize) < flagged {
                        vec![IntervalFlag {
                            kind: AnomalyKind::IopsDrop,
                            value: 1.0,
                            median: 10.0,
                        }]
                    } else {
                        vec![]
                    },
                    ..IntervalResult::default()
                })
                .collect(),
            ..RunResult::default()
        };
        crate::from_engine::record(seq, &r)
    }

    fn arm(label: &str, runs: Vec<crate::RunRecord>) -> crate::Arm {
        crate::Arm {
            label: label.into(),
            spec: String::new(),
            runs,
        }
    }

    #[test]
    fn runs_of_two_states_are_named() {
        let a = arm("a", vec![run(1, 0), run(2, 2), run(3, 0)]);
        let w = arm_warnings(&a);
        assert_eq!(w.len(), 1);
        assert!(
            w[0].starts_with("a: run 2 had anomalous intervals"),
            "{}",
            w[0]
        );
        assert!(
            w[0].contains("and run 1, 3 none: the runs did not see one state"),
            "{}",
            w[0]
        );
        assert!(arm_warnings(&arm("calm", vec![run(1, 0), run(2, 0)])).is_empty());
        let all = arm_warnings(&arm("all", vec![run(1, 1), run(2, 3)]));
        assert!(!all[0].contains("none:"), "{}", all[0]);
    }

    #[test]
    fn a_comparison_says_when_only_one_arm_met_anomalies() {
        let calm = arm("local", vec![run(1, 0), run(3, 0)]);
        let rough = arm("remote", vec![run(2, 1), run(4, 0)]);
        let w = contrast_warning(&calm, &rough).expect("a warning");
        assert!(
            w.starts_with("remote's runs carry anomalous intervals and local's none"),
            "{w}"
        );
        assert_eq!(contrast_warning(&calm, &calm), None);
        assert_eq!(contrast_warning(&rough, &rough), None);
    }
}
