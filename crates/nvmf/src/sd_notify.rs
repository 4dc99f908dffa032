//! systemd's readiness protocol (`Type=notify`, sd_notify(3)), written out
//! rather than linked: one datagram per message to the AF_UNIX socket
//! `$NOTIFY_SOCKET` names, a path or, with a leading '@', an abstract name.
//! Without `$NOTIFY_SOCKET` (not started by systemd) every call does nothing.
//! `numio serve` sends READY, RELOADING and STOPPING through it.

use std::os::unix::net::{SocketAddr, UnixDatagram};

/// `$NOTIFY_SOCKET` cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum NotifyError {
    /// Not UTF-8.
    #[error("NOTIFY_SOCKET={value:?} is not UTF-8")]
    NotUtf8 {
        /// The value.
        value: std::ffi::OsString,
    },
    /// Neither an absolute path nor `@name`.
    #[error(
        "NOTIFY_SOCKET={value}: not an absolute path or @abstract name; unset it outside systemd"
    )]
    NotAPath {
        /// The value.
        value: String,
    },
    /// Not a socket address.
    #[error("NOTIFY_SOCKET={value}: {source} (systemd sets it: a path or @name)")]
    BadAddress {
        /// The value.
        value: String,
        /// Why.
        source: std::io::Error,
    },
    /// No socket to send from.
    #[error("NOTIFY_SOCKET={value}: creating a socket: {source}")]
    Socket {
        /// The value.
        value: String,
        /// Why.
        source: std::io::Error,
    },
}

/// Where to send, if systemd asked for notices.
#[derive(Debug)]
pub struct Notifier {
    to: Option<(UnixDatagram, SocketAddr)>,
}

impl Notifier {
    /// Reads `$NOTIFY_SOCKET`; an unusable value is an error naming it.
    pub fn from_env() -> Result<Self, NotifyError> {
        match std::env::var_os("NOTIFY_SOCKET") {
            None => Ok(Self { to: None }),
            Some(v) => {
                let v = v
                    .into_string()
                    .map_err(|value| NotifyError::NotUtf8 { value })?;
                Self::to(&v)
            }
        }
    }

    /// Notices go to `socket`: a path or `@abstract-name`.
    pub fn to(socket: &str) -> Result<Self, NotifyError> {
        let addr = parse(socket)?;
        let sock = UnixDatagram::unbound().map_err(|source| NotifyError::Socket {
            value: socket.to_string(),
            source,
        })?;
        Ok(Self {
            to: Some((sock, addr)),
        })
    }

    /// True when notices go somewhere.
    pub fn is_active(&self) -> bool {
        self.to.is_some()
    }

    /// Sends `state` (newline-separated `KEY=VALUE` lines); a failure is
    /// reported on stderr, not fatal: the target keeps serving.
    pub fn notify(&self, state: &str) {
        let Some((sock, addr)) = &self.to else {
            return;
        };
        if let Err(e) = sock.send_to_addr(state.as_bytes(), addr) {
            crate::log::warn(
                "sd_notify_failed",
                format_args!("sd_notify {state:?} to NOTIFY_SOCKET: {e}"),
                &[("error", e.to_string().into())],
            );
        }
    }

    /// READY=1 with a STATUS line.
    pub fn ready(&self, status: &str) {
        self.notify(&format!("READY=1\nSTATUS={status}"));
    }

    /// RELOADING=1 and MONOTONIC_USEC (systemd 253 checks it for
    /// `Type=notify-reload`; older ones ignore it).
    pub fn reloading(&self) {
        let usec = monotonic_usec();
        self.notify(&format!("RELOADING=1\nMONOTONIC_USEC={usec}"));
    }

    /// STOPPING=1 with a STATUS line.
    pub fn stopping(&self, status: &str) {
        self.notify(&format!("STOPPING=1\nSTATUS={status}"));
    }
}

/// `$NOTIFY_SOCKET`'s value as an address.
fn parse(socket: &str) -> Result<SocketAddr, NotifyError> {
    let bad = |source| NotifyError::BadAddress {
        value: socket.to_string(),
        source,
    };
    if let Some(name) = socket.strip_prefix('@') {
        use std::os::linux::net::SocketAddrExt;
        return SocketAddr::from_abstract_name(name.as_bytes()).map_err(bad);
    }
    if !socket.starts_with('/') {
        return Err(NotifyError::NotAPath {
            value: socket.to_string(),
        });
    }
    SocketAddr::from_pathname(socket).map_err(bad)
}

/// CLOCK_MONOTONIC in microseconds.
fn monotonic_usec() -> u64 {
    let ts = rustix::time::clock_gettime(rustix::time::ClockId::Monotonic);
    ts.tv_sec as u64 * 1_000_000 + ts.tv_nsec as u64 / 1_000
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn datagrams_reach_a_path_and_an_abstract_socket() {
        let path = std::env::temp_dir().join(format!("numio-notify-{}", std::process::id()));
        let _ = std::fs::remove_file(&path);
        let rx = UnixDatagram::bind(&path).unwrap();
        let n = Notifier::to(path.to_str().unwrap()).unwrap();
        n.ready("serving 1 subsystem");
        let mut buf = [0u8; 256];
        let len = rx.recv(&mut buf).unwrap();
        assert_eq!(&buf[..len], b"READY=1\nSTATUS=serving 1 subsystem");
        std::fs::remove_file(&path).unwrap();

        use std::os::linux::net::SocketAddrExt;
        let name = format!("numio-notify-test-{}", std::process::id());
        let addr = SocketAddr::from_abstract_name(name.as_bytes()).unwrap();
        let rx = UnixDatagram::bind_addr(&addr).unwrap();
        let n = Notifier::to(&format!("@{name}")).unwrap();
        n.reloading();
        let len = rx.recv(&mut buf).unwrap();
        let text = std::str::from_utf8(&buf[..len]).unwrap();
        assert!(text.starts_with("RELOADING=1\nMONOTONIC_USEC="), "{text}");
    }

    #[test]
    fn bad_values_are_named() {
        let e = Notifier::to("relative/x").unwrap_err();
        assert!(
            matches!(&e, NotifyError::NotAPath { value } if value == "relative/x"),
            "{e:?}"
        );
        assert!(e.to_string().contains("NOTIFY_SOCKET=relative/x"), "{e}");
        assert!(!Notifier { to: None }.is_active());
    }
}
