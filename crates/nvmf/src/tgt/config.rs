//! Target configuration: subsystems, namespaces, listeners, allowed hosts and
//! the limits every resource is held to. Built from flags or a TOML file;
//! validated once, before anything listens.

use std::net::SocketAddr;
use std::path::PathBuf;

use nvme_spec::ana::AnaState;
use serde::Deserialize;

use super::error::{ConfigError, UnknownAnaState};

/// Default subsystem NQN of `numio serve`.
pub const DEFAULT_NQN: &str = "nqn.2026-01.io.numio:subsys0";
/// Default NVMe/TCP listener.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:4420";
/// Default discovery service port.
pub const DEFAULT_DISCOVERY_PORT: u16 = 8009;

/// Limits on every resource a host can make the target hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Limits {
    /// Open TCP connections (queues) over all hosts.
    pub max_connections: u32,
    /// Open TCP connections from one source address: one address cannot
    /// take every slot (a host needs one per queue: admin + I/O queues of
    /// each controller it connects). The default fits a large Linux host:
    /// 16 controllers (subsystems × paths) of an admin and 16 I/O queues.
    /// At most `max_connections` apply ([`Limits::per_source`]): a config
    /// that lowers only `max_connections` below it keeps working.
    pub max_connections_per_source: u32,
    /// Live controllers over all subsystems.
    pub max_controllers: u32,
    /// I/O queues one controller may create.
    pub max_io_queues: u16,
    /// Entries of an I/O queue (the host's queue_size).
    pub max_queue_depth: u16,
    /// Entries of an admin queue.
    pub admin_queue_depth: u16,
    /// In-capsule data accepted on I/O queues, bytes.
    pub io_in_capsule_bytes: u32,
    /// Largest H2CData payload (MAXH2CDATA), bytes.
    pub max_h2c_data_bytes: u32,
    /// Largest data transfer of one command (MDTS), bytes; a power of two
    /// multiple of 4 KiB.
    pub max_transfer_bytes: u32,
    /// Largest C2HData PDU payload the target sends, bytes.
    pub max_c2h_data_bytes: u32,
    /// Command data buffers over all connections, bytes: past it, commands
    /// wait for others to finish rather than allocate.
    pub max_buffer_bytes: u64,
}

/// In-capsule data accepted on the admin queue (fixed by the Linux host).
pub const ADMIN_IN_CAPSULE_BYTES: u32 = 8192;
/// Most R2Ts outstanding for one command, whatever the host's MAXR2T.
pub const R2T_OUTSTANDING_LIMIT: u32 = 16;

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_connections: 1024,
            max_connections_per_source: 272,
            max_controllers: 64,
            max_io_queues: 16,
            max_queue_depth: 128,
            admin_queue_depth: 32,
            io_in_capsule_bytes: 16384,
            max_h2c_data_bytes: 131072,
            max_transfer_bytes: 1 << 20,
            max_c2h_data_bytes: 131072,
            max_buffer_bytes: 1 << 30,
        }
    }
}

impl Limits {
    /// Connections one source address may hold: `max_connections_per_source`,
    /// at most `max_connections`.
    pub fn per_source(&self) -> u32 {
        self.max_connections_per_source.min(self.max_connections)
    }

    /// Checks that the limits are usable and interoperable.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let bad = |what: &'static str, value: u64, fix: &'static str| {
            Err(ConfigError::Limit { what, value, fix })
        };
        if self.max_connections == 0 || self.max_connections > 65536 {
            return bad(
                "max_connections",
                self.max_connections as u64,
                "use 1..=65536",
            );
        }
        if self.max_connections_per_source == 0 {
            return bad(
                "max_connections_per_source",
                self.max_connections_per_source as u64,
                "use 1 or more (at most max_connections apply)",
            );
        }
        if self.max_controllers == 0 || self.max_controllers > 0xFFEF {
            return bad(
                "max_controllers",
                self.max_controllers as u64,
                "use 1..=65519",
            );
        }
        if self.max_io_queues == 0 || self.max_io_queues > 1024 {
            return bad("max_io_queues", self.max_io_queues as u64, "use 1..=1024");
        }
        if !(2..=1024).contains(&self.max_queue_depth) {
            return bad(
                "max_queue_depth",
                self.max_queue_depth as u64,
                "use 2..=1024",
            );
        }
        if !(32..=1024).contains(&self.admin_queue_depth) {
            return bad(
                "admin_queue_depth",
                self.admin_queue_depth as u64,
                "use 32..=1024",
            );
        }
        if self.io_in_capsule_bytes > (1 << 20) || self.io_in_capsule_bytes % 16 != 0 {
            return bad(
                "io_in_capsule_bytes",
                self.io_in_capsule_bytes as u64,
                "use a multiple of 16 up to 1 MiB",
            );
        }
        if self.max_h2c_data_bytes < 4096
            || self.max_h2c_data_bytes % 4 != 0
            || self.max_h2c_data_bytes > (1 << 24)
        {
            return bad(
                "max_h2c_data_bytes",
                self.max_h2c_data_bytes as u64,
                "use a multiple of 4 in 4096..=16 MiB",
            );
        }
        let t = self.max_transfer_bytes;
        if t < 4096 || !t.is_power_of_two() || t > (1 << 24) {
            return bad(
                "max_transfer_bytes",
                t as u64,
                "use a power of two in 4 KiB..=16 MiB",
            );
        }
        if self.max_c2h_data_bytes < 4096 || self.max_c2h_data_bytes > (1 << 24) {
            return bad(
                "max_c2h_data_bytes",
                self.max_c2h_data_bytes as u64,
                "use 4096..=16 MiB",
            );
        }
        let floor = 2 * u64::from(t.max(ADMIN_IN_CAPSULE_BYTES));
        if self.max_buffer_bytes < floor || self.max_buffer_bytes > (1 << 40) {
            return bad(
                "max_buffer_bytes",
                self.max_buffer_bytes,
                "use at least twice max_transfer_bytes, at most 1 TiB",
            );
        }
        Ok(())
    }

    /// MDTS as Identify reports it: log2 of the transfer in 4 KiB pages.
    pub fn mdts(&self) -> u8 {
        (self.max_transfer_bytes / 4096).trailing_zeros() as u8
    }

    /// The largest PDU a host may send on a queue, bytes.
    pub fn max_rx_pdu_bytes(&self) -> usize {
        let data = self
            .max_h2c_data_bytes
            .max(self.io_in_capsule_bytes)
            .max(ADMIN_IN_CAPSULE_BYTES) as usize;
        72 + 4 + 128 + data + 4
    }

    /// One line per limit, for `--help` and start-up.
    pub fn describe(&self) -> String {
        format!(
            "connections {} ({} per source address) | controllers {} | I/O queues per controller {} | I/O queue depth {} | \
             admin queue depth {} | in-capsule data admin {} B, I/O {} B | MAXH2CDATA {} B | \
             max transfer (MDTS) {} B | C2HData PDU {} B | R2Ts of at most MAXH2CDATA, up to \
             the host's MAXR2T+1 (at most {}) outstanding per command | command buffers {} B \
             over all connections",
            self.max_connections,
            self.per_source(),
            self.max_controllers,
            self.max_io_queues,
            self.max_queue_depth,
            self.admin_queue_depth,
            ADMIN_IN_CAPSULE_BYTES,
            self.io_in_capsule_bytes,
            self.max_h2c_data_bytes,
            self.max_transfer_bytes,
            self.max_c2h_data_bytes,
            R2T_OUTSTANDING_LIMIT,
            self.max_buffer_bytes,
        )
    }
}

/// Where a namespace's blocks live.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Backing {
    /// RAM, `mem:SIZE`.
    Memory {
        /// Size in bytes.
        size_bytes: u64,
    },
    /// A regular file or block device.
    Path(PathBuf),
}

impl Backing {
    /// Parses `mem:SIZE` (SIZE like 1G, 512M, 4096, 1GiB) or a path.
    pub fn parse(s: &str) -> Result<Self, ConfigError> {
        if let Some(size) = s.strip_prefix("mem:") {
            let size_bytes =
                nvme_spec::units::parse_size_bytes(size).map_err(|e| ConfigError::Namespace {
                    spec: s.to_string(),
                    reason: format!("SIZE {e} (e.g. mem:1G, mem:1.5G, mem:512M)"),
                })?;
            if size_bytes < 1 << 20 || size_bytes % 4096 != 0 {
                return Err(ConfigError::Namespace {
                    spec: s.to_string(),
                    reason: "a RAM namespace must be at least 1 MiB and a multiple of 4 KiB".into(),
                });
            }
            return Ok(Backing::Memory { size_bytes });
        }
        if s.is_empty() {
            return Err(ConfigError::Namespace {
                spec: s.to_string(),
                reason: "empty; give mem:SIZE or a file or block device path".into(),
            });
        }
        Ok(Backing::Path(PathBuf::from(s)))
    }
}

/// One namespace in a subsystem.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NamespaceConfig {
    /// `mem:SIZE` or a path.
    pub backing: String,
    /// Go through the page cache instead of `O_DIRECT` (files and block
    /// devices; RAM namespaces ignore it).
    #[serde(default)]
    pub buffered: bool,
    /// Logical block (LBA data) size in bytes: a power of two from 512 to
    /// 4096. Default: a block device's logical block size, else 512.
    #[serde(default)]
    pub block_size: Option<u32>,
}

/// LBA data size of file and RAM namespaces unless `block_size` says.
pub const DEFAULT_BLOCK_SIZE_BYTES: u32 = 512;

impl NamespaceConfig {
    /// A namespace on `backing` with default options.
    pub fn new(backing: &str) -> Self {
        Self {
            backing: backing.to_string(),
            buffered: false,
            block_size: None,
        }
    }

    /// Parses a `--ns` value: `mem:SIZE` or `PATH`, then options separated
    /// by commas: `buffered` (page cache instead of `O_DIRECT`) and
    /// `block=BYTES` (logical block size, 512 to 4096).
    pub fn from_spec(spec: &str) -> Result<Self, ConfigError> {
        let mut parts = spec.split(',');
        let mut ns = Self::new(parts.next().unwrap_or_default());
        let bad = |reason: String| ConfigError::Namespace {
            spec: spec.to_string(),
            reason,
        };
        for opt in parts {
            match opt.trim().split_once('=') {
                None if opt.trim() == "buffered" => ns.buffered = true,
                Some(("block", v)) => {
                    let n = nvme_spec::units::parse_size_bytes(v)
                        .ok()
                        .filter(|&n| n <= u32::MAX as u64);
                    let n = n.ok_or_else(|| bad(format!("block={v} is not a size in bytes")))?;
                    ns.block_size = Some(n as u32);
                }
                _ => {
                    return Err(bad(format!(
                        "unknown option {opt:?}; options are: buffered, block=512|1024|2048|4096"
                    )))
                }
            }
        }
        ns.validate()?;
        Ok(ns)
    }

    /// Checks the backing spec and the block size.
    pub fn validate(&self) -> Result<(), ConfigError> {
        Backing::parse(&self.backing)?;
        if let Some(b) = self.block_size {
            if !(512..=4096).contains(&b) || !b.is_power_of_two() {
                return Err(ConfigError::Namespace {
                    spec: self.backing.clone(),
                    reason: format!("block size {b} is not usable: use 512, 1024, 2048 or 4096"),
                });
            }
        }
        Ok(())
    }
}

/// One NVM subsystem.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SubsystemConfig {
    /// Subsystem NQN.
    pub nqn: String,
    /// Serial number (20 ASCII characters at most).
    #[serde(default = "default_serial")]
    pub serial: String,
    /// Model number (40 ASCII characters at most).
    #[serde(default = "default_model")]
    pub model: String,
    /// Host NQNs admitted.
    #[serde(default)]
    pub allowed_hosts: Vec<String>,
    /// Admit any host.
    #[serde(default)]
    pub allow_any_host: bool,
    /// Hosts admitted that must authenticate with DH-HMAC-CHAP
    /// (`[[subsystem.host]]`).
    #[serde(default, rename = "host")]
    pub hosts: Vec<HostConfig>,
    /// Namespaces, numbered from 1 in order.
    #[serde(default, rename = "namespace")]
    pub namespaces: Vec<NamespaceConfig>,
}

/// A host with keys: a DH-HMAC-CHAP secret (it must authenticate), a TLS
/// PSK (it connects over TLS), or both. Keys are read from files (each
/// readable by its owner only), never given in the configuration or on the
/// command line in clear.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostConfig {
    /// Host NQN.
    pub nqn: String,
    /// File holding the host's DH-HMAC-CHAP secret (`DHHC-1:...`).
    #[serde(default)]
    pub dhchap_secret: Option<std::path::PathBuf>,
    /// File holding the controller's secret: the host may then
    /// authenticate the controller too (bidirectional).
    #[serde(default)]
    pub dhchap_ctrl_secret: Option<std::path::PathBuf>,
    /// Hash functions allowed, in preference order (default: sha256,
    /// sha384, sha512).
    #[serde(default)]
    pub dhchap_hashes: Vec<String>,
    /// DH groups allowed, in preference order (default: ffdhe2048 …
    /// ffdhe8192, then null).
    #[serde(default)]
    pub dhchap_dhgroups: Vec<String>,
    /// File holding the host's configured TLS PSK (`NVMeTLSkey-1:...`, as
    /// `nvme gen-tls-key` prints); used when the target requires TLS.
    #[serde(default)]
    pub tls_key: Option<std::path::PathBuf>,
}

impl HostConfig {
    /// Parses the command line's `NQN[,dhchap-secret=FILE][,dhchap-ctrl-secret=FILE]
    /// [,dhchap-hash=H:H][,dhchap-dhgroup=G:G][,tls-key=FILE]`; `None` when
    /// it names no key (a host admitted without authentication).
    pub fn parse_flag(text: &str) -> Result<Option<Self>, ConfigError> {
        let mut parts = text.split(',');
        let nqn = parts.next().unwrap_or_default().to_string();
        let mut h = HostConfig {
            nqn,
            dhchap_secret: None,
            dhchap_ctrl_secret: None,
            dhchap_hashes: Vec::new(),
            dhchap_dhgroups: Vec::new(),
            tls_key: None,
        };
        let list = |v: &str| v.split(':').map(str::to_string).collect::<Vec<_>>();
        for p in parts {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            match (k, v) {
                (_, "") => {
                    return Err(ConfigError::HostOptionValue {
                        flag: text.to_string(),
                        option: p.to_string(),
                    })
                }
                ("dhchap-secret", v) => h.dhchap_secret = Some(v.into()),
                ("dhchap-ctrl-secret", v) => h.dhchap_ctrl_secret = Some(v.into()),
                ("dhchap-hash", v) => h.dhchap_hashes = list(v),
                ("dhchap-dhgroup", v) => h.dhchap_dhgroups = list(v),
                ("tls-key", v) => h.tls_key = Some(v.into()),
                _ => {
                    return Err(ConfigError::HostOption {
                        flag: text.to_string(),
                        option: k.to_string(),
                    })
                }
            }
        }
        if h.dhchap_options() && h.dhchap_secret.is_none() {
            return Err(ConfigError::HostSecret {
                flag: text.to_string(),
            });
        }
        Ok((h.dhchap_secret.is_some() || h.tls_key.is_some()).then_some(h))
    }

    /// Names a DH-HMAC-CHAP option beside the host's secret.
    fn dhchap_options(&self) -> bool {
        self.dhchap_ctrl_secret.is_some()
            || !self.dhchap_hashes.is_empty()
            || !self.dhchap_dhgroups.is_empty()
    }

    fn validate(&self, subsystem: &str) -> Result<(), ConfigError> {
        validate_nqn(&self.nqn)?;
        let bad = |e: String| {
            ConfigError::Invalid(format!("subsystem {subsystem}, host {}: {e}", self.nqn))
        };
        for n in &self.dhchap_hashes {
            crate::auth::HashFn::parse(n).map_err(|e| bad(e.to_string()))?;
        }
        for n in &self.dhchap_dhgroups {
            crate::auth::DhGroup::parse(n).map_err(|e| bad(e.to_string()))?;
        }
        match (&self.dhchap_secret, &self.tls_key) {
            (None, None) => Err(bad(
                "a [[subsystem.host]] needs dhchap_secret or tls_key (a host without keys goes in allowed_hosts)".into(),
            )),
            (None, _) if self.dhchap_options() => Err(bad(
                "the DH-HMAC-CHAP options need dhchap_secret (the host's secret)".into(),
            )),
            _ => Ok(()),
        }
    }
}

fn default_serial() -> String {
    "NUMIO0001".into()
}

fn default_model() -> String {
    "numio NVMe/TCP target".into()
}

/// The whole target.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TargetConfig {
    /// NVMe/TCP listeners (I/O and discovery controllers).
    #[serde(default = "default_listeners")]
    pub listen: Vec<SocketAddr>,
    /// NVMe/RDMA listeners (`--transport rdma`); their ports follow the
    /// TCP ones (port ids after `listen`'s), optimized.
    #[serde(default)]
    pub rdma_listen: Vec<SocketAddr>,
    /// ANA state of each listener's port, in `listen` order: `optimized`,
    /// `non-optimized`, `inaccessible`, `persistent-loss` or `change`;
    /// listeners past the end of the list are optimized.
    #[serde(default)]
    pub ana: Vec<String>,
    /// Port of the discovery service on each listener address; 0 disables it.
    #[serde(default = "default_discovery_port")]
    pub discovery_port: u16,
    /// CPUs to run reactors on (one reactor per CPU); empty = any this
    /// process may use, at most 4 (`numio serve` fills it with the backing
    /// devices' NUMA node's CPUs first, when they share one).
    #[serde(default)]
    pub cpus: Vec<usize>,
    /// Reactor CPUs of each listener's port, in `listen` order: that port's
    /// connections go to the reactors on these CPUs only (a port on its
    /// own NUMA node's reactors). Each list is a subset of `cpus`; with
    /// `cpus` empty the reactors are the union of these lists. A missing or
    /// empty list means every reactor.
    #[serde(default)]
    pub port_cpus: Vec<Vec<usize>>,
    /// Limits.
    #[serde(default)]
    pub limits: Limits,
    /// Print one line per queue connected (host, controller, qid, digests).
    #[serde(default)]
    pub log_connections: bool,
    /// Every listener requires TLS 1.3 with a PSK (NVMe/TCP TP 8011): each
    /// host connects with the key its `tls_key` names; a plain-text
    /// connection is refused.
    #[serde(default)]
    pub tls: bool,
    /// Reactors busy-poll their rings instead of sleeping (`--poll`): a
    /// whole CPU each, a wake-up saved per I/O.
    #[serde(default)]
    pub poll: bool,
    /// Subsystems.
    #[serde(default, rename = "subsystem")]
    pub subsystems: Vec<SubsystemConfig>,
}

fn default_listeners() -> Vec<SocketAddr> {
    vec![DEFAULT_LISTEN.parse().expect("default listener parses")]
}

fn default_discovery_port() -> u16 {
    DEFAULT_DISCOVERY_PORT
}

impl Default for TargetConfig {
    fn default() -> Self {
        Self {
            listen: default_listeners(),
            rdma_listen: Vec::new(),
            ana: Vec::new(),
            discovery_port: DEFAULT_DISCOVERY_PORT,
            cpus: Vec::new(),
            port_cpus: Vec::new(),
            limits: Limits::default(),
            log_connections: false,
            tls: false,
            poll: false,
            subsystems: Vec::new(),
        }
    }
}

impl TargetConfig {
    /// Parses TOML text.
    pub fn from_toml(text: &str, origin: &str) -> Result<Self, ConfigError> {
        toml::from_str(text).map_err(|e| ConfigError::Toml {
            origin: origin.to_string(),
            message: e.to_string(),
        })
    }

    /// The ANA state of each listener's port, in `listen` order.
    pub fn ana_states(&self) -> Result<Vec<AnaState>, ConfigError> {
        if self.ana.len() > self.listen.len() {
            return Err(ConfigError::Invalid(format!(
                "ana lists {} states for {} listener(s): give one state per listener, in listen order",
                self.ana.len(),
                self.listen.len()
            )));
        }
        let mut states = Vec::with_capacity(self.listen.len());
        for (i, name) in self.ana.iter().enumerate() {
            states.push(
                parse_ana_state(name).map_err(|source| ConfigError::AnaState {
                    port: i + 1,
                    listen: self.listen[i],
                    source,
                })?,
            );
        }
        states.resize(self.listen.len(), AnaState::Optimized);
        Ok(states)
    }

    /// The reactors' CPUs: `cpus`, else the union of `port_cpus` in order
    /// (empty: the caller picks).
    pub fn reactor_cpus(&self) -> Vec<usize> {
        if !self.cpus.is_empty() {
            return self.cpus.clone();
        }
        let mut all: Vec<usize> = Vec::new();
        for c in self.port_cpus.iter().flatten() {
            if !all.contains(c) {
                all.push(*c);
            }
        }
        all
    }

    fn validate_port_cpus(&self) -> Result<(), ConfigError> {
        if self.port_cpus.len() > self.listen.len() {
            return Err(ConfigError::Invalid(format!(
                "port_cpus lists {} CPU lists for {} listener(s): give one list per listener, in listen order",
                self.port_cpus.len(),
                self.listen.len()
            )));
        }
        if self.cpus.is_empty() {
            return Ok(());
        }
        for (list, addr) in self.port_cpus.iter().zip(&self.listen) {
            if let Some(c) = list.iter().find(|c| !self.cpus.contains(c)) {
                return Err(ConfigError::Invalid(format!(
                    "port_cpus of listener {addr} names CPU {c}, which runs no reactor (cpus = {:?}): name CPUs of cpus, or leave cpus empty",
                    self.cpus
                )));
            }
        }
        Ok(())
    }

    /// Checks the whole configuration; every error names the field and a fix.
    pub fn validate(&self) -> Result<(), ConfigError> {
        self.limits.validate()?;
        if self.listen.is_empty() && self.rdma_listen.is_empty() {
            return Err(ConfigError::Invalid(
                "no listener: give --listen ADDR:PORT".into(),
            ));
        }
        if self.listen.len() + self.rdma_listen.len() > 0xFFEF {
            return Err(ConfigError::Invalid(
                "more than 65519 listeners: NVMe port ids are 16-bit".into(),
            ));
        }
        self.ana_states()?;
        self.validate_port_cpus()?;
        if self.subsystems.is_empty() {
            return Err(ConfigError::Invalid(
                "no subsystem: give --ns mem:1G or a [[subsystem]] table".into(),
            ));
        }
        let mut seen = std::collections::HashSet::new();
        for s in &self.subsystems {
            validate_nqn(&s.nqn)?;
            if !seen.insert(s.nqn.clone()) {
                return Err(ConfigError::Invalid(format!(
                    "subsystem {} is listed twice",
                    s.nqn
                )));
            }
            if s.nqn == nvme_spec::fabrics::DISCOVERY_NQN {
                return Err(ConfigError::Invalid(
                    "the discovery NQN cannot name an NVM subsystem".into(),
                ));
            }
            if s.namespaces.is_empty() {
                return Err(ConfigError::Invalid(format!(
                    "subsystem {} has no namespace: add --ns mem:1G or PATH",
                    s.nqn
                )));
            }
            if s.namespaces.len() > 1024 {
                return Err(ConfigError::Invalid(format!(
                    "subsystem {} has more than 1024 namespaces",
                    s.nqn
                )));
            }
            if !s.allow_any_host && s.allowed_hosts.is_empty() && s.hosts.is_empty() {
                return Err(ConfigError::Invalid(format!(
                    "subsystem {} admits no host: list allowed_hosts (--allow-host NQN) or set allow_any_host = true",
                    s.nqn
                )));
            }
            for h in &s.allowed_hosts {
                validate_nqn(h)?;
            }
            for h in &s.hosts {
                h.validate(&s.nqn)?;
            }
            self.validate_tls(s)?;
            if !s.serial.is_ascii()
                || s.serial.len() > 20
                || !s.model.is_ascii()
                || s.model.len() > 40
            {
                return Err(ConfigError::Invalid(format!(
                    "subsystem {}: serial must be at most 20 and model at most 40 ASCII characters",
                    s.nqn
                )));
            }
            for n in &s.namespaces {
                n.validate()?;
            }
        }
        Ok(())
    }
}

impl TargetConfig {
    /// With TLS every host of `s` needs a key; without it no host has one.
    fn validate_tls(&self, s: &SubsystemConfig) -> Result<(), ConfigError> {
        let bad = |e: String| Err(ConfigError::Invalid(format!("subsystem {}: {e}", s.nqn)));
        if !self.tls {
            if let Some(h) = s.hosts.iter().find(|h| h.tls_key.is_some()) {
                return bad(format!(
                    "host {} has a TLS key but TLS is off: add --tls (tls = true), or drop the key",
                    h.nqn
                ));
            }
            return Ok(());
        }
        if s.allow_any_host {
            return bad(
                "TLS knows a host by its PSK, so it cannot go with allow_any_host (--allow-any-host): \
                 list each host with --allow-host NQN,tls-key=FILE"
                    .into(),
            );
        }
        let keyless = s
            .allowed_hosts
            .iter()
            .chain(
                s.hosts
                    .iter()
                    .filter(|h| h.tls_key.is_none())
                    .map(|h| &h.nqn),
            )
            .next();
        if let Some(h) = keyless {
            return bad(format!(
                "host {h} has no TLS key and TLS is required: --allow-host {h},tls-key=FILE \
                 (a key from `nvme gen-tls-key`, in a file only you can read)"
            ));
        }
        Ok(())
    }
}

/// Parses an ANA state name; the error lists the names.
pub fn parse_ana_state(name: &str) -> Result<AnaState, UnknownAnaState> {
    AnaState::parse(name).ok_or_else(|| UnknownAnaState {
        name: name.to_string(),
    })
}

/// Checks an NQN's length and form.
pub fn validate_nqn(nqn: &str) -> Result<(), ConfigError> {
    if nqn.len() > nvme_spec::fabrics::NQN_MAX_LEN || !nqn.starts_with("nqn.") || !nqn.is_ascii() {
        return Err(ConfigError::Nqn {
            nqn: nqn.to_string(),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        // Issue 39: one size parser, so `mem:1.5G` works as `--size 1.5G`.
        assert!(
            matches!(Backing::parse("mem:1.5G"), Ok(Backing::Memory { size_bytes }) if size_bytes == 3 << 29)
        );
        let e = Backing::parse("mem:1X").unwrap_err().to_string();
        assert!(e.contains("unknown size suffix"), "{e}");
        assert!(
            matches!(Backing::parse("mem:1G"), Ok(Backing::Memory { size_bytes }) if size_bytes == 1 << 30)
        );
        assert!(Backing::parse("mem:100").is_err());
        assert!(Backing::parse("mem:big").is_err());
        assert_eq!(
            Backing::parse("/dev/sdb").unwrap(),
            Backing::Path("/dev/sdb".into())
        );
    }

    #[test]
    fn toml_round_trip_and_errors() {
        let c = TargetConfig::from_toml(
            r#"
            listen = ["127.0.0.1:4421"]
            discovery_port = 0
            [limits]
            max_queue_depth = 64
            [[subsystem]]
            nqn = "nqn.2026-01.io.numio:a"
            allowed_hosts = ["nqn.host1"]
            [[subsystem.namespace]]
            backing = "mem:16M"
            "#,
            "test.toml",
        )
        .unwrap();
        c.validate().unwrap();
        assert_eq!(c.limits.max_queue_depth, 64);
        assert_eq!(c.limits.max_io_queues, Limits::default().max_io_queues);
        assert_eq!(c.subsystems[0].namespaces.len(), 1);
        let e = TargetConfig::from_toml("bogus = 1", "x.toml").unwrap_err();
        assert!(e.to_string().contains("x.toml"), "{e}");
        let mut no_hosts = c.clone();
        no_hosts.subsystems[0].allowed_hosts.clear();
        assert!(no_hosts
            .validate()
            .unwrap_err()
            .to_string()
            .contains("allow_any_host"));
        let mut bad = c.clone();
        bad.limits.max_transfer_bytes = 5000;
        assert!(bad
            .validate()
            .unwrap_err()
            .to_string()
            .contains("max_transfer_bytes"));
        assert_eq!(Limits::default().mdts(), 8);
    }

    // Regression: the per-source default grew to 272, and a config that
    // set only max_connections = 256 (the packaged sample's) was refused.
    #[test]
    fn a_lower_max_connections_caps_the_per_source_default() {
        let c = TargetConfig::from_toml(
            r#"
            [limits]
            max_connections = 256
            [[subsystem]]
            nqn = "nqn.2026-01.io.numio:t"
            allow_any_host = true
            [[subsystem.namespace]]
            backing = "mem:16M"
            "#,
            "test.toml",
        )
        .unwrap();
        c.validate().unwrap();
        assert_eq!(c.limits.per_source(), 256);
        assert!(c
            .limits
            .describe()
            .contains("connections 256 (256 per source address)"));
        assert_eq!(Limits::default().per_source(), 272);
        let mut none = c.clone();
        none.limits.max_connections_per_source = 0;
        let e = none.validate().unwrap_err().to_string();
        assert!(e.contains("max_connections_per_source"), "{e}");
    }

    #[test]
    fn ana_states_per_listener() {
        let c = TargetConfig::from_toml(
            r#"
            listen = ["127.0.0.1:4420", "127.0.0.1:4421"]
            ana = ["optimized", "inaccessible"]
            [[subsystem]]
            nqn = "nqn.2026-01.io.numio:a"
            allow_any_host = true
            [[subsystem.namespace]]
            backing = "mem:16M"
            "#,
            "ana.toml",
        )
        .unwrap();
        c.validate().unwrap();
        assert_eq!(
            c.ana_states().unwrap(),
            [AnaState::Optimized, AnaState::Inaccessible]
        );
        let mut short = c.clone();
        short.ana.truncate(0);
        assert_eq!(short.ana_states().unwrap(), [AnaState::Optimized; 2]);
        let mut long = c.clone();
        long.ana.push("optimized".into());
        let e = long.validate().unwrap_err().to_string();
        assert!(e.contains("one state per listener"), "{e}");
        let mut bad = c.clone();
        bad.ana[1] = "down".into();
        let e = bad.validate().unwrap_err().to_string();
        assert!(
            e.contains("port 2 (127.0.0.1:4421)") && e.contains("non-optimized"),
            "{e}"
        );
        // The variant carries the port, its listener and the name.
        match bad.ana_states() {
            Err(ConfigError::AnaState {
                port,
                listen,
                source,
            }) => {
                assert_eq!((port, listen.port()), (2, 4421));
                assert_eq!(source.name, "down");
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(
            parse_ana_state("down").unwrap_err().to_string(),
            "\"down\" is not an ANA state: use optimized, non-optimized, inaccessible, \
             persistent-loss or change"
        );
    }

    #[test]
    fn namespace_specs_and_options() {
        let n = NamespaceConfig::from_spec("/dev/nvme0n1").unwrap();
        assert_eq!((n.buffered, n.block_size), (false, None));
        let n = NamespaceConfig::from_spec("/srv/ns.img,block=4096,buffered").unwrap();
        assert_eq!(n.backing, "/srv/ns.img");
        assert_eq!((n.buffered, n.block_size), (true, Some(4096)));
        let n = NamespaceConfig::from_spec("mem:16M,block=4K").unwrap();
        assert_eq!(n.block_size, Some(4096));
        for bad in [
            "mem:16M,block=3000",
            "mem:16M,block=8192",
            "mem:16M,block=x",
            "f,fast",
        ] {
            assert!(NamespaceConfig::from_spec(bad).is_err(), "{bad}");
        }
        let c = TargetConfig::from_toml(
            r#"
            [[subsystem]]
            nqn = "nqn.2026-01.io.numio:a"
            allow_any_host = true
            [[subsystem.namespace]]
            backing = "mem:16M"
            block_size = 4096
            buffered = true
            "#,
            "t.toml",
        )
        .unwrap();
        c.validate().unwrap();
        assert_eq!(c.subsystems[0].namespaces[0].block_size, Some(4096));
        let mut bad = c.clone();
        bad.subsystems[0].namespaces[0].block_size = Some(100);
        assert!(bad
            .validate()
            .unwrap_err()
            .to_string()
            .contains("512, 1024"));
    }
    #[test]
    fn port_cpus_per_listener() {
        let c = TargetConfig::from_toml(
            r#"
            listen = ["127.0.0.1:4420", "127.0.0.1:4421"]
            port_cpus = [[2, 3], [0]]
            [[subsystem]]
            nqn = "nqn.2026-01.io.numio:a"
            allow_any_host = true
            [[subsystem.namespace]]
            backing = "mem:16M"
            "#,
            "ports.toml",
        )
        .unwrap();
        c.validate().unwrap();
        assert_eq!(c.reactor_cpus(), [2, 3, 0], "the union, in order");
        let mut with_cpus = c.clone();
        with_cpus.cpus = vec![0, 1, 2];
        let e = with_cpus.validate().unwrap_err().to_string();
        assert!(
            e.contains("127.0.0.1:4420") && e.contains("CPU 3") && e.contains("runs no reactor"),
            "{e}"
        );
        with_cpus.cpus.push(3);
        with_cpus.validate().unwrap();
        assert_eq!(with_cpus.reactor_cpus(), [0, 1, 2, 3]);
        let mut three = c.clone();
        three.port_cpus.push(vec![1]);
        let e = three.validate().unwrap_err().to_string();
        assert!(e.contains("3 CPU lists for 2 listener"), "{e}");
    }
}
