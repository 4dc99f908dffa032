//! The namespaces of one subsystem, which a reload (SIGHUP) may add to or
//! remove from while hosts are connected, without a lock on the I/O path:
//! a fixed array of [`MAX_NAMESPACES`] slots, nsid = index + 1, each set at
//! most once ([`OnceLock`]) and marked removed at most once (an atomic flag
//! the I/O path only reads). A removed nsid is not reused until a restart.

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, OnceLock};

use super::namespace::Namespace;

/// Most namespaces of one subsystem, over its whole life (as Linux nvmet's
/// NVMET_MAX_NAMESPACES).
pub const MAX_NAMESPACES: usize = 1024;

#[derive(Debug, Default)]
struct Slot {
    ns: OnceLock<Arc<Namespace>>,
    removed: AtomicBool,
}

/// Namespaces by nsid; see the module doc.
#[derive(Debug)]
pub struct NamespaceSet {
    slots: Box<[Slot]>,
    /// Slots filled (removed ones included): the highest nsid given out.
    filled: AtomicU32,
}

/// Why a namespace could not be added.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SetFull;

impl NamespaceSet {
    /// The set holding `namespaces`, whose nsids must be 1, 2, ... in order.
    pub fn new(namespaces: Vec<Arc<Namespace>>) -> Result<Self, SetFull> {
        let set = Self {
            slots: (0..MAX_NAMESPACES).map(|_| Slot::default()).collect(),
            filled: AtomicU32::new(0),
        };
        for ns in namespaces {
            set.push(ns)?;
        }
        Ok(set)
    }

    /// Adds `ns` as the next nsid (it must carry that nsid, see
    /// [`NamespaceSet::next_nsid`]). One writer at a time: the reload path.
    pub fn push(&self, ns: Arc<Namespace>) -> Result<(), SetFull> {
        let i = self.filled.load(Ordering::Acquire) as usize;
        assert_eq!(
            ns.nsid as usize,
            i + 1,
            "namespaces are added in nsid order"
        );
        let slot = self.slots.get(i).ok_or(SetFull)?;
        slot.ns.set(ns).expect("one writer fills each slot once");
        self.filled.store(i as u32 + 1, Ordering::Release);
        Ok(())
    }

    /// The nsid the next [`NamespaceSet::push`] takes.
    pub fn next_nsid(&self) -> u32 {
        self.filled.load(Ordering::Acquire) + 1
    }

    /// Marks `nsid` removed; false if it is not an active namespace.
    pub fn remove(&self, nsid: u32) -> bool {
        let Some(slot) = self.slot(nsid) else {
            return false;
        };
        slot.ns.get().is_some() && !slot.removed.swap(true, Ordering::AcqRel)
    }

    fn slot(&self, nsid: u32) -> Option<&Slot> {
        (nsid as usize)
            .checked_sub(1)
            .and_then(|i| self.slots.get(i))
    }

    /// The active namespace `nsid`.
    pub fn get(&self, nsid: u32) -> Option<&Arc<Namespace>> {
        let slot = self.slot(nsid)?;
        let ns = slot.ns.get()?;
        (!slot.removed.load(Ordering::Acquire)).then_some(ns)
    }

    /// The highest nsid given out (Identify Controller NN): removed ones count.
    pub fn max_nsid(&self) -> u32 {
        self.filled.load(Ordering::Acquire)
    }

    /// Every namespace ever added, removed ones too (for a final flush).
    pub fn all(&self) -> impl Iterator<Item = &Arc<Namespace>> {
        self.slots[..self.max_nsid() as usize]
            .iter()
            .filter_map(|s| s.ns.get())
    }

    /// The active namespaces, in nsid order.
    pub fn iter(&self) -> impl Iterator<Item = &Arc<Namespace>> {
        (1..=self.max_nsid()).filter_map(|nsid| self.get(nsid))
    }

    /// Number of active namespaces.
    pub fn len(&self) -> usize {
        self.iter().count()
    }

    /// True when no namespace is active.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl<'a> IntoIterator for &'a NamespaceSet {
    type Item = &'a Arc<Namespace>;
    type IntoIter = Box<dyn Iterator<Item = &'a Arc<Namespace>> + 'a>;

    fn into_iter(self) -> Self::IntoIter {
        Box::new(self.iter())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tgt::config::NamespaceConfig;

    fn ns(nsid: u32) -> Arc<Namespace> {
        Arc::new(Namespace::open("nqn.t", nsid, &NamespaceConfig::new("mem:1M")).unwrap())
    }

    #[test]
    fn added_and_removed_while_readers_look() {
        let set = NamespaceSet::new(vec![ns(1), ns(2)]).unwrap();
        assert_eq!((set.len(), set.max_nsid(), set.next_nsid()), (2, 2, 3));
        set.push(ns(3)).unwrap();
        assert_eq!(set.get(3).unwrap().nsid, 3);
        assert!(set.remove(2));
        assert!(!set.remove(2), "removed once");
        assert!(!set.remove(4), "never added");
        assert!(set.get(2).is_none() && set.get(0).is_none() && set.get(4).is_none());
        let active: Vec<u32> = set.iter().map(|n| n.nsid).collect();
        assert_eq!(active, [1, 3]);
        assert_eq!(
            set.all().count(),
            3,
            "a final flush reaches the removed one too"
        );
        assert_eq!(set.max_nsid(), 3, "NN keeps the highest nsid given out");
        assert_eq!(set.next_nsid(), 4, "a removed nsid is not reused");
    }

    #[test]
    fn full_at_the_limit() {
        let set = NamespaceSet::new(Vec::new()).unwrap();
        assert!(set.is_empty());
        let one = ns(1);
        for slot in set.slots.iter() {
            slot.ns.set(one.clone()).unwrap();
        }
        set.filled.store(MAX_NAMESPACES as u32, Ordering::Release);
        assert_eq!(set.push(ns(MAX_NAMESPACES as u32 + 1)), Err(SetFull));
    }
}
