//! The live view of a session: what `numio bench`, `compare` and `sweep`
//! show on stderr while one runs, as lines the caller writes ([`Out`]): a
//! line per run of a repeat or comparison, the line that says set-up is
//! done and the measured time starts (tests wait for it), the live
//! progress line (redrawn in place on a terminal, a line a second
//! elsewhere) and the task-run settlement.

use planner::fio::units::format_time;

use crate::{Event, RunInfo};
use report::format::{bandwidth, latency, si};

/// How live progress shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProgressMode {
    /// Not at all.
    Off,
    /// One line redrawn in place (a terminal).
    Redraw,
    /// A line per second of the run (a log or a pipe).
    Lines,
}

/// What kind of session the runs belong to (it decides the wording).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Runs {
    /// `numio bench`: one run (or one per stonewall group).
    Single,
    /// `numio bench --repeat N`.
    Repeat,
    /// `numio compare`: the live arms' labels, by schedule index.
    Compare {
        /// Labels of the live arms.
        labels: Vec<String>,
        /// Runs of each arm.
        rounds: usize,
    },
    /// `numio sweep`: the points' labels, by schedule index.
    Sweep {
        /// Labels of the points.
        labels: Vec<String>,
        /// Runs of each point.
        rounds: usize,
    },
}

/// What to write for an event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Out {
    /// A line (after clearing a redrawn one).
    Line(String),
    /// The live line, redrawn in place.
    Redraw(String),
    /// Clear the redrawn line.
    Clear,
}

/// Turns session events into lines for stderr.
#[derive(Debug)]
pub struct Display {
    progress: ProgressMode,
    runs: Runs,
    /// A redrawn progress line is on the screen.
    drawn: bool,
    /// Elapsed time of the run at which the next progress line is due.
    next_line_ns: u64,
    /// A sweep's clock, for its ETA.
    clock: SweepClock,
}

/// Where a sweep stands in time: when it started, when its last run
/// ended, how many ended, and the planned length of one run.
#[derive(Debug, Clone)]
struct SweepClock {
    started: std::time::Instant,
    last_end_ns: u64,
    ended: usize,
    run: RunInfo,
    planned_run_ns: Option<u64>,
}

/// Time left in a sweep of `total` runs, `elapsed_ns` in, of which `ended`
/// ended by `last_end_ns`: the mean wall time of the ended runs (set-up
/// included) times the runs left, less the time the current one has run;
/// before any run ended, `planned_run_ns` per run. `None`: no estimate.
pub fn sweep_eta_ns(
    elapsed_ns: u64,
    last_end_ns: u64,
    ended: usize,
    total: usize,
    planned_run_ns: Option<u64>,
) -> Option<u64> {
    let left = total.saturating_sub(ended) as u64;
    let per_run = match ended {
        0 => planned_run_ns?,
        n => last_end_ns / n as u64,
    };
    Some((per_run * left).saturating_sub(elapsed_ns.saturating_sub(last_end_ns)))
}

/// A duration as `1h02m`, `3m05s` or `12s`.
pub fn short_duration(ns: u64) -> String {
    let s = ns.div_ceil(1_000_000_000);
    match s {
        0..60 => format!("{s}s"),
        60..3600 => format!("{}m{:02}s", s / 60, s % 60),
        _ => format!("{}h{:02}m", s / 3600, s % 3600 / 60),
    }
}

/// The live status line for snapshot `s` (rates over each worker's last
/// publish interval, so ramp and tail effects show).
pub fn progress_line(s: &engine::ProgressSnapshot) -> String {
    let elapsed = s.elapsed_ns as f64 / 1e9;
    let time = match s.planned_ns {
        Some(p) => format!(
            "{elapsed:5.1}s / {:.1}s, {:.1}s left",
            p as f64 / 1e9,
            (p as f64 / 1e9 - elapsed).max(0.0)
        ),
        None => format!("{elapsed:5.1}s"),
    };
    let phase = if s.measuring { "" } else { " (ramp)" };
    format!(
        "[{time}]{phase} {} IOPS  {}  p99 {}  ({} running)",
        si(s.iops),
        bandwidth(s.bytes_per_s),
        latency(s.lat_p99_ns as f64),
        s.running_workers
    )
}

/// `numio: set-up done; …`: the workers passed the start barrier.
pub fn measuring_line(ramp_ns: u64, runtime_ns: Option<u64>, may_end_early: bool) -> String {
    let measure = match (runtime_ns, may_end_early) {
        (Some(r), false) => format!("measuring for {}", format_time(r)),
        (Some(r), true) => format!(
            "measuring for up to {} (or until the size or I/O count is done)",
            format_time(r)
        ),
        (None, _) => "measuring until the size or I/O count is done".to_string(),
    };
    if ramp_ns > 0 {
        format!(
            "numio: set-up done; {} ramp, then {measure}",
            format_time(ramp_ns)
        )
    } else {
        format!("numio: set-up done; {measure}")
    }
}

impl Display {
    /// A display of `runs` with progress shown as `progress` says.
    pub fn new(progress: ProgressMode, runs: Runs) -> Display {
        Display {
            progress,
            runs,
            drawn: false,
            next_line_ns: 0,
            clock: SweepClock {
                started: std::time::Instant::now(),
                last_end_ns: 0,
                ended: 0,
                run: RunInfo::SINGLE,
                planned_run_ns: None,
            },
        }
    }

    /// The ETA of the whole sweep now, as text.
    fn sweep_eta(&self) -> String {
        let c = &self.clock;
        let now = c.started.elapsed().as_nanos() as u64;
        sweep_eta_ns(now, c.last_end_ns, c.ended, c.run.total, c.planned_run_ns)
            .map_or("?".to_string(), short_duration)
    }

    /// `[jobs=4, repeat 1 of 3, sweep ETA 1m10s] ` before a sweep's progress line.
    fn sweep_prefix(&self) -> String {
        match &self.runs {
            Runs::Sweep { labels, rounds } => format!(
                "[{}, repeat {} of {rounds}, sweep ETA {}] ",
                self.label(labels, self.clock.run.arm),
                self.clock.run.round + 1,
                self.sweep_eta()
            ),
            _ => String::new(),
        }
    }

    /// What one event shows, if anything.
    pub fn event(&mut self, e: &Event<'_>) -> Option<Out> {
        match *e {
            Event::Starting(run) => {
                self.clock.run = run;
                self.run_line(run).map(Out::Line)
            }
            Event::Measuring {
                ramp_ns,
                runtime_ns,
                may_end_early,
                metrics,
                ..
            } => {
                self.next_line_ns = 0;
                self.clock.planned_run_ns = runtime_ns.map(|r| r + ramp_ns);
                let mut line = measuring_line(ramp_ns, runtime_ns, may_end_early);
                if let Some(addr) = metrics {
                    line.push_str(&format!("; live metrics at http://{addr}/metrics"));
                }
                Some(Out::Line(line))
            }
            Event::Progress { snapshot, .. } => self.progress(snapshot),
            Event::Ended(_) => {
                self.clock.ended += 1;
                self.clock.last_end_ns = self.clock.started.elapsed().as_nanos() as u64;
                std::mem::take(&mut self.drawn).then_some(Out::Clear)
            }
            Event::Settled { run, mode, arms } => {
                Some(Out::Line(self.settled_line(run, mode, arms)))
            }
        }
    }

    fn progress(&mut self, s: &engine::ProgressSnapshot) -> Option<Out> {
        match self.progress {
            ProgressMode::Off => None,
            ProgressMode::Redraw => {
                self.drawn = true;
                Some(Out::Redraw(format!(
                    "{}{}",
                    self.sweep_prefix(),
                    progress_line(s)
                )))
            }
            ProgressMode::Lines if s.elapsed_ns >= self.next_line_ns => {
                self.next_line_ns = (s.elapsed_ns / 1_000_000_000 + 1) * 1_000_000_000;
                Some(Out::Line(format!(
                    "{}{}",
                    self.sweep_prefix(),
                    progress_line(s)
                )))
            }
            ProgressMode::Lines => None,
        }
    }

    /// The line that opens a run of a repeat or comparison.
    fn run_line(&self, run: RunInfo) -> Option<String> {
        match &self.runs {
            Runs::Single => None,
            Runs::Repeat => {
                (run.total > 1).then(|| format!("numio: run {} of {}", run.seq, run.total))
            }
            Runs::Compare { labels, rounds } => Some(format!(
                "numio: run {} of {}: {} (round {} of {rounds})",
                run.seq,
                run.total,
                self.label(labels, run.arm),
                run.round + 1
            )),
            Runs::Sweep { labels, rounds } => Some(format!(
                "numio: sweep run {} of {}: point {} ({} of {}), repeat {} of {rounds}; sweep ETA {}",
                run.seq,
                run.total,
                self.label(labels, run.arm),
                run.arm + 1,
                labels.len(),
                run.round + 1,
                self.sweep_eta()
            )),
        }
    }

    fn label<'a>(&self, labels: &'a [String], arm: usize) -> &'a str {
        labels.get(arm).map_or("?", String::as_str)
    }

    fn settled_line(&self, run: RunInfo, mode: engine::UringSetup, arms: &[usize]) -> String {
        let later = match &self.runs {
            Runs::Compare { labels, .. } if arms.len() == 1 => {
                format!("the later runs of arm {}", self.label(labels, arms[0]))
            }
            Runs::Compare { labels, .. } if arms.len() == labels.len() && arms.len() == 2 => {
                "the later runs of both arms".to_string()
            }
            Runs::Compare { labels, .. } | Runs::Sweep { labels, .. } => {
                let names: Vec<&str> = arms.iter().map(|&a| self.label(labels, a)).collect();
                format!("the later runs of arms {}", names.join(", "))
            }
            _ => format!("runs {}-{}", run.seq + 1, run.total),
        };
        format!(
            "numio: run {}'s task-run trial kept {}; {later} use it without a trial \
             (--uring-setup defer or coop fixes the mode)",
            run.seq,
            mode.taskrun_flag().unwrap_or("?")
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use engine::UringSetup;

    #[test]
    fn the_measuring_line_says_what_follows() {
        let s = 1_000_000_000;
        assert_eq!(
            measuring_line(0, Some(30 * s), false),
            "numio: set-up done; measuring for 30s"
        );
        assert_eq!(
            measuring_line(2 * s, Some(500_000_000), false),
            "numio: set-up done; 2s ramp, then measuring for 500ms"
        );
        assert!(measuring_line(0, Some(s), true).contains("up to 1s (or until the size"));
        assert!(measuring_line(0, None, true)
            .ends_with("measuring until the size or I/O count is done"));
    }

    fn run(seq: usize, total: usize, arm: usize, round: usize) -> RunInfo {
        RunInfo {
            seq,
            total,
            arm,
            round,
        }
    }

    #[test]
    fn runs_and_settlements_are_worded_per_session() {
        let repeat = Display::new(ProgressMode::Off, Runs::Repeat);
        assert_eq!(
            repeat.run_line(run(2, 5, 0, 1)).unwrap(),
            "numio: run 2 of 5"
        );
        assert_eq!(repeat.run_line(run(1, 1, 0, 0)), None);
        assert_eq!(
            repeat.settled_line(run(1, 3, 0, 0), UringSetup::CoopTaskrun, &[0]),
            "numio: run 1's task-run trial kept COOP_TASKRUN; runs 2-3 use it without a trial (--uring-setup defer or coop fixes the mode)"
        );
        let labels = vec!["local".to_string(), "spread".to_string()];
        let compare = Display::new(ProgressMode::Off, Runs::Compare { labels, rounds: 5 });
        assert_eq!(
            compare.run_line(run(4, 10, 1, 1)).unwrap(),
            "numio: run 4 of 10: spread (round 2 of 5)"
        );
        let both = compare.settled_line(run(1, 10, 0, 0), UringSetup::DeferTaskrun, &[0, 1]);
        assert!(
            both.contains("kept DEFER_TASKRUN; the later runs of both arms use it"),
            "{both}"
        );
        let one = compare.settled_line(run(2, 10, 1, 0), UringSetup::DeferTaskrun, &[1]);
        assert!(one.contains("the later runs of arm spread use it"), "{one}");
        assert_eq!(
            Display::new(ProgressMode::Off, Runs::Single).run_line(run(1, 2, 0, 0)),
            None
        );
    }

    #[test]
    fn a_sweep_names_its_point_and_repeat_and_the_eta_of_the_whole_sweep() {
        let s = 1_000_000_000;
        // Before any run ended: the planned run length times the runs left.
        assert_eq!(sweep_eta_ns(0, 0, 0, 4, Some(2 * s)), Some(8 * s));
        assert_eq!(sweep_eta_ns(0, 0, 0, 4, None), None);
        // Two runs took 6 s: 3 s each, two left, 1 s into the third.
        assert_eq!(sweep_eta_ns(7 * s, 6 * s, 2, 4, Some(2 * s)), Some(5 * s));
        assert_eq!(sweep_eta_ns(9 * s, 9 * s, 4, 4, None), Some(0));
        assert_eq!(short_duration(65 * s), "1m05s");
        assert_eq!(short_duration(3 * s / 2), "2s");
        assert_eq!(short_duration(3700 * s), "1h01m");
        let labels = vec!["jobs=1".to_string(), "jobs=2".to_string()];
        let mut d = Display::new(ProgressMode::Off, Runs::Sweep { labels, rounds: 3 });
        d.clock.run = run(5, 6, 1, 2);
        d.clock.planned_run_ns = Some(s);
        let line = d.run_line(run(5, 6, 1, 2)).unwrap();
        assert!(
            line.starts_with(
                "numio: sweep run 5 of 6: point jobs=2 (2 of 2), repeat 3 of 3; sweep ETA "
            ),
            "{line}"
        );
        assert!(
            d.sweep_prefix()
                .starts_with("[jobs=2, repeat 3 of 3, sweep ETA "),
            "{}",
            d.sweep_prefix()
        );
    }

    #[test]
    fn progress_line_shows_the_snapshot() {
        let s = engine::ProgressSnapshot {
            elapsed_ns: 2_000_000_000,
            planned_ns: Some(10_000_000_000),
            measuring: true,
            ops: 3000,
            bytes: 12_288_000,
            lat_p99_ns: 5000,
            iops: 2000.0,
            bytes_per_s: 2000.0 * 4096.0,
            running_workers: 1,
            metrics_addr: None,
        };
        let line = progress_line(&s);
        assert!(line.contains("2.0k IOPS"), "{line}");
        assert!(line.contains("7.8 MiB/s"), "{line}");
        assert!(line.contains("8.0s left"), "{line}");
        assert!(line.contains("p99 5.0µs"), "{line}");
        let ramp = progress_line(&engine::ProgressSnapshot {
            measuring: false,
            ..s
        });
        assert!(ramp.contains("(ramp)"), "{ramp}");
    }
}
