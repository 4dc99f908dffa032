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

use super::{ConfiguredPsk, Identity, IdentityError, PskHash};

mod sys;

pub use sys::SslError;

/// Looks up the TLS PSK for an identity a host presents.
pub trait PskLookup: Send + Sync {
    /// The TLS PSK, or why the identity is refused.
    fn tls_psk(&self, id: &Identity) -> Result<Zeroizing<Vec<u8>>, PskRefusal>;
}

/// Why the target refused the PSK identity a host presented.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PskRefusal {
    /// The identity's bytes are not UTF-8.
    #[error("the PSK identity is not text")]
    NotText,
    /// The identity does not parse.
    #[error(transparent)]
    Identity(#[from] IdentityError),
    /// The identity names a subsystem the target does not serve.
    #[error("the identity names subsystem {subnqn}, which this target does not serve")]
    UnknownSubsystem {
        /// The subsystem named.
        subnqn: String,
    },
    /// The host holds a key, but not the one this identity was made with.
    #[error(
        "host {hostnqn} presented a PSK identity for {subnqn} that its key does not give \
         (another key, or another hash)"
    )]
    OtherKey {
        /// The host.
        hostnqn: String,
        /// The subsystem named.
        subnqn: String,
    },
    /// The host holds no key for the subsystem.
    #[error("host {hostnqn} has no TLS key for {subnqn}")]
    NoKey {
        /// The host.
        hostnqn: String,
        /// The subsystem named.
        subnqn: String,
    },
    /// The lookup panicked.
    #[error("the PSK lookup failed (a panic)")]
    Panic,
}

/// An OpenSSL call that failed while setting up a context or a session:
/// one variant per step, each naming the function called and carrying
/// OpenSSL's error queue as text (`no reason given` when it was empty).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SetupError {
    /// `SSL_CTX_new`.
    #[error("setting up OpenSSL (a context): {queue}")]
    Context {
        /// The function called.
        call: &'static str,
        /// OpenSSL's error queue.
        queue: String,
    },
    /// Pinning the protocol to TLS 1.3 (`SSL_CTX_set_{min,max}_proto_version`).
    #[error("setting up OpenSSL (TLS 1.3 only): {queue}")]
    Version {
        /// The function called.
        call: &'static str,
        /// OpenSSL's error queue.
        queue: String,
    },
    /// `SSL_CTX_set_ciphersuites`.
    #[error("setting up OpenSSL (cipher suites {suites}): {queue}")]
    Suites {
        /// The function called.
        call: &'static str,
        /// The suites asked for.
        suites: String,
        /// OpenSSL's error queue.
        queue: String,
    },
    /// `SSL_CTX_set1_groups_list`.
    #[error("setting up OpenSSL (key-exchange groups {groups}): {queue}")]
    Groups {
        /// The function called.
        call: &'static str,
        /// The groups asked for.
        groups: String,
        /// OpenSSL's error queue.
        queue: String,
    },
    /// `SSL_CTX_set_mode` (partial writes, a moving write buffer).
    #[error("setting up OpenSSL (the write mode): {queue}")]
    WriteMode {
        /// The function called.
        call: &'static str,
        /// OpenSSL's error queue.
        queue: String,
    },
    /// `SSL_CTX_set_num_tickets` (no session tickets).
    #[error("setting up OpenSSL (no session tickets): {queue}")]
    Tickets {
        /// The function called.
        call: &'static str,
        /// OpenSSL's error queue.
        queue: String,
    },
    /// Attaching the server's PSK lookup (`SSL_CTX_set_ex_data`).
    #[error("setting up OpenSSL (the PSK lookup): {queue}")]
    PskLookup {
        /// The function called.
        call: &'static str,
        /// OpenSSL's error queue.
        queue: String,
    },
    /// `SSL_new`.
    #[error("setting up OpenSSL (a session): {queue}")]
    Session {
        /// The function called.
        call: &'static str,
        /// OpenSSL's error queue.
        queue: String,
    },
    /// A server session's memory BIOs (`BIO_new`).
    #[error("setting up OpenSSL (the session's buffers): {queue}")]
    Buffers {
        /// The function called.
        call: &'static str,
        /// OpenSSL's error queue.
        queue: String,
    },
    /// A client session's socket (`SSL_set_fd`).
    #[error("setting up OpenSSL (the session's socket): {queue}")]
    Socket {
        /// The function called.
        call: &'static str,
        /// OpenSSL's error queue.
        queue: String,
    },
    /// Attaching a session's callback data (`SSL_set_ex_data`).
    #[error("setting up OpenSSL (the session's data): {queue}")]
    SessionData {
        /// The function called.
        call: &'static str,
        /// OpenSSL's error queue.
        queue: String,
    },
}

/// Why a target's TLS session failed (the connection is then closed).
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    /// The session could not be made ([`ServerContext::session`]).
    #[error("a TLS session: {source}")]
    Setup {
        /// The step that failed.
        source: SetupError,
    },
    /// The host sent an ICReq in plain text.
    #[error(
        "the host sent plain-text NVMe/TCP (an ICReq) where TLS is required: connect with TLS \
         (nvme connect --tls, numio bench --tls-key-file FILE)"
    )]
    PlainText,
    /// The host's first byte opens no TLS handshake record.
    #[error("the host sent no TLS handshake (first byte {first_byte:#04x})")]
    NotTls {
        /// The byte.
        first_byte: u8,
    },
    /// OpenSSL did not take the bytes received (`BIO_write_ex`).
    #[error("TLS: buffering the received bytes failed: {queue}")]
    Buffer {
        /// The function called.
        call: &'static str,
        /// OpenSSL's error queue.
        queue: String,
    },
    /// The host's PSK identity was refused.
    #[error("TLS handshake refused: {source}")]
    Refused {
        /// Why.
        source: PskRefusal,
    },
    /// The handshake failed otherwise.
    #[error("TLS handshake failed: {source}")]
    Handshake {
        /// OpenSSL's reason.
        source: SslError,
    },
    /// The handshake finished without the PSK callback's identity.
    #[error("TLS handshake finished without a PSK")]
    NoPsk,
    /// A record did not decrypt or encrypt.
    #[error("TLS record error: {source}")]
    Record {
        /// OpenSSL's reason.
        source: SslError,
    },
}

/// What a host authenticated as, once its handshake is done.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsPeer {
    /// The identity it presented.
    pub identity: Identity,
    /// The cipher suite agreed.
    pub cipher: String,
}

/// Why TLS could not start, or a host's handshake failed.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// libssl cannot be loaded (not installed, or not OpenSSL 3): the text
    /// names the package that brings it.
    #[error(transparent)]
    Library(#[from] LibraryError),
    /// OpenSSL refused to set up a context.
    #[error(transparent)]
    Setup(#[from] SetupError),
    /// OpenSSL refused to set up the host's session.
    #[error("TLS set-up failed: {source}")]
    Session {
        /// The step that failed.
        source: SetupError,
    },
    /// The target did not answer within the socket's timeout.
    #[error("TLS handshake timed out (no answer from the target)")]
    Timeout,
    /// The handshake failed.
    #[error("TLS handshake failed: {source} (does the target hold this host's PSK for {subnqn}?)")]
    Handshake {
        /// The subsystem the identity named.
        subnqn: String,
        /// OpenSSL's reason.
        source: SslError,
    },
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
        let ctx = sys::Ctx::server(lib?, lookup, SERVER_SUITES, GROUPS)?;
        Ok(Self { ctx: Arc::new(ctx) })
    }

    /// A session for one accepted connection.
    pub fn session(&self) -> Result<ServerSession, SessionError> {
        let ssl = sys::Ssl::server(&self.ctx).map_err(|source| SessionError::Setup { source })?;
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
    ) -> Result<Received, SessionError> {
        if !self.seen_bytes && !cipher.is_empty() {
            self.seen_bytes = true;
            // A TLS connection opens with a handshake record (type 22); an
            // NVMe/TCP ICReq opens with PDU type 0.
            if cipher[0] != 0x16 {
                return Err(if cipher[0] == 0 {
                    SessionError::PlainText
                } else {
                    SessionError::NotTls {
                        first_byte: cipher[0],
                    }
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
                Err(source) => return Err(SessionError::Record { source }),
            }
        }
    }

    fn peer(&self) -> Result<TlsPeer, SessionError> {
        let identity = match self.ssl.peer() {
            Some(Ok(id)) => id.clone(),
            _ => return Err(SessionError::NoPsk),
        };
        let cipher = self.ssl.cipher().unwrap_or_else(|| "?".into());
        Ok(TlsPeer { identity, cipher })
    }

    fn handshake_error(&self, source: SslError) -> SessionError {
        match self.ssl.peer() {
            Some(Err(why)) => SessionError::Refused {
                source: why.clone(),
            },
            _ => SessionError::Handshake { source },
        }
    }

    /// Encrypts `plain` for sending.
    pub fn send(&mut self, plain: &[u8]) -> Result<(), SessionError> {
        let mut pos = 0;
        while pos < plain.len() {
            match self.ssl.write(&plain[pos..]) {
                Ok(n) => pos += n,
                Err(source) => return Err(SessionError::Record { source }),
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
    let ctx = Arc::new(sys::Ctx::client(lib, &suite, groups)?);
    let offer = sys::ClientPsk {
        identity: identity.to_string(),
        hash,
        key: psk,
    };
    let mut ssl =
        sys::Ssl::client(&ctx, offer, stream).map_err(|source| TlsError::Session { source })?;
    match ssl.connect() {
        Ok(()) => Ok(TlsStream { ssl }),
        Err(SslError::WantRead | SslError::WantWrite) => Err(TlsError::Timeout),
        Err(source) => Err(TlsError::Handshake {
            subnqn: subnqn.to_string(),
            source,
        }),
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
