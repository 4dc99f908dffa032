//! User-space multipath without I/O: which of several paths (connections
//! to controllers of one namespace) an I/O takes, and what a completion's
//! status says about its path.
//!
//! A path is usable while it is connected and its ANA group is optimized
//! or non-optimized; optimized paths are chosen before non-optimized ones,
//! and inaccessible, persistent-loss and change paths never. Among the
//! usable paths of the best ANA class the policy picks, named as the Linux
//! kernel names its `iopolicy`:
//! - `numa`: the first path local to the worker's node, else the first. A
//!   path of no node (a loopback or virtual interface, the kernel's -1)
//!   counts as local to every node, as the kernel counts it.
//! - `round-robin`: the next path after the one picked last.
//! - `queue-depth`: the path with the fewest commands in flight (ties to
//!   the first).
//!
//! The driver (the engine's multipath tcp backend) owns the connections,
//! the failover and the counts; this module only decides.

use nvme_spec::ana::AnaState;
use nvme_spec::status::StatusCodeType;
use nvme_spec::Status;

/// How an I/O chooses among usable paths.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum IoPolicy {
    /// A path whose interface is on the worker's node, else the first.
    #[default]
    Numa,
    /// Each I/O on the next usable path.
    RoundRobin,
    /// The usable path with the fewest commands in flight.
    QueueDepth,
}

impl IoPolicy {
    /// Every policy.
    pub const ALL: [IoPolicy; 3] = [IoPolicy::Numa, IoPolicy::RoundRobin, IoPolicy::QueueDepth];

    /// The kernel's name (`/sys/class/nvme-subsystem/*/iopolicy`).
    pub fn name(self) -> &'static str {
        match self {
            IoPolicy::Numa => "numa",
            IoPolicy::RoundRobin => "round-robin",
            IoPolicy::QueueDepth => "queue-depth",
        }
    }

    /// Parses a kernel name; the error lists them.
    pub fn parse(s: &str) -> Result<IoPolicy, UnknownIoPolicy> {
        IoPolicy::ALL
            .into_iter()
            .find(|p| p.name() == s)
            .ok_or_else(|| UnknownIoPolicy {
                name: s.to_string(),
            })
    }
}

/// A name that is no I/O policy; the message lists the names (from
/// [`IoPolicy::ALL`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{name:?} is not an I/O policy; use {}", crate::one_of(IoPolicy::ALL.map(IoPolicy::name)))]
pub struct UnknownIoPolicy {
    /// The name as given.
    pub name: String,
}

/// What the selector needs to know of one path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PathView {
    /// Whether its I/O queue is connected.
    pub connected: bool,
    /// Its ANA group's state for the namespace.
    pub ana: AnaState,
    /// Commands in flight on it.
    pub in_flight: usize,
    /// NUMA node of its local interface (`None`: no node; local to all).
    pub node: Option<u32>,
}

impl PathView {
    /// Whether I/O may go to it.
    pub fn usable(&self) -> bool {
        self.connected && self.ana.accessible()
    }
}

/// Picks a path per I/O under one policy; remembers the round-robin turn.
#[derive(Debug, Clone)]
pub struct PathSelector {
    policy: IoPolicy,
    node: Option<u32>,
    last: Option<usize>,
}

impl PathSelector {
    /// A selector for a worker on `node` (`None`: unknown, every path is
    /// local).
    pub fn new(policy: IoPolicy, node: Option<u32>) -> Self {
        PathSelector {
            policy,
            node,
            last: None,
        }
    }

    /// The policy.
    pub fn policy(&self) -> IoPolicy {
        self.policy
    }

    /// The path for the next I/O, `None` when no path is usable.
    pub fn pick(&mut self, paths: &[PathView]) -> Option<usize> {
        let best = if paths
            .iter()
            .any(|p| p.usable() && p.ana == AnaState::Optimized)
        {
            AnaState::Optimized
        } else {
            AnaState::NonOptimized
        };
        let ok = |i: &usize| paths[*i].usable() && paths[*i].ana == best;
        let n = paths.len();
        let pick = match self.policy {
            IoPolicy::Numa => {
                let local = |i: &usize| match (paths[*i].node, self.node) {
                    (None, _) | (_, None) => true,
                    (Some(p), Some(w)) => p == w,
                };
                (0..n).filter(ok).find(local).or_else(|| (0..n).find(ok))
            }
            IoPolicy::RoundRobin => {
                let start = self.last.map_or(0, |l| l + 1);
                (start..start + n).map(|i| i % n).find(ok)
            }
            IoPolicy::QueueDepth => (0..n).filter(ok).min_by_key(|&i| paths[i].in_flight),
        };
        if pick.is_some() {
            self.last = pick;
        }
        pick
    }
}

/// The ANA state an I/O's path status says its path is in: `Some` for the
/// ANA path statuses (SCT 3: persistent loss, inaccessible, transition).
pub fn ana_state_of(st: Status) -> Option<AnaState> {
    if st == Status::ANA_PERSISTENT_LOSS {
        Some(AnaState::PersistentLoss)
    } else if st == Status::ANA_INACCESSIBLE {
        Some(AnaState::Inaccessible)
    } else if st == Status::ANA_TRANSITION {
        Some(AnaState::Change)
    } else {
        None
    }
}

/// Whether a completion's status blames the path rather than the command
/// (SCT 3, path related status), so the I/O is retried on another path.
pub fn is_path_error(st: Status) -> bool {
    st.sct() == StatusCodeType::Path
}

/// The state of namespace `nsid` in an ANA log page (Log Identifier 0Ch):
/// the group that lists it, else group `anagrpid`; `None` when the log
/// names neither.
pub fn ana_state_in_log(log: &[u8], nsid: u32, anagrpid: u32) -> Option<AnaState> {
    let (_, groups) = nvme_spec::ana::decode_ana_log(log).ok()?;
    groups
        .iter()
        .find(|g| g.nsids.contains(&nsid))
        .or_else(|| groups.iter().find(|g| g.grpid == anagrpid && anagrpid != 0))
        .map(|g| g.state)
}

#[cfg(test)]
mod tests {
    use super::*;
    use nvme_spec::ana::{encode_ana_log, AnaGroup};

    fn path(ana: AnaState, node: Option<u32>) -> PathView {
        PathView {
            connected: true,
            ana,
            in_flight: 0,
            node,
        }
    }

    #[test]
    fn policies_parse_by_the_kernels_names() {
        for p in IoPolicy::ALL {
            assert_eq!(IoPolicy::parse(p.name()), Ok(p));
        }
        let e = IoPolicy::parse("fastest").unwrap_err();
        assert_eq!(e.name, "fastest");
        assert_eq!(
            e.to_string(),
            "\"fastest\" is not an I/O policy; use numa, round-robin or queue-depth"
        );
    }

    #[test]
    fn numa_takes_the_local_path_then_the_first() {
        let paths = [
            path(AnaState::Optimized, Some(0)),
            path(AnaState::Optimized, Some(1)),
        ];
        assert_eq!(
            PathSelector::new(IoPolicy::Numa, Some(1)).pick(&paths),
            Some(1)
        );
        assert_eq!(
            PathSelector::new(IoPolicy::Numa, Some(0)).pick(&paths),
            Some(0)
        );
        // No path on node 2: the first.
        assert_eq!(
            PathSelector::new(IoPolicy::Numa, Some(2)).pick(&paths),
            Some(0)
        );
        // A worker of unknown node: every path is local, the first wins.
        assert_eq!(
            PathSelector::new(IoPolicy::Numa, None).pick(&paths),
            Some(0)
        );
    }

    #[test]
    fn numa_counts_a_path_of_no_node_local_like_the_kernels_minus_one() {
        // The published case: the far controller reports -1 and comes
        // first, so a node-1 worker takes it, as the kernel does.
        let paths = [
            path(AnaState::Optimized, None),
            path(AnaState::Optimized, Some(1)),
        ];
        assert_eq!(
            PathSelector::new(IoPolicy::Numa, Some(1)).pick(&paths),
            Some(0)
        );
        let paths = [
            path(AnaState::Optimized, Some(0)),
            path(AnaState::Optimized, None),
        ];
        assert_eq!(
            PathSelector::new(IoPolicy::Numa, Some(1)).pick(&paths),
            Some(1)
        );
    }

    #[test]
    fn optimized_before_non_optimized_and_never_an_inaccessible_path() {
        let mut paths = [
            path(AnaState::NonOptimized, Some(0)),
            path(AnaState::Optimized, Some(1)),
            path(AnaState::Inaccessible, Some(0)),
        ];
        for policy in IoPolicy::ALL {
            let mut s = PathSelector::new(policy, Some(0));
            for _ in 0..4 {
                assert_eq!(s.pick(&paths), Some(1), "{policy:?}");
            }
        }
        paths[1].ana = AnaState::Change;
        for policy in IoPolicy::ALL {
            assert_eq!(PathSelector::new(policy, Some(1)).pick(&paths), Some(0));
        }
        paths[0].connected = false;
        for policy in IoPolicy::ALL {
            assert_eq!(PathSelector::new(policy, Some(0)).pick(&paths), None);
        }
        paths[2].ana = AnaState::PersistentLoss;
        assert_eq!(PathSelector::new(IoPolicy::Numa, None).pick(&paths), None);
    }

    #[test]
    fn round_robin_alternates_over_usable_paths() {
        let mut paths = [
            path(AnaState::Optimized, None),
            path(AnaState::Optimized, None),
            path(AnaState::Optimized, None),
        ];
        let mut s = PathSelector::new(IoPolicy::RoundRobin, None);
        let picks: Vec<_> = (0..6).map(|_| s.pick(&paths).unwrap()).collect();
        assert_eq!(picks, [0, 1, 2, 0, 1, 2]);
        paths[1].connected = false;
        let picks: Vec<_> = (0..4).map(|_| s.pick(&paths).unwrap()).collect();
        assert_eq!(picks, [0, 2, 0, 2]);
    }

    #[test]
    fn queue_depth_takes_the_least_loaded_path() {
        let mut paths = [
            path(AnaState::Optimized, None),
            path(AnaState::Optimized, None),
        ];
        paths[0].in_flight = 5;
        paths[1].in_flight = 2;
        let mut s = PathSelector::new(IoPolicy::QueueDepth, None);
        assert_eq!(s.pick(&paths), Some(1));
        paths[1].in_flight = 5;
        assert_eq!(s.pick(&paths), Some(0), "a tie goes to the first");
        paths[0].ana = AnaState::NonOptimized;
        paths[1].in_flight = 30;
        assert_eq!(s.pick(&paths), Some(1), "optimized first, loaded or not");
    }

    #[test]
    fn path_statuses_name_the_state_and_ask_for_a_retry() {
        assert_eq!(
            ana_state_of(Status::ANA_INACCESSIBLE),
            Some(AnaState::Inaccessible)
        );
        assert_eq!(ana_state_of(Status::ANA_TRANSITION), Some(AnaState::Change));
        assert_eq!(
            ana_state_of(Status::ANA_PERSISTENT_LOSS),
            Some(AnaState::PersistentLoss)
        );
        assert!(is_path_error(Status::ANA_INACCESSIBLE));
        assert!(!is_path_error(Status::SUCCESS));
        assert_eq!(ana_state_of(Status::SUCCESS), None);
    }

    #[test]
    fn the_log_gives_the_namespaces_group_state() {
        let groups = [
            AnaGroup {
                grpid: 1,
                chgcnt: 1,
                state: AnaState::Optimized,
                nsids: vec![2],
            },
            AnaGroup {
                grpid: 2,
                chgcnt: 1,
                state: AnaState::Inaccessible,
                nsids: vec![1],
            },
        ];
        let log = encode_ana_log(3, &groups, false);
        assert_eq!(ana_state_in_log(&log, 1, 0), Some(AnaState::Inaccessible));
        assert_eq!(ana_state_in_log(&log, 2, 0), Some(AnaState::Optimized));
        let rgo = encode_ana_log(3, &groups, true);
        assert_eq!(ana_state_in_log(&rgo, 1, 1), Some(AnaState::Optimized));
        assert_eq!(ana_state_in_log(&rgo, 1, 0), None);
        assert_eq!(ana_state_in_log(&[0u8; 4], 1, 1), None);
    }
}
