//! Values given on the command line over a plan or a fio job file, as fio
//! applies its command-line options over a job file: the fields of a
//! [`Workload`] one can set ([`WorkloadField`], by their flag names), and
//! [`Workload::take`], which sets them and says which values changed, for
//! the report's "from the command line over ..." note.
//!
//! One list: the CLI maps each flag to its field, and a test there walks
//! its flags, so a new flag cannot be silently ignored over a plan.

use crate::{Placement, Workload};

/// A workload field the command line may set over a plan or job file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WorkloadField {
    /// `rw`.
    Rw,
    /// `rwmixread`.
    Rwmixread,
    /// `bs` (a size or a range).
    Bs,
    /// `iodepth`.
    Iodepth,
    /// `numjobs`.
    Numjobs,
    /// `runtime`.
    Runtime,
    /// `ramp_time`.
    RampTime,
    /// `size`.
    Size,
    /// `offset`.
    Offset,
    /// `time_based=0`.
    NoTimeBased,
    /// `number_ios`.
    NumberIos,
    /// `rate_iops`.
    RateIops,
    /// `random_distribution`.
    RandomDistribution,
    /// `randseed`.
    Randseed,
    /// `norandommap=0`.
    Randommap,
    /// `direct=0`.
    Buffered,
}

impl WorkloadField {
    /// Its numio flag name (`ramp-time`).
    pub fn name(self) -> &'static str {
        match self {
            Self::Rw => "rw",
            Self::Rwmixread => "rwmixread",
            Self::Bs => "bs",
            Self::Iodepth => "iodepth",
            Self::Numjobs => "numjobs",
            Self::Runtime => "runtime",
            Self::RampTime => "ramp-time",
            Self::Size => "size",
            Self::Offset => "offset",
            Self::NoTimeBased => "no-time-based",
            Self::NumberIos => "number-ios",
            Self::RateIops => "rate-iops",
            Self::RandomDistribution => "random-distribution",
            Self::Randseed => "randseed",
            Self::Randommap => "randommap",
            Self::Buffered => "buffered",
        }
    }

    /// Its value in `w`, as the report shows it.
    pub fn text(self, w: &Workload) -> String {
        let secs = |ns: u64| format!("{}s", ns as f64 / 1e9);
        let opt = |v: Option<u64>| v.map_or("-".to_string(), |v| v.to_string());
        match self {
            Self::Rw => w.rw.fio_name().to_string(),
            Self::Rwmixread => w.rwmixread.to_string(),
            Self::Bs if w.bs_min_bytes == w.bs_max_bytes => w.bs_min_bytes.to_string(),
            Self::Bs => format!("{}-{}", w.bs_min_bytes, w.bs_max_bytes),
            Self::Iodepth => w.iodepth.to_string(),
            Self::Numjobs => w.numjobs.to_string(),
            Self::Runtime => w.runtime_ns.map_or("-".into(), secs),
            Self::RampTime => secs(w.ramp_time_ns),
            Self::Size => opt(w.size_bytes),
            Self::Offset => w.offset_bytes.to_string(),
            Self::NoTimeBased => (!w.time_based).to_string(),
            Self::NumberIos => opt(w.number_ios),
            Self::RateIops => opt(w.rate_iops),
            Self::RandomDistribution => format!("{:?}", w.random_distribution),
            Self::Randseed => w.randseed.to_string(),
            Self::Randommap => (!w.norandommap).to_string(),
            Self::Buffered => (!w.direct).to_string(),
        }
    }

    /// Sets its value in `w` from `from`.
    fn set(self, w: &mut Workload, from: &Workload) {
        match self {
            Self::Rw => w.rw = from.rw,
            Self::Rwmixread => w.rwmixread = from.rwmixread,
            Self::Bs => (w.bs_min_bytes, w.bs_max_bytes) = (from.bs_min_bytes, from.bs_max_bytes),
            Self::Iodepth => w.iodepth = from.iodepth,
            Self::Numjobs => w.numjobs = from.numjobs,
            Self::Runtime => w.runtime_ns = from.runtime_ns,
            Self::RampTime => w.ramp_time_ns = from.ramp_time_ns,
            Self::Size => w.size_bytes = from.size_bytes,
            Self::Offset => w.offset_bytes = from.offset_bytes,
            Self::NoTimeBased => w.time_based = false,
            Self::NumberIos => w.number_ios = from.number_ios,
            Self::RateIops => w.rate_iops = from.rate_iops,
            Self::RandomDistribution => w.random_distribution = from.random_distribution,
            Self::Randseed => w.randseed = from.randseed,
            Self::Randommap => w.norandommap = false,
            Self::Buffered => w.direct = false,
        }
    }
}

impl Workload {
    /// Takes `fields` from `from` (the command line's workload) over this
    /// one (a plan's or job file's); each value that changed, as
    /// `iodepth=4 (was 64)`.
    pub fn take(&mut self, from: &Workload, fields: &[WorkloadField]) -> Vec<String> {
        let mut changed = Vec::new();
        for &f in fields {
            let before = f.text(self);
            f.set(self, from);
            let after = f.text(self);
            if after != before {
                changed.push(format!("{}={after} (was {before})", f.name()));
            }
        }
        changed
    }
}

impl Placement {
    /// Takes `fields` from `from` over every target's workload, with a note
    /// on each target whose values changed (`from the command line over
    /// SOURCE: iodepth=4 (was 64)`); the notes added, with their target's
    /// path.
    pub fn take_workload(
        &mut self,
        from: &Workload,
        fields: &[WorkloadField],
        source: &str,
    ) -> Vec<(String, String)> {
        let mut added = Vec::new();
        for t in &mut self.targets {
            let changed = t.workload.take(from, fields);
            if !changed.is_empty() {
                let note = format!(
                    "from the command line over {source}: {}",
                    changed.join(", ")
                );
                t.notes.push(note.clone());
                added.push((t.path.clone(), note));
            }
        }
        added
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_line_wins_and_says_what_changed() {
        let mut plan = Workload {
            iodepth: 64,
            runtime_ns: Some(5_000_000_000),
            ..Workload::default()
        };
        let cli = Workload {
            iodepth: 4,
            runtime_ns: Some(200_000_000),
            bs_min_bytes: 8192,
            bs_max_bytes: 16384,
            direct: true,
            ..Workload::default()
        };
        let changed = plan.take(
            &cli,
            &[
                WorkloadField::Iodepth,
                WorkloadField::Runtime,
                WorkloadField::Bs,
                WorkloadField::Buffered,
            ],
        );
        assert_eq!(plan.iodepth, 4);
        assert_eq!((plan.bs_min_bytes, plan.bs_max_bytes), (8192, 16384));
        assert!(
            !plan.direct,
            "--buffered sets direct off whatever the flags' workload says"
        );
        assert_eq!(changed[0], "iodepth=4 (was 64)");
        assert_eq!(changed[1], "runtime=0.2s (was 5s)");
        assert!(changed[2].starts_with("bs=8192-16384 (was "), "{changed:?}");
        // A value the plan already has is not reported as changed.
        assert!(plan.take(&cli, &[WorkloadField::Iodepth]).is_empty());
    }

    /// Each target whose values changed gets one note; one already at the
    /// command line's values gets none.
    #[test]
    fn a_placement_notes_only_the_targets_that_changed() {
        let target = |path: &str, iodepth: u32| crate::TargetPlacement {
            path: path.into(),
            workload: Workload {
                iodepth,
                ..Workload::default()
            },
            ..Default::default()
        };
        let mut plan = Placement {
            targets: vec![target("/a", 64), target("/b", 4)],
            ..Default::default()
        };
        let cli = Workload {
            iodepth: 4,
            ..Workload::default()
        };
        let added = plan.take_workload(&cli, &[WorkloadField::Iodepth], "the plan p.json");
        assert_eq!(
            added,
            [(
                "/a".to_string(),
                "from the command line over the plan p.json: iodepth=4 (was 64)".to_string()
            )]
        );
        assert_eq!(plan.targets[0].notes, [added[0].1.clone()]);
        assert!(plan.targets[1].notes.is_empty());
        assert!(plan.targets.iter().all(|t| t.workload.iodepth == 4));
    }
}
