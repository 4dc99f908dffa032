//! Errors of the fabric backends' set-up: a URL that does not parse, a
//! host that does not resolve, and each step of an NVMe/TCP set-up that
//! can fail, with that step's inputs as fields and the initiator's or the
//! OS's error as its source. Each message names the input and the fix.

use std::io;
use std::net::SocketAddr;

use nvme_spec::Status;
use nvmf::InitiatorError;
use planner::Fabric;

use super::url::{portal_name, TcpUrl, MAX_PORTALS, REPLY_TIMEOUT};

/// The form of a target URL of `fabric`, with an example.
fn form(fabric: Fabric) -> String {
    let s = fabric.scheme();
    format!("use {s}HOST[:PORT]/SUBNQN[/NSID], e.g. {s}127.0.0.1:4420/nqn.2026-11.io.numio:mem0/1")
}

/// A fabric target URL (`nvme-tcp://`, `nvme-rdma://`) that does not
/// parse: the part that is wrong, then the form.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UrlError {
    /// Not of the fabric's scheme.
    #[error("not an {} target (no {}); {}", .fabric.prose(), .fabric.scheme(), form(*.fabric))]
    Scheme {
        /// The fabric expected.
        fabric: Fabric,
    },
    /// No `/SUBNQN` after the address.
    #[error("no subsystem NQN after the address; {}", form(*.fabric))]
    NoSubsystem {
        /// The fabric.
        fabric: Fabric,
    },
    /// An IPv6 address without its closing bracket.
    #[error("address {address:?} opens '[' without ']'; {}", form(*.fabric))]
    Bracket {
        /// The fabric.
        fabric: Fabric,
        /// The address part as given.
        address: String,
    },
    /// An address without a host.
    #[error("no host in {address:?}; {}", form(*.fabric))]
    NoHost {
        /// The fabric.
        fabric: Fabric,
        /// The address part as given.
        address: String,
    },
    /// A port that is not 1..=65535.
    #[error("port {port:?} is not a TCP port (1..=65535); {}", form(*.fabric))]
    Port {
        /// The fabric.
        fabric: Fabric,
        /// The port as given.
        port: String,
    },
    /// An NSID that is not a namespace id.
    #[error("NSID {nsid:?} is not a namespace id (1 or more); {}", form(*.fabric))]
    Nsid {
        /// The fabric.
        fabric: Fabric,
        /// The NSID as given.
        nsid: String,
    },
    /// A subsystem NQN that is empty, too long or holds `/`.
    #[error(
        "subsystem NQN {subnqn:?} is empty, longer than 223 bytes or holds '/'; {}",
        form(*.fabric)
    )]
    Subnqn {
        /// The fabric.
        fabric: Fabric,
        /// The NQN as given.
        subnqn: String,
    },
    /// Several portals where one is driven (NVMe/RDMA).
    #[error(
        "{text}: several portals; the {} backend reaches one ({} multipath is not built yet): \
         give one {}HOST[:PORT]/SUBNQN[/NSID]",
        .fabric.name(), .fabric.prose(), .fabric.scheme()
    )]
    SeveralPortals {
        /// The fabric.
        fabric: Fabric,
        /// The target as given.
        text: String,
    },
}

/// A target's host that does not resolve.
#[derive(Debug, thiserror::Error)]
pub enum ResolveError {
    /// The resolver failed.
    #[error("cannot resolve host {host:?}: {source}")]
    Lookup {
        /// The host as given.
        host: String,
        /// The resolver's error.
        source: io::Error,
    },
    /// The host has no address.
    #[error("host {host:?} has no address")]
    NoAddress {
        /// The host as given.
        host: String,
    },
}

/// Where the namespaces behind two portals differ.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Difference {
    /// Identify Controller SUBNQN.
    #[error("subsystems {first:?} and {other:?}")]
    Subsystems {
        /// Through the first portal.
        first: String,
        /// Through the other.
        other: String,
    },
    /// Size or LBA size.
    #[error(
        "sizes {first_blocks} and {other_blocks} blocks of 2^{first_lbads} and 2^{other_lbads} bytes"
    )]
    Sizes {
        /// Blocks through the first portal.
        first_blocks: u64,
        /// Blocks through the other.
        other_blocks: u64,
        /// LBA size (log2) through the first.
        first_lbads: u8,
        /// LBA size (log2) through the other.
        other_lbads: u8,
    },
    /// NGUID or the identification descriptors.
    #[error("namespace identifiers (NGUID, EUI-64, UUID)")]
    Identifiers,
}

/// A set-up step of the `tcp` backend that failed (inspecting a target,
/// connecting a queue, connecting a path of a multipath target).
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    /// The URL does not parse.
    #[error(transparent)]
    Url(#[from] UrlError),
    /// The portals of a multipath target do not parse or disagree.
    #[error(transparent)]
    Portals(#[from] PortalsError),
    /// The host does not resolve.
    #[error(transparent)]
    Resolve(#[from] ResolveError),
    /// A connect or admin command failed; the message adds the likely fix.
    #[error("{step} with {addr} failed: {source}{}", hint(.step, .url, .addr, .hostnqn.as_deref(), .source))]
    Step {
        /// The step (`connect`, `Identify Controller`, …).
        step: &'static str,
        /// The target.
        url: Box<TcpUrl>,
        /// The address connected to.
        addr: SocketAddr,
        /// The host NQN a Connect was sent as (a refusal names it).
        hostnqn: Option<String>,
        /// The initiator's error.
        source: Box<InitiatorError>,
    },
    /// Set Features (Number of Queues) completed with an error.
    #[error("{addr}: Set Features (Number of Queues = 1) failed: {status}")]
    NumQueues {
        /// The address connected to.
        addr: SocketAddr,
        /// Its status.
        status: Status,
    },
    /// Identify Namespace refused the NSID.
    #[error(
        "namespace {} is not in subsystem {} (Identify Namespace: {status}; the controller reports \
         NSIDs up to {nn}); give an existing NSID as nvme-tcp://{}:{}/{}/NSID",
        .url.nsid, .url.subnqn, .url.host, .url.port, .url.subnqn
    )]
    NamespaceRefused {
        /// The target.
        url: Box<TcpUrl>,
        /// The controller's number of namespaces (Identify Controller NN).
        nn: u32,
        /// Identify Namespace's status.
        status: Status,
    },
    /// Identify Namespace shows an empty namespace.
    #[error(
        "namespace {} is not in subsystem {} (Identify Namespace shows no blocks; the controller \
         reports NSIDs up to {nn}); give an existing NSID as nvme-tcp://{}:{}/{}/NSID",
        .url.nsid, .url.subnqn, .url.host, .url.port, .url.subnqn
    )]
    NamespaceEmpty {
        /// The target.
        url: Box<TcpUrl>,
        /// The controller's number of namespaces (Identify Controller NN).
        nn: u32,
    },
    /// An LBA size numio does not drive.
    #[error("namespace {nsid} reports LBA size 2^{lbads}, which numio does not drive")]
    LbaSize {
        /// The namespace.
        nsid: u32,
        /// Its LBA size (log2).
        lbads: u8,
    },
    /// An iodepth whose queue is larger than the controller grants.
    #[error(
        "iodepth={depth} needs a {entries}-entry queue (an NVMe submission queue of N entries holds \
         N-1 commands: one entry stays free so a full queue differs from an empty one); {} at most \
         {granted} (CAP.MQES); use --iodepth {} or less",
        if *.paths { "the controllers grant" } else { "the controller grants" },
        .granted.saturating_sub(1)
    )]
    QueueEntries {
        /// The iodepth asked.
        depth: usize,
        /// Entries it needs.
        entries: u32,
        /// Entries granted (CAP.MQES + 1; the smallest of every path).
        granted: u32,
        /// A multipath target (several controllers).
        paths: bool,
    },
    /// The I/O queue's socket and state could not be taken over.
    #[error("{addr}: {source}")]
    IntoParts {
        /// The address connected to.
        addr: SocketAddr,
        /// The initiator's error.
        source: Box<InitiatorError>,
    },
    /// The socket's receive timeout could not be set.
    #[error("{addr}: setting the socket's receive timeout: {source}")]
    ReceiveTimeout {
        /// The address connected to.
        addr: SocketAddr,
        /// The OS error.
        source: io::Error,
    },
    /// A portal of a multipath target failed its set-up.
    #[error("portal {portal}: {source}")]
    Portal {
        /// The portal (`HOST:PORT`).
        portal: String,
        /// Why.
        source: Box<SetupError>,
    },
    /// Two portals reach different namespaces.
    #[error(
        "portals {first} and {other} do not reach one namespace: different {difference}; give the \
         portals of one namespace"
    )]
    NotOneNamespace {
        /// The first portal (`HOST:PORT`).
        first: String,
        /// The portal that differs.
        other: String,
        /// What differs.
        difference: Difference,
    },
    /// A command on a path's admin queue failed.
    #[error("{portal} {step}: {source}")]
    Path {
        /// The portal (`HOST:PORT`).
        portal: String,
        /// The step.
        step: &'static str,
        /// The initiator's error.
        source: Box<InitiatorError>,
    },
    /// Set Features (ANA Change notices) completed with an error.
    #[error("{portal}: Set Features (ANA Change notices) failed: {status}")]
    AnaNotices {
        /// The portal (`HOST:PORT`).
        portal: String,
        /// Its status.
        status: Status,
    },
    /// The ANA log names neither the namespace nor its group.
    #[error("{portal}: the ANA log names neither namespace {nsid} nor its group {anagrpid}")]
    AnaLog {
        /// The portal (`HOST:PORT`).
        portal: String,
        /// The namespace.
        nsid: u32,
        /// Its ANA group.
        anagrpid: u32,
    },
    /// A path's socket could not be made non-blocking.
    #[error("{portal}: making the socket non-blocking: {source}")]
    Nonblocking {
        /// The portal (`HOST:PORT`).
        portal: String,
        /// The OS error.
        source: io::Error,
    },
    /// A path's thread did not start.
    #[error("starting the thread of path {index}: {source}")]
    PathThread {
        /// The path's index.
        index: usize,
        /// The OS error.
        source: io::Error,
    },
}

impl SetupError {
    /// A set-up step's failure at `addr` of `url`.
    pub(super) fn step(
        url: &TcpUrl,
        addr: SocketAddr,
        step: &'static str,
        e: InitiatorError,
    ) -> Self {
        SetupError::Step {
            step,
            url: Box::new(url.clone()),
            addr,
            hostnqn: None,
            source: Box::new(e),
        }
    }

    /// A Connect sent as `hostnqn` that failed (a refusal names it).
    pub(super) fn connect(
        url: &TcpUrl,
        addr: SocketAddr,
        hostnqn: &str,
        e: InitiatorError,
    ) -> Self {
        SetupError::Step {
            step: "connect",
            url: Box::new(url.clone()),
            addr,
            hostnqn: Some(hostnqn.to_string()),
            source: Box::new(e),
        }
    }
}

/// The likely fix of a failed set-up step, after `; ` (empty where the
/// error's text already names it).
fn hint(
    step: &str,
    url: &TcpUrl,
    addr: &SocketAddr,
    hostnqn: Option<&str>,
    e: &InitiatorError,
) -> String {
    let host = hostnqn.map_or_else(String::new, |h| format!(" {h}"));
    let hint = match e {
        InitiatorError::Io(io) if io.kind() == io::ErrorKind::ConnectionRefused => format!(
            "nothing listens on {addr}; start a target there (numio serve --listen {addr} ..., or an nvmet-tcp port) or fix HOST:PORT"
        ),
        InitiatorError::Io(io)
            if matches!(io.kind(), io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock) =>
        {
            format!(
                "{addr} did not answer within {}s; check the address and any firewall",
                REPLY_TIMEOUT.as_secs()
            )
        }
        // The library's own text names the package to install.
        InitiatorError::Library(_) => return String::new(),
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
    format!("; {hint}")
}

/// The portals of a multipath target that do not parse, or name more than
/// one namespace.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PortalsError {
    /// More portals than numio drives.
    #[error("{count} portals given; numio drives at most {MAX_PORTALS} paths of one namespace")]
    TooMany {
        /// Portals given.
        count: usize,
    },
    /// A portal's URL does not parse.
    #[error("portal {index} ({text}): {source}")]
    Url {
        /// The portal's place, from 1.
        index: usize,
        /// Its URL.
        text: String,
        /// Why.
        source: UrlError,
    },
    /// Two portals name different subsystems or NSIDs.
    #[error(
        "portals {} and {} name different namespaces ({}/{} and {}/{}); every portal of a \
         multipath target names the same SUBNQN/NSID",
        portal_name(.first), portal_name(.other), .first.subnqn, .first.nsid, .other.subnqn,
        .other.nsid
    )]
    Namespaces {
        /// The first portal.
        first: Box<TcpUrl>,
        /// The portal that differs.
        other: Box<TcpUrl>,
    },
    /// One portal given twice.
    #[error("portal {portal} is given twice; give each path's HOST:PORT once")]
    Twice {
        /// The portal (`HOST:PORT`).
        portal: String,
    },
}
