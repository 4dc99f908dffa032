//! Why `numio serve` could not serve ([`ServeError`]), and why a flag's
//! value does not parse ([`FlagError`]). Each reads as the binary printed
//! it before these moved: a step's words, then its cause.

use std::net::SocketAddr;

use nvmf::metrics_http::HttpError;

/// Why `numio serve` (or `--stats`) stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// `--config` could not be read.
    #[error(transparent)]
    ConfigFile(#[from] nvmf::tgt::config_file::ConfigFileError),
    /// The configuration (file or flags) is not one to serve.
    #[error(transparent)]
    Config(#[from] nvmf::ConfigError),
    /// A CPU list flag does not parse: `flag` is `--cpus` or `--port-cpus`.
    #[error("{flag} {value:?}: {reason}")]
    CpuList {
        /// The flag.
        flag: &'static str,
        /// Its value.
        value: String,
        /// Why.
        reason: topology::CpuListError,
    },
    /// A CPU list flag names no CPU.
    #[error("{flag} {value:?} names no CPU")]
    NoCpu {
        /// The flag.
        flag: &'static str,
        /// Its value.
        value: String,
    },
    /// More `--port-cpus` than listeners.
    #[error("--port-cpus given {given} times for {listeners} listener(s): give one per --listen, in the same order")]
    PortCpusCount {
        /// `--port-cpus` given.
        given: usize,
        /// Listeners.
        listeners: usize,
    },
    /// `--allow-host` or `--allow-any-host` without `--ns` or `--config`.
    #[error("--allow-host/--allow-any-host apply to --ns namespaces: give at least one --ns mem:SIZE or PATH")]
    HostsWithoutNamespace,
    /// No namespace and no configuration.
    #[error("nothing to serve: give --ns mem:1G (RAM) or --ns /path/to/file-or-device, or --config FILE.toml")]
    NothingToServe,
    /// A namespace numio will not export.
    #[error(transparent)]
    Export(#[from] engine::export::ExportRefused),
    /// The CPUs this process may run on could not be read.
    #[error("reading the CPUs this process may run on")]
    AllowedCpus {
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// Reactor CPUs this process may not run on; `named_by` says where
    /// they were given ("--cpus", "cpus in --config" ...).
    #[error("{named_by}")]
    CpusNotAllowed {
        /// Where the CPUs were named.
        named_by: &'static str,
        /// Which CPU.
        #[source]
        source: planner::reactors::NotAllowed,
    },
    /// `$NOTIFY_SOCKET` cannot be used.
    #[error(transparent)]
    Notify(#[from] nvmf::sd_notify::NotifyError),
    /// The target failed to start or while serving.
    #[error(transparent)]
    Target(#[from] nvmf::TargetError),
    /// The `--metrics` endpoint could not start.
    #[error("--metrics")]
    Metrics {
        /// Why.
        #[source]
        source: HttpError,
    },
    /// The thread that tells systemd STOPPING=1 could not start.
    #[error("spawning the sd_notify thread")]
    NotifyThread {
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// `--stats`: the metrics endpoint could not be read.
    #[error(transparent)]
    Scrape(#[from] HttpError),
    /// `--stats`: the metrics endpoint answered other than 200.
    #[error("{addr}/metrics answered HTTP {code}: {body}")]
    ScrapeStatus {
        /// The endpoint.
        addr: SocketAddr,
        /// The HTTP status.
        code: u16,
        /// The answer's body.
        body: String,
    },
}

/// A flag value that does not parse (clap shows it after the flag's name).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FlagError {
    /// `--listen` given a host name or nothing like an address.
    #[error("{text:?} is not ADDR[:PORT] (e.g. 0.0.0.0, 10.0.0.5:4420, [::1]:4420); give an IP address, not a host name")]
    Listen {
        /// The value.
        text: String,
    },
    /// `--transport` given a word other than tcp or rdma.
    #[error("unknown transport '{word}': give tcp, rdma or tcp,rdma")]
    Transport {
        /// The word.
        word: String,
    },
}
