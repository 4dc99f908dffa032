//! Subsystems and controllers: the control-path state shared between the
//! queues (connections) of one controller, which may live on different
//! reactors. Only Connect, admin commands and teardown take these locks; the
//! I/O path reads one atomic flag (`Controller::alive`).

use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, RwLock};
use std::time::{Duration, Instant};

use nvme_spec::fabrics::DISCOVERY_NQN;
use nvme_spec::log::ErrorEntry;

use super::auth::HostKeys;
use super::config::{HostConfig, Limits, TargetConfig};
use super::counters::CounterTable;
use super::error::{ConfigError, TargetError};
use super::namespace::Namespace;
use super::ns_set::{NamespaceSet, MAX_NAMESPACES};
use super::port::Port;
use crate::tls::ConfiguredPsk;

/// NVM subsystem or the discovery subsystem.
#[derive(Debug)]
pub struct Subsystem {
    /// NQN.
    pub nqn: String,
    /// Serial number.
    pub serial: String,
    /// Model number.
    pub model: String,
    /// True for the discovery subsystem.
    pub is_discovery: bool,
    /// Namespaces by nsid; a reload may add and remove some.
    pub namespaces: NamespaceSet,
    /// Host NQNs allowed to connect (a reload may change them; connected
    /// hosts stay).
    allowed_hosts: RwLock<Vec<String>>,
    allow_any_host: AtomicBool,
    /// Hosts that must authenticate, with their secrets (allowed too).
    host_keys: KeysByHost<HostKeys>,
    /// Hosts' TLS PSKs (allowed too), by NQN.
    tls_keys: KeysByHost<ConfiguredPsk>,
}

/// Keys of one kind by host NQN, replaced whole by a reload.
#[derive(Debug)]
struct KeysByHost<T>(RwLock<HashMap<String, Arc<T>>>);

impl<T: PartialEq> KeysByHost<T> {
    fn new(keys: HashMap<String, Arc<T>>) -> Self {
        Self(RwLock::new(keys))
    }

    fn get(&self, hostnqn: &str) -> Option<Arc<T>> {
        self.0.read().expect("keys lock").get(hostnqn).cloned()
    }

    /// Every host's key, by NQN in order.
    fn sorted(&self) -> Vec<(String, Arc<T>)> {
        let mut v: Vec<_> = self
            .0
            .read()
            .expect("keys lock")
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        v.sort_by(|a, b| a.0.cmp(&b.0));
        v
    }

    /// Puts `keys` in place; whether they differ from before.
    fn replace(&self, keys: HashMap<String, Arc<T>>) -> bool {
        let mut k = self.0.write().expect("keys lock");
        let changed = *k != keys;
        *k = keys;
        changed
    }
}

impl Subsystem {
    /// True when `hostnqn` may connect.
    pub fn host_allowed(&self, hostnqn: &str) -> bool {
        self.is_discovery
            || self.allow_any_host.load(Ordering::Acquire)
            || self
                .allowed_hosts
                .read()
                .expect("hosts lock")
                .iter()
                .any(|h| h == hostnqn)
            || self.host_keys(hostnqn).is_some()
            || self.tls_key(hostnqn).is_some()
    }

    /// The TLS PSK of `hostnqn`, if it has one.
    pub fn tls_key(&self, hostnqn: &str) -> Option<Arc<ConfiguredPsk>> {
        self.tls_keys.get(hostnqn)
    }

    /// The hosts with TLS PSKs, by NQN.
    pub fn tls_hosts(&self) -> Vec<(String, Arc<ConfiguredPsk>)> {
        self.tls_keys.sorted()
    }

    /// The hosts' TLS PSKs from now on (a reload); returns whether
    /// anything changed. Connected queues keep their session; new
    /// handshakes use the new keys.
    pub fn set_tls_keys(&self, keys: HashMap<String, Arc<ConfiguredPsk>>) -> bool {
        self.tls_keys.replace(keys)
    }

    /// The secrets `hostnqn` authenticates with, if it must (never for the
    /// discovery subsystem).
    pub fn host_keys(&self, hostnqn: &str) -> Option<Arc<HostKeys>> {
        self.host_keys.get(hostnqn)
    }

    /// The hosts that must authenticate, by NQN.
    pub fn authenticating_hosts(&self) -> Vec<(String, Arc<HostKeys>)> {
        self.host_keys.sorted()
    }

    /// The hosts that must authenticate from now on (a reload); returns
    /// whether anything changed. Connected queues keep their transaction;
    /// a re-authentication uses the new keys.
    pub fn set_host_keys(&self, keys: HashMap<String, Arc<HostKeys>>) -> bool {
        self.host_keys.replace(keys)
    }

    /// Namespace by id (active ones only).
    pub fn namespace(&self, nsid: u32) -> Option<&Arc<Namespace>> {
        self.namespaces.get(nsid)
    }

    /// The hosts allowed to connect from now on (a reload); returns
    /// whether they differ from before. Connected hosts stay connected.
    pub fn set_hosts(&self, allowed: &[String], any: bool) -> bool {
        let mut hosts = self.allowed_hosts.write().expect("hosts lock");
        let changed = *hosts != allowed || self.allow_any_host.load(Ordering::Acquire) != any;
        *hosts = allowed.to_vec();
        self.allow_any_host.store(any, Ordering::Release);
        changed
    }

    /// The allowed host NQNs and whether any host may connect.
    pub fn hosts(&self) -> (Vec<String>, bool) {
        let hosts = self.allowed_hosts.read().expect("hosts lock").clone();
        (hosts, self.allow_any_host.load(Ordering::Acquire))
    }
}

/// The hosts' TLS PSKs, as the handshake looks them up: the subsystem the
/// identity names, and for the discovery subsystem any subsystem that
/// holds a key for the host (the one whose digest matches).
struct TlsKeys(Vec<Arc<Subsystem>>);

impl crate::tls::ossl::PskLookup for TlsKeys {
    fn tls_psk(
        &self,
        id: &crate::tls::Identity,
    ) -> Result<zeroize::Zeroizing<Vec<u8>>, crate::tls::ossl::PskRefusal> {
        use crate::tls::ossl::PskRefusal;
        let subsystems: Vec<&Arc<Subsystem>> = if id.subnqn == DISCOVERY_NQN {
            self.0.iter().collect()
        } else {
            let s = self.0.iter().find(|s| s.nqn == id.subnqn).ok_or_else(|| {
                PskRefusal::UnknownSubsystem {
                    subnqn: id.subnqn.clone(),
                }
            })?;
            vec![s]
        };
        let mut held = false;
        for s in subsystems {
            if let Some(k) = s.tls_key(&id.hostnqn) {
                held = true;
                if let Some(psk) = k.psk_for(id) {
                    return Ok(psk);
                }
            }
        }
        let (hostnqn, subnqn) = (id.hostnqn.clone(), id.subnqn.clone());
        Err(if held {
            PskRefusal::OtherKey { hostnqn, subnqn }
        } else {
            PskRefusal::NoKey { hostnqn, subnqn }
        })
    }
}

fn tls_context(
    subsystems: &[Arc<Subsystem>],
) -> Result<crate::tls::ossl::ServerContext, TargetError> {
    crate::tls::ossl::ServerContext::new(Arc::new(TlsKeys(subsystems.to_vec()))).map_err(|e| {
        TargetError::Os {
            what: "setting up TLS",
            source: match e {
                crate::tls::ossl::TlsError::Library(e) => e.into(),
                e => std::io::Error::other(e),
            },
        }
    })
}

/// Reads the DH-HMAC-CHAP secrets of every host in `hosts` that has one,
/// by NQN.
pub fn load_host_keys(hosts: &[HostConfig]) -> Result<HashMap<String, Arc<HostKeys>>, ConfigError> {
    let mut keys = HashMap::new();
    for h in hosts {
        if let Some(k) = HostKeys::load(h)? {
            keys.insert(h.nqn.clone(), Arc::new(k));
        }
    }
    Ok(keys)
}

/// Reads the TLS PSKs of every host in `hosts` that has one, by NQN.
pub fn load_tls_keys(
    hosts: &[HostConfig],
) -> Result<HashMap<String, Arc<ConfiguredPsk>>, ConfigError> {
    let mut keys = HashMap::new();
    for h in hosts {
        if let Some(p) = &h.tls_key {
            let k = ConfiguredPsk::from_file(p)
                .map_err(|e| ConfigError::Invalid(format!("host {}: TLS key {e}", h.nqn)))?;
            keys.insert(h.nqn.clone(), Arc::new(k));
        }
    }
    Ok(keys)
}

/// Counters a controller reports in SMART and the error log.
#[derive(Debug, Default)]
pub struct ControllerStats {
    /// Bytes read by the host.
    pub read_bytes: AtomicU64,
    /// Bytes written by the host.
    pub written_bytes: AtomicU64,
    /// Read commands.
    pub reads: AtomicU64,
    /// Write commands.
    pub writes: AtomicU64,
    /// Every queue's counters by (qid, nsid), for metrics.
    pub queues: CounterTable,
}

/// Admin-visible controller registers and features (control path only).
#[derive(Debug, Default)]
pub struct ControllerRegs {
    /// CC.
    pub cc: u32,
    /// CSTS.
    pub csts: u32,
    /// I/O queues granted by Set Features Number of Queues (0 = not set).
    pub io_queues_granted: u16,
    /// Asynchronous event configuration.
    pub aec: u32,
    /// Error log, newest last, bounded.
    pub errors: Vec<ErrorEntry>,
    /// Errors ever logged.
    pub error_count: u64,
    /// Asynchronous events not yet reported (AER completion dword 0s).
    pub events: VecDeque<u32>,
    /// Namespaces changed since the host last read the Changed Namespace
    /// List log (at most [`CHANGED_NS_MAX`]; `[0xFFFF_FFFF]` once more did).
    pub changed_ns: Vec<u32>,
    /// A Namespace Attribute Changed notice was sent and its log page not
    /// yet read: further ones wait (the spec's event masking).
    pub ns_notice_masked: bool,
    /// An ANA Change notice was sent and the ANA log not yet read.
    pub ana_notice_masked: bool,
}

/// A namespace found resized by [`Target::check_namespace_sizes`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NamespaceResize {
    /// Its subsystem.
    pub nqn: String,
    /// Its id.
    pub nsid: u32,
    /// The new size.
    pub size_bytes: u64,
    /// Controllers sent a Namespace Attribute Changed notice.
    pub notified: usize,
}

/// Entries the Changed Namespace List log holds before it overflows.
pub const CHANGED_NS_MAX: usize = 1024;
/// Asynchronous Event Configuration bit: Namespace Attribute Notices.
pub const AEC_NS_ATTRIBUTE: u32 = 1 << 8;
/// AER completion dword 0 of a Namespace Attribute Changed notice: type 2
/// (notice), information 0, log page 04h (Changed Namespace List).
pub const AEN_NS_ATTRIBUTE_CHANGED: u32 = 0x0004_0002;

/// Largest error log kept per controller.
pub const ERROR_LOG_ENTRIES: usize = 16;

/// A controller: created by an admin Connect, joined by I/O Connects.
#[derive(Debug)]
pub struct Controller {
    /// Controller id.
    pub cntlid: u16,
    /// Its subsystem.
    pub subsys: Arc<Subsystem>,
    /// Host NQN that created it.
    pub hostnqn: String,
    /// Host identifier.
    pub hostid: [u8; 16],
    /// Id of the port its admin queue connected through (see
    /// [`Target::port`]).
    pub port: u16,
    /// Keep alive timeout in ms (0: none).
    pub kato_ms: AtomicU32,
    /// Cleared on teardown; every queue of the controller then closes.
    pub alive: AtomicBool,
    /// Registers and features.
    pub regs: Mutex<ControllerRegs>,
    /// I/O queue ids in use.
    pub io_qids: Mutex<Vec<u16>>,
    /// When its admin queue last ran a command (or connected): a
    /// controller idle past [`super::unauthenticated::IDLE_ADMIN_GRACE`]
    /// with KATO 0 and no I/O queue gives its slot to a newcomer when
    /// every slot is taken (`ctrl_slots.rs`).
    pub last_admin_command: Mutex<Instant>,
    /// Counters.
    pub stats: ControllerStats,
}

impl Controller {
    /// Adds an error log entry.
    pub fn log_error(&self, mut e: ErrorEntry) {
        let mut r = self.regs.lock().expect("controller lock");
        r.error_count += 1;
        e.error_count = r.error_count;
        if r.errors.len() == ERROR_LOG_ENTRIES {
            r.errors.remove(0);
        }
        r.errors.push(e);
    }

    /// Namespace `nsid` changed (size): lists it in the Changed Namespace
    /// List log and, if the host enabled those notices and none is pending,
    /// queues a Namespace Attribute Changed event; returns whether it did.
    pub fn namespace_changed(&self, nsid: u32) -> bool {
        let mut r = self.regs.lock().expect("controller lock");
        if r.changed_ns.first() != Some(&0xFFFF_FFFF) && !r.changed_ns.contains(&nsid) {
            if r.changed_ns.len() == CHANGED_NS_MAX {
                r.changed_ns = vec![0xFFFF_FFFF];
            } else {
                r.changed_ns.push(nsid);
            }
        }
        if r.aec & AEC_NS_ATTRIBUTE != 0 && !r.ns_notice_masked {
            r.ns_notice_masked = true;
            r.events.push_back(AEN_NS_ATTRIBUTE_CHANGED);
            return true;
        }
        false
    }

    /// The next event to report, if any.
    pub fn take_event(&self) -> Option<u32> {
        self.regs
            .lock()
            .expect("controller lock")
            .events
            .pop_front()
    }

    /// The Changed Namespace List log page (4 KiB); unless `retain`, the
    /// list is cleared and notices are unmasked.
    pub fn changed_ns_log(&self, retain: bool) -> Vec<u8> {
        let mut r = self.regs.lock().expect("controller lock");
        let mut page = vec![0u8; 4096];
        for (i, id) in r.changed_ns.iter().enumerate() {
            page[4 * i..4 * i + 4].copy_from_slice(&id.to_le_bytes());
        }
        if !retain {
            r.changed_ns.clear();
            r.ns_notice_masked = false;
        }
        page
    }

    /// True while the controller is usable.
    pub fn is_alive(&self) -> bool {
        self.alive.load(Ordering::Acquire)
    }
}

/// Why a Connect was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConnectRefusal {
    /// No subsystem by that NQN (IPO: offset of SUBNQN in connect data).
    UnknownSubsystem,
    /// An NVM subsystem asked for through a listener that is not one of its
    /// ports (a discovery-only listener), as Linux nvmet refuses a
    /// subsystem not linked to the port: the host is to connect through a
    /// port the discovery log lists.
    NotOnPort,
    /// The host is not on the allow list.
    HostNotAllowed,
    /// Controller id not found or belonging to another host/subsystem.
    UnknownController,
    /// An I/O queue Connect whose Host ID is not its controller's (the
    /// admin queue's): another host using a known NQN and controller id.
    HostIdMismatch,
    /// Too many controllers or queues.
    Busy,
    /// The host must authenticate and its source address holds
    /// [`super::unauthenticated::UNAUTHENTICATED_PER_SOURCE`] controllers that
    /// have not yet.
    UnauthenticatedPerSource,
    /// Queue id already connected or above the granted count.
    BadQueueId,
    /// On a TLS connection, a Connect for another host or subsystem than
    /// the PSK identity names.
    TlsIdentityMismatch,
}

/// Target-wide shared state.
#[derive(Debug)]
pub struct Target {
    /// Limits.
    pub limits: Limits,
    /// NVM subsystems.
    pub subsystems: Vec<Arc<Subsystem>>,
    /// The discovery subsystem.
    pub discovery: Arc<Subsystem>,
    /// NVMe/TCP listeners (for the discovery log).
    pub listeners: Vec<SocketAddr>,
    /// One NVMe port per listener, in order (port id = index + 1).
    pub ports: Vec<Port>,
    /// ANA state changes over all ports.
    pub(crate) ana_changes: AtomicU64,
    /// Discovery service port (0: none).
    pub discovery_port: u16,
    /// Log each queue connect.
    pub log_connections: bool,
    pub(super) controllers: Mutex<Registry>,
    /// Open connections.
    pub connections: AtomicU32,
    /// Connection slots by source address, and the sockets that may be
    /// closed for room ([`Target::admit`]).
    pub(crate) admission: Mutex<super::ledger::Ledger>,
    /// Sources refused at the unauthenticated limit, closed at accept for
    /// a while ([`super::backoff`]).
    pub backoff: super::backoff::SourceBackoff,
    /// Set on SIGINT/SIGTERM: stop accepting, drain, flush.
    pub shutting_down: AtomicBool,
    /// Incremented whenever the discovery log could change.
    pub discovery_genctr: AtomicU64,
    /// Resized namespaces noticed by [`Target::check_namespace_sizes`].
    resizes_noticed: AtomicU64,
    /// Connects refused and sockets closed before serving, by reason.
    pub refusals: super::counters::Refusals,
    /// DH-HMAC-CHAP exponentiations, off the reactors.
    pub dh: super::dh_pool::DhPool,
    /// Steps of unfinished TLS handshakes, off the reactors.
    pub tls_handshakes: super::tls_pool::TlsPool,
    /// The rate of lines about failed DH-HMAC-CHAP transactions and TLS
    /// handshakes, over all reactors (each is also counted in
    /// [`Target::refusals`]).
    pub auth_log: super::log_limit::SharedLogLimit,
    /// The rate of lines about Connects refused at a limit (controller
    /// limit reached, unauthenticated controllers per source), over all
    /// reactors: a host retrying in a loop must not flood the log (each is
    /// also counted in [`Target::refusals`]).
    pub refusal_log: super::log_limit::SharedLogLimit,
    /// Command data buffers held over all connections.
    pub buffers: super::buf::BufferBudget,
    /// TLS set-up when every listener requires TLS.
    pub tls: Option<Arc<crate::tls::ossl::ServerContext>>,
    /// Reactors busy-poll their rings.
    pub poll: bool,
    /// Announces changes a waiter may be waiting for ([`Target::wait_until`]).
    watch: (Mutex<u64>, Condvar),
}

#[derive(Debug, Default)]
pub(super) struct Registry {
    pub(super) by_id: HashMap<u16, Arc<Controller>>,
    next_cntlid: u16,
    /// Controllers whose host must authenticate and whose admin queue has
    /// not yet (`ctrl_slots.rs`): they hold no slot of `max_controllers`.
    pub(super) unauthenticated: Vec<super::unauthenticated::Unauthenticated>,
}

impl Target {
    /// Opens every namespace and builds the target.
    pub fn new(cfg: &TargetConfig) -> Result<Arc<Self>, TargetError> {
        cfg.validate()?;
        let mut subsystems = Vec::new();
        for s in &cfg.subsystems {
            let mut namespaces = Vec::new();
            for (i, n) in s.namespaces.iter().enumerate() {
                namespaces.push(Arc::new(Namespace::open(&s.nqn, i as u32 + 1, n)?));
            }
            subsystems.push(Arc::new(Subsystem {
                nqn: s.nqn.clone(),
                serial: s.serial.clone(),
                model: s.model.clone(),
                is_discovery: false,
                namespaces: NamespaceSet::new(namespaces).map_err(|_| {
                    ConfigError::Invalid(format!(
                        "subsystem {}: more than {MAX_NAMESPACES} namespaces; split them over several subsystems",
                        s.nqn
                    ))
                })?,
                allowed_hosts: RwLock::new(s.allowed_hosts.clone()),
                allow_any_host: AtomicBool::new(s.allow_any_host),
                host_keys: KeysByHost::new(load_host_keys(&s.hosts)?),
                tls_keys: KeysByHost::new(load_tls_keys(&s.hosts)?),
            }));
        }
        let discovery = Arc::new(Subsystem {
            nqn: DISCOVERY_NQN.to_string(),
            serial: "NUMIODISC".into(),
            model: "numio discovery".into(),
            is_discovery: true,
            namespaces: NamespaceSet::new(Vec::new()).expect("empty"),
            allowed_hosts: RwLock::new(Vec::new()),
            allow_any_host: AtomicBool::new(true),
            host_keys: KeysByHost::new(HashMap::new()),
            tls_keys: KeysByHost::new(HashMap::new()),
        });
        let tls = match cfg.tls {
            true => Some(Arc::new(tls_context(&subsystems)?)),
            false => None,
        };
        let mut ports: Vec<Port> = cfg
            .listen
            .iter()
            .zip(cfg.ana_states()?)
            .enumerate()
            .map(|(i, (addr, state))| Port::new(i as u16 + 1, *addr, state))
            .collect();
        // NVMe/RDMA ports follow the TCP ones, optimized.
        for a in &cfg.rdma_listen {
            let id = ports.len() as u16 + 1;
            ports.push(
                Port::new(id, *a, nvme_spec::ana::AnaState::Optimized)
                    .with_transport(super::port::Transport::Rdma),
            );
        }
        Ok(Arc::new(Self {
            limits: cfg.limits,
            subsystems,
            discovery,
            listeners: cfg.listen.clone(),
            ports,
            ana_changes: AtomicU64::new(0),
            discovery_port: cfg.discovery_port,
            log_connections: cfg.log_connections,
            controllers: Mutex::new(Registry {
                by_id: HashMap::new(),
                next_cntlid: 1,
                unauthenticated: Vec::new(),
            }),
            connections: AtomicU32::new(0),
            admission: Default::default(),
            backoff: Default::default(),
            shutting_down: AtomicBool::new(false),
            discovery_genctr: AtomicU64::new(1),
            resizes_noticed: AtomicU64::new(0),
            refusals: Default::default(),
            dh: Default::default(),
            tls_handshakes: Default::default(),
            auth_log: super::log_limit::SharedLogLimit::standard("authentication failure"),
            refusal_log: super::log_limit::SharedLogLimit::standard("Connect refusal"),
            buffers: super::buf::BufferBudget::new(cfg.limits.max_buffer_bytes),
            tls,
            poll: cfg.poll,
            watch: (Mutex::new(0), Condvar::new()),
        }))
    }

    /// Subsystem (or the discovery subsystem) by NQN.
    pub fn subsystem(&self, nqn: &str) -> Option<&Arc<Subsystem>> {
        if nqn == DISCOVERY_NQN {
            return Some(&self.discovery);
        }
        self.subsystems.iter().find(|s| s.nqn == nqn)
    }

    /// Admin Connect through port `port`: allocates a controller.
    pub fn create_controller(
        &self,
        port: u16,
        subnqn: &str,
        hostnqn: &str,
        hostid: [u8; 16],
        kato_ms: u32,
    ) -> Result<Arc<Controller>, ConnectRefusal> {
        self.create_controller_from(port, subnqn, hostnqn, hostid, kato_ms, None)
    }

    /// [`Target::create_controller`] for a host at `source`: a host that
    /// must authenticate takes no slot of `max_controllers` until it has,
    /// but one of the few kept for unauthenticated controllers
    /// (`ctrl_slots.rs`).
    pub fn create_controller_from(
        &self,
        port: u16,
        subnqn: &str,
        hostnqn: &str,
        hostid: [u8; 16],
        kato_ms: u32,
        source: Option<std::net::IpAddr>,
    ) -> Result<Arc<Controller>, ConnectRefusal> {
        let subsys = self
            .subsystem(subnqn)
            .ok_or(ConnectRefusal::UnknownSubsystem)?;
        if !subsys.is_discovery && self.port(port).is_none() {
            return Err(ConnectRefusal::NotOnPort);
        }
        if !subsys.host_allowed(hostnqn) {
            return Err(ConnectRefusal::HostNotAllowed);
        }
        let must_authenticate = subsys.host_keys(hostnqn).is_some();
        let mut reg = self.controllers.lock().expect("registry lock");
        if reg.authenticated_count() >= self.limits.max_controllers as usize {
            self.room_for_another(&mut reg)?;
        }
        if must_authenticate {
            self.room_for_unauthenticated(&mut reg, source)?;
        }
        let mut id = reg.next_cntlid;
        while reg.by_id.contains_key(&id) {
            id = if id >= 0xFFEF { 1 } else { id + 1 };
        }
        reg.next_cntlid = if id >= 0xFFEF { 1 } else { id + 1 };
        let ctrl = Arc::new(Controller {
            cntlid: id,
            subsys: subsys.clone(),
            hostnqn: hostnqn.to_string(),
            hostid,
            port,
            kato_ms: AtomicU32::new(kato_ms),
            alive: AtomicBool::new(true),
            regs: Mutex::new(ControllerRegs::default()),
            io_qids: Mutex::new(Vec::new()),
            last_admin_command: Mutex::new(Instant::now()),
            stats: ControllerStats::default(),
        });
        reg.by_id.insert(id, ctrl.clone());
        if must_authenticate {
            reg.unauthenticated
                .push(super::unauthenticated::Unauthenticated::new(id, source));
        }
        Ok(ctrl)
    }

    /// I/O Connect: finds the controller and claims queue `qid`.
    pub fn join_controller(
        &self,
        cntlid: u16,
        subnqn: &str,
        hostnqn: &str,
        hostid: [u8; 16],
        qid: u16,
    ) -> Result<Arc<Controller>, ConnectRefusal> {
        let ctrl = {
            let reg = self.controllers.lock().expect("registry lock");
            reg.by_id
                .get(&cntlid)
                .cloned()
                .ok_or(ConnectRefusal::UnknownController)?
        };
        if ctrl.subsys.nqn != subnqn || ctrl.hostnqn != hostnqn || !ctrl.is_alive() {
            return Err(ConnectRefusal::UnknownController);
        }
        if ctrl.hostid != hostid {
            return Err(ConnectRefusal::HostIdMismatch);
        }
        let granted = ctrl.regs.lock().expect("controller lock").io_queues_granted;
        let max = if granted == 0 {
            self.limits.max_io_queues
        } else {
            granted
        };
        if qid == 0 || qid > max {
            return Err(ConnectRefusal::BadQueueId);
        }
        let mut q = ctrl.io_qids.lock().expect("queue lock");
        if q.contains(&qid) {
            return Err(ConnectRefusal::BadQueueId);
        }
        q.push(qid);
        drop(q);
        Ok(ctrl)
    }

    /// I/O queue closed: releases its id.
    pub fn leave_controller(&self, ctrl: &Controller, qid: u16) {
        ctrl.io_qids
            .lock()
            .expect("queue lock")
            .retain(|&q| q != qid);
        self.changed();
    }

    /// Admin queue closed or keep alive expired: the controller and all its
    /// queues go away.
    pub fn destroy_controller(&self, cntlid: u16) {
        let removed = self
            .controllers
            .lock()
            .expect("registry lock")
            .forget(cntlid);
        if let Some(c) = removed {
            c.alive.store(false, Ordering::Release);
        }
        self.changed();
    }

    /// Re-reads the size of every file or device namespace; each one that
    /// changed is reported to every controller of its subsystem (see
    /// [`Controller::namespace_changed`]). Returns the changes, and the
    /// namespaces whose size could not be read (skipped), in words.
    pub fn check_namespace_sizes(&self) -> (Vec<NamespaceResize>, Vec<String>) {
        let (mut changes, mut errors) = (Vec::new(), Vec::new());
        for sub in &self.subsystems {
            for ns in &sub.namespaces {
                match ns.refresh_size() {
                    Ok(Some(size)) => {
                        let ctrls: Vec<Arc<Controller>> = {
                            let reg = self.controllers.lock().expect("registry lock");
                            reg.by_id
                                .values()
                                .filter(|c| Arc::ptr_eq(&c.subsys, sub))
                                .cloned()
                                .collect()
                        };
                        let told = ctrls
                            .iter()
                            .filter(|c| c.namespace_changed(ns.nsid))
                            .count();
                        self.resizes_noticed.fetch_add(1, Ordering::AcqRel);
                        changes.push(NamespaceResize {
                            nqn: sub.nqn.clone(),
                            nsid: ns.nsid,
                            size_bytes: size,
                            notified: told,
                        });
                    }
                    Ok(None) => {}
                    Err(e) => errors.push(format!("{} nsid {}: {e}", sub.nqn, ns.nsid)),
                }
            }
        }
        if !changes.is_empty() {
            self.changed();
        }
        (changes, errors)
    }

    /// Resized namespaces noticed so far.
    pub fn resizes_noticed(&self) -> u64 {
        self.resizes_noticed.load(Ordering::Acquire)
    }

    /// Wakes every [`Target::wait_until`]: something it may wait for
    /// changed (a connection or controller went, counters were folded in, a
    /// resize was noticed). Called with no other lock of the target held.
    pub fn changed(&self) {
        let mut n = self.watch.0.lock().expect("watch lock");
        *n += 1;
        self.watch.1.notify_all();
    }

    /// Waits until `done(self)` holds, looking again at each change the
    /// target announces, for at most `timeout`; returns whether it holds.
    /// For tests and tools that wait for an event, not for a clock.
    pub fn wait_until(&self, timeout: Duration, mut done: impl FnMut(&Target) -> bool) -> bool {
        let deadline = Instant::now() + timeout;
        let mut n = self.watch.0.lock().expect("watch lock");
        loop {
            if done(self) {
                return true;
            }
            let now = Instant::now();
            if now >= deadline {
                return false;
            }
            n = self
                .watch
                .1
                .wait_timeout(n, deadline - now)
                .expect("watch lock")
                .0;
        }
    }

    /// Live controllers (for tests and status).
    pub fn controller_count(&self) -> usize {
        self.controllers.lock().expect("registry lock").by_id.len()
    }

    /// Every live controller.
    pub fn controllers(&self) -> Vec<Arc<Controller>> {
        let reg = self.controllers.lock().expect("registry lock");
        reg.by_id.values().cloned().collect()
    }

    /// A live controller by id.
    pub fn controller(&self, cntlid: u16) -> Option<Arc<Controller>> {
        let reg = self.controllers.lock().expect("registry lock");
        reg.by_id.get(&cntlid).cloned()
    }
}
