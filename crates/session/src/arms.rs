//! The arms of a comparison: from what the user wrote (`report::arm::ArmSpec`:
//! `policy=`, `plan=`, `fio=`, `result=`) to a plan that runs live or to
//! runs loaded from a result file ([`prepare`]; every arm of a comparison,
//! saved ones first: [`load_saved`], [`prepare_all`]); the schedule of the
//! live ones ([`schedule`]); and both arms back in A, B order once the
//! live ones ran ([`assemble`]).

use std::path::Path;

use planner::{Placement, PlanRequest, Policy, TargetSpec, Workload};
use report::arm::{distinct_labels, ArmSource, ArmSpec};
use report::Arm;
use topology::Topology;

use crate::backend_arms::BackendArmError;
use crate::schedule::{BoxError, LiveArm, Schedule};
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
            // report::arm::POLICIES admits only the named policies.
            let policy = Policy::named(name).unwrap_or(Policy::None);
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

/// What preparing every arm of a comparison takes besides the arms.
#[derive(Debug, Clone, Copy)]
pub struct Inputs<'a> {
    /// Workload of `policy=` and `backend=` arms.
    pub workload: &'a Workload,
    /// Targets of `policy=` arms (chosen as bench chooses them, when one
    /// needs them: [`needs_targets`]); `backend=` arms reach the same
    /// drive each their own way.
    pub targets: &'a [String],
    /// The machine's topology; `None` when discovery failed.
    pub topology: Option<&'a Topology>,
    /// `fio=` arms: place jobs without cpus_allowed / numa_cpu_nodes locally.
    pub fio_numa_auto: bool,
    /// The workload flags given on the command line, by name.
    pub given_flags: &'a [&'static str],
}

/// The command line's workload flags applied over a placement ([`Hooks`]):
/// the notes added, each with its target's path.
pub type Over<'a> = dyn FnMut(&mut Placement, &str) -> Result<Vec<(String, String)>, BoxError> + 'a;

/// The caller's part in preparing the arms.
pub struct Hooks<'a> {
    /// Applies the command line's workload flags over a `plan=` or `fio=`
    /// arm's placement, as bench applies them over a plan or job file
    /// (fio's rule: the command line wins); `from` names the file. The
    /// notes added, each with its target's path.
    pub over: &'a mut Over<'a>,
    /// Told each warning for the user, as it comes.
    pub warn: &'a mut dyn FnMut(&str),
}

/// Whether some arm plans live on the targets (`policy=`, `backend=`).
pub fn needs_targets(specs: &[ArmSpec]) -> bool {
    specs
        .iter()
        .any(|s| matches!(s.source, ArmSource::Policy(_) | ArmSource::Backend(_)))
}

/// The `result=` arms, read before anything is planned (or a default
/// target made), so that a bad file fails first.
pub fn load_saved(specs: &[ArmSpec], workload: &Workload) -> Result<Vec<Prepared>, SessionError> {
    let nothing = ArmContext {
        workload,
        targets: &[],
        topology: None,
        fio_numa_auto: false,
    };
    specs
        .iter()
        .filter(|s| !s.is_live())
        .map(|s| prepare(s, &nothing))
        .collect()
}

/// Every arm ready, in `specs` order: the `saved` ones ([`load_saved`]) in
/// their places, the live ones planned (a `backend=` arm on the drive as
/// its backend reaches it), the command line's workload flags applied
/// over each plan or job file; each warning told as it comes. A loaded
/// arm without a given label takes its file's, and labels are made
/// distinct.
pub fn prepare_all(
    specs: &mut [ArmSpec],
    saved: Vec<Prepared>,
    inputs: &Inputs<'_>,
    mut hooks: Hooks<'_>,
) -> Result<Vec<Prepared>, SessionError> {
    let ctx = ArmContext {
        workload: inputs.workload,
        targets: &crate::targets::target_specs(Path::new("/"), inputs.targets),
        topology: inputs.topology,
        fio_numa_auto: inputs.fio_numa_auto,
    };
    let mut saved = saved.into_iter();
    let mut prepared = Vec::with_capacity(specs.len());
    for spec in specs.iter() {
        let mut p = if let ArmSource::Backend(name) = &spec.source {
            // The drive as this backend reaches it.
            let topo = inputs.topology.ok_or(BackendArmError::NoTopology)?;
            let mapped = inputs
                .targets
                .iter()
                .map(|t| crate::backend_arms::arm_target(t, name, topo))
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| in_arm(spec, e.into()))?;
            let arm_ctx = ArmContext {
                targets: &crate::targets::target_specs(Path::new("/"), &mapped),
                ..ctx
            };
            prepare(spec, &arm_ctx)?
        } else if spec.is_live() {
            prepare(spec, &ctx)?
        } else {
            saved.next().expect("a loaded arm per result= arm")
        };
        over_arm(spec, &mut p, inputs.given_flags, &mut hooks)?;
        if let Prepared::Live { warnings, .. } = &p {
            warnings.iter().for_each(|w| (hooks.warn)(w));
        }
        prepared.push(p);
    }
    for (spec, p) in specs.iter_mut().zip(&prepared) {
        if let (Prepared::Loaded(arm), false) = (p, spec.label_given) {
            spec.label = arm.label.clone();
        }
    }
    for i in 0..specs.len() {
        for j in i + 1..specs.len() {
            let (head, tail) = specs.split_at_mut(j);
            distinct_labels(&mut head[i].label, &mut tail[0].label);
        }
    }
    Ok(prepared)
}

fn in_arm(spec: &ArmSpec, source: BoxError) -> SessionError {
    SessionError::InArm {
        arm: spec.text.clone(),
        source,
    }
}

/// Applies the workload flags over a `plan=` or `fio=` arm through
/// `over`, with a line saying which values changed; a `result=` arm's
/// runs are measured already, so flags given with one are named as not
/// applying to it, never silently dropped. `policy=` and `backend=` arms
/// are planned from the flags.
fn over_arm(
    spec: &ArmSpec,
    p: &mut Prepared,
    given: &[&str],
    hooks: &mut Hooks<'_>,
) -> Result<(), SessionError> {
    let from = match &spec.source {
        ArmSource::Plan(path) => format!("the plan {}", path.display()),
        ArmSource::Fio(path) => format!("the job file {}", path.display()),
        ArmSource::Result { path, .. } => {
            if !given.is_empty() {
                (hooks.warn)(&format!(
                    "arm {}: its runs were measured already ({}); the command line's --{} does not change them",
                    spec.label,
                    path.display(),
                    given.join(", --")
                ));
            }
            return Ok(());
        }
        _ => return Ok(()),
    };
    let Prepared::Live {
        placement,
        warnings,
    } = p
    else {
        return Ok(());
    };
    let added = (hooks.over)(placement, &from).map_err(|e| in_arm(spec, e))?;
    for (path, note) in added {
        warnings.push(format!("arm {}: {path}: {note}", spec.label));
    }
    Ok(())
}

/// The schedule of the live arms among `prepared` (labelled and described
/// by `specs`), each run with `opts` (a `backend=` arm through its
/// backend), `rounds` times; arms on the same targets share one task-run
/// settlement.
pub fn schedule(
    specs: &[ArmSpec],
    prepared: &[Prepared],
    opts: &engine::RunOptions,
    rounds: usize,
) -> Result<Schedule, SessionError> {
    let mut arms = Vec::new();
    for (spec, p) in specs.iter().zip(prepared) {
        let Prepared::Live { placement, .. } = p else {
            continue;
        };
        let mut opts = opts.clone();
        if let ArmSource::Backend(name) = &spec.source {
            opts.backend = crate::backend_arms::kind(name)?;
        }
        arms.push(LiveArm {
            label: spec.label.clone(),
            spec: spec.text.clone(),
            placement: (**placement).clone(),
            opts,
            settle_group: 0,
        });
    }
    let mut s = Schedule { arms, rounds };
    s.group_by_targets();
    Ok(s)
}

/// What the arms of a comparison ran to ([`run_live`]).
#[derive(Debug, Clone)]
pub struct Compared {
    /// Every arm in `specs` order ([`assemble`]); `None` when an
    /// interrupt came before every arm had a completed run: nothing to
    /// compare.
    pub arms: Option<Vec<Arm>>,
    /// Lines for the user: where an interrupt stopped the runs.
    pub notes: Vec<String>,
}

impl Compared {
    /// `arms` with `notes`, unless `interrupt` is set and an arm has no run.
    pub fn new(
        arms: Vec<Arm>,
        mut notes: Vec<String>,
        interrupt: &std::sync::atomic::AtomicBool,
    ) -> Compared {
        let stopped = interrupt.load(std::sync::atomic::Ordering::Relaxed);
        if stopped && arms.iter().any(|a| a.runs.is_empty()) {
            notes.push(
                "interrupted before both arms had a completed run: nothing to compare".into(),
            );
            return Compared { arms: None, notes };
        }
        Compared {
            arms: Some(arms),
            notes,
        }
    }
}

/// Runs the live arms among `prepared` (see [`schedule`]) through
/// `runner`, each event to `observer`, and puts every arm back in `specs`
/// order; a run an interrupt cut short is left out.
pub fn run_live(
    specs: &[ArmSpec],
    prepared: Vec<Prepared>,
    opts: &engine::RunOptions,
    rounds: usize,
    runner: &mut dyn crate::Runner,
    interrupt: &std::sync::atomic::AtomicBool,
    observer: &mut dyn FnMut(&crate::Event<'_>),
) -> Result<Compared, SessionError> {
    let schedule = schedule(specs, &prepared, opts, rounds)?;
    let (mut live, mut notes) = (Vec::new(), Vec::new());
    if !schedule.arms.is_empty() {
        let outcome = schedule.run_with(runner, interrupt, observer)?;
        if let Some(cut) = &outcome.interrupted {
            notes.push(cut.note(cut.run.total, outcome.completed(), "comparing"));
        }
        live = outcome.arms;
    }
    let arms = assemble(specs, prepared, live);
    Ok(Compared::new(arms, notes, interrupt))
}

/// Two saved sweeps (`result=A.json`, `result=B.json`, no `arm=`),
/// compared point by point, with their labels; `None` when the arms are
/// not two sweep files.
pub fn saved_sweeps(
    specs: &[ArmSpec],
) -> Result<Option<(String, String, Vec<report::sweep::compare::PointComparison>)>, SessionError> {
    if specs.len() != 2 {
        return Ok(None);
    }
    let mut sets = Vec::new();
    for spec in specs {
        let ArmSource::Result { path, arm: None } = &spec.source else {
            return Ok(None);
        };
        let set = report::file::load(path).map_err(SessionError::Saved)?;
        if set.kind != report::SetKind::Sweep {
            return Ok(None);
        }
        sets.push(set);
    }
    let [a, b] = <[_; 2]>::try_from(sets).expect("two arms");
    let points = report::sweep::compare::compare_points(&a, &b);
    if points.is_empty() {
        return Err(SessionError::NoSharedPoint {
            a: specs[0].text.clone(),
            b: specs[1].text.clone(),
        });
    }
    Ok(Some((
        specs[0].label.clone(),
        specs[1].label.clone(),
        points,
    )))
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
        let s = schedule(&specs, &prepared, &engine::RunOptions::default(), 3).unwrap();
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
