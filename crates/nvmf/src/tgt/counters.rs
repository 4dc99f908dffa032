//! Per queue and namespace counts of what a target operator watches:
//! commands completed, bytes moved, errors, digest failures and a latency
//! histogram. A connection counts into its own [`QueueCounters`] (no lock,
//! no shared atomic on the I/O path) and folds them into its controller's
//! [`CounterTable`] every tick (`event_loop.rs`'s `TICK`). Connections the
//! target refused or closed before they served a host are counted by
//! reason in the target's [`Refusals`] (rare: atomics are fine there).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Mutex;
use std::time::Duration;

/// Upper bounds of the latency histogram's buckets, in nanoseconds
/// (Prometheus' `le`); one more bucket counts the slower commands.
pub const LATENCY_BOUNDS_NS: [u64; 14] = [
    5_000,
    10_000,
    25_000,
    50_000,
    100_000,
    250_000,
    500_000,
    1_000_000,
    2_500_000,
    5_000_000,
    10_000_000,
    25_000_000,
    100_000_000,
    1_000_000_000,
];
/// Buckets: one per bound, and one past the last.
pub const LATENCY_BUCKETS: usize = LATENCY_BOUNDS_NS.len() + 1;

/// Commands by the time they took in the target, from the receive that
/// brought the command capsule to the receive or storage completion that
/// completed it (R2T data transfers and storage included; the connection
/// reads its clock once per such event, not per command, so a command
/// completed in the receive that brought it counts as 0).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct LatencyHistogram {
    /// Commands per bucket (not cumulative): bucket i holds those at most
    /// `LATENCY_BOUNDS_NS[i]` and above the bound before it.
    pub buckets: [u64; LATENCY_BUCKETS],
    /// Their latencies added up.
    pub sum_ns: u64,
}

impl LatencyHistogram {
    /// Counts one command of `took`.
    pub fn record(&mut self, took: Duration) {
        let ns = u64::try_from(took.as_nanos()).unwrap_or(u64::MAX);
        let i = LATENCY_BOUNDS_NS.partition_point(|&b| b < ns);
        self.buckets[i] += 1;
        self.sum_ns = self.sum_ns.saturating_add(ns);
    }

    /// Commands counted.
    pub fn count(&self) -> u64 {
        self.buckets.iter().sum()
    }

    fn add(&mut self, o: &LatencyHistogram) {
        for (a, b) in self.buckets.iter_mut().zip(&o.buckets) {
            *a += b;
        }
        self.sum_ns = self.sum_ns.saturating_add(o.sum_ns);
    }
}

/// Most nsids one queue keeps apart (one more for [`NSID_OTHER`]).
pub const NSID_ENTRIES_MAX: usize = 32;
/// Where the commands of any further nsid are counted (also the nsid of a
/// Flush to every namespace).
pub const NSID_OTHER: u32 = 0xFFFF_FFFF;

/// Counts of one queue and namespace.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct IoCounters {
    /// Reads completed successfully.
    pub reads: u64,
    /// Writes completed successfully.
    pub writes: u64,
    /// Other commands completed successfully (admin commands, flush, ...).
    pub other_commands: u64,
    /// Bytes of successful reads.
    pub read_bytes: u64,
    /// Bytes of successful writes.
    pub written_bytes: u64,
    /// Commands completed with an error status.
    pub errors: u64,
    /// Commands whose data digest (CRC32C) did not match.
    pub digest_failures: u64,
    /// Every completed command's time in the target.
    pub latency: LatencyHistogram,
}

impl IoCounters {
    /// Adds `o` to these.
    pub fn add(&mut self, o: &IoCounters) {
        self.reads += o.reads;
        self.writes += o.writes;
        self.other_commands += o.other_commands;
        self.read_bytes += o.read_bytes;
        self.written_bytes += o.written_bytes;
        self.errors += o.errors;
        self.digest_failures += o.digest_failures;
        self.latency.add(&o.latency);
    }
}

/// Why the target refused a Connect or closed a socket before it served a
/// host.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// The host NQN is not on the subsystem's allow list.
    HostNotAllowed,
    /// An I/O queue's Host ID is not its controller's.
    HostIdMismatch,
    /// No such subsystem (on this port).
    UnknownSubsystem,
    /// Too many controllers or queues, or an unknown controller or queue.
    Busy,
    /// A Connect the target could not take (format, lengths, queue size).
    InvalidConnect,
    /// Every connection slot was taken.
    ConnectionLimit,
    /// The source address held its share of the slots.
    SourceLimit,
    /// No ICReq in time.
    IcreqDeadline,
    /// No successful Connect in time.
    ConnectDeadline,
    /// A DH-HMAC-CHAP transaction failed (wrong secret, nothing in
    /// common, a malformed or out-of-sequence message).
    AuthFailed,
    /// A queue that must authenticate did not within its deadline.
    AuthDeadline,
    /// A TLS handshake failed (an unknown identity, another key, plain
    /// text where TLS is required).
    TlsFailed,
    /// A Connect over TLS named another host or subsystem than the PSK
    /// identity.
    TlsIdentity,
    /// A DH-HMAC-CHAP transaction failed because its source address or
    /// host NQN held its budget of DH work (`dh_pool`).
    AuthDhBudget,
    /// A queue sent more Negotiates than `auth::NEGOTIATIONS_MAX` without
    /// succeeding.
    AuthRestarts,
    /// An admin queue with KATO 0 and no I/O queue sat idle past
    /// `queue::ADMIN_IDLE_DEADLINE` (it held a controller slot), or past
    /// `unauthenticated::IDLE_ADMIN_GRACE` while every slot was taken and
    /// another host connected.
    AdminIdle,
    /// A socket that had not reached Connect was closed, the oldest such,
    /// to admit a new one while every connection slot was taken.
    Evicted,
    /// A host that must authenticate was refused a controller, or the
    /// oldest unauthenticated controller torn down, past the slots kept
    /// for unauthenticated controllers (`ctrl_slots`).
    Unauthenticated,
    /// A TLS handshake was refused because its source address, or all
    /// sources together, held the budget of handshake work (`tls_pool`).
    TlsBusy,
    /// A socket was closed at accept because its source address had just
    /// been refused a controller at the unauthenticated limit (`backoff`).
    SourceBackoff,
}

impl Refused {
    /// Every reason, in the order the metrics list them.
    pub const ALL: [Refused; 20] = [
        Refused::HostNotAllowed,
        Refused::HostIdMismatch,
        Refused::UnknownSubsystem,
        Refused::Busy,
        Refused::InvalidConnect,
        Refused::ConnectionLimit,
        Refused::SourceLimit,
        Refused::IcreqDeadline,
        Refused::ConnectDeadline,
        Refused::AuthFailed,
        Refused::AuthDeadline,
        Refused::TlsFailed,
        Refused::TlsIdentity,
        Refused::AuthDhBudget,
        Refused::AuthRestarts,
        Refused::AdminIdle,
        Refused::Evicted,
        Refused::Unauthenticated,
        Refused::TlsBusy,
        Refused::SourceBackoff,
    ];

    /// Its label value.
    pub fn name(self) -> &'static str {
        match self {
            Refused::HostNotAllowed => "host_not_allowed",
            Refused::HostIdMismatch => "host_id_mismatch",
            Refused::UnknownSubsystem => "unknown_subsystem",
            Refused::Busy => "busy",
            Refused::InvalidConnect => "invalid_connect",
            Refused::ConnectionLimit => "connection_limit",
            Refused::SourceLimit => "source_limit",
            Refused::IcreqDeadline => "icreq_deadline",
            Refused::ConnectDeadline => "connect_deadline",
            Refused::AuthFailed => "auth_failed",
            Refused::AuthDeadline => "auth_deadline",
            Refused::TlsFailed => "tls_failed",
            Refused::TlsIdentity => "tls_identity",
            Refused::AuthDhBudget => "auth_dh_budget",
            Refused::AuthRestarts => "auth_restarts",
            Refused::AdminIdle => "admin_idle",
            Refused::Evicted => "evicted",
            Refused::Unauthenticated => "unauthenticated_limit",
            Refused::TlsBusy => "tls_busy",
            Refused::SourceBackoff => "source_backoff",
        }
    }

    /// A refusal of the host's identity (what authentication failures
    /// are counted as): not allowed, a wrong Host ID, a failed or
    /// unfinished DH-HMAC-CHAP transaction, a failed TLS handshake or a
    /// Connect that is not what its PSK identity says.
    pub fn is_auth(self) -> bool {
        matches!(
            self,
            Refused::HostNotAllowed
                | Refused::HostIdMismatch
                | Refused::AuthFailed
                | Refused::AuthDeadline
                | Refused::TlsFailed
                | Refused::TlsIdentity
        )
    }
}

/// The target's refusals by reason.
#[derive(Debug, Default)]
pub struct Refusals([AtomicU64; Refused::ALL.len()]);

impl Refusals {
    /// Counts one.
    pub fn count(&self, why: Refused) {
        self.0[why as usize].fetch_add(1, Relaxed);
    }

    /// (reason, count) for every reason.
    pub fn snapshot(&self) -> Vec<(Refused, u64)> {
        Refused::ALL
            .iter()
            .map(|&r| (r, self.0[r as usize].load(Relaxed)))
            .collect()
    }
}

/// A connection's counters by nsid since the last fold (a handful of
/// entries: the namespaces its host uses; kept, zeroed, between folds).
#[derive(Debug, Default)]
pub struct QueueCounters {
    by_nsid: Vec<(u32, IoCounters)>,
}

impl QueueCounters {
    /// The counters of `nsid` (0 for the admin queue); past
    /// [`NSID_ENTRIES_MAX`] different nsids (a host trying random ones),
    /// those of [`NSID_OTHER`].
    pub(crate) fn entry(&mut self, nsid: u32) -> &mut IoCounters {
        let nsid = if self.by_nsid.len() >= NSID_ENTRIES_MAX
            && !self.by_nsid.iter().any(|(n, _)| *n == nsid)
        {
            NSID_OTHER
        } else {
            nsid
        };
        let i = match self.by_nsid.iter().position(|(n, _)| *n == nsid) {
            Some(i) => i,
            None => {
                self.by_nsid.push((nsid, IoCounters::default()));
                self.by_nsid.len() - 1
            }
        };
        &mut self.by_nsid[i].1
    }
}

/// A controller's counters by (qid, nsid), added to at each fold.
#[derive(Debug, Default)]
pub struct CounterTable(Mutex<BTreeMap<(u16, u32), IoCounters>>);

impl CounterTable {
    /// Adds what `q` counted since the last fold under queue `qid` and
    /// zeroes it (keeping its entries); returns the sum folded.
    pub(crate) fn fold(&self, qid: u16, q: &mut QueueCounters) -> IoCounters {
        let zero = IoCounters::default();
        let mut sum = zero;
        if q.by_nsid.iter().all(|(_, c)| *c == zero) {
            return sum;
        }
        let mut table = self.0.lock().expect("counters lock");
        for (nsid, c) in &mut q.by_nsid {
            if *c != zero {
                table.entry((qid, *nsid)).or_default().add(c);
                sum.add(c);
                *c = zero;
            }
        }
        sum
    }

    /// (qid, nsid, counters) in that order.
    pub fn snapshot(&self) -> Vec<(u16, u32, IoCounters)> {
        let table = self.0.lock().expect("counters lock");
        table
            .iter()
            .map(|(&(qid, nsid), c)| (qid, nsid, *c))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folds_add_up_by_queue_and_namespace() {
        let t = CounterTable::default();
        let mut q = QueueCounters::default();
        q.entry(1).reads += 2;
        q.entry(1).read_bytes += 8192;
        q.entry(2).errors += 1;
        let sum = t.fold(3, &mut q);
        assert_eq!((sum.reads, sum.read_bytes, sum.errors), (2, 8192, 1));
        assert_eq!(
            t.fold(3, &mut q),
            IoCounters::default(),
            "zeroed by the fold"
        );
        q.entry(1).reads += 1;
        t.fold(3, &mut q);
        let snap = t.snapshot();
        assert_eq!(snap.len(), 2);
        assert_eq!((snap[0].0, snap[0].1, snap[0].2.reads), (3, 1, 3));
        assert_eq!((snap[1].0, snap[1].1, snap[1].2.errors), (3, 2, 1));
        assert_eq!(q.by_nsid.len(), 2, "entries kept between folds");
        for nsid in 10..100 {
            q.entry(nsid).errors += 1;
        }
        assert_eq!(q.by_nsid.len(), NSID_ENTRIES_MAX + 1, "bounded");
        assert_eq!(q.entry(NSID_OTHER).errors, 100 - 10 - 30);
    }

    #[test]
    fn latencies_fall_in_their_buckets_and_fold() {
        let mut h = LatencyHistogram::default();
        h.record(Duration::from_nanos(5_000)); // on the first bound: bucket 0
        h.record(Duration::from_nanos(5_001));
        h.record(Duration::from_micros(300));
        h.record(Duration::from_secs(3)); // past the last bound
        assert_eq!(h.buckets[0], 1);
        assert_eq!(h.buckets[1], 1);
        assert_eq!(h.buckets[6], 1, "300 us: at most 500 us");
        assert_eq!(h.buckets[LATENCY_BUCKETS - 1], 1);
        assert_eq!(h.count(), 4);
        assert_eq!(h.sum_ns, 5_000 + 5_001 + 300_000 + 3_000_000_000);
        let t = CounterTable::default();
        let mut q = QueueCounters::default();
        q.entry(1).latency = h;
        q.entry(1).reads += 4;
        t.fold(1, &mut q);
        q.entry(1).latency.record(Duration::from_micros(1));
        q.entry(1).reads += 1;
        t.fold(1, &mut q);
        let snap = t.snapshot();
        assert_eq!(snap[0].2.latency.count(), 5);
        assert_eq!(snap[0].2.latency.buckets[0], 2);
    }

    #[test]
    fn refusals_count_by_reason() {
        let r = Refusals::default();
        r.count(Refused::HostNotAllowed);
        r.count(Refused::HostNotAllowed);
        r.count(Refused::SourceLimit);
        let s = r.snapshot();
        assert_eq!(s.len(), Refused::ALL.len());
        assert_eq!(s[0], (Refused::HostNotAllowed, 2));
        assert_eq!(s[6], (Refused::SourceLimit, 1));
        assert!(Refused::HostIdMismatch.is_auth() && !Refused::Busy.is_auth());
        for (i, r) in Refused::ALL.iter().enumerate() {
            assert_eq!(*r as usize, i, "ALL is in declaration order");
        }
    }
}
