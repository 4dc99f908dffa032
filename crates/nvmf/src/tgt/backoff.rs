//! Source addresses that were just refused a controller for holding their
//! share of unauthenticated ones: their next sockets are closed at accept
//! for [`SOURCE_BACKOFF`], before any reactor reads an ICReq.
//!
//! Issue 38: 56 sockets from one address, each retrying 50 ms after its
//! Connect was refused (`UNAUTHENTICATED_PER_SOURCE`), made the reactor
//! run about 940 ICReq/Connect/refusal exchanges a second beside a good
//! host's reads, whose p99 rose to 2.7-2.9x its quiet value. A refused
//! source is now closed by the acceptor for a quarter of a second; the
//! window is not extended by the sockets it closes, so a host behind the
//! same address (a NAT) is kept out only while its neighbour keeps
//! hitting the limit, as the per-source share itself already does.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How long a source refused at the unauthenticated limit has its new
/// sockets closed at accept.
pub const SOURCE_BACKOFF: Duration = Duration::from_millis(250);
/// Sources tracked at once; past it, ended windows are forgotten first,
/// and a source that finds no room is not backed off.
pub const BACKOFF_TRACKED_MAX: usize = 4096;

/// Back-off windows by source address (a leaf lock: nothing else is
/// taken while it is held).
#[derive(Debug, Default)]
pub struct SourceBackoff(Mutex<HashMap<IpAddr, Instant>>);

impl SourceBackoff {
    /// `source` was refused at `now`: its window starts.
    pub fn refused(&self, source: IpAddr, now: Instant) {
        let mut m = self.0.lock().expect("backoff lock");
        if m.len() >= BACKOFF_TRACKED_MAX && !m.contains_key(&source) {
            m.retain(|_, until| *until > now);
            if m.len() >= BACKOFF_TRACKED_MAX {
                return;
            }
        }
        m.insert(source, now + SOURCE_BACKOFF);
    }

    /// What is left of `source`'s window at `now`, if it is in one.
    pub fn left(&self, source: IpAddr, now: Instant) -> Option<Duration> {
        let m = self.0.lock().expect("backoff lock");
        let until = *m.get(&source)?;
        (until > now).then(|| until - now)
    }

    /// Sources tracked (ended windows included until room is needed).
    pub fn tracked(&self) -> usize {
        self.0.lock().expect("backoff lock").len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(last: u8) -> IpAddr {
        IpAddr::from([10, 0, 0, last])
    }

    #[test]
    fn a_refused_source_waits_out_its_window_and_no_other_does() {
        let b = SourceBackoff::default();
        let t0 = Instant::now();
        assert_eq!(b.left(ip(1), t0), None);
        b.refused(ip(1), t0);
        assert_eq!(b.left(ip(1), t0), Some(SOURCE_BACKOFF));
        assert_eq!(b.left(ip(2), t0), None, "another address is not held");
        let half = SOURCE_BACKOFF / 2;
        assert_eq!(b.left(ip(1), t0 + half), Some(SOURCE_BACKOFF - half));
        assert_eq!(b.left(ip(1), t0 + SOURCE_BACKOFF), None, "the window ended");
        // A new refusal starts a new window.
        b.refused(ip(1), t0 + SOURCE_BACKOFF);
        assert!(b.left(ip(1), t0 + SOURCE_BACKOFF + half).is_some());
    }

    #[test]
    fn the_table_is_bounded_and_forgets_ended_windows_first() {
        let b = SourceBackoff::default();
        let t0 = Instant::now();
        let addr = |i: usize| IpAddr::from([10, (i >> 16) as u8, (i >> 8) as u8, i as u8]);
        for i in 0..BACKOFF_TRACKED_MAX {
            b.refused(addr(i), t0);
        }
        assert_eq!(b.tracked(), BACKOFF_TRACKED_MAX);
        // Full of live windows: a newcomer is not tracked (nor held).
        b.refused(addr(BACKOFF_TRACKED_MAX), t0);
        assert_eq!(b.tracked(), BACKOFF_TRACKED_MAX);
        assert_eq!(b.left(addr(BACKOFF_TRACKED_MAX), t0), None);
        // Once they ended, they make room.
        let later = t0 + SOURCE_BACKOFF;
        b.refused(addr(BACKOFF_TRACKED_MAX), later);
        assert_eq!(b.tracked(), 1);
        assert!(b.left(addr(BACKOFF_TRACKED_MAX), later).is_some());
    }
}
