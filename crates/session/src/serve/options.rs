//! What `numio serve` is asked for, as plain values: [`ServeOptions`] (the
//! binary fills it from its flags), and the grammar of the flags whose
//! values are more than a number: `--listen ADDR[:PORT]`
//! ([`parse_listen`]) and `--transport tcp|rdma|tcp,rdma`
//! ([`parse_transports`]).

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;

use nvmf::log;

use super::error::FlagError;

/// Serial number Identify reports unless told otherwise.
pub const DEFAULT_SERIAL: &str = "NUMIO0001";
/// Model number Identify reports unless told otherwise.
pub const DEFAULT_MODEL: &str = "numio NVMe/TCP target";

/// `numio serve`'s flags, as values. Each field is its flag's (`--ns`,
/// `--nqn`, ...); what a `--config` file says is read when serving, and
/// the flags given apply over it.
#[derive(Debug, Clone, PartialEq)]
pub struct ServeOptions {
    /// `--ns`: `mem:SIZE` or a path, with `,block=N` and `,buffered`.
    pub namespaces: Vec<String>,
    /// `--nqn`: the subsystem of the `--ns` namespaces.
    pub nqn: String,
    /// `--serial`.
    pub serial: String,
    /// `--model`.
    pub model: String,
    /// `--listen`: none for the configuration's (or 127.0.0.1:4420).
    pub listen: Vec<SocketAddr>,
    /// `--transport`.
    pub transport: Transports,
    /// `--ana`: each port's ANA state, in order.
    pub ana: Vec<String>,
    /// `--discovery-port` (0: none).
    pub discovery_port: Option<u16>,
    /// `--allow-host`: an NQN, with `,dhchap-secret=FILE` and the rest.
    pub allow_host: Vec<String>,
    /// `--allow-any-host`.
    pub allow_any_host: bool,
    /// `--poll`: reactors busy-poll.
    pub poll: bool,
    /// `--tls`: TLS 1.3 with a PSK on every listener.
    pub tls: bool,
    /// `--config`: the TOML configuration the flags add to.
    pub config: Option<PathBuf>,
    /// `--cpus`: the reactors' CPUs, in the kernel's list format.
    pub cpus: Option<String>,
    /// `--port-cpus`: one CPU list per `--listen`, in order.
    pub port_cpus: Vec<String>,
    /// `--force-export`: export block devices that hold something, and
    /// RAM namespaces past the memory available.
    pub force_export: bool,
    /// `--log-connections`.
    pub log_connections: bool,
    /// `--log-format`.
    pub log_format: log::Format,
    /// `--log-level`.
    pub log_level: log::Level,
    /// The limit flags (`--max-connections` ...).
    pub limits: LimitFlags,
    /// `--metrics`: where to serve Prometheus metrics.
    pub metrics: Option<SocketAddr>,
}

impl Default for ServeOptions {
    /// No namespace, the default NQN, serial and model, NVMe/TCP, text log
    /// lines at info.
    fn default() -> Self {
        ServeOptions {
            namespaces: Vec::new(),
            nqn: nvmf::config::DEFAULT_NQN.to_string(),
            serial: DEFAULT_SERIAL.to_string(),
            model: DEFAULT_MODEL.to_string(),
            listen: Vec::new(),
            transport: Transports::default(),
            ana: Vec::new(),
            discovery_port: None,
            allow_host: Vec::new(),
            allow_any_host: false,
            poll: false,
            tls: false,
            config: None,
            cpus: None,
            port_cpus: Vec::new(),
            force_export: false,
            log_connections: false,
            log_format: log::Format::Text,
            log_level: log::Level::Info,
            limits: LimitFlags::default(),
            metrics: None,
        }
    }
}

/// The limit flags given; each left out keeps the configuration's (or the
/// default) value.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LimitFlags {
    /// `--max-connections`.
    pub max_connections: Option<u32>,
    /// `--max-io-queues`.
    pub max_io_queues: Option<u16>,
    /// `--queue-depth`.
    pub queue_depth: Option<u16>,
    /// `--in-capsule`, bytes.
    pub in_capsule: Option<u32>,
    /// `--max-h2c-data`, bytes.
    pub max_h2c_data: Option<u32>,
    /// `--max-transfer`, bytes.
    pub max_transfer: Option<u32>,
    /// `--max-buffer-bytes`.
    pub max_buffer_bytes: Option<u64>,
}

/// The transports `numio serve --transport` names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Transports {
    /// NVMe/TCP.
    pub tcp: bool,
    /// NVMe/RDMA.
    pub rdma: bool,
}

impl Default for Transports {
    /// NVMe/TCP only.
    fn default() -> Self {
        Transports {
            tcp: true,
            rdma: false,
        }
    }
}

/// Parses `tcp`, `rdma` or `tcp,rdma`.
pub fn parse_transports(s: &str) -> Result<Transports, FlagError> {
    let mut t = Transports {
        tcp: false,
        rdma: false,
    };
    for part in s.split(',').map(str::trim) {
        match part {
            "tcp" => t.tcp = true,
            "rdma" => t.rdma = true,
            other => {
                return Err(FlagError::Transport {
                    word: other.to_string(),
                })
            }
        }
    }
    Ok(t)
}

/// `--listen ADDR[:PORT]`: nvme-cli's default port (4420) when none is given.
pub fn parse_listen(text: &str) -> Result<SocketAddr, FlagError> {
    if let Ok(a) = text.parse::<SocketAddr>() {
        return Ok(a);
    }
    let bare = text.trim_start_matches('[').trim_end_matches(']');
    match bare.parse::<IpAddr>() {
        Ok(ip) => Ok(SocketAddr::new(ip, engine::backend::tcp::DEFAULT_PORT)),
        Err(_) => Err(FlagError::Listen {
            text: text.to_string(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 39: `--listen 127.0.0.1` was refused where nvme-cli defaults
    /// the port to 4420.
    #[test]
    fn listen_defaults_the_port() {
        assert_eq!(
            parse_listen("[::1]").unwrap(),
            "[::1]:4420".parse::<SocketAddr>().unwrap()
        );
        let e = parse_listen("target.example").unwrap_err().to_string();
        assert!(e.contains("not ADDR[:PORT]"), "{e}");
    }

    #[test]
    fn transports() {
        assert_eq!(
            parse_transports("tcp,rdma").unwrap(),
            Transports {
                tcp: true,
                rdma: true
            }
        );
        assert_eq!(
            parse_transports("udp").unwrap_err().to_string(),
            "unknown transport 'udp': give tcp, rdma or tcp,rdma"
        );
    }
}
