//! A coalescing sweep as its flags describe it, every input checked
//! before anything changes ([`plan`]; each error names the input and the
//! fix): the targets, `--threshold` (`tune::parse_thresholds`), `--time`
//! (`tune::parse_delay_us`), `--devices` ([`parse_devices`]),
//! `--max-latency` (`report::coalesce::LatencyBudget::parse_list`),
//! `--repeat`, a backend that uses the drives' interrupts, a chart's
//! format; the grid they make ([`crate::coalesce::points`]) and its
//! schedule ([`SweepPlan::schedule`]).

use std::num::ParseIntError;
use std::path::{Path, PathBuf};

use engine::{BackendKind, RunOptions};
use planner::Placement;
use report::coalesce::{BudgetError, LatencyBudget};
use tune::TuneError;

use crate::axes::Axis;
use crate::coalesce::{points, Point};
use crate::{LiveArm, Schedule};

/// Why a sweep's flags were refused.
#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    /// No target given.
    #[error("no targets: give the NVMe namespaces to sweep, e.g. numio coalesce sweep /dev/nvme0n1 /dev/nvme1n1 --devices 1,2")]
    NoTargets,
    /// A target given twice.
    #[error("{target} is given twice (targets {first} and {second}): name each namespace once")]
    Twice {
        /// The target.
        target: String,
        /// Its first place, from 1.
        first: usize,
        /// Its second place, from 1.
        second: usize,
    },
    /// A `--devices` value that is not a whole number.
    #[error("--devices {text}: {word} is not a whole number; give counts of drives such as 1,2,4")]
    DevicesNotNumber {
        /// The list as written.
        text: String,
        /// The value.
        word: String,
        /// Why it is not a number.
        source: ParseIntError,
    },
    /// `--devices 0`.
    #[error("--devices {text}: 0 drives run nothing; give counts from 1 to {targets}")]
    DevicesZero {
        /// The list as written.
        text: String,
        /// Targets given.
        targets: usize,
    },
    /// More drives than targets.
    #[error("--devices {text}: {n} drives, but {} targets given ({}); name more targets or drop {n}", .targets.len(), .targets.join(", "))]
    DevicesTooMany {
        /// The list as written.
        text: String,
        /// The count.
        n: usize,
        /// The targets given.
        targets: Vec<String>,
    },
    /// `--repeat 0`.
    #[error("--repeat {repeat}: give 1 or more runs per point")]
    Repeat {
        /// As given.
        repeat: usize,
    },
    /// A backend whose I/O raises no interrupts of the drives' queues.
    #[error("--backend {backend}: {why}, so coalescing changes nothing; use uring (default), sync or passthru")]
    NoQueues {
        /// The backend's name.
        backend: &'static str,
        /// Why coalescing does not touch it.
        why: &'static str,
    },
    /// A chart file of no format numio draws.
    #[error("--chart {}: write a chart to a .svg or .png file (the name says the format)", .path.display())]
    Chart {
        /// The file.
        path: PathBuf,
    },
    /// `--threshold`, `--time` or a list's value.
    #[error(transparent)]
    Tune(#[from] TuneError),
    /// `--max-latency`.
    #[error(transparent)]
    Budget(#[from] BudgetError),
}

/// The flags of a sweep, as given.
#[derive(Debug, Clone)]
pub struct PlanInput<'a> {
    /// The namespaces, in order.
    pub targets: &'a [String],
    /// `--threshold`.
    pub threshold: &'a str,
    /// `--time`.
    pub time: &'a str,
    /// `--devices`; `None`: all the targets at once.
    pub devices: Option<&'a str>,
    /// `--repeat`.
    pub repeat: usize,
    /// `--max-latency`, each as given.
    pub max_latency: &'a [String],
    /// The backend the runs would use.
    pub backend: BackendKind,
    /// `--chart`.
    pub chart: Option<&'a Path>,
}

/// The sweep as the flags describe it, checked.
#[derive(Debug, Clone)]
pub struct SweepPlan {
    /// Thresholds, ascending, 0 (off) among them.
    pub thresholds: Vec<u8>,
    /// Device counts, ascending.
    pub devices: Vec<usize>,
    /// Aggregation time of every threshold above 0, µs.
    pub time_us: u32,
    /// The recommendation's latency budgets.
    pub budgets: Vec<LatencyBudget>,
    /// Every point, threshold fastest.
    pub points: Vec<Point>,
}

impl SweepPlan {
    /// The devices axis of the points (one value per device count), as
    /// `numio sweep` places a devices axis.
    pub fn devices_axis(&self) -> Axis {
        Axis {
            name: "devices".into(),
            values: self.devices.iter().map(usize::to_string).collect(),
        }
    }

    /// Each point's plan: the first `devices` targets, placed as `numio
    /// sweep` places a devices axis (`placing`: `--numa`, `--cpus`) with
    /// the workload flags; `say` hears the placement's warnings once per
    /// device count.
    pub fn placements(
        &self,
        workload: &planner::flags::WorkloadFlags,
        placing: &planner::flags::Placing,
        targets: &[String],
        topo: &topology::Topology,
        say: &mut dyn FnMut(String),
    ) -> Result<Vec<Placement>, crate::sweep::SweepError> {
        use crate::sweep::{point_placement, policy, SweepError};
        let axes = [self.devices_axis()];
        let policy = policy(placing, &axes, targets)?;
        let mut placements = Vec::new();
        for p in &self.points {
            let value = [(0, p.devices.to_string())];
            let placement = point_placement(workload, &axes, &value, targets, topo, &policy)
                .map_err(|e| SweepError::Point {
                    label: p.label(),
                    source: Box::new(e),
                })?;
            if p.threshold == self.thresholds[0] {
                for warn in &placement.warnings {
                    say(format!("devices={}: warning: {warn}", p.devices));
                }
            }
            placements.push(placement);
        }
        Ok(placements)
    }

    /// The sweep's schedule, an arm per point (`placements[i]`: point
    /// `i`'s plan, the first `devices` targets placed as `numio sweep`
    /// places a devices axis), every run measuring the percentiles the
    /// tables and budgets need besides `opts`'; and each point's cores.
    pub fn schedule(
        &self,
        placements: Vec<Placement>,
        mut opts: RunOptions,
        rounds: usize,
    ) -> (Schedule, Vec<usize>) {
        opts.percentiles = report::coalesce::percentiles(&opts.percentiles, &self.budgets);
        let cores = placements
            .iter()
            .map(|p| p.targets.iter().map(|t| t.jobs.len()).sum())
            .collect();
        let arms = self
            .points
            .iter()
            .zip(placements)
            .map(|(p, placement)| LiveArm {
                label: p.label(),
                spec: p.label(),
                placement,
                opts: opts.clone(),
                settle_group: 0,
            })
            .collect();
        let mut schedule = Schedule { arms, rounds };
        schedule.group_by_targets();
        (schedule, cores)
    }
}

/// Checks every flag of `input`, nothing touched; `note` hears what was
/// added (0 to the thresholds).
pub fn plan(input: &PlanInput<'_>, note: &mut dyn FnMut(String)) -> Result<SweepPlan, PlanError> {
    let targets = input.targets;
    if targets.is_empty() {
        return Err(PlanError::NoTargets);
    }
    if let Some((i, t)) = targets
        .iter()
        .enumerate()
        .find(|(i, t)| targets[..*i].contains(t))
    {
        return Err(PlanError::Twice {
            target: t.clone(),
            first: targets.iter().position(|x| x == t).unwrap_or(0) + 1,
            second: i + 1,
        });
    }
    let thresholds = tune::parse_thresholds(input.threshold)?;
    if thresholds.added_off {
        note(format!(
            "--threshold {}: adding 0 (coalescing off), the baseline every recommendation is measured against",
            input.threshold
        ));
    }
    let time_us = tune::parse_delay_us(input.time)?;
    let devices = parse_devices(input.devices, targets)?;
    let budgets = LatencyBudget::parse_list(input.max_latency)?;
    if input.repeat < 1 {
        return Err(PlanError::Repeat {
            repeat: input.repeat,
        });
    }
    check_backend(input.backend)?;
    if let Some(chart) = input.chart {
        let ext = chart.extension().and_then(|e| e.to_str()).unwrap_or("");
        if !ext.eq_ignore_ascii_case("svg") && !ext.eq_ignore_ascii_case("png") {
            return Err(PlanError::Chart {
                path: chart.to_path_buf(),
            });
        }
    }
    Ok(SweepPlan {
        points: points(&thresholds.values, &devices),
        thresholds: thresholds.values,
        devices,
        time_us,
        budgets,
    })
}

/// Refuses a backend whose I/O goes through no interrupt of the drives'
/// PCIe queues.
fn check_backend(backend: BackendKind) -> Result<(), PlanError> {
    let why = match backend {
        BackendKind::Null | BackendKind::Nop | BackendKind::Tcp | BackendKind::Rdma => {
            "it does no I/O through the drives' PCIe queues"
        }
        BackendKind::Vfio => "numio's own driver polls its queues with interrupts off",
        BackendKind::Uring | BackendKind::Sync | BackendKind::Passthru => return Ok(()),
    };
    Err(PlanError::NoQueues {
        backend: backend.name(),
        why,
    })
}

/// `--devices 1,2,4`: drive counts from 1 to the targets given, ascending;
/// none given: all the targets at once.
pub fn parse_devices(text: Option<&str>, targets: &[String]) -> Result<Vec<usize>, PlanError> {
    let Some(text) = text else {
        return Ok(vec![targets.len()]);
    };
    let mut v = tune::setting::parse_list("--devices", text, "1,2,4", |w| {
        let n: usize = w.parse().map_err(|source| PlanError::DevicesNotNumber {
            text: text.to_string(),
            word: w.to_string(),
            source,
        })?;
        if n == 0 {
            return Err(PlanError::DevicesZero {
                text: text.to_string(),
                targets: targets.len(),
            });
        }
        if n > targets.len() {
            return Err(PlanError::DevicesTooMany {
                text: text.to_string(),
                n,
                targets: targets.to_vec(),
            });
        }
        Ok(n)
    })?;
    v.sort_unstable();
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    fn devices(text: Option<&str>, targets: &[String]) -> Result<Vec<usize>, PlanError> {
        parse_devices(text, targets)
    }

    #[test]
    fn devices_count_from_one_to_the_targets() {
        let t = s(&["/dev/a", "/dev/b", "/dev/c", "/dev/d"]);
        assert_eq!(devices(Some("4,1,2"), &t).unwrap(), [1, 2, 4]);
        assert_eq!(devices(None, &t).unwrap(), [4], "all at once by default");
        let err = |d: &str| devices(Some(d), &t[..2]).unwrap_err().to_string();
        assert!(
            err("0,1").contains("0 drives run nothing"),
            "{}",
            err("0,1")
        );
        assert!(
            err("1,4")
                .contains("4 drives, but 2 targets given (/dev/a, /dev/b); name more targets"),
            "{}",
            err("1,4")
        );
        assert!(err("1,1").contains("1 is repeated"));
    }

    fn input<'a>(targets: &'a [String]) -> PlanInput<'a> {
        PlanInput {
            targets,
            threshold: "3,9",
            time: "100us",
            devices: None,
            repeat: 1,
            max_latency: &[],
            backend: BackendKind::Uring,
            chart: None,
        }
    }

    #[test]
    fn a_plan_checks_every_flag_and_says_what_it_added() {
        let t = s(&["/dev/a", "/dev/b"]);
        let mut notes = Vec::new();
        let p = plan(&input(&t), &mut |n| notes.push(n)).unwrap();
        assert_eq!(p.thresholds, [0, 3, 9]);
        assert_eq!(p.devices, [2]);
        assert_eq!(p.points.len(), 3);
        assert_eq!(
            notes,
            ["--threshold 3,9: adding 0 (coalescing off), the baseline every recommendation is measured against"]
        );
        let err = |i: PlanInput<'_>| plan(&i, &mut |_| {}).unwrap_err().to_string();
        let twice = s(&["/dev/a", "/dev/b", "/dev/a"]);
        assert_eq!(
            err(input(&twice)),
            "/dev/a is given twice (targets 1 and 3): name each namespace once"
        );
        assert!(err(input(&[])).starts_with("no targets"));
        let vfio = PlanInput {
            backend: BackendKind::Vfio,
            ..input(&t)
        };
        assert!(err(vfio).starts_with("--backend vfio: numio's own driver polls"));
        let chart = PlanInput {
            chart: Some(Path::new("x.txt")),
            ..input(&t)
        };
        assert!(err(chart).starts_with("--chart x.txt: write a chart"));
        let bad = PlanInput {
            devices: Some("1,x"),
            ..input(&t)
        };
        assert!(err(bad).starts_with("--devices 1,x: x is not a whole number"));
    }

    #[test]
    fn the_schedule_has_an_arm_per_point_and_the_budgets_percentiles() {
        let t = s(&["/dev/a"]);
        let input = PlanInput {
            max_latency: &["p99.9=1ms".to_string()][..],
            ..input(&t)
        };
        let p = plan(&input, &mut |_| {}).unwrap();
        let placement = |jobs: usize| Placement {
            targets: vec![planner::TargetPlacement {
                path: "/dev/a".into(),
                jobs: vec![
                    planner::JobPlacement {
                        cpus: vec![],
                        mem: planner::MemPolicy::Default,
                    };
                    jobs
                ],
                ..Default::default()
            }],
            ..Default::default()
        };
        let opts = RunOptions {
            percentiles: vec![50.0, 99.0],
            ..RunOptions::default()
        };
        let (schedule, cores) = p.schedule(vec![placement(1), placement(2), placement(2)], opts, 3);
        let labels: Vec<&str> = schedule.arms.iter().map(|a| a.label.as_str()).collect();
        assert_eq!(
            labels,
            [
                "threshold=0 devices=1",
                "threshold=3 devices=1",
                "threshold=9 devices=1"
            ]
        );
        assert_eq!(cores, [1, 2, 2]);
        assert_eq!(p.devices_axis().values, ["1"]);
        assert_eq!(schedule.rounds, 3);
        assert_eq!(
            schedule.arms[0].opts.percentiles,
            [50.0, 95.0, 99.0, 99.9, 99.99]
        );
    }

    #[test]
    fn points_run_every_threshold_per_device_count() {
        let p = points(&[0, 3], &[1, 2]);
        let labels: Vec<String> = p.iter().map(Point::label).collect();
        assert_eq!(
            labels,
            [
                "threshold=0 devices=1",
                "threshold=3 devices=1",
                "threshold=0 devices=2",
                "threshold=3 devices=2"
            ]
        );
    }
}
