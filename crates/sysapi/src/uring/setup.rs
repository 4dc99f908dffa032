//! One ring set-up fallback chain for every io_uring numio makes (the
//! engine's `uring`, `nop` and `passthru` backends, the NVMe/TCP target's
//! reactors).
//!
//! The chain asks for the cheapest task-work mode first and drops each
//! flag the kernel refuses, saying so in a note: SINGLE_ISSUER +
//! DEFER_TASKRUN (Linux 6.1), then COOP_TASKRUN + TASKRUN_FLAG (5.19), then
//! no flags; with SQPOLL, SQPOLL + SINGLE_ISSUER, then SQPOLL alone. Flags
//! every attempt needs (IOPOLL, a larger CQ) go into each attempt; the
//! entry sizes (SQE128, CQE32) come with the ring's types.

use std::io;

use io_uring::{cqueue, squeue, Builder, IoUring};

/// Where the task-run part of the chain starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskRun {
    /// SINGLE_ISSUER + DEFER_TASKRUN, then COOP_TASKRUN + TASKRUN_FLAG, then
    /// no flags.
    Defer,
    /// COOP_TASKRUN + TASKRUN_FLAG, then no flags.
    Coop,
    /// No task-run flags.
    Plain,
}

/// The ring to build.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RingSpec<'a> {
    /// Submission queue entries (at least 1; the kernel rounds up to a
    /// power of two).
    pub entries: u32,
    /// Where the task-run chain starts (ignored with SQPOLL).
    pub taskrun: TaskRun,
    /// A kernel submission thread (SQPOLL) with this idle time.
    pub sqpoll_idle_ms: Option<u32>,
    /// Completion polling (IOPOLL), in every attempt.
    pub iopoll: bool,
    /// Completion queue entries, when not the kernel's default (twice the
    /// submission queue).
    pub cq_entries: Option<u32>,
    /// Prefixes the notes in parentheses (e.g. "SQE128+CQE32"); may be empty.
    pub label: &'a str,
}

impl RingSpec<'_> {
    /// A ring of `entries` starting the chain at DEFER_TASKRUN, without
    /// SQPOLL, IOPOLL or a CQ size of its own.
    pub fn new(entries: u32) -> RingSpec<'static> {
        RingSpec {
            entries,
            taskrun: TaskRun::Defer,
            sqpoll_idle_ms: None,
            iopoll: false,
            cq_entries: None,
            label: "",
        }
    }
}

/// A ring, the set-up flags it was granted and the fallbacks taken.
pub struct BuiltRing<S: squeue::EntryMarker, C: cqueue::EntryMarker> {
    /// The ring.
    pub ring: IoUring<S, C>,
    /// The flags granted, one name each (`SINGLE_ISSUER`, `DEFER_TASKRUN`,
    /// `IOPOLL`, ...); empty for a ring with none.
    pub features: Vec<String>,
    /// One note per refused attempt, in words.
    pub notes: Vec<String>,
}

impl<S: squeue::EntryMarker, C: cqueue::EntryMarker> std::fmt::Debug for BuiltRing<S, C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BuiltRing")
            .field("features", &self.features)
            .field("notes", &self.notes)
            .finish_non_exhaustive()
    }
}

/// One attempt of the chain: the names of its flags and how to set them.
struct Attempt<S: squeue::EntryMarker, C: cqueue::EntryMarker> {
    flags: &'static [&'static str],
    apply: fn(&mut Builder<S, C>),
}

/// The attempts of `spec`'s chain, from where it starts.
fn attempts<S, C>(spec: &RingSpec<'_>) -> Vec<Attempt<S, C>>
where
    S: squeue::EntryMarker,
    C: cqueue::EntryMarker,
{
    if spec.sqpoll_idle_ms.is_some() {
        return vec![
            Attempt {
                flags: &["SQPOLL", "SINGLE_ISSUER"],
                apply: |b| {
                    b.setup_single_issuer();
                },
            },
            Attempt {
                flags: &["SQPOLL"],
                apply: |_| {},
            },
        ];
    }
    let all = vec![
        Attempt {
            flags: &["SINGLE_ISSUER", "DEFER_TASKRUN"],
            apply: |b: &mut Builder<S, C>| {
                b.setup_single_issuer().setup_defer_taskrun();
            },
        },
        Attempt {
            flags: &["COOP_TASKRUN", "TASKRUN_FLAG"],
            apply: |b| {
                b.setup_coop_taskrun().setup_taskrun_flag();
            },
        },
        Attempt {
            flags: &[],
            apply: |_| {},
        },
    ];
    let first = match spec.taskrun {
        TaskRun::Defer => 0,
        TaskRun::Coop => 1,
        TaskRun::Plain => 2,
    };
    all.into_iter().skip(first).collect()
}

/// Builds the ring `spec` asks for with the best set-up the kernel grants;
/// the error of the last attempt when it grants none.
pub fn build_ring<S, C>(spec: &RingSpec<'_>) -> io::Result<BuiltRing<S, C>>
where
    S: squeue::EntryMarker,
    C: cqueue::EntryMarker,
{
    let mut notes = Vec::new();
    let mut last_err = None;
    for attempt in attempts::<S, C>(spec) {
        let mut b = IoUring::<S, C>::builder();
        (attempt.apply)(&mut b);
        if let Some(idle_ms) = spec.sqpoll_idle_ms {
            b.setup_sqpoll(idle_ms);
        }
        if spec.iopoll {
            b.setup_iopoll();
        }
        if let Some(cq) = spec.cq_entries {
            b.setup_cqsize(cq);
        }
        match b.build(spec.entries.max(1)) {
            Ok(ring) => {
                let mut features: Vec<String> =
                    attempt.flags.iter().map(|s| s.to_string()).collect();
                if spec.iopoll {
                    features.push("IOPOLL".into());
                }
                return Ok(BuiltRing {
                    ring,
                    features,
                    notes,
                });
            }
            Err(e) => {
                notes.push(refused(spec.label, attempt.flags, &e));
                last_err = Some(e);
            }
        }
    }
    Err(last_err.unwrap_or_else(|| io::Error::from(io::ErrorKind::InvalidInput)))
}

/// The note for an attempt the kernel refused.
fn refused(label: &str, flags: &[&str], e: &io::Error) -> String {
    let what = if flags.is_empty() {
        "no set-up flags".to_string()
    } else {
        flags.join("+")
    };
    let label = if label.is_empty() {
        String::new()
    } else {
        format!(" ({label})")
    };
    format!("io_uring set-up{label} with {what} refused ({e}); falling back")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_chain_starts_where_asked() {
        let names = |spec: RingSpec<'_>| -> Vec<String> {
            attempts::<squeue::Entry, cqueue::Entry>(&spec)
                .iter()
                .map(|a| a.flags.join("+"))
                .collect()
        };
        let defer = RingSpec::new(8);
        assert_eq!(
            names(defer),
            [
                "SINGLE_ISSUER+DEFER_TASKRUN",
                "COOP_TASKRUN+TASKRUN_FLAG",
                ""
            ]
        );
        let coop = RingSpec {
            taskrun: TaskRun::Coop,
            ..defer
        };
        assert_eq!(names(coop), ["COOP_TASKRUN+TASKRUN_FLAG", ""]);
        let plain = RingSpec {
            taskrun: TaskRun::Plain,
            ..defer
        };
        assert_eq!(names(plain), [""]);
        let sqpoll = RingSpec {
            sqpoll_idle_ms: Some(10),
            taskrun: TaskRun::Coop,
            ..defer
        };
        assert_eq!(names(sqpoll), ["SQPOLL+SINGLE_ISSUER", "SQPOLL"]);
    }

    #[test]
    fn refusals_read_as_before() {
        let e = io::Error::from_raw_os_error(22);
        assert_eq!(
            refused("SQE128+CQE32", &["SINGLE_ISSUER", "DEFER_TASKRUN"], &e),
            format!(
                "io_uring set-up (SQE128+CQE32) with SINGLE_ISSUER+DEFER_TASKRUN refused ({e}); falling back"
            )
        );
        assert!(refused("", &[], &e).starts_with("io_uring set-up with no set-up flags refused"));
    }

    // Whatever this kernel grants, a ring comes back with its flags named,
    // and a plain ring carries no task-run flag.
    #[test]
    fn builds_a_ring_and_names_its_flags() {
        let Ok(b) = build_ring::<squeue::Entry, cqueue::Entry>(&RingSpec::new(4)) else {
            eprintln!("skipping: no io_uring here");
            return;
        };
        assert!(b.ring.params().sq_entries() >= 4);
        assert_eq!(b.notes.len(), 3 - attempts_left(&b.features), "{b:?}");
        let plain = RingSpec {
            taskrun: TaskRun::Plain,
            cq_entries: Some(64),
            ..RingSpec::new(4)
        };
        let b = build_ring::<squeue::Entry, cqueue::Entry>(&plain).expect("a plain ring");
        assert!(b.features.is_empty() && b.notes.is_empty(), "{b:?}");
        assert_eq!(b.ring.params().cq_entries(), 64);
    }

    /// How many attempts of the DEFER chain were left when `features` won.
    fn attempts_left(features: &[String]) -> usize {
        match features.first().map(String::as_str) {
            Some("SINGLE_ISSUER") => 3,
            Some("COOP_TASKRUN") => 2,
            _ => 1,
        }
    }
}
