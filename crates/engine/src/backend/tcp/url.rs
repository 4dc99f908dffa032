//! The address of an NVMe/TCP (or NVMe/RDMA) namespace as parsed, and the
//! limits the errors name: the leaf below `setup`, `portals` and `error`.

use std::time::Duration;

/// A parsed `nvme-tcp://HOST[:PORT]/SUBNQN[/NSID]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TcpUrl {
    /// Host name or address as given (IPv6 without brackets).
    pub host: String,
    /// TCP port.
    pub port: u16,
    /// Subsystem NQN.
    pub subnqn: String,
    /// Namespace id.
    pub nsid: u32,
}

/// Most portals of one target.
pub const MAX_PORTALS: usize = 8;

/// How long a reply may take before the run fails.
pub(crate) const REPLY_TIMEOUT: Duration = Duration::from_secs(10);

/// `HOST:PORT` of a portal.
pub fn portal_name(u: &TcpUrl) -> String {
    if u.host.contains(':') {
        format!("[{}]:{}", u.host, u.port)
    } else {
        format!("{}:{}", u.host, u.port)
    }
}
