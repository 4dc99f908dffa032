//! What a multipath NVMe/TCP target's paths carried: per portal I/Os,
//! bytes, retries, failovers and state changes, under the policy named.

use serde::{Deserialize, Serialize};

/// The paths of one multipath target (`nvme-tcp://A/NQN,nvme-tcp://B/NQN`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct MultipathResult {
    /// The I/O policy: `numa`, `round-robin` or `queue-depth`.
    pub policy: String,
    /// Each portal, in the order given.
    pub paths: Vec<PathResult>,
}

/// One path's counts, summed over the target's workers (ramp included).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct PathResult {
    /// The portal, `HOST:PORT`.
    pub portal: String,
    /// Its ANA state when the run ended (`down` when not connected).
    pub state: String,
    /// I/Os completed through it.
    pub ios: u64,
    /// Bytes moved through it.
    pub bytes: u64,
    /// I/Os it took over from another path (that path failed, or answered
    /// with a path status).
    pub retries: u64,
    /// Times it stopped being usable (connection lost, I/O or keep-alive
    /// timeout, ANA state not optimized or non-optimized).
    pub failovers: u64,
    /// Times it was reconnected after a loss (failback).
    pub reconnects: u64,
    /// Changes of its state: ANA state changes, losses and reconnects.
    pub state_changes: u64,
}

impl MultipathResult {
    /// Adds another worker's counts of the same portals.
    pub fn add(&mut self, other: &MultipathResult) {
        for o in &other.paths {
            match self.paths.iter_mut().find(|p| p.portal == o.portal) {
                Some(p) => {
                    p.ios += o.ios;
                    p.bytes += o.bytes;
                    p.retries += o.retries;
                    p.failovers += o.failovers;
                    p.reconnects += o.reconnects;
                    p.state_changes += o.state_changes;
                    p.state.clone_from(&o.state);
                }
                None => self.paths.push(o.clone()),
            }
        }
    }
}
