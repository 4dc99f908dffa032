//! The TLS 1.3 handshakes and records, by OpenSSL (through the `openssl`
//! crate): TLS 1.3 only, the two cipher suites NVMe/TCP names, external
//! PSKs only (no certificates, no session tickets, no early data).
//!
//! rustls has no external PSKs; OpenSSL has them through two callbacks the
//! `openssl` crate does not wrap (`SSL_CTX_set_psk_find_session_callback`
//! on the server, `SSL_CTX_set_psk_use_session_callback` on the client),
//! declared in [`sys`] below with the three `SSL_SESSION` setters they
//! need. That module is this crate's only unsafe TLS code.
//!
//! - [`ServerContext`] / [`ServerSession`]: the target's side, driven
//!   without a socket (the reactor feeds what its ring received and sends
//!   what the session wrote), so TLS runs on the reactor's io_uring like
//!   plain text.
//! - [`connect`]: the host's side over a socket (the blocking initiator,
//!   then the engine's non-blocking loop through [`crate::host::Stream`]).

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::sync::{Arc, OnceLock};

use openssl::ex_data::Index;
use openssl::ssl::{
    ErrorCode, Ssl, SslContext, SslContextBuilder, SslMethod, SslMode, SslOptions, SslStream,
    SslVerifyMode, SslVersion,
};
use zeroize::Zeroizing;

use super::{ConfiguredPsk, Identity, PskHash};

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

/// The PSK a client offers (its identity text must outlive the handshake:
/// OpenSSL reads it after the callback returns).
struct ClientPsk {
    identity: String,
    hash: PskHash,
    key: Zeroizing<Vec<u8>>,
}

fn lookup_index() -> Index<SslContext, Arc<dyn PskLookup>> {
    static I: OnceLock<Index<SslContext, Arc<dyn PskLookup>>> = OnceLock::new();
    *I.get_or_init(|| SslContext::new_ex_index().expect("an SSL_CTX ex_data index"))
}

/// The identity a server session accepted, or why it refused the one
/// offered.
fn peer_index() -> Index<Ssl, Result<Identity, String>> {
    static I: OnceLock<Index<Ssl, Result<Identity, String>>> = OnceLock::new();
    *I.get_or_init(|| Ssl::new_ex_index().expect("an SSL ex_data index"))
}

fn client_index() -> Index<Ssl, ClientPsk> {
    static I: OnceLock<Index<Ssl, ClientPsk>> = OnceLock::new();
    *I.get_or_init(|| Ssl::new_ex_index().expect("an SSL ex_data index"))
}

fn tls13_only(b: &mut SslContextBuilder, suites: &str) -> Result<(), String> {
    let e = |e: openssl::error::ErrorStack| format!("setting up OpenSSL: {e}");
    b.set_min_proto_version(Some(SslVersion::TLS1_3))
        .map_err(e)?;
    b.set_max_proto_version(Some(SslVersion::TLS1_3))
        .map_err(e)?;
    b.set_ciphersuites(suites).map_err(e)?;
    b.set_options(SslOptions::NO_TICKET);
    b.set_num_tickets(0).map_err(e)?;
    b.set_verify(SslVerifyMode::NONE);
    b.set_mode(SslMode::ENABLE_PARTIAL_WRITE | SslMode::ACCEPT_MOVING_WRITE_BUFFER);
    Ok(())
}

/// The target's TLS set-up: one per target, shared by its reactors.
pub struct ServerContext {
    ctx: SslContext,
}

impl std::fmt::Debug for ServerContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ServerContext")
    }
}

impl ServerContext {
    /// A context that admits hosts whose identity `lookup` knows.
    pub fn new(lookup: Arc<dyn PskLookup>) -> Result<Self, String> {
        let mut b = SslContext::builder(SslMethod::tls_server())
            .map_err(|e| format!("setting up OpenSSL: {e}"))?;
        tls13_only(&mut b, "TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384")?;
        b.set_ex_data(lookup_index(), lookup);
        sys::set_find_session(&mut b);
        Ok(Self { ctx: b.build() })
    }

    /// A session for one accepted connection.
    pub fn session(&self) -> Result<ServerSession, String> {
        let ssl = Ssl::new(&self.ctx).map_err(|e| format!("a TLS session: {e}"))?;
        let stream =
            SslStream::new(ssl, MemIo::default()).map_err(|e| format!("a TLS session: {e}"))?;
        Ok(ServerSession {
            stream,
            established: false,
            seen_bytes: false,
        })
    }
}

/// Bytes in from the socket, bytes out to it: OpenSSL's I/O for a session
/// the reactor drives.
#[derive(Debug, Default)]
struct MemIo {
    input: Vec<u8>,
    input_pos: usize,
    output: Vec<u8>,
}

impl Read for MemIo {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let rest = &self.input[self.input_pos..];
        if rest.is_empty() {
            return Err(io::ErrorKind::WouldBlock.into());
        }
        let n = rest.len().min(buf.len());
        buf[..n].copy_from_slice(&rest[..n]);
        self.input_pos += n;
        if self.input_pos == self.input.len() {
            self.input.clear();
            self.input_pos = 0;
        }
        Ok(n)
    }
}

impl Write for MemIo {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.output.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
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
    stream: SslStream<MemIo>,
    established: bool,
    seen_bytes: bool,
}

impl std::fmt::Debug for ServerSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ServerSession(established {})", self.established)
    }
}

/// Plain text read per `SSL_read` (one record holds at most 16 KiB).
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
                    "the host sent plain-text NVMe/TCP (an ICReq) where TLS is required: connect with TLS (nvme connect --tls, numio bench --tcp-tls-key FILE)".into()
                } else {
                    format!(
                        "the host sent no TLS handshake (first byte {:#04x})",
                        cipher[0]
                    )
                });
            }
        }
        self.stream.get_mut().input.extend_from_slice(cipher);
        let mut now = Received::More;
        if !self.established {
            match self.stream.accept() {
                Ok(()) => {
                    self.established = true;
                    now = Received::Established(self.peer()?);
                }
                Err(e) if e.code() == ErrorCode::WANT_READ => return Ok(Received::More),
                Err(e) => return Err(self.handshake_error(e)),
            }
        }
        let mut buf = [0u8; RECORD_BYTES];
        loop {
            match self.stream.ssl_read(&mut buf) {
                Ok(0) => return Ok(Received::Closed),
                Ok(n) => plain(&buf[..n]),
                Err(e) if e.code() == ErrorCode::WANT_READ => return Ok(now),
                Err(e) if e.code() == ErrorCode::ZERO_RETURN => return Ok(Received::Closed),
                Err(e) => return Err(format!("TLS record error: {e}")),
            }
        }
    }

    fn peer(&self) -> Result<TlsPeer, String> {
        let identity = match self.stream.ssl().ex_data(peer_index()) {
            Some(Ok(id)) => id.clone(),
            _ => return Err("TLS handshake finished without a PSK".into()),
        };
        let cipher = self.stream.ssl().current_cipher().map_or_else(
            || "?".into(),
            |c| c.standard_name().unwrap_or(c.name()).to_string(),
        );
        Ok(TlsPeer { identity, cipher })
    }

    fn handshake_error(&self, e: openssl::ssl::Error) -> String {
        match self.stream.ssl().ex_data(peer_index()) {
            Some(Err(why)) => format!("TLS handshake refused: {why}"),
            _ => format!("TLS handshake failed: {e}"),
        }
    }

    /// Encrypts `plain` for sending.
    pub fn send(&mut self, plain: &[u8]) -> Result<(), String> {
        let mut pos = 0;
        while pos < plain.len() {
            match self.stream.ssl_write(&plain[pos..]) {
                Ok(n) => pos += n,
                Err(e) => return Err(format!("TLS record error: {e}")),
            }
        }
        Ok(())
    }

    /// Bytes to send waiting (handshake messages, records).
    pub fn has_output(&self) -> bool {
        !self.stream.get_ref().output.is_empty()
    }

    /// Moves the bytes to send into `out` (which must be empty).
    pub fn take_output(&mut self, out: &mut Vec<u8>) {
        debug_assert!(out.is_empty());
        std::mem::swap(out, &mut self.stream.get_mut().output);
    }

    /// True once the handshake finished.
    pub fn established(&self) -> bool {
        self.established
    }
}

/// Runs the client's handshake on `stream` (blocking, within its
/// timeouts) with `key` for `hostnqn` → `subnqn`, presenting a version 1
/// identity.
pub fn connect(
    stream: TcpStream,
    key: &ConfiguredPsk,
    hostnqn: &str,
    subnqn: &str,
) -> Result<SslStream<TcpStream>, String> {
    let (identity, psk) = key.for_host(1, hostnqn, subnqn);
    let hash = identity.hash;
    let mut b = SslContext::builder(SslMethod::tls_client())
        .map_err(|e| format!("setting up OpenSSL: {e}"))?;
    tls13_only(&mut b, hash.cipher_suite())?;
    sys::set_use_session(&mut b);
    let ctx = b.build();
    let mut ssl = Ssl::new(&ctx).map_err(|e| format!("a TLS session: {e}"))?;
    ssl.set_ex_data(
        client_index(),
        ClientPsk {
            identity: identity.to_string(),
            hash,
            key: psk,
        },
    );
    ssl.connect(stream).map_err(|e| match e {
        openssl::ssl::HandshakeError::Failure(m) => format!(
            "TLS handshake failed: {} (does the target hold this host's PSK for {subnqn}?)",
            m.error()
        ),
        openssl::ssl::HandshakeError::SetupFailure(e) => format!("TLS set-up failed: {e}"),
        openssl::ssl::HandshakeError::WouldBlock(_) => {
            "TLS handshake timed out (no answer from the target)".into()
        }
    })
}

/// The OpenSSL functions the `openssl` crate does not wrap.
mod sys {
    use std::os::raw::{c_int, c_uchar};

    use foreign_types::ForeignTypeRef;
    use openssl::ssl::{SslContextBuilder, SslRef};
    use openssl_sys::{EVP_MD, SSL, SSL_CIPHER, SSL_CTX, SSL_SESSION};

    use super::{client_index, lookup_index, peer_index, PskHash};

    type FindSession =
        unsafe extern "C" fn(*mut SSL, *const c_uchar, usize, *mut *mut SSL_SESSION) -> c_int;
    type UseSession = unsafe extern "C" fn(
        *mut SSL,
        *const EVP_MD,
        *mut *const c_uchar,
        *mut usize,
        *mut *mut SSL_SESSION,
    ) -> c_int;

    extern "C" {
        fn SSL_CTX_set_psk_find_session_callback(ctx: *mut SSL_CTX, cb: Option<FindSession>);
        fn SSL_CTX_set_psk_use_session_callback(ctx: *mut SSL_CTX, cb: Option<UseSession>);
        fn SSL_SESSION_new() -> *mut SSL_SESSION;
        fn SSL_SESSION_set1_master_key(
            s: *mut SSL_SESSION,
            key: *const c_uchar,
            len: usize,
        ) -> c_int;
        fn SSL_SESSION_set_cipher(s: *mut SSL_SESSION, cipher: *const SSL_CIPHER) -> c_int;
        fn SSL_SESSION_set_protocol_version(s: *mut SSL_SESSION, version: c_int) -> c_int;
        fn SSL_CIPHER_find(ssl: *mut SSL, id: *const c_uchar) -> *const SSL_CIPHER;
    }

    pub(super) fn set_find_session(b: &mut SslContextBuilder) {
        // SAFETY: b owns a live SSL_CTX; the callback is a plain function.
        unsafe { SSL_CTX_set_psk_find_session_callback(b.as_ptr(), Some(find_session)) };
    }

    pub(super) fn set_use_session(b: &mut SslContextBuilder) {
        // SAFETY: b owns a live SSL_CTX; the callback is a plain function.
        unsafe { SSL_CTX_set_psk_use_session_callback(b.as_ptr(), Some(use_session)) };
    }

    /// A TLS 1.3 session resuming `key` with the suite of `hash`; null on
    /// failure. The caller (OpenSSL, through a callback's out parameter)
    /// owns it.
    ///
    /// # Safety
    /// `ssl` is a live SSL.
    unsafe fn psk_session(ssl: *mut SSL, hash: PskHash, key: &[u8]) -> *mut SSL_SESSION {
        let id: [c_uchar; 2] = [0x13, hash.id()];
        // SAFETY: ssl is live (the caller's contract); id is two readable
        // bytes, as SSL_CIPHER_find reads.
        let cipher = unsafe { SSL_CIPHER_find(ssl, id.as_ptr()) };
        if cipher.is_null() {
            return std::ptr::null_mut();
        }
        // SAFETY: a new session, owned here until returned or freed; the
        // setters copy the key and read the cipher, which OpenSSL keeps in
        // static tables.
        unsafe {
            let s = SSL_SESSION_new();
            if s.is_null() {
                return s;
            }
            if SSL_SESSION_set1_master_key(s, key.as_ptr(), key.len()) != 1
                || SSL_SESSION_set_cipher(s, cipher) != 1
                || SSL_SESSION_set_protocol_version(s, openssl_sys::TLS1_3_VERSION) != 1
            {
                openssl_sys::SSL_SESSION_free(s);
                return std::ptr::null_mut();
            }
            s
        }
    }

    /// The server's lookup: the identity → its TLS PSK, through the
    /// context's [`super::PskLookup`]; what it found (or why not) is kept
    /// on the session for [`super::ServerSession`].
    unsafe extern "C" fn find_session(
        ssl: *mut SSL,
        identity: *const c_uchar,
        len: usize,
        sess: *mut *mut SSL_SESSION,
    ) -> c_int {
        // SAFETY: OpenSSL passes its live SSL, `len` readable bytes at
        // `identity` and a writable out pointer, for this call only.
        let (s, identity) = unsafe {
            (
                SslRef::from_ptr_mut(ssl),
                std::slice::from_raw_parts(identity, len),
            )
        };
        let found = std::str::from_utf8(identity)
            .map_err(|_| "the PSK identity is not text".to_string())
            .and_then(super::Identity::parse)
            .and_then(|id| {
                let lookup = s
                    .ssl_context()
                    .ex_data(lookup_index())
                    .ok_or_else(|| "no PSK lookup".to_string())?;
                let psk = lookup.tls_psk(&id)?;
                Ok((id, psk))
            });
        match found {
            Ok((id, psk)) => {
                // SAFETY: ssl is live for this call.
                let session = unsafe { psk_session(ssl, id.hash, &psk) };
                if session.is_null() {
                    return 0;
                }
                s.set_ex_data(peer_index(), Ok(id));
                // SAFETY: sess is OpenSSL's out parameter; it takes the
                // session's ownership.
                unsafe { *sess = session };
                1
            }
            Err(why) => {
                s.set_ex_data(peer_index(), Err(why));
                0
            }
        }
    }

    /// The client's offer: the identity and PSK set on the session by
    /// [`super::connect`].
    unsafe extern "C" fn use_session(
        ssl: *mut SSL,
        _md: *const EVP_MD,
        id: *mut *const c_uchar,
        idlen: *mut usize,
        sess: *mut *mut SSL_SESSION,
    ) -> c_int {
        // SAFETY: OpenSSL passes its live SSL and writable out pointers.
        let s = unsafe { SslRef::from_ptr_mut(ssl) };
        let Some(psk) = s.ex_data(client_index()) else {
            // SAFETY: writable out pointer; no PSK to offer.
            unsafe { *sess = std::ptr::null_mut() };
            return 1;
        };
        // SAFETY: ssl is live for this call.
        let session = unsafe { psk_session(ssl, psk.hash, &psk.key) };
        if session.is_null() {
            return 0;
        }
        // SAFETY: writable out pointers; the identity's bytes live in the
        // session's ex_data, which outlives the handshake; OpenSSL takes
        // the session's ownership.
        unsafe {
            *id = psk.identity.as_ptr();
            *idlen = psk.identity.len();
            *sess = session;
        }
        1
    }
}

#[cfg(test)]
mod tests;
