//! Per queue and namespace counts of what a target operator watches:
//! commands completed, bytes moved, errors and digest failures. A
//! connection counts into its own [`QueueCounters`] (no lock, no shared
//! atomic on the I/O path) and folds them into its controller's
//! [`CounterTable`] every tick (`event_loop.rs`'s `TICK`).

use std::collections::BTreeMap;
use std::sync::Mutex;

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
}
