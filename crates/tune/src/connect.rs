//! One connection of the kernel's NVMe over Fabrics host, as `numio
//! connect` makes it: the host module loaded ([`load_host`]), the connect
//! ([`connect`], as `nvme connect` does), its record in the
//! [`ConnectionJournal`] ([`Connection::record`]), the namespace's block
//! device waited for ([`Connection::wait_namespace`]), and the disconnect
//! that removes the record ([`Connection::disconnect`]).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use sysapi::fabrics;

use crate::connections::{disconnect, ConnectionError, ConnectionJournal, ConnectionRecord};

/// Loads the fabrics host for `transport` (`tcp` or `rdma`) when
/// `/dev/nvme-fabrics` is missing (the kernel loads nvme-tcp itself once
/// nvme-fabrics is there); [`ConnectionError::NoHost`] when it is still
/// missing.
pub fn load_host(transport: &'static str) -> Result<(), ConnectionError> {
    let dev = Path::new(fabrics::FABRICS_DEV);
    if !dev.exists() {
        let _ = std::process::Command::new("modprobe")
            .arg(format!("nvme-{transport}"))
            .stderr(std::process::Stdio::null())
            .status();
    }
    if !dev.exists() {
        return Err(ConnectionError::NoHost { transport });
    }
    Ok(())
}

/// A connection [`connect`] made; [`Connection::disconnect`] undoes it.
#[derive(Debug)]
pub struct Connection {
    /// The controller the kernel made (`nvme3`).
    pub controller: String,
    /// Its controller id.
    pub cntlid: u32,
    record: ConnectionRecord,
    record_path: Option<PathBuf>,
}

/// Connects the kernel's host with `options` (`sysapi::fabrics::
/// TcpConnect::options`) to `subnqn` at `addr`, `journal`'s directory made
/// first (private, or refused); the record is not written yet
/// ([`Connection::record`]).
pub fn connect(
    root: &Path,
    journal: &ConnectionJournal,
    options: &str,
    addr: SocketAddr,
    subnqn: &str,
) -> Result<Connection, ConnectionError> {
    journal.open(true)?;
    let c = fabrics::connect(Path::new(fabrics::FABRICS_DEV), options).map_err(|error| {
        ConnectionError::Connect {
            addr,
            subnqn: subnqn.to_string(),
            error,
        }
    })?;
    let controller = format!("nvme{}", c.instance);
    let record = ConnectionRecord::new(
        root,
        &controller,
        c.cntlid,
        subnqn,
        &addr.ip().to_string(),
        addr.port(),
    );
    Ok(Connection {
        controller,
        cntlid: c.cntlid,
        record,
        record_path: None,
    })
}

impl Connection {
    /// Writes the connection's record to `journal` (a dead numio's is
    /// disconnected by the next `numio connect`).
    pub fn record(&mut self, journal: &ConnectionJournal) -> Result<(), ConnectionError> {
        self.record_path = Some(journal.record(&self.record)?);
        Ok(())
    }

    /// The head block device of namespace `nsid` reached through this
    /// controller under `root`, once the kernel has made it; at most
    /// `wait`, and no longer once `stop` is set.
    pub fn wait_namespace(
        &self,
        root: &Path,
        nsid: u32,
        wait: Duration,
        stop: &AtomicBool,
    ) -> Result<String, ConnectionError> {
        let controller = self.controller.as_str();
        let deadline = Instant::now() + wait;
        loop {
            if let Ok(t) = topology::Topology::discover(root) {
                let found = t.subsystems.iter().flat_map(|s| &s.namespaces).find(|n| {
                    n.nsid == nsid
                        && (n.controller.as_deref() == Some(controller)
                            || n.paths.iter().any(|p| p.controller == controller))
                });
                if let Some(n) = found {
                    return Ok(n.block_device.clone());
                }
            }
            if stop.load(Ordering::Relaxed) {
                return Err(ConnectionError::WaitInterrupted {
                    nsid,
                    controller: controller.to_string(),
                });
            }
            if Instant::now() >= deadline {
                return Err(ConnectionError::NoNamespace {
                    nsid,
                    controller: controller.to_string(),
                    wait_s: wait.as_secs(),
                });
            }
            // The kernel scans namespaces after the connect returns; its
            // block device appears as a sysfs entry, looked for every 100 ms.
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Disconnects (when the controller is still this connection's) and
    /// removes the record; false when the controller was gone already.
    pub fn disconnect(self, root: &Path) -> Result<bool, ConnectionError> {
        let undone = disconnect(root, &self.record);
        if let Some(p) = &self.record_path {
            let _ = std::fs::remove_file(p);
        }
        undone
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refused_connect_says_why_and_what_to_do() {
        let e = ConnectionError::Connect {
            addr: "10.0.0.5:4420".parse().unwrap(),
            subnqn: "nqn.x".into(),
            error: std::io::Error::from_raw_os_error(rustix::io::Errno::ALREADY.raw_os_error()),
        }
        .to_string();
        assert!(
            e.starts_with(
                "connecting the kernel's NVMe/TCP host to 10.0.0.5:4420 (nqn.x) failed: "
            ) && e.ends_with("bench its device, or disconnect it first"),
            "{e}"
        );
        let e = ConnectionError::NoNamespace {
            nsid: 2,
            controller: "nvme3".into(),
            wait_s: 60,
        }
        .to_string();
        assert!(
            e.starts_with("namespace 2 of nvme3 did not appear within 60 s"),
            "{e}"
        );
    }
}
