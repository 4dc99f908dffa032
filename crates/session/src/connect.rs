//! `numio connect`: the Linux host's NVMe/TCP (or NVMe/RDMA) initiator
//! for as long as numio needs it. [`Target::parse`] reads the URL; then
//! [`hold`] loads the host, connects (`tune::connect`, the connection
//! recorded as soon as the kernel names the controller), hands the
//! caller the block device the kernel made, holds the connection until
//! stdin closes or a SIGINT / SIGTERM ([`crate::interrupt`]) arrives, and
//! disconnects.

use std::io::BufRead;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use engine::backend::tcp::TcpUrl;
use sysapi::fabrics;
use tune::connections::{ConnectionError, ConnectionJournal};

use crate::interrupt;

/// Why `numio connect` failed.
#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    /// The URL, its address or the connect options are not usable.
    #[error("{url}: {reason}")]
    Url {
        /// The URL as given.
        url: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A secret file could not be read.
    #[error("reading the {what} from {}", .path.display())]
    Secret {
        /// Which secret (`DH-HMAC-CHAP secret`).
        what: &'static str,
        /// The file.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// The device's line could not be written.
    #[error("writing the device")]
    Device {
        /// The OS error.
        source: std::io::Error,
    },
    /// The kernel's host, the connect, the journal or the wait failed.
    #[error(transparent)]
    Connection(#[from] ConnectionError),
}

/// A namespace to connect to: `nvme-tcp://ADDR[:PORT]/SUBNQN[/NSID]` or
/// `nvme-rdma://...`, its address resolved.
#[derive(Debug, Clone)]
pub struct Target {
    text: String,
    url: TcpUrl,
    addr: SocketAddr,
    transport: &'static str,
}

impl Target {
    /// Reads and resolves `text`.
    pub fn parse(text: &str) -> Result<Target, ConnectError> {
        let bad = |reason: String| ConnectError::Url {
            url: text.to_string(),
            reason,
        };
        let rdma = engine::backend::rdma::is_rdma_target(text);
        let url = if rdma {
            engine::backend::rdma::parse_rdma_url(text)
        } else {
            engine::backend::tcp::parse_url(text)
        }
        .map_err(|e| bad(e.to_string()))?;
        let addr = url.resolve().map_err(|e| bad(e.to_string()))?;
        Ok(Target {
            text: text.to_string(),
            url,
            addr,
            transport: if rdma { "rdma" } else { "tcp" },
        })
    }
}

/// Who connects: the host identity (`None`: the kernel's choice) and its
/// options.
#[derive(Debug, Clone, Default)]
pub struct Host {
    /// The host NQN.
    pub hostnqn: Option<String>,
    /// The host ID.
    pub hostid: Option<String>,
    /// The file of the host's DH-HMAC-CHAP secret.
    pub dhchap_secret_file: Option<PathBuf>,
    /// The file of the controller's DH-HMAC-CHAP secret.
    pub dhchap_ctrl_secret_file: Option<PathBuf>,
    /// NVMe/TCP header digests.
    pub header_digest: bool,
    /// NVMe/TCP data digests.
    pub data_digest: bool,
}

/// What [`hold`] tells its caller, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Say {
    /// A line for stderr.
    Note(String),
    /// The block device the kernel made (`nvme1n1`): for stdout, flushed.
    Device(String),
}

fn secret(file: &Option<PathBuf>, what: &'static str) -> Result<Option<String>, ConnectError> {
    file.as_ref()
        .map(|p| {
            std::fs::read_to_string(p)
                .map(|s| s.trim().to_string())
                .map_err(|source| ConnectError::Secret {
                    what,
                    path: p.clone(),
                    source,
                })
        })
        .transpose()
}

/// Connects `host` to `target` under `root` (`/`), records the connection
/// in `journal`, waits at most `wait` for the namespace's block device,
/// tells `say` it, holds the connection until stdin closes or a signal,
/// then disconnects (said too, whatever happened after the connect).
pub fn hold(
    root: &Path,
    journal: &ConnectionJournal,
    target: &Target,
    host: &Host,
    wait: Duration,
    say: &mut dyn FnMut(Say) -> std::io::Result<()>,
) -> Result<(), ConnectError> {
    let url = &target.url;
    let options = fabrics::TcpConnect {
        transport: target.transport,
        subnqn: url.subnqn.clone(),
        traddr: target.addr.ip().to_string(),
        trsvcid: target.addr.port(),
        hostnqn: host.hostnqn.clone(),
        hostid: host.hostid.clone(),
        dhchap_secret: secret(&host.dhchap_secret_file, "DH-HMAC-CHAP secret")?,
        dhchap_ctrl_secret: secret(
            &host.dhchap_ctrl_secret_file,
            "controller's DH-HMAC-CHAP secret",
        )?,
        header_digest: host.header_digest,
        data_digest: host.data_digest,
    }
    .options()
    .map_err(|e| ConnectError::Url {
        url: target.text.clone(),
        reason: e.to_string(),
    })?;
    tune::connect::load_host(target.transport)?;
    let mut c = tune::connect::connect(root, journal, &options, target.addr, &url.subnqn)?;
    let controller = c.controller.clone();
    let mut held = || -> Result<(), ConnectError> {
        c.record(journal)?;
        let _ = say(Say::Note(format!(
            "{controller} (cntlid {}) connected to {} {}",
            c.cntlid, target.addr, url.subnqn
        )));
        let dev = c.wait_namespace(root, url.nsid, wait, interrupt::flag())?;
        say(Say::Device(dev)).map_err(|source| ConnectError::Device { source })?;
        wait_for_stdin_or_signal();
        Ok(())
    };
    let held = held();
    let line = match c.disconnect(root) {
        Ok(true) => format!("{controller} disconnected"),
        Ok(false) => format!("{controller} was gone already"),
        Err(e) => format!("{controller}: {}", chain(&e)),
    };
    // Whoever read stderr may be gone (a killed agent): no error on EPIPE.
    let _ = say(Say::Note(line));
    held
}

/// `e` and its causes joined with `: ` (as `anyhow`'s `{:#}` shows them).
fn chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        text.push_str(&format!(": {c}"));
        cause = c.source();
    }
    text
}

/// Waits for stdin to close or a signal.
fn wait_for_stdin_or_signal() {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let stdin = std::io::stdin();
        let mut lock = stdin.lock();
        let mut line = String::new();
        while lock.read_line(&mut line).is_ok_and(|n| n > 0) {
            line.clear();
        }
        let _ = tx.send(());
    });
    while !interrupt::interrupted() {
        if rx.recv_timeout(Duration::from_millis(100)).is_ok() {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_read_and_bad_ones_named() {
        let t = Target::parse("nvme-tcp://127.0.0.1/nqn.2026-11.io.numio:mem0/1").unwrap();
        assert_eq!((t.transport, t.addr.port(), t.url.nsid), ("tcp", 4420, 1));
        let e = Target::parse("nvme-tcp://").unwrap_err().to_string();
        assert_eq!(e.find(": "), Some("nvme-tcp://".len()), "{e}");
    }

    #[test]
    fn a_chain_reads_as_anyhow_prints_it() {
        let e = ConnectError::Device {
            source: std::io::Error::other("broken pipe"),
        };
        assert_eq!(chain(&e), "writing the device: broken pipe");
    }
}
