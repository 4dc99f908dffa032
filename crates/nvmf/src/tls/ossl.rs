//! The TLS 1.3 handshakes and records, by OpenSSL's libssl: TLS 1.3 only,
//! the two cipher suites NVMe/TCP names, key exchange over X25519 or P-256,
//! external PSKs only (no certificates, no session tickets, no early data).
//!
//! libssl 3 is opened with `dlopen` when TLS is first asked for (a
//! [`ServerContext`] for `numio serve --tls`, a [`connect`] for a host with
//! a TLS key), never at start-up ([`sysapi::dylib`]): numio builds without
//! OpenSSL's headers or pkg-config (issue #37) and runs without libssl
//! until TLS is used; a machine without it gets [`TlsError::Library`],
//! which names the package to install. The calls are declared in [`sys`],
//! this crate's only unsafe TLS code, with the safe `SSL_CTX`/`SSL`
//! wrappers numio needs. rustls has no external PSKs; OpenSSL has them
//! through two callbacks (`SSL_CTX_set_psk_find_session_callback` on the
//! server, `SSL_CTX_set_psk_use_session_callback` on the client).
//!
//! Key exchange is restricted to X25519 and P-256 (RFC 8446 §9.1: every
//! TLS 1.3 implementation must support P-256 and should support X25519):
//! OpenSSL's default list also holds the finite-field groups, and a client
//! offering only an ffdhe8192 key share made the target spend 117–187 ms
//! of its reactor's time on each handshake.
//!
//! - [`ServerContext`] / [`ServerSession`]: the target's side, driven
//!   without a socket (the reactor feeds what its ring received and sends
//!   what the session wrote, through two memory BIOs), so TLS runs on the
//!   reactor's io_uring like plain text; a session is `Send`, so the steps
//!   of an unfinished handshake (its key exchange) run on the target's
//!   `tls_pool` workers instead of the reactor.
//! - [`connect`] / [`TlsStream`]: the host's side over a socket (the
//!   blocking initiator, then the engine's non-blocking loop through
//!   [`crate::host::Stream`]).

use std::ffi::{CStr, CString};
use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::sync::Arc;

use sysapi::dylib::LibraryError;
use zeroize::Zeroizing;

use super::{ConfiguredPsk, Identity, PskHash};

mod sys;

use sys::SslError;

/// Looks up the TLS PSK for an identity a host presents.
pub trait PskLookup: Send + Sync {
    /// The TLS PSK, or why the identity is refused.
    fn tls_psk(&self, id: &Identity) -> Result<Zeroizing<Vec<u8>>, String>;
}

/// What a host authenticated as, once its handshake is done.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsPeer {
    /// The identity it presented.
    pub identity: Identity,
    /// The cipher suite agreed.
    pub cipher: String,
}

/// Why TLS could not start, or its handshake failed.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// libssl cannot be loaded (not installed, or not OpenSSL 3): the text
    /// names the package that brings it.
    #[error(transparent)]
    Library(#[from] LibraryError),
    /// OpenSSL refused the set-up, or the handshake failed: why.
    #[error("{0}")]
    Failed(String),
}

/// The cipher suites the target accepts (the identity's hash picks one).
const SERVER_SUITES: &CStr = c"TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384";

/// The key-exchange groups both ends offer and accept (OpenSSL's names):
/// no finite-field groups, whose key shares cost the target's reactor up
/// to 187 ms each (ffdhe8192).
const GROUPS: &CStr = c"X25519:P-256";

/// The target's TLS set-up: one per target, shared by its reactors.
pub struct ServerContext {
    ctx: Arc<sys::Ctx>,
}

impl std::fmt::Debug for ServerContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ServerContext")
    }
}

impl ServerContext {
    /// A context that admits hosts whose identity `lookup` knows (opens
    /// libssl the first time).
    pub fn new(lookup: Arc<dyn PskLookup>) -> Result<Self, TlsError> {
        Self::with_library(sys::libssl(), lookup)
    }

    fn with_library(
        lib: Result<sys::Lib, LibraryError>,
        lookup: Arc<dyn PskLookup>,
    ) -> Result<Self, TlsError> {
        let ctx =
            sys::Ctx::server(lib?, lookup, SERVER_SUITES, GROUPS).map_err(TlsError::Failed)?;
        Ok(Self { ctx: Arc::new(ctx) })
    }

    /// A session for one accepted connection.
    pub fn session(&self) -> Result<ServerSession, String> {
        let ssl = sys::Ssl::server(&self.ctx).map_err(|e| format!("a TLS session: {e}"))?;
        Ok(ServerSession {
            ssl,
            established: false,
            seen_bytes: false,
        })
    }
}

/// What a session's input did.
#[derive(Debug, PartialEq, Eq)]
pub enum Received {
    /// Still handshaking, or records decrypted (possibly none).
    More,
    /// The handshake finished now: the host is this identity.
    Established(TlsPeer),
    /// The host closed the TLS session (close_notify).
    Closed,
}

/// One connection's TLS session on the target.
pub struct ServerSession {
    ssl: sys::Ssl<sys::MemBios>,
    established: bool,
    seen_bytes: bool,
}

impl std::fmt::Debug for ServerSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ServerSession(established {})", self.established)
    }
}

/// Plain text read per `SSL_read_ex` (one record holds at most 16 KiB).
const RECORD_BYTES: usize = 16 * 1024;

impl ServerSession {
    /// Feeds what the socket received; plain text it decrypts goes to
    /// `plain` (called per record). The error is why the session failed,
    /// for the log (the connection is then closed).
    pub fn receive(
        &mut self,
        cipher: &[u8],
        mut plain: impl FnMut(&[u8]),
    ) -> Result<Received, String> {
        if !self.seen_bytes && !cipher.is_empty() {
            self.seen_bytes = true;
            // A TLS connection opens with a handshake record (type 22); an
            // NVMe/TCP ICReq opens with PDU type 0.
            if cipher[0] != 0x16 {
                return Err(if cipher[0] == 0 {
                    "the host sent plain-text NVMe/TCP (an ICReq) where TLS is required: connect with TLS (nvme connect --tls, numio bench --tls-key-file FILE)".into()
                } else {
                    format!(
                        "the host sent no TLS handshake (first byte {:#04x})",
                        cipher[0]
                    )
                });
            }
        }
        self.ssl.feed(cipher)?;
        let mut now = Received::More;
        if !self.established {
            match self.ssl.accept() {
                Ok(()) => {
                    self.established = true;
                    now = Received::Established(self.peer()?);
                }
                Err(SslError::WantRead) => return Ok(Received::More),
                Err(e) => return Err(self.handshake_error(e)),
            }
        }
        let mut buf = [0u8; RECORD_BYTES];
        loop {
            match self.ssl.read(&mut buf) {
                Ok(n) => plain(&buf[..n]),
                Err(SslError::WantRead) => return Ok(now),
                Err(SslError::ZeroReturn) => return Ok(Received::Closed),
                Err(e) => return Err(format!("TLS record error: {e}")),
            }
        }
    }

    fn peer(&self) -> Result<TlsPeer, String> {
        let identity = match self.ssl.peer() {
            Some(Ok(id)) => id.clone(),
            _ => return Err("TLS handshake finished without a PSK".into()),
        };
        let cipher = self.ssl.cipher().unwrap_or_else(|| "?".into());
        Ok(TlsPeer { identity, cipher })
    }

    fn handshake_error(&self, e: SslError) -> String {
        match self.ssl.peer() {
            Some(Err(why)) => format!("TLS handshake refused: {why}"),
            _ => format!("TLS handshake failed: {e}"),
        }
    }

    /// Encrypts `plain` for sending.
    pub fn send(&mut self, plain: &[u8]) -> Result<(), String> {
        let mut pos = 0;
        while pos < plain.len() {
            match self.ssl.write(&plain[pos..]) {
                Ok(n) => pos += n,
                Err(e) => return Err(format!("TLS record error: {e}")),
            }
        }
        Ok(())
    }

    /// Bytes to send waiting (handshake messages, records).
    pub fn has_output(&self) -> bool {
        self.ssl.has_output()
    }

    /// Moves the bytes to send into `out` (which must be empty).
    pub fn take_output(&mut self, out: &mut Vec<u8>) {
        debug_assert!(out.is_empty());
        self.ssl.take_output(out);
    }

    /// True once the handshake finished.
    pub fn established(&self) -> bool {
        self.established
    }
}

/// Runs the client's handshake on `stream` (blocking, within its
/// timeouts) with `key` for `hostnqn` → `subnqn`, presenting a version 1
/// identity (opens libssl the first time).
pub fn connect(
    stream: TcpStream,
    key: &ConfiguredPsk,
    hostnqn: &str,
    subnqn: &str,
) -> Result<TlsStream, TlsError> {
    connect_with(sys::libssl(), GROUPS, stream, key, hostnqn, subnqn)
}

/// [`connect`] offering the key exchange groups `groups` (OpenSSL's
/// colon-separated names, such as `c"P-384:P-256"`) instead of X25519 and
/// P-256: for a target that asks for other groups, and for tests and
/// benchmarks of what a target does with a client's offer.
pub fn connect_offering(
    stream: TcpStream,
    key: &ConfiguredPsk,
    hostnqn: &str,
    subnqn: &str,
    groups: &CStr,
) -> Result<TlsStream, TlsError> {
    connect_with(sys::libssl(), groups, stream, key, hostnqn, subnqn)
}

/// [`connect`] with libssl as given and offering `groups`.
fn connect_with(
    lib: Result<sys::Lib, LibraryError>,
    groups: &CStr,
    stream: TcpStream,
    key: &ConfiguredPsk,
    hostnqn: &str,
    subnqn: &str,
) -> Result<TlsStream, TlsError> {
    let lib = lib?;
    let (identity, psk) = key.for_host(1, hostnqn, subnqn);
    let hash = identity.hash;
    let suite = CString::new(hash.cipher_suite()).expect("a suite name has no NUL");
    let ctx = Arc::new(sys::Ctx::client(lib, &suite, groups).map_err(TlsError::Failed)?);
    let offer = sys::ClientPsk {
        identity: identity.to_string(),
        hash,
        key: psk,
    };
    let mut ssl = sys::Ssl::client(&ctx, offer, stream)
        .map_err(|e| TlsError::Failed(format!("TLS set-up failed: {e}")))?;
    match ssl.connect() {
        Ok(()) => Ok(TlsStream { ssl }),
        Err(SslError::WantRead | SslError::WantWrite) => Err(TlsError::Failed(
            "TLS handshake timed out (no answer from the target)".into(),
        )),
        Err(e) => Err(TlsError::Failed(format!(
            "TLS handshake failed: {e} (does the target hold this host's PSK for {subnqn}?)"
        ))),
    }
}

/// A host's TLS session over its socket, after [`connect`]: reads and
/// writes plain text; on a non-blocking socket (or one whose timeout
/// passed) a read or write that must wait is `WouldBlock`.
pub struct TlsStream {
    ssl: sys::Ssl<TcpStream>,
}

impl std::fmt::Debug for TlsStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsStream")
            .field("socket", self.get_ref())
            .field("cipher", &self.cipher())
            .finish()
    }
}

impl TlsStream {
    /// The socket below.
    pub fn get_ref(&self) -> &TcpStream {
        self.ssl.socket()
    }

    /// Plain text decrypted and not yet read, in bytes.
    pub fn pending(&self) -> usize {
        self.ssl.pending()
    }

    /// The cipher suite agreed (`TLS_AES_128_GCM_SHA256`).
    pub fn cipher(&self) -> Option<String> {
        self.ssl.cipher()
    }

    /// Sends close_notify (the socket stays open; dropping the stream
    /// closes it without one).
    pub fn shutdown(&mut self) -> io::Result<()> {
        self.ssl.shutdown().map_err(SslError::into_io)
    }
}

impl Read for TlsStream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        match self.ssl.read(buf) {
            Ok(n) => Ok(n),
            Err(SslError::ZeroReturn | SslError::Io(None)) => Ok(0),
            Err(e) => Err(e.into_io()),
        }
    }
}

impl Write for TlsStream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        self.ssl.write(buf).map_err(SslError::into_io)
    }

    fn flush(&mut self) -> io::Result<()> {
        // Nothing is held below: OpenSSL's socket BIO writes straight to
        // the socket (a record a write left half-sent is finished by the
        // next write, OpenSSL's rule after WANT_WRITE).
        Ok(())
    }
}

#[cfg(test)]
mod tests;
