//! One NVMe port: a listener and its ANA state (the type the target owns;
//! what ANA does with it is in the sibling module `ana`).

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};

use nvme_spec::ana::AnaState;

/// One NVMe port: a listener and its ANA state.
#[derive(Debug)]
pub struct Port {
    /// Port id (1-based, the discovery log's PORTID).
    pub id: u16,
    /// Its listener.
    pub addr: SocketAddr,
    pub(super) state: AtomicU8,
    pub(super) chgcnt: AtomicU64,
}

impl Port {
    /// A port in `state`.
    pub fn new(id: u16, addr: SocketAddr, state: AnaState) -> Self {
        Self {
            id,
            addr,
            state: AtomicU8::new(state.code()),
            chgcnt: AtomicU64::new(0),
        }
    }

    /// Its ANA state.
    pub fn state(&self) -> AnaState {
        AnaState::from_code(self.state.load(Ordering::Acquire)).unwrap_or(AnaState::Optimized)
    }

    /// Changes of its state so far.
    pub fn chgcnt(&self) -> u64 {
        self.chgcnt.load(Ordering::Acquire)
    }
}
