//! Set-up of the `tcp` backend: the target URL, the connection options,
//! and what an admin queue learns of the namespace and its controller
//! (through the blocking [`nvmf::Initiator`]), with set-up errors that name
//! the input and the fix.

use std::net::{SocketAddr, ToSocketAddrs};

use nvme_spec::fabrics::prop;
use nvme_spec::identify::{cns, IdentifyController, IdentifyNamespace};
use nvmf::host::{ControllerLimits, IoPolicy};
use nvmf::{Initiator, InitiatorError, InitiatorOptions};
use planner::Fabric;

use super::error::{ResolveError, SetupError, UrlError};
pub use super::url::TcpUrl;
pub(super) use super::url::REPLY_TIMEOUT;

/// The scheme of an NVMe/TCP target.
pub const SCHEME: &str = planner::Fabric::Tcp.scheme();
/// The NVMe/TCP port IANA assigned.
pub const DEFAULT_PORT: u16 = 4420;
/// Most I/O queue entries a controller may grant (CAP.MQES is 16 bits).
pub(super) const MAX_QUEUE_ENTRIES: u32 = 65536;
/// The admin queue's largest transfer (Identify data).
const ADMIN_MAX_DATA_BYTES: u32 = 64 << 10;

/// Connection options of the `tcp` and `rdma` backends (`--hostnqn`,
/// `--hostid`, `--hdr-digest`, `--data-digest`, …).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TcpOptions {
    /// Host NQN (`None`: the initiator's default).
    pub hostnqn: Option<String>,
    /// Host ID (`None`: the initiator's default).
    pub hostid: Option<[u8; 16]>,
    /// Ask for header digests (CRC32C on every PDU header).
    pub header_digest: bool,
    /// Ask for data digests (CRC32C on every PDU's data).
    pub data_digest: bool,
    /// How a multipath target's I/Os choose a path (`--iopolicy`).
    pub iopolicy: IoPolicy,
    /// DH-HMAC-CHAP secrets, for targets that ask this host to
    /// authenticate (`--dhchap-secret-file`, `--dhchap-ctrl-secret-file`).
    pub dhchap: Option<std::sync::Arc<nvmf::HostSecrets>>,
    /// The configured TLS PSK: every queue runs over TLS 1.3
    /// (`--tls-key-file`).
    pub tls: Option<std::sync::Arc<nvmf::tls::ConfiguredPsk>>,
    /// Busy-poll each worker's socket instead of sleeping until it is
    /// readable (`--poll`; single-path targets): lower latency at the cost
    /// of a whole CPU per worker.
    pub poll: bool,
}

impl TcpOptions {
    /// The in-process initiator's options for these.
    pub fn initiator(&self) -> InitiatorOptions {
        let mut o = InitiatorOptions {
            header_digest: self.header_digest,
            data_digest: self.data_digest,
            // No keep-alive: the run sends no admin commands to keep one.
            kato_ms: 0,
            timeout: REPLY_TIMEOUT,
            dhchap: self.dhchap.clone(),
            tls: self.tls.clone(),
            ..InitiatorOptions::default()
        };
        if let Some(h) = &self.hostnqn {
            o.hostnqn = h.clone();
        }
        if let Some(id) = self.hostid {
            o.hostid = id;
        }
        o
    }
}

/// What set-up learnt about an NVMe/TCP namespace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NvmeTcp {
    /// The target as parsed.
    pub url: TcpUrl,
    /// The address connected to.
    pub addr: SocketAddr,
    /// Largest transfer of one command (Identify Controller MDTS).
    pub max_transfer_bytes: u64,
    /// Largest write sent in the command capsule (IOCCSZ).
    pub in_capsule_max_bytes: u32,
    /// Largest I/O queue the controller grants (CAP.MQES + 1).
    pub max_queue_entries: u32,
    /// Every portal of a multipath target, in the order given (`url` and
    /// `addr` are the first's, the limits the smallest of all); empty for
    /// one portal.
    pub portals: Vec<Portal>,
}

/// One portal of a multipath target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Portal {
    /// The portal as parsed.
    pub url: TcpUrl,
    /// The address connected to.
    pub addr: SocketAddr,
}

/// Whether `path` names an NVMe/TCP target.
pub fn is_tcp_target(path: &str) -> bool {
    planner::TargetAddr::parse(path).fabric() == Some(planner::Fabric::Tcp)
}

/// Parses `nvme-tcp://HOST[:PORT]/SUBNQN[/NSID]`; the error names the part
/// that is wrong and shows the form.
pub fn parse_url(s: &str) -> Result<TcpUrl, UrlError> {
    parse_fabric_url(s, Fabric::Tcp)
}

/// Parses `SCHEME://HOST[:PORT]/SUBNQN[/NSID]` of `fabric`.
pub(crate) fn parse_fabric_url(s: &str, fabric: Fabric) -> Result<TcpUrl, UrlError> {
    let rest = s
        .strip_prefix(fabric.scheme())
        .ok_or(UrlError::Scheme { fabric })?;
    let (authority, path) = rest
        .split_once('/')
        .ok_or(UrlError::NoSubsystem { fabric })?;
    let (host, port) = split_host_port(authority, fabric)?;
    let (subnqn, nsid) = match path.rsplit_once('/') {
        Some((nqn, ns)) => {
            let nsid = ns
                .parse::<u32>()
                .ok()
                .filter(|&n| n > 0 && n != u32::MAX)
                .ok_or_else(|| UrlError::Nsid {
                    fabric,
                    nsid: ns.to_string(),
                })?;
            (nqn, nsid)
        }
        None => (path, 1),
    };
    if subnqn.is_empty() || subnqn.len() > 223 || subnqn.contains('/') {
        return Err(UrlError::Subnqn {
            fabric,
            subnqn: subnqn.to_string(),
        });
    }
    Ok(TcpUrl {
        host: host.to_string(),
        port,
        subnqn: subnqn.to_string(),
        nsid,
    })
}

fn split_host_port(a: &str, fabric: Fabric) -> Result<(&str, u16), UrlError> {
    let (host, port) = if let Some(v6) = a.strip_prefix('[') {
        let (h, after) = v6.split_once(']').ok_or_else(|| UrlError::Bracket {
            fabric,
            address: a.to_string(),
        })?;
        (h, after.strip_prefix(':'))
    } else {
        match a.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (a, None),
        }
    };
    if host.is_empty() {
        return Err(UrlError::NoHost {
            fabric,
            address: a.to_string(),
        });
    }
    let port = match port {
        None => DEFAULT_PORT,
        Some(p) => p
            .parse::<u16>()
            .ok()
            .filter(|&p| p > 0)
            .ok_or_else(|| UrlError::Port {
                fabric,
                port: p.to_string(),
            })?,
    };
    Ok((host, port))
}

impl TcpUrl {
    /// Resolves the host; the error says what was asked.
    pub fn resolve(&self) -> Result<SocketAddr, ResolveError> {
        (self.host.as_str(), self.port)
            .to_socket_addrs()
            .map_err(|source| ResolveError::Lookup {
                host: self.host.clone(),
                source,
            })?
            .next()
            .ok_or_else(|| ResolveError::NoAddress {
                host: self.host.clone(),
            })
    }
}

/// An admin queue to `url`'s subsystem, controller enabled, one I/O queue
/// asked for.
pub(super) fn admin_queue(
    url: &TcpUrl,
    addr: SocketAddr,
    o: &InitiatorOptions,
) -> Result<Initiator, SetupError> {
    let o = InitiatorOptions {
        queue_entries: InitiatorOptions::default().queue_entries,
        max_data_bytes: ADMIN_MAX_DATA_BYTES,
        ..o.clone()
    };
    let mut a = Initiator::connect_admin(addr, &url.subnqn, &o)
        .map_err(|e| SetupError::connect(url, addr, &o.hostnqn, e))?;
    a.enable()
        .map_err(|e| SetupError::step(url, addr, "enabling the controller", e))?;
    let nq = a
        .set_features(nvme_spec::features::fid::NUM_QUEUES, 0)
        .map_err(|e| SetupError::step(url, addr, "Set Features (Number of Queues)", e))?;
    if !nq.cqe.status().is_success() {
        return Err(SetupError::NumQueues {
            addr,
            status: nq.cqe.status(),
        });
    }
    Ok(a)
}

/// Connects to a one-portal target, reads Identify Controller and
/// Namespace: the namespace's size and LBA size, and the controller's
/// limits.
pub fn inspect_single(url_text: &str, o: &TcpOptions) -> Result<(NvmeTcp, u64, u32), SetupError> {
    let url = parse_url(url_text)?;
    let p = inspect_portal(url, o)?;
    Ok((p.target, p.size_bytes, p.lba_bytes))
}

/// What one portal's admin queue told of the namespace.
pub(super) struct PortalFacts {
    /// The namespace and its controller's limits.
    pub target: NvmeTcp,
    /// Its size.
    pub size_bytes: u64,
    /// Its LBA size.
    pub lba_bytes: u32,
    /// Identify Controller.
    pub ctrl: IdentifyController,
    /// Identify Namespace.
    pub ns: IdentifyNamespace,
    /// The admin queue, still open.
    pub admin: Initiator,
}

/// Connects to `url`, reads CAP, Identify Controller and Namespace.
pub(super) fn inspect_portal(url: TcpUrl, o: &TcpOptions) -> Result<PortalFacts, SetupError> {
    let addr = url.resolve()?;
    let io = o.initiator();
    let mut a = admin_queue(&url, addr, &io)?;
    let cap = a
        .property_get(prop::CAP, true)
        .map_err(|e| SetupError::step(&url, addr, "reading CAP", e))?;
    let ctrl = a
        .identify(cns::CONTROLLER, 0)
        .map_err(|e| SetupError::step(&url, addr, "Identify Controller", e))
        .map(|b| IdentifyController::decode(&b))?;
    let ns = match a.identify(cns::NAMESPACE, url.nsid) {
        Ok(b) => IdentifyNamespace::decode(&b),
        Err(InitiatorError::Command { status, .. }) => {
            return Err(SetupError::NamespaceRefused {
                url: Box::new(url),
                nn: ctrl.nn,
                status,
            })
        }
        Err(e) => return Err(SetupError::step(&url, addr, "Identify Namespace", e)),
    };
    if ns.nsze == 0 {
        return Err(SetupError::NamespaceEmpty {
            url: Box::new(url),
            nn: ctrl.nn,
        });
    }
    if !(9..=16).contains(&ns.lbads) {
        return Err(SetupError::LbaSize {
            nsid: url.nsid,
            lbads: ns.lbads,
        });
    }
    let lba_bytes = 1u32 << ns.lbads;
    let limits = ControllerLimits::new(cap, &ctrl);
    let target = NvmeTcp {
        url,
        addr,
        max_transfer_bytes: limits.max_transfer_bytes,
        in_capsule_max_bytes: limits.in_capsule_max_bytes,
        max_queue_entries: limits.max_queue_entries,
        portals: Vec::new(),
    };
    Ok(PortalFacts {
        target,
        size_bytes: ns.nsze << ns.lbads,
        lba_bytes,
        ctrl,
        ns,
        admin: a,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_parse_with_defaults() {
        let u = parse_url("nvme-tcp://127.0.0.1:4421/nqn.2026-11.io.numio:mem0/2").unwrap();
        assert_eq!(
            u,
            TcpUrl {
                host: "127.0.0.1".into(),
                port: 4421,
                subnqn: "nqn.2026-11.io.numio:mem0".into(),
                nsid: 2
            }
        );
        let u = parse_url("nvme-tcp://target/nqn.x:y").unwrap();
        assert_eq!((u.host.as_str(), u.port, u.nsid), ("target", 4420, 1));
        let u = parse_url("nvme-tcp://[::1]:4420/nqn.x:y/7").unwrap();
        assert_eq!((u.host.as_str(), u.port, u.nsid), ("::1", 4420, 7));
    }

    #[test]
    fn malformed_urls_name_the_part_and_the_form() {
        for (url, part) in [
            ("tcp://h/nqn", "no nvme-tcp://"),
            ("nvme-tcp://h:4420", "no subsystem NQN"),
            ("nvme-tcp://h:99999/nqn", "port \"99999\""),
            ("nvme-tcp://h:0/nqn", "port \"0\""),
            ("nvme-tcp://:4420/nqn", "no host"),
            ("nvme-tcp://h/nqn/x", "NSID \"x\""),
            ("nvme-tcp://h/nqn/0", "NSID \"0\""),
            ("nvme-tcp://h/", "subsystem NQN \"\""),
            ("nvme-tcp://[::1/nqn", "without ']'"),
        ] {
            let e = parse_url(url).unwrap_err().to_string();
            assert!(e.contains(part), "{url}: {e}");
            assert!(
                e.contains("nvme-tcp://HOST[:PORT]/SUBNQN[/NSID]"),
                "{url}: {e}"
            );
        }
    }

    #[test]
    fn a_url_error_carries_the_part_and_the_fabric() {
        assert_eq!(
            parse_url("nvme-tcp://h:0/nqn"),
            Err(UrlError::Port {
                fabric: Fabric::Tcp,
                port: "0".into()
            })
        );
        assert_eq!(
            parse_fabric_url("nvme-rdma://h/nqn/x", Fabric::Rdma),
            Err(UrlError::Nsid {
                fabric: Fabric::Rdma,
                nsid: "x".into()
            })
        );
    }

    // Regression (issue 38): a target at its controller limit (Controller
    // Busy) read as "no such subsystem NQN".
    #[test]
    fn controller_busy_names_the_controller_limit() {
        let url = parse_url("nvme-tcp://127.0.0.1:4420/nqn.x:y").unwrap();
        let e = InitiatorError::Command {
            opcode: 0x7F,
            status: nvme_spec::Status::CONNECT_CTRL_BUSY,
        };
        let text =
            SetupError::step(&url, "127.0.0.1:4420".parse().unwrap(), "connect", e).to_string();
        assert!(text.contains("controller limit reached"), "{text}");
        assert!(text.contains("max_controllers"), "{text}");
        assert!(!text.contains("no such subsystem"), "{text}");
    }
}
