//! Arms of a comparison as the user writes them (`--a policy=local`), and
//! the interleaved order live arms run in.

use std::path::PathBuf;

use crate::error::ReportError;
use crate::model::RunRecord;

/// Where an arm's runs come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ArmSource {
    /// Plan live with this placement policy (`local`, `spread`, `remote`,
    /// `none`).
    Policy(String),
    /// Run this saved plan (`numio plan --save`).
    Plan(PathBuf),
    /// Run this fio job file.
    Fio(PathBuf),
    /// Plan live with the local policy and run through this engine backend
    /// (`uring`, `passthru`, `vfio`, ...): the same drive through each
    /// backend's own path to it (`numio compare --a backend=vfio --b
    /// backend=passthru pci:ADDR`).
    Backend(String),
    /// Take the runs of a saved result file; `arm` picks one of two arms.
    Result {
        /// The file.
        path: PathBuf,
        /// Label of the arm to take from a comparison file.
        arm: Option<String>,
    },
}

/// One arm as given on the command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArmSpec {
    /// Where its runs come from.
    pub source: ArmSource,
    /// Label in verdicts and legends.
    pub label: String,
    /// Whether the label was given (`label=NAME`) rather than derived.
    pub label_given: bool,
    /// The text as given.
    pub text: String,
}

/// Policies a `policy=` arm accepts ([`planner::Policy::named`]).
pub const POLICIES: [&str; 4] = ["local", "spread", "remote", "none"];

/// Backends a `backend=` arm accepts: those that reach an NVMe drive.
pub const BACKENDS: [&str; 4] = ["uring", "sync", "passthru", "vfio"];

fn stem(path: &str) -> String {
    std::path::Path::new(path)
        .file_stem()
        .map_or_else(|| path.to_string(), |s| s.to_string_lossy().into_owned())
}

impl ArmSpec {
    /// Parses `KIND=VALUE[,label=NAME][,arm=LABEL]` where KIND is `policy`,
    /// `backend`, `plan`, `fio` or `result` (`arm=` only with `result=`).
    pub fn parse(text: &str) -> Result<ArmSpec, ReportError> {
        let bad = |reason: &str| ReportError::ArmSpec {
            spec: text.to_string(),
            reason: reason.to_string(),
        };
        let mut parts = text.split(',');
        let head = parts.next().unwrap_or_default();
        let (kind, value) = head
            .split_once('=')
            .ok_or_else(|| bad("expected KIND=VALUE"))?;
        if value.is_empty() {
            return Err(bad("the value after = is empty"));
        }
        let (mut label, mut arm) = (None, None);
        for part in parts {
            match part.split_once('=') {
                Some(("label", v)) if !v.is_empty() => label = Some(v.to_string()),
                Some(("arm", v)) if kind == "result" && !v.is_empty() => arm = Some(v.to_string()),
                _ => {
                    return Err(bad(&format!(
                        "unknown option {part:?} (label=NAME, or arm=LABEL with result=)"
                    )))
                }
            }
        }
        // `numa=` is the placement flag's own name (bench, plan and sweep
        // take --numa); `policy=` is the older one.
        let kind = if kind == "numa" { "policy" } else { kind };
        let (source, derived) = match kind {
            "policy" if POLICIES.contains(&value) => {
                (ArmSource::Policy(value.to_string()), value.to_string())
            }
            "policy" => {
                return Err(bad(
                    "the placement must be local, spread, remote or none (numa=local|spread|remote|none)",
                ))
            }
            "backend" if BACKENDS.contains(&value) => {
                (ArmSource::Backend(value.to_string()), value.to_string())
            }
            "backend" => {
                return Err(bad(
                    "the backend must be uring, sync, passthru or vfio (each reaches the same NVMe drive its own way)",
                ))
            }
            "plan" => (ArmSource::Plan(value.into()), stem(value)),
            "fio" => (ArmSource::Fio(value.into()), stem(value)),
            "result" => (
                ArmSource::Result {
                    path: value.into(),
                    arm: arm.clone(),
                },
                arm.clone().unwrap_or_else(|| stem(value)),
            ),
            other => return Err(bad(&format!("unknown kind {other:?}"))),
        };
        Ok(ArmSpec {
            source,
            label_given: label.is_some(),
            label: label.unwrap_or(derived),
            text: text.to_string(),
        })
    }

    /// Whether the arm runs live (everything but `result=`).
    pub fn is_live(&self) -> bool {
        !matches!(self.source, ArmSource::Result { .. })
    }
}

/// Makes two labels distinct by appending ` (A)` and ` (B)` when they are equal.
pub fn distinct_labels(a: &mut String, b: &mut String) {
    if a == b {
        a.push_str(" (A)");
        b.push_str(" (B)");
    }
}

/// Runs `rounds` rounds; in each, every arm in `live` once, in order
/// (A B A B …), so slow drift of the machine hits every arm alike. `run`
/// gets the arm, the round (from 0) and the run's `seq` (from 1).
pub fn interleave<E>(
    live: &[usize],
    rounds: usize,
    mut run: impl FnMut(usize, usize, usize) -> Result<RunRecord, E>,
) -> Result<Vec<(usize, RunRecord)>, E> {
    let mut out = Vec::with_capacity(live.len() * rounds);
    for round in 0..rounds {
        for &arm in live {
            let seq = out.len() + 1;
            let record = run(arm, round, seq)?;
            debug_assert_eq!(record.seq, seq, "the record carries its seq");
            out.push((arm, record));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::TargetMetrics;

    #[test]
    fn parses_every_kind_and_derives_labels() {
        let a = ArmSpec::parse("policy=local").unwrap();
        assert_eq!(
            (a.source, a.label.as_str(), a.label_given),
            (ArmSource::Policy("local".into()), "local", false)
        );
        let p = ArmSpec::parse("plan=/tmp/numa.json,label=numa").unwrap();
        assert_eq!(p.source, ArmSource::Plan("/tmp/numa.json".into()));
        assert_eq!((p.label.as_str(), p.label_given), ("numa", true));
        assert_eq!(ArmSpec::parse("fio=jobs/a.fio").unwrap().label, "a");
        let r = ArmSpec::parse("result=old.json,arm=spread").unwrap();
        assert!(!r.is_live());
        assert_eq!(r.label, "spread");
        let v = ArmSpec::parse("backend=vfio").unwrap();
        assert!(v.is_live());
        assert_eq!(
            (v.source, v.label.as_str()),
            (ArmSource::Backend("vfio".into()), "vfio")
        );
        let e = ArmSpec::parse("backend=nop").unwrap_err().to_string();
        assert!(e.contains("uring, sync, passthru or vfio"), "{e}");
    }

    #[test]
    fn policy_arms_are_the_planners_named_policies() {
        let named: Vec<&str> = planner::Policy::NAMED.iter().map(|p| p.name()).collect();
        assert_eq!(POLICIES.to_vec(), named);
        let r = ArmSpec::parse("policy=remote").unwrap();
        assert_eq!(r.source, ArmSource::Policy("remote".into()));
        assert_eq!(
            ArmSpec::parse("numa=remote,label=far").unwrap().label,
            "far"
        );
    }

    #[test]
    fn rejects_bad_specs_with_the_fix() {
        for bad in [
            "local",
            "policy=numa",
            "policy=",
            "disk=x",
            "plan=a,arm=b",
            "policy=local,color=red",
        ] {
            let err = ArmSpec::parse(bad).unwrap_err().to_string();
            assert!(
                err.contains("use policy=local|spread|remote|none"),
                "{bad}: {err}"
            );
        }
    }

    #[test]
    fn equal_labels_are_told_apart() {
        let (mut a, mut b) = ("plan".to_string(), "plan".to_string());
        distinct_labels(&mut a, &mut b);
        assert_eq!((a.as_str(), b.as_str()), ("plan (A)", "plan (B)"));
    }

    fn record(seq: usize) -> RunRecord {
        let m = TargetMetrics {
            target: "total".into(),
            iops: 1.0,
            bandwidth_bytes_per_s: 1.0,
            lat_mean_ns: 1.0,
            lat_p99_ns: 1.0,
            percentiles: vec![],
            per_io: Default::default(),
        };
        RunRecord {
            seq,
            started_unix_s: 0,
            targets: vec![],
            total: m,
            raw: None,
        }
    }

    #[test]
    fn interleaves_a_b_a_b() {
        let mut calls = Vec::new();
        let out = interleave(&[0, 1], 3, |arm, round, seq| {
            calls.push((arm, round, seq));
            Ok::<_, ()>(record(seq))
        })
        .unwrap();
        assert_eq!(
            calls,
            vec![
                (0, 0, 1),
                (1, 0, 2),
                (0, 1, 3),
                (1, 1, 4),
                (0, 2, 5),
                (1, 2, 6)
            ]
        );
        assert_eq!(out.len(), 6);
        let err = interleave(&[0, 1], 2, |_, _, seq| {
            if seq == 3 {
                Err("boom")
            } else {
                Ok(record(seq))
            }
        });
        assert_eq!(err.unwrap_err(), "boom");
    }
}
