//! Set-up of the `tcp` backend: the target URL, the connection options,
//! and what an admin queue learns of the namespace and its controller
//! (through the blocking [`nvmf::Initiator`]), with set-up errors that name
//! the input and the fix.

use std::io;
use std::net::{SocketAddr, ToSocketAddrs};
use std::time::Duration;

use nvme_spec::fabrics::prop;
use nvme_spec::identify::{cns, IdentifyController, IdentifyNamespace};
use nvmf::host::{ControllerLimits, IoPolicy};
use nvmf::{Initiator, InitiatorError, InitiatorOptions};

/// The scheme of an NVMe/TCP target.
pub const SCHEME: &str = planner::Fabric::Tcp.scheme();
/// The NVMe/TCP port IANA assigned.
pub const DEFAULT_PORT: u16 = 4420;
/// Most I/O queue entries a controller may grant (CAP.MQES is 16 bits).
pub(super) const MAX_QUEUE_ENTRIES: u32 = 65536;
/// How long a reply may take before the run fails.
pub(super) const REPLY_TIMEOUT: Duration = Duration::from_secs(10);
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
pub fn parse_url(s: &str) -> Result<TcpUrl, String> {
    const FORM: &str = "use nvme-tcp://HOST[:PORT]/SUBNQN[/NSID], e.g. nvme-tcp://127.0.0.1:4420/nqn.2026-11.io.numio:mem0/1";
    let rest = s
        .strip_prefix(SCHEME)
        .ok_or_else(|| format!("not an NVMe/TCP target (no {SCHEME}); {FORM}"))?;
    let (authority, path) = rest
        .split_once('/')
        .ok_or_else(|| format!("no subsystem NQN after the address; {FORM}"))?;
    let (host, port) = split_host_port(authority).map_err(|e| format!("{e}; {FORM}"))?;
    let (subnqn, nsid) = match path.rsplit_once('/') {
        Some((nqn, ns)) => {
            let nsid = ns
                .parse::<u32>()
                .ok()
                .filter(|&n| n > 0 && n != u32::MAX)
                .ok_or_else(|| format!("NSID {ns:?} is not a namespace id (1 or more); {FORM}"))?;
            (nqn, nsid)
        }
        None => (path, 1),
    };
    if subnqn.is_empty() || subnqn.len() > 223 || subnqn.contains('/') {
        return Err(format!(
            "subsystem NQN {subnqn:?} is empty, longer than 223 bytes or holds '/'; {FORM}"
        ));
    }
    Ok(TcpUrl {
        host: host.to_string(),
        port,
        subnqn: subnqn.to_string(),
        nsid,
    })
}

fn split_host_port(a: &str) -> Result<(&str, u16), String> {
    let (host, port) = if let Some(v6) = a.strip_prefix('[') {
        let (h, after) = v6
            .split_once(']')
            .ok_or_else(|| format!("address {a:?} opens '[' without ']'"))?;
        (h, after.strip_prefix(':'))
    } else {
        match a.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (a, None),
        }
    };
    if host.is_empty() {
        return Err(format!("no host in {a:?}"));
    }
    let port = match port {
        None => DEFAULT_PORT,
        Some(p) => p
            .parse::<u16>()
            .ok()
            .filter(|&p| p > 0)
            .ok_or_else(|| format!("port {p:?} is not a TCP port (1..=65535)"))?,
    };
    Ok((host, port))
}

impl TcpUrl {
    /// Resolves the host; the error says what was asked.
    pub fn resolve(&self) -> Result<SocketAddr, String> {
        (self.host.as_str(), self.port)
            .to_socket_addrs()
            .map_err(|e| format!("cannot resolve host {:?}: {e}", self.host))?
            .next()
            .ok_or_else(|| format!("host {:?} has no address", self.host))
    }
}

/// A connect or command failure during set-up, with what was asked and the
/// likely fix.
pub(super) fn setup_error(url: &TcpUrl, addr: SocketAddr, step: &str, e: InitiatorError) -> String {
    setup_error_as(url, addr, step, e, None)
}

/// [`setup_error`] for a Connect sent as `hostnqn`: a refusal names it.
pub(super) fn setup_error_as(
    url: &TcpUrl,
    addr: SocketAddr,
    step: &str,
    e: InitiatorError,
    hostnqn: Option<&str>,
) -> String {
    let host = hostnqn.map_or_else(String::new, |h| format!(" {h}"));
    let hint = match &e {
        InitiatorError::Io(io) if io.kind() == io::ErrorKind::ConnectionRefused => format!(
            "nothing listens on {addr}; start a target there (numio serve --listen {addr} ..., or an nvmet-tcp port) or fix HOST:PORT"
        ),
        InitiatorError::Io(io)
            if matches!(io.kind(), io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock) =>
        {
            format!("{addr} did not answer within {}s; check the address and any firewall", REPLY_TIMEOUT.as_secs())
        }
        // The library's own text names the package to install.
        InitiatorError::Library(_) => return format!("{step} with {addr} failed: {e}"),
        InitiatorError::Tls(_) => "the TLS handshake failed: the target must hold this host's PSK (--tls-key-file, \
             for --hostnqn and this subsystem); a target that does not require TLS closes the connection"
            .to_string(),
        InitiatorError::Auth(_) => "the target asks this host (--hostnqn) to authenticate: \
             --dhchap-secret-file (and --dhchap-ctrl-secret-file) must hold the secrets the target lists for it"
            .to_string(),
        InitiatorError::Command { status, .. } if step == "connect" => {
            let not_allowed;
            let why = if status.sc() == 0x84 {
                not_allowed = format!(
                    "this host NQN{host} is not allowed; allow it on the target (numio serve --allow-host NQN) or connect as an allowed one (--hostnqn)"
                );
                not_allowed.as_str()
            } else if *status == nvme_spec::Status::CONNECT_CTRL_BUSY {
                "controller limit reached: the target holds as many controllers as it allows \
                 (numio serve: max_controllers in [limits]); retry when hosts disconnect"
            } else {
                "no such subsystem NQN, or a parameter it cannot take"
            };
            format!(
                "the target refused subsystem {:?} ({why}): check the NQN (`nvme discover -t tcp -a {} -s {}`) and that the host{host} may connect (--hostnqn)",
                url.subnqn, url.host, url.port
            )
        }
        InitiatorError::Io(io) if io.kind() == io::ErrorKind::UnexpectedEof => {
            "the target closed the connection: check that it speaks NVMe/TCP on this port, \
             and whether it requires TLS (then --tls-key-file FILE)"
                .into()
        }
        _ => "check that the target speaks NVMe/TCP on this port".into(),
    };
    format!("{step} with {addr} failed: {e}; {hint}")
}

/// An admin queue to `url`'s subsystem, controller enabled, one I/O queue
/// asked for.
pub(super) fn admin_queue(
    url: &TcpUrl,
    addr: SocketAddr,
    o: &InitiatorOptions,
) -> Result<Initiator, String> {
    let o = InitiatorOptions {
        queue_entries: InitiatorOptions::default().queue_entries,
        max_data_bytes: ADMIN_MAX_DATA_BYTES,
        ..o.clone()
    };
    let mut a = Initiator::connect_admin(addr, &url.subnqn, &o)
        .map_err(|e| setup_error_as(url, addr, "connect", e, Some(&o.hostnqn)))?;
    a.enable()
        .map_err(|e| setup_error(url, addr, "enabling the controller", e))?;
    let nq = a
        .set_features(nvme_spec::features::fid::NUM_QUEUES, 0)
        .map_err(|e| setup_error(url, addr, "Set Features (Number of Queues)", e))?;
    if !nq.cqe.status().is_success() {
        return Err(format!(
            "{addr}: Set Features (Number of Queues = 1) failed: {}",
            nq.cqe.status()
        ));
    }
    Ok(a)
}

/// Connects to a one-portal target, reads Identify Controller and
/// Namespace: the namespace's size and LBA size, and the controller's
/// limits.
pub fn inspect_single(url_text: &str, o: &TcpOptions) -> Result<(NvmeTcp, u64, u32), String> {
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
pub(super) fn inspect_portal(url: TcpUrl, o: &TcpOptions) -> Result<PortalFacts, String> {
    let addr = url.resolve()?;
    let io = o.initiator();
    let mut a = admin_queue(&url, addr, &io)?;
    let cap = a
        .property_get(prop::CAP, true)
        .map_err(|e| setup_error(&url, addr, "reading CAP", e))?;
    let ctrl = a
        .identify(cns::CONTROLLER, 0)
        .map_err(|e| setup_error(&url, addr, "Identify Controller", e))
        .map(|b| IdentifyController::decode(&b))?;
    let unknown = |detail: String| {
        format!(
            "namespace {} is not in subsystem {} ({detail}; the controller reports NSIDs up to {}); give an existing NSID as nvme-tcp://{}:{}/{}/NSID",
            url.nsid, url.subnqn, ctrl.nn, url.host, url.port, url.subnqn
        )
    };
    let ns = match a.identify(cns::NAMESPACE, url.nsid) {
        Ok(b) => IdentifyNamespace::decode(&b),
        Err(InitiatorError::Command { status, .. }) => {
            return Err(unknown(format!("Identify Namespace: {status}")))
        }
        Err(e) => return Err(setup_error(&url, addr, "Identify Namespace", e)),
    };
    if ns.nsze == 0 {
        return Err(unknown("Identify Namespace shows no blocks".into()));
    }
    if !(9..=16).contains(&ns.lbads) {
        return Err(format!(
            "namespace {} reports LBA size 2^{}, which numio does not drive",
            url.nsid, ns.lbads
        ));
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
            let e = parse_url(url).unwrap_err();
            assert!(e.contains(part), "{url}: {e}");
            assert!(
                e.contains("nvme-tcp://HOST[:PORT]/SUBNQN[/NSID]"),
                "{url}: {e}"
            );
        }
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
        let text = setup_error(&url, "127.0.0.1:4420".parse().unwrap(), "connect", e);
        assert!(text.contains("controller limit reached"), "{text}");
        assert!(text.contains("max_controllers"), "{text}");
        assert!(!text.contains("no such subsystem"), "{text}");
    }
}
