//! The arms of a comparison: from what the user wrote (`report::arm::ArmSpec`:
//! `policy=`, `plan=`, `fio=`, `result=`) to a plan that runs live or to
//! runs loaded from a result file ([`prepare`]); the schedule of the live
//! ones ([`schedule`]); and both arms back in A, B order once the live
//! ones ran ([`assemble`]).

use planner::{Placement, PlanRequest, Policy, TargetSpec, Workload};
use report::arm::{ArmSource, ArmSpec};
use report::Arm;
use topology::Topology;

use crate::schedule::{LiveArm, Schedule};
use crate::SessionError;

/// An arm ready to run, or already measured.
#[derive(Debug, Clone)]
pub enum Prepared {
    /// A plan to run live, with what the planner or the job file warned
    /// about (each line names the arm or the file).
    Live {
        /// The plan.
        placement: Box<Placement>,
        /// Warnings to show the user.
        warnings: Vec<String>,
    },
    /// Runs taken from a saved result file.
    Loaded(Arm),
}

/// What live arms share: the workload and targets of `policy=` arms, the
/// machine's topology (when discovery worked), and whether `fio=` arms give
/// jobs without CPUs the local placement.
#[derive(Debug, Clone, Copy)]
pub struct ArmContext<'a> {
    /// Workload of `policy=` arms.
    pub workload: &'a Workload,
    /// Targets of `policy=` arms, resolved ([`crate::targets::target_specs`]).
    pub targets: &'a [TargetSpec],
    /// The machine's topology; `None` when discovery failed.
    pub topology: Option<&'a Topology>,
    /// `fio=` arms: place jobs without cpus_allowed / numa_cpu_nodes locally.
    pub fio_numa_auto: bool,
}

fn arm_error(
    spec: &ArmSpec,
    step: String,
    source: impl std::error::Error + Send + Sync + 'static,
) -> SessionError {
    SessionError::Arm {
        arm: spec.text.clone(),
        step,
        source: Box::new(source),
    }
}

/// Turns `spec` into a plan (planned on `ctx`'s topology, read from a plan
/// file, or placed from a fio job file) or into the runs of a result file.
pub fn prepare(spec: &ArmSpec, ctx: &ArmContext<'_>) -> Result<Prepared, SessionError> {
    let topology = || {
        ctx.topology.ok_or_else(|| SessionError::NoTopology {
            arm: spec.text.clone(),
        })
    };
    let mut warnings = Vec::new();
    let placement = match &spec.source {
        ArmSource::Backend(_) => {
            // The caller gave this arm its own targets (the drive as this
            // backend reaches it) and sets the backend in its options.
            let request = PlanRequest {
                targets: ctx.targets.to_vec(),
                workload: ctx.workload.clone(),
                policy: Policy::Local,
            };
            planner::plan(topology()?, &request)
                .map_err(|e| arm_error(spec, "planning".into(), e))?
        }
        ArmSource::Policy(name) => {
            let policy = match name.as_str() {
                "local" => Policy::Local,
                "spread" => Policy::Spread,
                _ => Policy::None,
            };
            let request = PlanRequest {
                targets: ctx.targets.to_vec(),
                workload: ctx.workload.clone(),
                policy,
            };
            planner::plan(topology()?, &request)
                .map_err(|e| arm_error(spec, "planning".into(), e))?
        }
        ArmSource::Plan(path) => Placement::load(path)
            .map_err(|e| arm_error(spec, format!("reading the plan {}", path.display()), e))?,
        ArmSource::Fio(path) => {
            let jobs = planner::fio::load_job_file(path, &planner::fio::ParseOptions::default())
                .map_err(|e| {
                    arm_error(spec, format!("reading the job file {}", path.display()), e)
                })?;
            warnings.extend(
                jobs.warnings
                    .iter()
                    .map(|w| format!("{}: {w}", path.display())),
            );
            jobs.to_placement(topology()?, ctx.fio_numa_auto)
                .map_err(|e| arm_error(spec, format!("placing {}", path.display()), e))?
        }
        ArmSource::Result { path, arm } => {
            let loaded = report::file::load_arm(path, arm.as_deref())
                .map_err(|e| arm_error(spec, "loading the result".into(), e))?;
            return Ok(Prepared::Loaded(loaded));
        }
    };
    warnings.extend(
        placement
            .warnings
            .iter()
            .map(|w| format!("arm {}: {w}", spec.label)),
    );
    Ok(Prepared::Live {
        placement: Box::new(placement),
        warnings,
    })
}

/// The schedule of the live arms among `prepared` (labelled and described
/// by `specs`), each run with `opts`, `rounds` times; arms on the same
/// targets share one task-run settlement.
pub fn schedule(
    specs: &[ArmSpec],
    prepared: &[Prepared],
    opts: &engine::RunOptions,
    rounds: usize,
) -> Schedule {
    let arms = specs
        .iter()
        .zip(prepared)
        .filter_map(|(spec, p)| match p {
            Prepared::Live { placement, .. } => Some(LiveArm {
                label: spec.label.clone(),
                spec: spec.text.clone(),
                placement: (**placement).clone(),
                opts: opts.clone(),
                settle_group: 0,
            }),
            Prepared::Loaded(_) => None,
        })
        .collect();
    let mut s = Schedule { arms, rounds };
    s.group_by_targets();
    s
}

/// Every arm in `specs` order: a loaded arm as saved (under its spec's
/// label), a live arm with its runs from `live` (the outcome's arms, in the
/// same order). Arms from different files may both number their runs from
/// 1: the later arm's `seq`s are then shifted past the earlier's, so
/// execution order stays unique.
pub fn assemble(specs: &[ArmSpec], prepared: Vec<Prepared>, live: Vec<Arm>) -> Vec<Arm> {
    let mut live = live.into_iter();
    let mut arms: Vec<Arm> = specs
        .iter()
        .zip(prepared)
        .map(|(spec, p)| match p {
            Prepared::Loaded(mut arm) => {
                arm.label = spec.label.clone();
                arm
            }
            Prepared::Live { .. } => live.next().unwrap_or_else(|| Arm {
                label: spec.label.clone(),
                spec: spec.text.clone(),
                runs: Vec::new(),
            }),
        })
        .collect();
    renumber_collisions(&mut arms);
    arms
}

/// Shifts the second arm's `seq`s past the first's where the two collide.
fn renumber_collisions(arms: &mut [Arm]) {
    let [a, b] = arms else { return };
    let collide = b
        .runs
        .iter()
        .any(|rb| a.runs.iter().any(|ra| ra.seq == rb.seq));
    if collide {
        let offset = a.runs.iter().map(|r| r.seq).max().unwrap_or(0);
        for r in &mut b.runs {
            r.seq += offset;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{counted, placement};

    fn record(seq: usize) -> report::RunRecord {
        let total = report::TargetMetrics {
            target: "total".into(),
            iops: 1.0,
            bandwidth_bytes_per_s: 4096.0,
            lat_mean_ns: 1.0,
            lat_p99_ns: 1.0,
            percentiles: vec![],
            per_io: Default::default(),
        };
        report::RunRecord {
            seq,
            started_unix_s: 0,
            targets: vec![],
            total,
            raw: None,
        }
    }

    fn arm(label: &str, seqs: &[usize]) -> Arm {
        Arm {
            label: label.into(),
            spec: format!("result={label}.json"),
            runs: seqs.iter().map(|&seq| record(seq)).collect(),
        }
    }

    #[test]
    fn renumbers_only_colliding_arms() {
        let mut arms = vec![arm("x", &[1, 3]), arm("y", &[2, 4])];
        renumber_collisions(&mut arms);
        assert_eq!(arms[1].runs[0].seq, 2);
        let mut arms = vec![arm("x", &[1, 2]), arm("y", &[1, 2])];
        renumber_collisions(&mut arms);
        let seqs: Vec<usize> = arms[1].runs.iter().map(|r| r.seq).collect();
        assert_eq!(seqs, [3, 4]);
    }

    #[test]
    fn loaded_and_live_arms_come_back_in_a_b_order() {
        let specs = [
            ArmSpec::parse("result=old.json,label=before").unwrap(),
            ArmSpec::parse("policy=local").unwrap(),
        ];
        let live_plan = Prepared::Live {
            placement: Box::new(placement(&["/x".into()], &counted(1), 1)),
            warnings: vec![],
        };
        let prepared = vec![Prepared::Loaded(arm("saved", &[1, 2])), live_plan];
        let s = schedule(&specs, &prepared, &engine::RunOptions::default(), 3);
        assert_eq!((s.arms.len(), s.rounds, s.total_runs()), (1, 3, 3));
        assert_eq!(
            (s.arms[0].label.as_str(), s.arms[0].spec.as_str()),
            ("local", "policy=local")
        );
        let arms = assemble(&specs, prepared, vec![arm("local", &[1, 2, 3])]);
        let labels: Vec<&str> = arms.iter().map(|a| a.label.as_str()).collect();
        assert_eq!(labels, ["before", "local"]);
        let seqs: Vec<usize> = arms[1].runs.iter().map(|r| r.seq).collect();
        assert_eq!(seqs, [3, 4, 5], "shifted past the saved arm's runs");
    }

    #[test]
    fn arms_that_cannot_be_prepared_say_which_and_why() {
        let workload = Workload::default();
        let ctx = ArmContext {
            workload: &workload,
            targets: &[],
            topology: None,
            fio_numa_auto: false,
        };
        let prep = |text: &str| prepare(&ArmSpec::parse(text).unwrap(), &ctx).unwrap_err();
        let e = prep("policy=local").to_string();
        assert!(
            e.contains("policy=local needs the machine's topology"),
            "{e}"
        );
        let e = prep("plan=/nonexistent/p.json");
        assert!(e
            .to_string()
            .starts_with("arm plan=/nonexistent/p.json: reading the plan"));
        let cause = std::error::Error::source(&e).unwrap().to_string();
        assert!(cause.contains("/nonexistent/p.json"), "{cause}");
        let e = prep("result=/nonexistent/r.json");
        let cause = std::error::Error::source(&e).unwrap().to_string();
        assert!(cause.contains("/nonexistent/r.json"), "{cause}");
    }
}
