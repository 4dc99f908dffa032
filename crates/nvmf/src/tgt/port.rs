//! One NVMe port: a listener and its ANA state (the type the target owns;
//! what ANA does with it is in the sibling module `ana`).

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};

use nvme_spec::ana::AnaState;

/// The transport a port listens with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    /// NVMe/TCP.
    Tcp,
    /// NVMe/RDMA (RDMA CM, reliable connected queue pairs).
    Rdma,
}

impl Transport {
    /// Its name on the command line and in reports (`tcp`, `rdma`).
    pub fn name(self) -> &'static str {
        match self {
            Transport::Tcp => "tcp",
            Transport::Rdma => "rdma",
        }
    }
}

/// One NVMe port: a listener, its transport and its ANA state.
#[derive(Debug)]
pub struct Port {
    /// Port id (1-based, the discovery log's PORTID).
    pub id: u16,
    /// Its listener.
    pub addr: SocketAddr,
    /// Its transport.
    pub transport: Transport,
    pub(super) state: AtomicU8,
    pub(super) chgcnt: AtomicU64,
}

impl Port {
    /// A port in `state`.
    pub fn new(id: u16, addr: SocketAddr, state: AnaState) -> Self {
        Self {
            id,
            addr,
            transport: Transport::Tcp,
            state: AtomicU8::new(state.code()),
            chgcnt: AtomicU64::new(0),
        }
    }

    /// The same port, listening with `transport`.
    pub fn with_transport(mut self, transport: Transport) -> Self {
        self.transport = transport;
        self
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
