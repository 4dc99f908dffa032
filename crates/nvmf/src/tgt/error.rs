//! Errors of the target: configuration and start-up.

/// A configuration that cannot be served.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// A limit outside its range.
    #[error("limit {what} = {value} is not usable: {fix}")]
    Limit {
        /// Limit name.
        what: &'static str,
        /// Given value.
        value: u64,
        /// How to fix it.
        fix: &'static str,
    },
    /// A bad namespace spec.
    #[error("namespace {spec:?}: {reason}")]
    Namespace {
        /// The spec as given.
        spec: String,
        /// Why and how to fix it.
        reason: String,
    },
    /// A malformed NQN.
    #[error(
        "NQN {nqn:?} is not valid: it must start with \"nqn.\", be ASCII and at most 223 bytes"
    )]
    Nqn {
        /// The NQN.
        nqn: String,
    },
    /// A TOML file that does not parse.
    #[error("{origin}: {message}")]
    Toml {
        /// File name.
        origin: String,
        /// Parser message.
        message: String,
    },
    /// A listener's ANA state that is none.
    #[error("ana state of port {port} ({listen}): {source}")]
    AnaState {
        /// The port, from 1, in `listen` order.
        port: usize,
        /// Its listener.
        listen: std::net::SocketAddr,
        /// The name given.
        source: UnknownAnaState,
    },
    /// An `--allow-host` option without a value.
    #[error("--allow-host {flag}: {option:?} needs a value (KEY=VALUE)")]
    HostOptionValue {
        /// The flag as given.
        flag: String,
        /// The option.
        option: String,
    },
    /// An `--allow-host` option that is none.
    #[error(
        "--allow-host {flag}: unknown option {option:?}; use dhchap-secret=FILE, \
         dhchap-ctrl-secret=FILE, dhchap-hash=sha256:sha384, dhchap-dhgroup=ffdhe2048:null \
         or tls-key=FILE"
    )]
    HostOption {
        /// The flag as given.
        flag: String,
        /// The option's key.
        option: String,
    },
    /// `--allow-host` DH-HMAC-CHAP options without the host's secret.
    #[error(
        "--allow-host {flag}: the DH-HMAC-CHAP options need dhchap-secret=FILE (the host's secret)"
    )]
    HostSecret {
        /// The flag as given.
        flag: String,
    },
    /// Anything else, with its fix in the text.
    #[error("{0}")]
    Invalid(String),
}

/// A name that is no ANA state; the message lists the names (from
/// `AnaState::ALL`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{name:?} is not an ANA state: use {}", crate::one_of(nvme_spec::ana::AnaState::ALL.map(nvme_spec::ana::AnaState::name)))]
pub struct UnknownAnaState {
    /// The name as given.
    pub name: String,
}

/// Errors while starting or running the target.
#[derive(Debug, thiserror::Error)]
pub enum TargetError {
    /// Bad configuration.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// Opening a namespace's backing failed.
    #[error("cannot open namespace backing {path}: {source} (check the path exists and is readable and writable)")]
    Backing {
        /// Path or mem spec.
        path: String,
        /// OS error.
        source: std::io::Error,
    },
    /// A backing whose size is unusable.
    #[error("namespace backing {path} is {size_bytes} bytes: it must be a non-zero multiple of its {block_bytes}-byte logical block")]
    BackingSize {
        /// Path.
        path: String,
        /// Size found.
        size_bytes: u64,
        /// The namespace's logical block size.
        block_bytes: u64,
    },
    /// A logical block size the backing cannot serve.
    #[error("namespace backing {path}: block size {block_bytes} is smaller than the device's logical block size {device_bytes} (use block={device_bytes} or larger)")]
    BlockSize {
        /// Path.
        path: String,
        /// Asked for.
        block_bytes: u32,
        /// The device's.
        device_bytes: u32,
    },
    /// Binding a listener failed.
    #[error("cannot listen on {addr}: {source} (is another target using the port? pick another with --listen)")]
    Listen {
        /// Address.
        addr: std::net::SocketAddr,
        /// OS error.
        source: std::io::Error,
    },
    /// NVMe/RDMA cannot start (no rdma-core, no RDMA device, the address
    /// on no RDMA device).
    #[error("NVMe/RDMA: {0}")]
    Rdma(String),
    /// A reactor did not start (its io_uring).
    #[error("starting a reactor: {source}")]
    Reactor {
        /// Why.
        source: ReactorError,
    },
    /// Other OS failure.
    #[error("{what}: {source}")]
    Os {
        /// What was being done.
        what: &'static str,
        /// OS error.
        source: std::io::Error,
    },
}

/// Why a reactor did not start.
#[derive(Debug, thiserror::Error)]
pub enum ReactorError {
    /// Its ring could not be set up.
    #[error(transparent)]
    Ring(#[from] super::ring::RingError),
    /// Its thread ended before saying.
    #[error("a reactor thread exited during set-up")]
    Exited,
}
